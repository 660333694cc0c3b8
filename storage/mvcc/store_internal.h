// Helpers shared by the store_*.cc files (internal to kplane_mvcc).
#ifndef KPLANE_STORAGE_MVCC_STORE_INTERNAL_H_
#define KPLANE_STORAGE_MVCC_STORE_INTERNAL_H_

#include <rocksdb/db.h>

#include "base/status.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/store_metrics.h"

namespace kplane::mvcc::internal {

inline Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  if (s.IsNoSpace()) return Status(StatusCode::kNoSpace, s.ToString());
  if (s.IsCorruption()) return CorruptionError(s.ToString());
  return IOError(s.ToString());
}

// A put's tally (store_metrics.h): etcd reads the key first when the put
// wants its previous version (prev_kv, ignore_value, ignore_lease).
inline OpTally PutTally(const etcdserverpb::PutRequest& r) {
  const bool reads = r.prev_kv() || r.ignore_value() || r.ignore_lease();
  return OpTally{.ranges = reads ? 1u : 0u, .puts = 1};
}

// Holds a RocksDB snapshot for one read.
class ScopedSnapshot {
 public:
  explicit ScopedSnapshot(rocksdb::DB* db)
      : db_(db), snap_(db->GetSnapshot()) {}
  ~ScopedSnapshot() { db_->ReleaseSnapshot(snap_); }
  ScopedSnapshot(const ScopedSnapshot&) = delete;
  ScopedSnapshot& operator=(const ScopedSnapshot&) = delete;
  const rocksdb::Snapshot* get() const { return snap_; }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snap_;
};

inline Status NoSpaceError() {
  return Status(StatusCode::kNoSpace,
                "etcdserver: mvcc: database space exceeded");
}

inline Status TooLargeError() {
  return Status(StatusCode::kTooLarge, "etcdserver: request is too large");
}

inline Status KeyNotFoundError() {
  return InvalidArgumentError("etcdserver: key not found");
}

inline Status LeaseNotFoundError() {
  return NotFoundError("etcdserver: requested lease not found");
}

}  // namespace kplane::mvcc::internal

#endif  // KPLANE_STORAGE_MVCC_STORE_INTERNAL_H_
