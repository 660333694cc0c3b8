// EtcdSnapshotDb: a member's data as etcd 3.4's backend, a bbolt database
// (storage/bolt/etcd_backend.h), for Maintenance.Snapshot -- what
// `etcdctl snapshot save` stores, `snapshot status` reads and `snapshot
// restore` turns into an etcd data dir.
//
// Sources: the key-value history, leases, consistent index (the applied
// raft index) and compaction revisions from one consistent read of the
// MVCC store (Store::ExportAll); the membership (members, removed ids)
// and the alarms as this member knows them right after that read. Like
// SaveSnapshot it is served also while the member replays its log or after
// its apply stopped (for diagnosis).
//
// Differences from a db etcd would hold for the same writes: kplane's
// revisions start at 1 for the first write (etcd's at 2); values reflect
// kplane's compaction (a tombstone below the compaction revision goes
// with its key's history); the file is freshly bulk-loaded (no free
// pages), so its size is not etcd's. Memory: the whole history plus the
// file at once.
//
// Thread-safety: call from a worker thread (it reads the whole store).
// Errors: Unavailable without a store, the store's read errors.
#ifndef KPLANE_STORAGE_SERVER_ETCD_SNAPSHOT_H_
#define KPLANE_STORAGE_SERVER_ETCD_SNAPSHOT_H_

#include <string>

#include "base/statusor.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

// The bbolt file, without etcd's trailing sha256 (bolt::Sha256).
StatusOr<std::string> EtcdSnapshotDb(StoreServer* server);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_ETCD_SNAPSHOT_H_
