// Unit tests of kpctl/kube: flags, kubeconfig, resource arguments,
// printing, manifests and the rollout/wait status logic. No server.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/base64.h"
#include "base/testing/hostile_inputs.h"
#include "kpctl/kube/flags.h"
#include "kpctl/kube/kube_command.h"
#include "kpctl/kube/kubeconfig.h"
#include "kpctl/kube/manifest.h"
#include "kpctl/kube/printer.h"
#include "kpctl/kube/resources.h"
#include "kpctl/kube/rollout.h"

namespace kplane::kpctl::kube {
namespace {

rapidjson::Document Json(std::string_view s) {
  rapidjson::Document d;
  d.Parse(s.data(), s.size());
  EXPECT_FALSE(d.HasParseError()) << s;
  return d;
}

// ---- flags

TEST(FlagsTest, LongShortAttachedRepeatedAndBooleans) {
  Flags f({{"output", 'o', false, "", ""},
           {"filename", 'f', false, "", ""},
           {"watch", 'w', true, "", ""},
           {"all-namespaces", 'A', true, "", ""}});
  ASSERT_TRUE(f.Parse({"pods", "-n", "kube-system", "web", "-ojson", "-f",
                       "a.yaml", "--filename=b.yaml", "-Aw", "--", "-x"})
                  .ok());
  EXPECT_EQ(f.Get("namespace"), "kube-system");
  EXPECT_EQ(f.Get("output"), "json");
  EXPECT_EQ(f.GetAll("filename"),
            (std::vector<std::string>{"a.yaml", "b.yaml"}));
  EXPECT_TRUE(f.GetBool("watch"));
  EXPECT_TRUE(f.GetBool("all-namespaces"));
  EXPECT_EQ(f.positional(), (std::vector<std::string>{"pods", "web", "-x"}));
  EXPECT_EQ(f.Get("request-timeout"), "30s");  // a global default
  EXPECT_FALSE(f.Has("request-timeout"));
}

TEST(FlagsTest, BooleanWithExplicitValue) {
  Flags f({{"watch", 'w', true, "true", ""}});
  ASSERT_TRUE(f.Parse({"--watch=false"}).ok());
  EXPECT_FALSE(f.GetBool("watch"));
  Flags g({{"watch", 'w', true, "true", ""}});
  EXPECT_TRUE(g.Parse({}).ok());
  EXPECT_TRUE(g.GetBool("watch"));
  Flags h({{"watch", 'w', true, "", ""}});
  EXPECT_FALSE(h.Parse({"--watch=maybe"}).ok());
}

TEST(FlagsTest, Errors) {
  Flags f({});
  Status s = f.Parse({"--nope"});
  EXPECT_EQ(s.message(), "unknown flag: --nope");
  Flags g({});
  EXPECT_EQ(g.Parse({"-q"}).message(), "unknown shorthand flag: 'q' in -q");
  Flags h({});
  EXPECT_EQ(h.Parse({"--namespace"}).message(),
            "flag needs an argument: --namespace");
}

// Duration flags refuse negative values (the commands would read them as
// "no limit") and values whose nanoseconds overflow, before any request:
// nothing listens on the server given.
TEST(FlagsTest, DurationFlagsRefuseNegativeAndOverflowingValues) {
  const std::string range = "flag: out of range (at most 876000h)\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"get", "pods", "--request-timeout=-1s"},
       "error: invalid argument \"-1s\" for \"--request-timeout\" flag: "
       "must not be negative\n"},
      // Bare seconds: 9223372037 s is past int64 nanoseconds.
      {{"get", "pods", "--request-timeout=9223372037"},
       "error: invalid argument \"9223372037\" for \"--request-timeout\" " +
           range},
      // Fits int64 nanoseconds, but now + it does not fit a time point.
      {{"get", "pods", "--request-timeout", "2562047h"},
       "error: invalid argument \"2562047h\" for \"--request-timeout\" " +
           range},
      {{"get", "pods", "--request-timeout=soon"},
       "error: invalid argument \"soon\" for \"--request-timeout\" flag: "
       "time: invalid duration \"soon\"\n"},
      {{"wait", "cm/a", "--for=delete", "--timeout=-1s"},
       "error: invalid argument \"-1s\" for \"--timeout\" flag: must not "
       "be negative\n"},
      {{"rollout", "status", "deploy/web", "--timeout=-5"},
       "error: invalid argument \"-5\" for \"--timeout\" flag: must not "
       "be negative\n"},
      {{"delete", "cm", "a", "--timeout=-1m"},
       "error: invalid argument \"-1m\" for \"--timeout\" flag: must not "
       "be negative\n"},
  };
  for (const auto& [words, want] : cases) {
    std::vector<std::string> args(words.begin() + 1, words.end());
    args.push_back("--server=http://127.0.0.1:1");
    std::istringstream in;
    std::ostringstream out, err;
    KubeIo io{&in, &out, &err,
              [](const char*) -> const char* { return nullptr; }, nullptr};
    EXPECT_EQ(RunKubeCommand(words[0], args, io), 1) << words.back();
    EXPECT_EQ(err.str(), want);
  }
}

TEST(FlagsTest, GlobalFlagsBeforeTheCommandMoveBehindIt) {
  using V = std::vector<std::string>;
  struct Case {
    V words, want;
  };
  for (const Case& c : std::vector<Case>{
           {{"get", "pods"}, {"get", "pods"}},
           {{"-n", "demo", "get", "pods"}, {"get", "-n", "demo", "pods"}},
           {{"--kubeconfig", "/k", "-n", "demo", "get", "pods", "-o", "wide"},
            {"get", "--kubeconfig", "/k", "-n", "demo", "pods", "-o", "wide"}},
           {{"--context=dev", "-ndemo", "--insecure-skip-tls-verify", "get",
             "cm"},
            {"get", "--context=dev", "-ndemo", "--insecure-skip-tls-verify",
             "cm"}},
           {{"-s", "https://h:6443", "--token", "t", "version"},
            {"version", "-s", "https://h:6443", "--token", "t"}},
           // The command's own words after it are left alone.
           {{"-n", "x", "get", "--", "-n"}, {"get", "-n", "x", "--", "-n"}},
       }) {
    StatusOr<V> got = HoistGlobalFlags(c.words);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want);
  }
  EXPECT_EQ(HoistGlobalFlags({"--watch", "get", "pods"}).status().message(),
            "unknown flag: --watch");
  EXPECT_EQ(HoistGlobalFlags({"-w", "get"}).status().message(),
            "unknown shorthand flag: 'w' in -w");
  EXPECT_EQ(HoistGlobalFlags({"--namespace"}).status().message(),
            "flag needs an argument: --namespace");
  EXPECT_EQ(HoistGlobalFlags({"-n", "demo"}).status().message(),
            "a command is required after the flags -n demo");
}

// ---- kubeconfig

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kpctl-kc-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(
        std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }
  GetEnvFn Env() {
    return [this](const char* n) -> const char* {
      auto it = env_.find(n);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
  }
  std::string dir_;
  std::map<std::string, std::string> env_;
};

constexpr char kConfigA[] = R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: local, user: alice, namespace: team-a}
- name: other
  context: {cluster: remote, user: bob}
clusters:
- name: local
  cluster: {server: "http://127.0.0.1:6443"}
- name: remote
  cluster: {server: "10.0.0.1:8080"}
users:
- name: alice
  user: {token: secret-a}
- name: bob
  user: {}
)";

TEST_F(KubeconfigTest, CurrentContextServerNamespaceToken) {
  env_["KUBECONFIG"] = Write("a", kConfigA);
  StatusOr<Kubeconfig> kc = LoadKubeconfig("", Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  StatusOr<ClientConfig> c = ResolveClientConfig(*kc, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "http://127.0.0.1:6443");
  EXPECT_EQ(c->ns, "team-a");
  EXPECT_EQ(c->token, "secret-a");
  EXPECT_EQ(c->context, "dev");
  EXPECT_FALSE(c->ns_explicit);
}

TEST_F(KubeconfigTest, OverridesAndOtherContext) {
  const std::string path = Write("a", kConfigA);
  StatusOr<Kubeconfig> kc = LoadKubeconfig(path, Env());
  ASSERT_TRUE(kc.ok());
  StatusOr<ClientConfig> c = ResolveClientConfig(*kc, {.context = "other"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "http://10.0.0.1:8080");  // scheme added
  EXPECT_EQ(c->ns, "default");
  EXPECT_EQ(c->token, "");
  c = ResolveClientConfig(*kc,
                          {.server = "http://h:1", .token = "t", .ns = "x"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->server, "http://h:1");
  EXPECT_EQ(c->token, "t");
  EXPECT_EQ(c->ns, "x");
  EXPECT_TRUE(c->ns_explicit);
  EXPECT_FALSE(ResolveClientConfig(*kc, {.context = "nope"}).ok());
  EXPECT_FALSE(ResolveClientConfig(*kc, {.server = "ftp://h:1"}).ok());
}

// kubectl's TLS fields: *-data (base64 PEM) or files relative to the
// kubeconfig, insecure-skip-tls-verify, tls-server-name; https:// is the
// default scheme once anything TLS is configured.
TEST_F(KubeconfigTest, TlsFieldsAsKubectlReadsThem) {
  const std::string ca_b64 = Base64Encode("CA PEM");
  const std::string path = Write("sub/config", R"(apiVersion: v1
current-context: data
contexts:
- name: data
  context: {cluster: data, user: data}
- name: files
  context: {cluster: files, user: files}
- name: insecure
  context: {cluster: insecure, user: token}
clusters:
- name: data
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: )" + ca_b64 + R"(
    tls-server-name: kubernetes
- name: files
  cluster: {server: "127.0.0.1:6443", certificate-authority: pki/ca.crt}
- name: insecure
  cluster: {server: "https://h:1", insecure-skip-tls-verify: true}
users:
- name: data
  user:
    client-certificate-data: )" + Base64Encode("CERT PEM") +
                                                   R"(
    client-key-data: )" + Base64Encode("KEY PEM") + R"(
- name: files
  user: {client-certificate: pki/admin.crt, client-key: /abs/admin.key}
- name: token
  user: {tokenFile: token}
)");
  Write("sub/token", "tok\n");
  StatusOr<Kubeconfig> kc = LoadKubeconfig(path, Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  StatusOr<ClientConfig> c = ResolveClientConfig(*kc, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->tls.ca_pem, "CA PEM");
  EXPECT_EQ(c->tls.cert_pem, "CERT PEM");
  EXPECT_EQ(c->tls.key_pem, "KEY PEM");
  EXPECT_EQ(c->tls.server_name, "kubernetes");
  EXPECT_FALSE(c->tls.insecure_skip_verify);

  c = ResolveClientConfig(*kc, {.context = "files"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");  // TLS: https by default
  EXPECT_EQ(c->tls.ca_file, dir_ + "/sub/pki/ca.crt");
  EXPECT_EQ(c->tls.cert_file, dir_ + "/sub/pki/admin.crt");
  EXPECT_EQ(c->tls.key_file, "/abs/admin.key");
  // A file that is not there fails when the context is built, naming it.
  Status missing = ClientTlsContext(*c).status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing;

  c = ResolveClientConfig(*kc, {.context = "insecure"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->tls.insecure_skip_verify);
  EXPECT_EQ(c->token, "tok");  // tokenFile, relative to the kubeconfig
  EXPECT_TRUE(ClientTlsContext(*c).ok());

  // kubectl's validation errors.
  const std::string half = Write("half", R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {client-certificate: a.crt}}]
)");
  kc = LoadKubeconfig(half, Env());
  ASSERT_TRUE(kc.ok());
  EXPECT_EQ(ResolveClientConfig(*kc, {}).status().message(),
            "client-key-data or client-key must be specified for u to use "
            "the clientCert authentication method.");
  // An http server needs no TLS context, whatever the kubeconfig carries.
  kc = LoadKubeconfig(path, Env());
  ASSERT_TRUE(kc.ok());
  c = ResolveClientConfig(*kc, {.server = "http://h:1"});
  ASSERT_TRUE(c.ok()) << c.status();
  StatusOr<std::shared_ptr<const net::TlsContext>> none = ClientTlsContext(*c);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
}

// The TLS flags as clientcmd's getClusterConfig applies them:
// --insecure-skip-tls-verify without a CA flag drops the kubeconfig's CA
// (data or file) and skips verification; --certificate-authority replaces
// the kubeconfig's CA data and turns its insecure-skip-tls-verify off. Both
// flags together are refused, as client-go's transport refuses a CA with
// insecure (and so is a kubeconfig cluster holding both).
TEST_F(KubeconfigTest, TlsOverrideFlagsReplaceTheKubeconfigsTrust) {
  const std::string path = Write("config", R"(apiVersion: v1
current-context: data
contexts:
- {name: data, context: {cluster: data}}
- {name: file, context: {cluster: file}}
- {name: insecure, context: {cluster: insecure}}
- {name: both, context: {cluster: both}}
- {name: two-cas, context: {cluster: two-cas}}
clusters:
- name: data
  cluster: {server: "https://h:1", certificate-authority-data: )" +
                                               Base64Encode("CA PEM") + R"(}
- name: file
  cluster: {server: "https://h:1", certificate-authority: ca.crt}
- name: insecure
  cluster: {server: "https://h:1", insecure-skip-tls-verify: true}
- name: both
  cluster:
    server: "https://h:1"
    insecure-skip-tls-verify: true
    certificate-authority-data: )" + Base64Encode("CA PEM") +
                                               R"(
- name: two-cas
  cluster:
    server: "https://h:1"
    certificate-authority: ca.crt
    certificate-authority-data: )" + Base64Encode("CA PEM") +
                                               R"(
)");
  StatusOr<Kubeconfig> kc = LoadKubeconfig(path, Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  for (const char* context : {"data", "file", "two-cas"}) {
    StatusOr<ClientConfig> c = ResolveClientConfig(
        *kc, {.context = context, .insecure_skip_tls_verify = true});
    ASSERT_TRUE(c.ok()) << context << ": " << c.status();
    EXPECT_TRUE(c->tls.insecure_skip_verify) << context;
    EXPECT_EQ(c->tls.ca_pem, "") << context;
    EXPECT_EQ(c->tls.ca_file, "") << context;
    EXPECT_TRUE(ClientTlsContext(*c).ok()) << context;
  }
  for (const char* context : {"data", "file", "insecure", "two-cas"}) {
    StatusOr<ClientConfig> c = ResolveClientConfig(
        *kc, {.context = context, .certificate_authority = "/flag/ca.crt"});
    ASSERT_TRUE(c.ok()) << context << ": " << c.status();
    EXPECT_FALSE(c->tls.insecure_skip_verify) << context;
    EXPECT_EQ(c->tls.ca_file, "/flag/ca.crt") << context;
    EXPECT_EQ(c->tls.ca_pem, "") << context;
  }
  const std::string refused =
      "specifying a root certificates file with the insecure flag is not "
      "allowed";
  for (const char* context : {"data", "file", "insecure"}) {
    EXPECT_EQ(ResolveClientConfig(*kc, {.context = context,
                                        .certificate_authority = "/flag/ca.crt",
                                        .insecure_skip_tls_verify = true})
                  .status()
                  .message(),
              refused)
        << context;
  }
  EXPECT_EQ(ResolveClientConfig(*kc, {.context = "both"}).status().message(),
            refused);
  // A CA flag mends that cluster; the insecure flag alone keeps it as is.
  EXPECT_TRUE(ResolveClientConfig(*kc, {.context = "both",
                                        .certificate_authority = "/f/ca.crt"})
                  .ok());
  StatusOr<ClientConfig> c = ResolveClientConfig(
      *kc, {.context = "both", .insecure_skip_tls_verify = true});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls.ca_pem, "");
  // Validated after the flags, as clientcmd: two CAs are an error only
  // when no flag replaced them.
  EXPECT_EQ(ResolveClientConfig(*kc, {.context = "two-cas"}).status().message(),
            "certificate-authority-data and certificate-authority are both "
            "specified for two-cas. certificate-authority-data will override.");
}

// A user's tokenFile is read up to 1 MiB (more than any server takes in a
// header) and trimmed as client-go trims it; a bigger file is an error
// naming it, not a read without end.
TEST_F(KubeconfigTest, TokenFileIsReadWithABound) {
  const std::string path = Write("config", R"(apiVersion: v1
current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {tokenFile: token}}]
)");
  StatusOr<Kubeconfig> kc = LoadKubeconfig(path, Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  const std::string token_path = dir_ + "/token";
  // 1 MiB with the newline, which is trimmed.
  Write("token", std::string((1 << 20) - 1, 't') + "\n");
  StatusOr<ClientConfig> c = ResolveClientConfig(*kc, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->token, std::string((1 << 20) - 1, 't'));

  Write("token", std::string((1 << 20) + 1, 't'));
  const std::string message =
      "tokenFile " + token_path + " of user u is larger than 1048576 bytes";
  EXPECT_EQ(ResolveClientConfig(*kc, {}).status().message(), message);
  // What the command prints.
  std::istringstream in;
  std::ostringstream out, err;
  KubeIo io{&in, &out, &err, Env(), nullptr};
  EXPECT_EQ(RunKubeCommand("get", {"pods", "--kubeconfig=" + path}, io), 1);
  EXPECT_EQ(err.str(), "error: " + message + "\n");
  EXPECT_EQ(out.str(), "");
}

TEST_F(KubeconfigTest, MergesKubeconfigListFirstWins) {
  const std::string a = Write("a", kConfigA);
  const std::string b = Write("b", R"(current-context: b-ctx
contexts:
- name: b-ctx
  context: {cluster: local}
- name: dev
  context: {cluster: remote}
clusters:
- name: local
  cluster: {server: "http://ignored:1"}
)");
  env_["KUBECONFIG"] = b + ":" + dir_ + "/missing:" + a;
  StatusOr<Kubeconfig> kc = LoadKubeconfig("", Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  EXPECT_EQ(kc->files.size(), 2u);
  // b's current-context and its "local" cluster win.
  StatusOr<ClientConfig> c = ResolveClientConfig(*kc, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->context, "b-ctx");
  EXPECT_EQ(c->server, "http://ignored:1");
  // b's "dev" shadows a's.
  c = ResolveClientConfig(*kc, {.context = "dev"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->server, "http://10.0.0.1:8080");
}

TEST_F(KubeconfigTest, HostileYamlIsAnErrorNotACrash) {
  // A kubeconfig whose YAML refers to itself recursed forever.
  const std::string path =
      kplane::testing::HostileInputPath("kubeconfig/alias_cycle.yaml");
  ASSERT_TRUE(std::filesystem::exists(path));
  StatusOr<Kubeconfig> kc = LoadKubeconfig(path, Env());
  ASSERT_FALSE(kc.ok());
  EXPECT_EQ(kc.status().message(),
            "error loading config file \"" + path +
                "\": yaml: anchor 'c' value contains itself");
}

TEST_F(KubeconfigTest, HomeDefaultAndErrors) {
  env_["HOME"] = dir_;
  Write(".kube/config", kConfigA);
  StatusOr<Kubeconfig> kc = LoadKubeconfig("", Env());
  ASSERT_TRUE(kc.ok());
  EXPECT_EQ(ResolveClientConfig(*kc, {})->server, "http://127.0.0.1:6443");
  // Without ~/.kube/config, the file `kplane up` writes.
  std::filesystem::remove(dir_ + "/.kube/config");
  Write(".kplane/kubeconfig",
        "clusters: [{name: c, cluster: {server: \"http://up:6443\"}}]\n"
        "contexts: [{name: up, context: {cluster: c}}]\n"
        "current-context: up\n");
  kc = LoadKubeconfig("", Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  EXPECT_EQ(ResolveClientConfig(*kc, {})->server, "http://up:6443");
  // An explicit file must exist; a broken one names itself.
  EXPECT_EQ(LoadKubeconfig(dir_ + "/nope", Env()).status().code(),
            StatusCode::kNotFound);
  const std::string bad = Write("bad", "clusters: [\n");
  Status s = LoadKubeconfig(bad, Env()).status();
  EXPECT_NE(s.message().find(bad), std::string::npos) << s;
  // Nothing configured at all.
  env_.clear();
  kc = LoadKubeconfig("", Env());
  ASSERT_TRUE(kc.ok());
  EXPECT_FALSE(ResolveClientConfig(*kc, {}).ok());
}

// clientcmd's ConfirmUsable checks the context in effect, --context or
// current-context, whatever else the flags give; an empty current-context
// names none and is fine.
TEST_F(KubeconfigTest, ADanglingCurrentContextIsAnError) {
  const std::string path =
      Write("typo",
            "current-context: typo\n"
            "clusters: [{name: c, cluster: {server: \"http://h:6443\"}}]\n"
            "contexts: [{name: dev, context: {cluster: c}}]\n");
  StatusOr<Kubeconfig> kc = LoadKubeconfig(path, Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  Status s = ResolveClientConfig(*kc, {}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message(), "context was not found for specified context: typo");
  s = ResolveClientConfig(*kc, {.server = "http://h:1", .token = "t"}).status();
  EXPECT_EQ(s.message(), "context was not found for specified context: typo");
  // --context naming one that exists is the one in effect.
  StatusOr<ClientConfig> c = ResolveClientConfig(*kc, {.context = "dev"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "http://h:6443");
  // No current-context: only the flags.
  const std::string none = Write(
      "none", "clusters: [{name: c, cluster: {server: \"http://h:6443\"}}]\n");
  kc = LoadKubeconfig(none, Env());
  ASSERT_TRUE(kc.ok()) << kc.status();
  c = ResolveClientConfig(*kc, {.server = "http://h:1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "http://h:1");
}

// ---- resources

TEST(ResourcesTest, Forms) {
  auto r = ParseResourceArgs({"po"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].resource->resource, "pods");
  EXPECT_TRUE((*r)[0].names.empty());

  r = ParseResourceArgs({"deploy,cm", "a", "b"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].resource->resource, "deployments");
  EXPECT_EQ((*r)[1].names, (std::vector<std::string>{"a", "b"}));

  r = ParseResourceArgs({"deployment.apps/web", "pod/x", "deploy/api"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].names, (std::vector<std::string>{"web", "api"}));
  EXPECT_EQ(ObjectRef(*(*r)[0].resource, "web"), "deployment.apps/web");
  EXPECT_EQ(ObjectRef(*(*r)[1].resource, "x"), "pod/x");

  r = ParseResourceArgs({"all"});
  ASSERT_TRUE(r.ok());
  EXPECT_GE(r->size(), 4u);

  EXPECT_EQ(ParseResourceArgs({"frobs"}).status().message(),
            "the server doesn't have a resource type \"frobs\"");
  EXPECT_FALSE(ParseResourceArgs({"pods", "pod/x"}).ok());
  EXPECT_FALSE(ParseResourceArgs({"pod/x", "y"}).ok());
  EXPECT_FALSE(ParseResourceArgs({}).ok());
}

// ---- printing

TEST(PrinterTest, TabWriterPadsLikeKubectlAndRemembersWidths) {
  std::ostringstream out;
  TabWriter tw(&out);
  tw.AddRow({"NAME", "READY", "AGE"});
  tw.AddRow({"web-0", "1/1", "5m3s"});
  tw.Flush();
  tw.AddRow({"a", "0/1", "1s"});
  tw.Flush();
  EXPECT_EQ(out.str(),
            "NAME    READY   AGE\n"
            "web-0   1/1     5m3s\n"
            "a       0/1     1s\n");
}

constexpr char kPodTable[] = R"({"kind":"Table","apiVersion":"meta.k8s.io/v1",
  "metadata":{"resourceVersion":"7"},
  "columnDefinitions":[
    {"name":"Name","type":"string","format":"name","priority":0},
    {"name":"Ready","type":"string","format":"","priority":0},
    {"name":"Restarts","type":"integer","format":"","priority":0},
    {"name":"IP","type":"string","format":"","priority":1}],
  "rows":[{"cells":["web-0","1/1",2,"10.0.0.5"],
           "object":{"metadata":{"name":"web-0","namespace":"ns1",
                                 "labels":{"b":"2","a":"1"}}}}]})";

TEST(PrinterTest, TableColumnsWideNamespaceLabelsPrefix) {
  rapidjson::Document t = Json(kPodTable);
  TableOptions o;
  EXPECT_EQ(TableHeader(t, o),
            (std::vector<std::string>{"NAME", "READY", "RESTARTS"}));
  EXPECT_EQ(TableRows(t, o)[0],
            (std::vector<std::string>{"web-0", "1/1", "2"}));
  o.wide = true;
  o.all_namespaces = true;
  o.show_labels = true;
  o.kind_prefix = true;
  o.kind_group = "pod";
  EXPECT_EQ(TableHeader(t, o),
            (std::vector<std::string>{"NAMESPACE", "NAME", "READY", "RESTARTS",
                                      "IP", "LABELS"}));
  EXPECT_EQ(TableRows(t, o)[0],
            (std::vector<std::string>{"ns1", "pod/web-0", "1/1", "2",
                                      "10.0.0.5", "a=1,b=2"}));
  TableOptions lc;
  lc.label_columns = {"b", "x.io/missing"};
  EXPECT_EQ(
      TableHeader(t, lc),
      (std::vector<std::string>{"NAME", "READY", "RESTARTS", "B", "MISSING"}));
  EXPECT_EQ(TableRows(t, lc)[0],
            (std::vector<std::string>{"web-0", "1/1", "2", "2", ""}));
  // A watch event's Table has rows only; the first one's definitions apply.
  rapidjson::Document ev =
      Json(R"({"rows":[{"cells":["web-1","0/1",0,"<none>"],"object":{}}]})");
  TableOptions plain;
  EXPECT_EQ(TableRows(ev, plain, &t)[0],
            (std::vector<std::string>{"web-1", "0/1", "0"}));
}

TEST(PrinterTest, JsonSortedFourSpacesAndPrintableList) {
  rapidjson::Document d = Json(R"({"b":1,"a":{"d":[],"c":true}})");
  EXPECT_EQ(PrettyJson(d),
            "{\n    \"a\": {\n        \"c\": true,\n        \"d\": []\n    },\n"
            "    \"b\": 1\n}\n");
  const objects::ResourceInfo* cms = *ResolveResource("cm");
  rapidjson::Document list = Json(
      R"({"kind":"ConfigMapList","items":[{"metadata":{"name":"x",
          "managedFields":[{"manager":"m"}]}}]})");
  rapidjson::Document p = ToPrintableList(list, *cms);
  DropManagedFields(p);
  EXPECT_EQ(ToYaml(p),
            "apiVersion: v1\n"
            "items:\n"
            "- apiVersion: v1\n"
            "  kind: ConfigMap\n"
            "  metadata:\n"
            "    name: x\n"
            "kind: List\n"
            "metadata:\n"
            "  resourceVersion: \"\"\n");
}

// ---- manifests

TEST(ManifestTest, MultiDocumentListAndJson) {
  StatusOr<std::vector<Manifest>> ms = ParseManifests("m.yaml", R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
- {apiVersion: v1, kind: Secret, metadata: {name: c}}
)");
  ASSERT_TRUE(ms.ok()) << ms.status();
  ASSERT_EQ(ms->size(), 3u);
  EXPECT_EQ(StrAt((*ms)[0].object, {"metadata", "name"}), "a");
  EXPECT_EQ((*ms)[0].index, 1);
  EXPECT_EQ(StrAt((*ms)[2].object, {"kind"}), "Secret");
  EXPECT_EQ((*ms)[2].index, 2);

  ms = ParseManifests("m.json",
                      R"({"apiVersion":"v1","kind":"Namespace",
                          "metadata":{"name":"n"}})");
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_EQ(StrAt((*ms)[0].object, {"kind"}), "Namespace");
}

TEST(ManifestTest, SyntaxErrorNamesFileAndLine) {
  StatusOr<std::vector<Manifest>> ms =
      ParseManifests("bad.yaml",
                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
                     "data:\n  a: b\n   c: d\n");
  ASSERT_FALSE(ms.ok());
  const std::string& m = ms.status().message();
  EXPECT_EQ(m.rfind("error parsing bad.yaml: error converting YAML to JSON: "
                    "yaml: line 7",
                    0),
            0u)
      << m;
}

TEST(ManifestTest, MissingKindAndDirectories) {
  StatusOr<std::vector<Manifest>> ms =
      ParseManifests("x.yaml", "metadata: {name: a}\n");
  ASSERT_FALSE(ms.ok());
  EXPECT_NE(ms.status().message().find("apiVersion not set, kind not set"),
            std::string::npos);

  char tmpl[] = "/tmp/kpctl-mf-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/b.yaml")
      << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n";
  std::ofstream(dir + "/a.json")
      << R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}})";
  std::ofstream(dir + "/notes.txt") << "not a manifest";
  std::filesystem::create_directories(dir + "/sub");
  std::ofstream(dir + "/sub/c.yml")
      << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
  ms = LoadManifests({dir}, false, nullptr);
  ASSERT_TRUE(ms.ok()) << ms.status();
  ASSERT_EQ(ms->size(), 2u);
  EXPECT_EQ(StrAt((*ms)[0].object, {"metadata", "name"}), "a");
  EXPECT_EQ(StrAt((*ms)[1].object, {"metadata", "name"}), "b");
  ms = LoadManifests({dir}, true, nullptr);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(ms->size(), 3u);
  std::istringstream in(
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n");
  ms = LoadManifests({"-"}, false, &in);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ((*ms)[0].source, "STDIN");
  EXPECT_EQ(LoadManifests({dir + "/missing"}, false, nullptr).status().code(),
            StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// ---- rollout status and conditions

std::string Deploy(int gen, int observed, int want, int replicas, int updated,
                   int available) {
  return R"({"metadata":{"name":"web","generation":)" + std::to_string(gen) +
         R"(},"spec":{"replicas":)" + std::to_string(want) +
         R"(},"status":{"observedGeneration":)" + std::to_string(observed) +
         R"(,"replicas":)" + std::to_string(replicas) +
         R"(,"updatedReplicas":)" + std::to_string(updated) +
         R"(,"availableReplicas":)" + std::to_string(available) + "}}";
}

TEST(RolloutTest, KubectlMessages) {
  auto msg = [](const std::string& j) {
    StatusOr<RolloutState> s = DeploymentRolloutStatus(Json(j));
    EXPECT_TRUE(s.ok());
    return s.ok() ? s->message + (s->done ? " [done]" : "") : "";
  };
  EXPECT_EQ(msg(Deploy(2, 1, 3, 3, 3, 3)),
            "Waiting for deployment spec update to be observed...");
  EXPECT_EQ(msg(Deploy(2, 2, 3, 3, 1, 1)),
            "Waiting for deployment \"web\" rollout to finish: 1 out of 3 new "
            "replicas have been updated...");
  EXPECT_EQ(msg(Deploy(2, 2, 3, 5, 3, 3)),
            "Waiting for deployment \"web\" rollout to finish: 2 old replicas "
            "are pending termination...");
  EXPECT_EQ(msg(Deploy(2, 2, 3, 3, 3, 1)),
            "Waiting for deployment \"web\" rollout to finish: 1 of 3 updated "
            "replicas are available...");
  EXPECT_EQ(msg(Deploy(2, 2, 3, 3, 3, 3)),
            "deployment \"web\" successfully rolled out [done]");
  StatusOr<RolloutState> s = DeploymentRolloutStatus(Json(
      R"({"metadata":{"name":"web"},"status":{"conditions":[{"type":
      "Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}})"));
  EXPECT_EQ(s.status().message(),
            "deployment \"web\" exceeded its progress deadline");
}

TEST(RolloutTest, ConditionMet) {
  rapidjson::Document d = Json(
      R"({"status":{"conditions":[{"type":"Available","status":"True"},
                                  {"type":"Ready","status":"False"}]}})");
  EXPECT_TRUE(ConditionMet(d, "Available"));
  EXPECT_TRUE(ConditionMet(d, "available", "true"));
  EXPECT_FALSE(ConditionMet(d, "Ready"));
  EXPECT_TRUE(ConditionMet(d, "Ready", "False"));
  EXPECT_FALSE(ConditionMet(d, "Progressing"));
}

}  // namespace
}  // namespace kplane::kpctl::kube
