// Compaction: Compact() records the target revision C (reads and watches
// below it fail at once); a background thread then deletes, in bounded
// write batches,
//  - every version <= C that a newer version <= C supersedes,
//  - every tombstone < C that is the newest version <= C of its key (with
//    all older versions: the key is gone at C), and
//  - the event log below C.
// Revision C itself stays complete (its events, and a tombstone at C), so
// reading at C and watching from C work, as in etcd; the next compaction
// removes what it kept.
// It walks the event log from the last finished compaction, so only keys
// written since are visited. A persisted cursor (the last revision fully
// processed) lets a restart resume where a crash stopped it; every batch is
// idempotent, so redoing part of one is harmless.
//
// Cost: one seek per distinct key (not per event), and deletions that do not
// cost one record each. A key's versions are contiguous and newest first,
// so what compaction removes from a key is always a tail of its run, deleted
// with one RocksDB range deletion; the event records a batch walked are one
// contiguous range of the log, deleted with one more:
//
//   k: foo@9 foo@7 foo@4 foo@2 | foo\0@8 | goo@3(tomb) goo@1    Compact(8)
//   foo:    Seek(foo,~8) -> foo@7 survives; Next: foo@4, foo@2
//           -> DeleteRange[foo@4, succ(foo))   (foo@9, foo@7 untouched)
//   foo\0:  Seek -> foo\0@8 survives, nothing older -> nothing
//   goo:    Seek -> goo@3, a tombstone below 8 -> DeleteRange[goo@3, succ(goo))
//   r: events 2..7 walked in this batch -> DeleteRange[r(2), r(8,0))
//      (r(2) = EventRangeStart(2): outside the memtable's hints, store.cc)
//
// succ(foo) ends foo's run before foo\0's (see FORMAT.md, escaping).

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

#include "base/logging.h"
#include "base/mutex.h"
#include "storage/mvcc/key_index.h"
#include "storage/mvcc/keys.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"

namespace kplane::mvcc {

using internal::DeleteRangeOutsideHints;
using internal::FromRocks;

namespace {

rocksdb::Slice MetaSlice(std::string_view k) {
  return rocksdb::Slice(k.data(), k.size());
}

}  // namespace

Status Store::Compact(int64_t revision, uint64_t consistent_index) {
  {
    MutexLock l(&write_mu_);
    RETURN_IF_ERROR(FlushGroupLocked());
    const int64_t scheduled = compact_scheduled_.load();
    if (revision <= scheduled) return CompactedError(scheduled);
    const int64_t current = current_rev_.load();
    if (revision > current) return FutureRevisionError(current);
    rocksdb::WriteBatch wb;
    wb.Put(MetaSlice(keys::kMetaCompactScheduled), keys::EncodeInt64(revision));
    if (consistent_index != 0) {
      wb.Put(MetaSlice(keys::kMetaConsistentIndex),
             keys::EncodeInt64(static_cast<int64_t>(consistent_index)));
    }
    RETURN_IF_ERROR(WriteLocked(&wb, options_.sync_writes, "compact"));
    compact_scheduled_ = revision;
    if (consistent_index != 0) consistent_index_ = consistent_index;
    PublishGauges();
    // After compact_scheduled_ is raised: a reader that checks it under the
    // index's lock either sees the new value or counts before this.
    if (index_ != nullptr) index_->Compact(revision);
  }
  MutexLock l(&compact_mu_);
  compact_cv_.notify_all();
  return Status::Ok();
}

Status Store::WaitForCompaction(int64_t revision) {
  MutexLock l(&compact_mu_);
  compact_cv_.wait(l.native(), [&]() REQUIRES(compact_mu_) {
    return compact_finished_ >= revision || stopping_ ||
           !compaction_error_.ok();
  });
  if (compact_finished_ >= revision) return Status::Ok();
  if (!compaction_error_.ok()) return compaction_error_;
  return UnavailableError("mvcc: store closed before compaction finished");
}

bool Store::CompactionStopping() {
  MutexLock l(&compact_mu_);
  return stopping_;
}

void Store::CompactionLoop() {
  MutexLock l(&compact_mu_);
  while (true) {
    compact_cv_.wait(l.native(), [&]() REQUIRES(compact_mu_) {
      return stopping_ || (compaction_error_.ok() &&
                           compact_scheduled_.load() > compact_finished_);
    });
    if (stopping_) return;
    const int64_t target = compact_scheduled_.load();
    l.Unlock();
    const Status s = RunCompaction(target);
    l.Lock();
    if (s.ok()) {
      compact_finished_ = target;
      compact_cv_.notify_all();
    } else if (!s.Is(StatusCode::kCancelled)) {
      // Waits for a recovery (DisarmNoSpaceAlarm after a full disk) or a
      // restart, which resumes from the persisted cursor.
      LOG(ERROR) << "mvcc: compaction to " << target << " stopped: " << s;
      compaction_error_ = s;
      compact_cv_.notify_all();
    }
  }
}

Status Store::FlushCompactionBatch(rocksdb::WriteBatch* wb, int64_t* freed,
                                   int64_t cursor_rev) {
  if (wb->Count() == 0) return Status::Ok();
  wb->Put(MetaSlice(keys::kMetaCompactCursor), keys::EncodeInt64(cursor_rev));
  {
    // Briefly: the size counter is shared with writers.
    MutexLock l(&write_mu_);
    const int64_t new_size = size_in_use_.load() - *freed;
    wb->Put(MetaSlice(keys::kMetaSizeInUse), keys::EncodeInt64(new_size));
    // Not synced: a lost batch is redone from the cursor after a restart.
    RETURN_IF_ERROR(WriteLocked(wb, /*sync=*/false, "compaction"));
    size_in_use_ = new_size;
    PublishGauges();
  }
  {
    MutexLock l(&compact_mu_);
    compact_cursor_ = cursor_rev;
  }
  wb->Clear();
  *freed = 0;
  return Status::Ok();
}

StatusOr<int64_t> Store::CompactKey(rocksdb::Iterator* versions,
                                    std::string_view user_key, int64_t target,
                                    rocksdb::WriteBatch* wb, int64_t* freed) {
  const std::string prefix = keys::VersionPrefix(user_key);
  const rocksdb::Slice prefix_slice(prefix);
  rocksdb::Iterator* it = versions;
  it->Seek(keys::VersionSeekKey(user_key, target));
  if (!it->Valid() || !it->key().starts_with(prefix_slice)) {
    RETURN_IF_ERROR(FromRocks(it->status()));
    return int64_t{0};  // no version <= target: already compacted (resumed)
  }
  // The newest version <= target survives unless it is a tombstone below
  // the target (the key is gone at the target).
  std::string first;  // the newest record to delete
  int64_t deleted = 0;
  if (keys::IsTombstoneRecord(
          std::string_view(it->value().data(), it->value().size()))) {
    std::string_view p;
    int64_t main;
    uint32_t sub;
    rocksdb::Slice k = it->key();
    if (!keys::ParseVersionKey(std::string_view(k.data(), k.size()), &p, &main,
                               &sub)) {
      return CorruptionError("mvcc: malformed version key");
    }
    if (main < target) {
      first = k.ToString();
      *freed += static_cast<int64_t>(k.size() + it->value().size());
      ++deleted;
    }
  }
  // Every older version goes. They are only read to count their bytes for
  // msize_in_use: Next() within a key's run is cheap, it is the deletion
  // that must not cost one record each.
  for (it->Next(); it->Valid() && it->key().starts_with(prefix_slice);
       it->Next()) {
    if (first.empty()) first = it->key().ToString();
    *freed += static_cast<int64_t>(it->key().size() + it->value().size());
    ++deleted;
  }
  RETURN_IF_ERROR(FromRocks(it->status()));
  // Everything from `first` to the end of the key's run is deleted, so one
  // range deletion covers it: [first, PrefixSuccessor(prefix)). Writers only
  // add versions above the target, which sort before `first`, so the range
  // cannot hide a concurrent write. A tombstone and the older versions it
  // hides go in one atomic deletion, so no crash can resurrect an old put.
  // A single record gets a point deletion (cheaper for readers than a range
  // tombstone).
  if (deleted == 1) {
    wb->Delete(first);
  } else if (deleted > 1) {
    DeleteRangeOutsideHints(wb, first, keys::PrefixSuccessor(prefix));
  }
  return deleted;
}

Status Store::RunCompaction(int64_t target) {
  const int64_t limit = std::max<int64_t>(1, options_.compaction_batch_records);
  int64_t start;
  {
    MutexLock l(&compact_mu_);
    // The last finished compaction kept its own revision's events; they go
    // now. A cursor past it means a run was interrupted there.
    start = compact_cursor_ > compact_finished_ ? compact_cursor_ + 1
                                                : compact_finished_;
  }
  LOG(INFO) << "mvcc: compacting revisions " << start << ".." << target;
  const std::string event_end_of_target = keys::EventKey(target, 0);
  rocksdb::WriteBatch wb;
  int64_t freed = 0;
  // Keys already compacted to `target` by this pass (flushed, or in `wb`): a
  // key written N times below the target has N events but needs one visit.
  // Without this, a batch boundary forgot them and every event cost a seek.
  // Bounded: past kMaxRememberedBytes it is cleared between batches (only
  // then: the next batch's iterators see the flushed deletions, so a key
  // visited again finds nothing left to delete and is not counted twice).
  constexpr size_t kMaxRememberedBytes = 64 << 20;
  std::unordered_set<std::string> compacted_keys;
  size_t remembered_bytes = 0;
  // One iterator over the event log and one over the version records serve
  // many batches: creating an iterator costs far more than a seek (RocksDB
  // re-fragments the memtable's range deletions for each new one, and this
  // pass adds some with every batch). A reused iterator does not see the
  // batches written since it was created, which is fine: the event iterator
  // only moves forward past what is done, and the versions of a remembered
  // key are not read again. They are renewed every kBatchesPerIterator
  // batches, so they do not pin old memtables and files for a whole long
  // pass, and whenever the remembered keys are forgotten.
  constexpr int kBatchesPerIterator = 100;
  std::unique_ptr<Cursor> events, versions;
  int batches_on_iterators = 0;
  while (true) {
    if (CompactionStopping()) return CancelledError("mvcc: store closing");
    if (remembered_bytes > kMaxRememberedBytes) {
      compacted_keys.clear();
      remembered_bytes = 0;
      events.reset();
    }
    const std::string first_event = keys::EventKey(start, 0);
    // Where this batch's range deletion of the log begins: the same place,
    // but outside the memtable's hint regions (DeleteRangeOutsideHints).
    const std::string events_begin = keys::EventRangeStart(start);
    if (events == nullptr || batches_on_iterators >= kBatchesPerIterator) {
      DbView view(db_.get(), nullptr);
      events = view.NewCursor(first_event, keys::EventKey(target + 1, 0));
      versions = view.NewCursor(
          std::string(1, keys::kVersionTag),
          std::string(1, static_cast<char>(keys::kVersionTag + 1)));
      events->it()->Seek(first_event);
      batches_on_iterators = 0;
    }  // else `events` stands on the event the last batch stopped at
    ++batches_on_iterators;
    std::string events_end = event_end_of_target;  // events deleted: below it
    int64_t deleted = 0;                           // records this batch deletes
    bool more = false;
    rocksdb::Iterator* it = events->it();
    for (; it->Valid(); it->Next()) {
      int64_t main;
      uint32_t sub;
      bool is_delete;
      std::string_view user_key;
      rocksdb::Slice k = it->key(), v = it->value();
      if (!keys::ParseEventKey(std::string_view(k.data(), k.size()), &main,
                               &sub) ||
          !keys::DecodeEventRecord(std::string_view(v.data(), v.size()),
                                   &is_delete, &user_key)) {
        return CorruptionError("mvcc: malformed event record");
      }
      if (deleted >= limit) {
        // Everything below `main` is done; resume at `main` (redoing its
        // first subs after a restart is harmless). `it` stays here.
        start = main;
        more = true;
        if (main < target) events_end = k.ToString();
        break;
      }
      if (compacted_keys.emplace(user_key).second) {
        remembered_bytes += user_key.size() + 64;  // + node and bucket
        ASSIGN_OR_RETURN(int64_t n, CompactKey(versions->it(), user_key, target,
                                               &wb, &freed));
        deleted += n;
      }
      if (main < target) {
        ++deleted;
        freed += static_cast<int64_t>(k.size() + v.size());
      }
    }
    RETURN_IF_ERROR(FromRocks(it->status()));
    // The events walked below the target are contiguous in the log: one
    // range deletion, in the same batch as their keys' versions (an event
    // record still present means its key may still need compacting).
    if (events_end > first_event) {
      DeleteRangeOutsideHints(&wb, events_begin, events_end);
    }
    if (!more) {
      RETURN_IF_ERROR(FlushCompactionBatch(&wb, &freed, target));
      break;
    }
    RETURN_IF_ERROR(FlushCompactionBatch(&wb, &freed, start - 1));
  }
  rocksdb::WriteBatch fin;
  fin.Put(MetaSlice(keys::kMetaCompactFinished), keys::EncodeInt64(target));
  fin.Put(MetaSlice(keys::kMetaCompactCursor), keys::EncodeInt64(target));
  {
    MutexLock l(&write_mu_);
    RETURN_IF_ERROR(WriteLocked(&fin, /*sync=*/false, "compaction"));
  }
  {
    MutexLock l(&compact_mu_);
    compact_cursor_ = target;
  }
  LOG(INFO) << "mvcc: compaction to " << target << " finished";
  return Status::Ok();
}

}  // namespace kplane::mvcc
