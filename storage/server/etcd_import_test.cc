// Importing an etcd 3.4 data directory (etcd_import.h) on the one the real
// `etcdctl snapshot restore` wrote (testdata/etcd/restored,
// make_restored_dir.sh, from etcd34.snapshot): keys, revisions, lease and
// etcd's IDs kept; live, damaged and interrupted directories.
#include "storage/server/etcd_import.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "base/crc32c.h"
#include "base/testing/fault_injection_file_system.h"
#include "schemas/etcdwal.pb.h"
#include "storage/bolt/etcd_wal.h"
#include "storage/server/bootstrap.h"
#include "storage/server/cluster.h"
#include "testdata/etcd/fixture_data.h"

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRestored = KPLANE_ETCD_TESTDATA "/restored";
constexpr const char* kWal =
    "/member/wal/0000000000000000-0000000000000000.wal";

std::string Read(const std::string& path) {
  StatusOr<std::string> s = ReadFile(FileSystem::Default(), path);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "";
}

void Write(const std::string& path, const std::string& data) {
  ASSERT_TRUE(WriteFileAtomically(FileSystem::Default(), path, data).ok());
}

// Every file under `dir`: relative name -> bytes.
std::map<std::string, std::string> Tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    out[rel] = e.is_regular_file() ? Read(e.path().string()) : "<dir>";
  }
  return out;
}

class EtcdImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-etcd-import-XXXXXX";
    dir_ = mkdtemp(tmpl);
    data_ = dir_ + "/data";
    CopyFixture();
  }
  // data_ as etcdctl snapshot restore left it.
  void CopyFixture() {
    fs::copy(kRestored, data_, fs::copy_options::recursive);
    fs::permissions(data_, fs::perms::owner_all);
    // etcd preallocates its WAL with zeros (the fixture has them cut).
    Write(data_ + kWal, Read(data_ + kWal) + std::string(1 << 16, '\0'));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Status Import(bool* imported) {
    return ImportEtcdDataDir(FileSystem::Default(), data_, RaftLogOptions(),
                             "n1", imported);
  }
  // The WAL with one more entry record (index 4), as a live member's would
  // have, its CRC chained on.
  void AppendEntry() {
    std::string wal = Read(data_ + kWal);
    wal.resize(wal.find_last_not_of('\0') + 1);
    wal.resize((wal.size() + 7) / 8 * 8);
    bolt::EtcdWal parsed;
    uint32_t crc = 0;
    ASSERT_TRUE(ReadEtcdWalFile("fixture", wal, &crc, &parsed).ok());
    raftpb::Entry e;
    e.set_term(2);
    e.set_index(4);
    walpb::Record rec;
    rec.set_type(2);
    rec.set_data(e.SerializeAsString());
    rec.set_crc(crc32c::Extend(crc, rec.data().data(), rec.data().size()));
    std::string body = rec.SerializeAsString();
    const uint64_t pad = (8 - body.size() % 8) % 8;
    const uint64_t word = body.size() | (pad ? (0x80 | pad) << 56 : 0);
    for (int i = 0; i < 8; ++i)
      wal.push_back(static_cast<char>(word >> (8 * i)));
    Write(data_ + kWal, wal + body + std::string(pad, '\0'));
  }
  std::string dir_, data_;
};

TEST_F(EtcdImportTest, KeepsKeysRevisionsLeaseAndEtcdsIds) {
  const auto etcd_files = Tree(data_ + "/member");
  bool imported = false;
  Status st = Import(&imported);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(imported);
  // etcd's files are kept, unchanged, beside kplane's.
  EXPECT_EQ(Tree(data_ + "/" + kEtcdMemberAside), etcd_files);
  EXPECT_FALSE(fs::exists(data_ + "/member.import"));

  // It starts as a kplane member (the restart path: identity from the log).
  StoreConfig c;
  c.name = "ignored";
  c.data_dir = data_;
  StatusOr<BootstrappedMember> m = BootstrapMember(&c);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string tok = "tok";
  const uint64_t n1 = ComputeMemberId({"http://10.0.0.1:2380"}, tok);
  const uint64_t n2 = ComputeMemberId({"http://10.0.0.2:2380"}, tok);
  const uint64_t n3 = ComputeMemberId({"http://10.0.0.3:2380"}, tok);
  EXPECT_EQ(m->member_id, n1);  // etcd's, from the WAL's metadata
  EXPECT_EQ(m->membership->cluster_id(), ComputeClusterId({n1, n2, n3}));
  ASSERT_EQ(m->membership->Members().size(), 3u);
  for (const auto& r : m->membership->Members()) {
    const std::string want = r.id() == n1   ? "n1"
                             : r.id() == n2 ? "n2"
                             : r.id() == n3 ? "n3"
                                            : "?";
    EXPECT_EQ(r.name(), want);
  }
  EXPECT_EQ(m->log->identity()->name(), "n1");

  ASSERT_NO_FATAL_FAILURE(testdata::ExpectEtcdFixtureData(m->store.get()));
  m->store->Close();
  m = StatusOr<BootstrappedMember>(InternalError("closed"));

  // A second start finds kplane's member: nothing to import.
  st = Import(&imported);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_FALSE(imported);
}

// A sync that fails anywhere in the import (a full or failing disk: the
// new store's files, or the directory syncs after the renames) fails it
// with the file system's error, and the next start ends with the data
// imported once, etcd's files aside unchanged. A failure after the last
// rename leaves nothing to redo; any earlier one is imported again.
TEST_F(EtcdImportTest, AFailedSyncFailsTheImportAndTheNextStartRecovers) {
  const auto etcd_files = Tree(data_ + "/member");
  int failed = 0;
  for (int skip = 0;; ++skip) {
    SCOPED_TRACE("the sync after " + std::to_string(skip) + " good ones");
    std::error_code ec;
    fs::remove_all(data_, ec);
    CopyFixture();
    FaultInjectionFileSystem faulty(FileSystem::Default());
    faulty.InjectError({.op = FaultInjectionFileSystem::Op::kSync,
                        .skip = skip,
                        .once = true});
    bool imported = true;
    Status st =
        ImportEtcdDataDir(&faulty, data_, RaftLogOptions(), "n1", &imported);
    if (faulty.injected_failures() == 0) {  // past the import's last sync
      EXPECT_TRUE(st.ok()) << st;
      break;
    }
    ++failed;
    EXPECT_EQ(st.code(), StatusCode::kIOError) << st;
    EXPECT_NE(st.message().find("(injected)"), std::string::npos) << st;
    EXPECT_FALSE(imported);

    st = Import(&imported);  // the next start
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(Tree(data_ + "/" + kEtcdMemberAside), etcd_files);
    EXPECT_FALSE(fs::exists(data_ + "/member.import"));
    StoreConfig c;
    c.data_dir = data_;
    StatusOr<BootstrappedMember> m = BootstrapMember(&c);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_NO_FATAL_FAILURE(testdata::ExpectEtcdFixtureData(m->store.get()));
    m->store->Close();
  }
  // The store's files, then the two renames' directory syncs.
  EXPECT_GE(failed, 3);
}

TEST_F(EtcdImportTest, ALiveMembersDirIsRefusedAndLeftAlone) {
  AppendEntry();
  const auto before = Tree(data_);
  bool imported = true;
  Status st = Import(&imported);
  EXPECT_FALSE(imported);
  ASSERT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  for (const char* want : {"raft index 4", "applied only up to 3", "Stop etcd",
                           "etcdctl snapshot save", "snapshot restore"}) {
    EXPECT_NE(st.message().find(want), std::string::npos) << want << ": " << st;
  }
  EXPECT_EQ(Tree(data_), before);
}

TEST_F(EtcdImportTest, ADamagedWalIsRefusedAndLeftAlone) {
  std::string wal = Read(data_ + kWal);
  wal[wal.find("\"n3\"") + 1] = 'x';
  Write(data_ + kWal, wal);
  const auto before = Tree(data_);
  bool imported = true;
  Status st = Import(&imported);
  EXPECT_FALSE(imported);
  ASSERT_EQ(st.code(), StatusCode::kCorruption) << st;
  EXPECT_NE(st.message().find("CRC mismatch"), std::string::npos) << st;
  EXPECT_EQ(Tree(data_), before);
}

TEST_F(EtcdImportTest, AnotherEtcdVersionIsRefused) {
  // etcd 3.5's db differs (bucket "cluster" says so): refused by version.
  StatusOr<std::string> db =
      ReadFile(FileSystem::Default(), data_ + "/member/snap/db");
  ASSERT_TRUE(db.ok());
  StatusOr<bolt::EtcdBackend> b = bolt::ReadEtcdBackend(*db);
  ASSERT_TRUE(b.ok()) << b.status();
  b->cluster_version = "3.5.0";
  StatusOr<std::string> out = bolt::WriteEtcdBackend(std::move(*b));
  ASSERT_TRUE(out.ok()) << out.status();
  Write(data_ + "/member/snap/db", *out);
  bool imported = true;
  Status st = Import(&imported);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("etcd 3.5.0"), std::string::npos) << st;
  EXPECT_FALSE(fs::exists(data_ + "/" + kEtcdMemberAside));
}

// etcd run with --wal-dir keeps its WAL elsewhere: refused, not started as
// an empty member beside etcd's backend.
TEST_F(EtcdImportTest, ABackendWithoutItsWalIsRefused) {
  fs::remove_all(data_ + "/member/wal");
  const auto before = Tree(data_);
  bool imported = true;
  Status st = Import(&imported);
  ASSERT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("--wal-dir"), std::string::npos) << st;
  EXPECT_EQ(Tree(data_), before);
}

// A crash after etcd's member/ was moved aside and before kplane's took its
// place (a half-built member.import left too): the next start imports again.
TEST_F(EtcdImportTest, AnInterruptedImportIsDoneAgain) {
  const auto etcd_files = Tree(data_ + "/member");
  fs::rename(data_ + "/member", data_ + "/" + kEtcdMemberAside);
  fs::create_directories(data_ + "/member.import/db");
  Write(data_ + "/member.import/db/junk", "half written");
  bool imported = false;
  Status st = Import(&imported);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(imported);
  EXPECT_TRUE(fs::exists(data_ + "/member/cluster.pb"));
  EXPECT_FALSE(fs::exists(data_ + "/member.import"));
  EXPECT_EQ(Tree(data_ + "/" + kEtcdMemberAside), etcd_files);
  StoreConfig c;
  c.data_dir = data_;
  StatusOr<BootstrappedMember> m = BootstrapMember(&c);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->store->CurrentRevision(), 8);
  m->store->Close();
}

}  // namespace
}  // namespace kplane::storage
