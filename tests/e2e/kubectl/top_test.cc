// kubectl top (metrics.k8s.io/v1beta1, apiserver/resource_metrics.h) with
// the real kubectl against the whole control plane `kplane up` runs in
// process (security on): simulated usage for the simulated nodes' pods,
// `view` may read it, a user without it may not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/kubectl/up_fixture.h"

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

class KubectlTop : public KplaneUpTest {};

TEST_F(KubectlTop, NodesAndPodsUnderRbac) {
  ASSERT_NO_FATAL_FAILURE(StartControlPlane(/*nodes=*/2));
  RunResult r = Kubectl({"apply", "-f", WriteFile("deploy.yaml", kDeployment)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"rollout", "status", "deployment/web", "--timeout=120s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  r = Kubectl({"top", "nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("NAME", 0), 0) << r.out;
  EXPECT_NE(r.out.find("CPU(cores)"), std::string::npos) << r.out;
  EXPECT_EQ(LinesWith(r.out, "node-"), 2) << r.out;
  EXPECT_EQ(LinesWith(r.out, "<unknown>"), 0) << r.out;

  r = Kubectl({"top", "pods", "-A"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NAMESPACE"), std::string::npos) << r.out;
  EXPECT_EQ(LinesWith(r.out, "web-"), 2) << r.out;
  r = Kubectl(
      {"top", "pods", "-n", "default", "-l", "app=web", "--containers"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LinesWith(r.out, "sidecar"), 2) << r.out;
  EXPECT_EQ(LinesWith(r.out, " app "), 2) << r.out;
  r = Kubectl({"top", "pods", "-n", "default", "-l", "app=nothing"});
  EXPECT_EQ(LinesWith(r.out, "web-"), 0) << r.out;

  r = Kubectl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("kind":"NodeMetricsList")"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"("window":"15s")"), std::string::npos) << r.out;

  // RBAC as kube with metrics-server: `view` reads metrics.k8s.io pods; a
  // ServiceAccount that may read pods but not their metrics may not.
  for (const char* sa : {"viewer", "nobody"}) {
    r = Kubectl({"create", "serviceaccount", sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = Kubectl({"create", "rolebinding", "viewer", "--clusterrole=view",
               "--serviceaccount=default:viewer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"create", "role", "podreader", "--verb=get,list,watch",
               "--resource=pods"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"create", "rolebinding", "podreader", "--role=podreader",
               "--serviceaccount=default:nobody"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = KubectlAs("viewer", {"top", "pods", "-n", "default"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LinesWith(r.out, "web-"), 2) << r.out;
  r = KubectlAs("nobody", {"top", "pods", "-n", "default"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("cannot list resource \"pods\" in API group "
                       "\"metrics.k8s.io\""),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kplane::e2e
