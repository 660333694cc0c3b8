// kpctl sim against a ControlServer whose handlers record what they are
// asked (the fleet behind it is tested in kubeletsim/fleet_test.cc).
#include "kpctl/sim/sim_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/logging.h"
#include "base/mutex.h"
#include "kubeletsim/control_server.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::kpctl {
namespace {

class SimCommandTest : public ::testing::Test {
 protected:
  SimCommandTest() {
    kubeletsim::ControlServer::Handlers h;
    h.stop_node = [this](const std::string& n) { return Record("stop " + n); };
    h.resume_node = [this](const std::string& n) {
      return Record("resume " + n);
    };
    h.stop_all = [this] { (void)Record("stop-all"); };
    h.resume_all = [this] { (void)Record("resume-all"); };
    h.list = [] {
      kubeletsim::NodeInfo a{.name = "node-0",
                             .registered = true,
                             .pods = 2,
                             .lease_renewals = 7,
                             .last_lag_seconds = 0.012};
      kubeletsim::NodeInfo b{
          .name = "node-1", .stopped = true, .registered = true};
      return std::vector<kubeletsim::NodeInfo>{a, b};
    };
    h.metrics = &metrics_;
    server_ = std::make_unique<kubeletsim::ControlServer>(h);
    CHECK(server_->Start("127.0.0.1", 0).ok());
    endpoint_ =
        "--endpoint=http://127.0.0.1:" + std::to_string(server_->port());
  }
  Status Record(const std::string& call) {
    MutexLock l(&mu_);
    calls_.push_back(call);
    if (call.find("ghost") != std::string::npos) {
      return NotFoundError("no simulated node ghost");
    }
    return Status::Ok();
  }
  int Run(std::vector<std::string> args) {
    args.push_back(endpoint_);
    out_.str("");
    err_.str("");
    return RunSim(args, out_, err_);
  }

  metrics::Registry metrics_;
  std::unique_ptr<kubeletsim::ControlServer> server_;
  std::string endpoint_;
  Mutex mu_;
  std::vector<std::string> calls_ GUARDED_BY(mu_);
  std::ostringstream out_, err_;
};

TEST_F(SimCommandTest, List) {
  ASSERT_EQ(Run({"list"}), 0) << err_.str();
  std::string out = out_.str();
  EXPECT_NE(out.find("NAME"), std::string::npos);
  EXPECT_NE(out.find("node-0"), std::string::npos);
  EXPECT_NE(out.find("Running"), std::string::npos);
  EXPECT_NE(out.find("0.012s"), std::string::npos);
  EXPECT_NE(out.find("Stopped"), std::string::npos);
}

TEST_F(SimCommandTest, StopResume) {
  EXPECT_EQ(Run({"stop-node", "node-3", "node-4"}), 0);
  EXPECT_EQ(out_.str(), "node/node-3 stopped\nnode/node-4 stopped\n");
  EXPECT_EQ(Run({"resume-node", "node-3"}), 0);
  EXPECT_EQ(Run({"stop-all"}), 0);
  EXPECT_EQ(Run({"resume-all"}), 0);
  EXPECT_EQ(Run({"stop-node", "ghost"}), 1);
  EXPECT_NE(err_.str().find("no simulated node ghost"), std::string::npos);
  MutexLock l(&mu_);
  EXPECT_EQ(calls_, (std::vector<std::string>{"stop node-3", "stop node-4",
                                              "resume node-3", "stop-all",
                                              "resume-all", "stop ghost"}));
}

TEST_F(SimCommandTest, Usage) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({"stop-node"}), 2);
  EXPECT_EQ(Run({"explode"}), 2);
  EXPECT_EQ(RunSim({"list", "--endpoint=http://127.0.0.1:1"}, out_, err_), 1);
}

// An HTTPS endpoint that takes only clients with a certificate its CA signed
// (what `kplane up` runs): kpctl sim with --cacert/--cert/--key, or with the
// kubeconfig's CA and user certificate; without a certificate, refused.
TEST(SimCommandTlsTest, HttpsWithFlagsOrTheKubeconfig) {
  char tmpl[] = "/tmp/kpctl-sim-tls-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  net::Pki pki({.dir = dir});
  auto ca = pki.EnsureCa();
  ASSERT_TRUE(ca.ok()) << ca.status();
  auto serving =
      pki.EnsureCertificate("serving", {.common_name = "kubeletsim",
                                        .ip_addresses = {"127.0.0.1"},
                                        .server_auth = true});
  auto admin = pki.EnsureCertificate(
      "admin", {.common_name = "kubernetes-admin", .client_auth = true});
  ASSERT_TRUE(serving.ok() && admin.ok());
  auto server_tls = net::TlsContext::NewServer(
      {.cert_pem = serving->cert_pem,
       .key_pem = serving->key_pem,
       .client_ca_pem = ca->cert_pem,
       .client_auth = net::ClientAuth::kRequireAndVerify});
  ASSERT_TRUE(server_tls.ok()) << server_tls.status();

  metrics::Registry metrics;
  kubeletsim::ControlServer::Handlers h;
  h.list = [] { return std::vector<kubeletsim::NodeInfo>{{.name = "node-0"}}; };
  h.metrics = &metrics;
  kubeletsim::ControlServer server(h);
  ASSERT_TRUE(server.Start("127.0.0.1", 0, *server_tls).ok());
  const std::string endpoint =
      "--endpoint=https://127.0.0.1:" + std::to_string(server.port());
  std::ostringstream out, err;

  EXPECT_EQ(RunSim({"list", endpoint, "--cacert=" + pki.CertPath("ca"),
                    "--cert=" + pki.CertPath("admin"),
                    "--key=" + pki.KeyPath("admin")},
                   out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("node-0"), std::string::npos) << out.str();

  // The same from a kubeconfig (as `kplane up` writes it).
  std::ofstream(dir + "/kubeconfig")
      << "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", "
         "certificate-authority: ca.crt}}]\n"
         "users: [{name: u, user: {client-certificate: admin.crt, "
         "client-key: admin.key}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
         "current-context: x\n";
  out.str("");
  EXPECT_EQ(RunSim({"list", endpoint, "--kubeconfig=" + dir + "/kubeconfig"},
                   out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("node-0"), std::string::npos);

  // Trusting the CA but presenting no certificate: refused.
  err.str("");
  EXPECT_EQ(
      RunSim({"list", endpoint, "--cacert=" + pki.CertPath("ca")}, out, err),
      1);
  EXPECT_NE(err.str().find("certificate required"), std::string::npos)
      << err.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::kpctl
