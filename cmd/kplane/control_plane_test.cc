// The control plane `kplane up` runs, in process on ephemeral ports: it
// serves the Kubernetes API and etcd's API over one embedded store, writes a
// kubeconfig, and keeps its objects across a restart on the same data dir.
#include "cmd/kplane/control_plane.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/base64.h"
#include "net/http_client.h"

namespace kplane::cmd {
namespace {

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-up-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
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

  static net::HttpResponse Do(const std::string& url, const std::string& method,
                              const std::string& path,
                              const std::string& body = "") {
    auto client = net::HttpClient::ForUrl(url);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return {};
    auto r = (*client)->Request(method, path,
                                {{"Content-Type", "application/json"}}, body);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : net::HttpResponse{};
  }

  std::string dir_;
};

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

  auto client = net::HttpClient::ForUrl(api);
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
}

}  // namespace
}  // namespace kplane::cmd
