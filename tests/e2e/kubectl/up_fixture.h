// Test fixtures for the kubectl suites that run the whole control plane
// `kplane up` starts (TLS, RBAC, controllers, simulated kubelets serving
// logs, exec and metrics) in process, and drive it with the real kubectl.
//
// One control plane per test:
//
//   class KubectlLogs : public KplaneUpTest {};
//   TEST_F(KubectlLogs, Something) {
//     ASSERT_NO_FATAL_FAILURE(StartControlPlane(/*nodes=*/2));
//     RunResult r = Kubectl({"get", "pods"});               // as the admin
//     r = KubectlAs("viewer", {"get", "pods", "-n", "default"});
//   }
//
// One control plane for a whole (parameterised) suite, started before its
// first test and stopped after its last; the tests share it, so each keeps
// to names of its own (a namespace per parameter, say):
//
//   class Versions : public KplaneUpSuiteTest<Versions> {
//    public:
//     static void SetUpTestSuite() { StartSharedControlPlane(/*nodes=*/2); }
//   };
//   TEST_P(Versions, Something) { up().KubectlAt(binary, {"get", "ns"}); }
//
// Kubectl runs with the admin kubeconfig `kplane up` writes (a client
// certificate in system:masters); KubectlAs runs it as a ServiceAccount of
// namespace default the test created and bound, with a token from
// `kubectl create token` and no kubeconfig, so only that account's RBAC
// applies. Each control plane gets a directory of its own under /tmp (kept
// when a test using it failed, for its logs). Every kubectl run is bounded
// by two minutes.
//
// Thread-safety: the test's thread only.
#ifndef KPLANE_TESTS_E2E_KUBECTL_UP_FIXTURE_H_
#define KPLANE_TESTS_E2E_KUBECTL_UP_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/statusor.h"
#include "cmd/kplane/control_plane.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::e2e {

// One `kplane up` in process and kubectl against it.
class KplaneUp {
 public:
  // Starts `kplane up` with `nodes` simulated nodes, the controllers and
  // the kubelets' servers on ephemeral ports, in a new directory under
  // /tmp.
  static StatusOr<std::unique_ptr<KplaneUp>> Start(int nodes) {
    char tmpl[] = "/tmp/kplane-up-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      return InternalError("mkdtemp /tmp/kplane-up-XXXXXX failed");
    }
    std::unique_ptr<KplaneUp> up(new KplaneUp(tmpl));
    cmd::UpOptions o;
    o.data_dir = up->dir_ + "/data";
    o.apiserver_port = 0;
    o.store_port = 0;
    o.nodes = nodes;
    o.controllers = true;
    o.kubeletsim_port = 0;  // ephemeral: the kubelets serve logs and exec
    o.controller_manager_port = -1;
    o.kubeconfig_out = up->dir_ + "/kubeconfig";
    auto cp = cmd::ControlPlane::Start(o);
    if (!cp.ok()) {
      up->keep_dir_ = true;
      return cp.status();
    }
    up->control_plane_ = std::move(*cp);
    return up;
  }

  // Stops the control plane; removes the directory unless KeepDirectory().
  ~KplaneUp() {
    control_plane_.reset();
    if (!keep_dir_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  KplaneUp(const KplaneUp&) = delete;
  KplaneUp& operator=(const KplaneUp&) = delete;

  // Keep the directory (logs, data, caches) for a failed test.
  void KeepDirectory() { keep_dir_ = true; }
  const std::string& dir() const { return dir_; }

  // kubectl with the admin's kubeconfig.
  RunResult Kubectl(std::vector<std::string> args) {
    return KubectlAt("kubectl", std::move(args));
  }

  // `binary` (another kubectl version) with the admin's kubeconfig and a
  // discovery and OpenAPI cache of its own.
  RunResult KubectlAt(const std::string& binary,
                      std::vector<std::string> args) {
    std::vector<std::string> argv = {binary, "--cache-dir", CacheDir(binary)};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, Env());
    p.Start();
    return p.Wait(kKubectlDeadline);
  }

  // `binary args...` started in the background (for `get -w`): read its
  // lines with ReadLine; killed when the Process goes.
  std::unique_ptr<Process> KubectlBackground(const std::string& binary,
                                             std::vector<std::string> args) {
    std::vector<std::string> argv = {binary, "--cache-dir", CacheDir(binary)};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = std::make_unique<Process>(argv, Env());
    p->Start();
    return p;
  }

  // kubectl `args` (one shell word list) with `input` on its stdin
  // (through sh: Process has no stdin).
  RunResult KubectlWithStdin(const std::string& input,
                             const std::string& args) {
    std::ofstream(dir_ + "/stdin.txt") << input;
    Process p({"sh", "-c",
               "kubectl --cache-dir " + CacheDir("kubectl") + " " + args +
                   " < " + dir_ + "/stdin.txt"},
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

  // Writes `text` to `name` in the directory; its path.
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

 private:
  static constexpr std::chrono::milliseconds kKubectlDeadline{120000};

  explicit KplaneUp(std::string dir) : dir_(std::move(dir)) {}

  std::string CacheDir(const std::string& binary) const {
    return dir_ + "/cache-" + std::filesystem::path(binary).filename().string();
  }
  std::vector<std::string> Env() const {
    return {"KUBECONFIG=" + dir_ + "/kubeconfig", "HOME=" + dir_};
  }

  const std::string dir_;
  bool keep_dir_ = false;
  std::unique_ptr<cmd::ControlPlane> control_plane_;
  std::string server_;  // the apiserver's URL, once KubectlAs asked
};

// One control plane per test.
class KplaneUpTest : public ::testing::Test {
 protected:
  // Starts `kplane up` with `nodes` simulated nodes; fails the test if it
  // cannot.
  void StartControlPlane(int nodes) {
    auto up = KplaneUp::Start(nodes);
    ASSERT_TRUE(up.ok()) << up.status();
    up_ = std::move(*up);
    dir_ = up_->dir();
  }

  void TearDown() override {
    if (up_ != nullptr && HasFailure()) up_->KeepDirectory();
    up_.reset();
  }

  RunResult Kubectl(std::vector<std::string> args) {
    return up_->Kubectl(std::move(args));
  }
  RunResult KubectlWithStdin(const std::string& input,
                             const std::string& args) {
    return up_->KubectlWithStdin(input, args);
  }
  RunResult KubectlAs(const std::string& service_account,
                      std::vector<std::string> args) {
    return up_->KubectlAs(service_account, std::move(args));
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    return up_->WriteFile(name, text);
  }

  std::string dir_;  // the control plane's directory

 private:
  std::unique_ptr<KplaneUp> up_;
};

// One control plane for the whole suite `Derived` (CRTP: each suite has
// its own), parameterised by `Param`. Derived's SetUpTestSuite calls
// StartSharedControlPlane; each test fails at once if that did not work.
template <typename Derived, typename Param = std::string>
class KplaneUpSuiteTest : public ::testing::TestWithParam<Param> {
 public:
  static void TearDownTestSuite() {
    const ::testing::TestSuite* suite =
        ::testing::UnitTest::GetInstance()->current_test_suite();
    if (shared_ != nullptr && suite != nullptr && suite->Failed()) {
      shared_->KeepDirectory();
      std::cerr << "kept " << shared_->dir() << "\n";
    }
    shared_.reset();
  }

 protected:
  static void StartSharedControlPlane(int nodes) {
    auto up = KplaneUp::Start(nodes);
    start_status_ = up.status();
    if (up.ok()) shared_ = std::move(*up);
  }

  void SetUp() override {
    ASSERT_TRUE(shared_ != nullptr)
        << "the suite's control plane did not start: " << start_status_;
  }

  static KplaneUp& up() { return *shared_; }

 private:
  static inline std::unique_ptr<KplaneUp> shared_;
  static inline Status start_status_;
};

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_KUBECTL_UP_FIXTURE_H_
