// Real processes: `kplane apiserver` (HTTPS), `kplane kubeletsim
// --kubeconfig`, `kpctl sim` and the installed kubectl. Reads wait on pipes
// (process.h); kubectl wait awaits conditions through watches; no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/e2e/kubectl/process.h"
#include "tests/e2e/kubectl/tls_setup.h"

namespace kplane::kubeletsim {
namespace {

using e2e::Process;
using e2e::RunResult;
using std::chrono::milliseconds;

// Reads `proc`'s stdout until a line contains `marker`; returns the
// number right after it.
int PortAfter(Process* proc, const std::string& marker) {
  for (;;) {
    std::optional<std::string> line = proc->ReadLine(milliseconds(60000));
    if (!line) return 0;
    size_t at = line->find(marker);
    if (at != std::string::npos)
      return std::stoi(line->substr(at + marker.size()));
  }
}

TEST(KubeletSimE2E, NodesPodsAndFaultInjection) {
  char tmpl[] = "/tmp/kplane-kubeletsim-e2e-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  // Over HTTPS: kubectl and `kplane kubeletsim --kubeconfig` read the CA
  // and the client certificate from one kubeconfig, as kubelets do.
  auto pki = e2e::MakeTestPki(dir);
  ASSERT_TRUE(pki.ok()) << pki.status();
  Process api(e2e::ApiserverArgv(KPLANE_BINARY, dir, *pki), {},
              dir + "/apiserver.log");
  api.Start();
  int api_port = PortAfter(&api, "serving on https://127.0.0.1:");
  ASSERT_GT(api_port, 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(api_port);
  std::ofstream(dir + "/kubeconfig")
      << e2e::KubeconfigWithData(url, pki->ca.cert_pem, pki->admin);
  Process sim(
      {KPLANE_BINARY, "kubeletsim", "--kubeconfig", dir + "/kubeconfig",
       // The control endpoint over HTTPS, clients need a CA-signed
       // certificate (the apiserver's pair serves 127.0.0.1 here too).
       "--tls-cert-file", pki->dir + "/apiserver.crt", "--tls-private-key-file",
       pki->dir + "/apiserver.key", "--client-ca-file", pki->dir + "/ca.crt",
       // No controller manager here to assign pod CIDRs.
       "--register-pod-cidr", "--nodes", "3", "--port", "-1",
       "--lease-renew-interval", "1s", "--pod-start-delay", "100ms",
       "--pod-termination-delay", "100ms"},
      {}, dir + "/kubeletsim.log");
  sim.Start();
  int sim_port = PortAfter(&sim, "control on https://127.0.0.1:");
  ASSERT_GT(sim_port, 0);
  const std::string endpoint =
      "--endpoint=https://127.0.0.1:" + std::to_string(sim_port);
  const std::vector<std::string> env = {"KUBECONFIG=" + dir + "/kubeconfig",
                                        "HOME=" + dir};
  auto run = [&](std::vector<std::string> argv) {
    Process p(std::move(argv), env);
    p.Start();
    return p.Wait(milliseconds(60000));
  };
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  };

  RunResult r = kubectl({"wait", "--for=condition=Ready", "node/node-0",
                         "node/node-1", "node/node-2", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl({"get", "leases", "-n", "kube-node-lease", "-o",
               "jsonpath={.items[*].spec.holderIdentity}"});
  EXPECT_EQ(r.out, "node-0 node-1 node-2");

  // kpctl sim trusts the kubeconfig's CA and presents its certificate; with
  // the CA alone it is refused.
  r = run({KPCTL_BINARY, "sim", "list", endpoint,
           "--cacert=" + pki->dir + "/ca.crt"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  r = run({KPCTL_BINARY, "sim", "stop-node", "node-1", endpoint});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "node/node-1 stopped\n");
  r = run({KPCTL_BINARY, "sim", "list", endpoint});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("node-1                   Stopped"), std::string::npos)
      << r.out;
  r = run({KPCTL_BINARY, "sim", "resume-node", "node-1", endpoint});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run({KPCTL_BINARY, "sim", "stop-node", "node-7", endpoint});
  EXPECT_EQ(r.exit_code, 1);

  std::ofstream(dir + "/pod.yaml") << R"(apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeName: node-2
  containers: [{name: app, image: nginx:1.27}]
)";
  r = kubectl({"apply", "-f", dir + "/pod.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"wait", "--for=condition=Ready", "pod/web", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl({"get", "pod", "web", "-o", "jsonpath={.status.podIP}"});
  EXPECT_EQ(r.out, "10.64.2.2");
  // kubectl delete waits until the pod is gone: the fleet's final DELETE.
  r = kubectl({"delete", "pod", "web", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(milliseconds(20000)).exit_code, 0);
  api.Signal(SIGTERM);
  EXPECT_EQ(api.Wait(milliseconds(20000)).exit_code, 0);
  if (!HasFailure()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

// pods/log end to end: kubectl -> kplane apiserver (HTTPS) -> the
// kubeletsim's /containerLogs over HTTPS with the apiserver's kubelet
// client certificate, the serving certificate checked against the CA.
TEST(KubeletSimE2E, KubectlLogsThroughTheApiserver) {
  char tmpl[] = "/tmp/kplane-kubeletsim-logs-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto pki = e2e::MakeTestPki(dir);
  ASSERT_TRUE(pki.ok()) << pki.status();
  std::vector<std::string> api_argv =
      e2e::ApiserverArgv(KPLANE_BINARY, dir, *pki);
  for (std::string f :
       {"--kubelet-client-certificate=" + pki->dir + "/admin.crt",
        "--kubelet-client-key=" + pki->dir + "/admin.key",
        "--kubelet-certificate-authority=" + pki->dir + "/ca.crt"}) {
    api_argv.push_back(f);
  }
  Process api(api_argv, {}, dir + "/apiserver.log");
  api.Start();
  int api_port = PortAfter(&api, "serving on https://127.0.0.1:");
  ASSERT_GT(api_port, 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(api_port);
  std::ofstream(dir + "/kubeconfig")
      << e2e::KubeconfigWithData(url, pki->ca.cert_pem, pki->admin);
  Process sim({KPLANE_BINARY, "kubeletsim", "--kubeconfig", dir + "/kubeconfig",
               "--tls-cert-file", pki->dir + "/apiserver.crt",
               "--tls-private-key-file", pki->dir + "/apiserver.key",
               "--client-ca-file", pki->dir + "/ca.crt", "--register-pod-cidr",
               "--nodes", "1", "--port", "-1", "--pod-start-delay", "100ms"},
              {}, dir + "/kubeletsim.log");
  sim.Start();
  ASSERT_GT(PortAfter(&sim, "control on https://127.0.0.1:"), 0);
  const std::vector<std::string> env = {"KUBECONFIG=" + dir + "/kubeconfig",
                                        "HOME=" + dir};
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(std::move(argv), env);
    p.Start();
    return p.Wait(milliseconds(60000));
  };
  RunResult r = kubectl(
      {"wait", "--for=condition=Ready", "node/node-0", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // web runs until deleted, a line every 200ms; job runs 3s, a line every
  // 100ms; idle has no node.
  std::ofstream(dir + "/pods.yaml") << R"(apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  annotations: {kubeletsim.kplane.io/log-interval: 200ms}
spec:
  nodeName: node-0
  containers: [{name: app, image: nginx:1.27}]
---
apiVersion: v1
kind: Pod
metadata:
  name: two
  namespace: default
spec:
  nodeName: node-0
  containers: [{name: a, image: nginx:1.27}, {name: b, image: nginx:1.27}]
---
apiVersion: v1
kind: Pod
metadata: {name: idle, namespace: default}
spec:
  containers: [{name: app, image: nginx:1.27}]
)";
  r = kubectl({"apply", "-f", dir + "/pods.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl(
      {"wait", "--for=condition=Ready", "pod/web", "pod/two", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  r = kubectl({"logs", "web"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "kubeletsim: container app of pod default/web started");
  r = kubectl({"logs", "web", "--tail=1", "--timestamps"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("Z app: log line "), std::string::npos) << r.out;
  r = kubectl({"logs", "two", "-c", "b", "--limit-bytes=10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "kubeletsim");
  // kube's errors, through kubectl.
  r = kubectl({"logs", "web", "-c", "nope"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("container nope is not valid for pod web"),
            std::string::npos)
      << r.err;
  r = kubectl({"logs", "web", "--previous"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(
      r.err.find(
          R"(previous terminated container "app" in pod "web" not found)"),
      std::string::npos)
      << r.err;
  r = kubectl(
      {"get", "--raw", "/api/v1/namespaces/default/pods/web/log?tailLines=-3"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("PodLogOptions \"web\" is invalid: tailLines: Invalid "
                       "value: -3: must be greater than or equal to 0"),
            std::string::npos)
      << r.err;
  r = kubectl({"get", "--raw", "/api/v1/namespaces/default/pods/two/log"});
  EXPECT_NE(r.err.find("a container name must be specified for pod two, "
                       "choose one of: [a b]"),
            std::string::npos)
      << r.err;
  r = kubectl({"logs", "idle"});  // kube: no node yet, an empty log
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");

  // Follow: the stream grows as lines come due and ends with the
  // container (3s at 100ms a line: lines up to 30).
  std::ofstream(dir + "/job.yaml") << R"(apiVersion: v1
kind: Pod
metadata:
  name: job
  namespace: default
  annotations:
    kubeletsim.kplane.io/log-interval: 100ms
    kubeletsim.kplane.io/run-for: 3s
spec:
  nodeName: node-0
  restartPolicy: Never
  containers: [{name: app, image: busybox}]
)";
  r = kubectl({"apply", "-f", dir + "/job.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"wait", "--for=condition=Ready", "pod/job", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl({"logs", "-f", "job", "--tail=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<int> numbers;
  for (size_t at = 0; (at = r.out.find("log line ", at)) != std::string::npos;
       at += 9) {
    numbers.push_back(std::stoi(r.out.substr(at + 9)));
  }
  ASSERT_GT(numbers.size(), 2u) << r.out;  // more than the tail: followed
  for (size_t i = 1; i < numbers.size(); ++i) {
    EXPECT_EQ(numbers[i], numbers[i - 1] + 1) << r.out;
  }
  EXPECT_GE(numbers.back(), 30) << r.out;
  EXPECT_LE(numbers.back(), 32) << r.out;

  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(milliseconds(20000)).exit_code, 0);
  api.Signal(SIGTERM);
  EXPECT_EQ(api.Wait(milliseconds(20000)).exit_code, 0);
  if (!HasFailure()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

}  // namespace
}  // namespace kplane::kubeletsim
