// The kubectl suite: the real kubectl (the installed dispatcher, which runs
// kubectl 1.32.4 because /version says v1.32) against a fresh
// `kplane apiserver` process (embedded store, ephemeral port). Every
// command's output is checked, not only its exit code.
//
// Over HTTPS, as `kplane up` runs it: each test issues a PKI (net/pki.h: a
// CA, the apiserver's serving certificate, the admin's client certificate
// CN=kubernetes-admin O=system:masters), starts the apiserver with kube's
// --tls-cert-file/--tls-private-key-file/--client-ca-file, and gives
// kubectl a kubeconfig carrying the CA and the admin's certificate as
// *-data fields (as kubeadm's admin.conf), plus a fresh --cache-dir.
//
// Another kubectl: KPLANE_KUBECTL names the binary the suite runs instead of
// the PATH's `kubectl` (ctest's kubectl_e2e_test_1.27 and _1.33 run the
// whole suite with the versions beside the dispatcher's real file). The few
// expectations on client-side output that changed between versions ask the
// binary its client version (KubectlClientMinor).
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "base/base64.h"
#include "base/clock.h"
#include "net/http_client.h"
#include "tests/e2e/kubectl/kubectl_versions.h"
#include "tests/e2e/kubectl/process.h"
#include "tests/e2e/kubectl/tls_setup.h"

namespace kplane::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The kubectl the suite runs: $KPLANE_KUBECTL, else the PATH's.
std::string KubectlBinary() {
  const char* k = getenv("KPLANE_KUBECTL");
  return k != nullptr && *k != '\0' ? k : "kubectl";
}

// The client's minor version (`kubectl version --client -o json`, whose
// clientVersion.minor may carry a "+": the dispatcher says "32+"); 0 when
// it cannot be read.
int KubectlClientMinor() {
  static const int minor = [] {
    Process p({KubectlBinary(), "version", "--client", "-o", "json"});
    p.Start();
    RunResult r = p.Wait(milliseconds(30000));
    rapidjson::Document d;
    d.Parse(r.out.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("clientVersion") ||
        !d["clientVersion"].IsObject() ||
        !d["clientVersion"].HasMember("minor") ||
        !d["clientVersion"]["minor"].IsString()) {
      return 0;
    }
    return std::atoi(d["clientVersion"]["minor"].GetString());
  }();
  return minor;
}

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-kubectl-XXXXXX";
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
    std::ofstream(dir_ + "/kubeconfig")
        << KubeconfigWithData(url_, pki_.ca.cert_pem, pki_.admin);
    auto tls = AdminTls(pki_);
    ASSERT_TRUE(tls.ok()) << tls.status();
    client_ = std::make_unique<net::HttpClient>(
        "127.0.0.1", port_, net::HttpClientOptions{.tls = *tls});
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

  RunResult Kubectl(std::vector<std::string> args) {
    return KubectlAt(KubectlBinary(), std::move(args));
  }
  // A given kubectl binary (another version), with a cache of its own.
  RunResult KubectlAt(const std::string& binary, std::vector<std::string> args,
                      std::vector<std::string> extra_env = {}) {
    std::vector<std::string> argv = {
        binary, "--cache-dir",
        dir_ + "/cache" + std::to_string(std::hash<std::string>()(binary))};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = Env();
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    Process p(argv, env);
    p.Start();
    return p.Wait(milliseconds(90000));
  }

  std::unique_ptr<Process> KubectlBackground(std::vector<std::string> args) {
    std::vector<std::string> argv = {KubectlBinary(), "--cache-dir",
                                     dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = std::make_unique<Process>(argv, Env());
    p->Start();
    return p;
  }

  std::vector<std::string> Env() const {
    return {"KUBECONFIG=" + dir_ + "/kubeconfig", "HOME=" + dir_,
            "KUBECTL_EXTERNAL_DIFF=diff"};
  }

  std::string File(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  // A write through the API (another client than kubectl).
  void Create(const std::string& path, const std::string& json) {
    auto r = client_->Request("POST", path,
                              {{"Content-Type", "application/json"}}, json);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 201) << r->body;
  }
  rapidjson::Document GetJson(const std::string& path) {
    rapidjson::Document d;
    auto r = client_->Request("GET", path);
    EXPECT_TRUE(r.ok());
    if (r.ok()) d.Parse(r->body.c_str());
    return d;
  }
  int GetCode(const std::string& path) {
    auto r = client_->Request("GET", path);
    return r.ok() ? r->status : -1;
  }

  void SeedCluster() {
    Create(
        "/api/v1/nodes",
        R"({"metadata":{"name":"node-1","labels":{"node-role.kubernetes.io/worker":""}},
      "status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ok"}],
      "addresses":[{"type":"InternalIP","address":"10.0.0.1"}],
      "capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},
      "nodeInfo":{"kubeletVersion":"v1.32.4","osImage":"kplane","kernelVersion":"6.1","containerRuntimeVersion":"sim://1","architecture":"amd64","operatingSystem":"linux"}}})");
    Create(
        "/api/v1/namespaces/default/pods",
        R"({"metadata":{"name":"web-0","labels":{"app":"web"}},"spec":{"nodeName":"node-1",
             "containers":[{"name":"nginx","image":"nginx:1.27"}]}})");
    Create(
        "/api/v1/namespaces/kube-system/pods",
        R"({"metadata":{"name":"sys-0"},"spec":{"containers":[{"name":"c","image":"busybox"}]}})");
    Create(
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        R"({"metadata":{"name":"node-1"},"spec":{"holderIdentity":"node-1","leaseDurationSeconds":40}})");
  }

  std::string dir_;
  std::string url_;
  uint16_t port_ = 0;
  TestPki pki_;
  std::unique_ptr<Process> server_;
  std::unique_ptr<net::HttpClient> client_;
};

bool Matches(const std::string& text, const std::string& re) {
  return std::regex_search(text, std::regex(re));
}

constexpr char kDeployment[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
)";

TEST_F(KubectlTest, VersionAndApiResources) {
  RunResult v = Kubectl({"version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  const int minor = KubectlClientMinor();
  ASSERT_GT(minor, 0) << "cannot read " << KubectlBinary() << "'s version";
  // Before 1.28 `kubectl version` printed version.Info structs (--short
  // printed what is now the default).
  EXPECT_NE(v.out.find(minor < 28 ? "Server Version: version.Info{Major:\"1\", "
                                    "Minor:\"32\", GitVersion:\"v1.32.4\""
                                  : "Server Version: v1.32.4"),
            std::string::npos)
      << v.out;
  RunResult r = Kubectl({"api-resources"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Matches(r.out, R"(\npods\s+po\s+v1\s+true\s+Pod\n)")) << r.out;
  EXPECT_TRUE(Matches(r.out, R"(\nnodes\s+no\s+v1\s+false\s+Node\n)"));
  EXPECT_TRUE(Matches(
      r.out, R"(\ndeployments\s+deploy\s+apps/v1\s+true\s+Deployment\n)"));
  EXPECT_TRUE(Matches(
      r.out, R"(\nleases\s+coordination\.k8s\.io/v1\s+true\s+Lease\n)"));
  EXPECT_TRUE(Matches(r.out, R"(\nconfigmaps\s+cm\s+v1\s+true\s+ConfigMap\n)"));
  // The reviews, create-only, as kube lists them.
  EXPECT_TRUE(Matches(
      r.out,
      R"(\ntokenreviews\s+authentication\.k8s\.io/v1\s+false\s+TokenReview\n)"))
      << r.out;
  EXPECT_TRUE(Matches(
      r.out, R"(\nlocalsubjectaccessreviews\s+authorization\.k8s\.io/v1)"
             R"(\s+true\s+LocalSubjectAccessReview\n)"));
}

TEST_F(KubectlTest, GetInAllItsForms) {
  SeedCluster();
  ASSERT_FALSE(HasFatalFailure());
  RunResult ns = Kubectl({"get", "ns"});
  ASSERT_EQ(ns.exit_code, 0) << ns.err;
  EXPECT_TRUE(Matches(ns.out, R"(^NAME\s+STATUS\s+AGE\n)")) << ns.out;
  for (const char* n :
       {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    EXPECT_TRUE(
        Matches(ns.out, std::string("\n") + n + R"(\s+Active\s+\d+s\n)"))
        << n << "\n"
        << ns.out;
  }
  RunResult all = Kubectl({"get", "pods", "-A"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(Matches(
      all.out, R"(^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n)"))
      << all.out;
  EXPECT_TRUE(Matches(all.out, R"(\ndefault\s+web-0\s+0/1\s+Pending\s+0\s+)"))
      << all.out;
  EXPECT_TRUE(Matches(all.out, R"(\nkube-system\s+sys-0\s+)")) << all.out;

  RunResult nodes = Kubectl({"get", "nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_TRUE(
      Matches(nodes.out, R"(\nnode-1\s+Ready\s+worker\s+\d+s\s+v1\.32\.4)"))
      << nodes.out;

  Create(
      "/apis/apps/v1/namespaces/default/deployments",
      R"({"metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
           "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}})");
  RunResult deploy = Kubectl({"get", "deploy"});
  ASSERT_EQ(deploy.exit_code, 0) << deploy.err;
  EXPECT_TRUE(Matches(
      deploy.out,
      R"(^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nweb\s+0/2\s+0\s+0\s+\d+s\n)"))
      << deploy.out;
  RunResult deploy_wide = Kubectl({"get", "deploy", "-o", "wide"});
  EXPECT_TRUE(Matches(
      deploy_wide.out,
      R"(\nweb\s+0/2\s+0\s+0\s+\d+s\s+nginx\s+nginx:1\.27\s+app=web\n)"))
      << deploy_wide.out;

  RunResult lease = Kubectl({"get", "lease", "-n", "kube-node-lease"});
  ASSERT_EQ(lease.exit_code, 0) << lease.err;
  EXPECT_TRUE(Matches(lease.out, R"(^NAME\s+HOLDER\s+AGE\nnode-1\s+node-1\s+)"))
      << lease.out;

  RunResult yaml = Kubectl({"get", "pod", "web-0", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_NE(yaml.out.find("kind: Pod\n"), std::string::npos) << yaml.out;
  EXPECT_NE(yaml.out.find("  name: web-0\n"), std::string::npos);
  EXPECT_NE(yaml.out.find("  nodeName: node-1\n"), std::string::npos);

  RunResult json = Kubectl({"get", "pods", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  rapidjson::Document d;
  d.Parse(json.out.c_str());
  ASSERT_TRUE(d.IsObject()) << json.out;
  EXPECT_STREQ(d["kind"].GetString(), "List");
  ASSERT_EQ(d["items"].Size(), 1u);
  EXPECT_STREQ(d["items"][0]["metadata"]["name"].GetString(), "web-0");

  RunResult wide = Kubectl({"get", "pods", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_TRUE(Matches(
      wide.out,
      R"(^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\n)"))
      << wide.out;
  EXPECT_TRUE(Matches(wide.out, R"(\nweb-0\s+.*node-1)")) << wide.out;

  RunResult labelled = Kubectl({"get", "pods", "-A", "-l", "app=web"});
  EXPECT_TRUE(Matches(labelled.out, R"(web-0)"));
  EXPECT_FALSE(Matches(labelled.out, R"(sys-0)"));
  RunResult none = Kubectl({"get", "pods", "-l", "app=none"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.err.find("No resources found in default namespace."),
            std::string::npos)
      << none.err;

  RunResult field =
      Kubectl({"get", "pods", "-A", "--field-selector", "metadata.name=sys-0"});
  ASSERT_EQ(field.exit_code, 0) << field.err;
  EXPECT_TRUE(Matches(field.out, R"(\nkube-system\s+sys-0)"));
  EXPECT_FALSE(Matches(field.out, R"(web-0)"));

  for (int i = 0; i < 5; ++i) {
    Create("/api/v1/namespaces/default/configmaps",
           R"({"metadata":{"name":"cm)" + std::to_string(i) +
               R"("},"data":{"a":"1"}})");
  }
  RunResult chunks = Kubectl({"get", "cm", "--chunk-size=2"});
  ASSERT_EQ(chunks.exit_code, 0) << chunks.err;
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(Matches(chunks.out, "\ncm" + std::to_string(i) + R"(\s+1\s+)"))
        << chunks.out;
  }
  EXPECT_EQ(std::count(chunks.out.begin(), chunks.out.end(), '\n'), 6);

  RunResult missing = Kubectl({"get", "pod", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(
      missing.err.find("Error from server (NotFound): pods \"nope\" not found"),
      std::string::npos)
      << missing.err;
}

TEST_F(KubectlTest, GetWatchSeesAnotherClientsWrite) {
  Create("/api/v1/namespaces/default/configmaps",
         R"({"metadata":{"name":"first"},"data":{"a":"1"}})");
  auto w = KubectlBackground({"get", "configmaps", "-w"});
  std::optional<std::string> header = w->ReadLine(milliseconds(60000));
  ASSERT_TRUE(header.has_value());
  EXPECT_TRUE(Matches(*header, R"(^NAME\s+DATA\s+AGE)")) << *header;
  std::optional<std::string> row = w->ReadLine(milliseconds(30000));
  ASSERT_TRUE(row.has_value());
  EXPECT_TRUE(Matches(*row, R"(^first\s+1\s+)")) << *row;
  Create("/api/v1/namespaces/default/configmaps",
         R"({"metadata":{"name":"second"},"data":{"a":"1","b":"2"}})");
  std::optional<std::string> added = w->ReadLine(milliseconds(30000));
  ASSERT_TRUE(added.has_value());
  EXPECT_TRUE(Matches(*added, R"(^second\s+2\s+)")) << *added;
}

TEST_F(KubectlTest, CreateApplyAndServerSideApply) {
  const std::string deploy = File("deploy.yaml", kDeployment);
  RunResult c = Kubectl({"create", "-f", deploy});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "deployment.apps/web created\n");
  RunResult again = Kubectl({"create", "-f", deploy});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(
      again.err.find("Error from server (AlreadyExists): error when creating"),
      std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("deployments.apps \"web\" already exists"),
            std::string::npos);

  const std::string cm1 = File("cm.yaml",
                               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                               "  name: cfg\ndata:\n  mode: one\n");
  RunResult a1 = Kubectl({"apply", "-f", cm1});
  ASSERT_EQ(a1.exit_code, 0) << a1.err;
  EXPECT_EQ(a1.out, "configmap/cfg created\n");
  const std::string cm2 = File("cm.yaml",
                               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                               "  name: cfg\ndata:\n  mode: two\n  extra: x\n");
  RunResult a2 = Kubectl({"apply", "-f", cm2});
  ASSERT_EQ(a2.exit_code, 0) << a2.err;
  EXPECT_EQ(a2.out, "configmap/cfg configured\n");
  RunResult a3 = Kubectl({"apply", "-f", cm2});
  EXPECT_EQ(a3.out, "configmap/cfg unchanged\n") << a3.err;
  rapidjson::Document got =
      GetJson("/api/v1/namespaces/default/configmaps/cfg");
  EXPECT_STREQ(got["data"]["mode"].GetString(), "two");
  EXPECT_STREQ(got["data"]["extra"].GetString(), "x");

  // apply onto the object `create` made (no last-applied annotation), with a
  // change to a list merged by name.
  std::string changed = kDeployment;
  changed.replace(changed.find("replicas: 2"), 11, "replicas: 4");
  changed.replace(changed.find("nginx:1.27"), 10, "nginx:1.28");
  RunResult a4 = Kubectl({"apply", "-f", File("deploy2.yaml", changed)});
  ASSERT_EQ(a4.exit_code, 0) << a4.err;
  EXPECT_EQ(a4.out, "deployment.apps/web configured\n");
  rapidjson::Document dep =
      GetJson("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(dep["spec"]["replicas"].GetInt(), 4);
  EXPECT_STREQ(
      dep["spec"]["template"]["spec"]["containers"][0]["image"].GetString(),
      "nginx:1.28");

  const std::string ssa = File("ssa.yaml",
                               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                               "  name: ssa\ndata:\n  k: v\n");
  RunResult s1 = Kubectl({"apply", "--server-side", "-f", ssa});
  ASSERT_EQ(s1.exit_code, 0) << s1.err;
  EXPECT_EQ(s1.out, "configmap/ssa serverside-applied\n");
  rapidjson::Document applied =
      GetJson("/api/v1/namespaces/default/configmaps/ssa");
  ASSERT_TRUE(applied["metadata"].HasMember("managedFields"));
  EXPECT_STREQ(applied["metadata"]["managedFields"][0]["manager"].GetString(),
               "kubectl");
  EXPECT_STREQ(applied["metadata"]["managedFields"][0]["operation"].GetString(),
               "Apply");
  RunResult s2 = Kubectl({"apply", "--server-side", "-f", ssa});
  EXPECT_EQ(s2.exit_code, 0) << s2.err;
  EXPECT_EQ(s2.out, "configmap/ssa serverside-applied\n");
}

// From client-side to server-side apply, in every version: the fields
// kubectl-client-side-apply owns whose live values are still the
// last-applied ones do not conflict with an apply by "kubectl" (kube's
// lastAppliedManager), and the annotation is rewritten with the applied
// configuration (lastAppliedUpdater). Another field manager conflicts.
TEST_F(KubectlTest, ServerSideApplyAfterClientSideApply) {
  for (const KubectlVersion& k : KubectlVersions()) {
    SCOPED_TRACE("kubectl " + k.name);
    std::string name = "la-" + k.name;
    name.erase(std::remove(name.begin(), name.end(), '.'), name.end());
    const std::string head =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
        "\ndata:\n";
    RunResult a1 = KubectlAt(
        k.binary, {"apply", "-f",
                   File(name + "-1.yaml", head + "  p: \"1\"\n  q: \"2\"\n")});
    ASSERT_EQ(a1.exit_code, 0) << a1.err;
    EXPECT_EQ(a1.out, "configmap/" + name + " created\n");
    const std::string la2 = File(name + "-2.yaml", head + "  p: \"9\"\n");
    RunResult other = KubectlAt(k.binary, {"apply", "--server-side",
                                           "--field-manager=other", "-f", la2});
    EXPECT_EQ(other.exit_code, 1) << other.out;
    EXPECT_NE(other.err.find("Apply failed with 1 conflict: conflict with "
                             "\"kubectl-client-side-apply\" using v1: .data.p"),
              std::string::npos)
        << other.err;
    RunResult a2 = KubectlAt(k.binary, {"apply", "--server-side", "-f", la2});
    ASSERT_EQ(a2.exit_code, 0) << a2.err;
    EXPECT_EQ(a2.out, "configmap/" + name + " serverside-applied\n");
    rapidjson::Document got =
        GetJson("/api/v1/namespaces/default/configmaps/" + name);
    ASSERT_TRUE(got.IsObject() && got.HasMember("data"));
    EXPECT_STREQ(got["data"]["p"].GetString(), "9");
    // After the apply kubectl 1.26 and later move kubectl-client-side-
    // apply's fields to its "kubectl" Apply entry (csaupgrade, a JSON patch
    // of managedFields) and apply again, which prunes q, no longer in the
    // configuration. Older ones leave q to kubectl-client-side-apply.
    const bool migrates = k.minor >= 26;
    EXPECT_EQ(got["data"].HasMember("q"), !migrates);
    const rapidjson::Value& managed = got["metadata"]["managedFields"];
    ASSERT_TRUE(managed.IsArray() && managed.Size() > 0);
    std::vector<std::string> entries;
    for (const rapidjson::Value& e : managed.GetArray()) {
      entries.push_back(std::string(e["manager"].GetString()) + "/" +
                        e["operation"].GetString());
    }
    auto has = [&](const std::string& entry) {
      return std::find(entries.begin(), entries.end(), entry) !=
             entries.end();
    };
    EXPECT_TRUE(has("kubectl/Apply")) << testing::PrintToString(entries);
    EXPECT_EQ(has("kubectl-client-side-apply/Update"), !migrates)
        << testing::PrintToString(entries);
    const rapidjson::Value& annotations = got["metadata"]["annotations"];
    ASSERT_TRUE(annotations.HasMember(
        "kubectl.kubernetes.io/last-applied-configuration"));
    const std::string last =
        annotations["kubectl.kubernetes.io/last-applied-configuration"]
            .GetString();
    EXPECT_EQ(last,
              "{\"apiVersion\":\"v1\",\"data\":{\"p\":\"9\"},\"kind\":"
              "\"ConfigMap\",\"metadata\":{\"name\":\"" +
                  name + "\",\"namespace\":\"default\"}}\n");
  }
}

// apply/create/replace/diff with validation on (the default) in every
// version, `kind: List` manifests included, and an unknown field refused.
TEST_F(KubectlTest, ValidatedWritesInEveryVersion) {
  // kubectl_versions.h: 1.27, 1.32, 1.33 (and 1.20 with KPLANE_KUBECTL_1_20).
  const std::vector<KubectlVersion> versions = KubectlVersions();
  ASSERT_GE(versions.size(), 3u) << "kubectl 1.27 and 1.33 beside kubectl";
  for (const KubectlVersion& k : versions) {
    SCOPED_TRACE("kubectl " + k.name);
    std::string name = "web-" + k.name;
    name.erase(std::remove(name.begin(), name.end(), '.'), name.end());
    std::string deploy = kDeployment;
    deploy.replace(deploy.find("name: web\n"), 10, "name: " + name + "\n");
    const std::string path = File(name + ".yaml", deploy);
    RunResult c = KubectlAt(k.binary, {"create", "-f", path});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(c.out, "deployment.apps/" + name + " created\n");

    std::string changed = deploy;
    changed.replace(changed.find("replicas: 2"), 11, "replicas: 3");
    const std::string path3 = File(name + "-3.yaml", changed);
    RunResult d = KubectlAt(k.binary, {"diff", "-f", path3});
    EXPECT_EQ(d.exit_code, 1) << d.err;  // 1: differences found
    EXPECT_TRUE(Matches(d.out, R"(\n<   replicas: 2\n---\n>   replicas: 3\n)"))
        << d.out << d.err;
    RunResult r = KubectlAt(k.binary, {"replace", "-f", path3});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "deployment.apps/" + name + " replaced\n");
    RunResult a = KubectlAt(k.binary, {"apply", "-f", path});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, "deployment.apps/" + name + " configured\n");
    EXPECT_EQ(GetJson("/apis/apps/v1/namespaces/default/deployments/" +
                      name)["spec"]["replicas"]
                  .GetInt(),
              2);
    // edit: the editor's change goes back as a validated patch.
    RunResult e =
        KubectlAt(k.binary, {"edit", "deployment", name},
                  {"KUBE_EDITOR=sed -i s/replicas:\\ 2/replicas:\\ 5/"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    EXPECT_EQ(e.out, "deployment.apps/" + name + " edited\n");
    EXPECT_EQ(GetJson("/apis/apps/v1/namespaces/default/deployments/" +
                      name)["spec"]["replicas"]
                  .GetInt(),
              5);

    const std::string list =
        File(name + "-list.yaml",
             "apiVersion: v1\nkind: List\nitems:\n"
             "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: " +
                 name +
                 "-a}\n  data: {k: v}\n"
                 "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: " +
                 name + "-b}\n");
    RunResult l = KubectlAt(k.binary, {"create", "-f", list});
    ASSERT_EQ(l.exit_code, 0) << l.err;
    EXPECT_EQ(l.out, "configmap/" + name + "-a created\nconfigmap/" + name +
                         "-b created\n");
    RunResult la = KubectlAt(k.binary, {"replace", "-f", list});
    EXPECT_EQ(la.exit_code, 0) << la.err;

    // An unknown field: the server's strict decoding error (or, for 1.20,
    // the client's validation from /openapi/v2); nothing is stored.
    const std::string bad = File(name + "-bad.yaml",
                                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                 "  name: " +
                                     name + "-bad\ndata: {k: v}\nfoo: 1\n");
    RunResult b = KubectlAt(k.binary, {"apply", "-f", bad});
    EXPECT_EQ(b.exit_code, 1) << b.out;
    if (k.client_side_validation) {
      EXPECT_NE(b.err.find("ValidationError(ConfigMap): unknown field \"foo\" "
                           "in io.k8s.api.core.v1.ConfigMap"),
                std::string::npos)
          << b.err;
    } else {
      EXPECT_NE(
          b.err.find("Error from server (BadRequest): error when "
                     "creating \"" +
                     bad + "\": strict decoding error: unknown field \"foo\""),
          std::string::npos)
          << b.err;
    }
    EXPECT_EQ(GetCode("/api/v1/namespaces/default/configmaps/" + name + "-bad"),
              404);
    // In a List, every kubectl validates the items itself from /openapi/v2.
    const std::string bad_list =
        File(name + "-badlist.yaml",
             "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: "
             "ConfigMap\n  metadata: {name: " +
                 name + "-c}\n  bogus: 1\n");
    RunResult bl = KubectlAt(k.binary, {"create", "-f", bad_list});
    EXPECT_EQ(bl.exit_code, 1) << bl.out;
    EXPECT_NE(bl.err.find("unknown field \"bogus\""), std::string::npos)
        << bl.err;
    // --validate=warn (1.27+): stored, with the server's warning.
    if (!k.client_side_validation) {
      RunResult w =
          KubectlAt(k.binary, {"apply", "--validate=warn", "-f", bad});
      EXPECT_EQ(w.exit_code, 0) << w.err;
      EXPECT_NE(w.err.find("Warning: unknown field \"foo\""), std::string::npos)
          << w.err;
      EXPECT_EQ(
          GetCode("/api/v1/namespaces/default/configmaps/" + name + "-bad"),
          200);
    }
  }
}

// kubectl explain: from /openapi/v3 in 1.27+ (and v2 with
// --output=plaintext-openapiv2), from /openapi/v2 in 1.20.
TEST_F(KubectlTest, ExplainInEveryVersion) {
  for (const KubectlVersion& k : KubectlVersions()) {
    SCOPED_TRACE("kubectl " + k.name);
    RunResult e = KubectlAt(k.binary, {"explain", "pods.spec.containers"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    EXPECT_TRUE(Matches(e.out, k.client_side_validation
                                   ? R"(RESOURCE: containers <\[\]Object>)"
                                   : R"(FIELD: containers <\[\]Container>)"))
        << e.out;
    EXPECT_TRUE(Matches(e.out, R"(\n\s+name\s+<string> -required-\n)"))
        << e.out;
    EXPECT_TRUE(Matches(e.out, R"(\n\s+image\s+<string>\n)")) << e.out;
    RunResult r = KubectlAt(k.binary, {"explain", "deployment", "--recursive"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Matches(r.out, R"(KIND:\s+Deployment\n)")) << r.out;
    EXPECT_TRUE(Matches(
        r.out, k.client_side_validation
                   ? R"(\n\s+containers\s+<\[\]Object>\n)"
                   : R"(\n\s+containers\s+<\[\]Container> -required-\n)"))
        << r.out;
    EXPECT_TRUE(Matches(r.out, R"(\n\s+maxSurge\s+<(IntOrString|string)>\n)"))
        << r.out;
    if (!k.client_side_validation) {
      RunResult v2 = KubectlAt(k.binary, {"explain", "deployment.spec",
                                          "--output=plaintext-openapiv2"});
      ASSERT_EQ(v2.exit_code, 0) << v2.err;
      EXPECT_TRUE(Matches(v2.out, R"(RESOURCE: spec <Object>)")) << v2.out;
      EXPECT_TRUE(Matches(v2.out, R"(\n\s+replicas\s+<integer>\n)")) << v2.out;
    }
  }
}

TEST_F(KubectlTest, ImperativeCommands) {
  RunResult c = Kubectl({"create", "configmap", "lit", "--from-literal=a=1"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "configmap/lit created\n");
  RunResult jp = Kubectl({"get", "cm", "lit", "-o", "jsonpath={.data.a}"});
  EXPECT_EQ(jp.out, "1");
  RunResult label = Kubectl({"label", "cm", "lit", "tier=frontend"});
  ASSERT_EQ(label.exit_code, 0) << label.err;
  EXPECT_EQ(label.out, "configmap/lit labeled\n");
  RunResult annotate = Kubectl({"annotate", "cm", "lit", "note=hello"});
  ASSERT_EQ(annotate.exit_code, 0) << annotate.err;
  // kubectl before 1.28 printed the command's name ("annotate").
  EXPECT_EQ(annotate.out, KubectlClientMinor() < 28
                              ? "configmap/lit annotate\n"
                              : "configmap/lit annotated\n");
  rapidjson::Document cm = GetJson("/api/v1/namespaces/default/configmaps/lit");
  EXPECT_STREQ(cm["metadata"]["labels"]["tier"].GetString(), "frontend");
  EXPECT_STREQ(cm["metadata"]["annotations"]["note"].GetString(), "hello");
  RunResult overwrite = Kubectl({"label", "cm", "lit", "tier=back"});
  EXPECT_EQ(overwrite.exit_code, 1);
  EXPECT_NE(overwrite.err.find("already has a value (frontend)"),
            std::string::npos);

  RunResult secret =
      Kubectl({"create", "secret", "generic", "s", "--from-literal=p=x"});
  ASSERT_EQ(secret.exit_code, 0) << secret.err;
  EXPECT_EQ(secret.out, "secret/s created\n");
  rapidjson::Document s = GetJson("/api/v1/namespaces/default/secrets/s");
  EXPECT_STREQ(s["type"].GetString(), "Opaque");

  RunResult ns = Kubectl({"create", "namespace", "team"});
  ASSERT_EQ(ns.exit_code, 0) << ns.err;
  EXPECT_EQ(ns.out, "namespace/team created\n");

  RunResult dep =
      Kubectl({"create", "deployment", "web", "--image=nginx:1.27"});
  ASSERT_EQ(dep.exit_code, 0) << dep.err;
  EXPECT_EQ(dep.out, "deployment.apps/web created\n");
  RunResult scale = Kubectl({"scale", "deployment", "web", "--replicas=3"});
  ASSERT_EQ(scale.exit_code, 0) << scale.err;
  EXPECT_EQ(scale.out, "deployment.apps/web scaled\n");
  rapidjson::Document d =
      GetJson("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d["spec"]["replicas"].GetInt(), 3);
  EXPECT_EQ(d["metadata"]["generation"].GetInt(), 2);

  RunResult del = Kubectl({"delete", "cm", "lit"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(del.out, "configmap \"lit\" deleted\n");
  EXPECT_EQ(GetCode("/api/v1/namespaces/default/configmaps/lit"), 404);
  Create(
      "/api/v1/namespaces/default/pods",
      R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}})");
  RunResult delpod = Kubectl({"delete", "pod", "p"});
  ASSERT_EQ(delpod.exit_code, 0) << delpod.err;
  EXPECT_EQ(delpod.out, "pod \"p\" deleted\n");
  RunResult deldep = Kubectl({"delete", "deployment", "web"});
  ASSERT_EQ(deldep.exit_code, 0) << deldep.err;
  EXPECT_EQ(deldep.out, "deployment.apps \"web\" deleted\n");
}

TEST_F(KubectlTest, Describe) {
  SeedCluster();
  ASSERT_FALSE(HasFatalFailure());
  rapidjson::Document pod = GetJson("/api/v1/namespaces/default/pods/web-0");
  const std::string uid = pod["metadata"]["uid"].GetString();
  Create(
      "/api/v1/namespaces/default/events",
      R"({"metadata":{"name":"web-0.1"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web-0","uid":")" +
          uid +
          R"("},"reason":"Scheduled","message":"Successfully assigned default/web-0 to node-1",
             "type":"Normal","source":{"component":"default-scheduler"},"count":1,
             "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z"})");
  RunResult p = Kubectl({"describe", "pod", "web-0"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(Matches(p.out, R"(Name:\s+web-0\n)")) << p.out;
  EXPECT_TRUE(Matches(p.out, R"(Namespace:\s+default\n)"));
  EXPECT_TRUE(Matches(p.out, R"(Node:\s+node-1)"));
  EXPECT_TRUE(Matches(p.out, R"(Image:\s+nginx:1\.27)"));
  EXPECT_TRUE(Matches(
      p.out,
      R"(Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned)"))
      << p.out;

  RunResult n = Kubectl({"describe", "node", "node-1"});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_TRUE(Matches(n.out, R"(Name:\s+node-1\n)")) << n.out;
  EXPECT_TRUE(Matches(n.out, R"(Roles:\s+worker)"));
  EXPECT_TRUE(Matches(n.out, R"(HolderIdentity:\s+node-1)")) << n.out;
  EXPECT_TRUE(Matches(n.out, R"(Non-terminated Pods:\s+\(1 in total\))"))
      << n.out;
  EXPECT_TRUE(Matches(n.out, R"(default\s+web-0)"));

  RunResult c = Kubectl({"create", "-f", File("deploy.yaml", kDeployment)});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  RunResult d = Kubectl({"describe", "deployment", "web"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(Matches(d.out, R"(Name:\s+web\n)")) << d.out;
  EXPECT_TRUE(Matches(d.out, R"(Selector:\s+app=web\n)"));
  EXPECT_TRUE(Matches(d.out, R"(Replicas:\s+2 desired)"));
  EXPECT_TRUE(Matches(d.out, R"(StrategyType:\s+RollingUpdate)"));
}

// TLS as kubectl sees it (issue 18): a kubeconfig trusting another CA is
// refused with Go's words, and plaintext HTTP to the HTTPS port gets Go's
// canned 400 (what kube-apiserver answers).
TEST_F(KubectlTest, AKubeconfigTrustingAnotherCaIsRefused) {
  auto other = net::GenerateCa("another-ca", Clock::Real()->WallNow());
  ASSERT_TRUE(other.ok()) << other.status();
  std::ofstream(dir_ + "/wrong-ca")
      << KubeconfigWithData(url_, other->cert_pem, pki_.admin);
  RunResult r = Kubectl({"--kubeconfig", dir_ + "/wrong-ca", "get", "ns"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("x509: certificate signed by unknown authority"),
            std::string::npos)
      << r.err;
  // The same kubeconfig with the cluster's CA works (the control).
  RunResult ok = Kubectl({"get", "ns", "default", "-o", "name"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "namespace/default\n");
}

TEST_F(KubectlTest, PlainHttpToTheHttpsPortGetsGosBadRequest) {
  net::HttpClient plain("127.0.0.1", port_);
  auto r = plain.Request("GET", "/api/v1/namespaces");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->body, "Client sent an HTTP request to an HTTPS server.\n");
}

// The Python client (Debian's python3-kubernetes) with the same kubeconfig:
// load_kube_config reads the *-data fields and verifies the server. Debian's
// interpreter, which the package installs into (a python3 earlier on the
// PATH, e.g. pyenv's, does not see it).
TEST_F(KubectlTest, PythonClientListsNodesWithTheKubeconfig) {
  constexpr char kPython[] = "/usr/bin/python3";
  {
    Process probe({kPython, "-c", "import kubernetes"});
    probe.Start();
    if (probe.Wait(milliseconds(30000)).exit_code != 0) {
      GTEST_SKIP() << "python3-kubernetes is not installed "
                      "(scripts/install-deps.sh installs it)";
    }
  }
  SeedCluster();
  Process p({kPython, "-c",
             "from kubernetes import client, config\n"
             "config.load_kube_config()\n"
             "for n in client.CoreV1Api().list_node().items:\n"
             "  print(n.metadata.name)\n"},
            Env());
  p.Start();
  RunResult r = p.Wait(milliseconds(60000));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "node-1\n");
}

}  // namespace
}  // namespace kplane::e2e
