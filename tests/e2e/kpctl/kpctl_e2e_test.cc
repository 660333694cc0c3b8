// The kpctl suite: the kpctl binary against a fresh `kplane apiserver`
// process (embedded store, ephemeral port, HTTPS), configured through a
// kubeconfig file the way users run it (the CA and the admin's certificate
// as files relative to it); the real kubectl alongside to check that the
// two clients' apply bookkeeping is interchangeable.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "net/http_client.h"
#include "tests/e2e/kubectl/process.h"
#include "tests/e2e/kubectl/tls_setup.h"

namespace kplane::e2e {
namespace {

using std::chrono::milliseconds;

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
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
        resources:
          requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
)";

class KpctlE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-kpctl-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto pki = MakeTestPki(dir_);
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = *pki;
    server_ = std::make_unique<Process>(
        ApiserverArgv(KPLANE_BINARY, dir_, pki_), std::vector<std::string>{},
        dir_ + "/apiserver.log");
    server_->Start();
    const std::string marker = "serving on https://127.0.0.1:";
    for (;;) {
      std::optional<std::string> line = server_->ReadLine(milliseconds(60000));
      ASSERT_TRUE(line.has_value())
          << "kplane apiserver did not start; see " << dir_ << "/apiserver.log";
      const size_t at = line->find(marker);
      if (at != std::string::npos) {
        port_ =
            static_cast<uint16_t>(std::stoi(line->substr(at + marker.size())));
        break;
      }
    }
    url_ = "https://127.0.0.1:" + std::to_string(port_);
    auto tls = AdminTls(pki_);
    ASSERT_TRUE(tls.ok()) << tls.status();
    client_ = std::make_unique<net::HttpClient>(
        "127.0.0.1", port_, net::HttpClientOptions{.tls = *tls});
    // The certificates by relative path: kpctl and kubectl resolve them
    // against the kubeconfig's directory.
    std::ofstream(dir_ + "/kubeconfig") << KubeconfigWithRelativeFiles(url_);
  }

  void TearDown() override {
    client_.reset();
    if (server_) {
      server_->Signal(SIGTERM);
      RunResult r = server_->Wait(milliseconds(20000));
      EXPECT_EQ(r.exit_code, 0) << "apiserver exit; log in " << dir_;
    }
    if (!HasFailure()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  std::vector<std::string> Env() const {
    return {"KUBECONFIG=" + dir_ + "/kubeconfig", "HOME=" + dir_};
  }

  RunResult Kpctl(std::vector<std::string> args) {
    args.insert(args.begin(), KPCTL_BINARY);
    Process p(args, Env());
    p.Start();
    return p.Wait(milliseconds(60000));
  }
  std::unique_ptr<Process> KpctlBackground(std::vector<std::string> args) {
    args.insert(args.begin(), KPCTL_BINARY);
    auto p = std::make_unique<Process>(args, Env());
    p->Start();
    return p;
  }
  RunResult Kubectl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl", "--cache-dir", dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, Env());
    p.Start();
    return p.Wait(milliseconds(90000));
  }

  std::string File(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  void Patch(const std::string& path, const std::string& body) {
    auto r = client_->Request(
        "PATCH", path, {{"Content-Type", "application/merge-patch+json"}},
        body);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 200) << r->body;
  }

  // The next stdout line of `p` (a generous deadline turns a hang into a
  // failure).
  std::string Line(Process& p) {
    return p.ReadLine(milliseconds(30000)).value_or("<no line>");
  }

  std::string dir_;
  std::string url_;
  uint16_t port_ = 0;
  TestPki pki_;
  std::unique_ptr<Process> server_;
  std::unique_ptr<net::HttpClient> client_;
};

TEST_F(KpctlE2eTest, ApplyTwiceChangesNothing) {
  const std::string f = File("app.yaml", kDeployment);
  RunResult r = Kpctl({"apply", "-f", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "deployment.apps/web created\nconfigmap/web-config created\n");
  r = Kpctl({"apply", "-f", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "deployment.apps/web unchanged\nconfigmap/web-config unchanged\n");
  r = Kpctl({"get", "deploy,cm"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "NAME                  READY   UP-TO-DATE   AVAILABLE   AGE");
  EXPECT_NE(r.out.find("\ndeployment.apps/web   0/2     0            0      "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nconfigmap/web-config   1      "), std::string::npos)
      << r.out;
}

TEST_F(KpctlE2eTest, KubectlAndKpctlApplyAreInterchangeable) {
  const std::string f = File("app.yaml", kDeployment);
  RunResult r = Kubectl({"apply", "-f", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Kpctl({"apply", "-f", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "deployment.apps/web unchanged\nconfigmap/web-config unchanged\n");
  // And the other way round, after a change made with kpctl.
  const std::string f2 = File(
      "app2.yaml", std::string(kDeployment)
                       .replace(std::string(kDeployment).find("replicas: 2"),
                                11, "replicas: 4"));
  r = Kpctl({"apply", "-f", f2});
  EXPECT_EQ(r.out,
            "deployment.apps/web configured\nconfigmap/web-config unchanged\n");
  r = Kubectl({"apply", "-f", f2});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "deployment.apps/web unchanged\nconfigmap/web-config unchanged\n");
}

TEST_F(KpctlE2eTest, YamlSyntaxErrorNamesFileAndLine) {
  const std::string f = File("bad.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                             "  name: x\ndata:\n  a: b\n   c: d\n");
  RunResult r = Kpctl({"apply", "-f", f});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("error: error parsing " + f +
                            ": error converting YAML to JSON: yaml: line 7",
                        0),
            0u)
      << r.err;
}

TEST_F(KpctlE2eTest, RolloutStatusPrintsCountsAsTheyChange) {
  ASSERT_EQ(Kpctl({"apply", "-f", File("app.yaml", kDeployment)}).exit_code, 0);
  auto status = KpctlBackground({"rollout", "status", "deployment/web"});
  EXPECT_EQ(Line(*status),
            "Waiting for deployment spec update to be observed...");
  const std::string path =
      "/apis/apps/v1/namespaces/default/deployments/web/status";
  Patch(
      path,
      R"({"status":{"observedGeneration":1,"replicas":1,"updatedReplicas":1}})");
  EXPECT_EQ(Line(*status),
            "Waiting for deployment \"web\" rollout to finish: 1 out of 2 new "
            "replicas have been updated...");
  Patch(
      path,
      R"({"status":{"replicas":2,"updatedReplicas":2,"readyReplicas":1,"availableReplicas":1}})");
  EXPECT_EQ(Line(*status),
            "Waiting for deployment \"web\" rollout to finish: 1 of 2 updated "
            "replicas are available...");
  Patch(path, R"({"status":{"readyReplicas":2,"availableReplicas":2}})");
  EXPECT_EQ(Line(*status), "deployment \"web\" successfully rolled out");
  RunResult r = status->Wait(milliseconds(30000));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(KpctlE2eTest, GetWatchPrintsRowsAndErrorsExitNonZero) {
  ASSERT_EQ(Kpctl({"apply", "-f", File("app.yaml", kDeployment)}).exit_code, 0);
  auto watch = KpctlBackground({"get", "configmaps", "-w"});
  EXPECT_EQ(Line(*watch), "NAME         DATA   AGE");
  EXPECT_EQ(Line(*watch).substr(0, 20), "web-config   1      ");
  RunResult r = Kpctl({"label", "cm", "web-config", "x=y"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Line(*watch).substr(0, 20), "web-config   1      ");
  watch->Kill();

  r = Kpctl({"get", "pod", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error from server (NotFound): pods \"nope\" not found\n");
  r = Kpctl({"get", "pods", "--server", "http://127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is the API server running"), std::string::npos)
      << r.err;
}

// kpctl reads the kubeconfig's TLS as kubectl does; a CA that did not sign
// the server's certificate is refused before any request is sent.
TEST_F(KpctlE2eTest, TlsFromTheKubeconfigAndAWrongCaRefused) {
  RunResult r = Kpctl({"get", "ns", "default", "-o", "name"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "namespace/default\n");

  auto other = net::GenerateCa("another-ca", Clock::Real()->WallNow());
  ASSERT_TRUE(other.ok()) << other.status();
  std::ofstream(dir_ + "/wrong-ca")
      << KubeconfigWithData(url_, other->cert_pem, pki_.admin);
  r = Kpctl({"get", "ns", "--kubeconfig", dir_ + "/wrong-ca"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Unable to connect to the server: TLS handshake with "
                       "127.0.0.1 failed: server certificate signed by an "
                       "unknown authority"),
            std::string::npos)
      << r.err;
  // kubectl's flag: skip verification, dropping the kubeconfig's CA
  // (clientcmd's getClusterConfig), so the wrong CA no longer matters.
  r = Kpctl({"get", "ns", "default", "-o", "name", "--kubeconfig",
             dir_ + "/wrong-ca", "--insecure-skip-tls-verify"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "namespace/default\n");
  // With a CA file of its own as well, refused as kubectl refuses it.
  r = Kpctl({"get", "ns", "default", "-o", "name", "--kubeconfig",
             dir_ + "/wrong-ca", "--insecure-skip-tls-verify",
             "--certificate-authority", dir_ + "/wrong-ca"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("specifying a root certificates file with the "
                       "insecure flag is not allowed"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kplane::e2e
