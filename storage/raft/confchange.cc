#include "storage/raft/confchange.h"

#include <algorithm>

namespace kplane::raft {

namespace {

ConfChangeSingles SinglesOfType(
    raftpb::ConfChangeType type,
    const google::protobuf::RepeatedField<google::protobuf::uint64>& ids) {
  ConfChangeSingles out;
  for (uint64_t id : ids) {
    raftpb::ConfChangeSingle cc;
    cc.set_type(type);
    cc.set_node_id(id);
    out.push_back(cc);
  }
  return out;
}

bool Joint(const TrackerConfig& cfg) { return !cfg.voters.outgoing.empty(); }

}  // namespace

Status CheckInvariants(const TrackerConfig& cfg, const ProgressMap& prs) {
  // Every id in the config has a progress.
  for (uint64_t id : cfg.voters.Ids()) {
    if (!prs.count(id)) {
      return InvalidArgumentError("no progress for voter " +
                                  std::to_string(id));
    }
  }
  for (uint64_t id : cfg.learners) {
    if (!prs.count(id)) {
      return InvalidArgumentError("no progress for learner " +
                                  std::to_string(id));
    }
    if (cfg.voters.outgoing.contains(id) || cfg.voters.incoming.contains(id)) {
      return InvalidArgumentError(std::to_string(id) +
                                  " is in learners and voters");
    }
    if (!prs.at(id).is_learner) {
      return InvalidArgumentError(std::to_string(id) +
                                  " is in learners, but is not a learner");
    }
  }
  for (uint64_t id : cfg.learners_next) {
    if (!prs.count(id)) {
      return InvalidArgumentError("no progress for learner_next " +
                                  std::to_string(id));
    }
    // learners_next are voters of the outgoing config.
    if (!cfg.voters.outgoing.contains(id)) {
      return InvalidArgumentError(std::to_string(id) +
                                  " is in learners_next, but not outgoing");
    }
    if (prs.at(id).is_learner) {
      return InvalidArgumentError(
          std::to_string(id) + " is in learners_next, but already a learner");
    }
  }
  if (!Joint(cfg)) {
    if (!cfg.learners_next.empty()) {
      return InvalidArgumentError("learners_next must be empty when not joint");
    }
    if (cfg.auto_leave) {
      return InvalidArgumentError("auto_leave must be false when not joint");
    }
  }
  return Status::Ok();
}

StatusOr<ConfigAndProgress> Changer::CheckAndCopy() const {
  ConfigAndProgress cp{tracker_.config, tracker_.progress};
  RETURN_IF_ERROR(CheckInvariants(cp.config, cp.progress));
  return cp;
}

StatusOr<ConfigAndProgress> Changer::EnterJoint(
    bool auto_leave, const ConfChangeSingles& ccs) const {
  ASSIGN_OR_RETURN(ConfigAndProgress cp, CheckAndCopy());
  if (Joint(cp.config)) {
    return InvalidArgumentError("config is already joint");
  }
  if (cp.config.voters.incoming.empty()) {
    // A joint config with an empty outgoing half would mean nothing.
    return InvalidArgumentError("can't make a zero-voter config joint");
  }
  cp.config.voters.outgoing = cp.config.voters.incoming;
  RETURN_IF_ERROR(Apply(cp, ccs));
  cp.config.auto_leave = auto_leave;
  RETURN_IF_ERROR(CheckInvariants(cp.config, cp.progress));
  return cp;
}

StatusOr<ConfigAndProgress> Changer::LeaveJoint() const {
  ASSIGN_OR_RETURN(ConfigAndProgress cp, CheckAndCopy());
  if (!Joint(cp.config)) {
    return InvalidArgumentError("can't leave a non-joint config");
  }
  for (uint64_t id : cp.config.learners_next) {
    cp.config.learners.insert(id);
    cp.progress.at(id).is_learner = true;
  }
  cp.config.learners_next.clear();
  for (uint64_t id : cp.config.voters.outgoing.ids()) {
    bool is_voter = cp.config.voters.incoming.contains(id);
    bool is_learner = cp.config.learners.count(id) > 0;
    if (!is_voter && !is_learner) cp.progress.erase(id);
  }
  cp.config.voters.outgoing = MajorityConfig();
  cp.config.auto_leave = false;
  RETURN_IF_ERROR(CheckInvariants(cp.config, cp.progress));
  return cp;
}

StatusOr<ConfigAndProgress> Changer::Simple(
    const ConfChangeSingles& ccs) const {
  ASSIGN_OR_RETURN(ConfigAndProgress cp, CheckAndCopy());
  if (Joint(cp.config)) {
    return InvalidArgumentError(
        "can't apply simple config change in joint config");
  }
  RETURN_IF_ERROR(Apply(cp, ccs));
  // Count voters that changed (symmetric difference of incoming sets).
  const IdSet& before = tracker_.config.voters.incoming.ids();
  const IdSet& after = cp.config.voters.incoming.ids();
  size_t changed = 0;
  for (uint64_t id : before) changed += after.count(id) ? 0 : 1;
  for (uint64_t id : after) changed += before.count(id) ? 0 : 1;
  if (changed > 1) {
    return InvalidArgumentError(
        "more than one voter changed without entering joint config");
  }
  RETURN_IF_ERROR(CheckInvariants(cp.config, cp.progress));
  return cp;
}

Status Changer::Apply(ConfigAndProgress& cp,
                      const ConfChangeSingles& ccs) const {
  for (const auto& cc : ccs) {
    // Node id 0 means "no node": such changes are no-ops.
    if (cc.node_id() == 0) continue;
    switch (cc.type()) {
      case raftpb::ConfChangeAddNode:
        MakeVoter(cp, cc.node_id());
        break;
      case raftpb::ConfChangeAddLearnerNode:
        MakeLearner(cp, cc.node_id());
        break;
      case raftpb::ConfChangeRemoveNode:
        Remove(cp, cc.node_id());
        break;
      case raftpb::ConfChangeUpdateNode:
        break;
      default:
        return InvalidArgumentError("unexpected conf type " +
                                    std::to_string(cc.type()));
    }
  }
  if (cp.config.voters.incoming.empty()) {
    return InvalidArgumentError("removed all voters");
  }
  return Status::Ok();
}

void Changer::MakeVoter(ConfigAndProgress& cp, uint64_t id) const {
  auto it = cp.progress.find(id);
  if (it == cp.progress.end()) {
    InitProgress(cp, id, /*learner=*/false);
    return;
  }
  it->second.is_learner = false;
  cp.config.learners.erase(id);
  cp.config.learners_next.erase(id);
  cp.config.voters.incoming.ids().insert(id);
}

void Changer::MakeLearner(ConfigAndProgress& cp, uint64_t id) const {
  auto it = cp.progress.find(id);
  if (it == cp.progress.end()) {
    InitProgress(cp, id, /*learner=*/true);
    return;
  }
  if (it->second.is_learner) return;
  // Remove any voter role in the incoming config, but keep the progress.
  Progress saved = it->second;
  Remove(cp, id);
  cp.progress.insert_or_assign(id, saved);
  // A voter of the outgoing config can only become a learner once the joint
  // config is left; until then it is parked in learners_next.
  if (cp.config.voters.outgoing.contains(id)) {
    cp.config.learners_next.insert(id);
  } else {
    cp.progress.at(id).is_learner = true;
    cp.config.learners.insert(id);
  }
}

void Changer::Remove(ConfigAndProgress& cp, uint64_t id) const {
  if (!cp.progress.count(id)) return;
  cp.config.voters.incoming.ids().erase(id);
  cp.config.learners.erase(id);
  cp.config.learners_next.erase(id);
  // A voter of the outgoing config keeps its progress until LeaveJoint.
  if (!cp.config.voters.outgoing.contains(id)) cp.progress.erase(id);
}

void Changer::InitProgress(ConfigAndProgress& cp, uint64_t id,
                           bool learner) const {
  if (!learner) {
    cp.config.voters.incoming.ids().insert(id);
  } else {
    cp.config.learners.insert(id);
  }
  Progress pr(tracker_.max_inflight, tracker_.max_inflight_bytes);
  // Probe from the last index: the common case is a new peer that gets a
  // snapshot or catches up from there.
  pr.next = std::max<uint64_t>(last_index_, 1);
  pr.match = 0;
  pr.is_learner = learner;
  // Count a new peer as active so CheckQuorum does not depose the leader
  // before the peer had a chance to answer.
  pr.recent_active = true;
  cp.progress.insert_or_assign(id, std::move(pr));
}

StatusOr<ConfigAndProgress> RestoreConfig(const ProgressTracker& tracker,
                                          uint64_t last_index,
                                          const raftpb::ConfState& cs) {
  // Rebuild by replaying changes from an empty config: first the outgoing
  // config (if joint) as simple additions, then the incoming one, entering a
  // joint config if needed.
  ConfChangeSingles outgoing =
      SinglesOfType(raftpb::ConfChangeAddNode, cs.voters_outgoing());
  ConfChangeSingles incoming;
  {
    // Joint: remove the outgoing voters first (they stay in the outgoing
    // half), then add the incoming config.
    ConfChangeSingles removes =
        SinglesOfType(raftpb::ConfChangeRemoveNode, cs.voters_outgoing());
    ConfChangeSingles voters =
        SinglesOfType(raftpb::ConfChangeAddNode, cs.voters());
    ConfChangeSingles learners =
        SinglesOfType(raftpb::ConfChangeAddLearnerNode, cs.learners());
    ConfChangeSingles next =
        SinglesOfType(raftpb::ConfChangeAddLearnerNode, cs.learners_next());
    if (!outgoing.empty()) {
      incoming.insert(incoming.end(), removes.begin(), removes.end());
    }
    incoming.insert(incoming.end(), voters.begin(), voters.end());
    incoming.insert(incoming.end(), learners.begin(), learners.end());
    incoming.insert(incoming.end(), next.begin(), next.end());
  }

  ProgressTracker trk(tracker.max_inflight, tracker.max_inflight_bytes);
  auto step = [&](const StatusOr<ConfigAndProgress>& r) -> Status {
    if (!r.ok()) return r.status();
    trk.config = r->config;
    trk.progress = r->progress;
    return Status::Ok();
  };
  // An empty ConfState (a new node with nothing persisted) is valid.
  if (cs.voters_size() == 0 && cs.learners_size() == 0 &&
      cs.voters_outgoing_size() == 0) {
    return ConfigAndProgress{trk.config, trk.progress};
  }
  if (outgoing.empty()) {
    // One change at a time; each is a valid simple change.
    for (const auto& cc : incoming) {
      RETURN_IF_ERROR(step(Changer(trk, last_index).Simple({cc})));
    }
  } else {
    for (const auto& cc : outgoing) {
      RETURN_IF_ERROR(step(Changer(trk, last_index).Simple({cc})));
    }
    RETURN_IF_ERROR(
        step(Changer(trk, last_index).EnterJoint(cs.auto_leave(), incoming)));
  }
  return ConfigAndProgress{trk.config, trk.progress};
}

bool ConfStatesEquivalent(const raftpb::ConfState& a,
                          const raftpb::ConfState& b) {
  auto sorted = [](const auto& ids) {
    std::vector<uint64_t> v(ids.begin(), ids.end());
    std::sort(v.begin(), v.end());
    return v;
  };
  return sorted(a.voters()) == sorted(b.voters()) &&
         sorted(a.learners()) == sorted(b.learners()) &&
         sorted(a.voters_outgoing()) == sorted(b.voters_outgoing()) &&
         sorted(a.learners_next()) == sorted(b.learners_next()) &&
         a.auto_leave() == b.auto_leave();
}

}  // namespace kplane::raft
