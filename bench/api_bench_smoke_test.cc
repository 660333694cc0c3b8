// Tiny runs of the apiserver workloads (bench/api_workloads.h,
// bench/api_watch_bench.h, `kpctl bench api`) against an in-process
// apiserver over an embedded store: each workload does what it says to
// the server's objects, not only that it reports numbers.
#include <gtest/gtest.h>

#include "apiserver/test_server.h"
#include "bench/api_bench_command.h"
#include "bench/api_watch_bench.h"
#include "bench/api_workloads.h"

namespace kplane::bench {
namespace {

using apiserver::testing::TestServer;

class ApiBenchSmokeTest : public ::testing::Test {
 protected:
  Endpoint ep() const { return {"127.0.0.1", server_.port()}; }

  LoadResult Run(const ApiWorkload& w, int clients, int64_t total) {
    LoadOptions o;
    o.endpoints = {ep()};
    o.clients = clients;
    o.max_operations = total;
    o.time_limit = seconds(20);
    o.make_script = [&w](int i) { return NewApiScript(w, i); };
    auto r = RunLoad(o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(*r) : LoadResult();
  }

  TestServer server_;
};

// A counted run may finish a few operations past its count: those of
// other clients that complete in the same event-loop turn.
#define EXPECT_COUNT(ops, n, clients)  \
  do {                                 \
    EXPECT_GE(ops, n);                 \
    EXPECT_LE(ops, (n) + (clients)-1); \
  } while (0)

TEST_F(ApiBenchSmokeTest, CreateGetUpdateListDelete) {
  ApiWorkload w;
  w.ns = "smoke";
  w.run = "created";
  ASSERT_TRUE(EnsureNamespace(ep(), w.ns).ok());

  w.kind = "create";
  LoadResult r = Run(w, 2, 12);
  EXPECT_COUNT(r.operations, 12, 2);
  EXPECT_EQ(r.errors, 0) << (r.sample_errors.empty() ? "" : r.sample_errors[0]);
  EXPECT_EQ(r.latency.count(), r.operations);
  auto names = ListPodNames(ep(), w.ns);
  ASSERT_TRUE(names.ok()) << names.status();
  // Creates still in flight when the count was reached complete too.
  EXPECT_GE(static_cast<int64_t>(names->size()), r.operations);
  EXPECT_LE(names->size(), 13u);

  // A fixture of 6 pods; a repeated fill keeps them (409 counts as done).
  auto filled = FillPods(ep(), w.ns, "fx", 6, 4);
  ASSERT_TRUE(filled.ok()) << filled.status();
  ASSERT_TRUE(FillPods(ep(), w.ns, "fx", 6, 4).ok());
  w.fixture = "fx";
  w.pods = 6;

  w.kind = "get";
  r = Run(w, 3, 15);
  EXPECT_COUNT(r.operations, 15, 3);
  EXPECT_EQ(r.errors, 0);

  // Three clients own two pods each: no update conflicts (a 409 would be
  // an error), and every pod was updated (its annotation moved off "0").
  w.kind = "update";
  w.clients = 3;
  r = Run(w, 3, 60);
  EXPECT_COUNT(r.operations, 60, 3);
  EXPECT_EQ(r.errors, 0) << (r.sample_errors.empty() ? "" : r.sample_errors[0]);
  for (int i = 0; i < 6; ++i) {
    auto pod =
        server_.Get("/api/v1/namespaces/smoke/pods/" + FixturePodName("fx", i));
    ASSERT_EQ(pod.code, 200);
    const std::string gen =
        pod.Str({"metadata", "annotations", "kplane.io/bench"});
    EXPECT_FALSE(gen.empty() || gen == "0") << FixturePodName("fx", i);
  }

  // Lists: the cache in one answer, the store in pages of 5. A create that
  // was in flight when the create run reached its count may have landed
  // after `names` was read, so count the pods again from the store.
  names = ListPodNames(ep(), w.ns);
  ASSERT_TRUE(names.ok()) << names.status();
  const int64_t pods = static_cast<int64_t>(names->size());
  ASSERT_GE(pods, 12 + 6);  // the created ones and the fixture
  for (const char* query : {"resourceVersion=0", "limit=5", ""}) {
    w.kind = "list";
    w.list_query = query;
    w.list_stats = std::make_shared<ApiListStats>();
    r = Run(w, 2, 4);
    EXPECT_COUNT(r.operations, 4, 2);
    EXPECT_EQ(r.errors, 0) << query;
    EXPECT_EQ(w.list_stats->items.load(), pods) << query;
    const int64_t pages = std::string(query) == "limit=5" ? (pods + 4) / 5 : 1;
    EXPECT_EQ(w.list_stats->pages.load(), pages) << query;
    EXPECT_GT(w.list_stats->bytes.load(), 18 * 200) << query;
  }

  // Delete every pod, each name once.
  names = ListPodNames(ep(), w.ns);
  ASSERT_TRUE(names.ok());
  const int64_t all = static_cast<int64_t>(names->size());
  w.kind = "delete";
  w.delete_names = std::make_shared<const std::vector<std::string>>(*names);
  w.delete_next = std::make_shared<std::atomic<int64_t>>(0);
  r = Run(w, 4, static_cast<int64_t>(names->size()));
  EXPECT_EQ(r.operations, all);
  EXPECT_EQ(r.errors, 0);
  names = ListPodNames(ep(), w.ns);
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
}

// A run whose clients run out of work ends without reaching its count.
TEST_F(ApiBenchSmokeTest, RunEndsWhenEveryClientIsIdle) {
  ApiWorkload w;
  w.kind = "delete";
  w.ns = "empty";
  ASSERT_TRUE(EnsureNamespace(ep(), w.ns).ok());
  w.delete_names = std::make_shared<const std::vector<std::string>>();
  w.delete_next = std::make_shared<std::atomic<int64_t>>(0);
  LoadOptions o;
  o.endpoints = {ep()};
  o.clients = 1;
  o.max_operations = 5;
  o.time_limit = seconds(60);
  o.make_script = [&w](int i) { return NewApiScript(w, i); };
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->operations, 0);
  EXPECT_EQ(r->errors, 0);
  EXPECT_TRUE(r->all_idle);  // ended by running out of work, not on time
}

TEST_F(ApiBenchSmokeTest, WatchDeliversEveryCreateToEveryWatcher) {
  ApiWatchBenchOptions o;
  o.server = ep();
  o.ns = "watchsmoke";
  o.watchers = 5;
  o.creates = 4;
  o.creates_per_second = 0;
  o.drain_timeout = seconds(20);
  auto r = RunApiWatchBench(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->expected_events, 20);
  EXPECT_EQ(r->delivered_events, 20);
  EXPECT_EQ(r->from_send.count(), 20);
  EXPECT_EQ(r->create_latency.count(), 4);
  EXPECT_GE(r->from_send.min(), 0);
}

// The command end to end: flags, the fill, a RESULT line per client count.
TEST_F(ApiBenchSmokeTest, CommandPrintsResultLines) {
  const std::string url = "http://127.0.0.1:" + std::to_string(server_.port());
  ::testing::internal::CaptureStdout();
  int code = RunBenchCommand({"api", "get", "--server", url, "--namespace",
                              "cmd", "--fill", "4", "--pods", "4", "--clients",
                              "1,2", "--total", "6", "--label", "t"});
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("RESULT label=t workload=fill pods=4"), std::string::npos)
      << out;
  EXPECT_NE(out.find("RESULT label=t workload=get clients=1 "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("RESULT label=t workload=get clients=2 "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("errors=0 operations=6 "), std::string::npos) << out;
  EXPECT_EQ(RunBenchCommand({"api", "frobnicate", "--server", url}), 2);
}

}  // namespace
}  // namespace kplane::bench
