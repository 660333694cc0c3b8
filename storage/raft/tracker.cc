#include "storage/raft/tracker.h"

#include <algorithm>
#include <sstream>

#include "base/logging.h"

namespace kplane::raft {

// ---- Inflights ----

void Inflights::Add(uint64_t index, uint64_t bytes) {
  CHECK(count_ < size_) << "cannot add into a full inflights";
  size_t next = start_ + count_;
  if (next >= size_) next -= size_;
  if (next >= buffer_.size()) {
    // Grow lazily: most followers never fill the window.
    size_t new_size = std::min(size_, std::max<size_t>(buffer_.size() * 2, 4));
    buffer_.resize(new_size);
  }
  buffer_[next] = Flight{index, bytes};
  ++count_;
  bytes_ += bytes;
}

void Inflights::FreeLE(uint64_t to) {
  if (count_ == 0 || to < buffer_[start_].index) return;
  size_t idx = start_;
  size_t i = 0;
  uint64_t freed = 0;
  for (; i < count_; ++i) {
    if (to < buffer_[idx].index) break;
    freed += buffer_[idx].bytes;
    if (++idx >= size_) idx -= size_;
  }
  count_ -= i;
  bytes_ -= freed;
  start_ = idx;
  if (count_ == 0) start_ = 0;
}

void Inflights::Reset() {
  start_ = 0;
  count_ = 0;
  bytes_ = 0;
}

// ---- Progress ----

const char* ProgressStateName(ProgressState s) {
  switch (s) {
    case ProgressState::kProbe:
      return "StateProbe";
    case ProgressState::kReplicate:
      return "StateReplicate";
    case ProgressState::kSnapshot:
      return "StateSnapshot";
  }
  return "?";
}

void Progress::ResetState(ProgressState s) {
  msg_app_flow_paused = false;
  pending_snapshot = 0;
  state = s;
  inflights.Reset();
}

void Progress::BecomeProbe() {
  // After a snapshot the follower has at least the snapshot's entries.
  if (state == ProgressState::kSnapshot) {
    uint64_t pending = pending_snapshot;
    ResetState(ProgressState::kProbe);
    next = std::max(match + 1, pending + 1);
  } else {
    ResetState(ProgressState::kProbe);
    next = match + 1;
  }
}

void Progress::BecomeReplicate() {
  ResetState(ProgressState::kReplicate);
  next = match + 1;
}

void Progress::BecomeSnapshot(uint64_t snapshot_index) {
  ResetState(ProgressState::kSnapshot);
  pending_snapshot = snapshot_index;
}

void Progress::SentEntries(size_t entries, uint64_t bytes) {
  switch (state) {
    case ProgressState::kReplicate:
      if (entries > 0) {
        next += entries;
        inflights.Add(next - 1, bytes);
      }
      msg_app_flow_paused = inflights.Full();
      break;
    case ProgressState::kProbe:
      if (entries > 0) msg_app_flow_paused = true;
      break;
    case ProgressState::kSnapshot:
      LOG(FATAL) << "sending append in unhandled state " << DebugString();
  }
}

bool Progress::MaybeUpdate(uint64_t n) {
  bool updated = false;
  if (match < n) {
    match = n;
    updated = true;
    msg_app_flow_paused = false;
  }
  next = std::max(next, n + 1);
  return updated;
}

bool Progress::MaybeDecrTo(uint64_t rejected, uint64_t match_hint) {
  if (state == ProgressState::kReplicate) {
    // A rejection of an index already matched is stale.
    if (rejected <= match) return false;
    // Go back to the last known match and probe from there.
    next = match + 1;
    return true;
  }
  // In probe state only the last sent index (next-1) can be rejected.
  if (next - 1 != rejected) return false;
  next = std::max(std::min(rejected, match_hint + 1), match + 1);
  msg_app_flow_paused = false;
  return true;
}

bool Progress::IsPaused() const {
  switch (state) {
    case ProgressState::kProbe:
    case ProgressState::kReplicate:
      return msg_app_flow_paused;
    case ProgressState::kSnapshot:
      return true;
  }
  return true;
}

std::string Progress::DebugString() const {
  std::ostringstream os;
  os << ProgressStateName(state) << " match=" << match << " next=" << next;
  if (is_learner) os << " learner";
  if (IsPaused()) os << " paused";
  if (pending_snapshot > 0) os << " pendingSnap=" << pending_snapshot;
  if (!recent_active) os << " inactive";
  if (inflights.Count() > 0) {
    os << " inflight=" << inflights.Count();
    if (inflights.Full()) os << "[full]";
  }
  return os.str();
}

// ---- Quorums ----

uint64_t MajorityConfig::CommittedIndex(
    const std::function<uint64_t(uint64_t, bool*)>& acked) const {
  size_t n = ids_.size();
  if (n == 0) return UINT64_MAX;
  // Small configs are the norm: a stack array avoids an allocation.
  uint64_t stack[7];
  std::vector<uint64_t> heap;
  uint64_t* srt = stack;
  if (n > 7) {
    heap.resize(n);
    srt = heap.data();
  }
  size_t i = 0;
  for (uint64_t id : ids_) {
    bool found = false;
    uint64_t idx = acked(id, &found);
    srt[i++] = found ? idx : 0;
  }
  std::sort(srt, srt + n);
  // The smallest index acked by the largest-acking majority: with n voters,
  // the element at position n - (n/2 + 1) of the ascending order.
  return srt[n - (n / 2 + 1)];
}

VoteResult MajorityConfig::Vote(const std::map<uint64_t, bool>& votes) const {
  if (ids_.empty()) return VoteResult::kWon;
  size_t yes = 0, missing = 0;
  for (uint64_t id : ids_) {
    auto it = votes.find(id);
    if (it == votes.end()) {
      ++missing;
    } else if (it->second) {
      ++yes;
    }
  }
  size_t q = ids_.size() / 2 + 1;
  if (yes >= q) return VoteResult::kWon;
  if (yes + missing >= q) return VoteResult::kPending;
  return VoteResult::kLost;
}

std::string MajorityConfig::DebugString() const {
  std::string out = "(";
  bool first = true;
  for (uint64_t id : ids_) {
    if (!first) out += ' ';
    first = false;
    out += std::to_string(id);
  }
  return out + ")";
}

IdSet JointConfig::Ids() const {
  IdSet out = incoming.ids();
  out.insert(outgoing.ids().begin(), outgoing.ids().end());
  return out;
}

uint64_t JointConfig::CommittedIndex(
    const std::function<uint64_t(uint64_t, bool*)>& acked) const {
  return std::min(incoming.CommittedIndex(acked),
                  outgoing.CommittedIndex(acked));
}

VoteResult JointConfig::Vote(const std::map<uint64_t, bool>& votes) const {
  VoteResult r1 = incoming.Vote(votes);
  VoteResult r2 = outgoing.Vote(votes);
  if (r1 == r2) return r1;
  if (r1 == VoteResult::kLost || r2 == VoteResult::kLost) {
    return VoteResult::kLost;
  }
  return VoteResult::kPending;
}

std::string JointConfig::DebugString() const {
  std::string out = incoming.DebugString();
  if (!outgoing.empty()) out += "&&" + outgoing.DebugString();
  return out;
}

std::string TrackerConfig::DebugString() const {
  std::string out = "voters=" + voters.DebugString();
  if (!learners.empty()) {
    out += " learners=" + MajorityConfig(learners).DebugString();
  }
  if (!learners_next.empty()) {
    out += " learners_next=" + MajorityConfig(learners_next).DebugString();
  }
  if (auto_leave) out += " autoleave";
  return out;
}

// ---- ProgressTracker ----

raftpb::ConfState ProgressTracker::ConfState() const {
  raftpb::ConfState cs;
  for (uint64_t id : config.voters.incoming.ids()) cs.add_voters(id);
  for (uint64_t id : config.voters.outgoing.ids()) cs.add_voters_outgoing(id);
  for (uint64_t id : config.learners) cs.add_learners(id);
  for (uint64_t id : config.learners_next) cs.add_learners_next(id);
  cs.set_auto_leave(config.auto_leave);
  return cs;
}

uint64_t ProgressTracker::Committed() const {
  return config.voters.CommittedIndex([this](uint64_t id, bool* found) {
    auto it = progress.find(id);
    if (it == progress.end()) return uint64_t{0};
    *found = true;
    return it->second.match;
  });
}

void ProgressTracker::Visit(
    const std::function<void(uint64_t, Progress&)>& fn) {
  for (auto& [id, pr] : progress) fn(id, pr);
}

bool ProgressTracker::QuorumActive() const {
  std::map<uint64_t, bool> active;
  for (const auto& [id, pr] : progress) {
    if (pr.is_learner) continue;
    active[id] = pr.recent_active;
  }
  return config.voters.Vote(active) == VoteResult::kWon;
}

std::vector<uint64_t> ProgressTracker::VoterNodes() const {
  IdSet ids = config.voters.Ids();
  return {ids.begin(), ids.end()};
}

std::vector<uint64_t> ProgressTracker::LearnerNodes() const {
  return {config.learners.begin(), config.learners.end()};
}

void ProgressTracker::RecordVote(uint64_t id, bool granted) {
  votes.emplace(id, granted);
}

VoteResult ProgressTracker::TallyVotes(int* granted, int* rejected) const {
  *granted = 0;
  *rejected = 0;
  for (const auto& [id, pr] : progress) {
    if (pr.is_learner) continue;
    auto it = votes.find(id);
    if (it == votes.end()) continue;
    if (it->second) {
      ++*granted;
    } else {
      ++*rejected;
    }
  }
  return config.voters.Vote(votes);
}

}  // namespace kplane::raft
