#include "storage/mvcc/staged_batch.h"

#include <rocksdb/comparator.h>

#include "base/logging.h"

namespace kplane::mvcc {

namespace {

rocksdb::Slice ToSlice(std::string_view s) {
  return rocksdb::Slice(s.data(), s.size());
}

// Copies a plain batch's records into the indexed one, re-creating the
// save points at the record counts they were set at.
class Replay : public rocksdb::WriteBatch::Handler {
 public:
  Replay(rocksdb::WriteBatchWithIndex* to,
         const std::vector<uint32_t>& save_counts)
      : to_(to), save_counts_(save_counts) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    if (cf != 0) return rocksdb::Status::InvalidArgument("column family");
    SavePointsUpTo(seen_);
    ++seen_;
    return to_->Put(key, value);
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    if (cf != 0) return rocksdb::Status::InvalidArgument("column family");
    SavePointsUpTo(seen_);
    ++seen_;
    return to_->Delete(key);
  }
  // Save points set after the last record.
  void Finish() { SavePointsUpTo(seen_); }

 private:
  void SavePointsUpTo(uint32_t count) {
    while (next_ < save_counts_.size() && save_counts_[next_] == count) {
      to_->SetSavePoint();
      ++next_;
    }
  }

  rocksdb::WriteBatchWithIndex* to_;
  const std::vector<uint32_t>& save_counts_;
  size_t next_ = 0;
  uint32_t seen_ = 0;
};

}  // namespace

StagedBatch::StagedBatch(bool always_indexed)
    : index_(rocksdb::BytewiseComparator(), 0, /*overwrite_key=*/true),
      always_indexed_(always_indexed),
      use_index_(always_indexed) {}

void StagedBatch::Put(std::string_view key, std::string_view value) {
  rocksdb::Status st = use_index_ ? index_.Put(ToSlice(key), ToSlice(value))
                                  : plain_.Put(ToSlice(key), ToSlice(value));
  CHECK(st.ok()) << "mvcc: staging a put: " << st.ToString();
}

void StagedBatch::Delete(std::string_view key) {
  rocksdb::Status st =
      use_index_ ? index_.Delete(ToSlice(key)) : plain_.Delete(ToSlice(key));
  CHECK(st.ok()) << "mvcc: staging a delete: " << st.ToString();
}

void StagedBatch::SetSavePoint() {
  if (use_index_) {
    index_.SetSavePoint();
  } else {
    plain_.SetSavePoint();
    save_counts_.push_back(plain_.Count());
  }
}

void StagedBatch::PopSavePoint() {
  rocksdb::Status st;
  if (use_index_) {
    st = index_.PopSavePoint();
  } else {
    st = plain_.PopSavePoint();
    if (st.ok()) save_counts_.pop_back();
  }
  CHECK(st.ok()) << "mvcc: dropping a save point: " << st.ToString();
}

void StagedBatch::RollbackToSavePoint() {
  rocksdb::Status st;
  if (use_index_) {
    st = index_.RollbackToSavePoint();
  } else {
    st = plain_.RollbackToSavePoint();
    if (st.ok()) save_counts_.pop_back();
  }
  CHECK(st.ok()) << "mvcc: rollback of a staged write: " << st.ToString();
}

uint32_t StagedBatch::Count() { return GetWriteBatch()->Count(); }

size_t StagedBatch::DataSize() { return GetWriteBatch()->GetDataSize(); }

rocksdb::WriteBatch* StagedBatch::GetWriteBatch() {
  return use_index_ ? index_.GetWriteBatch() : &plain_;
}

rocksdb::WriteBatchWithIndex* StagedBatch::Indexed() {
  if (use_index_) return &index_;
  Replay replay(&index_, save_counts_);
  rocksdb::Status st = plain_.Iterate(&replay);
  CHECK(st.ok()) << "mvcc: indexing the staged batch: " << st.ToString();
  replay.Finish();
  plain_.Clear();
  save_counts_.clear();
  use_index_ = true;
  return &index_;
}

void StagedBatch::Clear() {
  // Only the records go: both batches keep their buffers for the next
  // group.
  plain_.Clear();
  save_counts_.clear();
  if (use_index_) index_.Clear();
  use_index_ = always_indexed_;
}

}  // namespace kplane::mvcc
