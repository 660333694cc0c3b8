// FaultNetwork: a deterministic, seeded in-memory network for raft messages
// that loses, duplicates, delays and reorders them, and blocks links to
// model partitions (symmetric or one-way). Time is the caller's step count.
//
// A message sent at step t over an open link is (unless lost) queued for
// delivery at t + d, d uniform in [min_delay, max_delay]; messages due at
// the same step come out in a random order. A link blocked at send time or
// at delivery time loses the message (partitions cut in-flight traffic).
//
// Example: Block(1, 2) makes 1 -> 2 silent while 2 -> 1 still works (an
// asymmetric partition); Partition({{1}, {2, 3}}) isolates node 1 both ways.
//
// Thread-safety: none. No errors.
#ifndef KPLANE_TESTS_SIM_FAULT_NETWORK_H_
#define KPLANE_TESTS_SIM_FAULT_NETWORK_H_

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "schemas/raft.pb.h"
#include "storage/raft/util.h"

namespace kplane::sim {

struct FaultConfig {
  double drop = 0.0;       // probability a message is lost
  double duplicate = 0.0;  // probability a message is delivered twice
  int min_delay = 1;       // steps
  int max_delay = 1;       // steps
};

class FaultNetwork {
 public:
  enum class SendResult { kQueued, kLost, kBlocked };

  FaultNetwork(uint64_t seed, FaultConfig config)
      : prng_(seed), config_(config) {}

  SendResult Send(raftpb::Message m, uint64_t now);
  // Removes and returns the messages due at or before `now`, shuffled,
  // without those whose link is blocked now.
  std::vector<raftpb::Message> TakeDue(uint64_t now);

  void Block(uint64_t from, uint64_t to) { blocked_.insert({from, to}); }
  void Unblock(uint64_t from, uint64_t to) { blocked_.erase({from, to}); }
  bool Blocked(uint64_t from, uint64_t to) const {
    return blocked_.count({from, to}) > 0;
  }
  // Blocks every link between different groups, both ways.
  void Partition(const std::vector<std::set<uint64_t>>& groups);
  void Isolate(uint64_t id, const std::set<uint64_t>& all);
  void Heal() { blocked_.clear(); }
  bool Healed() const { return blocked_.empty(); }
  size_t InFlight() const { return queue_.size(); }
  const std::set<std::pair<uint64_t, uint64_t>>& blocked() const {
    return blocked_;
  }

  void set_config(const FaultConfig& c) { config_ = c; }
  const FaultConfig& config() const { return config_; }

 private:
  raft::Prng prng_;
  FaultConfig config_;
  std::set<std::pair<uint64_t, uint64_t>> blocked_;
  // (due step, sequence) -> message; the sequence keeps equal steps stable.
  std::map<std::pair<uint64_t, uint64_t>, raftpb::Message> queue_;
  uint64_t seq_ = 0;
};

}  // namespace kplane::sim

#endif  // KPLANE_TESTS_SIM_FAULT_NETWORK_H_
