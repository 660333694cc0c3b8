// `kpctl store bench --protocol grpc` (bench/grpc_store_bench.h) against a
// 1-member kplane store in this process (StoreServer, its gRPC front and
// JSON gateway on one loopback port, as `kplane store` serves them): a few
// hundred operations of every workload, checking the counts the tool
// reports against what the store saw (revisions, keys, events). The
// correctness of the tool, not its speed: no timing is asserted.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "bench/grpc_store_bench.h"
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/strings.h"
#include "bench/store_bench_command.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::bench {
namespace {

namespace pb = etcdserverpb;

class GrpcStoreBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start().ok());
    url_ = "http://" + member_.address();
    auto eps = ParseEndpoints(url_);
    ASSERT_TRUE(eps.ok()) << eps.status();
    endpoints_ = *eps;
    kv_ = pb::KV::NewStub(member_.Channel());
  }

  // The store's revision and the number of keys under `prefix`, read
  // independently of the tool.
  int64_t Revision() { return Count("/").first; }
  std::pair<int64_t, int64_t> Count(const std::string& prefix) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    pb::RangeRequest req;
    req.set_key(prefix);
    req.set_range_end(PrefixRangeEnd(prefix));
    req.set_count_only(true);
    pb::RangeResponse resp;
    grpc::Status st = kv_->Range(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return {resp.header().revision(), resp.count()};
  }

  GrpcLoadOptions Load(const std::string& kind, int clients, int64_t total) {
    GrpcLoadOptions o;
    o.endpoints = endpoints_;
    o.workload.kind = kind;
    o.workload.prefix = "/bench/g/";
    o.workload.value_size = 64;
    o.clients = clients;
    o.conns = 2;
    o.threads = 2;
    o.max_operations = total;
    return o;
  }

  storage::TestMember member_;
  std::string url_;
  std::vector<Endpoint> endpoints_;
  std::unique_ptr<pb::KV::Stub> kv_;
};

TEST_F(GrpcStoreBenchTest, PutMakesExactlyTheOperationsItReports) {
  int64_t before = Revision();
  GrpcLoadOptions o = Load("put", 8, 300);
  o.workload.key_space = 50;
  auto r = RunGrpcLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0) << (r->sample_errors.empty() ? ""
                                                       : r->sample_errors[0]);
  // The budget is taken when an operation starts: no overshoot.
  EXPECT_EQ(r->operations, 300);
  EXPECT_EQ(r->latency.count(), 300);
  // Every reported put is one revision in the store, and no more were made.
  EXPECT_EQ(Revision() - before, 300);
  EXPECT_LE(Count("/bench/g/").second, 50);
  EXPECT_GT(r->seconds, 0);
}

TEST_F(GrpcStoreBenchTest, FillThenRangeOneKeyAndPrefix) {
  ASSERT_TRUE(GrpcFillStore(endpoints_, "/bench/g/", 120, 32, 7, 3).ok());
  EXPECT_EQ(Count("/bench/g/").second, 120);
  for (bool prefix : {false, true}) {
    GrpcLoadOptions o = Load("range", 4, 200);
    o.workload.range_prefix = prefix;
    o.workload.serializable = !prefix;
    int64_t before = Revision();
    auto r = RunGrpcLoad(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->errors, 0) << prefix;
    EXPECT_EQ(r->operations, 200) << prefix;
    EXPECT_EQ(r->latency.count(), 200) << prefix;
    EXPECT_EQ(Revision(), before) << "a range wrote";
  }
}

TEST_F(GrpcStoreBenchTest, CasWritesOncePerOperationDespiteLostRaces) {
  int64_t before = Revision();
  // 6 clients on 3 keys: they lose races and retry within the operation.
  GrpcLoadOptions o = Load("cas", 6, 150);
  o.workload.key_space = 3;
  auto r = RunGrpcLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->errors, 0);
  EXPECT_EQ(r->operations, 150);
  EXPECT_EQ(Revision() - before, 150);
  EXPECT_EQ(Count("/bench/g/").second, 3);
}

TEST_F(GrpcStoreBenchTest, WatchDeliversEveryEventToEveryWatcher) {
  WatchBenchOptions o;
  o.endpoints = endpoints_;
  o.watchers = 300;  // 100 per stream
  o.streams = 3;
  o.puts = 20;
  o.writers = 2;
  o.puts_per_second = 0;
  o.prefix = "/bench/w/";
  int64_t before = Revision();
  auto r = RunGrpcWatchBench(o, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->put_errors, 0) << r->last_put_error;
  EXPECT_EQ(r->expected_events, 6000);
  EXPECT_EQ(r->delivered_events, 6000);
  EXPECT_EQ(r->from_send.count(), 6000);
  EXPECT_EQ(r->from_ack.count(), 6000);
  EXPECT_EQ(r->put_latency.count(), 20);
  EXPECT_EQ(Revision() - before, 20);
}

// A watcher the server refuses is answered created and canceled at once:
// it is not counted as created, and the run fails at once instead of
// waiting until create_timeout (an hour here: without the check the test
// times out). Auth is on and the tool has no user, so every create is
// denied.
TEST_F(GrpcStoreBenchTest, WatchFailsAtOnceWhenAWatcherIsRefused) {
  auto auth = pb::Auth::NewStub(member_.Channel());
  {
    grpc::ClientContext ctx;
    pb::AuthUserAddRequest req;
    req.set_name("root");
    req.set_password("pw");
    pb::AuthUserAddResponse resp;
    grpc::Status st = auth->UserAdd(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  {
    grpc::ClientContext ctx;
    pb::AuthUserGrantRoleRequest req;
    req.set_user("root");
    req.set_role("root");
    pb::AuthUserGrantRoleResponse resp;
    grpc::Status st = auth->UserGrantRole(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  {
    grpc::ClientContext ctx;
    pb::AuthEnableResponse resp;
    grpc::Status st = auth->AuthEnable(&ctx, {}, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  WatchBenchOptions o;
  o.endpoints = endpoints_;
  o.watchers = 4;
  o.streams = 2;
  o.puts = 2;
  o.create_timeout = hours(1);
  auto r = RunGrpcWatchBench(o, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("watchers created (a watcher was "
                                      "canceled: "),
            std::string::npos)
      << r.status();
}

TEST_F(GrpcStoreBenchTest, CommandPrintsTheJsonModesRowsWithCounts) {
  ::testing::internal::CaptureStdout();
  int rc = RunStoreBenchCommand({"--workload=put", "--protocol=grpc",
                                 "--endpoints=" + url_, "--clients=1,12",
                                 "--total=100", "--val-size=16", "--label=t"});
  std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("RESULT label=t protocol=grpc workload=put clients=1 "
                     "conns=1 operations=100 "),
            std::string::npos)
      << out;
  // 12 clients: one channel per 10 clients by default.
  EXPECT_NE(out.find("RESULT label=t protocol=grpc workload=put clients=12 "
                     "conns=2 operations=100 "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" errors=0 "), std::string::npos) << out;
}

TEST_F(GrpcStoreBenchTest, CommandRejectsUnknownProtocolAndGrpcFailover) {
  EXPECT_EQ(RunStoreBenchCommand(
                {"--workload=put", "--protocol=http3", "--endpoints=" + url_}),
            2);
  EXPECT_EQ(RunStoreBenchCommand({"--workload=failover", "--protocol=grpc",
                                  "--endpoints=" + url_}),
            2);
}

TEST(GrpcStoreBenchNoServerTest, UnreachableEndpointIsUnavailable) {
  // A port nothing listens on: bind one, note it, close it.
  net::HttpServerOptions so;
  so.port = 0;
  auto srv = std::make_unique<net::HttpServer>(so);
  ASSERT_TRUE(srv->Start().ok());
  std::string url = "http://127.0.0.1:" + std::to_string(srv->port());
  srv->Stop();
  srv.reset();
  GrpcLoadOptions o;
  auto eps = ParseEndpoints(url);
  ASSERT_TRUE(eps.ok());
  o.endpoints = *eps;
  o.max_operations = 1;
  o.connect_timeout = milliseconds(300);
  auto r = RunGrpcLoad(o);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
}

TEST(GrpcStoreBenchNoServerTest, DefaultConnsIsOnePerTenClients) {
  EXPECT_EQ(DefaultGrpcConns(1), 1);
  EXPECT_EQ(DefaultGrpcConns(10), 1);
  EXPECT_EQ(DefaultGrpcConns(16), 2);
  EXPECT_EQ(DefaultGrpcConns(64), 7);
  EXPECT_EQ(DefaultGrpcConns(256), 26);
  EXPECT_EQ(DefaultGrpcConns(10000), 1000);
}

}  // namespace
}  // namespace kplane::bench
