// The namespace, pod GC and ServiceAccounts controllers against a real API
// server on a
// loopback port (over an embedded store), run by a ControllerManager as
// `kplane controller-manager` runs them. These are the exchanges that
// tested the API server's own background workers before the controllers
// took their work over (the same requests and expectations).
#include <gtest/gtest.h>

#include <string>

#include "apiserver/test_server.h"
#include "controllers/controller_manager.h"

namespace kplane::controllers {
namespace {

using apiserver::testing::Response;
using apiserver::testing::TestServer;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";

std::string Pod(const std::string& name, const std::string& extra_meta = "",
                const std::string& extra_spec = "") {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         "\"" + extra_meta +
         R"(},"spec":{"containers":[{"name":"c","image":"nginx"}])" +
         extra_spec + "}}";
}

std::string ConfigMap(const std::string& name,
                      const std::string& labels = "{}") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
         name + R"(","labels":)" + labels + R"(},"data":{"k":"v"}})";
}

void ExpectStatus(const Response& r, int code, const std::string& reason) {
  EXPECT_EQ(r.code, code) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "Status") << r.body;
  EXPECT_EQ(r.Str({"reason"}), reason) << r.body;
}

// An API server and a controller manager running `controllers` against it.
class ApiServerWithControllers {
 public:
  explicit ApiServerWithControllers(std::vector<std::string> controllers) {
    ControllerManagerOptions o;
    o.server = "http://127.0.0.1:" + std::to_string(server_.port());
    o.leader_elect = false;
    o.port = 0;
    o.controllers = std::move(controllers);
    o.namespace_retry_interval = milliseconds(100);
    o.metrics = &metrics_;
    auto cm = ControllerManager::Start(o);
    CHECK(cm.ok()) << cm.status();
    cm_ = std::move(*cm);
    CHECK(cm_->WaitLeading(seconds(60)));
  }
  ~ApiServerWithControllers() { cm_->Stop(); }
  TestServer& api() { return server_; }

 private:
  TestServer server_;
  metrics::Registry metrics_;
  std::unique_ptr<ControllerManager> cm_;
};

TEST(PodGCControllerApiTest, RemovesPodsWhenGraceRunsOut) {
  ApiServerWithControllers cluster({"podgc"});
  TestServer& s = cluster.api();
  ASSERT_EQ(s.Post(kPods, Pod("r", "", R"(,"nodeName":"node-1")")).code, 201);
  Response list = s.Get(kPods);
  auto w = s.Watch(std::string(kPods) + "?watch=true&resourceVersion=" +
                   list.Str({"metadata", "resourceVersion"}));
  Response d = s.Delete(std::string(kPods) + "/r?gracePeriodSeconds=1");
  ASSERT_EQ(d.code, 200);
  EXPECT_FALSE(d.Str({"metadata", "deletionTimestamp"}).empty());
  rapidjson::Document e1 = w->NextJson();
  EXPECT_STREQ(e1["type"].GetString(), "MODIFIED");
  // No kubelet deletes it with grace 0: the pod GC does once the grace is
  // over.
  rapidjson::Document e2 = w->NextJson();
  EXPECT_STREQ(e2["type"].GetString(), "DELETED");
  EXPECT_EQ(s.Get(std::string(kPods) + "/r").code, 404);
}

TEST(NamespaceControllerApiTest, NamespaceDeletionEmptiesAndRemovesIt) {
  ApiServerWithControllers cluster({"namespace"});
  TestServer& s = cluster.api();
  ASSERT_EQ(
      s.Post("/api/v1/namespaces", R"({"metadata":{"name":"team"}})").code,
      201);
  ASSERT_EQ(s.Post("/api/v1/namespaces/team/configmaps", ConfigMap("a")).code,
            201);
  Response list = s.Get("/api/v1/namespaces");
  auto w = s.Watch(
      "/api/v1/"
      "namespaces?watch=1&fieldSelector=metadata.name%3Dteam&resourceVersion=" +
      list.Str({"metadata", "resourceVersion"}));
  Response d = s.Delete("/api/v1/namespaces/team");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_EQ(d.Str({"status", "phase"}), "Terminating");
  // The admission check reads the namespaces watch cache, as kube's
  // NamespaceLifecycle reads its informer: a list not older than the
  // deletion's revision waits until the cache has seen it.
  ASSERT_EQ(s.Get("/api/v1/namespaces?resourceVersionMatch=NotOlderThan&"
                  "resourceVersion=" +
                  d.Str({"metadata", "resourceVersion"}))
                .code,
            200);
  // No new content in a terminating namespace.
  Response create =
      s.Post("/api/v1/namespaces/team/configmaps", ConfigMap("b"));
  ExpectStatus(create, 403, "Forbidden");
  // The namespace goes away once its content is gone.
  for (;;) {
    rapidjson::Document e = w->NextJson();
    ASSERT_TRUE(e.IsObject());
    if (std::string(e["type"].GetString()) == "DELETED") break;
  }
  EXPECT_EQ(s.Get("/api/v1/namespaces/team").code, 404);
  EXPECT_EQ(s.Get("/api/v1/namespaces/team/configmaps/a").code, 404);
  ExpectStatus(s.Delete("/api/v1/namespaces/default"), 403, "Forbidden");
}

// A bound pod in a deleted namespace: the namespace controller deletes it
// gracefully, nothing finishes it but the pod GC, and then the namespace
// goes. Both controllers together, as `kplane up` runs them without nodes.
TEST(NamespaceControllerApiTest, WaitsForTerminatingPodsBeforeItEnds) {
  ApiServerWithControllers cluster({"namespace", "podgc"});
  TestServer& s = cluster.api();
  ASSERT_EQ(
      s.Post("/api/v1/namespaces", R"({"metadata":{"name":"team"}})").code,
      201);
  ASSERT_EQ(
      s.Post("/api/v1/namespaces/team/pods",
             Pod("p", "",
                 R"(,"nodeName":"node-1","terminationGracePeriodSeconds":1)"))
          .code,
      201);
  Response list = s.Get("/api/v1/namespaces/team/pods");
  auto pods = s.Watch("/api/v1/namespaces/team/pods?watch=1&resourceVersion=" +
                      list.Str({"metadata", "resourceVersion"}));
  auto namespaces = s.Watch(
      "/api/v1/"
      "namespaces?watch=1&fieldSelector=metadata.name%3Dteam&resourceVersion=" +
      list.Str({"metadata", "resourceVersion"}));
  ASSERT_EQ(s.Delete("/api/v1/namespaces/team").code, 200);
  // The pod is first deleted gracefully, and only then removed...
  rapidjson::Document e1 = pods->NextJson();
  EXPECT_STREQ(e1["type"].GetString(), "MODIFIED");
  EXPECT_TRUE(e1["object"]["metadata"].HasMember("deletionTimestamp"));
  rapidjson::Document e2 = pods->NextJson();
  ASSERT_STREQ(e2["type"].GetString(), "DELETED");
  // ...before the namespace is.
  for (;;) {
    rapidjson::Document e = namespaces->NextJson();
    ASSERT_TRUE(e.IsObject());
    if (std::string(e["type"].GetString()) != "DELETED") continue;
    EXPECT_LT(
        std::stoll(e2["object"]["metadata"]["resourceVersion"].GetString()),
        std::stoll(e["object"]["metadata"]["resourceVersion"].GetString()));
    break;
  }
  EXPECT_EQ(s.Get("/api/v1/namespaces/team").code, 404);
}

// Waits for the next event of `type` on `w`; its object's uid.
std::string AwaitEvent(apiserver::testing::WatchStream& w,
                       const std::string& type) {
  for (;;) {
    rapidjson::Document e = w.NextJson();
    if (!e.IsObject()) return "";
    if (type == e["type"].GetString()) {
      return e["object"]["metadata"]["uid"].GetString();
    }
  }
}

TEST(ServiceAccountsControllerApiTest, DefaultAccountInEveryActiveNamespace) {
  ApiServerWithControllers cluster({"serviceaccount", "namespace"});
  TestServer& s = cluster.api();
  // The system namespaces get theirs.
  auto in_default = s.Watch(
      "/api/v1/namespaces/default/serviceaccounts?watch=1&fieldSelector="
      "metadata.name%3Ddefault");
  const std::string first = AwaitEvent(*in_default, "ADDED");
  ASSERT_FALSE(first.empty());

  // A new namespace gets one.
  ASSERT_EQ(
      s.Post("/api/v1/namespaces", R"({"metadata":{"name":"team"}})").code,
      201);
  auto in_team = s.Watch("/api/v1/namespaces/team/serviceaccounts?watch=1");
  ASSERT_FALSE(AwaitEvent(*in_team, "ADDED").empty());

  // Deleted, it comes back as another account.
  ASSERT_EQ(s.Delete("/api/v1/namespaces/default/serviceaccounts/default").code,
            200);
  EXPECT_EQ(AwaitEvent(*in_default, "DELETED"), first);
  const std::string second = AwaitEvent(*in_default, "ADDED");
  EXPECT_FALSE(second.empty());
  EXPECT_NE(second, first);

  // A deleted namespace is emptied of it and ends: not recreated there.
  Response list = s.Get("/api/v1/namespaces");
  auto namespaces = s.Watch(
      "/api/v1/namespaces?watch=1&fieldSelector=metadata.name%3Dteam&"
      "resourceVersion=" +
      list.Str({"metadata", "resourceVersion"}));
  ASSERT_EQ(s.Delete("/api/v1/namespaces/team").code, 200);
  ASSERT_FALSE(AwaitEvent(*namespaces, "DELETED").empty());
  Response left = s.Get("/api/v1/namespaces/team/serviceaccounts");
  ASSERT_EQ(left.code, 200);
  EXPECT_EQ(left.At({"items"})->Size(), 0u) << left.body;
}

}  // namespace
}  // namespace kplane::controllers
