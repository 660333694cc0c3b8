// FileSystem: the one door through which kplane's durable files pass (the
// WAL, the raft log, snapshots, and RocksDB's files through the adapter in
// storage/mvcc) -- leveldb's Env, RocksDB's FileSystem.
//
// It is a seam, not a portability layer. Production uses PosixFileSystem;
// tests put base/testing/fault_injection_file_system.h underneath to cut the
// power (drop what was not synced), fail fsync or write, fill the disk and
// flip bits, none of which a kill -9 can show.
//
//   FileSystem* fs = FileSystem::Default();
//   ASSIGN_OR_RETURN(auto f, fs->OpenWritable(dir + "/x.tmp",
//                                             OpenMode::kTruncate));
//   RETURN_IF_ERROR(f->Append(data));
//   RETURN_IF_ERROR(f->Sync());          // the bytes are durable
//   RETURN_IF_ERROR(f->Close());
//   RETURN_IF_ERROR(fs->Rename(dir + "/x.tmp", dir + "/x"));
//   RETURN_IF_ERROR(fs->SyncDir(dir));   // ...and so is the name "x"
//
// Durability contract (POSIX's; the fault double enforces exactly this):
//  - bytes appended to a file are durable once Sync() or Fsync() of that
//    file returns OK;
//  - a name (created, renamed, linked or removed) is durable once SyncDir()
//    of the directory holding it returns OK (both directories for a rename
//    between two);
//  - after a failed Sync() or SyncDir() nothing is known about what reached
//    the disk: callers stop writing (a sticky error, DESIGN.md §5).
//
// Modes: everything created through the seam is private, as etcd's
// PrivateFileMode / PrivateDirMode: files 0600, directories 0700 unless
// CreateDir is told otherwise (the process umask still applies).
//
// Errors: Status codes kNotFound (no such file or directory), kAlreadyExists,
// kNoSpace (ENOSPC, EDQUOT), kIOError (anything else the OS refused); the
// message names the operation and the path. Nothing crashes.
//
// Ownership: files and locks are returned as unique_ptr; destroying a file
// closes it (call Close() to see the error), destroying a lock releases it.
// FileSystem::Default() lives for the whole process.
//
// Thread-safety: a FileSystem may be called from any thread. A WritableFile
// has one writer at a time, but Sync()/Fsync() may run concurrently with
// Append() from another thread (RocksDB syncs its WAL that way) and then
// cover at least what was appended before they started. A ReadableFile may
// be read from several threads.
#ifndef KPLANE_BASE_FILE_SYSTEM_H_
#define KPLANE_BASE_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane {

inline constexpr uint32_t kPrivateFileMode = 0600;
inline constexpr uint32_t kPrivateDirMode = 0700;

class WritableFile {
 public:
  virtual ~WritableFile() = default;

  // Appends at the end of the file (at Size()). The bytes reach the OS, not
  // the disk.
  virtual Status Append(std::string_view data) = 0;
  // Hands buffered bytes to the OS. The files here do not buffer; kept so
  // that callers written against leveldb/RocksDB read naturally.
  virtual Status Flush() = 0;
  // fdatasync: the bytes appended so far (and the size) are durable.
  virtual Status Sync() = 0;
  // fsync: as Sync(), plus the rest of the file's metadata.
  virtual Status Fsync() = 0;
  // Cuts the file to `size` bytes; later appends go there. Not durable
  // before the next Sync().
  virtual Status Truncate(uint64_t size) = 0;
  // Reserves disk blocks up to `size` bytes without changing the file size
  // (fallocate KEEP_SIZE), so appends rarely allocate. Best effort:
  // kUnimplemented where the file system cannot. Close() gives back what
  // was reserved beyond the size.
  virtual Status Preallocate(uint64_t size) = 0;
  // Closes the file. Idempotent; later calls other than Close() fail.
  virtual Status Close() = 0;
  // Bytes in the file: its size when opened (kAppend) plus what was
  // appended, or what Truncate() left.
  virtual uint64_t Size() const = 0;
};

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Replaces *out with up to `n` bytes from `offset`: fewer only at the end
  // of the file, none at or past it.
  virtual Status Read(uint64_t offset, size_t n, std::string* out) const = 0;
  virtual StatusOr<uint64_t> Size() const = 0;
};

// An exclusive advisory lock on a file; released when destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

enum class OpenMode {
  kCreateNew,  // create; kAlreadyExists if the file exists
  kTruncate,   // create, or empty an existing file
  kAppend,     // create, or keep an existing file's bytes and append to them
};

class FileSystem {
 public:
  // The process-wide PosixFileSystem.
  static FileSystem* Default();

  virtual ~FileSystem() = default;

  // Files are created with mode 0600.
  virtual StatusOr<std::unique_ptr<WritableFile>> OpenWritable(
      const std::string& path, OpenMode mode) = 0;
  virtual StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(
      const std::string& path) = 0;

  // rename(2): replaces `to` if it exists.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // link(2): a second name for the file `from`.
  virtual Status Link(const std::string& from, const std::string& to) = 0;
  // Removes a file (not a directory).
  virtual Status Remove(const std::string& path) = 0;
  // Creates one directory; kAlreadyExists if it exists. See CreateDirAll.
  virtual Status CreateDir(const std::string& path, uint32_t mode) = 0;
  // Removes an empty directory.
  virtual Status RemoveDir(const std::string& path) = 0;
  // Makes the names in `path` (creations, renames, removals) durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // The names in a directory, without "." and "..", in no particular order.
  virtual StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) = 0;
  virtual StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  // True if something (file or directory) exists at `path`.
  virtual bool Exists(const std::string& path) = 0;
  // Takes an exclusive lock on `path` (created if missing), or fails at once
  // with kUnavailable when another holder (this process included) has it.
  virtual StatusOr<std::unique_ptr<FileLock>> LockFile(
      const std::string& path) = 0;
};

// The default implementation: POSIX calls, no user-space buffering.
class PosixFileSystem : public FileSystem {
 public:
  StatusOr<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path,
                                                       OpenMode mode) override;
  StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(
      const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Link(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status CreateDir(const std::string& path, uint32_t mode) override;
  Status RemoveDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  StatusOr<uint64_t> FileSize(const std::string& path) override;
  bool Exists(const std::string& path) override;
  StatusOr<std::unique_ptr<FileLock>> LockFile(
      const std::string& path) override;
};

// ---- helpers built on the interface ----------------------------------------

// The whole file, or `n` bytes from `offset` (fewer at the end).
StatusOr<std::string> ReadFile(FileSystem* fs, const std::string& path);
StatusOr<std::string> ReadFileRange(FileSystem* fs, const std::string& path,
                                    uint64_t offset, size_t n);

// Replaces `path` with `data` durably: writes `path`.tmp, syncs it, renames
// it over `path` and syncs the directory. A crash leaves the old file or the
// new one, never a mix (a stale .tmp may remain).
Status WriteFileAtomically(FileSystem* fs, const std::string& path,
                           std::string_view data);

// mkdir -p: creates each missing directory of `path` with `mode` and syncs
// the directory above each one it created, so the new path survives a power
// cut. OK if `path` exists already.
Status CreateDirAll(FileSystem* fs, const std::string& path, uint32_t mode);

// rm -r: removes `path` and, for a directory, everything under it. OK if
// nothing is there. Not durable before SyncDir() of DirName(path).
Status RemoveAll(FileSystem* fs, const std::string& path);

// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string DirName(std::string_view path);

// A Status for an errno value: kNoSpace for ENOSPC and EDQUOT, kNotFound for
// ENOENT, kAlreadyExists for EEXIST, kIOError otherwise; the message is
// "<what>: <strerror>".
Status ErrnoToStatus(std::string_view what, int err);

}  // namespace kplane

#endif  // KPLANE_BASE_FILE_SYSTEM_H_
