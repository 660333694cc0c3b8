// Sweeps seeds of the cluster simulation: 500 seeds for 3 nodes and 500 for
// 5 nodes by default, split into shards so ctest can run them in parallel.
// KPLANE_SIM_SEEDS overrides the seed count per cluster size and
// KPLANE_SIM_STEPS the steps per run, and KPLANE_SIM_SEED=<seed> runs that
// one seed (in the first shard of each size). A failure prints its seed and
// replay command.
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/strings.h"
#include "gtest/gtest.h"
#include "tests/sim/cluster.h"

namespace kplane::sim {
namespace {

constexpr int kShards = 10;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

struct Shard {
  int nodes;
  int index;
};

class RaftSimTest : public ::testing::TestWithParam<Shard> {};

TEST_P(RaftSimTest, SeedsPass) {
  SetMinLogLevel(LogLevel::kWarning);
  const Shard& shard = GetParam();
  int seeds = EnvInt("KPLANE_SIM_SEEDS", 500);
  int per_shard = (seeds + kShards - 1) / kShards;
  SimOptions o;
  o.nodes = shard.nodes;
  o.steps = EnvInt("KPLANE_SIM_STEPS", o.steps);
  std::vector<uint64_t> shard_seeds;
  if (const char* one = std::getenv("KPLANE_SIM_SEED"); one != nullptr) {
    std::optional<uint64_t> seed = ParseUint64(one);
    ASSERT_TRUE(seed.has_value()) << "KPLANE_SIM_SEED=" << one;
    if (shard.index == 0) shard_seeds.push_back(*seed);
  } else {
    for (int i = 0; i < per_shard; ++i) {
      int seed = shard.index * per_shard + i + 1;
      if (seed > seeds) break;
      shard_seeds.push_back(seed);
    }
  }
  SimStats total;
  int runs = 0;
  for (uint64_t seed : shard_seeds) {
    o.seed = seed;
    SimResult r = RunSimulation(o);
    ++runs;
    ASSERT_TRUE(r.ok) << "seed " << seed << " failed: " << r.failure
                      << "\nreplay: KPLANE_SIM_SEED=" << seed
                      << " (this test) or " << ReplayCommand(o) << " --verbose";
    total.ops_ok += r.stats.ops_ok;
    total.leaders += r.stats.leaders;
    total.crashes += r.stats.crashes;
    total.conf_changes_applied += r.stats.conf_changes_applied;
    total.snapshots_sent += r.stats.snapshots_sent;
    total.reads_via_index += r.stats.reads_via_index;
  }
  // The runs must actually exercise the system.
  if (runs > 0) {
    EXPECT_GT(total.ops_ok, static_cast<uint64_t>(runs) * 50);
    EXPECT_GT(total.leaders, static_cast<uint64_t>(runs));
  }
  std::cout << runs << " runs: ops_ok=" << total.ops_ok
            << " reads_via_index=" << total.reads_via_index
            << " leaders=" << total.leaders << " crashes=" << total.crashes
            << " conf_changes=" << total.conf_changes_applied
            << " snapshots_sent=" << total.snapshots_sent << "\n";
}

std::vector<Shard> AllShards() {
  std::vector<Shard> out;
  for (int nodes : {3, 5}) {
    for (int i = 0; i < kShards; ++i) out.push_back(Shard{nodes, i});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Seeds, RaftSimTest, ::testing::ValuesIn(AllShards()),
                         [](const ::testing::TestParamInfo<Shard>& info) {
                           return "nodes" + std::to_string(info.param.nodes) +
                                  "_shard" + std::to_string(info.param.index);
                         });

}  // namespace
}  // namespace kplane::sim
