// RaftLog: the durable raft log of one store member: a WAL (storage/wal) for
// durability and a raft::MemoryStorage that the raft core reads.
//
// Every entry since the last compaction point is held in memory (as etcd
// does); the WAL is only read at startup. Record types and replay rules are
// in storage/wal/FORMAT.md.
//
//   auto log = RaftLog::Open(dir, options);
//   raft::RawNode::Create(config, log->storage());
//   ... ready = node->GetReady();
//   log->Save(ready.hard_state, ready.entries, ready.snapshot,
//   ready.must_sync);
//   ... after the state machine is durable at index i:
//   log->CreateSnapshot(i, conf_state);   // marker + memory/WAL compaction
//
// Thread-safety: not thread-safe; the node loop owns it. storage() must only
// be read from that same thread (it is what RawNode reads).
#ifndef KPLANE_STORAGE_SERVER_RAFT_LOG_H_
#define KPLANE_STORAGE_SERVER_RAFT_LOG_H_

#include <memory>
#include <optional>
#include <string>

#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "schemas/storage.pb.h"
#include "storage/raft/storage.h"
#include "storage/wal/wal.h"

namespace kplane::storage {

struct RaftLogOptions {
  wal::Options wal;
  // Entries kept in memory (and in the WAL) behind a snapshot, so a follower
  // that is only a little behind catches up from the log rather than needing
  // a whole snapshot (etcd's SnapshotCatchUpEntries).
  uint64_t catch_up_entries = 5000;
};

class RaftLog {
 public:
  enum RecordType : uint8_t {
    kEntry = 1,
    kHardState = 2,
    kSnapshot = 3,
    kIdentity = 4,
    // A snapshot received from the leader: it replaces the whole log.
    kInstalledSnapshot = 5,
  };

  static StatusOr<std::unique_ptr<RaftLog>> Open(const std::string& dir,
                                                 const RaftLogOptions& options);

  // True when the WAL held nothing: a brand-new member.
  bool empty() const { return empty_; }
  // The identity written by WriteIdentity, if any.
  const std::optional<storagepb::MemberIdentity>& identity() const {
    return identity_;
  }
  Status WriteIdentity(const storagepb::MemberIdentity& id);
  // Records the initial membership of a brand-new cluster as a snapshot of
  // the empty state at index 1, term 1, carrying `conf_state`.
  Status Bootstrap(const raftpb::ConfState& conf_state);

  raft::MemoryStorage* storage() { return &memory_; }
  // The index of the last entry (the snapshot's index when the log holds
  // no entry after it).
  uint64_t LastIndex() const { return memory_.LastIndex().value_or(0); }
  // The newest hard state (term, vote, commit) the WAL holds.
  const raftpb::HardState& hard_state() const { return hard_state_; }
  // The newest snapshot marker (index 0 when none).
  const raftpb::SnapshotMetadata& snapshot_metadata() const {
    return snapshot_;
  }

  // Persists what a Ready hands out: a snapshot marker (and installs the
  // snapshot in memory), the entries, the hard state; fsyncs when `sync`.
  // kNoSpace while !wal_failed(): a full disk, nothing of the call was
  // kept (in memory or in the WAL); the same Save may be tried again.
  // Any other error, or wal_failed(): the log refuses writes for good.
  Status Save(const raftpb::HardState& hs, const raft::EntryVec& entries,
              const raftpb::Snapshot& snap, bool sync);

  // Records that the state machine is durable at `index` with `conf_state`:
  // writes a snapshot marker, compacts the in-memory log to
  // index - catch_up_entries and releases WAL segments behind that point.
  // kNoSpace while !wal_failed(): no marker was written and nothing
  // compacted; a later snapshot tries again.
  Status CreateSnapshot(uint64_t index, const raftpb::ConfState& conf_state);

  uint64_t WalBytes() const { return wal_->SizeBytes(); }
  // The WAL refuses every further write (a failed sync, a failed write
  // other than a full disk): wal::Wal::failed().
  bool wal_failed() const { return wal_->failed(); }

 private:
  RaftLog(RaftLogOptions options) : options_(options) {}
  std::vector<wal::Record> HeaderRecords() const;

  RaftLogOptions options_;
  std::unique_ptr<wal::Wal> wal_;
  raft::MemoryStorage memory_;
  raftpb::HardState hard_state_;
  raftpb::SnapshotMetadata snapshot_;
  std::optional<storagepb::MemberIdentity> identity_;
  bool empty_ = true;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_RAFT_LOG_H_
