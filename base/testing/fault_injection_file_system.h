// FaultInjectionFileSystem: a FileSystem for tests that wraps a real one and
// can lose power, fail, fill up and rot (leveldb's FaultInjectionTestEnv,
// RocksDB's FaultInjectionTestFS).
//
// Everything passes through to the wrapped file system while the double
// remembers what is durable under base/file_system.h's contract: for each
// file the size of its last successful Sync()/Fsync(), and a journal of the
// names created, renamed, linked and removed since their directory was last
// synced. A change belongs to its directory, not to the directory's name:
// when the directory is renamed its pending changes move with it, and only
// a sync of it (under the name it has then) makes them durable; the rename
// itself needs its parents synced. PowerCut() then makes the disk look as it
// would after the power failed: every file cut back to its synced size, and the
// journal undone, newest first (new files and directories deleted, renames
// moved back with the file they replaced restored, removed files brought back).
//
//   FaultInjectionFileSystem fs(FileSystem::Default());
//   auto wal = Wal::Open(dir, {.file_system = &fs}, replay);
//   ... append, sync some, append more ...
//   wal.reset();                 // every file closed
//   ASSERT_TRUE(fs.PowerCut().ok());
//   // reopen: the synced records are there, the others are not
//
// A file the double never wrote, created or renamed is taken to be durable
// as it is. Hard links share one synced size (one inode).
//
// Faults:
//  - SetActive(false): the machine is dead from now on. Calls still succeed
//    and reach the disk, but nothing becomes durable any more, so the next
//    PowerCut() drops all of it (no torn tail keeps a byte written from then
//    on). Use it to stop the durable state at a point and shut a store down
//    (its close-time flushes are then lost too). Truncations still count:
//    the double keeps no copy of the bytes they drop.
//  - InjectError(): Append/Truncate/Preallocate ("writes") or Sync/Fsync/
//    SyncDir ("syncs") fail with EIO or ENOSPC, once or from a point on,
//    optionally only for paths containing a string. A failed write writes
//    nothing; a failed sync makes nothing durable.
//  - SetNoSpace(true): every write fails with ENOSPC until SetNoSpace(false).
//  - FlipBits(): XORs bytes of a file on disk in place (bit rot), bypassing
//    the bookkeeping.
//
// Errors: injected faults come back as kIOError (EIO) or kNoSpace (ENOSPC)
// with "(injected)" in the message; everything else is the wrapped file
// system's. PowerCut() fails with kFailedPrecondition while a WritableFile
// opened through it is still open.
//
// Ownership: `base` is not owned and must outlive this object. Saved copies
// of removed or replaced files live in `scratch_dir` (hard links when it is
// on the same file system, else in memory); by default a fresh directory
// under /tmp, removed by the destructor.
//
// Thread-safety: all methods may be called from any thread. PowerCut() must
// not run concurrently with other calls.
#ifndef KPLANE_BASE_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_
#define KPLANE_BASE_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "base/mutex.h"

namespace kplane {

class FaultInjectionFileSystem : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* base,
                                    std::string scratch_dir = "");
  ~FaultInjectionFileSystem() override;
  FaultInjectionFileSystem(const FaultInjectionFileSystem&) = delete;
  FaultInjectionFileSystem& operator=(const FaultInjectionFileSystem&) = delete;

  // ---- power --------------------------------------------------------------
  struct PowerCutOptions {
    // Instead of dropping each file's unsynced tail whole, keep a random
    // prefix of what was written of it while the power was on and, for half
    // the files, zero the last 512-byte sector of what is kept (a write
    // whose size reached the disk but whose data did not): the torn tails a
    // real power cut leaves.
    bool torn_tails = false;
    uint64_t seed = 1;
  };
  // Drops everything not durable (above), then forgets the journal and
  // becomes active again, as a machine that boots. Injected errors stay.
  Status PowerCut(const PowerCutOptions& options);
  Status PowerCut() { return PowerCut(PowerCutOptions{}); }
  void SetActive(bool active) EXCLUDES(mu_);
  bool active() const EXCLUDES(mu_);

  // ---- errors -------------------------------------------------------------
  enum class Op {
    kWrite,  // Append, Truncate, Preallocate
    kSync,   // Sync, Fsync, SyncDir
  };
  struct ErrorSpec {
    Op op = Op::kSync;
    int error = 5;  // EIO; or ENOSPC (28)
    // Only paths containing this ("" = every path).
    std::string path_contains;
    // Let this many matching calls succeed first.
    int skip = 0;
    // Fail one call, then disarm; false: fail every later call until
    // ClearErrors().
    bool once = false;
  };
  void InjectError(const ErrorSpec& spec) EXCLUDES(mu_);
  void ClearErrors() EXCLUDES(mu_);
  void SetNoSpace(bool no_space) EXCLUDES(mu_);
  // How many calls failed because of InjectError/SetNoSpace.
  int64_t injected_failures() const EXCLUDES(mu_);

  // ---- damage -------------------------------------------------------------
  // XORs the bytes at `offset` with `mask` (one byte each) in the file on
  // disk. kOutOfRange past the end of the file.
  Status FlipBits(const std::string& path, uint64_t offset,
                  std::string_view mask);
  Status FlipBit(const std::string& path, uint64_t offset) {
    return FlipBits(path, offset, std::string_view("\x01", 1));
  }

  // ---- introspection ------------------------------------------------------
  // Every path a WritableFile was opened for through this object (ever).
  std::set<std::string> WrittenPaths() const EXCLUDES(mu_);
  // Paths created, renamed, linked or removed whose directory has not been
  // synced since (what PowerCut would undo), oldest first.
  std::vector<std::string> UnsyncedNames() const EXCLUDES(mu_);

  // ---- FileSystem ---------------------------------------------------------
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

 private:
  class File;
  // What the double knows about one file (one inode): how much of it is
  // durable. Shared by its names and its open handles.
  struct Node {
    uint64_t synced = 0;
    // How far it was written while the power was on (>= synced): a torn
    // tail keeps at most this much.
    uint64_t written = 0;
  };
  // A file taken out of the namespace (removed, or replaced by a rename),
  // kept so that PowerCut can put it back.
  struct Saved {
    std::shared_ptr<Node> node;
    std::string scratch_path;            // a hard link, or
    std::optional<std::string> content;  // a copy of its synced bytes
  };
  // One name change not yet durable.
  struct JournalEntry {
    enum class Kind {
      kCreateFile,
      kCreateDir,
      kRename,
      kLink,
      kRemove,
      kRemoveDir
    };
    Kind kind;
    std::string path;            // created, linked, removed or renamed-to name
    std::string from;            // kRename, kLink: the source name
    std::optional<Saved> saved;  // kRemove: the file; kRename: the replaced
    std::set<std::string> pending_dirs;  // to be synced for durability
  };

  std::shared_ptr<Node> NodeLocked(const std::string& path) REQUIRES(mu_);
  // Fails the call if an injected error matches.
  Status CheckFault(Op op, const std::string& path) EXCLUDES(mu_);
  StatusOr<Saved> SaveLocked(const std::string& path) REQUIRES(mu_);
  Status RestoreLocked(const Saved& saved, const std::string& path)
      REQUIRES(mu_);
  void DropSavedLocked(const Saved& saved) REQUIRES(mu_);
  void RecordLocked(JournalEntry entry) REQUIRES(mu_);
  Status UndoLocked(const JournalEntry& e) REQUIRES(mu_);
  Status RemoveAllLocked(const std::string& path) REQUIRES(mu_);
  // After a rename of `from` to `to`: what is known of the file or tree at
  // `from` moves to `to`; for a directory, so do the journal's pending
  // changes inside it.
  void MoveNamesLocked(const std::string& from, const std::string& to,
                       bool is_dir) REQUIRES(mu_);
  void ForgetNodesUnderLocked(const std::string& dir) REQUIRES(mu_);
  Status CutFileLocked(const std::string& path, const Node& node,
                       const PowerCutOptions& options, uint64_t* rng)
      REQUIRES(mu_);
  StatusOr<std::string> ScratchDirLocked() REQUIRES(mu_);
  void FileClosed() EXCLUDES(mu_);
  void SyncedUpTo(const std::shared_ptr<Node>& node, uint64_t size)
      EXCLUDES(mu_);
  void WrittenUpTo(const std::shared_ptr<Node>& node, uint64_t size)
      EXCLUDES(mu_);

  FileSystem* const base_;
  mutable Mutex mu_;
  std::string scratch_dir_ GUARDED_BY(mu_);
  bool own_scratch_dir_ GUARDED_BY(mu_) = false;
  int64_t scratch_seq_ GUARDED_BY(mu_) = 0;
  bool active_ GUARDED_BY(mu_) = true;
  std::map<std::string, std::shared_ptr<Node>> nodes_ GUARDED_BY(mu_);
  std::vector<JournalEntry> journal_ GUARDED_BY(mu_);
  std::vector<ErrorSpec> errors_ GUARDED_BY(mu_);
  bool no_space_ GUARDED_BY(mu_) = false;
  int64_t injected_failures_ GUARDED_BY(mu_) = 0;
  int open_files_ GUARDED_BY(mu_) = 0;
  std::set<std::string> written_paths_ GUARDED_BY(mu_);
};

}  // namespace kplane

#endif  // KPLANE_BASE_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_
