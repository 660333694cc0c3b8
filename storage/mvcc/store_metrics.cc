#include "storage/mvcc/store_metrics.h"

namespace kplane::mvcc {

StoreMetrics StoreMetrics::Register(metrics::Registry* reg) {
  StoreMetrics m;
  // Help texts are etcd's, so a dashboard's tooltip reads the same.
  m.range_total = reg->NewCounter("etcd_mvcc_range_total",
                                  "Total number of ranges seen by this member.")
                      ->With({});
  m.put_total = reg->NewCounter("etcd_mvcc_put_total",
                                "Total number of puts seen by this member.")
                    ->With({});
  m.delete_total =
      reg->NewCounter("etcd_mvcc_delete_total",
                      "Total number of deletes seen by this member.")
          ->With({});
  m.txn_total = reg->NewCounter("etcd_mvcc_txn_total",
                                "Total number of txns seen by this member.")
                    ->With({});
  m.keys_total =
      reg->NewGauge("etcd_debugging_mvcc_keys_total", "Total number of keys.")
          ->With({});
  m.db_total_size =
      reg->NewGauge("etcd_mvcc_db_total_size_in_bytes",
                    "Total size of the underlying database physically "
                    "allocated in bytes.")
          ->With({});
  m.db_total_size_debugging =
      reg->NewGauge("etcd_debugging_mvcc_db_total_size_in_bytes",
                    "Total size of the underlying database physically "
                    "allocated in bytes.")
          ->With({});
  m.db_size_in_use =
      reg->NewGauge("etcd_mvcc_db_total_size_in_use_in_bytes",
                    "Total size of the underlying database logically in use "
                    "in bytes.")
          ->With({});
  m.current_revision = reg->NewGauge("etcd_debugging_mvcc_current_revision",
                                     "The current revision of store.")
                           ->With({});
  m.compact_revision =
      reg->NewGauge("etcd_debugging_mvcc_compact_revision",
                    "The revision of the last compaction in store.")
          ->With({});
  // etcd's buckets: 1 ms to 8 s.
  m.backend_commit_seconds =
      reg->NewHistogram(
             "etcd_disk_backend_commit_duration_seconds",
             "The latency distributions of commit called by backend.", {},
             metrics::ExponentialBuckets(0.001, 2, 14))
          ->With({});
  return m;
}

}  // namespace kplane::mvcc
