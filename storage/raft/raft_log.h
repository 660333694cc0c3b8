// RaftLog: the core's view of the whole log, the stable part read through
// Storage plus an in-memory "unstable" tail (entries and possibly a snapshot)
// that the caller has not yet persisted. Internal to the raft core.
//
// Worked example. Storage holds 1..5 (snapshot at 0). The leader appends
// 6 and 7 (term 2): unstable = {offset 6, entries [2/6, 2/7]}. A Ready hands
// out [2/6, 2/7]; the caller persists them and Advance() calls StableTo(7, 2):
// unstable becomes {offset 8, entries []}. Had a new leader in the meantime
// overwritten index 7 with 3/7, StableTo(7, 2) would see a term mismatch and
// keep [3/7] unstable for the next Ready.
//
//   committed: highest index known committed (quorum-replicated).
//   applied:   highest index the application has applied (<= committed).
//   invariant: applied <= committed <= LastIndex(), and
//              FirstIndex()-1 <= applied when no snapshot is pending.
//
// Not thread-safe (owned by one Raft). Storage errors other than kCompacted
// and kUnavailable are fatal.
#ifndef KPLANE_STORAGE_RAFT_RAFT_LOG_H_
#define KPLANE_STORAGE_RAFT_RAFT_LOG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "storage/raft/storage.h"

namespace kplane::raft {

// Entries and a snapshot not yet written to Storage. entries[i] has index
// offset+i; when a snapshot is present, offset == snapshot index + 1.
class Unstable {
 public:
  std::optional<uint64_t> MaybeFirstIndex() const;
  std::optional<uint64_t> MaybeLastIndex() const;
  std::optional<uint64_t> MaybeTerm(uint64_t i) const;

  void StableTo(uint64_t i, uint64_t t);
  void StableSnapTo(uint64_t i);
  void Restore(raftpb::Snapshot s);
  void TruncateAndAppend(const raftpb::Entry* first, const raftpb::Entry* last);
  // Copies entries [lo, hi); both must lie within the unstable range.
  void Slice(uint64_t lo, uint64_t hi, EntryVec* out) const;

  const EntryVec& entries() const { return entries_; }
  const raftpb::Snapshot* snapshot() const { return snapshot_.get(); }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t o) { offset_ = o; }

 private:
  std::unique_ptr<raftpb::Snapshot> snapshot_;
  EntryVec entries_;
  uint64_t offset_ = 0;
};

class RaftLog {
 public:
  // max_applying_size bounds the bytes of committed entries per Ready.
  RaftLog(Storage* storage, uint64_t max_applying_size);

  uint64_t FirstIndex() const;
  uint64_t LastIndex() const;
  uint64_t LastTerm() const;
  // kCompacted / kUnavailable outside [FirstIndex()-1, LastIndex()].
  StatusOr<uint64_t> Term(uint64_t i) const;
  // Term(i), or 0 if i is out of range.
  uint64_t TermOrZero(uint64_t i) const;
  bool MatchTerm(uint64_t i, uint64_t term) const;
  // Whether a log ending at (last_index, last_term) is at least as
  // up-to-date as ours (Raft §5.4.1).
  bool IsUpToDate(uint64_t last_index, uint64_t last_term) const;

  // Appends entries following (index, log_term) if that entry matches ours,
  // truncating a conflicting suffix, and advances commit to
  // min(committed, last new index). Returns the last new index, or nullopt
  // if (index, log_term) does not match.
  std::optional<uint64_t> MaybeAppend(uint64_t index, uint64_t log_term,
                                      uint64_t committed,
                                      const raftpb::Entry* first,
                                      const raftpb::Entry* last);
  // Appends (possibly truncating the unstable tail); returns LastIndex().
  uint64_t Append(const raftpb::Entry* first, const raftpb::Entry* last);
  // The first index in [first, last) whose term differs from ours (or is
  // past our end); 0 if all match.
  uint64_t FindConflict(const raftpb::Entry* first,
                        const raftpb::Entry* last) const;
  // The largest (index', term') with index' <= index and term' <= term; used
  // to skip a follower's divergent tail in one round trip. An unknown term
  // (compacted) yields (index, 0).
  std::pair<uint64_t, uint64_t> FindConflictByTerm(uint64_t index,
                                                   uint64_t term) const;

  // Entries from i onward, at most max_size bytes (at least one).
  StatusOr<EntryVec> EntriesFrom(uint64_t i, uint64_t max_size) const;
  // Entries [lo, hi), at most max_size bytes (at least one).
  StatusOr<EntryVec> Slice(uint64_t lo, uint64_t hi, uint64_t max_size) const;
  // Every entry (test helper); compaction races are retried.
  EntryVec AllEntries() const;

  const EntryVec& UnstableEntries() const { return unstable_.entries(); }
  bool HasPendingSnapshot() const { return unstable_.snapshot() != nullptr; }
  const raftpb::Snapshot* PendingSnapshot() const {
    return unstable_.snapshot();
  }
  StatusOr<raftpb::Snapshot> Snapshot() const;

  // Committed entries not yet applied, bounded by max_applying_size.
  EntryVec NextCommittedEntries() const;
  bool HasNextCommittedEntries() const;

  bool MaybeCommit(uint64_t max_index, uint64_t term);
  void CommitTo(uint64_t to_commit);
  void AppliedTo(uint64_t i);
  void StableTo(uint64_t i, uint64_t t) { unstable_.StableTo(i, t); }
  void StableSnapTo(uint64_t i) { unstable_.StableSnapTo(i); }
  // Replaces the log by a snapshot (committed = its index).
  void Restore(raftpb::Snapshot s);

  uint64_t committed() const { return committed_; }
  uint64_t applied() const { return applied_; }
  uint64_t max_applying_size() const { return max_applying_size_; }
  Storage* storage() const { return storage_; }

  std::string DebugString() const;

 private:
  Status MustCheckOutOfBounds(uint64_t lo, uint64_t hi) const;

  Storage* storage_;
  Unstable unstable_;
  uint64_t committed_ = 0;
  uint64_t applied_ = 0;
  uint64_t max_applying_size_;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_RAFT_LOG_H_
