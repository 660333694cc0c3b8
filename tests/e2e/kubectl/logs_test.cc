// pods/log with the real kubectl against the whole control plane `kplane
// up` runs in process (security on): the apiserver reaches the simulated
// kubelets with its kubelet client certificate; kubectl logs resolves
// deploy/x through the controllers' ReplicaSet and pods; `view` may read
// pods/log, a user without a binding may not.
#include <gtest/gtest.h>

#include <algorithm>
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
      annotations: {kubeletsim.kplane.io/log-interval: 1s}
    spec:
      containers:
      - name: app
        image: nginx:1.27
)";

TEST(KubectlLogs, DeploymentLogsUnderRbac) {
  char tmpl[] = "/tmp/kplane-logs-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  cmd::UpOptions o;
  o.data_dir = dir + "/data";
  o.apiserver_port = 0;
  o.store_port = 0;
  o.nodes = 2;
  o.controllers = true;
  o.kubeletsim_port = 0;  // ephemeral: the kubelets serve pods/log
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

  // kubectl picks one of the deployment's pods.
  r = kubectl({"logs", "deploy/web"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("kubeletsim: container app of pod default/web-", 0), 0)
      << r.out;
  r = kubectl({"logs", "-l", "app=web", "--prefix", "--tail=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_NE(r.out.find("[pod/web-"), std::string::npos) << r.out;

  // RBAC as kube's bootstrap roles: `view` reads pods/log; a
  // ServiceAccount that may read pods, ReplicaSets and Deployments but not
  // pods/log may not. (Their tokens, in a kubectl
  // without the admin's client certificate.)
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
               "--resource=pods,replicasets,deployments"});
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
  r = as("viewer", {"logs", "deploy/web", "--tail=1", "-n", "default"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("of pod default/web-"), std::string::npos) << r.out;
  r = as("nobody", {"logs", "deploy/web", "--tail=1", "-n", "default"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot get resource \"pods/log\""), std::string::npos)
      << r.err;

  cp->reset();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::e2e
