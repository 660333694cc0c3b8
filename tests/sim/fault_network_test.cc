#include "tests/sim/fault_network.h"

#include "gtest/gtest.h"

namespace kplane::sim {
namespace {

raftpb::Message M(uint64_t from, uint64_t to, uint64_t index = 0) {
  raftpb::Message m;
  m.set_from(from);
  m.set_to(to);
  m.set_index(index);
  return m;
}

TEST(FaultNetworkTest, DeliversAfterDelay) {
  FaultNetwork net(1, FaultConfig{0, 0, 2, 2});
  ASSERT_EQ(net.Send(M(1, 2), 10), FaultNetwork::SendResult::kQueued);
  EXPECT_TRUE(net.TakeDue(11).empty());
  EXPECT_EQ(net.TakeDue(12).size(), 1u);
  EXPECT_EQ(net.InFlight(), 0u);
}

TEST(FaultNetworkTest, BlockedLinksAreOneWay) {
  FaultNetwork net(1, FaultConfig{});
  net.Block(1, 2);
  EXPECT_EQ(net.Send(M(1, 2), 0), FaultNetwork::SendResult::kBlocked);
  EXPECT_EQ(net.Send(M(2, 1), 0), FaultNetwork::SendResult::kQueued);
  EXPECT_EQ(net.TakeDue(1).size(), 1u);
}

TEST(FaultNetworkTest, PartitionCutsInFlightMessages) {
  FaultNetwork net(1, FaultConfig{0, 0, 3, 3});
  ASSERT_EQ(net.Send(M(1, 2), 0), FaultNetwork::SendResult::kQueued);
  net.Partition({{1}, {2, 3}});
  EXPECT_TRUE(net.TakeDue(3).empty());
  EXPECT_TRUE(net.Blocked(2, 1));
  EXPECT_FALSE(net.Blocked(2, 3));
  net.Heal();
  EXPECT_TRUE(net.Healed());
}

TEST(FaultNetworkTest, LossDuplicationAndReorderingAreSeeded) {
  auto run = [](uint64_t seed) {
    FaultNetwork net(seed, FaultConfig{0.2, 0.2, 1, 4});
    for (uint64_t i = 0; i < 200; ++i) (void)net.Send(M(1, 2, i), 0);
    std::vector<uint64_t> order;
    for (uint64_t t = 1; t <= 4; ++t) {
      for (const auto& m : net.TakeDue(t)) order.push_back(m.index());
    }
    return order;
  };
  auto a = run(7);
  EXPECT_EQ(a, run(7));  // same seed, same behaviour
  EXPECT_NE(a, run(8));
  // Some lost, some duplicated, some out of order.
  std::map<uint64_t, int> counts;
  bool reordered = false;
  for (size_t i = 0; i < a.size(); ++i) {
    ++counts[a[i]];
    if (i > 0 && a[i] < a[i - 1]) reordered = true;
  }
  EXPECT_LT(counts.size(), 200u);
  bool duplicated = false;
  for (auto& [idx, n] : counts) duplicated |= n > 1;
  EXPECT_TRUE(duplicated);
  EXPECT_TRUE(reordered);
}

}  // namespace
}  // namespace kplane::sim
