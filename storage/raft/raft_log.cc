#include "storage/raft/raft_log.h"

#include <algorithm>
#include <sstream>

#include "base/logging.h"

namespace kplane::raft {

// ---- Unstable ----

std::optional<uint64_t> Unstable::MaybeFirstIndex() const {
  if (snapshot_) return snapshot_->metadata().index() + 1;
  return std::nullopt;
}

std::optional<uint64_t> Unstable::MaybeLastIndex() const {
  if (!entries_.empty()) return offset_ + entries_.size() - 1;
  if (snapshot_) return snapshot_->metadata().index();
  return std::nullopt;
}

std::optional<uint64_t> Unstable::MaybeTerm(uint64_t i) const {
  if (i < offset_) {
    if (snapshot_ && snapshot_->metadata().index() == i) {
      return snapshot_->metadata().term();
    }
    return std::nullopt;
  }
  auto last = MaybeLastIndex();
  if (!last || i > *last) return std::nullopt;
  return entries_[i - offset_].term();
}

void Unstable::StableTo(uint64_t i, uint64_t t) {
  auto gt = MaybeTerm(i);
  if (!gt) return;
  // Only entries (not the snapshot) become stable here, and only if the
  // entry at i is still the one that was persisted (same term).
  if (*gt == t && i >= offset_) {
    entries_.erase(entries_.begin(), entries_.begin() + (i + 1 - offset_));
    offset_ = i + 1;
    if (entries_.empty() && entries_.capacity() > 1024) {
      EntryVec().swap(entries_);
    }
  }
}

void Unstable::StableSnapTo(uint64_t i) {
  if (snapshot_ && snapshot_->metadata().index() == i) snapshot_.reset();
}

void Unstable::Restore(raftpb::Snapshot s) {
  offset_ = s.metadata().index() + 1;
  entries_.clear();
  snapshot_ = std::make_unique<raftpb::Snapshot>(std::move(s));
}

void Unstable::TruncateAndAppend(const raftpb::Entry* first,
                                 const raftpb::Entry* last) {
  uint64_t after = first->index();
  if (after == offset_ + entries_.size()) {
    // Directly follows our tail.
  } else if (after <= offset_) {
    // Replaces everything unstable (and overrides stable entries >= after,
    // which the caller's storage truncates when it persists these).
    offset_ = after;
    entries_.clear();
  } else {
    entries_.resize(after - offset_);
  }
  entries_.insert(entries_.end(), first, last);
}

void Unstable::Slice(uint64_t lo, uint64_t hi, EntryVec* out) const {
  CHECK_LE(lo, hi);
  CHECK(lo >= offset_ && hi <= offset_ + entries_.size())
      << "unstable.slice[" << lo << "," << hi << ") out of bound [" << offset_
      << "," << offset_ + entries_.size() << "]";
  out->insert(out->end(), entries_.begin() + (lo - offset_),
              entries_.begin() + (hi - offset_));
}

// ---- RaftLog ----

namespace {
template <typename T>
T MustValue(StatusOr<T> v, const char* what) {
  CHECK(v.ok()) << what << ": " << v.status().ToString();
  return std::move(v).value();
}
}  // namespace

RaftLog::RaftLog(Storage* storage, uint64_t max_applying_size)
    : storage_(storage), max_applying_size_(max_applying_size) {
  uint64_t first = MustValue(storage->FirstIndex(), "storage FirstIndex");
  uint64_t last = MustValue(storage->LastIndex(), "storage LastIndex");
  unstable_.set_offset(last + 1);
  // Initialize to the index just before the first entry: everything up to it
  // is in the snapshot, so it is committed and applied.
  committed_ = first - 1;
  applied_ = first - 1;
}

uint64_t RaftLog::FirstIndex() const {
  if (auto i = unstable_.MaybeFirstIndex()) return *i;
  return MustValue(storage_->FirstIndex(), "storage FirstIndex");
}

uint64_t RaftLog::LastIndex() const {
  if (auto i = unstable_.MaybeLastIndex()) return *i;
  return MustValue(storage_->LastIndex(), "storage LastIndex");
}

uint64_t RaftLog::LastTerm() const {
  auto t = Term(LastIndex());
  CHECK(t.ok()) << "unexpected error getting the last term: "
                << t.status().ToString();
  return *t;
}

StatusOr<uint64_t> RaftLog::Term(uint64_t i) const {
  // The unstable part answers first; it may shadow storage.
  if (auto t = unstable_.MaybeTerm(i)) return *t;
  // Valid range: [FirstIndex()-1, LastIndex()].
  if (i + 1 < FirstIndex()) return CompactedIndexError(i);
  if (i > LastIndex()) return UnavailableIndexError(i);
  auto t = storage_->Term(i);
  if (t.ok()) return t;
  if (t.status().Is(StatusCode::kCompacted) ||
      t.status().Is(StatusCode::kUnavailable)) {
    return t.status();
  }
  LOG(FATAL) << "storage Term(" << i << "): " << t.status().ToString();
  return t.status();
}

uint64_t RaftLog::TermOrZero(uint64_t i) const {
  auto t = Term(i);
  return t.ok() ? *t : 0;
}

bool RaftLog::MatchTerm(uint64_t i, uint64_t term) const {
  auto t = Term(i);
  return t.ok() && *t == term;
}

bool RaftLog::IsUpToDate(uint64_t last_index, uint64_t last_term) const {
  uint64_t our_term = LastTerm();
  return last_term > our_term ||
         (last_term == our_term && last_index >= LastIndex());
}

std::optional<uint64_t> RaftLog::MaybeAppend(uint64_t index, uint64_t log_term,
                                             uint64_t committed,
                                             const raftpb::Entry* first,
                                             const raftpb::Entry* last) {
  if (!MatchTerm(index, log_term)) return std::nullopt;
  uint64_t last_new = index + (last - first);
  uint64_t ci = FindConflict(first, last);
  if (ci != 0) {
    CHECK_GT(ci, committed_)
        << "entry " << ci << " conflicts with committed entry [committed("
        << committed_ << ")]";
    uint64_t off = index + 1;
    CHECK_LE(ci - off, static_cast<uint64_t>(last - first));
    Append(first + (ci - off), last);
  }
  CommitTo(std::min(committed, last_new));
  return last_new;
}

uint64_t RaftLog::Append(const raftpb::Entry* first,
                         const raftpb::Entry* last) {
  if (first == last) return LastIndex();
  uint64_t after = first->index() - 1;
  CHECK_GE(after, committed_)
      << "after(" << after << ") is out of range [committed(" << committed_
      << ")]";
  unstable_.TruncateAndAppend(first, last);
  return LastIndex();
}

uint64_t RaftLog::FindConflict(const raftpb::Entry* first,
                               const raftpb::Entry* last) const {
  for (const raftpb::Entry* e = first; e != last; ++e) {
    if (!MatchTerm(e->index(), e->term())) return e->index();
  }
  return 0;
}

std::pair<uint64_t, uint64_t> RaftLog::FindConflictByTerm(uint64_t index,
                                                          uint64_t term) const {
  for (; index > 0; --index) {
    auto t = Term(index);
    // Unknown (compacted): assume a possible match at index.
    if (!t.ok()) return {index, 0};
    if (*t <= term) return {index, *t};
  }
  return {0, 0};
}

StatusOr<EntryVec> RaftLog::EntriesFrom(uint64_t i, uint64_t max_size) const {
  if (i > LastIndex()) return EntryVec{};
  return Slice(i, LastIndex() + 1, max_size);
}

EntryVec RaftLog::AllEntries() const {
  auto ents = EntriesFrom(FirstIndex(), kNoLimit);
  CHECK(ents.ok()) << ents.status().ToString();
  return std::move(ents).value();
}

Status RaftLog::MustCheckOutOfBounds(uint64_t lo, uint64_t hi) const {
  CHECK_LE(lo, hi) << "invalid slice";
  uint64_t fi = FirstIndex();
  if (lo < fi) return CompactedIndexError(lo);
  uint64_t length = LastIndex() + 1 - fi;
  CHECK(hi <= fi + length) << "slice[" << lo << "," << hi << ") out of bound ["
                           << fi << "," << LastIndex() << "]";
  return Status::Ok();
}

StatusOr<EntryVec> RaftLog::Slice(uint64_t lo, uint64_t hi,
                                  uint64_t max_size) const {
  RETURN_IF_ERROR(MustCheckOutOfBounds(lo, hi));
  EntryVec out;
  if (lo == hi) return out;
  uint64_t uoff = unstable_.offset();
  if (lo < uoff) {
    auto stored = storage_->Entries(lo, std::min(hi, uoff), max_size);
    if (!stored.ok()) {
      if (stored.status().Is(StatusCode::kCompacted)) return stored.status();
      LOG(FATAL) << "storage Entries[" << lo << "," << std::min(hi, uoff)
                 << "): " << stored.status().ToString();
    }
    out = std::move(stored).value();
    // Storage cut the result short: do not add unstable entries after a gap.
    if (out.size() < std::min(hi, uoff) - lo) return out;
  }
  if (hi > uoff) unstable_.Slice(std::max(lo, uoff), hi, &out);
  LimitSize(out, max_size);
  return out;
}

StatusOr<raftpb::Snapshot> RaftLog::Snapshot() const {
  if (unstable_.snapshot()) return *unstable_.snapshot();
  return storage_->Snapshot();
}

EntryVec RaftLog::NextCommittedEntries() const {
  uint64_t off = std::max(applied_ + 1, FirstIndex());
  if (committed_ + 1 <= off) return {};
  auto ents = Slice(off, committed_ + 1, max_applying_size_);
  CHECK(ents.ok()) << "unexpected error when getting unapplied entries: "
                   << ents.status().ToString();
  return std::move(ents).value();
}

bool RaftLog::HasNextCommittedEntries() const {
  uint64_t off = std::max(applied_ + 1, FirstIndex());
  return committed_ + 1 > off;
}

bool RaftLog::MaybeCommit(uint64_t max_index, uint64_t term) {
  // Only entries of the current term are committed by counting replicas
  // (Raft §5.4.2); earlier ones follow implicitly.
  if (max_index > committed_ && TermOrZero(max_index) == term) {
    CommitTo(max_index);
    return true;
  }
  return false;
}

void RaftLog::CommitTo(uint64_t to_commit) {
  if (committed_ < to_commit) {
    CHECK_LE(to_commit, LastIndex())
        << "tocommit(" << to_commit << ") is out of range [lastIndex("
        << LastIndex() << ")]. Was the raft log corrupted, truncated, or lost?";
    committed_ = to_commit;
  }
}

void RaftLog::AppliedTo(uint64_t i) {
  if (i == 0) return;
  CHECK(committed_ >= i && i >= applied_)
      << "applied(" << i << ") is out of range [prevApplied(" << applied_
      << "), committed(" << committed_ << ")]";
  applied_ = i;
}

void RaftLog::Restore(raftpb::Snapshot s) {
  committed_ = s.metadata().index();
  unstable_.Restore(std::move(s));
}

std::string RaftLog::DebugString() const {
  std::ostringstream os;
  os << "committed=" << committed_ << ", applied=" << applied_
     << ", unstable.offset=" << unstable_.offset()
     << ", len(unstable.Entries)=" << unstable_.entries().size();
  return os.str();
}

}  // namespace kplane::raft
