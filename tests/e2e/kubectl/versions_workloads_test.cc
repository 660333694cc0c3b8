// Workloads with every kubectl version (issues #19, #20; kubectl_versions.h:
// 1.20 when KPLANE_KUBECTL_1_20 names it, 1.27, 1.32, 1.33) against one
// `kplane up` in process for the whole suite (two simulated nodes,
// controllers, security on). Each version works in a namespace of its own
// (kv120, kv127, ...) and goes through what a user types:
//
//   create sa / job / cronjob / pdb / service, apply a StatefulSet and a
//   DaemonSet and `rollout status` both, get and describe job, cronjob,
//   statefulset, daemonset, pdb, endpoints, endpointslices,
//   serviceaccount, and get events.
//
// kubectl 1.20 predates the removal (in 1.25) of batch/v1beta1 CronJob,
// policy/v1beta1 PodDisruptionBudget and discovery.k8s.io/v1beta1
// EndpointSlice, which kplane serves as kube 1.32 does (not at all):
// `create cronjob` writes batch/v1beta1 and `describe` of a cronjob, pdb or
// endpointslice reads the beta versions, so against kube-apiserver 1.25+
// (and kplane) they fail with 404 "the server could not find the
// requested resource"; `create pdb` maps policy/v1beta1 through discovery
// first and fails on the client: no matches for kind "PodDisruptionBudget"
// in version "policy/v1beta1". The test asserts exactly that for 1.20, then
// creates the objects from batch/v1 and policy/v1 manifests, which 1.20's
// `apply` and `get` handle (docs/testing.md, "Other kubectl versions").
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/kubectl/kubectl_versions.h"
#include "tests/e2e/kubectl/up_fixture.h"

namespace kplane::e2e {
namespace {

constexpr int kNodes = 2;

class WorkloadsInEveryKubectl
    : public KplaneUpSuiteTest<WorkloadsInEveryKubectl> {
 public:
  static void SetUpTestSuite() { StartSharedControlPlane(kNodes); }
};

bool Contains(const std::string& text, const std::string& re) {
  return std::regex_search(text, std::regex(re));
}

// What kubectl prints for a 404 from the API (kube's NotFound Status of an
// unserved group-version).
constexpr char kNotServed[] =
    "the server could not find the requested resource";

std::string StatefulSet(const std::string& ns) {
  return R"(apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  namespace: )" +
         ns + R"(
spec:
  serviceName: web
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
        ports: [{containerPort: 80}]
)";
}

std::string DaemonSet(const std::string& ns) {
  return R"(apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: )" +
         ns + R"(
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: agent:1.0
)";
}

// The objects 1.20 cannot create with `kubectl create` (it writes their
// removed beta versions), in their GA versions.
std::string CronJob(const std::string& ns) {
  return R"(apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
  namespace: )" +
         ns + R"(
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: tick
            image: busybox
)";
}

std::string Pdb(const std::string& ns) {
  return R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: budget
  namespace: )" +
         ns + R"(
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
)";
}

TEST_P(WorkloadsInEveryKubectl, CreateGetDescribeRolloutAndEvents) {
  StatusOr<KubectlVersion> k = FindKubectlVersion(GetParam());
  if (!k.ok()) GTEST_SKIP() << k.status().message();
  const bool removed_betas = k->minor < 25;  // asks for APIs gone in 1.25
  const std::string ns = "kv" + std::to_string(100 + k->minor);
  auto run = [&](std::vector<std::string> args) {
    return up().KubectlAt(k->binary, std::move(args));
  };
  // Runs kubectl in the namespace and expects success; its stdout.
  auto must = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-n", ns});
    RunResult r = run(args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << cmd << "\n" << r.out << r.err;
    return r.out;
  };
  // Runs kubectl in the namespace and expects it to fail with `message`
  // (by default kube's 404 for an API removed in 1.25).
  auto not_served = [&](std::vector<std::string> args,
                        const std::string& message = kNotServed) {
    args.insert(args.begin(), {"-n", ns});
    RunResult r = run(args);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  // Watches `args` (a `get -w`) until a line matches `re`; that line.
  auto await_line = [&](std::vector<std::string> args, const std::string& re) {
    args.insert(args.begin(), {"-n", ns});
    std::unique_ptr<Process> w = up().KubectlBackground(k->binary, args);
    for (;;) {
      std::optional<std::string> line =
          w->ReadLine(std::chrono::milliseconds(120000));
      if (!line.has_value()) {
        ADD_FAILURE() << "no line matching " << re;
        return std::string();
      }
      if (Contains(*line, re)) return *line;
    }
  };

  EXPECT_EQ(must({"create", "namespace", ns}),
            "namespace/" + ns + " created\n");

  // ServiceAccount.
  EXPECT_EQ(must({"create", "serviceaccount", "robot"}),
            "serviceaccount/robot created\n");
  EXPECT_TRUE(Contains(must({"get", "serviceaccount", "robot"}),
                       "NAME\\s+SECRETS\\s+AGE\nrobot\\s+0\\s+"));
  std::string d = must({"describe", "serviceaccount", "robot"});
  EXPECT_TRUE(Contains(d, "Name:\\s+robot\n")) << d;
  EXPECT_TRUE(Contains(d, "Namespace:\\s+" + ns + "\n")) << d;

  // Job.
  EXPECT_EQ(must({"create", "job", "once", "--image=busybox"}),
            "job.batch/once created\n");
  std::string g = must({"get", "job", "once"});
  EXPECT_TRUE(Contains(g, "NAME\\s+.*COMPLETIONS")) << g;
  EXPECT_TRUE(Contains(g, "\nonce\\s+")) << g;
  d = must({"describe", "job", "once"});
  EXPECT_TRUE(Contains(d, "Name:\\s+once\n")) << d;
  EXPECT_TRUE(Contains(d, "Parallelism:\\s+1\n")) << d;
  EXPECT_TRUE(Contains(d, "Image:\\s+busybox\n")) << d;

  // CronJob: 1.20's `create cronjob` posts batch/v1beta1.
  if (removed_betas) {
    not_served({"create", "cronjob", "tick", "--image=busybox",
                "--schedule=*/5 * * * *"});
    EXPECT_EQ(must({"apply", "-f",
                    up().WriteFile(ns + "-cronjob.yaml", CronJob(ns))}),
              "cronjob.batch/tick created\n");
  } else {
    EXPECT_EQ(must({"create", "cronjob", "tick", "--image=busybox",
                    "--schedule=*/5 * * * *"}),
              "cronjob.batch/tick created\n");
  }
  g = must({"get", "cronjob", "tick"});
  EXPECT_TRUE(Contains(g, "NAME\\s+SCHEDULE\\s+")) << g;
  EXPECT_TRUE(Contains(g, "\ntick\\s+\\*/5 \\* \\* \\* \\*\\s+")) << g;
  if (removed_betas) {
    not_served({"describe", "cronjob", "tick"});  // reads batch/v1beta1
  } else {
    d = must({"describe", "cronjob", "tick"});
    EXPECT_TRUE(Contains(d, "Name:\\s+tick\n")) << d;
    EXPECT_TRUE(Contains(d, "Schedule:\\s+\\*/5 \\* \\* \\* \\*\n")) << d;
  }

  // StatefulSet and DaemonSet, rolled out by the controllers onto the
  // simulated nodes.
  EXPECT_EQ(
      must({"apply", "-f", up().WriteFile(ns + "-sts.yaml", StatefulSet(ns))}),
      "statefulset.apps/web created\n");
  EXPECT_EQ(
      must({"apply", "-f", up().WriteFile(ns + "-ds.yaml", DaemonSet(ns))}),
      "daemonset.apps/agent created\n");
  std::string rs =
      must({"rollout", "status", "statefulset/web", "--timeout=120s"});
  EXPECT_TRUE(Contains(rs, "roll(ing update| out) complete")) << rs;
  rs = must({"rollout", "status", "daemonset/agent", "--timeout=120s"});
  EXPECT_NE(rs.find("daemon set \"agent\" successfully rolled out"),
            std::string::npos)
      << rs;
  g = must({"get", "statefulset", "web"});
  EXPECT_TRUE(Contains(g, "\nweb\\s+2/2\\s+")) << g;
  d = must({"describe", "statefulset", "web"});
  EXPECT_TRUE(Contains(d, "Name:\\s+web\n")) << d;
  EXPECT_TRUE(Contains(d, "Replicas:\\s+2 desired \\| 2 total\n")) << d;
  EXPECT_TRUE(Contains(d, "Pods Status:\\s+2 Running")) << d;
  g = must({"get", "daemonset", "agent"});
  EXPECT_TRUE(Contains(g, "\nagent\\s+2\\s+2\\s+2\\s+2\\s+2\\s+")) << g;
  d = must({"describe", "daemonset", "agent"});
  EXPECT_TRUE(Contains(d, "Desired Number of Nodes Scheduled: 2\n")) << d;
  EXPECT_TRUE(Contains(d, "Number of Nodes Scheduled with Up-to-date Pods: 2"))
      << d;

  // PodDisruptionBudget: 1.20's `create pdb` posts policy/v1beta1.
  if (removed_betas) {
    // Mapped through discovery first, which lists no policy/v1beta1.
    not_served(
        {"create", "pdb", "budget", "--selector=app=web", "--min-available=1"},
        "error: no matches for kind \"PodDisruptionBudget\" in "
        "version \"policy/v1beta1\"");
    EXPECT_EQ(must({"apply", "-f", up().WriteFile(ns + "-pdb.yaml", Pdb(ns))}),
              "poddisruptionbudget.policy/budget created\n");
  } else {
    EXPECT_EQ(must({"create", "pdb", "budget", "--selector=app=web",
                    "--min-available=1"}),
              "poddisruptionbudget.policy/budget created\n");
  }
  // Its status comes from the disruption controller: 1 disruption allowed
  // once both pods count as healthy.
  await_line({"get", "pdb", "budget", "-w"}, "^budget\\s+1\\s+N/A\\s+1\\s+");
  if (removed_betas) {
    not_served({"describe", "pdb", "budget"});  // reads policy/v1beta1
  } else {
    d = must({"describe", "pdb", "budget"});
    EXPECT_TRUE(Contains(d, "Name:\\s+budget\n")) << d;
    EXPECT_TRUE(Contains(d, "Min available:\\s+1\n")) << d;
    EXPECT_TRUE(Contains(d, "Allowed disruptions:\\s+1\n")) << d;
  }

  // A Service over the StatefulSet's pods: the endpoints controller's
  // Endpoints and the EndpointSlice controller's slice.
  EXPECT_EQ(must({"create", "service", "clusterip", "web", "--tcp=80:80"}),
            "service/web created\n");
  const std::string addresses =
      await_line({"get", "endpoints", "web", "-w", "-o",
                  "jsonpath={.subsets[*].addresses[*].ip}{\"\\n\"}"},
                 "^\\S+ \\S+$");
  EXPECT_FALSE(addresses.empty());
  g = must({"get", "endpoints", "web"});
  EXPECT_TRUE(Contains(g, "\nweb\\s+[0-9.]+:80,[0-9.]+:80\\s+")) << g;
  d = must({"describe", "endpoints", "web"});
  EXPECT_TRUE(Contains(d, "Addresses:\\s+[0-9.]+,[0-9.]+\n")) << d;
  g = await_line(
      {"get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-w"},
      "^web-\\S+\\s+IPv4\\s+80\\s+[0-9.]+,[0-9.]+\\s+");
  if (removed_betas) {
    // reads discovery.k8s.io/v1beta1
    not_served(
        {"describe", "endpointslices", "-l", "kubernetes.io/service-name=web"});
  } else {
    d = must(
        {"describe", "endpointslices", "-l", "kubernetes.io/service-name=web"});
    EXPECT_TRUE(Contains(d, "AddressType:\\s+IPv4\n")) << d;
    EXPECT_TRUE(Contains(d, "Ports:\\s*\n\\s+Name\\s+Port\\s+Protocol")) << d;
  }

  // Events: the StatefulSet controller's, as the pods were created.
  await_line({"get", "events", "-w"},
             "Normal\\s+SuccessfulCreate\\s+statefulset/web\\s+create Pod "
             "web-0 in StatefulSet web successful");
  g = must({"get", "events"});
  EXPECT_TRUE(Contains(g, "LAST SEEN\\s+TYPE\\s+REASON\\s+OBJECT\\s+MESSAGE\n"))
      << g;
  EXPECT_TRUE(Contains(g, "SuccessfulCreate\\s+daemonset/agent\\s+")) << g;
}

INSTANTIATE_TEST_SUITE_P(Versions, WorkloadsInEveryKubectl,
                         ::testing::ValuesIn(kKubectlVersionNames),
                         KubectlVersionParamName);

}  // namespace
}  // namespace kplane::e2e
