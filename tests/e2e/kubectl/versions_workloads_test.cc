// Workloads with every kubectl version (issues #19, #20; kubectl_versions.h:
// 1.20 when KPLANE_KUBECTL_1_20 names it, 1.27, 1.32, 1.33) against one
// `kplane up` in process for the whole suite (two simulated nodes,
// controllers, security on). Each version works in a namespace of its own
// (kv120, kv127, ...) and goes through what a user types:
//
//   create sa / job / cronjob / pdb / service, apply a StatefulSet and a
//   DaemonSet and `rollout status` both, get and describe job, cronjob,
//   statefulset, daemonset, pdb, endpoints, endpointslices,
//   serviceaccount, and get events;
//   logs of a running pod (--tail, --timestamps, -f) and of a Job's pod
//   (logs job/<name>, also -f), top nodes and top pods (LogsAndTop).
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

// A pod that logs five lines a second and a Job whose one pod logs for its
// two seconds (kubeletsim's default run of a Never pod) and exits 0
// (docs/kubeletsim.md, "Container logs").
std::string ChattyPodAndJob(const std::string& ns) {
  return R"(apiVersion: v1
kind: Pod
metadata:
  name: chatty
  namespace: )" +
         ns + R"(
  annotations: {kubeletsim.kplane.io/log-interval: 200ms}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: batch
  namespace: )" +
         ns + R"(
spec:
  template:
    metadata:
      annotations: {kubeletsim.kplane.io/log-interval: 300ms}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
)";
}

// The number of `text`'s lines that match `re`.
int LinesMatching(const std::string& text, const std::string& re) {
  const std::regex r(re);
  int n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (std::regex_search(text.substr(start, end - start), r)) ++n;
    start = end + 1;
  }
  return n;
}

// `kubectl logs` (--tail, --timestamps, -f) of a running pod and of a
// Job's pod, and `kubectl top nodes` / `top pods`, in every version, in a
// namespace of its own (kl120, kl127, ...) on the suite's control plane.
// pods/log and metrics.k8s.io/v1beta1 are the same APIs for 1.20 as for
// 1.33, so no version is expected to fail here; only top's column headers
// differ (below).
TEST_P(WorkloadsInEveryKubectl, LogsAndTop) {
  StatusOr<KubectlVersion> k = FindKubectlVersion(GetParam());
  if (!k.ok()) GTEST_SKIP() << k.status().message();
  const std::string ns = "kl" + std::to_string(100 + k->minor);
  // Runs kubectl in the namespace and expects success; its stdout.
  auto must = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-n", ns});
    RunResult r = up().KubectlAt(k->binary, args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << cmd << "\n" << r.out << r.err;
    return r.out;
  };
  const std::string chatty_line =
      "app: log line ([0-9]+) of pod " + ns + "/chatty";

  EXPECT_EQ(must({"create", "namespace", ns}),
            "namespace/" + ns + " created\n");
  EXPECT_EQ(must({"apply", "-f",
                  up().WriteFile(ns + "-logs.yaml", ChattyPodAndJob(ns))}),
            "pod/chatty created\njob.batch/batch created\n");
  EXPECT_EQ(
      must({"wait", "--for=condition=Ready", "pod/chatty", "--timeout=60s"}),
      "pod/chatty condition met\n");

  // A running pod, followed from its first line: line 0 says it started,
  // then each next line as the container writes it (five a second). Four
  // lines are enough; then the process is killed. After this the log has at
  // least four lines, so --tail below is not racing the container.
  {
    std::unique_ptr<Process> f = up().KubectlBackground(
        k->binary,
        {"-n", ns, "logs", "-f", "chatty", "--pod-running-timeout=30s"});
    std::optional<std::string> line =
        f->ReadLine(std::chrono::milliseconds(30000));
    EXPECT_EQ(line.value_or("(no line)"),
              "kubeletsim: container app of pod " + ns + "/chatty started");
    for (int i = 1; i <= 3; ++i) {
      line = f->ReadLine(std::chrono::milliseconds(30000));
      EXPECT_EQ(
          line.value_or("(no line)"),
          "app: log line " + std::to_string(i) + " of pod " + ns + "/chatty");
    }
  }
  // The last lines, and with the kubelet's timestamps (RFC 3339, nine
  // fractional digits).
  std::string out = must({"logs", "chatty", "--tail=2"});
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      out, m, std::regex(chatty_line + "\n" + chatty_line + "\n")))
      << out;
  EXPECT_EQ(std::stoi(m[2]), std::stoi(m[1]) + 1) << out;
  out = must({"logs", "chatty", "--tail=1", "--timestamps"});
  EXPECT_TRUE(Contains(out,
                       "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
                       "[0-9]{2}\\.[0-9]{9}Z " +
                           chatty_line + "\n$"))
      << out;

  // A Job's pod, found through the Job's selector, once it has finished:
  // its whole log, and with -f the same log, the stream ending with the
  // container.
  EXPECT_EQ(
      must({"wait", "--for=condition=complete", "job/batch", "--timeout=60s"}),
      "job.batch/batch condition met\n");
  out = must({"logs", "job/batch"});
  const std::string job_log = "^kubeletsim: container work of pod " + ns +
                              "/batch-[a-z0-9]+ started\n"
                              "work: log line 1 of pod " +
                              ns + "/batch-[a-z0-9]+\n";
  EXPECT_TRUE(Contains(out, job_log)) << out;
  EXPECT_TRUE(Contains(out, "work: log line 3 of pod " + ns + "/batch-"))
      << out;
  EXPECT_EQ(must({"logs", "-f", "job/batch", "--pod-running-timeout=30s"}),
            out);

  // top: both nodes; the running pod and its container, not the Job's
  // finished pod (metrics-server only reports Running pods).
  out = must({"top", "nodes"});
  // kubectl 1.20 and 1.27 head the percentages CPU% and MEMORY%, 1.32 and
  // 1.33 CPU(%) and MEMORY(%) (the versions between are not run here).
  const std::string percent = k->minor <= 27 ? "%" : "\\(%\\)";
  EXPECT_TRUE(Contains(out, "^NAME\\s+CPU\\(cores\\)\\s+CPU" + percent +
                                "\\s+MEMORY\\(bytes\\)\\s+MEMORY" + percent +
                                "\\s*\n"))
      << out;
  EXPECT_EQ(LinesMatching(out,
                          "^node-[0-9]+\\s+[0-9]+m\\s+[0-9]+%\\s+"
                          "[0-9]+Mi\\s+[0-9]+%"),
            kNodes)
      << out;
  out = must({"top", "pods"});
  EXPECT_TRUE(Contains(out, "^NAME\\s+CPU\\(cores\\)\\s+MEMORY\\(bytes\\)"))
      << out;
  EXPECT_EQ(LinesMatching(out, "^chatty\\s+[0-9]+m\\s+[0-9]+Mi"), 1) << out;
  EXPECT_EQ(LinesMatching(out, "^batch-"), 0) << out;
  out = must({"top", "pod", "chatty", "--containers"});
  EXPECT_EQ(LinesMatching(out, "^chatty\\s+app\\s+[0-9]+m\\s+[0-9]+Mi"), 1)
      << out;
}

INSTANTIATE_TEST_SUITE_P(Versions, WorkloadsInEveryKubectl,
                         ::testing::ValuesIn(kKubectlVersionNames),
                         KubectlVersionParamName);

}  // namespace
}  // namespace kplane::e2e
