#include "storage/mvcc/rocks_env.h"

#include <string>

namespace kplane::mvcc {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

IOStatus ToIOStatus(const Status& s) {
  if (s.ok()) return IOStatus::OK();
  switch (s.code()) {
    case StatusCode::kNoSpace:
      return IOStatus::NoSpace(s.message());
    case StatusCode::kNotFound:
      return IOStatus::PathNotFound(s.message());
    case StatusCode::kCorruption:
      return IOStatus::Corruption(s.message());
    case StatusCode::kUnimplemented:
      return IOStatus::NotSupported(s.message());
    default:
      return IOStatus::IOError(s.message());
  }
}

class RocksWritableFile : public rocksdb::FSWritableFile {
 public:
  RocksWritableFile(const rocksdb::FileOptions& options,
                    std::unique_ptr<WritableFile> file)
      : rocksdb::FSWritableFile(options), file_(std::move(file)) {}

  IOStatus Append(const rocksdb::Slice& data, const IOOptions&,
                  IODebugContext*) override {
    return ToIOStatus(
        file_->Append(std::string_view(data.data(), data.size())));
  }
  IOStatus Truncate(uint64_t size, const IOOptions&, IODebugContext*) override {
    return ToIOStatus(file_->Truncate(size));
  }
  IOStatus Close(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(file_->Close());
  }
  IOStatus Flush(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(file_->Flush());
  }
  IOStatus Sync(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(file_->Sync());
  }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(file_->Fsync());
  }
  // Our files may be synced while another thread appends; RocksDB's
  // SyncWAL (Store::Sync) refuses to work otherwise.
  bool IsSyncThreadSafe() const override { return true; }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override {
    return file_->Size();
  }
  IOStatus Allocate(uint64_t offset, uint64_t len, const IOOptions&,
                    IODebugContext*) override {
    Status s = file_->Preallocate(offset + len);
    // Preallocation is an optimization; only a full disk is worth telling.
    if (s.Is(StatusCode::kNoSpace)) return ToIOStatus(s);
    return IOStatus::OK();
  }

 private:
  const std::unique_ptr<WritableFile> file_;
};

// Directory fsyncs go through the seam; the wrapped RocksDB directory only
// proves that the directory exists (NewDirectory must fail otherwise).
class RocksDirectory : public rocksdb::FSDirectory {
 public:
  RocksDirectory(kplane::FileSystem* fs, std::string path,
                 std::unique_ptr<rocksdb::FSDirectory> dir)
      : fs_(fs), path_(std::move(path)), dir_(std::move(dir)) {}

  IOStatus Fsync(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(fs_->SyncDir(path_));
  }
  IOStatus Close(const IOOptions& options, IODebugContext* dbg) override {
    return dir_->Close(options, dbg);
  }

 private:
  kplane::FileSystem* const fs_;
  const std::string path_;
  const std::unique_ptr<rocksdb::FSDirectory> dir_;
};

class RocksFileLock : public rocksdb::FileLock {
 public:
  explicit RocksFileLock(std::unique_ptr<kplane::FileLock> lock)
      : lock_(std::move(lock)) {}

 private:
  const std::unique_ptr<kplane::FileLock> lock_;
};

class RocksFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit RocksFileSystem(kplane::FileSystem* fs)
      : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()), fs_(fs) {}

  const char* Name() const override { return "KplaneFileSystem"; }

  IOStatus NewWritableFile(const std::string& fname,
                           const rocksdb::FileOptions& options,
                           std::unique_ptr<rocksdb::FSWritableFile>* result,
                           IODebugContext*) override {
    return Open(fname, OpenMode::kTruncate, options, result);
  }
  IOStatus ReopenWritableFile(const std::string& fname,
                              const rocksdb::FileOptions& options,
                              std::unique_ptr<rocksdb::FSWritableFile>* result,
                              IODebugContext*) override {
    return Open(fname, OpenMode::kAppend, options, result);
  }
  IOStatus ReuseWritableFile(const std::string& fname, const std::string&,
                             const rocksdb::FileOptions&,
                             std::unique_ptr<rocksdb::FSWritableFile>*,
                             IODebugContext*) override {
    return IOStatus::NotSupported("ReuseWritableFile (log recycling) " + fname);
  }
  IOStatus NewRandomRWFile(const std::string& fname,
                           const rocksdb::FileOptions&,
                           std::unique_ptr<rocksdb::FSRandomRWFile>*,
                           IODebugContext*) override {
    return IOStatus::NotSupported("NewRandomRWFile " + fname);
  }
  IOStatus NewDirectory(const std::string& name, const IOOptions& options,
                        std::unique_ptr<rocksdb::FSDirectory>* result,
                        IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSDirectory> dir;
    IOStatus s = target()->NewDirectory(name, options, &dir, dbg);
    if (!s.ok()) return s;
    result->reset(new RocksDirectory(fs_, name, std::move(dir)));
    return IOStatus::OK();
  }
  IOStatus DeleteFile(const std::string& fname, const IOOptions&,
                      IODebugContext*) override {
    return ToIOStatus(fs_->Remove(fname));
  }
  IOStatus Truncate(const std::string& fname, size_t size, const IOOptions&,
                    IODebugContext*) override {
    auto f = fs_->OpenWritable(fname, OpenMode::kAppend);
    if (!f.ok()) return ToIOStatus(f.status());
    Status s = (*f)->Truncate(size);
    Status c = (*f)->Close();
    return ToIOStatus(s.ok() ? c : s);
  }
  IOStatus CreateDir(const std::string& dirname, const IOOptions&,
                     IODebugContext*) override {
    return ToIOStatus(fs_->CreateDir(dirname, kPrivateDirMode));
  }
  IOStatus CreateDirIfMissing(const std::string& dirname, const IOOptions&,
                              IODebugContext*) override {
    Status s = fs_->CreateDir(dirname, kPrivateDirMode);
    if (s.Is(StatusCode::kAlreadyExists)) {
      if (fs_->ListDir(dirname).ok()) return IOStatus::OK();
      return IOStatus::IOError("not a directory: " + dirname);
    }
    return ToIOStatus(s);
  }
  IOStatus DeleteDir(const std::string& dirname, const IOOptions&,
                     IODebugContext*) override {
    return ToIOStatus(fs_->RemoveDir(dirname));
  }
  IOStatus RenameFile(const std::string& src, const std::string& target,
                      const IOOptions&, IODebugContext*) override {
    return ToIOStatus(fs_->Rename(src, target));
  }
  IOStatus LinkFile(const std::string& src, const std::string& target,
                    const IOOptions&, IODebugContext*) override {
    Status s = fs_->Link(src, target);
    // Checkpoint copies the file instead when it cannot link it (e.g. to
    // another file system).
    if (s.Is(StatusCode::kIOError)) return IOStatus::NotSupported(s.message());
    return ToIOStatus(s);
  }
  IOStatus LockFile(const std::string& fname, const IOOptions&,
                    rocksdb::FileLock** lock, IODebugContext*) override {
    *lock = nullptr;
    auto l = fs_->LockFile(fname);
    if (!l.ok()) return ToIOStatus(l.status());
    *lock = new RocksFileLock(std::move(*l));
    return IOStatus::OK();
  }
  IOStatus UnlockFile(rocksdb::FileLock* lock, const IOOptions&,
                      IODebugContext*) override {
    delete lock;
    return IOStatus::OK();
  }
  IOStatus NewLogger(const std::string& fname, const IOOptions& io_opts,
                     std::shared_ptr<rocksdb::Logger>* result,
                     IODebugContext* dbg) override {
    // RocksDB opens its info log itself; creating the file first through
    // the seam gives it our mode (O_CREAT's mode does not apply to a file
    // that exists). The log is diagnostics, not data.
    auto f = fs_->OpenWritable(fname, OpenMode::kTruncate);
    if (!f.ok()) return ToIOStatus(f.status());
    Status s = (*f)->Close();
    if (!s.ok()) return ToIOStatus(s);
    return target()->NewLogger(fname, io_opts, result, dbg);
  }

 private:
  IOStatus Open(const std::string& fname, OpenMode mode,
                const rocksdb::FileOptions& options,
                std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (options.use_direct_writes || options.use_mmap_writes) {
      return IOStatus::NotSupported("direct or mmap writes: " + fname);
    }
    auto f = fs_->OpenWritable(fname, mode);
    if (!f.ok()) return ToIOStatus(f.status());
    result->reset(new RocksWritableFile(options, std::move(*f)));
    return IOStatus::OK();
  }

  kplane::FileSystem* const fs_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewRocksFileSystem(FileSystem* fs) {
  return std::make_shared<RocksFileSystem>(fs);
}

std::unique_ptr<rocksdb::Env> NewRocksEnv(FileSystem* fs) {
  return rocksdb::NewCompositeEnv(NewRocksFileSystem(fs));
}

}  // namespace kplane::mvcc
