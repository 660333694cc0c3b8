// Real processes: `kplane apiserver` (HTTPS), `kplane kubeletsim
// --kubeconfig`, `kpctl sim` and the installed kubectl. Reads wait on pipes
// (process.h); kubectl wait awaits conditions through watches; no sleeps.
#include <gtest/gtest.h>

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
       "--nodes", "3", "--port", "-1", "--lease-renew-interval", "1s",
       "--pod-start-delay", "100ms", "--pod-termination-delay", "100ms"},
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

}  // namespace
}  // namespace kplane::kubeletsim
