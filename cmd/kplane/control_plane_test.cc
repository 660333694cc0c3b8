// The control plane `kplane up` runs, in process on ephemeral ports: it
// serves the Kubernetes API and etcd's API over one embedded store, writes a
// kubeconfig, and keeps its objects across a restart on the same data dir.
#include "cmd/kplane/control_plane.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "base/base64.h"
#include "base/subprocess.h"
#include "cmd/kplane/apiserver_command.h"
#include "kubeletsim/control/control_client.h"
#include "net/http_client.h"
#include "net/pki.h"
#include "net/socket.h"
#include "net/tls.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::cmd {
namespace {

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-up-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    pki_dir_ = dir_ + "/data/pki";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  UpOptions Options() {
    UpOptions o;
    o.data_dir = dir_ + "/data";
    o.apiserver_port = 0;
    o.store_port = 0;
    o.nodes = 0;
    o.controllers = false;
    o.kubeletsim_port = -1;
    o.controller_manager_port = -1;
    o.kubeconfig_out = dir_ + "/kubeconfig";
    return o;
  }

  // `kplane up` with `nodes` simulated nodes and their control endpoint on
  // an ephemeral port; null (after a failure) if it did not start.
  std::unique_ptr<ControlPlane> StartWithNodes(int nodes) {
    UpOptions o = Options();
    o.nodes = nodes;
    o.kubeletsim_port = 0;
    StatusOr<std::unique_ptr<ControlPlane>> cp = ControlPlane::Start(o);
    EXPECT_TRUE(cp.ok()) << cp.status();
    return cp.ok() ? std::move(*cp) : nullptr;
  }

  // Client options for `url`: over https, trusting the control plane's CA
  // and presenting the admin's certificate from pki_dir_.
  net::HttpClientOptions ClientOptions(const std::string& url) {
    net::HttpClientOptions o;
    if (url.rfind("https://", 0) == 0) {
      auto tls =
          net::TlsContext::NewClient({.ca_file = pki_dir_ + "/ca.crt",
                                      .cert_file = pki_dir_ + "/admin.crt",
                                      .key_file = pki_dir_ + "/admin.key"});
      EXPECT_TRUE(tls.ok()) << tls.status();
      if (tls.ok()) o.tls = *tls;
    }
    return o;
  }

  // Another thread's progress (a controller's, the fleet's registrations)
  // seen only through the API: polled, for at most 30 s.
  static bool Eventually(const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }

  net::HttpResponse Do(const std::string& url, const std::string& method,
                       const std::string& path, const std::string& body = "") {
    auto client = net::HttpClient::ForUrl(url, ClientOptions(url));
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return {};
    auto r = (*client)->Request(method, path,
                                {{"Content-Type", "application/json"}}, body);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : net::HttpResponse{};
  }

  static std::string ReadAll(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  std::string dir_;
  // Where Do() finds the CA and the admin's certificate.
  std::string pki_dir_;
};

// The store's client port is etcd's with --client-cert-auth: TLS, a client
// certificate the control plane's CA signed, gRPC and the JSON gateway on
// the one port (as kubeadm runs etcd).
TEST_F(ControlPlaneTest, StoreRequiresACaSignedCertificateForGrpcAndJson) {
  auto cp = ControlPlane::Start(Options());
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::string store = (*cp)->store_endpoints()[0];
  ASSERT_EQ(store.rfind("https://127.0.0.1:", 0), 0u) << store;
  // JSON gateway with the admin's certificate.
  EXPECT_EQ(Do(store, "POST", "/v3/kv/put",
               R"({"key":"dXA=","value":"dGxz"})")  // "up" = "tls"
                .status,
            200);
  // Without a client certificate: the handshake is refused.
  {
    auto tls = net::TlsContext::NewClient({.ca_file = pki_dir_ + "/ca.crt"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    auto client = net::HttpClient::ForUrl(store, {.tls = *tls});
    ASSERT_TRUE(client.ok()) << client.status();
    auto r = (*client)->Request("POST", "/v3/kv/range",
                                {{"Content-Type", "application/json"}},
                                R"({"key":"dXA="})");
    EXPECT_FALSE(r.ok() && r->status == 200);
  }
  // The real etcdctl (gRPC over TLS) with etcdctl's flags.
  if (!std::filesystem::exists("/usr/bin/etcdctl")) return;
  auto etcdctl = [&](std::vector<std::string> cert_flags, int n) {
    std::vector<std::string> argv = {"/usr/bin/etcdctl", "--endpoints=" + store,
                                     "--cacert=" + pki_dir_ + "/ca.crt",
                                     "--dial-timeout=3s",
                                     "--command-timeout=5s"};
    argv.insert(argv.end(), cert_flags.begin(), cert_flags.end());
    argv.insert(argv.end(), {"get", "up", "--print-value-only"});
    const std::string log = dir_ + "/etcdctl-" + std::to_string(n) + ".out";
    Subprocess p(argv, {.log_path = log, .env = {"ETCDCTL_API=3"}});
    EXPECT_TRUE(p.Start().ok());
    const int code = p.Wait();
    return std::make_pair(code, ReadAll(log));
  };
  auto [ok_code, ok_out] = etcdctl(
      {"--cert=" + pki_dir_ + "/admin.crt", "--key=" + pki_dir_ + "/admin.key"},
      1);
  EXPECT_EQ(ok_code, 0) << ok_out;
  EXPECT_EQ(ok_out, "tls\n");
  EXPECT_NE(etcdctl({}, 2).first, 0);
}

TEST_F(ControlPlaneTest, ServesBothApisWritesKubeconfigAndRestartsIntact) {
  auto cp = ControlPlane::Start(Options());
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::string api = (*cp)->apiserver_url();
  ASSERT_EQ((*cp)->store_endpoints().size(), 1u);
  const std::string store = (*cp)->store_endpoints()[0];

  // The kubeconfig names the API server.
  std::ifstream f(dir_ + "/kubeconfig");
  std::stringstream kubeconfig;
  kubeconfig << f.rdbuf();
  EXPECT_NE(kubeconfig.str().find("server: " + api), std::string::npos)
      << kubeconfig.str();
  EXPECT_NE(kubeconfig.str().find("current-context: kplane"),
            std::string::npos);

  net::HttpResponse created =
      Do(api, "POST", "/api/v1/namespaces/default/configmaps",
         R"({"apiVersion":"v1","kind":"ConfigMap",)"
         R"("metadata":{"name":"kept"},"data":{"k":"v"}})");
  ASSERT_EQ(created.status, 201) << created.body;

  // The same object through etcd's API, under the Kubernetes key.
  net::HttpResponse raw =
      Do(store, "POST", "/v3/kv/range",
         R"({"key":")" + Base64Encode("/registry/configmaps/default/kept") +
             R"("})");
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_NE(raw.body.find("\"count\":\"1\""), std::string::npos) << raw.body;
  EXPECT_NE(raw.body.find(Base64Encode("k8s")), std::string::npos)
      << "stored value should start with the k8s envelope: " << raw.body;

  (*cp)->Stop();
  cp->reset();

  auto again = ControlPlane::Start(Options());
  ASSERT_TRUE(again.ok()) << again.status();
  net::HttpResponse got = Do((*again)->apiserver_url(), "GET",
                             "/api/v1/namespaces/default/configmaps/kept");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_NE(got.body.find("\"k\":\"v\""), std::string::npos) << got.body;
}

// `kplane up` encrypts Secrets by default with a key it generates once
// (0600, reused on restart); --secrets-encryption=false stores them plain.
TEST_F(ControlPlaneTest, SecretsAreEncryptedByDefaultWithAKeptKey) {
  const std::string secret =
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},)"
      R"("data":{"password":")" +
      Base64Encode("up-test-marker") + R"("}})";
  const std::string range =
      R"({"key":")" + Base64Encode("/registry/secrets/default/db") + R"("})";
  const std::string config_path = dir_ + "/data/encryption-config.yaml";
  std::string first_config;
  {
    auto cp = ControlPlane::Start(Options());
    ASSERT_TRUE(cp.ok()) << cp.status();
    EXPECT_NE((*cp)->Summary().find("encryption:   " + config_path),
              std::string::npos)
        << (*cp)->Summary();
    auto perms = std::filesystem::status(config_path).permissions();
    EXPECT_EQ(perms & std::filesystem::perms::all,
              std::filesystem::perms::owner_read |
                  std::filesystem::perms::owner_write);
    std::ifstream f(config_path);
    first_config.assign(std::istreambuf_iterator<char>(f), {});
    ASSERT_EQ(Do((*cp)->apiserver_url(), "POST",
                 "/api/v1/namespaces/default/secrets", secret)
                  .status,
              201);
    net::HttpResponse raw =
        Do((*cp)->store_endpoints()[0], "POST", "/v3/kv/range", range);
    // Base64 of the value's first 21 bytes (a multiple of 3: aligned).
    EXPECT_NE(raw.body.find(Base64Encode("k8s:enc:aesgcm:v1:key")),
              std::string::npos)
        << raw.body;
  }
  {
    // The restart reuses the key: the Secret still reads.
    auto cp = ControlPlane::Start(Options());
    ASSERT_TRUE(cp.ok()) << cp.status();
    std::ifstream f(config_path);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), first_config);
    net::HttpResponse got = Do((*cp)->apiserver_url(), "GET",
                               "/api/v1/namespaces/default/secrets/db");
    ASSERT_EQ(got.status, 200) << got.body;
    EXPECT_NE(got.body.find(Base64Encode("up-test-marker")), std::string::npos);
  }
  {
    UpOptions o = Options();
    o.data_dir = dir_ + "/plain";
    o.secrets_encryption = false;
    pki_dir_ = o.data_dir + "/pki";
    auto cp = ControlPlane::Start(o);
    ASSERT_TRUE(cp.ok()) << cp.status();
    EXPECT_NE((*cp)->Summary().find("encryption:   OFF"), std::string::npos);
    EXPECT_FALSE(
        std::filesystem::exists(o.data_dir + "/encryption-config.yaml"));
    ASSERT_EQ(Do((*cp)->apiserver_url(), "POST",
                 "/api/v1/namespaces/default/secrets", secret)
                  .status,
              201);
    net::HttpResponse raw =
        Do((*cp)->store_endpoints()[0], "POST", "/v3/kv/range", range);
    EXPECT_NE(raw.body.find("\"value\":\"" + Base64Encode("k8s")),
              std::string::npos)
        << raw.body;
    EXPECT_EQ(raw.body.find(Base64Encode("k8s:en")), std::string::npos);
  }
}

TEST_F(ControlPlaneTest, BusyApiServerPortIsAClearError) {
  auto first = ControlPlane::Start(Options());
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string url = (*first)->apiserver_url();
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  UpOptions o = Options();
  o.data_dir = dir_ + "/other";
  o.kubeconfig_out.clear();
  o.apiserver_port = port;
  auto second = ControlPlane::Start(o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("--port"), std::string::npos)
      << second.status();
}

TEST_F(ControlPlaneTest, ThreeStoreMembersNeedAFixedPort) {
  UpOptions o = Options();
  o.store_members = 3;
  auto cp = ControlPlane::Start(o);
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.status().code(), StatusCode::kInvalidArgument);
}

// The whole system in one process: a Deployment becomes Running pods on the
// simulated nodes (scheduler, replicaset and deployment controllers,
// kubelets), observed through a watch on the Deployment.
TEST_F(ControlPlaneTest, DeploymentBecomesAvailableOnSimulatedNodes) {
  UpOptions o = Options();
  o.controllers = true;
  o.nodes = 2;
  o.kubeletsim_port = 0;
  o.controller_manager_port = 0;
  auto cp = ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::string api = (*cp)->apiserver_url();
  EXPECT_FALSE((*cp)->kubeletsim_url().empty());
  EXPECT_NE((*cp)->Summary().find("2 simulated"), std::string::npos)
      << (*cp)->Summary();

  net::HttpResponse created = Do(
      api, "POST", "/apis/apps/v1/namespaces/default/deployments",
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},)"
      R"("spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},)"
      R"("template":{"metadata":{"labels":{"app":"web"}},)"
      R"("spec":{"containers":[{"name":"c","image":"nginx"}]}}}})");
  ASSERT_EQ(created.status, 201) << created.body;

  auto client = net::HttpClient::ForUrl(api, ClientOptions(api));
  ASSERT_TRUE(client.ok());
  bool available = false;
  std::string seen;
  auto r = (*client)->Stream(
      "GET",
      "/apis/apps/v1/namespaces/default/deployments?watch=1&"
      "fieldSelector=metadata.name%3Dweb&timeoutSeconds=60",
      {}, "", [&](std::string_view data) {
        seen.append(data);
        available = seen.find("\"availableReplicas\":3") != std::string::npos;
        return !available;
      });
  EXPECT_TRUE(available) << seen.substr(seen.size() > 2000 ? seen.size() - 2000
                                                           : 0);

  net::HttpResponse pods =
      Do(api, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb");
  ASSERT_EQ(pods.status, 200);
  size_t running = 0;
  for (size_t at = 0;
       (at = pods.body.find("\"phase\":\"Running\"", at)) != std::string::npos;
       ++at) {
    ++running;
  }
  EXPECT_EQ(running, 3u) << pods.body;

  // With auth on, the controller manager keeps Endpoints (issue 20): a
  // Service of the deployment lists its three pods, and every namespace
  // has kube-root-ca.crt holding our CA. await_watch waits on a watch
  // until the last event's line holds `want` `times`.
  auto await_watch = [&](const std::string& path, const std::string& want,
                         size_t times = 1) {
    std::string got;
    bool seen_enough = false;
    auto w = (*client)->Stream("GET", path, {}, "", [&](std::string_view d) {
      got.append(d);
      const size_t end = got.rfind('\n');
      if (end == std::string::npos) return true;
      const size_t before = end == 0 ? std::string::npos
                                     : got.rfind('\n', end - 1);
      const size_t begin = before == std::string::npos ? 0 : before + 1;
      const std::string line = got.substr(begin, end - begin);
      size_t n = 0;
      for (size_t at = 0; (at = line.find(want, at)) != std::string::npos;
           ++at) {
        ++n;
      }
      seen_enough = n >= times;
      return !seen_enough;
    });
    return seen_enough;
  };
  ASSERT_EQ(Do(api, "POST", "/api/v1/namespaces/default/services",
               R"({"metadata":{"name":"web"},"spec":{"selector":)"
               R"({"app":"web"},"ports":[{"port":80}]}})")
                .status,
            201);
  EXPECT_TRUE(await_watch(
      "/api/v1/namespaces/default/endpoints?watch=1&fieldSelector="
      "metadata.name%3Dweb&timeoutSeconds=60",
      "\"kind\":\"Pod\"", 3));
  std::ifstream ca_file(pki_dir_ + "/ca.crt");
  const std::string ca_pem(std::istreambuf_iterator<char>(ca_file), {});
  ASSERT_FALSE(ca_pem.empty());
  EXPECT_TRUE(await_watch(
      "/api/v1/namespaces/kube-system/configmaps?watch=1&fieldSelector="
      "metadata.name%3Dkube-root-ca.crt&timeoutSeconds=60",
      "\"ca.crt\":\"-----BEGIN CERTIFICATE-----"));
  net::HttpResponse root_ca = Do(
      api, "GET", "/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt");
  ASSERT_EQ(root_ca.status, 200);
  std::string escaped;
  for (char c : ca_pem) {
    escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  EXPECT_NE(root_ca.body.find(escaped), std::string::npos) << root_ca.body;

  // The nodes' control endpoint and the controller manager serve HTTPS
  // with certificates from the same CA; the nodes' endpoint (it can stop
  // nodes) takes only clients with a certificate the CA signed.
  const std::string sim = (*cp)->kubeletsim_url();
  ASSERT_EQ(sim.rfind("https://127.0.0.1:", 0), 0u) << sim;
  net::HttpResponse nodes = Do(sim, "GET", "/nodes");
  EXPECT_EQ(nodes.status, 200);
  EXPECT_NE(nodes.body.find("\"node-1\""), std::string::npos) << nodes.body;
  auto ca_only = net::TlsContext::NewClient({.ca_file = pki_dir_ + "/ca.crt"});
  ASSERT_TRUE(ca_only.ok());
  auto anonymous = net::HttpClient::ForUrl(sim, {.tls = *ca_only});
  ASSERT_TRUE(anonymous.ok());
  auto refused = (*anonymous)->Request("POST", "/nodes/node-0/stop");
  EXPECT_FALSE(refused.ok())
      << "a client without a certificate was answered " << refused->status;
  const std::string cm = (*cp)->controller_manager_url();
  ASSERT_EQ(cm.rfind("https://127.0.0.1:", 0), 0u) << cm;
  EXPECT_EQ(Do(cm, "GET", "/healthz").status, 200);
}

// Secure by default (issue 18): the API server speaks HTTPS with a PKI made
// on first start, the kubeconfig carries the CA and the admin's
// certificate (0600), plaintext HTTP gets Go's 400, a client trusting
// another CA is refused, and a restart reuses every certificate.
// `kplane up` authenticates and authorizes (issue 18): anonymous requests
// reach only the health and version endpoints, the admin (system:masters)
// everything, a simulated node only its own Node (the Node authorizer).
TEST_F(ControlPlaneTest, AuthenticatesAndAuthorizesEveryRequest) {
  UpOptions o = Options();
  o.nodes = 2;
  o.kubeletsim_port = 0;
  auto cp = ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::string api = (*cp)->apiserver_url();
  auto request = [&](const std::string& cert, const std::string& method,
                     const std::string& path, const std::string& body = "") {
    net::TlsClientConfig c{.ca_file = pki_dir_ + "/ca.crt"};
    if (!cert.empty()) {
      c.cert_file = pki_dir_ + "/" + cert + ".crt";
      c.key_file = pki_dir_ + "/" + cert + ".key";
    }
    auto tls = net::TlsContext::NewClient(c);
    EXPECT_TRUE(tls.ok()) << tls.status();
    net::HttpClientOptions ho;
    if (tls.ok()) ho.tls = *tls;
    auto client = net::HttpClient::ForUrl(api, ho);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return net::HttpResponse{};
    auto r = (*client)->Request(method, path,
                                {{"Content-Type", "application/json"}}, body);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : net::HttpResponse{};
  };
  // Anonymous: health yes, objects no (kube's 403 for system:anonymous).
  EXPECT_EQ(request("", "GET", "/healthz").status, 200);
  net::HttpResponse anon =
      request("", "GET", "/api/v1/namespaces/default/pods");
  EXPECT_EQ(anon.status, 403) << anon.body;
  EXPECT_NE(anon.body.find(R"(User \"system:anonymous\" cannot list)"),
            std::string::npos)
      << anon.body;
  // The admin: everything.
  EXPECT_EQ(request("admin", "GET", "/api/v1/namespaces/default/pods").status,
            200);
  // A node: its own Node yes, another's no.
  EXPECT_EQ(request("kubelet-node-0", "GET", "/api/v1/nodes/node-0").status,
            200);
  net::HttpResponse other =
      request("kubelet-node-0", "PATCH", "/api/v1/nodes/node-1/status", "{}");
  EXPECT_EQ(other.status, 403) << other.body;
}

// ClusterRole aggregation as kube does it (issue 18): a ClusterRole
// labelled aggregate-to-view with a rule on a new resource makes `view`
// grant it (and, through the bootstrap labels, edit and admin), by the
// controller manager's clusterrole-aggregation controller running as
// system:kube-controller-manager under RBAC; deleting the labelled role
// takes the grant away again.
TEST_F(ControlPlaneTest, AggregatedViewGrantsWhatALabelledRoleAdds) {
  UpOptions o = Options();
  o.controllers = true;
  o.controller_manager_port = 0;
  auto cp = ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::string api = (*cp)->apiserver_url();
  const std::string rbac = "/apis/rbac.authorization.k8s.io/v1";
  net::HttpResponse bound =
      Do(api, "POST", rbac + "/clusterrolebindings",
         R"({"metadata":{"name":"alice-view"},"roleRef":{"apiGroup":)"
         R"("rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},)"
         R"("subjects":[{"kind":"User","name":"alice",)"
         R"("apiGroup":"rbac.authorization.k8s.io"}]})");
  ASSERT_EQ(bound.status, 201) << bound.body;
  // May alice list widgets (a resource no bootstrap role names)?
  auto alice_may_list_widgets = [&] {
    net::HttpResponse r = Do(
        api, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        R"({"apiVersion":"authorization.k8s.io/v1","kind":)"
        R"("SubjectAccessReview","spec":{"user":"alice","resourceAttributes":)"
        R"({"verb":"list","group":"example.kplane.io","resource":"widgets",)"
        R"("namespace":"default"}}})");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.body.find(R"("allowed":true)") != std::string::npos;
  };
  // Aggregation has run on the bootstrap roles before (view stays as it
  // was: its own rules, unions of the same rules).
  EXPECT_FALSE(alice_may_list_widgets());
  net::HttpResponse view = Do(api, "GET", rbac + "/clusterroles/view");
  ASSERT_EQ(view.status, 200);
  EXPECT_NE(view.body.find(R"("aggregationRule":{"clusterRoleSelectors":)"
                           R"([{"matchLabels":{"rbac.authorization.k8s.io/)"
                           R"(aggregate-to-view":"true"}}]})"),
            std::string::npos)
      << view.body;

  net::HttpResponse created = Do(
      api, "POST", rbac + "/clusterroles",
      R"({"metadata":{"name":"widget-viewer","labels":)"
      R"({"rbac.authorization.k8s.io/aggregate-to-view":"true"}},)"
      R"("rules":[{"apiGroups":["example.kplane.io"],"resources":["widgets"],)"
      R"("verbs":["get","list","watch"]}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  ASSERT_TRUE(Eventually(alice_may_list_widgets))
      << Do(api, "GET", rbac + "/clusterroles/view").body;
  for (const char* role : {"view", "edit", "admin"}) {
    EXPECT_TRUE(Eventually([&] {
      return Do(api, "GET", rbac + "/clusterroles/" + role)
                 .body.find("widgets") != std::string::npos;
    })) << role;
  }
  // Still everything view granted before.
  net::HttpResponse pods = Do(
      api, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",)"
      R"("spec":{"user":"alice","resourceAttributes":{"verb":"list",)"
      R"("resource":"pods","namespace":"default"}}})");
  EXPECT_NE(pods.body.find(R"("allowed":true)"), std::string::npos)
      << pods.body;

  ASSERT_EQ(Do(api, "DELETE", rbac + "/clusterroles/widget-viewer").status,
            200);
  EXPECT_TRUE(Eventually([&] { return !alice_may_list_widgets(); }));
}

TEST_F(ControlPlaneTest, HttpsByDefaultWithAPkiKeptAcrossRestarts) {
  std::string ca_pem, admin_pem, kubeconfig;
  {
    auto cp = ControlPlane::Start(Options());
    ASSERT_TRUE(cp.ok()) << cp.status();
    const std::string api = (*cp)->apiserver_url();
    ASSERT_EQ(api.rfind("https://127.0.0.1:", 0), 0u) << api;
    EXPECT_EQ((*cp)->pki_dir(), pki_dir_);
    EXPECT_NE((*cp)->Summary().find("API server:   " + api), std::string::npos);
    EXPECT_NE((*cp)->Summary().find("pki:          " + pki_dir_),
              std::string::npos);

    ca_pem = ReadAll(pki_dir_ + "/ca.crt");
    admin_pem = ReadAll(pki_dir_ + "/admin.crt");
    auto admin = net::ParseCertificatePem(admin_pem);
    ASSERT_TRUE(admin.ok()) << admin.status();
    EXPECT_EQ(admin->identity.common_name, "kubernetes-admin");
    EXPECT_EQ(admin->identity.organizations,
              std::vector<std::string>{"system:masters"});
    auto serving =
        net::ParseCertificatePem(ReadAll(pki_dir_ + "/apiserver.crt"));
    ASSERT_TRUE(serving.ok()) << serving.status();
    for (const char* name :
         {"localhost", "kubernetes", "kubernetes.default",
          "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}) {
      EXPECT_NE(std::find(serving->identity.dns_names.begin(),
                          serving->identity.dns_names.end(), name),
                serving->identity.dns_names.end())
          << name;
    }
    for (const char* name :
         {"controller-manager", "apiserver-etcd-client", "kubelet-serving",
          "etcd-kplane-server", "etcd-kplane-peer"}) {
      EXPECT_TRUE(std::filesystem::exists(pki_dir_ + "/" + name + ".crt"))
          << name;
    }

    kubeconfig = ReadAll(dir_ + "/kubeconfig");
    EXPECT_NE(kubeconfig.find("server: " + api + "\n"), std::string::npos);
    EXPECT_NE(kubeconfig.find(
                  "certificate-authority-data: " + Base64Encode(ca_pem) + "\n"),
              std::string::npos)
        << kubeconfig;
    EXPECT_NE(kubeconfig.find(
                  "client-certificate-data: " + Base64Encode(admin_pem) + "\n"),
              std::string::npos);
    EXPECT_NE(kubeconfig.find("client-key-data: "), std::string::npos);
    EXPECT_EQ(std::filesystem::status(dir_ + "/kubeconfig").permissions() &
                  std::filesystem::perms::all,
              std::filesystem::perms::owner_read |
                  std::filesystem::perms::owner_write);

    EXPECT_EQ(Do(api, "GET", "/api/v1/namespaces/default").status, 200);

    // Plaintext HTTP to the HTTPS port: Go's canned answer.
    const int port = std::stoi(api.substr(api.rfind(':') + 1));
    net::HttpClient plain("127.0.0.1", static_cast<uint16_t>(port));
    auto r = plain.Request("GET", "/api/v1/namespaces");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(r->body, "Client sent an HTTP request to an HTTPS server.\n");

    // A client trusting another CA does not get past the handshake.
    auto other = net::GenerateCa("another-ca", Clock::Real()->WallNow());
    ASSERT_TRUE(other.ok());
    auto wrong = net::TlsContext::NewClient({.ca_pem = other->cert_pem});
    ASSERT_TRUE(wrong.ok());
    net::HttpClient stranger("127.0.0.1", static_cast<uint16_t>(port),
                             {.tls = *wrong});
    auto refused = stranger.Request("GET", "/api/v1/namespaces");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("signed by an unknown authority"),
              std::string::npos)
        << refused.status();
  }
  auto again = ControlPlane::Start(Options());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ReadAll(pki_dir_ + "/ca.crt"), ca_pem);
  EXPECT_EQ(ReadAll(pki_dir_ + "/admin.crt"), admin_pem);
  // Same CA and certificate: the kubeconfig handed out before still works.
  EXPECT_EQ(
      Do((*again)->apiserver_url(), "GET", "/api/v1/namespaces/default").status,
      200);
}

TEST_F(ControlPlaneTest, InsecureHttpIsExplicitAndSaysSo) {
  UpOptions o = Options();
  o.insecure_http = true;
  auto cp = ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  EXPECT_EQ((*cp)->apiserver_url().rfind("http://127.0.0.1:", 0), 0u);
  EXPECT_NE((*cp)->Summary().find("WARNING:      --insecure-http"),
            std::string::npos)
      << (*cp)->Summary();
  // No certificates; <data-dir>/pki holds only the ServiceAccount signing
  // key, which tokens need over plain HTTP too.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/data/pki/ca.crt"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/data/pki/ca.key"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/data/pki/sa.key"));
  EXPECT_EQ(ReadAll(dir_ + "/kubeconfig").find("certificate-authority"),
            std::string::npos);
  EXPECT_EQ(
      Do((*cp)->apiserver_url(), "GET", "/api/v1/namespaces/default").status,
      200);
}

// `kplane apiserver` serves plain HTTP only when --insecure-http says so;
// its flags come as kube-apiserver's do.
TEST(ApiServerCommandTest, PlainHttpOnlyWhenAskedFor) {
  auto refused = ServingTlsContext("", "", "", /*insecure_http=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "no serving certificate: pass --tls-cert-file and "
            "--tls-private-key-file, or --insecure-http to serve plain HTTP "
            "(development only)");
  auto plain = ServingTlsContext("", "", "", /*insecure_http=*/true);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*plain, nullptr);
  EXPECT_FALSE(ServingTlsContext("a.crt", "", "", true).ok());
  EXPECT_FALSE(ServingTlsContext("", "", "ca.crt", true).ok());

  char tmpl[] = "/tmp/kplane-apiserver-tls-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  net::Pki pki({.dir = dir});
  ASSERT_TRUE(
      pki.EnsureCertificate("apiserver", {.common_name = "kube-apiserver",
                                          .ip_addresses = {"127.0.0.1"},
                                          .server_auth = true})
          .ok());
  auto served =
      ServingTlsContext(pki.CertPath("apiserver"), pki.KeyPath("apiserver"),
                        pki.CertPath("ca"), false);
  ASSERT_TRUE(served.ok()) << served.status();
  ASSERT_NE(*served, nullptr);
  EXPECT_EQ((*served)->client_auth(), net::ClientAuth::kRequest);
  std::filesystem::remove_all(dir);
}

// `kplane up` makes the ServiceAccount signing key once
// (<data_dir>/pki/sa.key, 0600 in a 0700 directory), reuses it on restart,
// and its API server issues tokens with it.
TEST_F(ControlPlaneTest, ServiceAccountKeyIsMadeOnceAndSignsTokens) {
  const std::string key_path = dir_ + "/data/pki/sa.key";
  const std::string token_path =
      "/api/v1/namespaces/default/serviceaccounts/builder/token";
  std::string first_key;
  {
    auto cp = ControlPlane::Start(Options());
    ASSERT_TRUE(cp.ok()) << cp.status();
    namespace fs = std::filesystem;
    EXPECT_EQ(fs::status(key_path).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(fs::status(dir_ + "/data/pki").permissions() & fs::perms::all,
              fs::perms::owner_all);
    std::ifstream f(key_path);
    first_key.assign(std::istreambuf_iterator<char>(f), {});
    EXPECT_NE(first_key.find("-----BEGIN PRIVATE KEY-----"), std::string::npos);
    ASSERT_EQ(Do((*cp)->apiserver_url(), "POST",
                 "/api/v1/namespaces/default/serviceaccounts",
                 R"({"metadata":{"name":"builder"}})")
                  .status,
              201);
    net::HttpResponse token =
        Do((*cp)->apiserver_url(), "POST", token_path, "{}");
    ASSERT_EQ(token.status, 201) << token.body;
    EXPECT_NE(token.body.find(R"("token":"ey)"), std::string::npos)
        << token.body;
  }
  auto cp = ControlPlane::Start(Options());
  ASSERT_TRUE(cp.ok()) << cp.status();
  std::ifstream f(key_path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), first_key);
  EXPECT_EQ(Do((*cp)->apiserver_url(), "POST", token_path, "{}").status, 201);
}

// The web view's admin token (docs/ui.md): made once (0600), reused after
// a restart, accepted as a bearer token without any client certificate,
// and printed with the UI's URL.
TEST_F(ControlPlaneTest, UiTokenIsMadeOnceAndSignsInWithoutACertificate) {
  const std::string token_path = dir_ + "/data/ui-token";
  auto get_nodes = [&](const std::string& url, const std::string& token) {
    auto tls = net::TlsContext::NewClient({.ca_file = pki_dir_ + "/ca.crt"});
    EXPECT_TRUE(tls.ok()) << tls.status();
    auto client = net::HttpClient::ForUrl(url, {.tls = *tls});
    EXPECT_TRUE(client.ok()) << client.status();
    net::HttpHeaders h;
    if (!token.empty()) h.Add("Authorization", "Bearer " + token);
    auto r = (*client)->Request("GET", "/api/v1/nodes", h, "");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->status : 0;
  };
  std::string first;
  {
    auto cp = ControlPlane::Start(Options());
    ASSERT_TRUE(cp.ok()) << cp.status();
    namespace fs = std::filesystem;
    EXPECT_EQ(fs::status(token_path).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
    first = ReadAll(token_path);
    ASSERT_FALSE(first.empty());
    first.pop_back();  // the newline
    EXPECT_GE(first.size(), 40u);
    EXPECT_EQ(get_nodes((*cp)->apiserver_url(), first), 200);
    EXPECT_EQ(get_nodes((*cp)->apiserver_url(), ""), 403);
    EXPECT_EQ(get_nodes((*cp)->apiserver_url(), first + "x"), 401);
    const std::string summary = (*cp)->Summary();
    EXPECT_NE(summary.find("web view:     " + (*cp)->apiserver_url() + "/ui/"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find(token_path), std::string::npos) << summary;
  }
  auto cp = ControlPlane::Start(Options());
  ASSERT_TRUE(cp.ok()) << cp.status();
  EXPECT_EQ(ReadAll(token_path), first + "\n");
  EXPECT_EQ(get_nodes((*cp)->apiserver_url(), first), 200);
}

// The web view's start/stop of a simulated node (docs/ui.md): the API
// server reaches the fleet's control endpoint (HTTPS, CA-signed client
// certificates only) with its own kubelet client certificate.
TEST_F(ControlPlaneTest, WebViewStopsAndResumesASimulatedNode) {
  std::unique_ptr<ControlPlane> cp = StartWithNodes(2);
  ASSERT_NE(cp, nullptr);
  const std::string api = cp->apiserver_url();
  const std::string sim = cp->kubeletsim_url();
  auto stopped = [&](const std::string& node) {
    net::HttpResponse r = Do(sim, "GET", "/nodes");
    StatusOr<std::vector<kubeletsim::NodeInfo>> nodes =
        kubeletsim::NodesFromJson(r.body);
    EXPECT_TRUE(nodes.ok()) << nodes.status() << r.body;
    if (!nodes.ok()) return false;
    for (const kubeletsim::NodeInfo& n : *nodes) {
      if (n.name == node) return n.stopped;
    }
    ADD_FAILURE() << node << " not simulated: " << r.body;
    return false;
  };
  // The page offers the buttons of registered Nodes: the API server finds
  // the fleet at node-1's kubelet endpoint.
  ASSERT_TRUE(Eventually(
      [&] { return Do(api, "GET", "/api/v1/nodes/node-1").status == 200; }));
  net::HttpResponse stop = Do(api, "POST", "/ui/api/nodes/node-1/stop");
  ASSERT_EQ(stop.status, 200) << stop.body;
  EXPECT_TRUE(stopped("node-1"));
  EXPECT_FALSE(stopped("node-0"));
  EXPECT_EQ(Do(api, "POST", "/ui/api/nodes/node-7/stop").status, 404);
  net::HttpResponse resume = Do(api, "POST", "/ui/api/nodes/node-1/resume");
  ASSERT_EQ(resume.status, 200) << resume.body;
  EXPECT_FALSE(stopped("node-1"));
  EXPECT_TRUE(
      std::filesystem::exists(pki_dir_ + "/apiserver-kubelet-client.crt"));
}

// Issue 20: the real kubectl against `kplane up` (TLS, RBAC: the controller
// manager runs as system:kube-controller-manager, the nodes as
// system:node:<name>). `kubectl create job` completes on the simulated
// nodes (restartPolicy Never pods exit 0 after the kubeletsim's run
// duration); a Job whose pods exit 1 fails after its backoffLimit; `kubectl
// get jobs` prints kube 1.32's columns; `kubectl create cronjob` with
// `*/1 * * * *` creates a Job within the minute (at most ~60 s of waiting).
TEST_F(ControlPlaneTest, KubectlJobsAndCronJobsOnSimulatedNodes) {
  UpOptions o = Options();
  o.controllers = true;
  o.nodes = 2;
  o.kubeletsim_port = 0;
  o.controller_manager_port = 0;
  auto cp = ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  auto kubectl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"kubectl", "--kubeconfig", o.kubeconfig_out});
    e2e::Process p(args);
    p.Start();
    return p.Wait(std::chrono::seconds(120));
  };
  e2e::RunResult r =
      kubectl({"create", "job", "pi", "--image=perl", "--", "perl", "-e", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "job.batch/pi created\n");
  // A CronJob on the wall clock's next minute (the controller's unit tests
  // drive schedules with a fake clock); watched for below.
  r = kubectl({"create", "cronjob", "tick", "--image=busybox",
               "--schedule=*/1 * * * *"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  e2e::Process jobs_watch({"kubectl", "--kubeconfig", o.kubeconfig_out, "get",
                           "jobs", "-w", "-o", "name"});
  jobs_watch.Start();

  const std::string manifest = dir_ + "/fail.yaml";
  std::ofstream(manifest) << R"(apiVersion: batch/v1
kind: Job
metadata:
  name: flaky
spec:
  backoffLimit: 1
  template:
    metadata:
      annotations:
        kubeletsim.kplane.io/run-for: 1s
        kubeletsim.kplane.io/exit-code: "1"
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
)";
  r = kubectl({"apply", "-f", manifest});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = kubectl({"wait", "--for=condition=complete", "job/pi", "--timeout=60s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Two failures (the second after the 10 s back-off) exceed backoffLimit 1.
  r = kubectl({"wait", "--for=condition=failed", "job/flaky", "--timeout=90s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // The CronJob's Job appears within its minute.
  bool fired = false;
  while (auto line = jobs_watch.ReadLine(std::chrono::seconds(75))) {
    if (line->rfind("job.batch/tick-", 0) == 0) {
      fired = true;
      break;
    }
  }
  EXPECT_TRUE(fired) << "no Job of CronJob tick within 75 s";
  r = kubectl({"get", "cronjobs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')).substr(0, 4), "NAME");
  EXPECT_NE(r.out.find("tick   */1 * * * *   <none>     False"),
            std::string::npos)
      << r.out;

  r = kubectl({"get", "jobs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, flaky_row, pi_row;
  std::getline(lines, header);
  std::getline(lines, flaky_row);
  std::getline(lines, pi_row);
  auto words = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  EXPECT_EQ(words(header),
            (std::vector<std::string>{"NAME", "STATUS", "COMPLETIONS",
                                      "DURATION", "AGE"}))
      << r.out;
  ASSERT_GE(words(pi_row).size(), 3u) << r.out;
  EXPECT_EQ(words(pi_row)[0], "pi");
  EXPECT_EQ(words(pi_row)[1], "Complete");
  EXPECT_EQ(words(pi_row)[2], "1/1");
  ASSERT_GE(words(flaky_row).size(), 3u) << r.out;
  EXPECT_EQ(words(flaky_row)[1], "Failed");
  EXPECT_EQ(words(flaky_row)[2], "0/1");

  r = kubectl({"get", "job", "flaky", "-o",
               "jsonpath={.status.failed} {.status.conditions[*].type} "
               "{.status.conditions[*].reason}"});
  EXPECT_EQ(r.out,
            "2 FailureTarget Failed BackoffLimitExceeded "
            "BackoffLimitExceeded")
      << r.err;
  // The pods finished, were counted, and lost their tracking finalizer.
  r = kubectl({"get", "pods", "-l", "job-name=pi", "-o",
               "jsonpath={.items[*].status.phase} "
               "{.items[*].metadata.finalizers}"});
  EXPECT_EQ(r.out, "Succeeded ") << r.err;

  // Deleting the Job (kubectl: background propagation) takes its pods.
  r = kubectl({"delete", "job", "flaky"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = kubectl(
      {"wait", "--for=delete", "pod", "-l", "job-name=flaky", "--timeout=60s"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// --- `kplane up --store-nodes 3`: the supervisor of the member processes,
// the data dir's lock, flags checked before anything is done, signals
// during startup. The members are the real `kplane store` (the kplane
// binary built beside this test) behind a wrapper script that records each
// start and can be told to fail at once.

// build-test/kplane, two levels up from build-test/cmd/kplane/up_test.
std::string KplaneBinary() {
  return std::filesystem::weakly_canonical(SelfExeDir() + "/../../kplane");
}

// A base client port for three members on loopback: it, +20000 and +30000,
// each with its peer port (+1), all free now.
int FreeStoreBasePort() {
  std::srand(static_cast<unsigned>(::getpid()) ^
             static_cast<unsigned>(std::time(nullptr)));
  auto free_port = [](int port) {
    net::ScopedFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  };
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = 20000 + std::rand() % 15000;
    bool ok = true;
    for (int p : {base, base + 20000, base + 30000}) {
      ok = ok && free_port(p) && free_port(p + 1);
    }
    if (ok) return base;
  }
  return 0;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

class StoreSupervisorTest : public ControlPlaneTest {
 protected:
  // Three members through the wrapper on a free base port, plain HTTP.
  UpOptions MemberOptions(Duration restart_delay) {
    UpOptions o = Options();
    o.insecure_http = true;
    o.store_members = 3;
    o.store_port = FreeStoreBasePort();
    o.store_restart_delay = restart_delay;
    o.kplane_binary = WriteWrapper();
    return o;
  }

  // <dir>/member.sh: appends the start time (ns) to <dir>/<name>.starts;
  // exits 1 at once while <dir>/<name>.crash exists; else runs the real
  // member.
  std::string WriteWrapper() {
    const std::string path = dir_ + "/member.sh";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "name=$3\n"
                        << "date +%s%N >> " << dir_ << "/$name.starts\n"
                        << "[ -e " << dir_ << "/$name.crash ] && exit 1\n"
                        << "exec " << KplaneBinary() << " \"$@\"\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }

  std::vector<int64_t> Starts(const std::string& name) {
    std::vector<int64_t> out;
    for (const std::string& l : Lines(dir_ + "/" + name + ".starts")) {
      out.push_back(std::stoll(l));
    }
    return out;
  }
  pid_t Pid(const std::string& name) {
    std::vector<std::string> l = Lines(dir_ + "/data/" + name + ".pid");
    return l.empty() ? -1 : std::stoi(l[0]);
  }
  bool Healthy(const std::string& url) {
    auto client = net::HttpClient::ForUrl(url, {});
    if (!client.ok()) return false;
    auto r = (*client)->Request("GET", "/health");
    return r.ok() && r->status == 200;
  }
};

// A member that exits 0 (stopped by SIGTERM; removed from the cluster)
// stays down; one that fails is restarted after a delay that doubles on
// each failure in a row (the kubelet's CrashLoopBackOff); and while the
// supervisor waits to restart one member, another that dies is restarted
// on its own schedule.
TEST_F(StoreSupervisorTest, CleanExitStaysDownFailuresBackOffAndDoNotBlock) {
  ASSERT_TRUE(std::filesystem::exists(KplaneBinary())) << KplaneBinary();
  const Duration delay = milliseconds(200);
  auto cp = ControlPlane::Start(MemberOptions(delay));
  ASSERT_TRUE(cp.ok()) << cp.status();

  ASSERT_EQ(::kill(Pid("s1"), SIGTERM), 0);  // exits 0
  std::ofstream(dir_ + "/s2.crash") << "";
  ASSERT_EQ(::kill(Pid("s2"), SIGKILL), 0);  // then fails at every start
  // s2's third restart is 800 ms away once it has started four times.
  ASSERT_TRUE(Eventually([&] { return Starts("s2").size() >= 4; }));
  ASSERT_EQ(::kill(Pid("s3"), SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] { return Starts("s2").size() >= 5; }));

  const std::vector<int64_t> s2 = Starts("s2");
  const int64_t d = std::chrono::nanoseconds(delay).count();
  EXPECT_GE(s2[2] - s2[1], 2 * d);
  EXPECT_GE(s2[3] - s2[2], 4 * d);
  EXPECT_GE(s2[4] - s2[3], 8 * d);
  // s3 was restarted while s2 waited for its fourth restart.
  const std::vector<int64_t> s3 = Starts("s3");
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_LT(s3[1], s2[4]);
  // s1 was left down.
  EXPECT_EQ(Starts("s1").size(), 1u);
}

// A member the supervisor restarted gets SIGTERM and its grace period at
// shutdown, as the first ones do (not the SIGKILL of PR_SET_PDEATHSIG when
// the thread that forked it ends).
TEST_F(StoreSupervisorTest, RestartedMemberIsStoppedWithSigterm) {
  ASSERT_TRUE(std::filesystem::exists(KplaneBinary())) << KplaneBinary();
  UpOptions o = MemberOptions(milliseconds(100));
  auto cp = ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::string s3_url = (*cp)->store_endpoints()[2];
  ASSERT_EQ(::kill(Pid("s3"), SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] { return Starts("s3").size() == 2; }));
  ASSERT_TRUE(Eventually([&] { return Healthy(s3_url); }));
  const size_t log_before = ReadAll(dir_ + "/data/s3.log").size();
  (*cp)->Stop();
  const std::string after = ReadAll(dir_ + "/data/s3.log").substr(log_before);
  EXPECT_NE(after.find("received signal 15"), std::string::npos) << after;
}

// Each member's pid file names the running process (kill -9 $(cat ...) in
// the demos) and is gone after Stop.
TEST_F(StoreSupervisorTest, PidFilesNameTheMembersAndGoAtStop) {
  ASSERT_TRUE(std::filesystem::exists(KplaneBinary())) << KplaneBinary();
  auto cp = ControlPlane::Start(MemberOptions(milliseconds(100)));
  ASSERT_TRUE(cp.ok()) << cp.status();
  for (const char* name : {"s1", "s2", "s3"}) {
    const pid_t pid = Pid(name);
    ASSERT_GT(pid, 0) << name;
    EXPECT_EQ(::kill(pid, 0), 0) << name;
  }
  // A restarted member's new pid replaces the old one.
  const pid_t old_s2 = Pid("s2");
  ASSERT_EQ(::kill(old_s2, SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] { return Starts("s2").size() == 2; }));
  ASSERT_TRUE(Eventually([&] { return Pid("s2") > 0 && Pid("s2") != old_s2; }));
  EXPECT_EQ(::kill(Pid("s2"), 0), 0);
  (*cp)->Stop();
  for (const char* name : {"s1", "s2", "s3"}) {
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/data/" + name + ".pid"))
        << name;
  }
}

// A member whose process exits during startup fails the start at once,
// naming its exit code and log, instead of waiting 60 s for its health.
TEST_F(StoreSupervisorTest, MemberThatExitsFailsTheStartAtOnce) {
  UpOptions o = MemberOptions(milliseconds(100));
  const std::string script = dir_ + "/exit3.sh";
  std::ofstream(script) << "#!/bin/sh\necho cannot start; exit 3\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  o.kplane_binary = script;
  const auto start = std::chrono::steady_clock::now();
  auto cp = ControlPlane::Start(o);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(cp.ok());
  EXPECT_LT(took, seconds(20));
  // Whichever member was seen first.
  const std::string msg(cp.status().message());
  EXPECT_NE(msg.find("exited with code 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("; see " + dir_ + "/data/s"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".log"), std::string::npos) << msg;
}

// One `kplane up` per data dir: a second is refused while the first runs,
// with an error naming the lock and the data dir; the first's kubeconfig
// is left alone.
TEST_F(ControlPlaneTest, SecondUpOnTheSameDataDirIsRefused) {
  auto first = ControlPlane::Start(Options());
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string kubeconfig = ReadAll(dir_ + "/kubeconfig");
  auto second = ControlPlane::Start(Options());
  ASSERT_FALSE(second.ok());
  const std::string msg(second.status().message());
  EXPECT_NE(msg.find(dir_ + "/data/kplane.lock"), std::string::npos) << msg;
  EXPECT_NE(msg.find("another kplane up"), std::string::npos) << msg;
  EXPECT_EQ(ReadAll(dir_ + "/kubeconfig"), kubeconfig);
  // Once the first stops, the data dir is free again.
  (*first)->Stop();
  first->reset();
  auto third = ControlPlane::Start(Options());
  EXPECT_TRUE(third.ok()) << third.status();
}

// Ctrl-C while `kplane up` starts stops what it started and exits non-zero
// instead of finishing the start first.
TEST_F(ControlPlaneTest, InterruptDuringStartupStopsAndFails) {
  ASSERT_TRUE(std::filesystem::exists(KplaneBinary())) << KplaneBinary();
  e2e::Process up({KplaneBinary(), "up", "--data-dir", dir_ + "/data",
                   "--kubeconfig-out", dir_ + "/kubeconfig", "--port", "0",
                   "--store-port", "0", "--nodes", "0", "--controllers=false",
                   "--kubeletsim-port", "-1", "--controller-manager-port",
                   "-1"});
  up.Start();
  std::optional<std::string> line = up.ReadLine(std::chrono::seconds(30));
  ASSERT_TRUE(line.has_value());
  ASSERT_NE(line->find("starting"), std::string::npos) << *line;
  up.Signal(SIGINT);
  e2e::RunResult r = up.Wait(std::chrono::seconds(60));
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("kplane is up"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/kubeconfig"));
}

// Ports outside 0..65535 are refused (exit 2) before anything starts, as
// `kplane apiserver` refuses them, including a member port derived from
// --store-port.
TEST_F(ControlPlaneTest, PortsOutOfRangeAreRefused) {
  ASSERT_TRUE(std::filesystem::exists(KplaneBinary())) << KplaneBinary();
  e2e::Process up({KplaneBinary(), "up", "--data-dir", dir_ + "/data",
                   "--kubeconfig-out", dir_ + "/kubeconfig", "--port", "70000",
                   "--store-port", "0", "--nodes", "0"});
  up.Start();
  e2e::RunResult r = up.Wait(std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--port must be in 0..65535"), std::string::npos)
      << r.err;

  UpOptions o = Options();
  o.store_members = 3;
  o.store_port = 40000;
  auto cp = ControlPlane::Start(o);
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cp.status().message().find("70000"), std::string::npos)
      << cp.status();
  o = Options();
  o.kubeletsim_port = -5;
  cp = ControlPlane::Start(o);
  ASSERT_FALSE(cp.ok());
  EXPECT_NE(cp.status().message().find("--kubeletsim-port"), std::string::npos)
      << cp.status();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/data"));
}

// Bad options are refused before anything is done: no data dir, no
// certificates, no member processes.
TEST_F(ControlPlaneTest, BadOptionsAreRefusedBeforeAnySideEffect) {
  std::vector<std::pair<std::string, std::function<void(UpOptions&)>>> bad = {
      {"--store-nodes", [](UpOptions& o) { o.store_members = 2; }},
      {"--etcd-protocol",
       [this](UpOptions& o) {
         o.store_members = 3;
         o.store_port = 20000;
         o.store_protocol = "xml";
         o.kplane_binary = dir_ + "/no-such-binary";
       }},
      {"--etcd-compaction-interval",
       [](UpOptions& o) { o.compaction_interval = -seconds(1); }},
      {"--store-restart-delay",
       [](UpOptions& o) { o.store_restart_delay = -seconds(1); }},
  };
  for (auto& [flag, change] : bad) {
    UpOptions o = Options();
    change(o);
    auto cp = ControlPlane::Start(o);
    ASSERT_FALSE(cp.ok()) << flag;
    EXPECT_EQ(cp.status().code(), StatusCode::kInvalidArgument) << flag;
    EXPECT_NE(cp.status().message().find(flag), std::string::npos)
        << cp.status();
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/data")) << flag;
  }
}

}  // namespace
}  // namespace kplane::cmd
