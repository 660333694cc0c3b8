// WriteTxn: the changes of one write transaction, staged in the store's
// write group's batch (StagedBatch) so that reads inside the transaction
// see its own writes (internal to kplane_mvcc).
//
// Every change gets revision (begin_rev + 1, sub) with sub = 0, 1, 2, ... and
// writes two records: the key-major version and the revision-major event.
// Lease attachments change with the key. Nothing reaches RocksDB until the
// store commits the batch together with the new current revision and the
// consistent index; the in-memory consequences (lessor attachments, watch
// events) are applied by the store after that commit.
//
// The batch is the store's write group's (Store::BeginWriteGroup), so a
// transaction reads what the group's earlier transactions staged. It marks a
// save point there and rolls back to it when destroyed unstaged: an error
// half-way leaves the group as it was.
//
// The store's key index (key_index.h), when given, gets every version the
// transaction writes as it writes it, and gives Put its previous version's
// create_revision/version/lease and DeleteRange its live keys without a
// RocksDB read whenever the caller needs no previous value. When the
// previous value is needed and its version is published (at or below
// `published_rev`, so in the database, not in the batch), it is read from
// the database alone: the batch is read -- and indexed, StagedBatch -- only
// for versions the group staged. A transaction destroyed unstaged takes its
// versions out of the index again.
//
// Thread-safety: single-threaded; the store holds its write lock.
#ifndef KPLANE_STORAGE_MVCC_WRITE_TXN_H_
#define KPLANE_STORAGE_MVCC_WRITE_TXN_H_

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"
#include "schemas/kv.pb.h"
#include "storage/mvcc/key_index.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/staged_batch.h"
#include "storage/mvcc/watch_hub.h"

namespace kplane::mvcc {

class WriteTxn {
 public:
  struct LeaseChange {
    bool attach;  // false: detach
    int64_t lease;
    std::string key;
  };

  // `begin_rev`: the revision the transaction starts from (the group's
  // staged ones included); `published_rev`: the store's published current
  // revision (<= begin_rev), whose versions are all in the database.
  // `events`: collect watch events; `events_with_prev`: with prev_kv.
  // `group_batch`: the write group's batch to stage into. `index`: the
  // store's key index, or null to read every previous version from
  // RocksDB (not owned).
  WriteTxn(rocksdb::DB* db, int64_t begin_rev, int64_t published_rev,
           bool events, bool events_with_prev, StagedBatch* group_batch,
           KeyIndex* index);
  ~WriteTxn();
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;

  // Keeps the changes staged (no rollback on destruction).
  void MarkStaged();

  int64_t begin_rev() const { return begin_rev_; }
  // The revision reads inside the transaction see: begin_rev, or
  // begin_rev + 1 once something changed.
  int64_t rev() const { return changed() ? begin_rev_ + 1 : begin_rev_; }
  bool changed() const { return sub_ > 0; }
  ReadView* view() { return &view_; }

  // Writes a new version of `key`; returns the previous live version. Its
  // value is filled only with `want_prev_value` (read from RocksDB then);
  // without it the other fields may come from the key index.
  StatusOr<std::optional<mvccpb::KeyValue>> Put(const std::string& key,
                                                const std::string& value,
                                                int64_t lease,
                                                bool want_prev_value);
  // Deletes every live key in [key, range_end) (etcd conventions); appends
  // the deleted versions to `prev` when non-null. Returns how many.
  StatusOr<int64_t> DeleteRange(const std::string& key,
                                const std::string& range_end,
                                std::vector<mvccpb::KeyValue>* prev);

  // Raw access for meta, lease and size records the store adds.
  StagedBatch* batch() { return batch_; }
  // Net change of the logical size (key + value bytes of records).
  int64_t size_delta() const { return size_delta_; }
  void AddSizeDelta(int64_t d) { size_delta_ += d; }

  const std::vector<LeaseChange>& lease_changes() const {
    return lease_changes_;
  }
  std::shared_ptr<EventList> TakeEvents() { return std::move(events_); }
  // Whether the events carry prev_kv (decided when the txn began).
  bool events_have_prev() const { return collect_prev_; }
  // The keys this transaction wrote versions of (for the store to roll the
  // key index back if the write group fails).
  const std::vector<std::string>& written_keys() const { return written_keys_; }
  // Keys this transaction created (put with no live version) minus keys
  // it deleted: how the count of live keys moves when it is published.
  int64_t live_key_delta() const { return live_key_delta_; }

 private:
  void WriteVersion(const std::string& key, bool is_delete,
                    const std::string& record);

  rocksdb::DB* const db_;
  const int64_t begin_rev_;
  const int64_t published_rev_;
  const bool collect_prev_;
  StagedBatch* const batch_;
  bool staged_ = false;
  uint32_t count_at_start_;  // records in the batch when the txn began
  BatchView view_;
  uint32_t sub_ = 0;
  int64_t size_delta_ = 0;
  int64_t live_key_delta_ = 0;
  std::vector<LeaseChange> lease_changes_;
  std::shared_ptr<EventList> events_;  // null when not collecting
  KeyIndex* const index_;              // null: no index
  std::vector<std::string> written_keys_;
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_WRITE_TXN_H_
