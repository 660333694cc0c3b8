#include "storage/raft/storage.h"

#include "base/logging.h"

namespace kplane::raft {

Status CompactedIndexError(uint64_t index) {
  return Status(StatusCode::kCompacted,
                "requested index is unavailable due to compaction",
                static_cast<int64_t>(index));
}

Status UnavailableIndexError(uint64_t index) {
  return Status(StatusCode::kUnavailable,
                "requested entry at index is unavailable",
                static_cast<int64_t>(index));
}

Status SnapshotOutOfDateError(uint64_t index) {
  return Status(StatusCode::kFailedPrecondition,
                "requested index is older than the existing snapshot",
                static_cast<int64_t>(index));
}

MemoryStorage::MemoryStorage() { ents_.resize(1); }

StatusOr<RaftState> MemoryStorage::InitialState() const {
  return RaftState{hard_state_, snapshot_.metadata().conf_state()};
}

StatusOr<EntryVec> MemoryStorage::Entries(uint64_t lo, uint64_t hi,
                                          uint64_t max_size) const {
  uint64_t offset = ents_[0].index();
  if (lo <= offset) return CompactedIndexError(lo);
  CHECK_LE(hi, LastIdx() + 1) << "entries' hi is out of bound";
  // Only the dummy entry: nothing to give yet.
  if (ents_.size() == 1) return UnavailableIndexError(lo);
  EntryVec out(ents_.begin() + (lo - offset), ents_.begin() + (hi - offset));
  LimitSize(out, max_size);
  return out;
}

StatusOr<uint64_t> MemoryStorage::Term(uint64_t i) const {
  uint64_t offset = ents_[0].index();
  if (i < offset) return CompactedIndexError(i);
  if (i - offset >= ents_.size()) return UnavailableIndexError(i);
  return ents_[i - offset].term();
}

StatusOr<uint64_t> MemoryStorage::FirstIndex() const { return FirstIdx(); }

StatusOr<uint64_t> MemoryStorage::LastIndex() const { return LastIdx(); }

StatusOr<raftpb::Snapshot> MemoryStorage::Snapshot() const { return snapshot_; }

Status MemoryStorage::ApplySnapshot(raftpb::Snapshot snap) {
  uint64_t index = snap.metadata().index();
  if (snapshot_.metadata().index() >= index) {
    return SnapshotOutOfDateError(index);
  }
  ents_.clear();
  ents_.resize(1);
  ents_[0].set_index(index);
  ents_[0].set_term(snap.metadata().term());
  snapshot_ = std::move(snap);
  return Status::Ok();
}

StatusOr<raftpb::Snapshot> MemoryStorage::CreateSnapshot(
    uint64_t i, const raftpb::ConfState* cs, std::string data) {
  if (i <= snapshot_.metadata().index()) return SnapshotOutOfDateError(i);
  uint64_t offset = ents_[0].index();
  CHECK_LE(i, LastIdx()) << "snapshot is out of bound";
  snapshot_.mutable_metadata()->set_index(i);
  snapshot_.mutable_metadata()->set_term(ents_[i - offset].term());
  if (cs != nullptr) *snapshot_.mutable_metadata()->mutable_conf_state() = *cs;
  snapshot_.set_data(std::move(data));
  return snapshot_;
}

Status MemoryStorage::Compact(uint64_t compact_index) {
  uint64_t offset = ents_[0].index();
  if (compact_index <= offset) return CompactedIndexError(compact_index);
  CHECK_LE(compact_index, LastIdx()) << "compact is out of bound";
  uint64_t i = compact_index - offset;
  // The entry at compact_index becomes the new dummy (its data dropped).
  raftpb::Entry dummy;
  dummy.set_index(ents_[i].index());
  dummy.set_term(ents_[i].term());
  EntryVec kept;
  kept.reserve(ents_.size() - i);
  kept.push_back(std::move(dummy));
  for (size_t k = i + 1; k < ents_.size(); ++k) {
    kept.push_back(std::move(ents_[k]));
  }
  ents_ = std::move(kept);
  return Status::Ok();
}

Status MemoryStorage::Append(EntryVec ents) {
  if (ents.empty()) return Status::Ok();
  return Append(ents.data(), ents.data() + ents.size());
}

Status MemoryStorage::Append(const raftpb::Entry* first,
                             const raftpb::Entry* last) {
  if (first == last) return Status::Ok();
  uint64_t first_idx = FirstIdx();
  uint64_t last_new = (last - 1)->index();
  // Everything is already compacted.
  if (last_new < first_idx) return Status::Ok();
  // Skip the part that is already compacted.
  if (first->index() < first_idx) first += first_idx - first->index();
  uint64_t offset = first->index() - ents_[0].index();
  CHECK_LE(offset, ents_.size()) << "missing log entry [last: " << LastIdx()
                                 << ", append at: " << first->index() << "]";
  // Truncate the conflicting (or equal) suffix, then append.
  ents_.resize(offset);
  ents_.insert(ents_.end(), first, last);
  return Status::Ok();
}

}  // namespace kplane::raft
