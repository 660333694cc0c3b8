// What the e2e tests of the servers that stand in front of a store cluster
// (etcd's TCP gateway, gateway_e2e_test.cc; etcd's gRPC proxy,
// grpc_proxy_e2e_test.cc) start the same way: a 3-member cluster of the
// parameter's kind (Debian's etcd 3.4 or build/kplane's `kplane store`),
// the argv prefix that runs the same server kind, and the real etcdctl 3.4
// to talk through the front.
//
//   class Gateway : public FrontFixture {};
//   TEST_P(Gateway, Works) {
//     std::vector<std::string> argv = prefix_;  // {etcd} / {kplane, store}
//     argv.insert(argv.end(), {"gateway", ...});
//     procs_.push_back(...);  // stopped by TearDown
//     EXPECT_EQ(Etcdctl(addr, {"put", "foo", "bar"}), "OK\n");
//   }
//   INSTANTIATE_TEST_SUITE_P(Servers, Gateway,
//                            ::testing::Values(StoreKind::kEtcd,
//                                              StoreKind::kKplane),
//                            FrontFixtureParamName);
//
// SetUp skips (GTEST_SKIP) when etcdctl, or the parameter's server, is
// absent. Thread-safety: the test's thread only.
#ifndef KPLANE_TESTS_E2E_STORE_FRONT_FIXTURE_H_
#define KPLANE_TESTS_E2E_STORE_FRONT_FIXTURE_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/subprocess.h"
#include "storage/client/local_cluster.h"

namespace kplane::e2e {

inline constexpr const char* kEtcd = "/usr/bin/etcd";
inline constexpr const char* kEtcdctl = "/usr/bin/etcdctl";

// The whole file ("" if it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Waits until the file at `path` contains `text` (a process we started
// writes it; a file has no event to await, so it is read every 20 ms) or
// `running` says the writer is gone.
inline bool AwaitText(const std::string& path, const std::string& text,
                      const std::function<bool()>& running,
                      Duration timeout = seconds(30)) {
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  while (Clock::Real()->Now() < deadline) {
    if (ReadFile(path).find(text) != std::string::npos) return true;
    if (!running()) return ReadFile(path).find(text) != std::string::npos;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

class FrontFixture : public ::testing::TestWithParam<storage::StoreKind> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kEtcdctl)) {
      GTEST_SKIP() << "etcdctl is absent";
    }
    if (GetParam() == storage::StoreKind::kEtcd) {
      if (!std::filesystem::exists(kEtcd)) GTEST_SKIP() << "etcd is absent";
      prefix_ = {kEtcd};
    } else {
      const std::string bin = storage::FindKplaneBinary();
      if (bin.empty()) GTEST_SKIP() << "build/kplane is absent";
      prefix_ = {bin, "store"};
    }
    auto c = storage::LocalCluster::Start({.kind = GetParam(), .members = 3});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    dir_ = cluster_->data_root();
  }
  void TearDown() override {
    for (auto& p : procs_) p->Stop(5000);
  }

  // etcdctl (API 3) at `ep` with `args`.
  std::vector<std::string> EtcdctlArgv(const std::string& ep,
                                       const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kEtcdctl, "--endpoints=" + ep,
                                     "--dial-timeout=5s",
                                     "--command-timeout=10s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  // Runs it; its output, and "exit N" on failure.
  std::string Etcdctl(const std::string& ep,
                      const std::vector<std::string>& args) {
    const std::string out = dir_ + "/etcdctl" + std::to_string(++seq_);
    Subprocess p(EtcdctlArgv(ep, args),
                 {.log_path = out, .env = {"ETCDCTL_API=3"}});
    if (!p.Start().ok()) return "cannot start etcdctl";
    const int code = p.Wait();
    return ReadFile(out) + (code == 0 ? "" : "exit " + std::to_string(code));
  }

  // The command that runs the parameter's server: {etcd} or
  // {kplane, store}; a test appends the subcommand and its flags.
  std::vector<std::string> prefix_;
  std::unique_ptr<storage::LocalCluster> cluster_;
  std::string dir_;  // the cluster's data root: logs and outputs go here
  // Processes a test started; TearDown stops them.
  std::vector<std::unique_ptr<Subprocess>> procs_;
  int seq_ = 0;
};

// "Etcd" / "Kplane", the instantiations' test name suffixes.
inline std::string FrontFixtureParamName(
    const ::testing::TestParamInfo<storage::StoreKind>& p) {
  return p.param == storage::StoreKind::kEtcd ? "Etcd" : "Kplane";
}

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_STORE_FRONT_FIXTURE_H_
