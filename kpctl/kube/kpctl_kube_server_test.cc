// kpctl's commands in process (RunKubeCommand) against a real API server
// over an embedded single-member store (apiserver/test_server.h). Long
// running commands (rollout status, wait, get -w) run on a thread whose
// output the test awaits line by line.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "apiserver/test_server.h"
#include "base/base64.h"
#include "base/mutex.h"
#include "controllers/controller_manager.h"
#include "kpctl/kube/client.h"
#include "kpctl/kube/flags.h"
#include "kpctl/kube/kube_command.h"
#include "net/http_server.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::kpctl::kube {
namespace {

using apiserver::testing::TestServer;

// A thread-safe output stream whose text can be awaited.
class SyncBuf : public std::streambuf {
 public:
  std::string Text() {
    MutexLock l(&mu_);
    return text_;
  }
  // True once `s` has been written (within a generous deadline).
  bool WaitFor(const std::string& s) {
    MutexLock l(&mu_);
    return cv_.wait_for(
        l.native(), std::chrono::seconds(20),
        [&]() REQUIRES(mu_) { return text_.find(s) != std::string::npos; });
  }

 protected:
  int overflow(int c) override {
    if (c == EOF) return 0;
    char ch = static_cast<char>(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    {
      MutexLock l(&mu_);
      text_.append(s, static_cast<size_t>(n));
    }
    cv_.notify_all();
    return n;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::string text_ GUARDED_BY(mu_);
};

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

// A command running on its own thread.
class Background {
 public:
  Background(std::function<int(std::ostream*, std::ostream*)> run)
      : out_stream_(&out_), err_stream_(&err_) {
    thread_ =
        std::thread([this, run] { code_ = run(&out_stream_, &err_stream_); });
  }
  ~Background() {
    if (thread_.joinable()) thread_.join();
  }
  bool WaitFor(const std::string& s) { return out_.WaitFor(s); }
  Result Join() {
    thread_.join();
    return {code_, out_.Text(), err_.Text()};
  }

 private:
  SyncBuf out_, err_;
  std::ostream out_stream_, err_stream_;
  std::thread thread_;
  int code_ = -1;
};

class KpctlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kpctl-st-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Server() { return "127.0.0.1:" + std::to_string(server_.port()); }

  std::vector<std::string> WithServer(std::vector<std::string> args) {
    args.push_back("--server=" + Server());
    return args;
  }

  GetEnvFn Env() {
    return [this](const char* n) -> const char* {
      auto it = env_.find(n);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
  }

  // Runs `kpctl <cmd> <args> --server=...`.
  Result Run(const std::string& cmd, std::vector<std::string> args,
             const std::string& stdin_text = "", bool add_server = true) {
    std::istringstream in(stdin_text);
    std::ostringstream out, err;
    KubeIo io{&in, &out, &err, Env(), nullptr};
    Result r;
    r.code = RunKubeCommand(cmd, add_server ? WithServer(args) : args, io);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  std::unique_ptr<Background> Start(const std::string& cmd,
                                    std::vector<std::string> args) {
    args = WithServer(std::move(args));
    GetEnvFn env = Env();
    return std::make_unique<Background>(
        [cmd, args, env](std::ostream* out, std::ostream* err) {
          KubeIo io{nullptr, out, err, env, nullptr};
          return RunKubeCommand(cmd, args, io);
        });
  }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(
        std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }

  TestServer server_;
  std::string dir_;
  std::map<std::string, std::string> env_;
};

constexpr char kDeployment[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
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
)";

constexpr char kConfigMap[] = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
  b: "2"
)";

TEST_F(KpctlServerTest, ApplyTwiceIsUnchangedThenConfigured) {
  const std::string f =
      Write("app.yaml", std::string(kDeployment) + "---\n" + kConfigMap);
  Result r = Run("apply", {"-f", f});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web created\nconfigmap/cfg created\n");
  const std::string rv1 =
      server_.Get("/apis/apps/v1/namespaces/default/deployments/web")
          .Str({"metadata", "resourceVersion"});

  r = Run("apply", {"-f", f});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web unchanged\nconfigmap/cfg unchanged\n");
  EXPECT_EQ(server_.Get("/apis/apps/v1/namespaces/default/deployments/web")
                .Str({"metadata", "resourceVersion"}),
            rv1);

  // kubectl's annotation: the manifest as sorted JSON with its namespace and
  // "annotations":{}, newline-terminated.
  EXPECT_EQ(server_.Get("/api/v1/namespaces/default/configmaps/cfg")
                .Str({"metadata", "annotations",
                      "kubectl.kubernetes.io/last-applied-configuration"}),
            "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":\"2\"},"
            "\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},"
            "\"name\":\"cfg\",\"namespace\":\"default\"}}\n");

  const std::string f2 =
      Write("app2.yaml",
            std::string(kDeployment)
                .replace(std::string(kDeployment).find("1.27"), 4, "1.28"));
  r = Run("apply", {"-f", f2});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web configured\n");
  auto d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(
      std::string(d.json["spec"]["template"]["spec"]["containers"][0]["image"]
                      .GetString()),
      "nginx:1.28");
}

TEST_F(KpctlServerTest, ApplyDeletesOnlyFieldsTheManifestDropped) {
  const std::string f = Write("cm.yaml", kConfigMap);
  ASSERT_EQ(Run("apply", {"-f", f}).code, 0);
  // Another client adds a label: apply must keep it.
  ASSERT_EQ(Run("label", {"cm", "cfg", "team=a"}).code, 0);
  const std::string f2 = Write("cm2.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
)");
  Result r = Run("apply", {"-f", f2});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg configured\n");
  auto cm = server_.Get("/api/v1/namespaces/default/configmaps/cfg");
  EXPECT_TRUE(cm.json["data"].HasMember("a"));
  EXPECT_FALSE(cm.json["data"].HasMember("b"));
  EXPECT_EQ(cm.Str({"metadata", "labels", "team"}), "a");
}

TEST_F(KpctlServerTest, YamlErrorNamesFileAndLineAndAppliesNothing) {
  const std::string f = Write("bad.yaml", std::string(kConfigMap) +
                                              "---\napiVersion: v1\nkind: "
                                              "ConfigMap\nmetadata:\n  name: "
                                              "x\n data: [\n");
  Result r = Run("apply", {"-f", f});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("error parsing " + f +
                       ": error converting YAML to JSON: yaml: line "),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(server_.Get("/api/v1/namespaces/default/configmaps/cfg").code, 404);
}

TEST_F(KpctlServerTest, PartialFailureSaysWhichDocumentsSucceeded) {
  const std::string f = Write("mixed.yaml", std::string(kConfigMap) + R"(---
apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
  containers: []
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: second
)");
  Result r = Run("apply", {"-f", f});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "configmap/cfg created\nconfigmap/second created\n");
  EXPECT_NE(r.err.find("Error from server (Invalid): error when creating \"" +
                       f + "\": "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("error: 1 of 3 objects failed; applied: configmap/cfg "
                       "(" +
                       f + " document 1), configmap/second (" + f +
                       " document 3); not applied: pod/broken (" + f +
                       " document 2)"),
            std::string::npos)
      << r.err;
}

TEST_F(KpctlServerTest, ApplyFromStdinAndDirectoryAndNamespaceMismatch) {
  Result r = Run("apply", {"-f", "-"}, kConfigMap);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg created\n");
  Write("dir/a.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n");
  Write(
      "dir/b.json",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j","namespace":"team"}})");
  r = Run("apply", {"-f", dir_ + "/dir"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "namespace/team created\nconfigmap/j created\n");
  EXPECT_EQ(server_.Get("/api/v1/namespaces/team/configmaps/j").code, 200);
  r = Run("apply", {"-f", dir_ + "/dir/b.json", "-n", "other"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the namespace from the provided object \"team\" does "
                       "not match the namespace \"other\""),
            std::string::npos)
      << r.err;
}

TEST_F(KpctlServerTest, CreateThenAlreadyExists) {
  const std::string f = Write("cm.yaml", kConfigMap);
  Result r = Run("create", {"-f", f});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg created\n");
  r = Run("create", {"-f", f});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "Error from server (AlreadyExists): error when creating \"" +
                       f + "\": configmaps \"cfg\" already exists\n");
}

TEST_F(KpctlServerTest, GetTablesNamesYamlJsonAndErrors) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, R"(apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, labels: {tier: fe}}
data: {x: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, labels: {tier: be}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: other}
)")
                .code,
            0);
  Result r = Run("get", {"configmaps"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "NAME   DATA   AGE");
  EXPECT_NE(r.out.find("\na      1      "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nb      0      "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\nc "), std::string::npos);

  r = Run("get", {"cm", "-l", "tier=fe", "-o", "name"});
  EXPECT_EQ(r.out, "configmap/a\n");
  r = Run("get", {"cm", "--field-selector", "metadata.name=b", "-o", "name"});
  EXPECT_EQ(r.out, "configmap/b\n");
  r = Run("get", {"cm", "-A", "--no-headers"});
  EXPECT_NE(r.out.find("other     c "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default   a "), std::string::npos) << r.out;

  r = Run("get", {"cm/a", "-o", "yaml"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.substr(0, 34), "apiVersion: v1\ndata:\n  x: \"1\"\nkind");
  r = Run("get", {"cm", "-o", "json"});
  rapidjson::Document j;
  j.Parse(r.out.c_str());
  ASSERT_FALSE(j.HasParseError()) << r.out;
  EXPECT_EQ(std::string(j["kind"].GetString()), "List");
  EXPECT_EQ(j["items"].Size(), 2u);
  EXPECT_EQ(std::string(j["items"][0]["kind"].GetString()), "ConfigMap");

  r = Run("get", {"deploy,cm", "-n", "other"});
  EXPECT_EQ(r.out, "NAME          DATA   AGE\nconfigmap/c   0      " +
                       r.out.substr(r.out.rfind(' ') + 1));

  r = Run("get", {"cm", "nope"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "Error from server (NotFound): configmaps \"nope\" not found\n");
  r = Run("get", {"pods", "-n", "empty"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "No resources found in empty namespace.\n");
  r = Run("get", {"frobs"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "error: the server doesn't have a resource type \"frobs\"\n");
}

// kubectl's printGeneric: one named object that is not found is the error
// alone, nothing on stdout (no empty List); with several names, the List
// of those found, then the errors.
TEST_F(KpctlServerTest, GetOneMissingObjectPrintsNothing) {
  const std::string not_found =
      "Error from server (NotFound): configmaps \"nope\" not found\n";
  for (const char* output : {"json", "yaml", "jsonpath={.kind}", "name"}) {
    Result r = Run("get", {"cm", "nope", "-o", output});
    EXPECT_EQ(r.code, 1) << output;
    EXPECT_EQ(r.out, "") << output;
    EXPECT_EQ(r.err, not_found) << output;
  }
  Result r = Run("get", {"cm/nope", "-o", "json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");

  ASSERT_EQ(Run("apply", {"-f", "-"},
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
                .code,
            0);
  r = Run("get", {"cm", "a", "nope", "-o", "json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, not_found);
  rapidjson::Document j;
  j.Parse(r.out.c_str());
  ASSERT_FALSE(j.HasParseError()) << r.out;
  EXPECT_EQ(std::string(j["kind"].GetString()), "List");
  ASSERT_EQ(j["items"].Size(), 1u) << r.out;
  EXPECT_EQ(std::string(j["items"][0]["metadata"]["name"].GetString()), "a");
  r = Run("get", {"cm", "a", "nope", "-o", "jsonpath={.kind}"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "List");
}

TEST_F(KpctlServerTest, KubeconfigNamespaceAndServer) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, R"(apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: in-team, namespace: team}
)")
                .code,
            0);
  env_["KUBECONFIG"] = Write("kubeconfig", R"(apiVersion: v1
kind: Config
current-context: k
contexts:
- name: k
  context: {cluster: c, user: u, namespace: team}
clusters:
- name: c
  cluster: {server: "http://)" + Server() + R"("}
users:
- name: u
  user: {token: abc}
)");
  Result r = Run("get", {"cm", "-o", "name"}, "", /*add_server=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/in-team\n");
  r = Run("config", {"view", "--minify"}, "", false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("token: REDACTED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("namespace: team"), std::string::npos);
  r = Run("config", {"current-context"}, "", false);
  EXPECT_EQ(r.out, "k\n");
  // No server anywhere.
  env_.clear();
  r = Run("get", {"pods"}, "", false);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no API server configured"), std::string::npos);
}

// `config view` hides credentials as kubectl does (client-go's
// ShortenConfig): *-data fields DATA+OMITTED, tokens and passwords
// REDACTED; --raw shows them. No server is contacted.
TEST_F(KpctlServerTest, ConfigViewRedactsLikeKubectl) {
  env_["KUBECONFIG"] = Write("kubeconfig", R"(apiVersion: v1
kind: Config
current-context: k
contexts:
- name: k
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://h:1", certificate-authority-data: Q0E=}
users:
- name: u
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
    token: abc
    username: me
    password: pw
)");
  Result r = Run("config", {"view"}, "", /*add_server=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("certificate-authority-data: DATA+OMITTED\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("client-certificate-data: DATA+OMITTED\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("client-key-data: DATA+OMITTED\n"), std::string::npos);
  EXPECT_NE(r.out.find("token: REDACTED\n"), std::string::npos);
  EXPECT_NE(r.out.find("password: REDACTED\n"), std::string::npos);
  EXPECT_NE(r.out.find("username: me\n"), std::string::npos);
  EXPECT_NE(r.out.find("server: https://h:1\n"), std::string::npos);
  for (const char* secret : {"Q0E=", "Q0VSVA==", "S0VZ", "abc", "pw\n"}) {
    EXPECT_EQ(r.out.find(secret), std::string::npos) << secret;
  }

  r = Run("config", {"view", "--raw", "-o", "json"}, "", false);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* shown : {"\"certificate-authority-data\": \"Q0E=\"",
                            "\"client-certificate-data\": \"Q0VSVA==\"",
                            "\"client-key-data\": \"S0VZ\"",
                            "\"token\": \"abc\"", "\"password\": \"pw\""}) {
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("OMITTED"), std::string::npos);
  EXPECT_EQ(r.out.find("REDACTED"), std::string::npos);
}

TEST_F(KpctlServerTest, ScaleLabelAnnotate) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kDeployment).code, 0);
  Result r = Run("scale", {"deploy/web", "--replicas=5"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web scaled\n");
  auto d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d.json["spec"]["replicas"].GetInt(), 5);
  r = Run("scale",
          {"deployment", "web", "--replicas=2", "--current-replicas=4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: Expected replicas to be 4, was 5\n");

  r = Run("label", {"deploy", "web", "tier=fe"});
  EXPECT_EQ(r.out, "deployment.apps/web labeled\n");
  r = Run("label", {"deploy", "web", "tier=be"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "error: 'tier' already has a value (fe), and --overwrite "
            "is false\n");
  r = Run("label", {"deploy/web", "tier=be", "--overwrite"});
  EXPECT_EQ(r.code, 0);
  d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d.Str({"metadata", "labels", "tier"}), "be");
  r = Run("label", {"deploy/web", "tier-"});
  EXPECT_EQ(r.out, "deployment.apps/web labeled\n");
  d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d.Str({"metadata", "labels", "tier"}), "");
  r = Run("annotate", {"deploy/web", "note=hello world"});
  EXPECT_EQ(r.out, "deployment.apps/web annotated\n");
  d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d.Str({"metadata", "annotations", "note"}), "hello world");
  r = Run("annotate", {"deploy/web", "note=hello world"});
  EXPECT_EQ(r.out, "deployment.apps/web not annotated\n");
}

// Sets the deployment's status through the status subresource.
void SetStatus(TestServer& s, const std::string& status) {
  auto r =
      s.Patch("/apis/apps/v1/namespaces/default/deployments/web/status",
              "{\"status\":" + status + "}", "application/merge-patch+json");
  ASSERT_EQ(r.code, 200) << r.body;
}

TEST_F(KpctlServerTest, RolloutStatusFollowsTheDeploymentStatus) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kDeployment).code, 0);
  auto bg = Start("rollout", {"status", "deployment/web"});
  ASSERT_TRUE(
      bg->WaitFor("Waiting for deployment spec update to be observed...\n"));
  SetStatus(server_,
            R"({"observedGeneration":1,"replicas":1,"updatedReplicas":1})");
  ASSERT_TRUE(
      bg->WaitFor("Waiting for deployment \"web\" rollout to finish: 1 "
                  "out of 3 new replicas have been updated...\n"));
  SetStatus(server_, R"({"replicas":4,"updatedReplicas":3})");
  ASSERT_TRUE(
      bg->WaitFor("Waiting for deployment \"web\" rollout to finish: 1 "
                  "old replicas are pending termination...\n"));
  SetStatus(server_,
            R"({"replicas":3,"readyReplicas":1,"availableReplicas":1})");
  ASSERT_TRUE(
      bg->WaitFor("Waiting for deployment \"web\" rollout to finish: 1 "
                  "of 3 updated replicas are available...\n"));
  SetStatus(server_, R"({"availableReplicas":3,"readyReplicas":3})");
  Result r = bg->Join();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Waiting for deployment spec update to be observed...\n"
            "Waiting for deployment \"web\" rollout to finish: 1 out of 3 new "
            "replicas have been updated...\n"
            "Waiting for deployment \"web\" rollout to finish: 1 old replicas "
            "are pending termination...\n"
            "Waiting for deployment \"web\" rollout to finish: 1 of 3 updated "
            "replicas are available...\n"
            "deployment \"web\" successfully rolled out\n");
  // Done already: one line, no watch.
  r = Run("rollout", {"status", "deploy", "web"});
  EXPECT_EQ(r.out, "deployment \"web\" successfully rolled out\n");
}

TEST_F(KpctlServerTest, WaitForConditionAndDelete) {
  ASSERT_EQ(
      Run("apply", {"-f", "-"}, std::string(kDeployment) + "---\n" + kConfigMap)
          .code,
      0);
  auto bg = Start("wait",
                  {"--for=condition=Available", "deploy/web", "--timeout=60s"});
  auto del = Start("wait", {"--for=delete", "cm/cfg", "--timeout=60s"});
  SetStatus(server_,
            R"({"conditions":[{"type":"Available","status":"False"}]})");
  SetStatus(server_,
            R"({"conditions":[{"type":"Available","status":"True"}]})");
  Result r = bg->Join();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web condition met\n");
  ASSERT_EQ(Run("delete", {"cm", "cfg"}).out, "configmap \"cfg\" deleted\n");
  r = del->Join();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg condition met\n");
  // Already gone: met at once.
  EXPECT_EQ(Run("wait", {"--for=delete", "cm/cfg"}).code, 0);
}

TEST_F(KpctlServerTest, WaitTimesOut) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kConfigMap).code, 0);
  Result r = Run("wait", {"--for=condition=Ready", "cm/cfg", "--timeout=1s"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "error: timed out waiting for the condition on configmaps/cfg\n");
}

// A ReplicaSet of revision `rev` owned by the deployment with `uid`.
std::string ReplicaSet(const std::string& uid, int rev,
                       const std::string& image) {
  return R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{
    "name":"web-)" +
         std::to_string(rev) + R"(","annotations":{
    "deployment.kubernetes.io/revision":")" +
         std::to_string(rev) + R"("},
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment",
      "name":"web","uid":")" +
         uid + R"(","controller":true}]},
    "spec":{"replicas":0,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web","pod-template-hash":"h)" +
         std::to_string(rev) + R"("}},
        "spec":{"containers":[{"name":"nginx","image":")" +
         image + R"("}]}}}})";
}

TEST_F(KpctlServerTest, RolloutHistoryUndoRestart) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kDeployment).code, 0);
  const std::string uid =
      server_.Get("/apis/apps/v1/namespaces/default/deployments/web")
          .Str({"metadata", "uid"});
  ASSERT_EQ(server_
                .Post("/apis/apps/v1/namespaces/default/replicasets",
                      ReplicaSet(uid, 1, "nginx:1.26"))
                .code,
            201);
  ASSERT_EQ(server_
                .Post("/apis/apps/v1/namespaces/default/replicasets",
                      ReplicaSet(uid, 2, "nginx:1.27"))
                .code,
            201);
  ASSERT_EQ(
      Run("annotate", {"deploy/web", "deployment.kubernetes.io/revision=2"})
          .code,
      0);
  Result r = Run("rollout", {"history", "deploy/web"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "deployment.apps/web\nREVISION  CHANGE-CAUSE\n1         <none>\n"
            "2         <none>\n\n");

  r = Run("rollout", {"undo", "deploy/web"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web rolled back\n");
  auto d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  const auto& tmpl = d.json["spec"]["template"];
  EXPECT_EQ(std::string(tmpl["spec"]["containers"][0]["image"].GetString()),
            "nginx:1.26");
  EXPECT_FALSE(tmpl["metadata"]["labels"].HasMember("pod-template-hash"));
  r = Run("rollout", {"undo", "deploy/web", "--to-revision=1"});
  EXPECT_EQ(r.out,
            "deployment.apps/web skipped rollback (current template already "
            "matches revision 1)\n");
  r = Run("rollout", {"undo", "deploy/web", "--to-revision=9"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: unable to find specified revision 9 in history\n");

  r = Run("rollout", {"restart", "deploy/web"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web restarted\n");
  d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_NE(d.Str({"spec", "template", "metadata", "annotations",
                   "kubectl.kubernetes.io/restartedAt"}),
            "");
}

TEST_F(KpctlServerTest, DeleteByNameSelectorAndFile) {
  const std::string f = Write("cms.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: a, labels: {x: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, labels: {x: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
)");
  ASSERT_EQ(Run("apply", {"-f", f}).code, 0);
  Result r = Run("delete", {"cm", "-l", "x=1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap \"a\" deleted\nconfigmap \"b\" deleted\n");
  r = Run("delete", {"cm", "a"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "Error from server (NotFound): configmaps \"a\" not found\n");
  EXPECT_EQ(Run("delete", {"cm", "a", "--ignore-not-found"}).code, 0);
  r = Run("delete", {"-f", f});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "configmap \"c\" deleted\n");
  EXPECT_NE(r.err.find("error when deleting \"" + f +
                       "\": configmaps \"a\" not found"),
            std::string::npos)
      << r.err;
}

TEST_F(KpctlServerTest, EditWithEditor) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kConfigMap).code, 0);
  env_["EDITOR"] = "sed -i -e 's/b: \"2\"/b: \"edited\"/'";
  Result r = Run("edit", {"cm/cfg"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg edited\n");
  auto cm = server_.Get("/api/v1/namespaces/default/configmaps/cfg");
  EXPECT_EQ(cm.Str({"data", "b"}), "edited");
  env_["EDITOR"] = "true";  // saves nothing new
  r = Run("edit", {"cm", "cfg"});
  EXPECT_EQ(r.out, "Edit cancelled, no changes made.\n");
}

TEST_F(KpctlServerTest, DescribePodDeploymentNode) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, std::string(kDeployment) + R"(---
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: p}}
spec:
  nodeName: n1
  containers:
  - name: c
    image: busybox
    env: [{name: A, value: "1"}]
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {node-role.kubernetes.io/worker: ""}}
)")
                .code,
            0);
  Result r = Run("describe", {"pod", "p"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "Name:         p");
  EXPECT_NE(r.out.find("\nContainers:\n  c:\n    Image:  busybox\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      A:  1\n"), std::string::npos) << r.out;
  r = Run("describe", {"deploy/web"});
  EXPECT_NE(r.out.find("Replicas:               3 desired | 0 updated | 0 "
                       "total | 0 available | 0 unavailable\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Selector:               app=web\n"), std::string::npos);
  r = Run("describe", {"node", "n1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Roles:              worker\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Non-terminated Pods:  (1 in total)"), std::string::npos)
      << r.out;
}

TEST_F(KpctlServerTest, GetWatchPrintsRowsAsEventsArrive) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kConfigMap).code, 0);
  auto bg = Start("get", {"cm", "-w", "--request-timeout=3s"});
  ASSERT_TRUE(bg->WaitFor("\ncfg "));
  ASSERT_EQ(Run("apply", {"-f", "-"},
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n")
                .code,
            0);
  ASSERT_TRUE(bg->WaitFor("\nnew "));
  Result r = bg->Join();  // the server ends the watch after 3 s
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "NAME   DATA   AGE");
}

TEST_F(KpctlServerTest, VersionAndApiResources) {
  Result r = Run("version", {});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Server Version: v1.32"), std::string::npos) << r.out;
  r = Run("api-resources", {}, "", false);
  // Columns as wide as their longest cell (poddisruptionbudgets,
  // rbac.authorization.k8s.io/v1), as kubectl prints them.
  EXPECT_NE(r.out.find("deployments            deploy       apps/v1 "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nclusterrolebindings                 "
                       "rbac.authorization.k8s.io/v1   false        "
                       "ClusterRoleBinding\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("serviceaccounts        sa           v1"),
            std::string::npos)
      << r.out;
}

TEST_F(KpctlServerTest, ServerSideApply) {
  const std::string f = Write("cm.yaml", kConfigMap);
  Result r = Run("apply", {"--server-side", "-f", f});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg serverside-applied\n");
  auto cm = server_.Get("/api/v1/namespaces/default/configmaps/cfg");
  EXPECT_EQ(cm.Str({"data", "b"}), "2");
  const auto* mf = cm.At({"metadata", "managedFields"});
  ASSERT_NE(mf, nullptr);
  EXPECT_EQ(std::string((*mf)[0]["manager"].GetString()), "kubectl");
  EXPECT_EQ(std::string((*mf)[0]["operation"].GetString()), "Apply");
  r = Run("apply", {"--server-side", "-f", f});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(KpctlServerTest, GetJsonPath) {
  ASSERT_EQ(
      Run("apply", {"-f", "-"}, std::string(kDeployment) + "---\n" + kConfigMap)
          .code,
      0);
  Result r = Run("get", {"deploy", "web", "-o",
                         "jsonpath={.spec.replicas}/{.spec.template.spec."
                         "containers[0].image}"});
  EXPECT_EQ(r.out, "3/nginx:1.27");
  r = Run("get", {"cm,deploy", "-o",
                  "jsonpath={range .items[*]}{.kind}:{.metadata.name} {end}"});
  EXPECT_EQ(r.out, "ConfigMap:cfg Deployment:web ");
  r = Run("get", {"cm", "-o", "jsonpath={.items[0"});
  EXPECT_EQ(r.code, 1);
}

TEST_F(KpctlServerTest, DeleteWaitsForATerminatingNamespace) {
  // The namespace controller empties and ends deleted namespaces, as the
  // controller manager of a cluster does.
  metrics::Registry registry;
  auto cm = controllers::ControllerManager::Start(
      {.server = "http://" + Server(),
       .leader_elect = false,
       .port = 0,
       .metrics = &registry,
       .controllers = {"namespace"},
       .namespace_retry_interval = milliseconds(100)});
  ASSERT_TRUE(cm.ok()) << cm.status();
  ASSERT_EQ(Run("apply", {"-f", "-"}, R"(apiVersion: v1
kind: Namespace
metadata: {name: gone}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: gone}
)")
                .code,
            0);
  Result r = Run("delete", {"namespace", "gone", "--timeout=60s"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "namespace \"gone\" deleted\n");
  // --wait returned only once the namespace (and its contents) were gone.
  EXPECT_EQ(server_.Get("/api/v1/namespaces/gone").code, 404);
}

TEST_F(KpctlServerTest, DryRunStoresNothing) {
  const std::string f = Write("cm.yaml", kConfigMap);
  Result r = Run("apply", {"-f", f, "--dry-run=server"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "configmap/cfg created (server dry run)\n");
  EXPECT_EQ(server_.Get("/api/v1/namespaces/default/configmaps/cfg").code, 404);
  r = Run("create", {"-f", f, "--dry-run=client"});
  EXPECT_EQ(r.out, "configmap/cfg created (dry run)\n");
  EXPECT_EQ(server_.Get("/api/v1/namespaces/default/configmaps/cfg").code, 404);
  ASSERT_EQ(Run("apply", {"-f", f}).code, 0);
  r = Run("delete", {"cm", "cfg", "--dry-run=server"});
  EXPECT_EQ(r.out, "configmap \"cfg\" deleted (server dry run)\n");
  EXPECT_EQ(server_.Get("/api/v1/namespaces/default/configmaps/cfg").code, 200);
  // A dry-run of an invalid object fails like the real thing.
  r = Run("apply", {"--dry-run=server", "-f", "-"}, R"(apiVersion: v1
kind: Pod
metadata: {name: broken}
spec: {containers: []}
)");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Error from server (Invalid)"), std::string::npos);
  EXPECT_EQ(Run("apply", {"-f", f, "--dry-run=maybe"}).code, 1);
  // apply needs a name; create can generate one.
  const std::string gen =
      Write("gen.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: g-}\n");
  r = Run("apply", {"-f", gen});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("resource name may not be empty"), std::string::npos);
  r = Run("create", {"-f", gen});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("configmap/g-", 0), 0u) << r.out;
}

TEST_F(KpctlServerTest, PatchMergeStrategicJsonAndStatus) {
  ASSERT_EQ(Run("apply", {"-f", "-"}, kDeployment).code, 0);
  Result r = Run("patch", {"deploy/web", "-p", "{spec: {replicas: 1}}",
                           "--type", "merge"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/web patched\n");
  r = Run(
      "patch",
      {"deploy", "web", "-p",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}})"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d.json["spec"]["replicas"].GetInt(), 1);
  // Strategic merge kept the container's ports (merged by name).
  EXPECT_TRUE(
      d.json["spec"]["template"]["spec"]["containers"][0].HasMember("ports"));
  r = Run("patch", {"deploy/web", "--type=json", "-p",
                    R"([{"op":"replace","path":"/spec/replicas","value":2}])"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run("patch", {"deploy/web", "--subresource=status", "--type=merge", "-p",
                    R"({"status":{"observedGeneration":9}})"});
  ASSERT_EQ(r.code, 0) << r.err;
  d = server_.Get("/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(d.json["spec"]["replicas"].GetInt(), 2);
  EXPECT_EQ(d.json["status"]["observedGeneration"].GetInt(), 9);
  r = Run("patch", {"deploy/web", "--type=json", "-p",
                    R"([{"op":"test","path":"/spec/replicas","value":7}])"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("Error from server", 0), 0u) << r.err;
}


// `kpctl --kubeconfig X -n team get configmaps` as kubectl takes it.
TEST_F(KpctlServerTest, GlobalFlagsBeforeTheCommand) {
  const std::string kc = Write("kc", "apiVersion: v1\nkind: Config\n"
                                     "current-context: c\ncontexts:\n"
                                     "- name: c\n  context: {cluster: k}\n"
                                     "clusters:\n- name: k\n  cluster: "
                                     "{server: \"http://" +
                                         Server() + "\"}\n");
  ASSERT_EQ(Run("apply", {"-f", "-"},
                "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"
                "---\napiVersion: v1\nkind: ConfigMap\n"
                "metadata: {name: cfg, namespace: team}\n")
                .code,
            0);
  StatusOr<std::vector<std::string>> words =
      HoistGlobalFlags({"--kubeconfig", kc, "-n", "team", "get", "configmaps"});
  ASSERT_TRUE(words.ok()) << words.status();
  const std::string cmd = words->front();
  words->erase(words->begin());
  Result r = Run(cmd, *words, "", /*add_server=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cfg"), std::string::npos) << r.out;
}

// ---- against a fake API server, for answers a real one never gives

// Answers every request with `answer`, counting them.
class FakeApiServer {
 public:
  using Answer = std::function<void(const net::HttpRequest&,
                                    std::shared_ptr<net::Responder>)>;
  explicit FakeApiServer(Answer answer, net::HttpServerOptions options = {})
      : https_(options.tls != nullptr), server_(std::move(options)) {
    server_.HandlePrefix(
        "", "/",
        [this, answer = std::move(answer)](const net::HttpRequest& req,
                                           std::shared_ptr<net::Responder> r) {
          requests_.fetch_add(1);
          answer(req, std::move(r));
        });
    Status s = server_.Start();
    EXPECT_TRUE(s.ok()) << s;
  }

  std::string Url() const {
    return std::string(https_ ? "https" : "http") +
           "://127.0.0.1:" + std::to_string(server_.port());
  }
  int requests() const { return requests_.load(); }
  void ResetRequests() { requests_.store(0); }

 private:
  std::atomic<int> requests_{0};
  const bool https_;
  net::HttpServer server_;  // last: stopped before the rest goes
};

void RespondJson(net::Responder& r, std::string body, int status = 200) {
  r.Respond(status, {{"Content-Type", "application/json"}}, std::move(body));
}

// Runs `kpctl <cmd> <args> --server=<server>` with no kubeconfig (on
// `clock`, the real one if nullptr).
Result RunAgainst(const std::string& server, const std::string& cmd,
                  std::vector<std::string> args, Clock* clock = nullptr) {
  std::istringstream in;
  std::ostringstream out, err;
  KubeIo io{&in, &out, &err, [](const char*) -> const char* { return nullptr; },
            clock};
  args.push_back("--server=" + server);
  Result r;
  r.code = RunKubeCommand(cmd, args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A server answering every page with the same continue token: LIST and
// Table give up at the repeat instead of asking forever, and a named get
// asks once. (The fake drops the token after 5 pages, so that a client
// without the check ends too.)
TEST(KpctlFakeServerTest, RepeatedContinueTokenIsAnErrorNotALoop) {
  std::atomic<int> pages{0};
  FakeApiServer server([&](const net::HttpRequest& req,
                           std::shared_ptr<net::Responder> r) {
    const std::string meta = R"("metadata":{"resourceVersion":"7",)"
                             R"("continue":")" +
                             std::string(++pages <= 5 ? "again" : "") + "\"}";
    if (req.headers.Get("Accept").find("as=Table") != std::string::npos) {
      RespondJson(*r,
                  R"({"kind":"Table","apiVersion":"meta.k8s.io/v1",)"
                  R"("columnDefinitions":[{"name":"Name","type":"string"}],)"
                  R"("rows":[{"cells":["a"],"object":{"metadata":)"
                  R"({"name":"a"}}}],)" +
                      meta + "}");
    } else {
      RespondJson(*r, R"({"kind":"ConfigMapList","apiVersion":"v1",)"
                      R"("items":[{"metadata":{"name":"a"}}],)" +
                          meta + "}");
    }
  });
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"configmaps"},
        std::vector<std::string>{"configmaps", "-o", "name"}}) {
    pages = 0;
    server.ResetRequests();
    Result r = RunAgainst(server.Url(), "get", args);
    EXPECT_EQ(r.code, 1) << args.size() << "\n" << r.out;
    EXPECT_EQ(r.err,
              "error: the server repeated the continue token \"again\" "
              "listing configmaps\n");
    EXPECT_EQ(server.requests(), 2) << args.size();
  }
  pages = 0;
  server.ResetRequests();
  Result r = RunAgainst(server.Url(), "get", {"configmaps", "a"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "NAME\na\n");
  EXPECT_EQ(server.requests(), 1);
}

// --request-timeout bounds a request with its retries: a server asking to
// be asked again in an hour (429, Retry-After: 3600) is an error at once,
// not two 60 s sleeps. On a FakeClock a sleep only ends when the test
// advances it, so a client that sleeps shows as a run that does not end.
TEST(KpctlFakeServerTest, RequestTimeoutBoundsRetryAfterWaits) {
  FakeApiServer server([](const net::HttpRequest&,
                          std::shared_ptr<net::Responder> r) {
    r->Respond(429,
               {{"Content-Type", "application/json"}, {"Retry-After", "3600"}},
               R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
               R"("message":"slow down","reason":"TooManyRequests",)"
               R"("code":429})");
  });
  FakeClock clock;
  for (const char* cmd : {"get", "version"}) {
    server.ResetRequests();
    std::vector<std::string> args = {"--request-timeout=1s"};
    if (std::string(cmd) == "get") args.insert(args.begin(), "configmaps");
    auto run = std::async(std::launch::async, [&] {
      return RunAgainst(server.Url(), cmd, args, &clock);
    });
    if (run.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      while (run.wait_for(std::chrono::milliseconds(0)) !=
             std::future_status::ready) {
        clock.Advance(hours(1));  // lets the sleeper out
      }
      FAIL() << cmd << " slept past --request-timeout";
    }
    Result r = run.get();
    EXPECT_EQ(r.code, 1) << cmd;
    EXPECT_NE(r.err.find("slow down"), std::string::npos) << cmd << r.err;
    EXPECT_EQ(server.requests(), 1) << cmd;
  }
  // version reads the flag too.
  Result bad = RunAgainst(server.Url(), "version", {"--request-timeout=abc"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--request-timeout"), std::string::npos) << bad.err;
}

// A watch answer that never ends its line: the client stops buffering at
// kMaxWatchEventBytes and fails, rather than growing without bound. The
// fake sends just past the limit and then ends the stream (so a client
// without the bound finishes too, wrongly successful).
TEST(KpctlFakeServerTest, WatchLineOverTheLimitIsAnError) {
  FakeApiServer server([](const net::HttpRequest& req,
                          std::shared_ptr<net::Responder> r) {
    if (req.QueryParam("watch") != "true") {
      RespondJson(*r,
                  R"({"kind":"Table","apiVersion":"meta.k8s.io/v1",)"
                  R"("columnDefinitions":[{"name":"Name","type":"string"}],)"
                  R"("rows":[],"metadata":{"resourceVersion":"1"}})");
      return;
    }
    r->SetMaxBufferedBytes(0);  // the client may read slower than we queue
    r->StartStream(200, {{"Content-Type", "application/json"}});
    const std::string chunk(1 << 20, 'x');
    for (size_t sent = 0; sent <= kMaxWatchEventBytes; sent += chunk.size()) {
      if (!r->Write(chunk)) return;  // the client gave up
    }
    r->Finish();
  });
  Result r = RunAgainst(server.Url(), "get", {"configmaps", "--watch-only"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.err,
            "error: a watch event of configmaps is longer than 16777216 "
            "bytes (no newline); giving up\n");
}

// A watch whose server never sends the response head gives up after
// --request-timeout (kubectl: the request's http.Client.Timeout), not
// after a fixed 30 s. The fake holds every watch unanswered.
TEST(KpctlFakeServerTest, WatchHeadWaitFollowsRequestTimeout) {
  Mutex mu;
  std::vector<std::shared_ptr<net::Responder>> held;  // outlive the server
  FakeApiServer server([&](const net::HttpRequest& req,
                           std::shared_ptr<net::Responder> r) {
    if (req.QueryParam("watch") == "true") {
      MutexLock l(&mu);
      held.push_back(std::move(r));
      return;
    }
    RespondJson(*r, R"({"kind":"Table","apiVersion":"meta.k8s.io/v1",)"
                    R"("columnDefinitions":[{"name":"Name","type":"string"}],)"
                    R"("rows":[],"metadata":{"resourceVersion":"1"}})");
  });
  const TimePoint start = Clock::Real()->Now();
  auto run = std::async(std::launch::async, [&] {
    return RunAgainst(server.Url(), "get",
                      {"configmaps", "--watch-only", "--request-timeout=1s"});
  });
  // Well below the old fixed 30 s, well above 1 s.
  ASSERT_EQ(run.wait_for(std::chrono::seconds(15)), std::future_status::ready)
      << "the watch waited past --request-timeout=1s for the response head";
  Result r = run.get();
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.err,
            "error: watching configmaps: reading response: timed out "
            "(--request-timeout 1s)\n");
  EXPECT_GE(Clock::Real()->Now() - start, seconds(1));
  MutexLock l(&mu);
  EXPECT_EQ(held.size(), 1u);
}

// The TLS flags against a TLS server whose certificate the kubeconfig's
// CA does not sign, as kubectl (clientcmd) applies them:
// --insecure-skip-tls-verify drops the kubeconfig's CA and connects;
// --certificate-authority replaces it, and turns a kubeconfig's
// insecure-skip-tls-verify off; both flags together are refused.
TEST(KpctlFakeServerTest, TlsOverrideFlagsReplaceTheKubeconfigsTrust) {
  const WallTime now = Clock::Real()->WallNow();
  StatusOr<net::KeyPair> ca = net::GenerateCa("server-ca", now);
  StatusOr<net::KeyPair> other_ca = net::GenerateCa("other-ca", now);
  ASSERT_TRUE(ca.ok() && other_ca.ok());
  StatusOr<net::KeyPair> cert =
      net::IssueCertificate(*ca,
                            {.common_name = "server",
                             .ip_addresses = {"127.0.0.1"},
                             .server_auth = true},
                            now);
  ASSERT_TRUE(cert.ok()) << cert.status();
  net::HttpServerOptions options;
  StatusOr<std::shared_ptr<const net::TlsContext>> tls =
      net::TlsContext::NewServer({.cert_pem = cert->cert_pem,
                                  .key_pem = cert->key_pem,
                                  .alpn = {"http/1.1"}});
  ASSERT_TRUE(tls.ok()) << tls.status();
  options.tls = *tls;
  FakeApiServer server(
      [](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        RespondJson(*r, R"({"major":"1","minor":"32",)"
                        R"("gitVersion":"v1.32.4-kplane"})");
      },
      std::move(options));

  char tmpl[] = "/tmp/kpctl-tls-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string ca_file = write("ca.crt", ca->cert_pem);
  const std::string other_ca_file = write("other-ca.crt", other_ca->cert_pem);
  const std::string wrong_ca = write("wrong-ca", R"(apiVersion: v1
current-context: x
contexts: [{name: x, context: {cluster: c}}]
clusters:
- name: c
  cluster:
    server: )" + server.Url() + R"(
    certificate-authority-data: )" + Base64Encode(other_ca->cert_pem) +
                                                     R"(
)");
  const std::string insecure = write("insecure", R"(apiVersion: v1
current-context: x
contexts: [{name: x, context: {cluster: c}}]
clusters:
- name: c
  cluster: {server: ")" + server.Url() + R"(", insecure-skip-tls-verify: true}
)");
  auto version = [&](const std::string& kubeconfig,
                     std::vector<std::string> flags) {
    flags.push_back("--kubeconfig=" + kubeconfig);
    return RunAgainst(server.Url(), "version", flags);
  };
  const std::string served = "Server Version: v1.32.4-kplane\n";

  Result r = version(wrong_ca, {});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("certificate signed by an unknown authority"),
            std::string::npos)
      << r.err;
  r = version(wrong_ca, {"--insecure-skip-tls-verify"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(served), std::string::npos) << r.out;
  r = version(wrong_ca, {"--certificate-authority=" + ca_file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(served), std::string::npos) << r.out;

  r = version(insecure, {});
  EXPECT_EQ(r.code, 0) << r.err;
  r = version(insecure, {"--certificate-authority=" + ca_file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(served), std::string::npos) << r.out;
  // The flag's CA is checked: the kubeconfig's insecure is off.
  r = version(insecure, {"--certificate-authority=" + other_ca_file});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("certificate signed by an unknown authority"),
            std::string::npos)
      << r.err;

  for (const std::string& kubeconfig : {wrong_ca, insecure}) {
    r = version(kubeconfig, {"--certificate-authority=" + ca_file,
                             "--insecure-skip-tls-verify"});
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err,
              "error: specifying a root certificates file with the insecure "
              "flag is not allowed\n");
  }
  std::filesystem::remove_all(dir);
}

// A container status without `state` (the API server fills in an empty
// one, another server may not): "Waiting" with no reason, as kubectl
// prints it.
TEST(KpctlFakeServerTest, DescribeContainerStatusWithoutState) {
  FakeApiServer server(
      [](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        if (req.path == "/api/v1/namespaces/default/pods/p") {
          RespondJson(*r, R"({"apiVersion":"v1","kind":"Pod",)"
                          R"("metadata":{"name":"p","namespace":"default"},)"
                          R"("spec":{"containers":[{"name":"c","image":"i"}]},)"
                          R"("status":{"phase":"Pending","containerStatuses":)"
                          R"([{"name":"c","ready":false,"restartCount":0}]}})");
        } else {
          RespondJson(*r, R"({"kind":"List","apiVersion":"v1","metadata":{},)"
                          R"("items":[]})");
        }
      });
  Result r = RunAgainst(server.Url(), "describe", {"pod", "p"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  c:\n    Image:          i\n    State:          "
                       "Waiting\n    Ready:          False\n"),
            std::string::npos)
      << r.out;
}

// `rollout undo` to a ReplicaSet without spec.template (not something the
// API server stores, but a malformed answer must not crash kpctl).
TEST(KpctlFakeServerTest, RolloutUndoToARevisionWithoutTemplateFails) {
  FakeApiServer server([](const net::HttpRequest& req,
                          std::shared_ptr<net::Responder> r) {
    if (req.path == "/apis/apps/v1/namespaces/default/deployments/web") {
      RespondJson(*r, R"({"apiVersion":"apps/v1","kind":"Deployment",)"
                      R"("metadata":{"name":"web","namespace":"default",)"
                      R"("uid":"u1","annotations":)"
                      R"({"deployment.kubernetes.io/revision":"2"}},)"
                      R"("spec":{"template":{"spec":{"containers":)"
                      R"([{"name":"c","image":"i:2"}]}}}})");
    } else if (req.path == "/apis/apps/v1/namespaces/default/replicasets") {
      RespondJson(*r, R"({"apiVersion":"apps/v1","kind":"ReplicaSetList",)"
                      R"("metadata":{"resourceVersion":"5"},"items":[)"
                      R"({"metadata":{"name":"web-1","namespace":"default",)"
                      R"("annotations":)"
                      R"({"deployment.kubernetes.io/revision":"1"},)"
                      R"("ownerReferences":[{"apiVersion":"apps/v1",)"
                      R"("kind":"Deployment","name":"web","uid":"u1",)"
                      R"("controller":true}]},"spec":{"replicas":0}}]})");
    } else {
      RespondJson(*r,
                  R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                  R"("reason":"NotFound","code":404})",
                  404);
    }
  });
  Result r = RunAgainst(server.Url(), "rollout", {"undo", "deploy/web"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.err,
            "error: revision 1 (replicaset \"web-1\") has no pod template\n");
}

}  // namespace
}  // namespace kplane::kpctl::kube
