#include "base/file_system.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

namespace kplane {
namespace {

class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-fs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static uint32_t ModeOf(const std::string& path) {
    struct stat st;
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 0777;
  }

  FileSystem* fs_ = FileSystem::Default();
  std::string dir_;
};

TEST_F(PosixFileSystemTest, WritesAppendsAndReadsBack) {
  const std::string path = dir_ + "/f";
  {
    auto f = fs_->OpenWritable(path, OpenMode::kCreateNew);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append("hello ").ok());
    ASSERT_TRUE((*f)->Append("world").ok());
    EXPECT_EQ((*f)->Size(), 11u);
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Fsync().ok());
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE((*f)->Close().ok());  // idempotent
    EXPECT_FALSE((*f)->Append("x").ok());
  }
  EXPECT_EQ(*ReadFile(fs_, path), "hello world");
  EXPECT_EQ(*ReadFileRange(fs_, path, 6, 100), "world");
  EXPECT_EQ(*ReadFileRange(fs_, path, 50, 10), "");
  EXPECT_EQ(*fs_->FileSize(path), 11u);

  // kCreateNew refuses an existing file; kAppend keeps its bytes; kTruncate
  // empties it.
  EXPECT_EQ(fs_->OpenWritable(path, OpenMode::kCreateNew).status().code(),
            StatusCode::kAlreadyExists);
  {
    auto f = fs_->OpenWritable(path, OpenMode::kAppend);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ((*f)->Size(), 11u);
    ASSERT_TRUE((*f)->Append("!").ok());
  }
  EXPECT_EQ(*ReadFile(fs_, path), "hello world!");
  {
    auto f = fs_->OpenWritable(path, OpenMode::kTruncate);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ((*f)->Size(), 0u);
  }
  EXPECT_EQ(*fs_->FileSize(path), 0u);
}

TEST_F(PosixFileSystemTest, AppendAfterTruncateLeavesNoHole) {
  const std::string path = dir_ + "/f";
  auto f = fs_->OpenWritable(path, OpenMode::kCreateNew);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("0123456789").ok());
  ASSERT_TRUE((*f)->Preallocate(1 << 20).ok());
  ASSERT_TRUE((*f)->Truncate(4).ok());
  ASSERT_TRUE((*f)->Append("ab").ok());
  EXPECT_EQ((*f)->Size(), 6u);
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(*ReadFile(fs_, path), "0123ab");
  EXPECT_EQ(*fs_->FileSize(path), 6u);  // the reservation was given back
}

TEST_F(PosixFileSystemTest, NamesAndDirectories) {
  ASSERT_TRUE(WriteFileAtomically(fs_, dir_ + "/a", "A").ok());
  EXPECT_EQ(*ReadFile(fs_, dir_ + "/a"), "A");
  EXPECT_FALSE(fs_->Exists(dir_ + "/a.tmp"));
  ASSERT_TRUE(fs_->Link(dir_ + "/a", dir_ + "/b").ok());
  ASSERT_TRUE(fs_->Rename(dir_ + "/a", dir_ + "/c").ok());
  ASSERT_TRUE(fs_->Remove(dir_ + "/b").ok());
  EXPECT_EQ(fs_->Remove(dir_ + "/b").code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_->OpenReadable(dir_ + "/b").status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(fs_->Exists(dir_ + "/c"));
  EXPECT_FALSE(fs_->Exists(dir_ + "/a"));

  ASSERT_TRUE(fs_->CreateDir(dir_ + "/d", kPrivateDirMode).ok());
  EXPECT_EQ(fs_->CreateDir(dir_ + "/d", kPrivateDirMode).code(),
            StatusCode::kAlreadyExists);
  ASSERT_TRUE(fs_->SyncDir(dir_ + "/d").ok());
  auto names = fs_->ListDir(dir_);
  ASSERT_TRUE(names.ok());
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"c", "d"}));
  ASSERT_TRUE(fs_->RemoveDir(dir_ + "/d").ok());
  EXPECT_EQ(fs_->ListDir(dir_ + "/d").status().code(), StatusCode::kNotFound);
}

TEST_F(PosixFileSystemTest, CreatesPrivateFilesAndDirectories) {
  ASSERT_TRUE(CreateDirAll(fs_, dir_ + "/x/y/z", kPrivateDirMode).ok());
  ASSERT_TRUE(CreateDirAll(fs_, dir_ + "/x/y/z", kPrivateDirMode).ok());
  EXPECT_EQ(ModeOf(dir_ + "/x"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/x/y/z"), 0700u);
  for (OpenMode m :
       {OpenMode::kCreateNew, OpenMode::kTruncate, OpenMode::kAppend}) {
    const std::string path =
        dir_ + "/x/f" + std::to_string(static_cast<int>(m));
    ASSERT_TRUE(fs_->OpenWritable(path, m).ok());
    EXPECT_EQ(ModeOf(path), 0600u) << path;
  }
  ASSERT_TRUE(fs_->LockFile(dir_ + "/x/LOCK").ok());
  EXPECT_EQ(ModeOf(dir_ + "/x/LOCK"), 0600u);
}

TEST_F(PosixFileSystemTest, LockIsExclusiveEvenInOneProcess) {
  auto lock = fs_->LockFile(dir_ + "/LOCK");
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_EQ(fs_->LockFile(dir_ + "/LOCK").status().code(),
            StatusCode::kUnavailable);
  lock->reset();
  EXPECT_TRUE(fs_->LockFile(dir_ + "/LOCK").ok());
}

TEST_F(PosixFileSystemTest, RemoveAllRemovesATreeOrAFile) {
  ASSERT_TRUE(CreateDirAll(fs_, dir_ + "/t/a/b", kPrivateDirMode).ok());
  ASSERT_TRUE(fs_->OpenWritable(dir_ + "/t/a/b/f", OpenMode::kCreateNew).ok());
  ASSERT_TRUE(fs_->OpenWritable(dir_ + "/t/g", OpenMode::kCreateNew).ok());
  ASSERT_TRUE(RemoveAll(fs_, dir_ + "/t/g").ok());
  EXPECT_FALSE(fs_->Exists(dir_ + "/t/g"));
  EXPECT_TRUE(fs_->Exists(dir_ + "/t/a/b/f"));
  ASSERT_TRUE(RemoveAll(fs_, dir_ + "/t").ok());
  EXPECT_FALSE(fs_->Exists(dir_ + "/t"));
  EXPECT_TRUE(RemoveAll(fs_, dir_ + "/t").ok());  // nothing there: OK
}

TEST(FileSystemHelpersTest, DirName) {
  EXPECT_EQ(DirName("a/b/c"), "a/b");
  EXPECT_EQ(DirName("a/b/c/"), "a/b");
  EXPECT_EQ(DirName("c"), ".");
  EXPECT_EQ(DirName("/c"), "/");
  EXPECT_EQ(DirName("/"), "/");
  EXPECT_EQ(DirName("/a//b"), "/a");
}

TEST(FileSystemHelpersTest, ErrnoCodes) {
  EXPECT_EQ(ErrnoToStatus("write x", ENOSPC).code(), StatusCode::kNoSpace);
  EXPECT_EQ(ErrnoToStatus("write x", EDQUOT).code(), StatusCode::kNoSpace);
  EXPECT_EQ(ErrnoToStatus("open x", ENOENT).code(), StatusCode::kNotFound);
  Status eio = ErrnoToStatus("fsync /d/x", EIO);
  EXPECT_EQ(eio.code(), StatusCode::kIOError);
  EXPECT_EQ(eio.message(), "fsync /d/x: Input/output error");
}

}  // namespace
}  // namespace kplane
