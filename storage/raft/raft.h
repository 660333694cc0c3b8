// Raft: the consensus state machine itself (internal; applications use
// RawNode). It turns inputs (Step of a message, Tick) into outputs
// (messages in `msgs`, log changes in RaftLog, read states) and never does
// IO, never reads a clock and never starts a thread.
//
// Roles: follower, pre-candidate, candidate, leader. Each role has its own
// step function; Step() first handles terms (Raft §5.1) and votes (§5.2,
// §5.4.1), then dispatches. Comments cite the Raft paper ("§") and Diego
// Ongaro's thesis ("thesis §") where behaviour follows them.
//
// Not thread-safe. Broken invariants and failed storage reads crash.
#ifndef KPLANE_STORAGE_RAFT_RAFT_H_
#define KPLANE_STORAGE_RAFT_RAFT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/raft/confchange.h"
#include "storage/raft/config.h"
#include "storage/raft/raft_log.h"
#include "storage/raft/read_only.h"
#include "storage/raft/tracker.h"
#include "storage/raft/util.h"

namespace kplane::raft {

enum class StateType { kFollower, kCandidate, kLeader, kPreCandidate };
const char* StateTypeName(StateType s);

// Volatile state worth telling the application about (not persisted).
struct SoftState {
  uint64_t lead = kNone;
  StateType raft_state = StateType::kFollower;
  bool operator==(const SoftState& o) const {
    return lead == o.lead && raft_state == o.raft_state;
  }
  bool operator!=(const SoftState& o) const { return !(*this == o); }
};

// The answer to a ReadIndex request: once the application has applied up to
// `index`, a read of its state machine is linearizable.
struct ReadState {
  uint64_t index = 0;
  std::string request_ctx;
};

// "proposal dropped" is kUnavailable with this message prefix.
Status ProposalDroppedError(const std::string& why);
bool IsProposalDropped(const Status& s);

class Raft {
 public:
  // Storage must outlive the Raft. Crashes on an invalid config or an
  // unreadable storage (callers validate first; see RawNode::Create).
  Raft(const Config& c, Storage* storage);

  Status Step(raftpb::Message m);
  void Tick();

  SoftState GetSoftState() const { return {lead, state}; }
  raftpb::HardState GetHardState() const;
  bool HasLeader() const { return lead != kNone; }
  // May this node campaign (a voter, without a pending snapshot)?
  bool Promotable() const;
  // Not in its own config but with a non-empty one: may campaign, under a
  // stricter pre-vote (see Hup()).
  bool RemovedButMayCampaign() const;

  void BecomeFollower(uint64_t term, uint64_t lead);
  void BecomeCandidate();
  void BecomePreCandidate();
  void BecomeLeader();

  // Applies a committed conf change; returns the new ConfState.
  raftpb::ConfState ApplyConfChange(const raftpb::ConfChangeV2& cc);
  // Called by RawNode::Advance with the batch the application applied.
  void AdvanceApplied(uint64_t new_applied, uint64_t applied_payload_bytes);

  // Test hooks.
  void ResetRandomizedElectionTimeout();
  int randomized_election_timeout() const {
    return randomized_election_timeout_;
  }
  void set_randomized_election_timeout(int t) {
    randomized_election_timeout_ = t;
  }
  bool PastElectionTimeout() const {
    return election_elapsed >= randomized_election_timeout_;
  }
  std::vector<raftpb::Message> TakeMessages() {
    std::vector<raftpb::Message> out;
    out.swap(msgs);
    return out;
  }

  // ---- state (public for the RawNode and tests, as in etcd's raft) ----
  uint64_t id;
  uint64_t term = 0;
  uint64_t vote = kNone;
  std::vector<ReadState> read_states;
  RaftLog raft_log;
  uint64_t max_msg_size;
  uint64_t max_uncommitted_size;
  ProgressTracker prs;
  StateType state = StateType::kFollower;
  bool is_learner = false;
  std::vector<raftpb::Message> msgs;
  uint64_t lead = kNone;
  // The leadership transfer target, or kNone.
  uint64_t lead_transferee = kNone;
  // Only one conf change may be pending (in the log, unapplied) at a time;
  // proposals of another are refused while applied < pending_conf_index.
  uint64_t pending_conf_index = 0;
  // Read requests received before this leader committed an entry of its
  // term: answered once it has (thesis §6.4 step 1).
  std::vector<raftpb::Message> pending_read_index_messages;
  // Payload bytes of uncommitted entries in the log (leader only).
  uint64_t uncommitted_size = 0;
  ReadOnly read_only;
  // Ticks since the last election timeout reset (follower/candidate) or
  // since the last CheckQuorum round (leader).
  int election_elapsed = 0;
  int heartbeat_elapsed = 0;
  bool check_quorum;
  bool pre_vote;
  int heartbeat_timeout;
  int election_timeout;
  bool disable_proposal_forwarding;
  bool step_down_on_removal;

 private:
  enum class CampaignType { kPreElection, kElection, kTransfer };

  void Send(raftpb::Message m);
  void SendAppend(uint64_t to) { MaybeSendAppend(to, true); }
  bool MaybeSendAppend(uint64_t to, bool send_if_empty);
  void SendHeartbeat(uint64_t to, const std::string& ctx);
  void BcastAppend();
  void BcastHeartbeat();
  void BcastHeartbeatWithCtx(const std::string& ctx);
  void SendTimeoutNow(uint64_t to);
  bool MaybeCommit();
  void Reset(uint64_t term);
  bool AppendEntries(raftpb::Entry* first, raftpb::Entry* last);
  bool IncreaseUncommittedSize(const raftpb::Entry* first,
                               const raftpb::Entry* last);
  void TickElection();
  void TickHeartbeat();
  void Hup(CampaignType t);
  void Campaign(CampaignType t);
  VoteResult Poll(uint64_t id, raftpb::MessageType t, bool granted);
  bool HasUnappliedConfChanges() const;
  void LoadState(const raftpb::HardState& hs);
  raftpb::ConfState SwitchToConfig(ConfigAndProgress cp);
  bool Restore(const raftpb::Snapshot& s);
  void AbortLeaderTransfer() { lead_transferee = kNone; }
  bool IsVoter(uint64_t node) const;
  // A leader that is no longer a voter transfers leadership away.
  void HandOffLeadership();
  bool CommittedEntryInCurrentTerm() const;
  raftpb::Message ResponseToReadIndexReq(const raftpb::Message& req,
                                         uint64_t read_index);
  void SendReadIndexResponse(const raftpb::Message& m);
  void ReleasePendingReadIndexMessages();

  Status StepLeader(raftpb::Message& m);
  Status StepCandidate(raftpb::Message& m);
  Status StepFollower(raftpb::Message& m);
  void HandleAppendEntries(raftpb::Message& m);
  void HandleHeartbeat(const raftpb::Message& m);
  void HandleSnapshot(const raftpb::Message& m);

  int randomized_election_timeout_ = 0;
  Prng prng_;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_RAFT_H_
