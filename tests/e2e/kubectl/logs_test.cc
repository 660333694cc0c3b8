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
      annotations: {kubeletsim.kplane.io/log-interval: 1s}
    spec:
      containers:
      - name: app
        image: nginx:1.27
)";

class KubectlLogs : public KplaneUpTest {};

TEST_F(KubectlLogs, DeploymentLogsUnderRbac) {
  ASSERT_NO_FATAL_FAILURE(StartControlPlane(/*nodes=*/2));
  RunResult r = Kubectl({"apply", "-f", WriteFile("deploy.yaml", kDeployment)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"rollout", "status", "deployment/web", "--timeout=120s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // kubectl picks one of the deployment's pods.
  r = Kubectl({"logs", "deploy/web"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("kubeletsim: container app of pod default/web-", 0), 0)
      << r.out;
  r = Kubectl({"logs", "-l", "app=web", "--prefix", "--tail=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_NE(r.out.find("[pod/web-"), std::string::npos) << r.out;

  // RBAC as kube's bootstrap roles: `view` reads pods/log; a
  // ServiceAccount that may read pods, ReplicaSets and Deployments but not
  // pods/log may not. (Their tokens, in a kubectl
  // without the admin's client certificate.)
  for (const char* sa : {"viewer", "nobody"}) {
    r = Kubectl({"create", "serviceaccount", sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = Kubectl({"create", "rolebinding", "viewer", "--clusterrole=view",
               "--serviceaccount=default:viewer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"create", "role", "podreader", "--verb=get,list,watch",
               "--resource=pods,replicasets,deployments"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kubectl({"create", "rolebinding", "podreader", "--role=podreader",
               "--serviceaccount=default:nobody"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = KubectlAs("viewer", {"logs", "deploy/web", "--tail=1", "-n", "default"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("of pod default/web-"), std::string::npos) << r.out;
  r = KubectlAs("nobody", {"logs", "deploy/web", "--tail=1", "-n", "default"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot get resource \"pods/log\""), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kplane::e2e
