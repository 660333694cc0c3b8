// The web view's endpoints on the API server (issue 21, docs/ui.md), over
// HTTPS with authentication and RBAC on: the page is public, the store
// panel needs `get` on /ui/api/store, the API calls the page makes are
// authorized as any request (a `view` user lists nodes, anonymous cannot).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "apiserver/encryption/transformer.h"
#include "apiserver/object_history.h"
#include "apiserver/test_server.h"
#include "apiserver/ui_endpoints.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;
using testing::ToResponse;

class UiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-ui-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    net::Pki pki({.dir = dir_ + "/pki"});
    StatusOr<net::KeyPair> ca = pki.EnsureCa();
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    StatusOr<net::KeyPair> server =
        pki.EnsureCertificate("apiserver", {.common_name = "kube-apiserver",
                                            .ip_addresses = {"127.0.0.1"},
                                            .server_auth = true});
    ASSERT_TRUE(server.ok()) << server.status();
    // As `kplane up` writes for the web view: a token in system:masters.
    std::ofstream(dir_ + "/tokens.csv")
        << "ui-admin-token,kplane-ui-admin,kplane-ui-admin,system:masters\n"
        << "viewer-token,viewer,1001\n"
        << "operator-token,operator,1002\n";
    StatusOr<std::shared_ptr<const net::TlsContext>> tls =
        net::TlsContext::NewServer({.cert_pem = server->cert_pem,
                                    .key_pem = server->key_pem,
                                    .client_ca_pem = ca_.cert_pem,
                                    .client_auth = net::ClientAuth::kRequest});
    ASSERT_TRUE(tls.ok()) << tls.status();
    server_ = std::make_unique<TestServer>([&](ApiServerOptions* o) {
      o->tls = *tls;
      o->auth.enabled = true;
      o->auth.token_auth_file = dir_ + "/tokens.csv";
      // The fleet's control endpoint, recorded (the browser test drives a
      // real fleet through `kplane up`).
      o->node_control = [this](const std::string& node, bool stop) {
        if (node != "node-1") return NotFoundError("no node " + node);
        std::lock_guard<std::mutex> l(node_calls_mu_);
        node_calls_.push_back((stop ? "stop " : "resume ") + node);
        return Status::Ok();
      };
    });
  }
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Response Get(std::string_view token, std::string_view target,
               net::HttpHeaders headers = {}) {
    StatusOr<std::shared_ptr<const net::TlsContext>> ctx =
        net::TlsContext::NewClient({.ca_pem = ca_.cert_pem});
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    net::HttpClient client("127.0.0.1", server_->port(),
                           net::HttpClientOptions{.tls = *ctx});
    if (!token.empty())
      headers.Add("Authorization", "Bearer " + std::string(token));
    return ToResponse(client.Request("GET", target, headers, ""));
  }
  Response Post(std::string_view token, std::string_view target,
                std::string_view body) {
    StatusOr<std::shared_ptr<const net::TlsContext>> ctx =
        net::TlsContext::NewClient({.ca_pem = ca_.cert_pem});
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    net::HttpClient client("127.0.0.1", server_->port(),
                           net::HttpClientOptions{.tls = *ctx});
    net::HttpHeaders h{{"Authorization", "Bearer " + std::string(token)},
                       {"Content-Type", "application/json"}};
    return ToResponse(client.Request("POST", target, h, body));
  }
  // A binding takes effect when its watch event reaches the policy cache.
  Response AwaitCode(int code, const std::function<Response()>& request) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    Response r = request();
    while (r.code != code && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
      r = request();
    }
    return r;
  }

  Response Send(std::string_view method, std::string_view token,
                std::string_view target, std::string_view body = "") {
    StatusOr<std::shared_ptr<const net::TlsContext>> ctx =
        net::TlsContext::NewClient({.ca_pem = ca_.cert_pem});
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    net::HttpClient client("127.0.0.1", server_->port(),
                           net::HttpClientOptions{.tls = *ctx});
    net::HttpHeaders h{{"Content-Type", "application/json"}};
    if (!token.empty()) h.Add("Authorization", "Bearer " + std::string(token));
    return ToResponse(client.Request(method, target, h, body));
  }
  // Creates configmap default/cm and updates it three times: versions with
  // data v=1..4. Returns their revisions, oldest first.
  std::vector<int64_t> WriteFourVersions() {
    std::vector<int64_t> revisions;
    Response created =
        Post("ui-admin-token", "/api/v1/namespaces/default/configmaps",
             R"({"metadata":{"name":"cm"},"data":{"v":"1"}})");
    EXPECT_EQ(created.code, 201) << created.body;
    revisions.push_back(
        std::stoll(created.Str({"metadata", "resourceVersion"})));
    for (int v = 2; v <= 4; ++v) {
      Response updated = Send("PUT", "ui-admin-token",
                              "/api/v1/namespaces/default/configmaps/cm",
                              R"({"metadata":{"name":"cm"},"data":{"v":")" +
                                  std::to_string(v) + R"("}})");
      EXPECT_EQ(updated.code, 200) << updated.body;
      revisions.push_back(
          std::stoll(updated.Str({"metadata", "resourceVersion"})));
    }
    return revisions;
  }
  static constexpr std::string_view kCmHistory =
      "/ui/api/history?group=&version=v1&resource=configmaps"
      "&namespace=default&name=cm";

  std::string dir_;
  net::KeyPair ca_;
  std::unique_ptr<TestServer> server_;
  std::mutex node_calls_mu_;
  std::vector<std::string> node_calls_;
};

TEST_F(UiTest, PageIsPublicWithContentTypesCachingAndCsp) {
  Response index = Get("", "/ui/");
  ASSERT_EQ(index.code, 200) << index.body;
  EXPECT_EQ(index.headers.Get("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index.body.find("<script src=\"app.js\""), std::string::npos);
  const std::string csp(index.headers.Get("Content-Security-Policy"));
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(index.headers.Get("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(index.headers.Get("Cache-Control"), "no-cache");
  const std::string etag(index.headers.Get("ETag"));
  ASSERT_FALSE(etag.empty());
  Response again = Get("", "/ui/", {{"If-None-Match", etag}});
  EXPECT_EQ(again.code, 304);
  EXPECT_TRUE(again.body.empty());

  Response js = Get("", "/ui/app.js");
  EXPECT_EQ(js.code, 200);
  EXPECT_EQ(js.headers.Get("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(Get("", "/ui/app.css").headers.Get("Content-Type"),
            "text/css; charset=utf-8");
  Response bare = Get("", "/ui");
  EXPECT_EQ(bare.code, 301);
  EXPECT_EQ(bare.headers.Get("Location"), "/ui/");
  // Only the page's own files are public: anything else under /ui/ is a
  // path anonymous may not get; an admin gets 404.
  EXPECT_EQ(Get("", "/ui/secret.txt").code, 403);
  EXPECT_EQ(Get("ui-admin-token", "/ui/secret.txt").code, 404);
}

TEST_F(UiTest, TheApiCallsOfThePageAreAuthorizedByRbac) {
  // What the page does first: list nodes with the user's token.
  EXPECT_EQ(Get("", "/api/v1/nodes").code, 403);
  EXPECT_EQ(Get("not-a-token", "/api/v1/nodes").code, 401);
  EXPECT_EQ(Get("viewer-token", "/api/v1/nodes").code, 403);
  EXPECT_EQ(Get("ui-admin-token", "/api/v1/nodes").code, 200);
  ASSERT_EQ(Post("ui-admin-token",
                 "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 R"({"metadata":{"name":"viewer-view"},
                     "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                                "kind":"ClusterRole","name":"view"},
                     "subjects":[{"kind":"User","name":"viewer"}]})")
                .code,
            201);
  // `view` does not cover nodes (cluster-scoped; kube's view role), so the
  // viewer reads pods in a namespace, and watches them as the page does.
  EXPECT_EQ(AwaitCode(200,
                      [&] {
                        return Get("viewer-token",
                                   "/api/v1/namespaces/default/pods");
                      })
                .code,
            200);
  EXPECT_EQ(Get("viewer-token", "/api/v1/namespaces/default/secrets").code,
            403);
}

TEST_F(UiTest, StorePanelNeedsGetOnItsPath) {
  EXPECT_EQ(Get("", "/ui/api/store").code, 403);
  EXPECT_EQ(Get("not-a-token", "/ui/api/store").code, 401);
  Response admin = Get("ui-admin-token", "/ui/api/store");
  ASSERT_EQ(admin.code, 200) << admin.body;
  EXPECT_EQ(admin.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(admin.headers.Get("Cache-Control"), "no-store");
  const rapidjson::Value* members = admin.At({"members"});
  ASSERT_NE(members, nullptr);
  ASSERT_EQ(members->Size(), 1u);
  EXPECT_TRUE((*members)[0]["leader"].GetBool());
  EXPECT_GE((*members)[0]["raftTerm"].GetUint64(), 1u);
  EXPECT_GT((*members)[0]["revision"].GetInt64(), 0);
  EXPECT_GT((*members)[0]["dbSize"].GetInt64(), 0);
  EXPECT_FALSE(admin.Str({"leader"}).empty());
  EXPECT_EQ(admin.Str({"leader"}), (*members)[0]["memberID"].GetString());

  // The `view` role reads objects but not the store panel.
  ASSERT_EQ(Post("ui-admin-token",
                 "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 R"({"metadata":{"name":"operator-view"},
                     "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                                "kind":"ClusterRole","name":"view"},
                     "subjects":[{"kind":"User","name":"operator"}]})")
                .code,
            201);
  EXPECT_EQ(AwaitCode(200,
                      [&] {
                        return Get("operator-token",
                                   "/api/v1/namespaces/default/pods");
                      })
                .code,
            200);
  EXPECT_EQ(Get("operator-token", "/ui/api/store").code, 403);
  // A ClusterRole naming the path lets them.
  ASSERT_EQ(
      Post("ui-admin-token", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
           R"({"metadata":{"name":"store-panel"},
                     "rules":[{"verbs":["get"],
                               "nonResourceURLs":["/ui/api/store"]}]})")
          .code,
      201);
  ASSERT_EQ(Post("ui-admin-token",
                 "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 R"({"metadata":{"name":"operator-store"},
                     "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                                "kind":"ClusterRole","name":"store-panel"},
                     "subjects":[{"kind":"User","name":"operator"}]})")
                .code,
            201);
  EXPECT_EQ(
      AwaitCode(200, [&] { return Get("operator-token", "/ui/api/store"); })
          .code,
      200);
}

// The history of one object (issue 21): every version still in the
// store, newest first, each with its revision, back to its creation.
TEST_F(UiTest, HistoryListsEveryStoredVersionBackToTheCreation) {
  const std::vector<int64_t> revisions = WriteFourVersions();
  Response h = Get("ui-admin-token", kCmHistory);
  ASSERT_EQ(h.code, 200) << h.body;
  EXPECT_EQ(h.headers.Get("Cache-Control"), "no-store");
  EXPECT_EQ(h.Str({"key"}), "/registry/configmaps/default/cm");
  EXPECT_EQ(h.Str({"end"}), "created");
  EXPECT_EQ(h.At({"createRevision"})->GetInt64(), revisions[0]);
  const rapidjson::Value* versions = h.At({"versions"});
  ASSERT_NE(versions, nullptr);
  ASSERT_EQ(versions->Size(), 4u) << h.body;
  for (int i = 0; i < 4; ++i) {
    const rapidjson::Value& v = (*versions)[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(v["revision"].GetInt64(), revisions[3 - i]);
    EXPECT_EQ(v["version"].GetInt64(), 4 - i);
    EXPECT_STREQ(v["object"]["kind"].GetString(), "ConfigMap");
    EXPECT_EQ(std::string(v["object"]["data"]["v"].GetString()),
              std::to_string(4 - i));
    EXPECT_EQ(
        std::string(v["object"]["metadata"]["resourceVersion"].GetString()),
        std::to_string(revisions[3 - i]));
  }
  // At most `limit` versions; the answer says older ones remain.
  Response two = Get("ui-admin-token", std::string(kCmHistory) + "&limit=2");
  ASSERT_EQ(two.code, 200) << two.body;
  EXPECT_EQ(two.Str({"end"}), "limit");
  EXPECT_EQ(two.At({"versions"})->Size(), 2u);
  EXPECT_EQ(Get("ui-admin-token", std::string(kCmHistory) + "&limit=x").code,
            400);
  // An object that does not exist, a resource that does not.
  EXPECT_EQ(Get("ui-admin-token",
                "/ui/api/history?version=v1&resource=configmaps"
                "&namespace=default&name=nope")
                .code,
            404);
  EXPECT_EQ(Get("ui-admin-token",
                "/ui/api/history?version=v1&resource=widgets"
                "&namespace=default&name=cm")
                .code,
            404);
  EXPECT_EQ(Get("ui-admin-token", "/ui/api/history?version=v1").code, 400);
}

// Compaction removed the older versions: the history stops at the
// compaction point and says so.
TEST_F(UiTest, HistoryStopsAtTheCompactionWithAMarker) {
  const std::vector<int64_t> revisions = WriteFourVersions();
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(revisions[2]);  // keeps what was visible then: v=3
  ASSERT_TRUE(server_->store()->Compact(compact).ok());
  Response h = Get("ui-admin-token", kCmHistory);
  ASSERT_EQ(h.code, 200) << h.body;
  EXPECT_EQ(h.Str({"end"}), "compacted");
  EXPECT_EQ(h.At({"compactRevision"})->GetInt64(), revisions[2]);
  const rapidjson::Value* versions = h.At({"versions"});
  ASSERT_EQ(versions->Size(), 2u) << h.body;
  EXPECT_EQ((*versions)[0]["revision"].GetInt64(), revisions[3]);
  EXPECT_EQ((*versions)[1]["revision"].GetInt64(), revisions[2]);
  EXPECT_STREQ((*versions)[1]["object"]["data"]["v"].GetString(), "3");
}

// A deleted object's history: its versions before the deletion, found
// through a replay of its key's events, until a compaction passes them.
TEST_F(UiTest, HistoryOfADeletedObjectShowsItsVersionsBeforeTheDeletion) {
  const std::vector<int64_t> revisions = WriteFourVersions();
  auto store_revision = [&] {
    etcdserverpb::RangeRequest r;
    r.set_key("/registry/");
    r.set_limit(1);
    StatusOr<etcdserverpb::RangeResponse> resp = server_->store()->Range(r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->header().revision() : 0;
  };
  auto remove = [&] {
    Response d = Send("DELETE", "ui-admin-token",
                      "/api/v1/namespaces/default/configmaps/cm");
    EXPECT_EQ(d.code, 200) << d.body;
    return store_revision();
  };
  const int64_t deleted = remove();
  Response h = Get("ui-admin-token", kCmHistory);
  ASSERT_EQ(h.code, 200) << h.body;
  EXPECT_EQ(h.At({"deletedRevision"})->GetInt64(), deleted);
  EXPECT_EQ(h.Str({"end"}), "created");
  const rapidjson::Value* versions = h.At({"versions"});
  ASSERT_EQ(versions->Size(), 4u) << h.body;
  EXPECT_EQ((*versions)[0]["revision"].GetInt64(), revisions[3]);
  EXPECT_STREQ((*versions)[0]["object"]["data"]["v"].GetString(), "4");
  EXPECT_EQ((*versions)[3]["revision"].GetInt64(), revisions[0]);

  // Created again and deleted again: the newest life only.
  ASSERT_EQ(Post("ui-admin-token", "/api/v1/namespaces/default/configmaps",
                 R"({"metadata":{"name":"cm"},"data":{"v":"again"}})")
                .code,
            201);
  const int64_t deleted_again = remove();
  h = Get("ui-admin-token", kCmHistory);
  ASSERT_EQ(h.code, 200) << h.body;
  EXPECT_EQ(h.At({"deletedRevision"})->GetInt64(), deleted_again);
  ASSERT_EQ(h.At({"versions"})->Size(), 1u) << h.body;
  EXPECT_STREQ((*h.At({"versions"}))[0]["object"]["data"]["v"].GetString(),
               "again");
  // A live object's answer has no deletedRevision.
  WriteFourVersions();
  h = Get("ui-admin-token", kCmHistory);
  ASSERT_EQ(h.code, 200) << h.body;
  EXPECT_EQ(h.At({"deletedRevision"}), nullptr);
  EXPECT_EQ(h.At({"versions"})->Size(), 4u);

  // Deleted, then compacted past the deletion: nothing is left.
  const int64_t gone = remove();
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(gone);
  ASSERT_TRUE(server_->store()->Compact(compact).ok());
  EXPECT_EQ(Get("ui-admin-token", kCmHistory).code, 404);
}

// Reading the history is authorized as a GET of the object.
TEST_F(UiTest, HistoryNeedsGetOnTheObject) {
  WriteFourVersions();
  ASSERT_EQ(Post("ui-admin-token", "/api/v1/namespaces/default/secrets",
                 R"({"metadata":{"name":"s"},"data":{"k":"dg=="}})")
                .code,
            201);
  const std::string secret_history =
      "/ui/api/history?version=v1&resource=secrets&namespace=default&name=s";
  EXPECT_EQ(Get("", kCmHistory).code, 403);
  EXPECT_EQ(Get("not-a-token", kCmHistory).code, 401);
  Response denied = Get("viewer-token", kCmHistory);
  EXPECT_EQ(denied.code, 403);
  EXPECT_NE(denied.body.find("configmaps \\\"cm\\\" is forbidden"),
            std::string::npos)
      << denied.body;
  // `view` in default reads its ConfigMaps but not its Secrets.
  ASSERT_EQ(Post("ui-admin-token",
                 "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
                 "rolebindings",
                 R"({"metadata":{"name":"viewer-view"},
                     "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                                "kind":"ClusterRole","name":"view"},
                     "subjects":[{"kind":"User","name":"viewer"}]})")
                .code,
            201);
  Response allowed =
      AwaitCode(200, [&] { return Get("viewer-token", kCmHistory); });
  EXPECT_EQ(allowed.code, 200) << allowed.body;
  EXPECT_EQ(allowed.At({"versions"})->Size(), 4u);
  EXPECT_EQ(Get("viewer-token", secret_history).code, 403);
  EXPECT_EQ(Get("ui-admin-token", secret_history).code, 200);
}

// Start/stop of a simulated node: `create` on nodes/proxy, then the
// fleet's control endpoint.
TEST_F(UiTest, NodeStopAndResumeNeedNodesProxy) {
  EXPECT_EQ(Send("POST", "", "/ui/api/nodes/node-1/stop").code, 403);
  EXPECT_EQ(Send("POST", "not-a-token", "/ui/api/nodes/node-1/stop").code, 401);
  EXPECT_EQ(Send("POST", "viewer-token", "/ui/api/nodes/node-1/stop").code,
            403);
  Response stopped =
      Send("POST", "ui-admin-token", "/ui/api/nodes/node-1/stop");
  ASSERT_EQ(stopped.code, 200) << stopped.body;
  EXPECT_EQ(stopped.Str({"node"}), "node-1");
  EXPECT_EQ(Send("POST", "ui-admin-token", "/ui/api/nodes/node-9/stop").code,
            404);
  EXPECT_EQ(Send("POST", "ui-admin-token", "/ui/api/nodes/node-1/reboot").code,
            404);
  // A ClusterRole with create on nodes/proxy lets the operator.
  ASSERT_EQ(
      Post("ui-admin-token", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
           R"({"metadata":{"name":"node-control"},
               "rules":[{"apiGroups":[""],"verbs":["create"],
                         "resources":["nodes/proxy"]}]})")
          .code,
      201);
  ASSERT_EQ(Post("ui-admin-token",
                 "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 R"({"metadata":{"name":"operator-node-control"},
                     "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                                "kind":"ClusterRole","name":"node-control"},
                     "subjects":[{"kind":"User","name":"operator"}]})")
                .code,
            201);
  EXPECT_EQ(AwaitCode(200,
                      [&] {
                        return Send("POST", "operator-token",
                                    "/ui/api/nodes/node-1/resume");
                      })
                .code,
            200);
  std::lock_guard<std::mutex> l(node_calls_mu_);
  EXPECT_EQ(node_calls_,
            (std::vector<std::string>{"stop node-1", "resume node-1"}));
}

// Without a NodeControl (`kplane apiserver` beside a separate `kplane
// kubeletsim`), the request goes to the Node's kubelet endpoint, where a
// fleet serves its control API; a kubelet that does not serve it is "no
// simulated node".
TEST(UiNodeControl, GoesToTheNodesKubeletEndpointByDefault) {
  std::mutex mu;
  std::vector<std::string> calls;
  net::HttpServer kubelet({.name = "fake-kubelet"});
  kubelet.HandlePrefix(
      "POST", "/nodes/",
      [&](const net::HttpRequest& req, std::shared_ptr<net::Responder> resp) {
        if (req.path != "/nodes/node-1/stop" &&
            req.path != "/nodes/node-1/resume") {
          resp->Respond(404, {{"Content-Type", "application/json"}},
                        R"({"error":"no such node"})");
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        calls.push_back(req.path);
        resp->Respond(200, {{"Content-Type", "application/json"}}, "{}");
      });
  ASSERT_TRUE(kubelet.Start().ok());
  TestServer server;
  auto node = [&](const std::string& name, int port) {
    return R"({"metadata":{"name":")" + name +
           R"("},"status":{"addresses":[{"type":"ExternalIP","address":"127.0.0.1"}],
               "daemonEndpoints":{"kubeletEndpoint":{"Port":)" +
           std::to_string(port) + "}}}}";
  };
  ASSERT_EQ(server.Post("/api/v1/nodes", node("node-1", kubelet.port())).code,
            201);
  ASSERT_EQ(server.Post("/api/v1/nodes", node("node-2", kubelet.port())).code,
            201);
  ASSERT_EQ(server.Post("/api/v1/nodes", node("no-kubelet", 0)).code, 201);

  Response r = server.Post("/ui/api/nodes/node-1/stop", "");
  EXPECT_EQ(r.code, 200) << r.body;
  r = server.Post("/ui/api/nodes/node-1/resume", "");
  EXPECT_EQ(r.code, 200) << r.body;
  // The kubelet does not simulate node-2; no Node named node-9 exists.
  EXPECT_EQ(server.Post("/ui/api/nodes/node-2/stop", "").code, 404);
  EXPECT_EQ(server.Post("/ui/api/nodes/node-9/stop", "").code, 404);
  r = server.Post("/ui/api/nodes/no-kubelet/stop", "");
  EXPECT_EQ(r.code, 503) << r.body;
  EXPECT_NE(r.body.find("reports no kubelet port"), std::string::npos)
      << r.body;
  kubelet.Stop();
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(calls, (std::vector<std::string>{"/nodes/node-1/stop",
                                             "/nodes/node-1/resume"}));
}

// Encrypted at rest: every version is decrypted as a GET reads it.
TEST(UiHistory, VersionsAreDecryptedThroughTheTransformer) {
  StatusOr<std::string> yaml = encryption::GenerateAesGcmConfig("key1");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  auto config = encryption::ParseEncryptionConfiguration(*yaml);
  ASSERT_TRUE(config.ok()) << config.status();
  TestServer server([&](ApiServerOptions* o) {
    o->encryption = std::make_shared<encryption::TransformerSet>(*config);
  });
  ASSERT_EQ(server
                .Do("POST", "/api/v1/namespaces/default/secrets",
                    R"({"metadata":{"name":"s"},"data":{"k":"b25l"}})")
                .code,
            201);
  ASSERT_EQ(server
                .Do("PUT", "/api/v1/namespaces/default/secrets/s",
                    R"({"metadata":{"name":"s"},"data":{"k":"dHdv"}})")
                .code,
            200);
  Response h = server.Do("GET",
                         "/ui/api/history?version=v1&resource=secrets"
                         "&namespace=default&name=s");
  ASSERT_EQ(h.code, 200) << h.body;
  const rapidjson::Value* versions = h.At({"versions"});
  ASSERT_EQ(versions->Size(), 2u) << h.body;
  EXPECT_STREQ((*versions)[0]["object"]["data"]["k"].GetString(), "dHdv");
  EXPECT_STREQ((*versions)[1]["object"]["data"]["k"].GetString(), "b25l");
}

// The web view's own API calls count against the in-flight limits as any
// request: a history replays the store's retained events on a worker (up
// to seconds), and a node's stop or resume calls its kubelet.
TEST(UiHistory, CallsCountAgainstTheInflightLimits) {
  TestServer server([&](ApiServerOptions* o) {
    o->max_requests_inflight = 0;
    o->max_mutating_requests_inflight = 0;
    o->node_control = [](const std::string&, bool) { return Status::Ok(); };
  });
  Response h = server.Do("GET",
                         "/ui/api/history?version=v1&resource=configmaps"
                         "&namespace=default&name=nope");
  EXPECT_EQ(h.code, 429) << h.body;
  Response stop = server.Do("POST", "/ui/api/nodes/node-1/stop", "{}");
  EXPECT_EQ(stop.code, 429) << stop.body;
  EXPECT_EQ(server.Get("/api/v1/namespaces").code, 429);  // as any read
}

// Browsers open parallel connections and resume the TLS session of the
// first; a server that requests client certificates failed those
// handshakes ("session id context uninitialized") and chromium could not
// load app.js. curl --parallel resumes sessions the same way.
TEST_F(UiTest, ParallelResumedConnectionsLoadThePage) {
  const std::string ca = dir_ + "/ca.crt";
  std::ofstream(ca) << ca_.cert_pem;
  const std::string url =
      "https://127.0.0.1:" + std::to_string(server_->port()) + "/ui/app.js";
  std::string cmd = "curl -s --cacert " + ca +
                    " --parallel --parallel-max 8 -o /dev/null -o /dev/null"
                    " -o /dev/null -o /dev/null -o /dev/null -o /dev/null"
                    " -o /dev/null -o /dev/null -w '%{http_code}\\n'";
  for (int i = 0; i < 8; ++i) cmd += " " + url;
  for (int round = 0; round < 3; ++round) {
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[256];
    while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
    pclose(p);
    EXPECT_EQ(out, "200\n200\n200\n200\n200\n200\n200\n200\n") << cmd;
  }
}

TEST(StoreStatusJson, ReportsEveryMemberAndTheNewestTermsLeader) {
  etcdserverpb::StatusResponse old_leader;
  old_leader.mutable_header()->set_member_id(0xa);
  old_leader.mutable_header()->set_revision(40);
  old_leader.set_leader(0xa);
  old_leader.set_raftterm(2);
  etcdserverpb::StatusResponse follower;
  follower.mutable_header()->set_member_id(0xb);
  follower.mutable_header()->set_revision(42);
  follower.set_leader(0xc);
  follower.set_raftterm(3);
  follower.set_dbsize(4096);
  follower.set_dbsizeinuse(1024);
  follower.add_errors("NOSPACE");
  std::vector<StoreMemberReport> members;
  members.push_back({.endpoint = "https://127.0.0.1:1", .status = old_leader});
  members.push_back({.endpoint = "https://127.0.0.1:2", .status = follower});
  members.push_back({.endpoint = "https://127.0.0.1:3",
                     .status = UnavailableError("connection refused")});
  rapidjson::Document doc;
  doc.Parse(StoreStatusJson(members).c_str());
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["leader"].GetString(), "c");
  EXPECT_EQ(doc["raftTerm"].GetUint64(), 3u);
  EXPECT_EQ(doc["revision"].GetInt64(), 42);
  const rapidjson::Value& m = doc["members"];
  ASSERT_EQ(m.Size(), 3u);
  EXPECT_TRUE(m[0]["leader"].GetBool());  // what member a says of itself
  EXPECT_FALSE(m[1]["leader"].GetBool());
  EXPECT_EQ(m[1]["dbSizeInUse"].GetInt64(), 1024);
  EXPECT_STREQ(m[1]["alarms"][0].GetString(), "NOSPACE");
  EXPECT_NE(std::string(m[2]["error"].GetString()).find("connection refused"),
            std::string::npos);
}

}  // namespace
}  // namespace kplane::apiserver
