// etcd's TCP gateway, the same argv for etcd 3.4 and `kplane store`:
// `<server> gateway --endpoints=<3 members> start --listen-addr=...` in front
// of a 3-member cluster of the same kind, and the real etcdctl 3.4 (gRPC)
// through it: put, get, watch, and puts and gets going on after a member is
// killed (the gateway fails over from the dead endpoint). Each test runs
// against Debian's etcd and against build/kplane with the same
// expectations; etcd's own e2e TestGateway does the first put the same way.
#include <gtest/gtest.h>

#include "tests/e2e/store/front_fixture.h"

namespace kplane::e2e {
namespace {

using storage::StoreKind;

class Gateway : public FrontFixture {
 protected:
  void SetUp() override {
    FrontFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto p = storage::PickFreePort();
    ASSERT_TRUE(p.ok());
    gateway_ = "127.0.0.1:" + std::to_string(*p);
  }

  // Starts `<server> gateway <args>`; its output goes to the returned log.
  std::string StartGateway(const std::vector<std::string>& args) {
    std::vector<std::string> argv = prefix_;
    argv.push_back("gateway");
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = dir_ + "/gateway.log";
    procs_.push_back(std::make_unique<Subprocess>(
        argv, SubprocessOptions{.log_path = log, .working_dir = dir_}));
    EXPECT_TRUE(procs_.back()->Start().ok());
    return log;
  }
  bool GatewayRunning() { return procs_.front()->running(); }

  // etcdctl through the gateway.
  std::vector<std::string> EtcdctlArgv(const std::vector<std::string>& args) {
    return FrontFixture::EtcdctlArgv(gateway_, args);
  }
  std::string Etcdctl(const std::vector<std::string>& args) {
    return FrontFixture::Etcdctl(gateway_, args);
  }

  std::string gateway_;
};

TEST_P(Gateway, EtcdctlPutGetWatchThroughTheGateway) {
  // etcd's e2e TestGateway's argv: flags before `start`.
  const std::string log =
      StartGateway({"--endpoints=" + cluster_->endpoints_flag(), "start",
                    "--listen-addr=" + gateway_});
  ASSERT_TRUE(AwaitText(log, "ready to proxy client requests", [&] {
    return GatewayRunning();
  })) << ReadFile(log);

  EXPECT_EQ(Etcdctl({"put", "foo", "bar"}), "OK\n");
  EXPECT_EQ(Etcdctl({"get", "foo"}), "foo\nbar\n");

  // A watch holds one connection (one endpoint) while puts go through
  // others.
  const std::string watch_out = dir_ + "/watch.out";
  Subprocess watch(EtcdctlArgv({"watch", "w", "--prefix"}),
                   {.log_path = watch_out, .env = {"ETCDCTL_API=3"}});
  ASSERT_TRUE(watch.Start().ok());
  // The watch is established once a put made after it shows up; retry
  // the put until then (etcdctl gives no other sign).
  bool seen = false;
  for (int i = 0; i < 50 && !seen; ++i) {
    ASSERT_EQ(Etcdctl({"put", "w" + std::to_string(i), "v"}), "OK\n");
    seen = AwaitText(
        watch_out, "PUT\nw" + std::to_string(i) + "\nv\n",
        [&] { return watch.running(); }, milliseconds(500));
  }
  EXPECT_TRUE(seen) << ReadFile(watch_out);
  ASSERT_EQ(Etcdctl({"put", "w-last", "done"}), "OK\n");
  EXPECT_TRUE(AwaitText(watch_out, "PUT\nw-last\ndone\n", [&] {
    return watch.running();
  })) << ReadFile(watch_out);
  watch.Stop(2000);
}

TEST_P(Gateway, FailsOverFromAKilledMember) {
  const std::string log =
      StartGateway({"--endpoints=" + cluster_->endpoints_flag(), "start",
                    "--listen-addr=" + gateway_, "--retry-delay=1m"});
  ASSERT_TRUE(AwaitText(log, "ready to proxy client requests", [&] {
    return GatewayRunning();
  })) << ReadFile(log);
  auto leader = cluster_->WaitForLeader(seconds(30));
  ASSERT_TRUE(leader.ok()) << leader.status();
  const int victim = (*leader + 1) % 3;  // a follower: no election needed
  ASSERT_TRUE(cluster_->Kill(victim).ok());
  // Round robin reaches the dead endpoint within three connections; each
  // command must still succeed (failover to the next endpoint).
  for (int i = 0; i < 6; ++i) {
    const std::string k = "k" + std::to_string(i);
    EXPECT_EQ(Etcdctl({"put", k, "v"}), "OK\n") << i;
    EXPECT_EQ(Etcdctl({"get", k, "--print-value-only"}), "v\n") << i;
  }
  // It did meet the dead endpoint (both log etcd's words).
  EXPECT_TRUE(AwaitText(
      log, "deactivated endpoint", [&] { return GatewayRunning(); },
      seconds(5)))
      << ReadFile(log);
}

TEST_P(Gateway, RefusesToProxyToItself) {
  const std::string log = StartGateway(
      {"start", "--listen-addr=127.0.0.1:2379", "--endpoints=127.0.0.1:2379"});
  const int code = procs_.front()->Wait();
  EXPECT_NE(code, 0);
  EXPECT_NE(ReadFile(log).find("should not resolve to the gateway listen"),
            std::string::npos)
      << ReadFile(log);
}

INSTANTIATE_TEST_SUITE_P(Servers, Gateway,
                         ::testing::Values(StoreKind::kEtcd,
                                           StoreKind::kKplane),
                         FrontFixtureParamName);

}  // namespace
}  // namespace kplane::e2e
