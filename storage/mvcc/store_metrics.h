// StoreMetrics: the series etcd's mvcc package and backend export, fed by
// the kplane store (store.h) where the event happens. Names, types, labels
// and units are etcd 3.4's, so etcd's dashboards and alerts read them
// (docs/store.md, "Metrics", lists each and how it differs from etcd's).
//
//   static const StoreMetrics m = StoreMetrics::Register(registry);
//   mvcc::Options o;  o.metrics = &m;
//
// Counting follows etcd's metricsTxnWrite: every Range call (a Range
// request, a range op inside a txn, a txn compare, the read a put or
// delete makes for prev_kv / ignore_value / ignore_lease) adds to
// range_total, every put to put_total, every delete-range call (and each
// key a lease revocation deletes) to delete_total, and a transaction that
// made more than one of those (compares not included) to txn_total.
//
// Ownership: the pointers are children of the registry's families and live
// as long as it; a StoreMetrics is a plain bundle of them (copyable).
// Thread-safety: the counters are relaxed atomics; any thread may add.
#ifndef KPLANE_STORAGE_MVCC_STORE_METRICS_H_
#define KPLANE_STORAGE_MVCC_STORE_METRICS_H_

#include <cstdint>

#include "base/metrics.h"

namespace kplane::mvcc {

struct StoreMetrics {
  // Registers (or finds: a registry shares a name between its users) the
  // families in `reg` and returns their label-less children.
  static StoreMetrics Register(metrics::Registry* reg);

  metrics::Counter* range_total = nullptr;   // etcd_mvcc_range_total
  metrics::Counter* put_total = nullptr;     // etcd_mvcc_put_total
  metrics::Counter* delete_total = nullptr;  // etcd_mvcc_delete_total
  metrics::Counter* txn_total = nullptr;     // etcd_mvcc_txn_total
  // etcd_debugging_mvcc_keys_total: live (not deleted) keys.
  metrics::Gauge* keys_total = nullptr;
  // etcd_mvcc_db_total_size_in_bytes (and etcd_debugging_mvcc_'s twin):
  // the store's files on disk, as last measured for the quota.
  metrics::Gauge* db_total_size = nullptr;
  metrics::Gauge* db_total_size_debugging = nullptr;
  // etcd_mvcc_db_total_size_in_use_in_bytes: the logical size the quota
  // counts (key and value bytes of the stored records).
  metrics::Gauge* db_size_in_use = nullptr;
  // etcd_debugging_mvcc_current_revision / compact_revision.
  metrics::Gauge* current_revision = nullptr;
  metrics::Gauge* compact_revision = nullptr;
  // etcd_disk_backend_commit_duration_seconds: one RocksDB write of a
  // write group (etcd: one bbolt commit of its batch transaction).
  metrics::Histogram* backend_commit_seconds = nullptr;
};

// What one store call did, added to the counters in one go when it ends
// (etcd's metricsTxnWrite.End).
struct OpTally {
  uint32_t ranges = 0;
  uint32_t puts = 0;
  uint32_t deletes = 0;
  // Ranges that do not make the call a transaction (txn compares).
  uint32_t compare_ranges = 0;

  void AddTo(const StoreMetrics* m) const {
    if (m == nullptr) return;
    if (ranges + puts + deletes > 1) m->txn_total->Inc();
    if (ranges + compare_ranges > 0)
      m->range_total->Inc(ranges + compare_ranges);
    if (puts > 0) m->put_total->Inc(puts);
    if (deletes > 0) m->delete_total->Inc(deletes);
  }
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_STORE_METRICS_H_
