// Configuration changes for the raft core (internal): computes the next
// TrackerConfig and ProgressMap from the current ones and a batch of
// ConfChangeSingle, without mutating the inputs.
//
// Two protocols:
//   Simple:     at most one voter added or removed (learners freely). Safe
//               because any majority of the old and the new config overlap.
//   EnterJoint: any batch; the new voters become the incoming config and the
//               old ones stay as the outgoing config, so decisions need a
//               majority of both (Raft §6, joint consensus). LeaveJoint then
//               drops the outgoing half.
//
// Example: voters (1 2 3). EnterJoint(add 4, remove 1) gives voters
// (2 3 4)&&(1 2 3); commits and elections need majorities in both. After
// LeaveJoint: voters (2 3 4), and 1's progress is dropped.
//
// Errors: kInvalidArgument for a change that is not allowed (entering a
// joint config twice, removing every voter, more than one voter change in a
// simple change, ...). Not thread-safe; pure functions of their inputs.
#ifndef KPLANE_STORAGE_RAFT_CONFCHANGE_H_
#define KPLANE_STORAGE_RAFT_CONFCHANGE_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "storage/raft/tracker.h"

namespace kplane::raft {

struct ConfigAndProgress {
  TrackerConfig config;
  ProgressMap progress;
};

using ConfChangeSingles = std::vector<raftpb::ConfChangeSingle>;

class Changer {
 public:
  // last_index: new peers start probing from it.
  Changer(const ProgressTracker& tracker, uint64_t last_index)
      : tracker_(tracker), last_index_(last_index) {}

  StatusOr<ConfigAndProgress> EnterJoint(bool auto_leave,
                                         const ConfChangeSingles& ccs) const;
  StatusOr<ConfigAndProgress> LeaveJoint() const;
  StatusOr<ConfigAndProgress> Simple(const ConfChangeSingles& ccs) const;

 private:
  StatusOr<ConfigAndProgress> CheckAndCopy() const;
  Status Apply(ConfigAndProgress& cp, const ConfChangeSingles& ccs) const;
  void MakeVoter(ConfigAndProgress& cp, uint64_t id) const;
  void MakeLearner(ConfigAndProgress& cp, uint64_t id) const;
  void Remove(ConfigAndProgress& cp, uint64_t id) const;
  void InitProgress(ConfigAndProgress& cp, uint64_t id, bool learner) const;

  const ProgressTracker& tracker_;
  uint64_t last_index_;
};

// Checks the structural invariants of a config and its progress map.
Status CheckInvariants(const TrackerConfig& cfg, const ProgressMap& prs);

// Rebuilds the config described by a ConfState (from a snapshot or the
// storage's initial state) on top of `tracker`'s empty config.
StatusOr<ConfigAndProgress> RestoreConfig(const ProgressTracker& tracker,
                                          uint64_t last_index,
                                          const raftpb::ConfState& cs);

// Whether two ConfStates describe the same configuration (order-free).
bool ConfStatesEquivalent(const raftpb::ConfState& a,
                          const raftpb::ConfState& b);

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_CONFCHANGE_H_
