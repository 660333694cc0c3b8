#include "base/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace kplane {
namespace {

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override { (void)Close(); }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Closed();
    // pwrite at our own offset: a Truncate() needs no lseek, and the fd's
    // offset cannot leave a hole behind a truncation.
    uint64_t at = size_.load(std::memory_order_relaxed);
    const char* p = data.data();
    size_t n = data.size();
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(at));
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus("write " + path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      at += static_cast<uint64_t>(w);
      size_.store(at, std::memory_order_release);
    }
    return Status::Ok();
  }

  Status Flush() override { return fd_ < 0 ? Closed() : Status::Ok(); }

  Status Sync() override {
    if (fd_ < 0) return Closed();
    if (::fdatasync(fd_) != 0)
      return ErrnoToStatus("fdatasync " + path_, errno);
    return Status::Ok();
  }

  Status Fsync() override {
    if (fd_ < 0) return Closed();
    if (::fsync(fd_) != 0) return ErrnoToStatus("fsync " + path_, errno);
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (fd_ < 0) return Closed();
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ErrnoToStatus("truncate " + path_, errno);
    }
    size_.store(size, std::memory_order_release);
    return Status::Ok();
  }

  Status Preallocate(uint64_t size) override {
    if (fd_ < 0) return Closed();
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(size)) !=
        0) {
      if (errno == EOPNOTSUPP || errno == ENOSYS) {
        return UnimplementedError("fallocate " + path_);
      }
      return ErrnoToStatus("fallocate " + path_, errno);
    }
    preallocated_ = true;
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    Status s;
    // Give back blocks reserved beyond the end of the file.
    if (preallocated_ &&
        ::ftruncate(fd_, static_cast<off_t>(size_.load())) != 0) {
      s = ErrnoToStatus("truncate " + path_, errno);
    }
    if (::close(fd_) != 0 && s.ok()) s = ErrnoToStatus("close " + path_, errno);
    fd_ = -1;
    return s;
  }

  uint64_t Size() const override {
    return size_.load(std::memory_order_acquire);
  }

 private:
  Status Closed() const { return IOError("file closed: " + path_); }

  const std::string path_;
  int fd_;
  // Written by the appender; read by a concurrent Sync's caller.
  std::atomic<uint64_t> size_;
  bool preallocated_ = false;
};

class PosixReadableFile : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd)
      : path_(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, std::string* out) const override {
    out->resize(n);
    size_t filled = 0;
    while (filled < n) {
      ssize_t r = ::pread(fd_, out->data() + filled, n - filled,
                          static_cast<off_t>(offset + filled));
      if (r < 0) {
        if (errno == EINTR) continue;
        out->clear();
        return ErrnoToStatus("read " + path_, errno);
      }
      if (r == 0) break;
      filled += static_cast<size_t>(r);
    }
    out->resize(filled);
    return Status::Ok();
  }

  StatusOr<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoToStatus("stat " + path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixFileLock : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  const int fd_;
};

}  // namespace

Status ErrnoToStatus(std::string_view what, int err) {
  std::string msg = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return Status(StatusCode::kNoSpace, msg);
    case ENOENT:
      return NotFoundError(msg);
    case EEXIST:
      return AlreadyExistsError(msg);
    default:
      return IOError(msg);
  }
}

FileSystem* FileSystem::Default() {
  static PosixFileSystem* fs = new PosixFileSystem();
  return fs;
}

StatusOr<std::unique_ptr<WritableFile>> PosixFileSystem::OpenWritable(
    const std::string& path, OpenMode mode) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  if (mode == OpenMode::kCreateNew) flags |= O_EXCL;
  if (mode == OpenMode::kTruncate) flags |= O_TRUNC;
  int fd = ::open(path.c_str(), flags, kPrivateFileMode);
  if (fd < 0) return ErrnoToStatus("open " + path, errno);
  uint64_t size = 0;
  if (mode == OpenMode::kAppend) {
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      Status s = ErrnoToStatus("stat " + path, errno);
      ::close(fd);
      return s;
    }
    size = static_cast<uint64_t>(st.st_size);
  }
  return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, size));
}

StatusOr<std::unique_ptr<ReadableFile>> PosixFileSystem::OpenReadable(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus("open " + path, errno);
  return std::unique_ptr<ReadableFile>(new PosixReadableFile(path, fd));
}

Status PosixFileSystem::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoToStatus("rename " + from + " to " + to, errno);
  }
  return Status::Ok();
}

Status PosixFileSystem::Link(const std::string& from, const std::string& to) {
  if (::link(from.c_str(), to.c_str()) != 0) {
    return ErrnoToStatus("link " + from + " to " + to, errno);
  }
  return Status::Ok();
}

Status PosixFileSystem::Remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0)
    return ErrnoToStatus("unlink " + path, errno);
  return Status::Ok();
}

Status PosixFileSystem::CreateDir(const std::string& path, uint32_t mode) {
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return ErrnoToStatus("mkdir " + path, errno);
  }
  return Status::Ok();
}

Status PosixFileSystem::RemoveDir(const std::string& path) {
  if (::rmdir(path.c_str()) != 0) return ErrnoToStatus("rmdir " + path, errno);
  return Status::Ok();
}

Status PosixFileSystem::SyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus("open " + path, errno);
  Status s;
  if (::fsync(fd) != 0) s = ErrnoToStatus("fsync " + path, errno);
  ::close(fd);
  return s;
}

StatusOr<std::vector<std::string>> PosixFileSystem::ListDir(
    const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return ErrnoToStatus("opendir " + path, errno);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoToStatus("readdir " + path, err);
  return names;
}

StatusOr<uint64_t> PosixFileSystem::FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return ErrnoToStatus("stat " + path, errno);
  return static_cast<uint64_t>(st.st_size);
}

bool PosixFileSystem::Exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

StatusOr<std::unique_ptr<FileLock>> PosixFileSystem::LockFile(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kPrivateFileMode);
  if (fd < 0) return ErrnoToStatus("open " + path, errno);
  // flock, not fcntl: fcntl locks belong to the process, so a second lock
  // from this same process would succeed silently.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return UnavailableError("lock " + path + ": held by another user");
    }
    return ErrnoToStatus("lock " + path, err);
  }
  return std::unique_ptr<FileLock>(new PosixFileLock(fd));
}

// ---- helpers ----------------------------------------------------------------

StatusOr<std::string> ReadFile(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> f, fs->OpenReadable(path));
  ASSIGN_OR_RETURN(uint64_t size, f->Size());
  // One read of the whole size (plus a probe in case the file grew): growing
  // a string piecewise copied a 64 MiB WAL segment many times over.
  std::string data;
  RETURN_IF_ERROR(f->Read(0, static_cast<size_t>(size), &data));
  std::string more;
  for (uint64_t at = data.size();; at += more.size()) {
    RETURN_IF_ERROR(f->Read(at, 1 << 16, &more));
    if (more.empty()) break;
    data += more;
  }
  return data;
}

StatusOr<std::string> ReadFileRange(FileSystem* fs, const std::string& path,
                                    uint64_t offset, size_t n) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> f, fs->OpenReadable(path));
  std::string data;
  RETURN_IF_ERROR(f->Read(offset, n, &data));
  return data;
}

Status WriteFileAtomically(FileSystem* fs, const std::string& path,
                           std::string_view data) {
  const std::string tmp = path + ".tmp";
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                   fs->OpenWritable(tmp, OpenMode::kTruncate));
  RETURN_IF_ERROR(f->Append(data));
  RETURN_IF_ERROR(f->Sync());
  RETURN_IF_ERROR(f->Close());
  RETURN_IF_ERROR(fs->Rename(tmp, path));
  return fs->SyncDir(DirName(path));
}

Status CreateDirAll(FileSystem* fs, const std::string& path, uint32_t mode) {
  if (path.empty() || fs->Exists(path)) return Status::Ok();
  const std::string parent = DirName(path);
  if (parent != path) RETURN_IF_ERROR(CreateDirAll(fs, parent, mode));
  Status s = fs->CreateDir(path, mode);
  if (s.Is(StatusCode::kAlreadyExists)) return Status::Ok();  // a race
  RETURN_IF_ERROR(s);
  // The new directory's name lives in its parent.
  return fs->SyncDir(parent);
}

Status RemoveAll(FileSystem* fs, const std::string& path) {
  if (!fs->Exists(path)) return Status::Ok();
  // ListDir fails on a file: that is how a file is told from a directory.
  StatusOr<std::vector<std::string>> children = fs->ListDir(path);
  if (!children.ok()) {
    Status s = fs->Remove(path);
    return s.Is(StatusCode::kNotFound) ? Status::Ok() : s;
  }
  for (const std::string& c : *children) {
    RETURN_IF_ERROR(RemoveAll(fs, path + "/" + c));
  }
  Status s = fs->RemoveDir(path);
  return s.Is(StatusCode::kNotFound) ? Status::Ok() : s;
}

std::string DirName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  std::string_view dir = path.substr(0, slash);
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return std::string(dir);
}

}  // namespace kplane
