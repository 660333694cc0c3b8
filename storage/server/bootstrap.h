// Bootstrap: opening a store member's data directory (etcd's
// server/etcdserver/bootstrap.go). It locks the directory, opens the raft
// log, the MVCC store and the membership, and works out who this member is:
//
//   empty log, --initial-cluster-state=new       bootstraps a cluster: the
//       membership from --initial-cluster, this member found by name, the
//       initial configuration written to the log;
//   empty log, --initial-cluster-state=existing  joins one: the membership
//       fetched from a running member (StoreConfig::existing_cluster), this
//       member found by its peer URLs (after `member add`);
//   a log                                        restarts: identity from
//       the log, membership from member/cluster.pb.
// An etcd 3.4 data directory (what `etcdctl snapshot restore` writes) is
// imported into kplane's files first (etcd_import.h; etcd's member/ is
// moved aside to member.etcd), so it then restarts like any member. A
// snapshot install that a crash interrupted is finished first
// (StoreApplier::FinishInstall).
//
// Startup checks (etcd's raft loadState panics and its verify.go, as
// errors): the WAL, the raft log it holds, its snapshot marker, the MVCC
// store's consistent (applied) index and the membership's applied index
// must fit together. Each of these is refused with kCorruption, naming the
// numbers and what to do, instead of starting (a member that started anyway
// would time out every write, or crash in the raft core):
//   - the hard state's commit index is beyond the last entry of the log
//     (the WAL lost entries it had committed);
//   - the hard state's commit index is below the snapshot's index;
//   - the store's applied index is beyond the last entry of the log (the
//     WAL lost entries the store had applied: a truncated or damaged WAL);
//   - the membership's applied index is beyond the last entry of the log;
//   - the store's applied index is below the snapshot's (a snapshot marker
//     is written only once the store is durable at its index; the
//     bootstrap snapshot of an empty store, index 1, is the exception);
//   - an empty WAL beside a store that applied entries (the WAL was lost:
//     starting would bootstrap a new log over old data).
// (A store applied beyond the hard state's commit index is fine: commit-only
// hard states are not fsynced, so a power cut may lose the newer one.)
//
// Data directory layout (docs/store.md):
//   <data-dir>/member/wal/        raft log (storage/wal/FORMAT.md)
//   <data-dir>/member/db/         MVCC RocksDB (storage/mvcc/FORMAT.md)
//   <data-dir>/member/cluster.pb  membership (storagepb.ClusterRecord)
//   <data-dir>/member/snap/       snapshots received from a leader, waiting
//                                 to be installed, and staged copies
//   <data-dir>/LOCK               held while a process owns the directory
//   <data-dir>/member.etcd/       etcd's files, after an import
//
// Modes: the data directory, member/ and member/snap/ are created 0700 and
// the files here 0600 (etcd's modes); a data or member directory that group
// or others can write to is refused (kFailedPrecondition, naming the mode
// and the chmod that fixes it).
//
// Thread-safety: a function; not for concurrent use on one directory (the
// LOCK refuses a second opener).
// Errors: kInvalidArgument for flags that do not fit, kFailedPrecondition
// for a directory in use, writable by others, or of a removed member,
// kCorruption for a log, store and membership that disagree (the startup
// checks), kIOError from the file system.
#ifndef KPLANE_STORAGE_SERVER_BOOTSTRAP_H_
#define KPLANE_STORAGE_SERVER_BOOTSTRAP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/statusor.h"
#include "storage/mvcc/store.h"
#include "storage/server/cluster.h"
#include "storage/server/raft_log.h"
#include "storage/server/store_config.h"

namespace kplane::storage {

// An exclusive lock on <data-dir>/LOCK (FileSystem::LockFile: flock),
// released when destroyed.
class DataDirLock {
 public:
  static StatusOr<DataDirLock> Acquire(FileSystem* fs,
                                       const std::string& data_dir);
  DataDirLock() = default;

 private:
  explicit DataDirLock(std::unique_ptr<FileLock> lock)
      : lock_(std::move(lock)) {}
  std::unique_ptr<FileLock> lock_;
};

// A member's opened data directory.
struct BootstrappedMember {
  DataDirLock lock;
  std::string member_dir;  // <data-dir>/member
  uint64_t member_id = 0;
  std::unique_ptr<RaftLog> log;
  std::unique_ptr<mvcc::Store> store;
  std::unique_ptr<Membership> membership;
};

// How the member's MVCC store is opened (also after a snapshot replaced it).
mvcc::Options StoreOptions(const StoreConfig& config,
                           const std::string& member_dir);

// The startup checks above, on an opened log, store applied index and
// membership.
Status CheckStartupInvariants(RaftLog& log, uint64_t store_applied_index,
                              const Membership& membership);

// Creates `dir` 0700 through `fs` if it is missing (its parents too, each
// name made durable); refuses a directory group or others can write to.
Status PrivateDir(FileSystem* fs, const std::string& dir);

// Opens (or initializes) the data directory of `config`. A new single
// member without peer URLs gets http://127.0.0.1:2380 in
// config->peer_urls.
StatusOr<BootstrappedMember> BootstrapMember(StoreConfig* config);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_BOOTSTRAP_H_
