// pods/exec with the real kubectl (1.32: WebSocket, v5.channel.k8s.io)
// against the whole control plane `kplane up` runs in process (TLS, RBAC):
// the apiserver upgrades kubectl's request, reaches the pod's simulated
// kubelet with its kubelet client certificate, and the kubelet's simulated
// shell answers. A ServiceAccount with get+create on pods/exec may exec;
// one with only get may not (kube 1.35's create check on the WebSocket).
// Older kubectls (1.27; Debian 12's 1.20 when KPLANE_KUBECTL_1_20 names
// it) and 1.32 with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false exec over
// SPDY/3.1 instead (net/spdy.h): a POST, authorized as `create`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tests/e2e/kubectl/kubectl_versions.h"
#include "tests/e2e/kubectl/up_fixture.h"

namespace kplane::e2e {
namespace {

constexpr char kPod[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1.27
    env: [{name: GREETING, value: hello}]
  - name: side
    image: busybox
)";

class KubectlExec : public KplaneUpTest {};

TEST_F(KubectlExec, SimulatedShellOverWebSocketUnderRbac) {
  ASSERT_NO_FATAL_FAILURE(StartControlPlane(/*nodes=*/1));
  const std::string& dir = dir_;
  auto kubectl = [this](std::vector<std::string> args) {
    return Kubectl(std::move(args));
  };
  auto kubectl_stdin = [this](const std::string& input,
                              const std::string& args) {
    return KubectlWithStdin(input, args);
  };
  std::ofstream(dir + "/pod.yaml") << kPod;
  RunResult r = kubectl({"apply", "-f", dir + "/pod.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"wait", "--for=condition=Ready", "pod/web", "--timeout=120s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  r = kubectl({"exec", "web", "--", "echo", "hi"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  r = kubectl({"exec", "web", "-c", "app", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = kubectl({"exec", "web", "--", "nosuch"});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_NE(r.err.find("nosuch: command not found"), std::string::npos)
      << r.err;
  r = kubectl({"exec", "web", "-c", "app", "--", "env"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GREETING=hello\n"), std::string::npos) << r.out;
  r = kubectl({"exec", "web", "--", "ls", "/"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("etc\n"), std::string::npos) << r.out;
  r = kubectl({"exec", "web", "--", "cat", "/etc/hostname"});
  EXPECT_EQ(r.out, "web\n") << r.err;

  // stdin piped into an interactive shell: line by line, to `exit`.
  r = kubectl_stdin("echo $GREETING\nhostname; false\necho $?\nexit 4\n",
                    "exec -i web -c app -- sh");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, "hello\nweb\n1\n");
  // ... and to the end of stdin (v5's close of the stdin channel).
  r = kubectl_stdin("echo one\necho two\n", "exec -i web -- sh");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "one\ntwo\n");
  r = kubectl_stdin("copied\n", "exec -i web -- cat");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "copied\n");

  // kube's errors, through kubectl.
  r = kubectl({"exec", "web", "-c", "nope", "--", "ls"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("container nope is not valid for pod web"),
            std::string::npos)
      << r.err;
  r = kubectl({"exec", "missing", "--", "ls"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("pods \"missing\" not found"), std::string::npos)
      << r.err;

  // RBAC: get+create on pods/exec may exec; get alone may not.
  r = kubectl({"config", "view", "--raw", "-o",
               "jsonpath={.clusters[0].cluster.server}"});
  const std::string server = r.out;
  for (const char* sa : {"runner", "reader"}) {
    r = kubectl({"create", "serviceaccount", sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = kubectl({"create", "role", "runner", "--verb=get,create",
               "--resource=pods,pods/exec"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl(
      {"create", "role", "reader", "--verb=get", "--resource=pods,pods/exec"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* sa : {"runner", "reader"}) {
    r = kubectl({"create", "rolebinding", sa, std::string("--role=") + sa,
                 std::string("--serviceaccount=default:") + sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
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
  r = as("runner", {"exec", "web", "-n", "default", "--", "echo", "ok"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  r = as("reader", {"exec", "web", "-n", "default", "--", "echo", "ok"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("cannot create resource \"pods/exec\""),
            std::string::npos)
      << r.err;
}

TEST_F(KubectlExec, OlderKubectlsOverSpdyUnderRbac) {
  struct Client {
    std::string name;
    std::string binary;
    std::vector<std::string> env;  // beyond KUBECONFIG and HOME
  };
  std::vector<Client> clients;
  const std::string k127 = KubectlBeside("1.27");
  ASSERT_FALSE(k127.empty()) << "kubectl.1.27 beside kubectl";
  clients.push_back({"1.27", k127, {}});
  clients.push_back(
      {"1.32 (SPDY)", "kubectl", {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"}});
  if (StatusOr<KubectlVersion> k120 = FindKubectlVersion("1.20"); k120.ok()) {
    clients.push_back({"1.20", k120->binary, {}});
  } else {
    std::cerr << k120.status().message() << "\n";
  }
  const std::string k133 = KubectlBeside("1.33");  // WebSocket, for the proof

  ASSERT_NO_FATAL_FAILURE(StartControlPlane(/*nodes=*/1));
  const std::string& dir = dir_;
  auto env_of = [&](const Client& c) {
    std::vector<std::string> env = {"KUBECONFIG=" + dir + "/kubeconfig",
                                    "HOME=" + dir};
    env.insert(env.end(), c.env.begin(), c.env.end());
    return env;
  };
  auto run = [&](const Client& c, std::vector<std::string> args) {
    std::vector<std::string> argv = {c.binary, "--cache-dir", dir + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, env_of(c));
    p.Start();
    return p.Wait(std::chrono::milliseconds(120000));
  };
  auto run_stdin = [&](const Client& c, const std::string& input,
                       const std::string& args) {
    std::ofstream(dir + "/stdin.txt") << input;
    Process p({"sh", "-c",
               c.binary + " --cache-dir " + dir + "/cache " + args + " < " +
                   dir + "/stdin.txt"},
              env_of(c));
    p.Start();
    return p.Wait(std::chrono::milliseconds(120000));
  };
  const Client admin{"1.32", "kubectl", {}};
  std::ofstream(dir + "/pod.yaml") << kPod;
  RunResult r = run(admin, {"apply", "-f", dir + "/pod.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run(admin,
          {"wait", "--for=condition=Ready", "pod/web", "--timeout=120s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  for (const Client& c : clients) {
    SCOPED_TRACE("kubectl " + c.name);
    r = run(c, {"exec", "web", "--", "ls", "/"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("etc\n"), std::string::npos) << r.out;
    r = run(c, {"exec", "web", "-c", "app", "--", "sh", "-c", "exit 3"});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    r = run(c, {"exec", "web", "--", "nosuch"});
    EXPECT_EQ(r.exit_code, 127) << r.err;
    EXPECT_NE(r.err.find("nosuch: command not found"), std::string::npos)
        << r.err;
    // Interactive: stdin line by line to `exit`, and to stdin's end (the
    // FIN of the stdin stream).
    r = run_stdin(c, "echo $GREETING\nhostname; false\necho $?\nexit 4\n",
                  "exec -i web -c app -- sh");
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_EQ(r.out, "hello\nweb\n1\n");
    r = run_stdin(c, "copied\n", "exec -i web -- cat");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "copied\n");
    r = run(c, {"exec", "web", "-c", "nope", "--", "ls"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("container nope is not valid for pod web"),
              std::string::npos)
        << r.err;
  }
  if (!k133.empty()) {
    r = run({"1.33", k133, {}}, {"exec", "web", "--", "ls", "/"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("etc\n"), std::string::npos) << r.out;
  }

  // RBAC over SPDY: the POST is `create` on pods/exec; `get` alone is
  // refused before any upgrade.
  r = run(admin, {"config", "view", "--raw", "-o",
                  "jsonpath={.clusters[0].cluster.server}"});
  const std::string server = r.out;
  for (const char* sa : {"runner", "reader"}) {
    r = run(admin, {"create", "serviceaccount", sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = run(admin, {"create", "role", "runner", "--verb=get,create",
                  "--resource=pods,pods/exec"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run(admin, {"create", "role", "reader", "--verb=get",
                  "--resource=pods,pods/exec"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* sa : {"runner", "reader"}) {
    r = run(admin, {"create", "rolebinding", sa, std::string("--role=") + sa,
                    std::string("--serviceaccount=default:") + sa});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto as = [&](const std::string& sa, std::vector<std::string> args) {
    RunResult t = run(admin, {"create", "token", sa});
    EXPECT_EQ(t.exit_code, 0) << t.err;
    std::string token = t.out.substr(0, t.out.find('\n'));
    std::vector<std::string> argv = {
        "--kubeconfig=/dev/null", "--server=" + server,
        "--insecure-skip-tls-verify", "--token=" + token};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(clients[0], argv);
  };
  r = as("runner", {"exec", "web", "-n", "default", "--", "echo", "ok"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  r = as("reader", {"exec", "web", "-n", "default", "--", "echo", "ok"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("cannot create resource \"pods/exec\""),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kplane::e2e
