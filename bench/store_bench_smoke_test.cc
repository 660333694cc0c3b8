// Smoke runs of the store benchmarks with tiny numbers against real
// processes: a 3-member `kplane store` (when the build tree has the binary)
// and Debian's etcd 3.4, so the tool that produces docs/performance.md is
// known to work on both. The figures themselves are not asserted (timing is
// for scripts/bench, not tests); what is asserted is that every operation
// succeeded, every watch event arrived and the failover found a new leader.
#include <gtest/gtest.h>

#include "bench/failover.h"
#include "bench/store_workloads.h"
#include "bench/watch_bench.h"
#include "storage/client/local_cluster.h"

namespace kplane::bench {
namespace {

using storage::LocalCluster;
using storage::StoreKind;

class StoreBenchSmokeTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    if (GetParam() == StoreKind::kKplane &&
        storage::FindKplaneBinary().empty()) {
      GTEST_SKIP() << "no kplane binary in the build tree";
    }
    auto c = LocalCluster::Start({.kind = GetParam(), .members = 3});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    std::string list;
    for (const auto& u : cluster_->client_urls()) {
      list += (list.empty() ? "" : ",") + u;
    }
    auto eps = ParseEndpoints(list);
    ASSERT_TRUE(eps.ok()) << eps.status();
    endpoints_ = *eps;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::vector<Endpoint> endpoints_;
};

TEST_P(StoreBenchSmokeTest, PutRangeCasCompleteWithoutErrors) {
  ASSERT_TRUE(FillStore(endpoints_, "/bench/r/", 50, 64, 4).ok());
  for (const char* kind : {"put", "range", "cas"}) {
    StoreWorkload w;
    w.kind = kind;
    w.prefix = "/bench/r/";
    w.key_space = 50;
    w.value_size = 64;
    w.range_prefix = w.kind == "range";
    LoadOptions o;
    o.endpoints = endpoints_;
    o.clients = 4;
    o.max_operations = 40;
    o.make_script = [&](int i) { return NewStoreScript(w, i); };
    auto r = RunLoad(o);
    ASSERT_TRUE(r.ok()) << kind << ": " << r.status();
    EXPECT_EQ(r->errors, 0)
        << kind << ": "
        << (r->sample_errors.empty() ? "" : r->sample_errors[0]);
    EXPECT_GE(r->operations, 40) << kind;
    EXPECT_EQ(r->latency.count(), r->operations) << kind;
  }
}

TEST_P(StoreBenchSmokeTest, WatchDeliversEveryEventToEveryWatcher) {
  WatchBenchOptions o;
  o.endpoints = endpoints_;
  o.watchers = 12;
  // One watcher per stream: etcd's gateway loses creates sent after its
  // first answer on a stream (bench/watch_bench.h).
  o.streams = 12;
  o.puts = 20;
  o.writers = 3;  // 7, 7 and 6 puts, every one matched to its events
  o.puts_per_second = 0;
  auto r = RunWatchBench(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->expected_events, 240);
  EXPECT_EQ(r->delivered_events, 240);
  EXPECT_EQ(r->from_send.count(), 240);
  EXPECT_EQ(r->put_latency.count(), 20);
}

TEST_P(StoreBenchSmokeTest, FailoverKillsTheLeaderAndWritesAgain) {
  FailoverOptions o;
  o.endpoints = endpoints_;
  for (int i = 0; i < cluster_->size(); ++i) o.pids.push_back(cluster_->pid(i));
  o.kill_after = milliseconds(300);
  auto leader = cluster_->LeaderIndex();
  ASSERT_TRUE(leader.ok()) << leader.status();
  auto r = RunFailover(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->killed_endpoint, *leader);
  EXPECT_FALSE(cluster_->running(*leader));
  EXPECT_GT(r->kill_to_first_write_ms, 0);
  auto new_leader = cluster_->LeaderIndex();
  ASSERT_TRUE(new_leader.ok()) << new_leader.status();
  EXPECT_NE(*new_leader, *leader);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreBenchSmokeTest,
                         ::testing::Values(StoreKind::kKplane,
                                           StoreKind::kEtcd),
                         [](const auto& info) {
                           return info.param == StoreKind::kKplane
                                      ? std::string("kplane")
                                      : std::string("etcd");
                         });

}  // namespace
}  // namespace kplane::bench
