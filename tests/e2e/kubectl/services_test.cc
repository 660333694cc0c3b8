// Services for real (issue 20), with real processes: `kplane apiserver`
// (HTTPS), `kplane kubeletsim` (3 nodes), `kplane controller-manager` and
// the installed kubectl; then Patroni-style use of Endpoints through the
// Python client (patroni_endpoints.py). Reads wait on pipes (process.h) and
// kubectl wait / watches; no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/e2e/kubectl/process.h"
#include "tests/e2e/kubectl/tls_setup.h"

namespace kplane {
namespace {

using e2e::Process;
using e2e::RunResult;
using std::chrono::milliseconds;

int PortAfter(Process* proc, const std::string& marker) {
  for (;;) {
    std::optional<std::string> line = proc->ReadLine(milliseconds(60000));
    if (!line) return 0;
    size_t at = line->find(marker);
    if (at != std::string::npos) {
      return std::stoi(line->substr(at + marker.size()));
    }
  }
}

TEST(ServicesE2E, ExposeNodePortNotReadyAndPatroniEndpoints) {
  char tmpl[] = "/tmp/kplane-services-e2e-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto pki = e2e::MakeTestPki(dir);
  ASSERT_TRUE(pki.ok()) << pki.status();
  std::vector<std::string> api_argv = {
      KPLANE_BINARY, "apiserver",   "--port",      "0",
      "--data-dir",  dir + "/data", "--log-level", "warning"};
  for (std::string& f : e2e::ApiserverTlsFlags(*pki)) {
    api_argv.push_back(std::move(f));
  }
  // Its clients carry certificates without RBAC roles of their own.
  api_argv.push_back("--authorization-mode=AlwaysAllow");
  Process api(api_argv, {}, dir + "/apiserver.log");
  api.Start();
  const int api_port = PortAfter(&api, "serving on https://127.0.0.1:");
  ASSERT_GT(api_port, 0);
  const std::string kubeconfig = dir + "/kubeconfig";
  std::ofstream(kubeconfig) << e2e::KubeconfigWithData(
      "https://127.0.0.1:" + std::to_string(api_port), pki->ca.cert_pem,
      pki->admin);
  Process sim({KPLANE_BINARY,
               "kubeletsim",
               "--kubeconfig",
               kubeconfig,
               "--tls-cert-file",
               pki->dir + "/apiserver.crt",
               "--tls-private-key-file",
               pki->dir + "/apiserver.key",
               "--client-ca-file",
               pki->dir + "/ca.crt",
               "--nodes",
               "3",
               "--port",
               "-1",
               "--lease-renew-interval",
               "1s",
               "--pod-start-delay",
               "100ms",
               "--pod-termination-delay",
               "100ms"},
              {}, dir + "/kubeletsim.log");
  sim.Start();
  const int sim_port = PortAfter(&sim, "control on https://127.0.0.1:");
  ASSERT_GT(sim_port, 0);
  // A node whose lease stops is NotReady after 3 s, and its pods with it.
  // --port 0: kube's 10257 may be taken by a parallel test or a running
  // kplane up (stop 36's CI: "bind 127.0.0.1:10257: Address already in use").
  Process cm({KPLANE_BINARY, "controller-manager", "--kubeconfig", kubeconfig,
              "--node-monitor-grace-period", "3s", "--node-monitor-period",
              "500ms", "--allocate-node-cidrs", "--cluster-cidr",
              "10.244.0.0/16", "--port", "0", "--log-level", "warning"},
             {}, dir + "/controller-manager.log");
  cm.Start();
  const std::vector<std::string> env = {"KUBECONFIG=" + kubeconfig,
                                        "HOME=" + dir};
  auto run = [&](std::vector<std::string> argv) {
    Process p(std::move(argv), env);
    p.Start();
    return p.Wait(milliseconds(90000));
  };
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  };

  // The kubernetes Service and its Endpoints.
  RunResult r = kubectl({"get", "svc", "kubernetes", "-o",
                         "jsonpath={.spec.clusterIP} {.spec.ports[0].port}"});
  EXPECT_EQ(r.out, "10.96.0.1 443") << r.err;
  r = kubectl({"get", "endpoints", "kubernetes", "-o",
               "jsonpath={.subsets[0].ports[0].port}"});
  EXPECT_EQ(r.out, std::to_string(api_port)) << r.err;

  r = kubectl({"wait", "--for=condition=Ready", "node/node-0", "node/node-1",
               "node/node-2", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl({"create", "deployment", "web", "--image=nginx:1.27",
               "--replicas=3", "--port=80"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"rollout", "status", "deployment/web", "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl(
      {"expose", "deployment", "web", "--port=8080", "--target-port=80"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "service/web exposed\n");
  r = kubectl({"expose", "deployment", "web", "--name=web-np",
               "--type=NodePort", "--port=80"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = kubectl({"get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}"});
  EXPECT_TRUE(std::regex_match(
      r.out, std::regex(R"(10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+)")))
      << r.out;
  r = kubectl(
      {"get", "svc", "web-np", "-o", "jsonpath={.spec.ports[0].nodePort}"});
  ASSERT_FALSE(r.out.empty()) << r.err;
  EXPECT_GE(std::stoi(r.out), 30000);
  EXPECT_LE(std::stoi(r.out), 32767);

  // The controller manager's node IPAM gave each node a /24 of
  // --cluster-cidr; the pods' IPs come from their node's.
  r = kubectl({"get", "nodes", "-o",
               "jsonpath={range .items[*]}{.spec.podCIDR} {end}"});
  EXPECT_TRUE(
      std::regex_match(r.out, std::regex(R"((10\.244\.\d+\.0/24 ){3})")))
      << r.out << r.err;
  // The endpoints controller lists the three pods' IPs on port 80.
  r = kubectl({"wait", "endpoints/web",
               "--for=jsonpath={.subsets[0].addresses[2].targetRef.kind}=Pod",
               "--timeout=60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl({"get", "pods", "-l", "app=web", "-o",
               "jsonpath={range .items[*]}{.status.podIP}:80 {end}"});
  const std::string pod_addresses = r.out;
  r = kubectl({"get", "endpoints", "web", "-o",
               "jsonpath={range .subsets[0].addresses[*]}{.ip}:80 {end}"});
  std::vector<std::string> want, got;
  std::istringstream pw(pod_addresses), gw(r.out);
  for (std::string s; pw >> s;) want.push_back(s);
  for (std::string s; gw >> s;) got.push_back(s);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  r = kubectl({"get", "svc,endpoints"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::cout << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(
          R"(service/web-np +NodePort +10\.\S+ +<none> +80:3\d{4}/TCP)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(endpoints/web +10\.244\.\d+\.\d+:80,)")))
      << r.out;

  // A node stops: its pod turns NotReady and leaves the ready addresses.
  r = kubectl({"get", "pods", "-l", "app=web", "--field-selector",
               "spec.nodeName=node-1", "-o",
               "jsonpath={.items[0].status.podIP}"});
  const std::string node1_ip = r.out;
  ASSERT_FALSE(node1_ip.empty()) << "no web pod on node-1: " << r.err;
  r = run({KPCTL_BINARY, "sim", "stop-node", "node-1",
           "--endpoint=https://127.0.0.1:" + std::to_string(sim_port)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl(
      {"wait", "endpoints/web",
       "--for=jsonpath={.subsets[0].notReadyAddresses[0].ip}=" + node1_ip,
       "--timeout=60s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = kubectl({"get", "endpoints", "web", "-o",
               "jsonpath={.subsets[0].addresses[*].ip}"});
  EXPECT_EQ(r.out.find(node1_ip), std::string::npos) << r.out;

  // Patroni-style: the Python client on Endpoints of its own.
  r = run({"/usr/bin/python3", PATRONI_SCRIPT, kubeconfig, "default"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("stale patch 409"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nok\n"), std::string::npos) << r.out;

  cm.Signal(SIGTERM);
  cm.Wait(milliseconds(20000));
  sim.Signal(SIGTERM);
  sim.Wait(milliseconds(20000));
  api.Signal(SIGTERM);
  EXPECT_EQ(api.Wait(milliseconds(20000)).exit_code, 0);
  if (!HasFailure()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

}  // namespace
}  // namespace kplane
