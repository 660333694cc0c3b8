// kubectl top (metrics.k8s.io/v1beta1, apiserver/resource_metrics.h) with
// the real kubectl against the whole control plane `kplane up` runs in
// process (security on): simulated usage for the simulated nodes' pods,
// `view` may read it, a user without it may not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cmd/kplane/control_plane.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::e2e {
namespace {

constexpr char kDeployment[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources:
          requests: {cpu: 200m, memory: 128Mi}
      - name: sidecar
        image: busybox
)";

// The lines of a `kubectl top` table that contain `word`.
int LinesWith(const std::string& out, const std::string& word) {
  int n = 0;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    if (out.substr(start, end - start).find(word) != std::string::npos) ++n;
    start = end + 1;
  }
  return n;
}

TEST(KubectlTop, NodesAndPodsUnderRbac) {
  char tmpl[] = "/tmp/kplane-top-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  cmd::UpOptions o;
  o.data_dir = dir + "/data";
  o.apiserver_port = 0;
  o.store_port = 0;
  o.nodes = 2;
  o.controllers = true;
  o.kubeletsim_port = 0;
  o.controller_manager_port = -1;
  o.kubeconfig_out = dir + "/kubeconfig";
  auto cp = cmd::ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl", "--cache-dir", dir + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, {"KUBECONFIG=" + dir + "/kubeconfig", "HOME=" + dir});
    p.Start();
    return p.Wait(std::chrono::milliseconds(120000));
  };
  std::ofstream(dir + "/deploy.yaml") << kDeployment;
  RunResult r = kubectl({"apply", "-f", dir + "/deploy.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"rollout", "status", "deployment/web", "--timeout=120s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  r = kubectl({"top", "nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("NAME", 0), 0) << r.out;
  EXPECT_NE(r.out.find("CPU(cores)"), std::string::npos) << r.out;
  EXPECT_EQ(LinesWith(r.out, "node-"), 2) << r.out;
  EXPECT_EQ(LinesWith(r.out, "<unknown>"), 0) << r.out;

  r = kubectl({"top", "pods", "-A"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NAMESPACE"), std::string::npos) << r.out;
  EXPECT_EQ(LinesWith(r.out, "web-"), 2) << r.out;
  r = kubectl(
      {"top", "pods", "-n", "default", "-l", "app=web", "--containers"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LinesWith(r.out, "sidecar"), 2) << r.out;
  EXPECT_EQ(LinesWith(r.out, " app "), 2) << r.out;
  r = kubectl({"top", "pods", "-n", "default", "-l", "app=nothing"});
  EXPECT_EQ(LinesWith(r.out, "web-"), 0) << r.out;

  r = kubectl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("kind":"NodeMetricsList")"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"("window":"15s")"), std::string::npos) << r.out;

  // RBAC as kube with metrics-server: `view` reads metrics.k8s.io pods; a
  // ServiceAccount that may read pods but not their metrics may not.
  r = kubectl({"config", "view", "--raw", "-o",
               "jsonpath={.clusters[0].cluster.server}"});
  const std::string server = r.out;
  for (const char* sa : {"viewer", "nobody"}) {
    r = kubectl({"create", "serviceaccount", sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = kubectl({"create", "rolebinding", "viewer", "--clusterrole=view",
               "--serviceaccount=default:viewer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"create", "role", "podreader", "--verb=get,list,watch",
               "--resource=pods"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"create", "rolebinding", "podreader", "--role=podreader",
               "--serviceaccount=default:nobody"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto as = [&](const std::string& sa, std::vector<std::string> args) {
    RunResult t = kubectl({"create", "token", sa});
    EXPECT_EQ(t.exit_code, 0) << t.err;
    std::string token = t.out.substr(0, t.out.find('\n'));
    std::vector<std::string> argv = {
        "--kubeconfig=/dev/null", "--server=" + server,
        "--insecure-skip-tls-verify", "--token=" + token};
    argv.insert(argv.end(), args.begin(), args.end());
    return kubectl(argv);
  };
  r = as("viewer", {"top", "pods", "-n", "default"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LinesWith(r.out, "web-"), 2) << r.out;
  r = as("nobody", {"top", "pods", "-n", "default"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("cannot list resource \"pods\" in API group "
                       "\"metrics.k8s.io\""),
            std::string::npos)
      << r.err;

  cp->reset();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::e2e
