// Test fixture for the kubectl suites that run the whole control plane
// `kplane up` starts (TLS, RBAC, controllers, simulated kubelets serving
// logs, exec and metrics) in process, and drive it with the real kubectl.
//
//   class KubectlLogs : public KplaneUpTest {};
//   TEST_F(KubectlLogs, Something) {
//     ASSERT_NO_FATAL_FAILURE(StartControlPlane(/*nodes=*/2));
//     RunResult r = Kubectl({"get", "pods"});               // as the admin
//     r = KubectlAs("viewer", {"get", "pods", "-n", "default"});
//   }
//
// Kubectl runs with the admin kubeconfig `kplane up` writes (a client
// certificate in system:masters); KubectlAs runs it as a ServiceAccount of
// namespace default the test created and bound, with a token from
// `kubectl create token` and no kubeconfig, so only that account's RBAC
// applies. Each test gets a directory of its own under /tmp (kept when the
// test failed, for its logs); the control plane stops in TearDown.
// Every kubectl run is bounded by two minutes.
//
// Thread-safety: the test's thread only.
#ifndef KPLANE_TESTS_E2E_KUBECTL_UP_FIXTURE_H_
#define KPLANE_TESTS_E2E_KUBECTL_UP_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cmd/kplane/control_plane.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::e2e {

class KplaneUpTest : public ::testing::Test {
 protected:
  // Starts `kplane up` with `nodes` simulated nodes, the controllers and
  // the kubelets' servers on ephemeral ports; fails the test if it cannot.
  void StartControlPlane(int nodes) {
    char tmpl[] = "/tmp/kplane-up-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cmd::UpOptions o;
    o.data_dir = dir_ + "/data";
    o.apiserver_port = 0;
    o.store_port = 0;
    o.nodes = nodes;
    o.controllers = true;
    o.kubeletsim_port = 0;  // ephemeral: the kubelets serve logs and exec
    o.controller_manager_port = -1;
    o.kubeconfig_out = dir_ + "/kubeconfig";
    auto cp = cmd::ControlPlane::Start(o);
    ASSERT_TRUE(cp.ok()) << cp.status();
    control_plane_ = std::move(*cp);
  }

  void TearDown() override {
    control_plane_.reset();
    if (!dir_.empty() && !HasFailure()) std::filesystem::remove_all(dir_);
  }

  // kubectl with the admin's kubeconfig.
  RunResult Kubectl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl", "--cache-dir", dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, Env());
    p.Start();
    return p.Wait(kKubectlDeadline);
  }

  // kubectl `args` (one shell word list) with `input` on its stdin
  // (through sh: Process has no stdin).
  RunResult KubectlWithStdin(const std::string& input,
                             const std::string& args) {
    std::ofstream(dir_ + "/stdin.txt") << input;
    Process p({"sh", "-c",
               "kubectl --cache-dir " + dir_ + "/cache " + args + " < " + dir_ +
                   "/stdin.txt"},
              Env());
    p.Start();
    return p.Wait(kKubectlDeadline);
  }

  // kubectl as ServiceAccount default/`service_account` (its token, no
  // kubeconfig, the server's certificate not checked).
  RunResult KubectlAs(const std::string& service_account,
                      std::vector<std::string> args) {
    if (server_.empty()) {
      RunResult s = Kubectl({"config", "view", "--raw", "-o",
                             "jsonpath={.clusters[0].cluster.server}"});
      EXPECT_EQ(s.exit_code, 0) << s.err;
      server_ = s.out;
    }
    RunResult t = Kubectl({"create", "token", service_account});
    EXPECT_EQ(t.exit_code, 0) << t.err;
    std::string token = t.out.substr(0, t.out.find('\n'));
    std::vector<std::string> argv = {
        "--kubeconfig=/dev/null", "--server=" + server_,
        "--insecure-skip-tls-verify", "--token=" + token};
    argv.insert(argv.end(), args.begin(), args.end());
    return Kubectl(argv);
  }

  // Writes `text` to `name` in the test's directory; its path.
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;  // the test's directory

 private:
  static constexpr std::chrono::milliseconds kKubectlDeadline{120000};

  std::vector<std::string> Env() const {
    return {"KUBECONFIG=" + dir_ + "/kubeconfig", "HOME=" + dir_};
  }

  std::unique_ptr<cmd::ControlPlane> control_plane_;
  std::string server_;
};

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_KUBECTL_UP_FIXTURE_H_
