#include "storage/mvcc/store.h"

#include <rocksdb/cache.h>
#include <rocksdb/comparator.h>
#include <rocksdb/db.h>
#include <rocksdb/listener.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/crc32c.h"
#include "base/logging.h"
#include "storage/mvcc/key_index.h"
#include "storage/mvcc/keys.h"
#include "storage/mvcc/lessor.h"
#include "storage/mvcc/reader.h"
#include "storage/mvcc/rocks_env.h"
#include "storage/mvcc/staged_batch.h"
#include "storage/mvcc/store_internal.h"
#include "storage/mvcc/txn_rules.h"
#include "storage/mvcc/watch_hub.h"
#include "storage/mvcc/write_txn.h"

namespace kplane::mvcc {

using internal::FromRocks;
using internal::ScopedSnapshot;

namespace {

// RocksDB would retry a write it failed for lack of space on its own, in
// the background. The store recovers only when told to (DisarmNoSpaceAlarm),
// so that its sticky error and RocksDB's state change together.
class NoAutoRecovery : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason,
                            rocksdb::Status bg_error,
                            bool* auto_recovery) override {
    bg_error.PermitUncheckedError();
    *auto_recovery = false;
  }
};

// The memtable's insert hints (InMemtableHintDomain). Each put writes a `k`
// record at a key anywhere in the key space and an `r` record after the
// last one, and each write group rewrites the same few `m` records. Without
// hints every insert searches the skiplist from its head, since the one
// position RocksDB remembers (the last insert) alternates between those
// regions; with them an `r` or `m` insert starts next to the previous one.
// `k`, `l` and `a` records insert as before.
class MemtableHint : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "kplane.MemtableHint"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    if (key[0] == keys::kEventTag) return rocksdb::Slice(key.data(), 1);
    return key;  // a meta key: its own region
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return internal::InMemtableHintDomain(key.ToStringView());
  }
};

}  // namespace

namespace internal {

bool InMemtableHintDomain(std::string_view key) {
  if (key.empty()) return false;
  return key[0] == keys::kMetaTag ||
         (key[0] == keys::kEventTag && key.size() == keys::kEventKeySize);
}

void DeleteRangeOutsideHints(rocksdb::WriteBatch* wb, std::string_view begin,
                             std::string_view end) {
  CHECK(!InMemtableHintDomain(begin))
      << "mvcc: a range deletion may not start in a memtable hint region";
  CHECK(wb->DeleteRange(rocksdb::Slice(begin.data(), begin.size()),
                        rocksdb::Slice(end.data(), end.size()))
            .ok());
}

}  // namespace internal

// The lessor's view of the store. Called from Lessor::Grant/Revoke, which
// the store only calls while holding its write lock.
class Store::Backend : public LeaseBackend {
 public:
  explicit Backend(Store* s) : s_(s) {}
  // The lessor calls these from Grant/Revoke, inside the store's
  // LeaseGrant/LeaseRevoke, which hold write_mu_; the analysis cannot follow
  // the call through the lessor.
  Status SaveLease(int64_t id, int64_t ttl, uint64_t ci) override {
    s_->write_mu_.AssertHeld();
    return s_->SaveLeaseLocked(id, ttl, ci);
  }
  Status DeleteLeaseAndKeys(int64_t id, const std::vector<std::string>& keys,
                            uint64_t ci) override {
    s_->write_mu_.AssertHeld();
    return s_->DeleteLeaseAndKeysLocked(id, keys, ci);
  }

 private:
  Store* s_;
};

// The watch hub's view of the store.
class Store::Events : public EventSource {
 public:
  explicit Events(Store* s) : s_(s) {}
  Status ReadEvents(int64_t from, int64_t to, bool with_prev, EventList* out,
                    int64_t* compacted) override {
    return s_->ReadEvents(from, to, with_prev, out, compacted);
  }
  int64_t CompactRevision() const override {
    return s_->compact_scheduled_.load();
  }
  int64_t CurrentRevision() const override { return s_->current_rev_.load(); }

 private:
  Store* s_;
};

// What an open write group staged. `batch` holds every staged change;
// `dirty` says whether anything (a change or a consistent index) is staged,
// and only then are `rev` (the last staged revision), `size_delta` and
// `consistent_index` meaningful; `revisions` is what to publish, in order,
// once the batch is written. Example: the group stages a put at revision 8
// (index 41), a CAS txn at 9 (index 42) and a delete of nothing (index 43):
// batch = both changes, rev = 9, consistent_index = 43, revisions = [8, 9];
// the flush adds the meta records for revision 9 and index 43, writes once,
// then sets the current revision to 8 and notifies, then to 9 and notifies.
struct Store::WriteGroup {
  explicit WriteGroup(bool always_indexed) : batch(always_indexed) {}
  bool open = false;
  // Indexed for reads only once a write reads what the group staged.
  StagedBatch batch;
  bool dirty = false;
  int64_t rev = 0;
  int64_t size_delta = 0;
  int64_t live_key_delta = 0;
  uint64_t consistent_index = 0;
  struct Revision {
    int64_t rev;
    std::shared_ptr<EventList> events;  // null when nobody watched
    bool events_have_prev;
    std::vector<WriteTxn::LeaseChange> lease_changes;
  };
  std::vector<Revision> revisions;
  // The keys the staged transactions wrote versions of: the key index has
  // them already and must forget them if the group is dropped unwritten.
  std::vector<std::string> written_keys;

  void MarkDirty(int64_t current_rev) {
    if (dirty) return;
    dirty = true;
    rev = current_rev;
  }
};

Store::Store(const Options& options)
    : options_(options),
      clock_(options.clock != nullptr ? options.clock : Clock::Real()),
      fs_(options.file_system != nullptr ? options.file_system
                                         : FileSystem::Default()),
      group_(std::make_unique<WriteGroup>(options.index_every_staged_write)) {}

Store::~Store() { Close(); }

StatusOr<std::unique_ptr<Store>> Store::Open(const Options& options) {
  if (options.dir.empty()) return InvalidArgumentError("mvcc: no directory");
  std::unique_ptr<Store> s(new Store(options));
  RETURN_IF_ERROR(s->OpenDb());
  RETURN_IF_ERROR(s->LoadMeta());
  if (options.key_index) RETURN_IF_ERROR(s->BuildKeyIndex());
  if (options.metrics != nullptr) {
    // Without the key index the live keys are not known at open: the
    // gauge then counts from 0 (the index is off only in benchmarks).
    if (s->index_ != nullptr) {
      const std::string all(1, '\0');
      s->live_keys_ = s->index_->Count(all, all, s->current_rev_.load());
    }
    s->measured_size_for_gauge_ = s->DbSize();
    s->PublishGauges();
  }
  s->lease_backend_ = std::make_unique<Backend>(s.get());
  s->lessor_ = std::make_unique<Lessor>(s->clock_, s->lease_backend_.get());
  RETURN_IF_ERROR(s->LoadLeases());
  s->event_source_ = std::make_unique<Events>(s.get());
  WatchHub::Options hub_options;
  hub_options.queue_capacity = options.watch_queue_capacity;
  hub_options.progress_interval = options.watch_progress_interval;
  s->hub_ = std::make_shared<WatchHub>(s->clock_, s->event_source_.get(),
                                       s->current_rev_.load(), hub_options);
  s->hub_->Start();
  Store* raw = s.get();
  s->compact_thread_ = std::thread([raw] { raw->CompactionLoop(); });
  s->auto_compactor_ = std::make_unique<AutoCompactor>(
      s->clock_, options.auto_compaction,
      [raw] { return raw->CurrentRevision(); },
      [raw](int64_t rev) { return raw->Compact(rev); });
  s->auto_compactor_->Start();
  return s;
}

StatusOr<bool> Store::HasWalToReplay() const {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(options_.dir));
  for (const std::string& name : names) {
    if (!name.ends_with(".log")) continue;  // RocksDB's WAL: <number>.log
    ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(options_.dir + "/" + name));
    if (size > 0) return true;
  }
  return false;
}

Status Store::OpenDb() {
  // Created here rather than by RocksDB, which does not sync the directory
  // above a new one: a power cut could take the whole store with it.
  RETURN_IF_ERROR(CreateDirAll(fs_, options_.dir, kPrivateDirMode));
  env_ = NewRocksEnv(fs_);
  rocksdb::Options o;
  o.env = env_.get();
  o.listeners.push_back(std::make_shared<NoAutoRecovery>());
  o.create_if_missing = true;
  // A disk that cannot persist the options file fails the open (RocksDB
  // 8's default) rather than leaving a store whose open half failed.
  o.fail_if_options_file_error = true;
  o.max_background_jobs = 2;
  o.level_compaction_dynamic_level_bytes = true;
  o.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  o.keep_log_file_num = 2;
  // Flush on a clean close, so a restart does not replay the WAL.
  o.avoid_flush_during_shutdown = !options_.flush_on_close;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(options_.block_cache_bytes);
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  rocksdb::DB* db = nullptr;
  rocksdb::Status st;
  // A WAL to replay (a crash, or a close without a flush) may come from a
  // binary that began compaction's range deletions inside the hinted
  // regions (before DeleteRangeOutsideHints), and RocksDB replays it
  // through the same memtable inserts as live writes. So it is replayed by
  // an open without hints, which flushes what it replays
  // (avoid_flush_during_recovery is false); the open with hints below then
  // finds nothing to replay.
  ASSIGN_OR_RETURN(bool replay, HasWalToReplay());
  if (replay) {
    st = rocksdb::DB::Open(o, options_.dir, &db);
    if (st.ok()) {
      st = db->Close();
      delete db;
      db = nullptr;
    }
    if (!st.ok()) {
      return FromRocks(st).Annotate("mvcc: replay the WAL of " + options_.dir);
    }
  }
  o.memtable_insert_with_hint_prefix_extractor =
      std::make_shared<MemtableHint>();
  st = rocksdb::DB::Open(o, options_.dir, &db);
  if (!st.ok()) return FromRocks(st).Annotate("mvcc: open " + options_.dir);
  db_.reset(db);
  return Status::Ok();
}

Status Store::LoadMeta() {
  auto get = [&](std::string_view key, int64_t* out) -> Status {
    std::string v;
    rocksdb::Status st = db_->Get(rocksdb::ReadOptions(),
                                  rocksdb::Slice(key.data(), key.size()), &v);
    if (st.IsNotFound()) {
      *out = 0;
      return Status::Ok();
    }
    RETURN_IF_ERROR(FromRocks(st));
    if (!keys::DecodeInt64(v, out)) {
      return CorruptionError("mvcc: bad meta value for " + std::string(key));
    }
    return Status::Ok();
  };
  int64_t format = 0;
  RETURN_IF_ERROR(get(keys::kMetaFormatVersion, &format));
  if (format == 0) {
    // A new store: stamp the format before anything else is written, and
    // start at revision 1 as etcd does (its first write is revision 2, an
    // empty store's header carries revision 1). A store stamped before
    // kept its revisions: one that never wrote stays at 0 (FORMAT.md). No
    // fsync: the WAL keeps order, so losing the stamp means losing every
    // later write too, and the store is simply new again.
    rocksdb::WriteBatch b;
    const std::string format_value = keys::EncodeInt64(keys::kFormatVersion);
    const std::string rev_value = keys::EncodeInt64(kInitialRevision);
    CHECK(b.Put(rocksdb::Slice(keys::kMetaFormatVersion.data(),
                               keys::kMetaFormatVersion.size()),
                format_value)
              .ok());
    CHECK(b.Put(rocksdb::Slice(keys::kMetaCurrentRevision.data(),
                               keys::kMetaCurrentRevision.size()),
                rev_value)
              .ok());
    RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &b)));
  } else if (format != keys::kFormatVersion) {
    return CorruptionError("mvcc: unsupported format version " +
                           std::to_string(format));
  }
  int64_t v;
  RETURN_IF_ERROR(get(keys::kMetaCurrentRevision, &v));
  current_rev_ = v;
  RETURN_IF_ERROR(get(keys::kMetaConsistentIndex, &v));
  consistent_index_ = static_cast<uint64_t>(v);
  RETURN_IF_ERROR(get(keys::kMetaCompactScheduled, &v));
  compact_scheduled_ = v;
  int64_t compact_finished, compact_cursor, lease_seq;
  RETURN_IF_ERROR(get(keys::kMetaCompactFinished, &compact_finished));
  RETURN_IF_ERROR(get(keys::kMetaCompactCursor, &compact_cursor));
  RETURN_IF_ERROR(get(keys::kMetaSizeInUse, &v));
  size_in_use_ = v;
  RETURN_IF_ERROR(get(keys::kMetaAlarmNoSpace, &v));
  nospace_ = v != 0;
  RETURN_IF_ERROR(get(keys::kMetaLeaseSeq, &lease_seq));
  // No other thread exists yet; the locks are for the analysis.
  {
    MutexLock l(&compact_mu_);
    compact_finished_ = compact_finished;
    compact_cursor_ = compact_cursor;
  }
  {
    MutexLock l(&write_mu_);
    lease_seq_ = lease_seq;
  }
  if (compact_scheduled_ > compact_finished) {
    LOG(INFO) << "mvcc: resuming compaction " << compact_finished << " -> "
              << compact_scheduled_.load();
  }
  return Status::Ok();
}

Status Store::LoadLeases() {
  DbView view(db_.get(), nullptr);
  {
    auto c = view.NewCursor(std::string(1, keys::kLeaseTag),
                            std::string(1, keys::kLeaseTag + 1));
    for (c->it()->SeekToFirst(); c->it()->Valid(); c->it()->Next()) {
      int64_t id, ttl;
      rocksdb::Slice k = c->it()->key(), v = c->it()->value();
      if (!keys::ParseLeaseKey(std::string_view(k.data(), k.size()), &id) ||
          !keys::DecodeInt64(std::string_view(v.data(), v.size()), &ttl)) {
        return CorruptionError("mvcc: malformed lease record");
      }
      lessor_->Restore(id, ttl);
    }
    RETURN_IF_ERROR(FromRocks(c->it()->status()));
  }
  auto c = view.NewCursor(std::string(1, keys::kAttachTag),
                          std::string(1, keys::kAttachTag + 1));
  std::string key;
  for (c->it()->SeekToFirst(); c->it()->Valid(); c->it()->Next()) {
    int64_t id;
    rocksdb::Slice k = c->it()->key();
    if (!keys::ParseAttachKey(std::string_view(k.data(), k.size()), &id,
                              &key) ||
        !lessor_->Exists(id)) {
      return CorruptionError("mvcc: malformed or dangling lease attachment");
    }
    lessor_->Attach(id, key);
  }
  return FromRocks(c->it()->status());
}

Status Store::BuildKeyIndex() {
  std::map<std::string, std::vector<KeyIndex::Version>, std::less<>> keys;
  DbView view(db_.get(), nullptr);
  auto c = view.NewCursor(std::string(1, keys::kVersionTag),
                          std::string(1, keys::kVersionTag + 1));
  std::string last_prefix;
  std::vector<KeyIndex::Version>* versions = nullptr;
  mvccpb::KeyValue kv;
  for (c->it()->SeekToFirst(); c->it()->Valid(); c->it()->Next()) {
    rocksdb::Slice k = c->it()->key(), v = c->it()->value();
    std::string_view prefix;
    int64_t main;
    uint32_t sub;
    if (!keys::ParseVersionKey(std::string_view(k.data(), k.size()), &prefix,
                               &main, &sub)) {
      return CorruptionError("mvcc: malformed version key");
    }
    if (versions == nullptr || prefix != last_prefix) {
      if (versions != nullptr) std::reverse(versions->begin(), versions->end());
      std::string user_key;
      if (!keys::UserKeyOfPrefix(prefix, &user_key)) {
        return CorruptionError("mvcc: malformed version key");
      }
      last_prefix.assign(prefix);
      // Keys come in order: always appended at the end.
      versions = &keys.emplace_hint(keys.end(), std::move(user_key),
                                    std::vector<KeyIndex::Version>())
                      ->second;
    }
    const std::string_view record(v.data(), v.size());
    KeyIndex::Version& out = versions->emplace_back();
    out.main = main;
    out.sub = sub;
    if (keys::IsTombstoneRecord(record)) {
      out.tombstone = true;
      continue;
    }
    if (!keys::DecodePutRecord(record, &kv, /*with_value=*/false)) {
      return CorruptionError("mvcc: malformed version record");
    }
    out.create_revision = kv.create_revision();
    out.version = kv.version();
    out.lease = kv.lease();
  }
  RETURN_IF_ERROR(FromRocks(c->it()->status()));
  if (versions != nullptr) std::reverse(versions->begin(), versions->end());
  index_ = std::make_unique<KeyIndex>();
  index_->Reset(std::move(keys));
  // A compaction interrupted by a crash left versions it had scheduled
  // for deletion; the index drops them now.
  index_->Compact(compact_scheduled_.load());
  return Status::Ok();
}

void Store::Close() {
  std::call_once(close_once_, [this] {
    if (auto_compactor_) auto_compactor_->Stop();
    {
      MutexLock l(&compact_mu_);
      stopping_ = true;
      compact_cv_.notify_all();
    }
    if (compact_thread_.joinable()) compact_thread_.join();
    {
      MutexLock l(&write_mu_);
      Status s = FlushGroupLocked();
      if (!s.ok()) LOG(WARNING) << "mvcc: close: " << s;
    }
    if (hub_) hub_->Stop();
    if (db_) {
      rocksdb::Status st;
      if (options_.flush_on_close) {
        st = db_->Flush(rocksdb::FlushOptions());
        if (!st.ok()) LOG(WARNING) << "mvcc: flush on close: " << st.ToString();
      }
      st = db_->Close();
      if (!st.ok()) LOG(WARNING) << "mvcc: close: " << st.ToString();
      db_.reset();
    }
  });
}

// ---- write plumbing ---------------------------------------------------------

void Store::BeginWriteGroup() {
  MutexLock l(&write_mu_);
  CHECK(!group_->open) << "mvcc: write groups do not nest";
  group_->open = true;
}

void Store::EndWriteGroup() {
  MutexLock l(&write_mu_);
  CHECK(group_->open) << "mvcc: no write group is open";
  // A failure is the sticky error, which the caller reads (WriteStatus).
  (void)FlushGroupLocked();
  group_->open = false;
}

void Store::FlushWriteGroup() {
  MutexLock l(&write_mu_);
  (void)FlushGroupLocked();
}

Status Store::WriteStatus() const {
  MutexLock l(&error_mu_);
  return write_error_;
}

Status Store::WriteFailed(const rocksdb::Status& st, std::string_view what) {
  Status s;
  if (st.IsNoSpace()) {
    // etcd's NOSPACE text, which clients recognize.
    s = Status(StatusCode::kNoSpace,
               std::string(internal::NoSpaceError().message()) +
                   " (disk full: " + st.ToString() + ")");
    disk_full_ = true;
  } else {
    Status r = FromRocks(st);
    s = Status(r.code(), "mvcc: " + std::string(what) +
                             " failed: " + r.message() +
                             "; writes are refused until the store reopens");
  }
  MutexLock l(&error_mu_);
  if (write_error_.ok()) {
    LOG(ERROR) << s;
    write_error_ = s;
  }
  return write_error_;
}

Status Store::WriteLocked(rocksdb::WriteBatch* wb, bool sync,
                          std::string_view what) {
  RETURN_IF_ERROR(WriteStatus());
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  rocksdb::Status st = db_->Write(wo, wb);
  if (!st.ok()) return WriteFailed(st, what);
  return Status::Ok();
}

StagedBatch* Store::StagedBatchLocked() { return &group_->batch; }

int64_t Store::WriteRevLocked() const {
  return group_->dirty ? group_->rev : current_rev_.load();
}

void Store::DropGroupLocked() {
  WriteGroup& g = *group_;
  g.batch.Clear();
  g.revisions.clear();
  g.written_keys.clear();
  g.dirty = false;
  g.size_delta = 0;
  g.live_key_delta = 0;
  g.consistent_index = 0;
}

Status Store::FlushGroupLocked() {
  if (!group_->dirty) return Status::Ok();
  WriteGroup& g = *group_;
  const int64_t new_size = size_in_use_.load() + g.size_delta;
  StagedBatch& b = g.batch;
  if (g.rev != current_rev_.load()) {
    b.Put(keys::kMetaCurrentRevision, keys::EncodeInt64(g.rev));
  }
  if (g.consistent_index != 0) {
    b.Put(keys::kMetaConsistentIndex,
          keys::EncodeInt64(static_cast<int64_t>(g.consistent_index)));
  }
  if (g.size_delta != 0) {
    b.Put(keys::kMetaSizeInUse, keys::EncodeInt64(new_size));
  }
  rocksdb::WriteBatch* wb = b.GetWriteBatch();
  if (wb->Count() > 0) {
    // Nothing of the group is published unless it was written: memory and
    // disk agree on everything readers, watchers and the lessor can see.
    Status s;
    {
      // etcd's backend commit: the one write that makes the group durable
      // (as far as sync_writes asks).
      std::optional<metrics::ScopedTimer> timer;
      if (options_.metrics != nullptr) {
        timer.emplace(options_.metrics->backend_commit_seconds);
      }
      s = WriteLocked(wb, options_.sync_writes, "write");
    }
    if (!s.ok()) {
      if (index_ != nullptr) {
        index_->RemoveAbove(g.written_keys, current_rev_.load());
      }
      DropGroupLocked();
      return s;
    }
    written_since_measure_ += static_cast<int64_t>(wb->GetDataSize());
    writes_since_measure_ +=
        std::max<int64_t>(1, static_cast<int64_t>(g.revisions.size()));
  }
  size_in_use_ = new_size;
  live_keys_.fetch_add(g.live_key_delta, std::memory_order_relaxed);
  if (g.consistent_index != 0) consistent_index_ = g.consistent_index;
  for (WriteGroup::Revision& r : g.revisions) {
    current_rev_ = r.rev;
    for (const WriteTxn::LeaseChange& c : r.lease_changes) {
      if (c.attach) {
        lessor_->Attach(c.lease, c.key);
      } else {
        lessor_->Detach(c.lease, c.key);
      }
    }
    hub_->Notify(r.rev, std::move(r.events), r.events_have_prev);
  }
  DropGroupLocked();
  PublishGauges();
  return Status::Ok();
}

void Store::PublishGauges() const {
  const StoreMetrics* m = options_.metrics.get();
  if (m == nullptr) return;
  m->keys_total->Set(static_cast<double>(live_keys_.load()));
  m->db_size_in_use->Set(static_cast<double>(size_in_use_.load()));
  if (int64_t size = measured_size_for_gauge_.load(); size >= 0) {
    m->db_total_size->Set(static_cast<double>(size));
    m->db_total_size_debugging->Set(static_cast<double>(size));
  }
  m->current_revision->Set(static_cast<double>(current_rev_.load()));
  m->compact_revision->Set(static_cast<double>(compact_scheduled_.load()));
}

std::unique_ptr<WriteTxn> Store::NewWriteTxnLocked() {
  return std::make_unique<WriteTxn>(
      db_.get(), WriteRevLocked(), current_rev_.load(),
      hub_->HasSyncedWatchers(), hub_->WantsPrevKv(), &group_->batch,
      index_.get());
}

Status Store::CommitLocked(WriteTxn* txn, uint64_t consistent_index,
                           bool write_now) {
  WriteGroup& g = *group_;
  g.MarkDirty(current_rev_.load());
  txn->MarkStaged();
  g.size_delta += txn->size_delta();
  g.live_key_delta += txn->live_key_delta();
  g.written_keys.insert(g.written_keys.end(), txn->written_keys().begin(),
                        txn->written_keys().end());
  if (consistent_index != 0) g.consistent_index = consistent_index;
  if (txn->changed()) {
    g.rev = txn->rev();
    g.revisions.push_back({txn->rev(), txn->TakeEvents(),
                           txn->events_have_prev(), txn->lease_changes()});
  }
  if (!g.open || write_now) return FlushGroupLocked();
  return Status::Ok();
}

Status Store::ResetConsistentIndex() {
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(FlushGroupLocked());
  rocksdb::WriteBatch wb;
  wb.Delete(rocksdb::Slice(keys::kMetaConsistentIndex.data(),
                           keys::kMetaConsistentIndex.size()));
  RETURN_IF_ERROR(WriteLocked(&wb, /*sync=*/true, "reset consistent index"));
  consistent_index_ = 0;
  return Status::Ok();
}

Status Store::WriteMetaLocked(uint64_t consistent_index) {
  if (consistent_index == 0) return Status::Ok();
  RETURN_IF_ERROR(WriteStatus());
  group_->MarkDirty(current_rev_.load());
  group_->consistent_index = consistent_index;
  if (!group_->open) return FlushGroupLocked();
  return Status::Ok();
}

Status Store::CheckRequestSize(size_t request_bytes) const {
  if (static_cast<int64_t>(request_bytes) > options_.max_request_bytes) {
    return internal::TooLargeError();
  }
  return Status::Ok();
}

Status Store::CheckQuotaLocked(int64_t cost) {
  const bool refuse = options_.refuse_writes_over_quota;
  if (refuse && nospace_.load()) return internal::NoSpaceError();
  // Measuring lists the directory, so do it every 1024 writes or 1 MiB and
  // add what was written since.
  if (measured_db_size_ < 0 || writes_since_measure_ >= 1024 ||
      written_since_measure_ >= (1 << 20)) {
    measured_db_size_ = DbSize();
    measured_size_for_gauge_ = measured_db_size_;
    writes_since_measure_ = 0;
    written_since_measure_ = 0;
  }
  const int64_t staged = static_cast<int64_t>(group_->batch.DataSize());
  const bool over = measured_db_size_ + written_since_measure_ + staged + cost >
                    options_.quota_bytes;
  if (!refuse) {
    over_quota_ = over;
    return Status::Ok();
  }
  if (!over) return Status::Ok();
  // The alarm survives a crash that the staged entries before this one
  // would not: write them first, or their replay would meet the alarm.
  RETURN_IF_ERROR(FlushGroupLocked());
  rocksdb::WriteBatch wb;
  wb.Put(rocksdb::Slice(keys::kMetaAlarmNoSpace.data(),
                        keys::kMetaAlarmNoSpace.size()),
         keys::EncodeInt64(1));
  RETURN_IF_ERROR(WriteLocked(&wb, options_.sync_writes, "NOSPACE alarm"));
  nospace_ = true;
  LOG(WARNING) << "mvcc: database size " << measured_db_size_ << " over quota "
               << options_.quota_bytes << ": NOSPACE alarm raised";
  return internal::NoSpaceError();
}

Status Store::ResumeAfterFullDisk() {
  MutexLock l(&write_mu_);
  return ResumeLocked();
}

Status Store::ResumeLocked() {
  if (!WriteStatus().Is(StatusCode::kNoSpace)) return Status::Ok();
  // The disk was full. RocksDB writes its memtables out and starts a new
  // log (the one the failed write was cut off in is left behind).
  rocksdb::Status st = db_->Resume();
  if (!st.ok()) {
    Status r = FromRocks(st);
    return Status(r.code(),
                  "mvcc: cannot resume after a full disk: " + r.message());
  }
  {
    MutexLock el(&error_mu_);
    write_error_ = Status::Ok();
  }
  disk_full_ = false;
  LOG(INFO) << "mvcc: resumed after a full disk";
  MutexLock cl(&compact_mu_);
  compaction_error_ = Status::Ok();
  compact_cv_.notify_all();
  return Status::Ok();
}

Status Store::DisarmNoSpaceAlarm(uint64_t consistent_index) {
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(ResumeLocked());
  RETURN_IF_ERROR(FlushGroupLocked());
  rocksdb::WriteBatch wb;
  wb.Put(rocksdb::Slice(keys::kMetaAlarmNoSpace.data(),
                        keys::kMetaAlarmNoSpace.size()),
         keys::EncodeInt64(0));
  if (consistent_index != 0) {
    wb.Put(rocksdb::Slice(keys::kMetaConsistentIndex.data(),
                          keys::kMetaConsistentIndex.size()),
           keys::EncodeInt64(static_cast<int64_t>(consistent_index)));
  }
  RETURN_IF_ERROR(WriteLocked(&wb, options_.sync_writes, "disarm"));
  nospace_ = false;
  over_quota_ = false;
  measured_db_size_ = -1;
  if (consistent_index != 0) consistent_index_ = consistent_index;
  return Status::Ok();
}

// ---- key-value
// ----------------------------------------------------------------

StatusOr<etcdserverpb::RangeResponse> Store::Range(
    const etcdserverpb::RangeRequest& req) {
  etcdserverpb::RangeResponse resp;
  RETURN_IF_ERROR(Range(req, &resp));
  return resp;
}

Status Store::Range(const etcdserverpb::RangeRequest& req,
                    etcdserverpb::RangeResponse* out) {
  RETURN_IF_ERROR(CheckRangeRequest(req));
  const int64_t current = current_rev_.load();
  ScopedSnapshot snap(db_.get());
  // Read after the snapshot: a compaction scheduled later cannot have
  // deleted anything this snapshot sees.
  const int64_t compacted = compact_scheduled_.load();
  DbView view(db_.get(), snap.get());
  if (index_ == nullptr) {
    OpTally{.ranges = 1}.AddTo(options_.metrics.get());
    return ExecuteRange(&view, req, current, compacted, out);
  }
  // The index holds every revision up to `current` (a write stages its
  // versions there before it is published). Checked under the index's
  // lock: a Compact() scheduled since then compacts the index only after
  // it has raised compact_scheduled_, so a count that passes the check
  // reads versions no compaction has dropped; one that fails scans.
  auto count = [&](int64_t rev) {
    return index_->CountIf(req.key(), req.range_end(), rev,
                           [&] { return rev >= compact_scheduled_.load(); });
  };
  OpTally{.ranges = 1}.AddTo(options_.metrics.get());
  return ExecuteRange(&view, req, current, compacted, out, count);
}

StatusOr<std::optional<mvccpb::KeyValue>> Store::LatestForWrite(
    ReadView* view, const std::string& key, bool want_value) {
  if (index_ != nullptr && !want_value) return index_->LatestKeyValue(key);
  latest_reads_.fetch_add(1, std::memory_order_relaxed);
  return GetLatest(view, key);
}

StatusOr<std::optional<mvccpb::KeyValue>> Store::PutLocked(
    WriteTxn* txn, const etcdserverpb::PutRequest& req) {
  std::string value;
  int64_t lease = req.lease();
  const std::string* value_ptr = &req.value();
  if (req.ignore_value() || req.ignore_lease()) {
    ASSIGN_OR_RETURN(
        std::optional<mvccpb::KeyValue> prev,
        LatestForWrite(txn->view(), req.key(), req.ignore_value()));
    if (!prev) return internal::KeyNotFoundError();
    if (req.ignore_value()) {
      value = prev->value();
      value_ptr = &value;
    }
    if (req.ignore_lease()) lease = prev->lease();
  }
  return txn->Put(req.key(), *value_ptr, lease, req.prev_kv());
}

StatusOr<etcdserverpb::PutResponse> Store::Put(
    const etcdserverpb::PutRequest& req, uint64_t consistent_index) {
  RETURN_IF_ERROR(CheckPutRequest(req));
  const size_t bytes = req.ByteSizeLong();
  RETURN_IF_ERROR(CheckRequestSize(bytes));
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(WriteStatus());
  RETURN_IF_ERROR(CheckQuotaLocked(static_cast<int64_t>(bytes)));
  if (req.lease() != 0 && !lessor_->Exists(req.lease())) {
    return internal::LeaseNotFoundError();
  }
  auto txn = NewWriteTxnLocked();
  ASSIGN_OR_RETURN(std::optional<mvccpb::KeyValue> prev,
                   PutLocked(txn.get(), req));
  RETURN_IF_ERROR(CommitLocked(txn.get(), consistent_index));
  internal::PutTally(req).AddTo(options_.metrics.get());
  etcdserverpb::PutResponse resp;
  resp.mutable_header()->set_revision(txn->rev());
  if (req.prev_kv() && prev) *resp.mutable_prev_kv() = std::move(*prev);
  return resp;
}

StatusOr<etcdserverpb::DeleteRangeResponse> Store::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& req, uint64_t consistent_index) {
  RETURN_IF_ERROR(CheckDeleteRequest(req));
  RETURN_IF_ERROR(CheckRequestSize(req.ByteSizeLong()));
  MutexLock l(&write_mu_);
  RETURN_IF_ERROR(WriteStatus());
  auto txn = NewWriteTxnLocked();
  std::vector<mvccpb::KeyValue> prev;
  ASSIGN_OR_RETURN(int64_t n,
                   txn->DeleteRange(req.key(), req.range_end(),
                                    req.prev_kv() ? &prev : nullptr));
  RETURN_IF_ERROR(CommitLocked(txn.get(), consistent_index));
  // etcd reads the range first for prev_kv.
  OpTally{.ranges = req.prev_kv() ? 1u : 0u, .deletes = 1}.AddTo(
      options_.metrics.get());
  etcdserverpb::DeleteRangeResponse resp;
  resp.mutable_header()->set_revision(txn->rev());
  resp.set_deleted(n);
  for (auto& kv : prev) *resp.add_prev_kvs() = std::move(kv);
  return resp;
}

// ---- maintenance ------------------------------------------------------------

StatusOr<etcdserverpb::HashKVResponse> Store::HashKV(int64_t revision) {
  const int64_t current = current_rev_.load();
  if (revision > current) return FutureRevisionError(current);
  if (revision <= 0) revision = current;
  ScopedSnapshot snap(db_.get());
  const int64_t compacted = compact_scheduled_.load();
  if (revision < compacted) return CompactedError(compacted);
  DbView view(db_.get(), snap.get());
  auto cursor = view.NewCursor(keys::VersionPrefix(""),
                               std::string(1, keys::kVersionTag + 1));
  // Starts with the bucket name, as etcd's HashByRev does: an empty store
  // hashes to crc32c("key") (= etcd's), never to 0, which the JSON gateway
  // would leave out of the answer.
  static constexpr std::string_view kKeyBucket = "key";
  uint32_t hash = crc32c::Value(kKeyBucket);
  Status decode_status;
  std::string buf;
  RETURN_IF_ERROR(ScanLive(
      cursor.get(), revision,
      [&](std::string_view prefix, int64_t main, std::string_view record) {
        mvccpb::KeyValue kv;
        decode_status = DecodeKeyValue(prefix, main, record, true, &kv);
        if (!decode_status.ok()) return false;
        buf.clear();
        kv.AppendToString(&buf);
        hash = crc32c::Extend(hash, buf.data(), buf.size());
        return true;
      }));
  RETURN_IF_ERROR(decode_status);
  etcdserverpb::HashKVResponse resp;
  resp.mutable_header()->set_revision(current);
  resp.set_hash(hash);
  resp.set_compact_revision(compacted);
  return resp;
}

Status Store::Sync() {
  {
    MutexLock l(&write_mu_);
    RETURN_IF_ERROR(FlushGroupLocked());
  }
  RETURN_IF_ERROR(WriteStatus());
  rocksdb::Status st = db_->FlushWAL(/*sync=*/true);
  // After a failed sync nothing is known about what reached the disk.
  if (!st.ok()) return WriteFailed(st, "sync");
  return Status::Ok();
}

Status Store::Defrag() {
  rocksdb::FlushOptions fo;
  RETURN_IF_ERROR(FromRocks(db_->Flush(fo)));
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction =
      rocksdb::BottommostLevelCompaction::kForceOptimized;
  return FromRocks(db_->CompactRange(co, nullptr, nullptr));
}

int64_t Store::DbSize() const {
  namespace fs = std::filesystem;
  std::error_code ec;
  int64_t total = 0;
  for (const auto& entry : fs::directory_iterator(options_.dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool counted = name.ends_with(".sst") || name.ends_with(".log") ||
                         name.starts_with("MANIFEST-");
    if (!counted) continue;
    std::error_code size_ec;
    auto size = entry.file_size(size_ec);  // files may vanish meanwhile
    if (!size_ec) total += static_cast<int64_t>(size);
  }
  return total;
}

Status Store::Checkpoint(const std::string& dir) {
  // The copy starts with a flush, which RocksDB must not attempt while a
  // failed write is pending: on a full disk it leaves its log writer with
  // an error no later Resume() clears.
  RETURN_IF_ERROR(WriteStatus());
  rocksdb::Checkpoint* raw = nullptr;
  RETURN_IF_ERROR(FromRocks(rocksdb::Checkpoint::Create(db_.get(), &raw)));
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  // log_size_for_flush 0: flush first, so the copy needs no WAL replay.
  return FromRocks(cp->CreateCheckpoint(dir, /*log_size_for_flush=*/0));
}

int64_t Store::FinishedCompactRevision() const {
  MutexLock l(&compact_mu_);
  return compact_finished_;
}

std::vector<std::pair<int64_t, bool>> Store::RawVersions(
    const std::string& key) {
  std::vector<std::pair<int64_t, bool>> out;
  std::string lower = keys::VersionPrefix(key);
  DbView view(db_.get(), nullptr);
  auto c = view.NewCursor(lower, keys::PrefixSuccessor(lower));
  for (c->it()->Seek(lower); c->it()->Valid(); c->it()->Next()) {
    std::string_view prefix;
    int64_t main;
    uint32_t sub;
    rocksdb::Slice k = c->it()->key(), v = c->it()->value();
    CHECK(keys::ParseVersionKey(std::string_view(k.data(), k.size()), &prefix,
                                &main, &sub));
    out.emplace_back(
        main, keys::IsTombstoneRecord(std::string_view(v.data(), v.size())));
  }
  return out;
}

int64_t Store::RawEventCount(int64_t up_to_revision) {
  DbView view(db_.get(), nullptr);
  auto c = view.NewCursor(keys::EventKey(0, 0),
                          keys::EventKey(up_to_revision + 1, 0));
  int64_t n = 0;
  for (c->it()->SeekToFirst(); c->it()->Valid(); c->it()->Next()) ++n;
  return n;
}

std::pair<size_t, size_t> Store::KeyIndexSize() const {
  if (index_ == nullptr) return {0, 0};
  return {index_->KeyCount(), index_->VersionCount()};
}

// ---- watch ------------------------------------------------------------------

std::unique_ptr<WatchStream> Store::NewWatchStream() {
  return hub_->NewStream();
}

Store::WatchStats Store::GetWatchStats() const {
  WatchHub::Stats s = hub_->GetStats();
  return WatchStats{s.synced, s.unsynced, s.victims};
}

}  // namespace kplane::mvcc
