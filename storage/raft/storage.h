// Storage: the raft core's read-only view of the persisted log, and
// MemoryStorage, an in-memory implementation used by tests and the
// simulation (the server brings its own durable one).
//
// The core reads the stable log through Storage and never writes to it: the
// caller persists what a Ready hands out (entries, hard state, snapshot) into
// its storage before calling RawNode::Advance().
//
// Index ranges: the log holds entries [FirstIndex(), LastIndex()]; the entry
// just before FirstIndex() was compacted away but its term is still known
// (it is the snapshot's), so Term(FirstIndex()-1) succeeds.
//
// Errors: kCompacted (detail = the requested index) when asking for a
// compacted index; kUnavailable when data is not there yet (an entry past the
// end, a snapshot being produced). Any other error is treated by the core as
// a failed durable read and crashes the node.
//
// Thread-safety: the core calls Storage only from the thread driving its
// RawNode. MemoryStorage is not synchronized: use one thread, or guard it.
#ifndef KPLANE_STORAGE_RAFT_STORAGE_H_
#define KPLANE_STORAGE_RAFT_STORAGE_H_

#include <cstdint>

#include "base/status.h"
#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "storage/raft/util.h"

namespace kplane::raft {

struct RaftState {
  raftpb::HardState hard_state;
  raftpb::ConfState conf_state;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // The persisted hard state and the configuration as of the last snapshot
  // or applied config change the storage knows.
  virtual StatusOr<RaftState> InitialState() const = 0;
  // Entries [lo, hi), cut to at most max_size bytes (EntrySize) but always
  // at least one entry when lo < hi.
  virtual StatusOr<EntryVec> Entries(uint64_t lo, uint64_t hi,
                                     uint64_t max_size) const = 0;
  // The term of entry i, for i in [FirstIndex()-1, LastIndex()].
  virtual StatusOr<uint64_t> Term(uint64_t i) const = 0;
  virtual StatusOr<uint64_t> FirstIndex() const = 0;
  virtual StatusOr<uint64_t> LastIndex() const = 0;
  // The most recent snapshot; kUnavailable if it is being produced.
  virtual StatusOr<raftpb::Snapshot> Snapshot() const = 0;
};

Status CompactedIndexError(uint64_t index);
Status UnavailableIndexError(uint64_t index);
Status SnapshotOutOfDateError(uint64_t index);

// An in-memory log. Layout: ents_[0] is a dummy entry carrying the index and
// term of the last compacted entry (the snapshot's), so that Term() of the
// entry before the first works without a special case. Example: after
// ApplySnapshot(index 10, term 3) and Append(11..13 at term 4),
// ents_ = [3/10 dummy, 4/11, 4/12, 4/13]; FirstIndex()=11, LastIndex()=13,
// Term(10)=3, Term(9) -> kCompacted.
class MemoryStorage : public Storage {
 public:
  MemoryStorage();

  StatusOr<RaftState> InitialState() const override;
  StatusOr<EntryVec> Entries(uint64_t lo, uint64_t hi,
                             uint64_t max_size) const override;
  StatusOr<uint64_t> Term(uint64_t i) const override;
  StatusOr<uint64_t> FirstIndex() const override;
  StatusOr<uint64_t> LastIndex() const override;
  StatusOr<raftpb::Snapshot> Snapshot() const override;

  void SetHardState(const raftpb::HardState& hs) { hard_state_ = hs; }
  // Bootstrap helper: the configuration an empty storage reports (as if a
  // snapshot at index 0 carried it). Only for clusters whose members all
  // start this way; a node joining later must receive a real snapshot.
  void SetInitialConfState(const raftpb::ConfState& cs) {
    *snapshot_.mutable_metadata()->mutable_conf_state() = cs;
  }
  const raftpb::HardState& hard_state() const { return hard_state_; }

  // Replaces the whole log with `snap` (a snapshot received from a leader).
  // kSnapshotOutOfDate-style error (FailedPrecondition) if it is older than
  // the current one.
  Status ApplySnapshot(raftpb::Snapshot snap);
  // Makes a snapshot at applied index i (<= LastIndex) with the given config
  // and state-machine bytes; entries are kept until Compact().
  StatusOr<raftpb::Snapshot> CreateSnapshot(uint64_t i,
                                            const raftpb::ConfState* cs,
                                            std::string data);
  // Discards entries up to and including compact_index (< LastIndex+1).
  // kCompacted if already compacted past it.
  Status Compact(uint64_t compact_index);
  // Appends entries, truncating any existing suffix they conflict with.
  // Entries must be contiguous and start at or below LastIndex()+1; ones at
  // or below the compaction point are ignored.
  Status Append(EntryVec ents);
  // Same, consuming from a range (saves a copy of the Ready's entries).
  Status Append(const raftpb::Entry* first, const raftpb::Entry* last);

  // Test helper: how many entries are held (excluding the dummy).
  size_t EntryCount() const { return ents_.size() - 1; }

 private:
  uint64_t FirstIdx() const { return ents_[0].index() + 1; }
  uint64_t LastIdx() const { return ents_[0].index() + ents_.size() - 1; }

  raftpb::HardState hard_state_;
  raftpb::Snapshot snapshot_;
  EntryVec ents_;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_STORAGE_H_
