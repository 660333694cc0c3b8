#include "storage/mvcc/write_txn.h"

#include "base/logging.h"
#include "storage/mvcc/keys.h"

namespace kplane::mvcc {

WriteTxn::WriteTxn(rocksdb::DB* db, int64_t begin_rev, int64_t published_rev,
                   bool events, bool events_with_prev, StagedBatch* group_batch,
                   KeyIndex* index)
    : db_(db),
      begin_rev_(begin_rev),
      published_rev_(published_rev),
      collect_prev_(events && events_with_prev),
      batch_(group_batch),
      view_(db, batch_),
      index_(index) {
  if (events) events_ = std::make_shared<EventList>();
  batch_->SetSavePoint();
  count_at_start_ = batch_->Count();
}

WriteTxn::~WriteTxn() {
  if (staged_) return;
  if (index_ != nullptr) index_->RemoveAbove(written_keys_, begin_rev_);
  if (batch_->Count() == count_at_start_) {
    // Failed before writing (the usual case): a rollback of an indexed
    // batch would rebuild the whole group's index for nothing.
    batch_->PopSavePoint();
  } else {
    batch_->RollbackToSavePoint();
  }
}

void WriteTxn::MarkStaged() {
  if (staged_) return;
  batch_->PopSavePoint();
  staged_ = true;
}

void WriteTxn::WriteVersion(const std::string& key, bool is_delete,
                            const std::string& record) {
  const int64_t rev = begin_rev_ + 1;
  std::string vk = keys::VersionKey(key, rev, sub_);
  std::string ek = keys::EventKey(rev, sub_);
  std::string er = keys::EncodeEventRecord(is_delete, key);
  batch_->Put(vk, record);
  batch_->Put(ek, er);
  size_delta_ +=
      static_cast<int64_t>(vk.size() + record.size() + ek.size() + er.size());
  ++sub_;
  if (index_ != nullptr) written_keys_.push_back(key);
}

StatusOr<std::optional<mvccpb::KeyValue>> WriteTxn::Put(
    const std::string& key, const std::string& value, int64_t lease,
    bool want_prev_value) {
  std::optional<mvccpb::KeyValue> prev;
  if (index_ == nullptr) {
    ASSIGN_OR_RETURN(prev, GetLatest(&view_, key));
  } else if (!want_prev_value && !collect_prev_) {
    prev = index_->LatestKeyValue(key);
  } else if (std::optional<KeyIndex::Version> v = index_->Latest(key)) {
    // The value too (prev_kv, or a watcher that wants it): a point read of
    // the exact version, cheaper than GetLatest's seek. A published
    // version is in the database; only one this group staged needs the
    // batch (and its index).
    std::string record;
    const std::string vk = keys::VersionKey(key, v->main, v->sub);
    rocksdb::Status st = v->main <= published_rev_
                             ? db_->Get(rocksdb::ReadOptions(), vk, &record)
                             : batch_->Indexed()->GetFromBatchAndDB(
                                   db_, rocksdb::ReadOptions(), vk, &record);
    if (!st.ok()) {
      return CorruptionError("mvcc: key index names a version of " + key +
                             " that is not stored: " + st.ToString());
    }
    prev.emplace();
    RETURN_IF_ERROR(DecodeKeyValue(keys::VersionPrefix(key), v->main, record,
                                   /*with_value=*/true, &*prev));
  }
  const int64_t rev = begin_rev_ + 1;
  const int64_t create = prev ? prev->create_revision() : rev;
  if (!prev) ++live_key_delta_;
  const int64_t version = prev ? prev->version() + 1 : 1;
  const uint32_t sub = sub_;
  WriteVersion(key, false,
               keys::EncodePutRecord(create, version, lease, value));
  if (index_ != nullptr) index_->Put(key, rev, sub, create, version, lease);

  const int64_t old_lease = prev ? prev->lease() : 0;
  if (old_lease != lease) {
    if (old_lease != 0) {
      std::string ak = keys::AttachKey(old_lease, key);
      batch_->Delete(ak);
      size_delta_ -= static_cast<int64_t>(ak.size());
      lease_changes_.push_back({false, old_lease, key});
    }
    if (lease != 0) {
      std::string ak = keys::AttachKey(lease, key);
      batch_->Put(ak, "");
      size_delta_ += static_cast<int64_t>(ak.size());
      lease_changes_.push_back({true, lease, key});
    }
  }
  if (events_) {
    mvccpb::Event& ev = events_->emplace_back();
    ev.set_type(mvccpb::Event::PUT);
    mvccpb::KeyValue* kv = ev.mutable_kv();
    kv->set_key(key);
    kv->set_create_revision(create);
    kv->set_mod_revision(rev);
    kv->set_version(version);
    kv->set_value(value);
    kv->set_lease(lease);
    if (collect_prev_ && prev) *ev.mutable_prev_kv() = *prev;
  }
  return prev;
}

StatusOr<int64_t> WriteTxn::DeleteRange(const std::string& key,
                                        const std::string& range_end,
                                        std::vector<mvccpb::KeyValue>* prev) {
  // Collect first: writing to the batch invalidates its iterators.
  std::vector<mvccpb::KeyValue> live;
  const bool with_value = prev != nullptr || collect_prev_;
  if (index_ != nullptr && !with_value) {
    // Only the keys and their leases are needed.
    for (auto& [k, v] : index_->LatestLive(key, range_end)) {
      mvccpb::KeyValue& kv = live.emplace_back();
      kv.set_key(std::move(k));
      kv.set_lease(v.lease);
    }
  } else {
    Status decode_status;
    RETURN_IF_ERROR(ScanRange(
        &view_, key, range_end, begin_rev_ + 1,
        [&](std::string_view prefix, int64_t main, std::string_view record) {
          decode_status = DecodeKeyValue(prefix, main, record, with_value,
                                         &live.emplace_back());
          return decode_status.ok();
        }));
    RETURN_IF_ERROR(decode_status);
  }

  const int64_t rev = begin_rev_ + 1;
  const std::string tombstone = keys::EncodeTombstoneRecord();
  for (mvccpb::KeyValue& kv : live) {
    if (index_ != nullptr) index_->Tombstone(kv.key(), rev, sub_);
    WriteVersion(kv.key(), true, tombstone);
    --live_key_delta_;
    if (kv.lease() != 0) {
      std::string ak = keys::AttachKey(kv.lease(), kv.key());
      batch_->Delete(ak);
      size_delta_ -= static_cast<int64_t>(ak.size());
      lease_changes_.push_back({false, kv.lease(), kv.key()});
    }
    if (events_) {
      mvccpb::Event& ev = events_->emplace_back();
      ev.set_type(mvccpb::Event::DELETE);
      ev.mutable_kv()->set_key(kv.key());
      ev.mutable_kv()->set_mod_revision(rev);
      if (collect_prev_) *ev.mutable_prev_kv() = kv;
    }
  }
  const int64_t n = static_cast<int64_t>(live.size());
  if (prev != nullptr) {
    for (auto& kv : live) prev->push_back(std::move(kv));
  }
  return n;
}

}  // namespace kplane::mvcc
