// Helpers shared by the store_*.cc files (internal to kplane_mvcc).
#ifndef KPLANE_STORAGE_MVCC_STORE_INTERNAL_H_
#define KPLANE_STORAGE_MVCC_STORE_INTERNAL_H_

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <string_view>

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

// Whether a memtable insert of `key` starts from the last insert of its
// region (RocksDB's memtable_insert_with_hint_prefix_extractor, set up in
// store.cc): the event log's records (one region: revisions only grow) and
// each meta key (rewritten by every write group).
bool InMemtableHintDomain(std::string_view key);

// wb->DeleteRange(begin, end) for a range whose begin lies outside the hint
// domain, which it CHECKs. RocksDB 7.8 (Debian's) keeps one hint per region
// for the point-key memtable and the range-tombstone memtable together, so
// a range deletion starting inside a region would leave that region's hint
// pointing into the other skiplist and corrupt the next insert (fixed in
// later RocksDB: "hints are for the point key table only"). Every range
// deletion of the store goes through here.
void DeleteRangeOutsideHints(rocksdb::WriteBatch* wb, std::string_view begin,
                             std::string_view end);

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
