// Replication bookkeeping for the raft core (internal): per-follower
// Progress with flow control (Inflights), majority and joint quorums, and
// the ProgressTracker that combines them with the current configuration.
//
// Progress is a small state machine per peer, seen from the leader:
//
//   Probe ──(MsgAppResp accepted)──> Replicate ──(reject / unreachable)──>
//   Probe
//     │                                  │
//     └──(log compacted past Next)──> Snapshot ──(snapshot applied/failed)──>
//     Probe
//
//   Probe:     at most one MsgApp per heartbeat interval, to find the match.
//   Replicate: optimistic pipelining; Next advances on send, bounded by
//              Inflights (count and bytes).
//   Snapshot:  nothing is sent until the snapshot is reported.
//
// Not thread-safe (owned by one Raft). No errors; broken invariants crash.
#ifndef KPLANE_STORAGE_RAFT_TRACKER_H_
#define KPLANE_STORAGE_RAFT_TRACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "schemas/raft.pb.h"

namespace kplane::raft {

using IdSet = std::set<uint64_t>;

// A bounded window of in-flight MsgApps to one follower, identified by the
// last index each carried. Example with capacity 3: Add(5,100), Add(8,50),
// Add(9,10) -> Full(); FreeLE(8) (the follower acked up to 8) leaves
// [(9,10)], count 1, bytes 10.
class Inflights {
 public:
  // max_bytes == 0 means no byte limit.
  Inflights(size_t size, uint64_t max_bytes)
      : size_(size), max_bytes_(max_bytes) {}

  void Add(uint64_t index, uint64_t bytes);
  void FreeLE(uint64_t to);
  bool Full() const {
    return count_ == size_ || (max_bytes_ != 0 && bytes_ >= max_bytes_);
  }
  size_t Count() const { return count_; }
  uint64_t Bytes() const { return bytes_; }
  void Reset();

 private:
  struct Flight {
    uint64_t index;
    uint64_t bytes;
  };
  size_t size_;
  uint64_t max_bytes_;
  size_t start_ = 0;
  size_t count_ = 0;
  uint64_t bytes_ = 0;
  std::vector<Flight> buffer_;  // ring, grown lazily up to size_
};

enum class ProgressState { kProbe, kReplicate, kSnapshot };
const char* ProgressStateName(ProgressState s);

struct Progress {
  Progress(size_t max_inflight, uint64_t max_inflight_bytes)
      : inflights(max_inflight, max_inflight_bytes) {}

  // Highest index known replicated on the peer; Next is the next to send.
  // Invariant: match < next.
  uint64_t match = 0;
  uint64_t next = 0;
  ProgressState state = ProgressState::kProbe;
  // While in kSnapshot: the index of the snapshot being sent.
  uint64_t pending_snapshot = 0;
  // Heard from since the last CheckQuorum round.
  bool recent_active = false;
  // Probe: a MsgApp was sent and awaits an answer. Replicate: inflights full.
  bool msg_app_flow_paused = false;
  Inflights inflights;
  bool is_learner = false;

  void ResetState(ProgressState s);
  void BecomeProbe();
  void BecomeReplicate();
  void BecomeSnapshot(uint64_t snapshot_index);
  // Accounts a MsgApp carrying `entries` entries of `bytes` payload.
  void SentEntries(size_t entries, uint64_t bytes);
  // The peer acked up to n; false if stale.
  bool MaybeUpdate(uint64_t n);
  // The peer rejected a MsgApp at index `rejected`, hinting that its log
  // matches at most up to match_hint. False if the rejection is stale.
  bool MaybeDecrTo(uint64_t rejected, uint64_t match_hint);
  bool IsPaused() const;
  std::string DebugString() const;
};

using ProgressMap = std::map<uint64_t, Progress>;

enum class VoteResult { kPending, kLost, kWon };

// A set of voters deciding by simple majority.
class MajorityConfig {
 public:
  MajorityConfig() = default;
  explicit MajorityConfig(IdSet ids) : ids_(std::move(ids)) {}

  // The largest index acked by a majority, given each voter's acked index
  // (absent voters count as 0). Example: voters {1,2,3} acked {1:7, 2:5,
  // 3:9} -> sorted [5,7,9] -> 7. An empty config returns UINT64_MAX so that
  // a joint config with an empty half is decided by the other half.
  uint64_t CommittedIndex(
      const std::function<uint64_t(uint64_t id, bool* found)>& acked) const;
  // An empty config wins (it defers to the other half of a joint config).
  VoteResult Vote(const std::map<uint64_t, bool>& votes) const;

  const IdSet& ids() const { return ids_; }
  IdSet& ids() { return ids_; }
  bool empty() const { return ids_.empty(); }
  size_t size() const { return ids_.size(); }
  bool contains(uint64_t id) const { return ids_.count(id) > 0; }
  std::string DebugString() const;

 private:
  IdSet ids_;
};

// Joint consensus: both the incoming [0] and outgoing [1] majorities must
// agree. Outside a joint configuration the outgoing half is empty.
struct JointConfig {
  MajorityConfig incoming;
  MajorityConfig outgoing;

  IdSet Ids() const;
  uint64_t CommittedIndex(
      const std::function<uint64_t(uint64_t id, bool* found)>& acked) const;
  VoteResult Vote(const std::map<uint64_t, bool>& votes) const;
  std::string DebugString() const;
};

struct TrackerConfig {
  JointConfig voters;
  bool auto_leave = false;
  // Learners never overlap voters. learners_next holds voters of the
  // outgoing config that become learners when the joint config is left.
  IdSet learners;
  IdSet learners_next;

  std::string DebugString() const;
};

class ProgressTracker {
 public:
  ProgressTracker(size_t max_inflight, uint64_t max_inflight_bytes)
      : max_inflight(max_inflight), max_inflight_bytes(max_inflight_bytes) {}

  raftpb::ConfState ConfState() const;
  // Exactly one voter and no joint config.
  bool IsSingleton() const {
    return config.voters.incoming.size() == 1 && config.voters.outgoing.empty();
  }
  // The largest index a (joint) quorum of voters has matched.
  uint64_t Committed() const;
  // Visits progress in id order.
  void Visit(const std::function<void(uint64_t, Progress&)>& fn);
  // Whether a quorum of voters was recently active.
  bool QuorumActive() const;
  std::vector<uint64_t> VoterNodes() const;
  std::vector<uint64_t> LearnerNodes() const;

  void ResetVotes() { votes.clear(); }
  // Records the first vote from id; later ones are ignored.
  void RecordVote(uint64_t id, bool granted);
  VoteResult TallyVotes(int* granted, int* rejected) const;

  TrackerConfig config;
  ProgressMap progress;
  std::map<uint64_t, bool> votes;
  size_t max_inflight;
  uint64_t max_inflight_bytes;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_TRACKER_H_
