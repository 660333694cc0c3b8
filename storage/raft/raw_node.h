// RawNode: the public face of the raft consensus core (model: etcd-io/raft's
// RawNode). A pure, deterministic state machine: no IO, no threads, no
// clock, no global state. The caller drives it:
//
//   inputs:  Tick() on a fixed interval; Step(msg) for every message from a
//            peer; Propose / ProposeConfChange / ReadIndex / TransferLeader
//            / Campaign for local requests.
//   outputs: GetReady() when HasReady(); the caller then, in order,
//            1. persists ready.entries (appending, truncating conflicts),
//               ready.hard_state (if not empty) and ready.snapshot (if not
//               empty) — fsynced when ready.must_sync;
//            2. sends ready.messages (a leader may send before step 1
//               finishes; every other node only after it);
//            3. applies ready.snapshot then ready.committed_entries to the
//               state machine (calling ApplyConfChange for conf changes);
//            4. calls Advance().
//   See storage/raft/README.md for a worked example.
//
// Ownership: the RawNode borrows `storage` (which must outlive it) and reads
// it; the caller writes it. Ready contents are the caller's to move from.
//
// Thread-safety: none; call from one thread (the server's node loop).
//
// Errors: Propose/ProposeConfChange return kUnavailable "raft proposal
// dropped: <why>" (IsProposalDropped) when there is no leader, a leadership
// transfer is in progress, or the uncommitted quota is full; the caller
// retries or fails the request. Step returns kInvalidArgument for local
// message types and kNotFound for a response from an unknown peer. A broken
// invariant or an unreadable storage crashes the process.
#ifndef KPLANE_STORAGE_RAFT_RAW_NODE_H_
#define KPLANE_STORAGE_RAFT_RAW_NODE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "storage/raft/config.h"
#include "storage/raft/raft.h"
#include "storage/raft/storage.h"
#include "storage/raft/tracker.h"
#include "storage/raft/util.h"

namespace kplane::raft {

struct Ready {
  // Set when leader or role changed since the last Ready.
  std::optional<SoftState> soft_state;
  // Empty (IsEmptyHardState) when unchanged; persist otherwise.
  raftpb::HardState hard_state;
  // Answers to ReadIndex requests, in request order.
  std::vector<ReadState> read_states;
  // New log entries to append to stable storage before sending messages
  // (followers) and before Advance().
  EntryVec entries;
  // A snapshot to persist and apply (IsEmptySnapshot when none).
  raftpb::Snapshot snapshot;
  // Entries to apply to the state machine, in order. They may include
  // entries from `entries` above: persist first, then apply.
  EntryVec committed_entries;
  // Messages to send to peers (after persisting, unless we are leader).
  std::vector<raftpb::Message> messages;
  // Whether the hard state, entries and snapshot must be synced to disk
  // before the messages go out (false when only the commit index changed).
  bool must_sync = false;
};

enum class SnapshotStatus { kFinish, kFailure };

struct BasicStatus {
  uint64_t id = 0;
  raftpb::HardState hard_state;
  SoftState soft_state;
  uint64_t applied = 0;
  uint64_t lead_transferee = kNone;
};

struct FullStatus {
  BasicStatus basic;
  std::string config;  // TrackerConfig::DebugString()
  // Leader only: per-peer replication progress.
  std::map<uint64_t, std::string> progress;
};

class RawNode {
 public:
  // Starts a node over `storage`: a fresh node if the storage is empty (its
  // ConfState then comes from a snapshot the caller installed, e.g. the
  // initial membership), or a restart from whatever it holds. Set
  // config.applied to the state machine's applied index on restart.
  static StatusOr<std::unique_ptr<RawNode>> Create(const Config& config,
                                                   Storage* storage);
  // Same as Create but insists that the storage holds prior state.
  static StatusOr<std::unique_ptr<RawNode>> Restart(const Config& config,
                                                    Storage* storage);

  // Advances the logical clock by one tick (elections, heartbeats).
  void Tick();
  // Starts an election now (tests and operator commands).
  Status Campaign();
  Status Propose(std::string data);
  Status ProposeConfChange(const raftpb::ConfChange& cc);
  Status ProposeConfChange(const raftpb::ConfChangeV2& cc);
  // Applies a committed conf change entry's change; returns the config the
  // application should store alongside its state (e.g. in snapshots).
  raftpb::ConfState ApplyConfChange(const raftpb::ConfChange& cc);
  raftpb::ConfState ApplyConfChange(const raftpb::ConfChangeV2& cc);
  // Feeds a message received from a peer.
  Status Step(raftpb::Message m);

  bool HasReady() const;
  // Takes the pending Ready. Crashes if the previous one was not Advance()d.
  Ready GetReady();
  // Acknowledges that the last Ready was persisted, sent and applied.
  void Advance();

  // Requests a linearizable read point; the answer arrives as a ReadState
  // with the same ctx in a later Ready. ctx must be unique among pending
  // requests.
  void ReadIndex(std::string ctx);
  void TransferLeader(uint64_t transferee);
  void ReportUnreachable(uint64_t id);
  void ReportSnapshot(uint64_t id, SnapshotStatus status);

  BasicStatus GetBasicStatus() const;
  FullStatus GetStatus() const;

  // For tests and the simulation's invariant checks.
  Raft& raft() { return *raft_; }
  const Raft& raft() const { return *raft_; }

 private:
  explicit RawNode(std::unique_ptr<Raft> r);

  std::unique_ptr<Raft> raft_;
  SoftState prev_soft_state_;
  raftpb::HardState prev_hard_state_;
  // What the outstanding Ready handed out, for Advance().
  bool ready_outstanding_ = false;
  uint64_t ready_last_entry_index_ = 0;
  uint64_t ready_last_entry_term_ = 0;
  uint64_t ready_snapshot_index_ = 0;
  uint64_t ready_applied_to_ = 0;
  uint64_t ready_applied_bytes_ = 0;
  raftpb::HardState ready_hard_state_;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_RAW_NODE_H_
