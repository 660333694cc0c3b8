#include "tests/sim/fault_network.h"

namespace kplane::sim {

FaultNetwork::SendResult FaultNetwork::Send(raftpb::Message m, uint64_t now) {
  if (Blocked(m.from(), m.to())) return SendResult::kBlocked;
  if (prng_.Chance(config_.drop)) return SendResult::kLost;
  int copies = prng_.Chance(config_.duplicate) ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    uint64_t span = config_.max_delay - config_.min_delay + 1;
    uint64_t due = now + config_.min_delay + prng_.Uniform(span);
    queue_.emplace(std::make_pair(due, seq_++), m);
  }
  return SendResult::kQueued;
}

std::vector<raftpb::Message> FaultNetwork::TakeDue(uint64_t now) {
  std::vector<raftpb::Message> out;
  while (!queue_.empty() && queue_.begin()->first.first <= now) {
    auto node = queue_.extract(queue_.begin());
    raftpb::Message& m = node.mapped();
    if (Blocked(m.from(), m.to())) continue;
    out.push_back(std::move(m));
  }
  // Fisher-Yates: reordering among messages due together.
  for (size_t i = out.size(); i > 1; --i) {
    size_t j = prng_.Uniform(i);
    std::swap(out[i - 1], out[j]);
  }
  return out;
}

void FaultNetwork::Partition(const std::vector<std::set<uint64_t>>& groups) {
  for (size_t a = 0; a < groups.size(); ++a) {
    for (size_t b = 0; b < groups.size(); ++b) {
      if (a == b) continue;
      for (uint64_t x : groups[a]) {
        for (uint64_t y : groups[b]) Block(x, y);
      }
    }
  }
}

void FaultNetwork::Isolate(uint64_t id, const std::set<uint64_t>& all) {
  for (uint64_t other : all) {
    if (other == id) continue;
    Block(id, other);
    Block(other, id);
  }
}

}  // namespace kplane::sim
