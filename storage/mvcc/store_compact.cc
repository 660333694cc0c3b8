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

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <set>

#include "base/logging.h"
#include "storage/mvcc/keys.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"

namespace kplane::mvcc {
namespace {

rocksdb::Slice MetaSlice(std::string_view k) {
  return rocksdb::Slice(k.data(), k.size());
}

}  // namespace

Status Store::Compact(int64_t revision, uint64_t consistent_index) {
  {
    std::lock_guard<std::mutex> l(write_mu_);
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
    rocksdb::WriteOptions wo;
    wo.sync = options_.sync_writes;
    rocksdb::Status st = db_->Write(wo, &wb);
    CHECK(st.ok()) << "mvcc: write failed: " << st.ToString();
    compact_scheduled_ = revision;
    if (consistent_index != 0) consistent_index_ = consistent_index;
  }
  std::lock_guard<std::mutex> l(compact_mu_);
  compact_cv_.notify_all();
  return Status::Ok();
}

Status Store::WaitForCompaction(int64_t revision) {
  std::unique_lock<std::mutex> l(compact_mu_);
  compact_cv_.wait(l,
                   [&] { return compact_finished_ >= revision || stopping_; });
  if (compact_finished_ >= revision) return Status::Ok();
  return UnavailableError("mvcc: store closed before compaction finished");
}

bool Store::CompactionStopping() {
  std::lock_guard<std::mutex> l(compact_mu_);
  return stopping_;
}

void Store::CompactionLoop() {
  std::unique_lock<std::mutex> l(compact_mu_);
  while (true) {
    compact_cv_.wait(l, [&] {
      return stopping_ || compact_scheduled_.load() > compact_finished_;
    });
    if (stopping_) return;
    const int64_t target = compact_scheduled_.load();
    l.unlock();
    const bool done = RunCompaction(target);
    l.lock();
    if (done) {
      compact_finished_ = target;
      compact_cv_.notify_all();
    }
  }
}

void Store::FlushCompactionBatch(rocksdb::WriteBatch* wb, int64_t* freed,
                                 int64_t cursor_rev) {
  if (wb->Count() == 0) return;
  wb->Put(MetaSlice(keys::kMetaCompactCursor), keys::EncodeInt64(cursor_rev));
  {
    // Briefly: the size counter is shared with writers.
    std::lock_guard<std::mutex> l(write_mu_);
    const int64_t new_size = size_in_use_.load() - *freed;
    wb->Put(MetaSlice(keys::kMetaSizeInUse), keys::EncodeInt64(new_size));
    // Not synced: a lost batch is redone from the cursor after a restart.
    rocksdb::Status st = db_->Write(rocksdb::WriteOptions(), wb);
    CHECK(st.ok()) << "mvcc: compaction write failed: " << st.ToString();
    size_in_use_ = new_size;
  }
  {
    std::lock_guard<std::mutex> l(compact_mu_);
    compact_cursor_ = cursor_rev;
  }
  wb->Clear();
  *freed = 0;
}

void Store::CompactKey(const std::string& user_key, int64_t target,
                       rocksdb::WriteBatch* wb, int64_t* freed,
                       int64_t cursor_rev) {
  const size_t limit = static_cast<size_t>(options_.compaction_batch_records);
  std::string lower = keys::VersionPrefix(user_key);
  DbView view(db_.get(), nullptr);
  auto c = view.NewCursor(lower, keys::PrefixSuccessor(lower));
  rocksdb::Iterator* it = c->it();
  it->Seek(keys::VersionSeekKey(user_key, target));
  if (!it->Valid()) {
    CHECK(it->status().ok()) << it->status().ToString();
    return;  // already compacted (a resumed run)
  }
  // The newest version <= target survives unless it is a tombstone below
  // the target. Such a tombstone is deleted last, after every older
  // version: deleting it first would let a crash in between resurrect an
  // older put.
  std::string tombstone;
  if (keys::IsTombstoneRecord(
          std::string_view(it->value().data(), it->value().size()))) {
    std::string_view prefix;
    int64_t main;
    uint32_t sub;
    rocksdb::Slice k = it->key();
    CHECK(keys::ParseVersionKey(std::string_view(k.data(), k.size()), &prefix,
                                &main, &sub));
    if (main < target) tombstone = k.ToString();
  }
  for (it->Next(); it->Valid(); it->Next()) {
    wb->Delete(it->key());
    *freed += static_cast<int64_t>(it->key().size() + it->value().size());
    if (static_cast<size_t>(wb->Count()) >= limit) {
      FlushCompactionBatch(wb, freed, cursor_rev);
    }
  }
  CHECK(it->status().ok()) << it->status().ToString();
  if (!tombstone.empty()) {
    wb->Delete(tombstone);
    *freed += static_cast<int64_t>(tombstone.size() + 1);
  }
}

bool Store::RunCompaction(int64_t target) {
  const size_t limit = static_cast<size_t>(options_.compaction_batch_records);
  int64_t start;
  {
    std::lock_guard<std::mutex> l(compact_mu_);
    // The last finished compaction kept its own revision's events; they go
    // now. A cursor past it means a run was interrupted there.
    start = compact_cursor_ > compact_finished_ ? compact_cursor_ + 1
                                                : compact_finished_;
  }
  LOG(INFO) << "mvcc: compacting revisions " << start << ".." << target;
  rocksdb::WriteBatch wb;
  int64_t freed = 0;
  while (true) {
    if (CompactionStopping()) return false;
    DbView view(db_.get(), nullptr);
    auto c =
        view.NewCursor(keys::EventKey(start, 0), keys::EventKey(target + 1, 0));
    rocksdb::Iterator* it = c->it();
    std::set<std::string> seen;  // keys already compacted in this round
    bool more = false;
    for (it->Seek(c->lower()); it->Valid(); it->Next()) {
      int64_t main;
      uint32_t sub;
      bool is_delete;
      std::string_view user_key;
      rocksdb::Slice k = it->key(), v = it->value();
      CHECK(keys::ParseEventKey(std::string_view(k.data(), k.size()), &main,
                                &sub) &&
            keys::DecodeEventRecord(std::string_view(v.data(), v.size()),
                                    &is_delete, &user_key))
          << "mvcc: malformed event record";
      if (static_cast<size_t>(wb.Count()) >= limit) {
        // Everything below `main` is done; resume at `main`.
        start = main;
        more = true;
        break;
      }
      // Everything below `main` is done whenever CompactKey flushes.
      if (seen.insert(std::string(user_key)).second) {
        CompactKey(std::string(user_key), target, &wb, &freed, main - 1);
      }
      // The event goes after its key's versions: an event record still
      // present means its key may still need compacting.
      if (main < target) {
        wb.Delete(k);
        freed += static_cast<int64_t>(k.size() + v.size());
      }
    }
    CHECK(it->status().ok()) << it->status().ToString();
    if (!more) {
      FlushCompactionBatch(&wb, &freed, target);
      break;
    }
    FlushCompactionBatch(&wb, &freed, start - 1);
  }
  rocksdb::WriteBatch fin;
  fin.Put(MetaSlice(keys::kMetaCompactFinished), keys::EncodeInt64(target));
  fin.Put(MetaSlice(keys::kMetaCompactCursor), keys::EncodeInt64(target));
  rocksdb::Status st = db_->Write(rocksdb::WriteOptions(), &fin);
  CHECK(st.ok()) << "mvcc: compaction write failed: " << st.ToString();
  {
    std::lock_guard<std::mutex> l(compact_mu_);
    compact_cursor_ = target;
  }
  LOG(INFO) << "mvcc: compaction to " << target << " finished";
  return true;
}

}  // namespace kplane::mvcc
