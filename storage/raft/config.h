// Config: the knobs of one raft node (namespace kplane::raft).
//
// Ticks are the core's only notion of time: the caller calls RawNode::Tick()
// on a fixed interval (the server uses ~100 ms), and every timeout below is a
// number of ticks. Values are copied at RawNode creation.
//
// Errors: Validate() returns kInvalidArgument naming the bad field.
// Thread-safety: a plain value.
#ifndef KPLANE_STORAGE_RAFT_CONFIG_H_
#define KPLANE_STORAGE_RAFT_CONFIG_H_

#include <cstdint>

#include "base/status.h"
#include "storage/raft/read_only.h"

namespace kplane::raft {

struct Config {
  // This node's id; never 0.
  uint64_t id = 0;
  // Ticks without hearing from a leader before a follower campaigns. The
  // actual timeout is randomized in [election_tick, 2*election_tick).
  int election_tick = 10;
  // Ticks between leader heartbeats; must be < election_tick.
  int heartbeat_tick = 1;
  // The last index the state machine applied (on restart). Committed entries
  // at or below it are not handed out again.
  uint64_t applied = 0;
  // Bytes of entries per MsgApp (at least one entry is always sent).
  uint64_t max_size_per_msg = 1 << 20;
  // Bytes of committed entries per Ready (at least one entry).
  uint64_t max_committed_size_per_ready = 0;  // 0: same as max_size_per_msg
  // MsgApps in flight to one follower in replicate state (pipelining).
  int max_inflight_msgs = 256;
  // Bytes of entries in flight to one follower; 0 = unlimited.
  uint64_t max_inflight_bytes = 0;
  // Payload bytes of uncommitted entries a leader accepts before dropping
  // proposals; 0 = unlimited.
  uint64_t max_uncommitted_entries_size = 0;
  // A leader steps down when it has not heard from a quorum for an election
  // timeout, and followers ignore votes while they hear from a leader.
  bool check_quorum = false;
  // Candidates first run a pre-vote round that does not bump terms, so a
  // partitioned node rejoining cannot depose a healthy leader (thesis §9.6).
  bool pre_vote = false;
  ReadOnlyOption read_only_option = ReadOnlyOption::kSafe;
  // Followers drop proposals instead of forwarding them to the leader.
  bool disable_proposal_forwarding = false;
  // A leader removed from (or demoted in) the configuration hands its
  // leadership to the most up-to-date voter when the change is applied,
  // retrying every election timeout. Otherwise it keeps leading (without
  // accepting proposals) until the application stops it, as etcd does.
  bool step_down_on_removal = false;
  // Seeds the randomized election timeouts; mixed with id so that nodes of
  // one simulation draw different timeouts from a single seed.
  uint64_t random_seed = 0;

  Status Validate() const;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_CONFIG_H_
