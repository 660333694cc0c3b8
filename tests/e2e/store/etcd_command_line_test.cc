// etcd's command line, the same for etcd 3.4 and `kplane store`: a tool that
// starts etcd (its YAML --config-file, ETCD_* variables, several URLs per
// flag, --listen-metrics-urls) starts a kplane member with the same argv and
// environment, and waits for the same start-up lines. Each test runs against
// Debian's etcd 3.4 and against build/kplane, with the same expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "base/subprocess.h"
#include "storage/client/local_cluster.h"

namespace kplane::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEtcd = "/usr/bin/etcd";
constexpr const char* kEtcdctl = "/usr/bin/etcdctl";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

enum class Server { kEtcd, kKplane };

std::string Name(const ::testing::TestParamInfo<Server>& p) {
  return p.param == Server::kEtcd ? "Etcd" : "Kplane";
}

class EtcdCommandLine : public ::testing::TestWithParam<Server> {
 protected:
  void SetUp() override {
    if (!fs::exists(kEtcdctl)) GTEST_SKIP() << "etcdctl is absent";
    if (GetParam() == Server::kEtcd) {
      if (!fs::exists(kEtcd)) GTEST_SKIP() << "etcd is absent";
      prefix_ = {kEtcd};
    } else {
      std::string bin = storage::FindKplaneBinary();
      if (bin.empty()) GTEST_SKIP() << "build/kplane is absent";
      prefix_ = {bin, "store"};
    }
    char tmpl[] = "/tmp/etcd_cmdline_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    log_ = dir_ + "/server.log";
  }
  void TearDown() override {
    if (server_) server_->Stop(5000);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  uint16_t Port() {
    auto p = storage::PickFreePort();
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : 0;
  }
  static std::string Url(uint16_t port) {
    return "http://127.0.0.1:" + std::to_string(port);
  }

  // Starts the server with `args` after the binary (and `store`) and `env`.
  void Start(const std::vector<std::string>& args,
             const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = prefix_;
    argv.insert(argv.end(), args.begin(), args.end());
    server_ = std::make_unique<Subprocess>(
        argv,
        SubprocessOptions{.log_path = log_, .env = env, .working_dir = dir_});
    ASSERT_TRUE(server_->Start().ok());
  }

  // Waits for etcd's start-up lines, as etcd's own e2e harness does; false
  // if the server exited or did not print them within 30 s.
  bool AwaitReady() {
    const TimePoint deadline = Clock::Real()->Now() + seconds(30);
    while (Clock::Real()->Now() < deadline) {
      std::string log = ReadFile(log_);
      // In any order (etcd 3.4 prints "published" first).
      if (log.find("enabled capabilities for version") != std::string::npos &&
          log.find("published") != std::string::npos) {
        return true;
      }
      if (!server_->running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // etcdctl (API 3) against `endpoint`; its output.
  std::string Etcdctl(const std::string& endpoint,
                      const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kEtcdctl, "--endpoints=" + endpoint,
                                     "--dial-timeout=5s",
                                     "--command-timeout=10s"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string out = dir_ + "/etcdctl" + std::to_string(++seq_);
    Subprocess p(
        argv, {.log_path = out, .env = {"ETCDCTL_API=3"}, .working_dir = dir_});
    if (!p.Start().ok()) return "cannot start etcdctl";
    int code = p.Wait();
    return ReadFile(out) + (code == 0 ? "" : "exit " + std::to_string(code));
  }

  std::vector<std::string> prefix_;
  std::string dir_, log_;
  std::unique_ptr<Subprocess> server_;
  int seq_ = 0;
};

TEST_P(EtcdCommandLine, ConfigFileWithSeveralUrlsAndAMetricsListener) {
  const uint16_t c1 = Port(), c2 = Port(), peer = Port(), metrics = Port();
  const std::string conf = dir_ + "/etcd.conf.yml";
  std::ofstream(conf) << "name: from-file\n"
                      << "data-dir: " << dir_ << "/data\n"
                      << "listen-client-urls: " << Url(c1) << "," << Url(c2)
                      << "\n"
                      << "advertise-client-urls: " << Url(c1) << "," << Url(c2)
                      << "\n"
                      << "listen-peer-urls: " << Url(peer) << "\n"
                      << "initial-advertise-peer-urls: " << Url(peer) << "\n"
                      << "initial-cluster: from-file=" << Url(peer) << "\n"
                      << "listen-metrics-urls: " << Url(metrics) << "\n"
                      << "heartbeat-interval: 50\n"
                      << "election-timeout: 500\n"
                      << "client-transport-security:\n"
                      << "  auto-tls: false\n";
  // With a config file etcd ignores the other flags (and ETCD_* variables).
  Start({"--config-file", conf, "--name", "ignored"});
  ASSERT_TRUE(AwaitReady()) << ReadFile(log_);

  EXPECT_EQ(Etcdctl(Url(c1), {"put", "k1", "v1"}), "OK\n");
  EXPECT_EQ(Etcdctl(Url(c2), {"get", "k1", "--print-value-only"}), "v1\n");
  std::string members = Etcdctl(Url(c2), {"member", "list"});
  // Both list a member's URLs sorted as strings.
  const std::string clients =
      std::min(Url(c1), Url(c2)) + "," + std::max(Url(c1), Url(c2));
  EXPECT_NE(members.find(", started, from-file, " + Url(peer) + ", " + clients),
            std::string::npos)
      << members;
  // The metrics URL answers /health and /metrics (curl, as an operator
  // would).
  const std::string health = dir_ + "/health";
  Subprocess curl(
      {"/usr/bin/curl", "-s", "-o", health, Url(metrics) + "/health"});
  ASSERT_TRUE(curl.Start().ok());
  EXPECT_EQ(curl.Wait(), 0);
  EXPECT_NE(ReadFile(health).find("\"health\":\"true\""), std::string::npos)
      << ReadFile(health);
}

TEST_P(EtcdCommandLine, EnvironmentVariablesAsFlags) {
  const uint16_t client = Port(), peer = Port();
  Start({}, {"ETCD_NAME=from-env", "ETCD_DATA_DIR=" + dir_ + "/data",
             "ETCD_LISTEN_CLIENT_URLS=" + Url(client),
             "ETCD_ADVERTISE_CLIENT_URLS=" + Url(client),
             "ETCD_LISTEN_PEER_URLS=" + Url(peer),
             "ETCD_INITIAL_ADVERTISE_PEER_URLS=" + Url(peer),
             "ETCD_INITIAL_CLUSTER=from-env=" + Url(peer)});
  ASSERT_TRUE(AwaitReady()) << ReadFile(log_);
  std::string members = Etcdctl(Url(client), {"member", "list"});
  EXPECT_NE(members.find(", started, from-env, " + Url(peer)),
            std::string::npos)
      << members;
}

TEST_P(EtcdCommandLine, AVariableThatRepeatsAFlagIsRefused) {
  const uint16_t client = Port(), peer = Port();
  Start({"--name", "flag", "--data-dir", dir_ + "/data", "--listen-client-urls",
         Url(client), "--advertise-client-urls", Url(client),
         "--listen-peer-urls", Url(peer), "--initial-advertise-peer-urls",
         Url(peer), "--initial-cluster", "flag=" + Url(peer)},
        {"ETCD_NAME=env"});
  const int code = server_->Wait();
  EXPECT_NE(code, 0);
  EXPECT_NE(ReadFile(log_).find("conflicting environment variable "
                                "\"ETCD_NAME\" is shadowed by corresponding "
                                "command-line flag"),
            std::string::npos)
      << ReadFile(log_);
}

// A unix-socket client URL (etcd's form: "unix://localhost:12379" is the
// socket file "localhost:12379" in the working directory) serves gRPC
// (etcdctl) and the JSON gateway (curl --unix-socket), as etcd does; the
// member advertises it.
TEST_P(EtcdCommandLine, UnixSocketClientUrl) {
  const uint16_t peer = Port();
  const std::string unix_url = "unix://localhost:12379";
  Start({"--name", "sock", "--data-dir", dir_ + "/data", "--listen-client-urls",
         unix_url, "--advertise-client-urls", unix_url, "--listen-peer-urls",
         Url(peer), "--initial-advertise-peer-urls", Url(peer),
         "--initial-cluster", "sock=" + Url(peer)});
  ASSERT_TRUE(AwaitReady()) << ReadFile(log_);
  EXPECT_TRUE(fs::is_socket(dir_ + "/localhost:12379"));

  EXPECT_EQ(Etcdctl(unix_url, {"put", "k1", "v1"}), "OK\n");
  EXPECT_EQ(Etcdctl(unix_url, {"get", "k1", "--print-value-only"}), "v1\n");
  std::string members = Etcdctl(unix_url, {"member", "list"});
  EXPECT_NE(members.find(", started, sock, " + Url(peer) + ", " + unix_url),
            std::string::npos)
      << members;

  const std::string range = dir_ + "/range";
  Subprocess curl({"/usr/bin/curl", "-s", "-o", range, "--unix-socket",
                   dir_ + "/localhost:12379", "-X", "POST", "-d",
                   R"({"key":"azE="})", "http://localhost/v3/kv/range"});
  ASSERT_TRUE(curl.Start().ok());
  EXPECT_EQ(curl.Wait(), 0);
  // "v1" in base64.
  EXPECT_NE(ReadFile(range).find("\"value\":\"djE=\""), std::string::npos)
      << ReadFile(range);
}

// etcd's auto TLS, as the default cluster of etcd's own e2e suite uses it:
// two members whose peer URLs are https with generated certificates (they
// replicate over it), clients on https with generated certificates that
// etcdctl does not verify; the material lives under <data-dir>/fixtures.
TEST_P(EtcdCommandLine, AutoTlsForPeersAndClients) {
  const uint16_t c1 = Port(), p1 = Port(), c2 = Port(), p2 = Port();
  auto https = [](uint16_t port) {
    return "https://127.0.0.1:" + std::to_string(port);
  };
  const std::string cluster = "a=" + https(p1) + ",b=" + https(p2);
  auto args = [&](const std::string& name, uint16_t c, uint16_t p) {
    return std::vector<std::string>{"--name",
                                    name,
                                    "--data-dir",
                                    dir_ + "/" + name,
                                    "--auto-tls",
                                    "--peer-auto-tls",
                                    "--listen-client-urls",
                                    https(c),
                                    "--advertise-client-urls",
                                    https(c),
                                    "--listen-peer-urls",
                                    https(p),
                                    "--initial-advertise-peer-urls",
                                    https(p),
                                    "--initial-cluster",
                                    cluster,
                                    "--initial-cluster-token",
                                    "auto-tls"};
  };
  Start(args("a", c1, p1));
  std::vector<std::string> argv_b = prefix_;
  for (std::string& a : args("b", c2, p2)) argv_b.push_back(std::move(a));
  const std::string log_b = dir_ + "/b.log";
  Subprocess b(argv_b, {.log_path = log_b, .working_dir = dir_});
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(AwaitReady()) << ReadFile(log_) << "\n---- b:\n"
                            << ReadFile(log_b);

  auto ctl = [&](uint16_t client, std::vector<std::string> a) {
    a.insert(a.begin(),
             {"--insecure-transport=false", "--insecure-skip-tls-verify"});
    return Etcdctl(https(client), a);
  };
  EXPECT_EQ(ctl(c1, {"put", "k1", "v1"}), "OK\n");
  // Written through a, read from b: replicated over the peers' TLS.
  EXPECT_EQ(ctl(c2, {"get", "k1", "--print-value-only"}), "v1\n");
  for (const char* member : {"a", "b"}) {
    for (const char* side : {"client", "peer"}) {
      const std::string d = dir_ + "/" + member + "/fixtures/" + side;
      EXPECT_TRUE(fs::is_directory(d)) << d;
      EXPECT_FALSE(fs::is_empty(d)) << d;
    }
  }
  // Without verification skipped, a client refuses the generated
  // certificate.
  EXPECT_NE(Etcdctl(https(c1), {"--insecure-transport=false", "get", "k1"})
                .find("exit "),
            std::string::npos);
  b.Stop(5000);
}

INSTANTIATE_TEST_SUITE_P(Servers, EtcdCommandLine,
                         ::testing::Values(Server::kEtcd, Server::kKplane),
                         Name);

}  // namespace
}  // namespace kplane::e2e
