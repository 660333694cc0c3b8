// CustomResourceDefinitions end to end over HTTP (an in-process apiserver
// over a real store): a CRD created is served, its objects behave like any
// resource's, its status says Established, and deleting it deletes them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/custom_resources.h"
#include "apiserver/openapi/openapi_v2.pb.h"
#include "apiserver/test_server.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::SkewedClock;
using testing::TestServer;

constexpr char kCrds[] =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
constexpr char kWidgets[] = "/apis/example.com/v1/namespaces/default/widgets";

// A namespaced Widget (short name wd, category all) served as v1 (storage)
// and v1beta1, with /status; or cluster-scoped without.
std::string WidgetCrd(bool namespaced = true) {
  const std::string status = namespaced
                                 ? R"(,"subresources":{"status":{},"scale":{)"
                                   R"("specReplicasPath":".spec.size",)"
                                   R"("statusReplicasPath":".status.size"}})"
                                 : "";
  const std::string columns =
      namespaced
          ? R"(,"additionalPrinterColumns":[)"
            R"({"name":"Size","type":"integer","jsonPath":".spec.size"},)"
            R"({"name":"Color","type":"string","jsonPath":".spec.color"},)"
            R"({"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])"
          : "";
  const std::string schema =
      R"("schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}})";
  return std::string(R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition",
    "metadata":{"name":")") +
         (namespaced ? "widgets.example.com" : "gadgets.example.com") +
         R"("},"spec":{"group":"example.com","scope":")" +
         (namespaced ? "Namespaced" : "Cluster") + R"(","names":{"plural":")" +
         (namespaced ? "widgets" : "gadgets") + R"(","kind":")" +
         (namespaced ? "Widget" : "Gadget") + R"(","shortNames":[")" +
         (namespaced ? "wd" : "gd") +
         R"("],"categories":["all"]},"versions":[{"name":"v1","served":true,"storage":true,)" +
         schema + status + columns +
         R"(},{"name":"v1beta1","served":true,"storage":false,)" + schema +
         status + "}]}}";
}

std::string Widget(const std::string& name, int size,
                   const std::string& labels = "{}") {
  return R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":")" +
         name + R"(","labels":)" + labels + R"(},"spec":{"size":)" +
         std::to_string(size) + R"(,"color":"blue"}})";
}

bool Established(const rapidjson::Value& crd) {
  if (!crd.IsObject() || !crd.HasMember("status")) return false;
  const rapidjson::Value& st = crd["status"];
  if (!st.IsObject() || !st.HasMember("conditions")) return false;
  for (const rapidjson::Value& c : st["conditions"].GetArray()) {
    if (std::string(c["type"].GetString()) == "Established" &&
        std::string(c["status"].GetString()) == "True") {
      return true;
    }
  }
  return false;
}

// Creates the CRD and waits (on a watch of it) until it says Established,
// which the apiserver writes once the resource is served. Returns how long
// that took.
Duration CreateAndAwaitEstablished(TestServer& s, const std::string& crd,
                                   const std::string& name,
                                   const net::HttpHeaders& auth = {}) {
  auto w = s.Watch(
      std::string(kCrds) + "?watch=1&fieldSelector=metadata.name%3D" + name,
      auth);
  const TimePoint start = Clock::Real()->Now();
  Response c = s.Do("POST", kCrds, crd, auth);
  EXPECT_EQ(c.code, 201) << c.body;
  for (;;) {
    rapidjson::Document e = w->NextJson();
    if (!e.IsObject()) {
      ADD_FAILURE() << "no Established condition on " << name;
      break;
    }
    if (Established(e["object"])) break;
  }
  return Clock::Real()->Now() - start;
}

// Deletes the CRD and waits (on a watch of it) until it is gone, which the
// apiserver allows once its objects are. False if it never went.
bool DeleteAndAwaitGone(TestServer& s, const std::string& name) {
  auto w = s.Watch(std::string(kCrds) +
                   "?watch=1&fieldSelector=metadata.name%3D" + name);
  Response d = s.Delete(std::string(kCrds) + "/" + name);
  EXPECT_EQ(d.code, 200) << d.body;
  for (;;) {
    rapidjson::Document e = w->NextJson();
    if (!e.IsObject()) return false;
    if (std::string(e["type"].GetString()) == "DELETED") return true;
  }
}

TEST(CrdTest, CreatedCrdIsServedAndEstablished) {
  TestServer s;
  EXPECT_EQ(s.Get(kWidgets).code, 404);
  const Duration took =
      CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  EXPECT_LT(took, seconds(1));

  Response crd = s.Get(std::string(kCrds) + "/widgets.example.com");
  ASSERT_EQ(crd.code, 200) << crd.body;
  EXPECT_EQ(crd.Str({"kind"}), "CustomResourceDefinition");
  EXPECT_EQ(crd.Str({"spec", "names", "singular"}), "widget");  // defaulted
  EXPECT_EQ(crd.Str({"spec", "names", "listKind"}), "WidgetList");
  EXPECT_EQ(crd.Str({"status", "acceptedNames", "kind"}), "Widget");
  EXPECT_EQ(crd.Str({"status", "storedVersions"}), "");  // an array
  ASSERT_NE(crd.At({"status", "storedVersions"}), nullptr);
  EXPECT_EQ(std::string((*crd.At({"status", "storedVersions"}))[0].GetString()),
            "v1");
  ASSERT_NE(crd.At({"metadata", "finalizers"}), nullptr);
  EXPECT_EQ(std::string((*crd.At({"metadata", "finalizers"}))[0].GetString()),
            "customresourcecleanup.apiextensions.k8s.io");

  // Discovery, legacy and aggregated.
  Response list = s.Get("/apis/example.com/v1");
  ASSERT_EQ(list.code, 200) << list.body;
  EXPECT_NE(list.body.find(R"("name":"widgets")"), std::string::npos);
  EXPECT_NE(list.body.find(R"("shortNames":["wd"])"), std::string::npos);
  EXPECT_NE(list.body.find(R"("categories":["all"])"), std::string::npos);
  EXPECT_NE(list.body.find(R"("name":"widgets/status")"), std::string::npos);
  EXPECT_NE(s.Get("/apis").body.find(R"("name":"example.com")"),
            std::string::npos);
  EXPECT_NE(s.Get("/apis",
                  "application/json;g=apidiscovery.k8s.io;v=v2;as="
                  "APIGroupDiscoveryList")
                .body.find(R"("resource":"widgets")"),
            std::string::npos);
  EXPECT_NE(s.Get("/apis/apiextensions.k8s.io/v1")
                .body.find(R"("shortNames":["crd","crds"])"),
            std::string::npos);
}

TEST(CrdTest, CustomResourcesBehaveLikeAnyResource) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  auto watch = s.Watch(std::string(kWidgets) + "?watch=1");

  Response c = s.Post(kWidgets, Widget("a", 1, R"({"tier":"front"})"));
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_EQ(c.Str({"apiVersion"}), "example.com/v1");
  EXPECT_EQ(c.Str({"kind"}), "Widget");
  EXPECT_EQ(c.Str({"spec", "color"}), "blue");
  EXPECT_FALSE(c.Str({"metadata", "uid"}).empty());
  EXPECT_FALSE(c.Str({"metadata", "creationTimestamp"}).empty());
  ASSERT_EQ(s.Post(kWidgets, Widget("b", 2, R"({"tier":"back"})")).code, 201);
  EXPECT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 409);

  rapidjson::Document added = watch->NextJson();
  EXPECT_EQ(std::string(added["type"].GetString()), "ADDED");
  EXPECT_EQ(std::string(added["object"]["metadata"]["name"].GetString()), "a");
  EXPECT_EQ(std::string(added["object"]["kind"].GetString()), "Widget");

  Response g = s.Get(std::string(kWidgets) + "/a");
  ASSERT_EQ(g.code, 200) << g.body;
  EXPECT_EQ((*g.At({"spec", "size"})).GetInt(), 1);

  Response l = s.Get(std::string(kWidgets) + "?labelSelector=tier%3Dback");
  ASSERT_EQ(l.code, 200) << l.body;
  EXPECT_EQ(l.Str({"kind"}), "WidgetList");
  ASSERT_EQ(l.json["items"].Size(), 1u);
  EXPECT_EQ(std::string(l.json["items"][0]["metadata"]["name"].GetString()),
            "b");
  l = s.Get(std::string(kWidgets) + "?fieldSelector=metadata.name%3Da");
  ASSERT_EQ(l.json["items"].Size(), 1u);
  EXPECT_EQ(s.Get(std::string(kWidgets) + "?fieldSelector=spec.size%3D1").code,
            400);
  // Across namespaces, and short of a namespace for a single object.
  EXPECT_EQ(s.Get("/apis/example.com/v1/widgets").json["items"].Size(), 2u);

  // Update, merge and JSON patch; strategic merge is refused as kube does.
  std::string body = g.body;
  Response u = s.Put(std::string(kWidgets) + "/a",
                     body.replace(body.find("\"blue\""), 6, "\"red\""));
  ASSERT_EQ(u.code, 200) << u.body;
  EXPECT_EQ(u.Str({"spec", "color"}), "red");
  Response mp = s.Patch(std::string(kWidgets) + "/a", R"({"spec":{"size":5}})",
                        "application/merge-patch+json");
  ASSERT_EQ(mp.code, 200) << mp.body;
  EXPECT_EQ((*mp.At({"spec", "size"})).GetInt(), 5);
  EXPECT_EQ(mp.Str({"spec", "color"}), "red");
  Response jp =
      s.Patch(std::string(kWidgets) + "/a",
              R"([{"op":"replace","path":"/spec/color","value":"green"}])",
              "application/json-patch+json");
  ASSERT_EQ(jp.code, 200) << jp.body;
  EXPECT_EQ(jp.Str({"spec", "color"}), "green");
  Response sp = s.Patch(std::string(kWidgets) + "/a", R"({"spec":{"size":6}})",
                        "application/strategic-merge-patch+json");
  EXPECT_EQ(sp.code, 415) << sp.body;

  // Server-side apply: the object without a schema (lists atomic).
  net::HttpHeaders apply{{"Content-Type", "application/apply-patch+yaml"}};
  Response ssa = s.Do(
      "PATCH", std::string(kWidgets) + "/c?fieldManager=tester",
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"c"},"spec":{"size":7,"tags":["x"]}})",
      apply);
  ASSERT_EQ(ssa.code, 201) << ssa.body;
  ssa = s.Do(
      "PATCH", std::string(kWidgets) + "/c?fieldManager=tester",
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"c"},"spec":{"tags":["y"]}})",
      apply);
  ASSERT_EQ(ssa.code, 200) << ssa.body;
  EXPECT_EQ(ssa.At({"spec", "size"}), nullptr) << ssa.body;  // unapplied
  EXPECT_EQ(std::string((*ssa.At({"spec", "tags"}))[0].GetString()), "y");
  EXPECT_EQ(
      std::string(
          (*ssa.At({"metadata", "managedFields"}))[0]["manager"].GetString()),
      "tester");

  // Names strategic merge reads as directives are data to apply: a
  // kustomize patch kept in a custom resource (Flux's postRenderers).
  const char* renderers =
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"c"},"spec":{"tags":["y"],"postRenderers":[{"patches":[{"kind":"Deployment","$patch":"delete"}]}],"$retainKeys":["tags"]}})";
  ssa = s.Do("PATCH", std::string(kWidgets) + "/c?fieldManager=tester",
             renderers, apply);
  ASSERT_EQ(ssa.code, 200) << ssa.body;
  Response got = s.Get(std::string(kWidgets) + "/c");
  ASSERT_EQ(got.code, 200) << got.body;
  const rapidjson::Value* kept = got.At({"spec", "postRenderers"});
  ASSERT_NE(kept, nullptr) << got.body;
  EXPECT_EQ(std::string((*kept)[0]["patches"][0]["$patch"].GetString()),
            "delete");
  ASSERT_NE(got.At({"spec", "$retainKeys"}), nullptr) << got.body;
  ssa = s.Do("PATCH", std::string(kWidgets) + "/c?fieldManager=tester",
             renderers, apply);
  ASSERT_EQ(ssa.code, 200) << ssa.body;
  EXPECT_EQ(ssa.body.find("$$"), std::string::npos) << ssa.body;

  // Table (kubectl get): Name and the printer columns; v1beta1 declares
  // none, so it gets kube's default Age.
  Response t = s.Get(std::string(kWidgets) + "?labelSelector=tier%3Dfront",
                     "application/json;as=Table;v=v1;g=meta.k8s.io");
  ASSERT_EQ(t.code, 200) << t.body;
  ASSERT_EQ(t.json["columnDefinitions"].Size(), 4u) << t.body;
  EXPECT_EQ(std::string(t.json["columnDefinitions"][1]["name"].GetString()),
            "Size");
  EXPECT_EQ(std::string(t.json["columnDefinitions"][3]["type"].GetString()),
            "date");
  EXPECT_EQ(t.json["rows"][0]["cells"][1].GetInt(), 5);
  EXPECT_EQ(std::string(t.json["rows"][0]["cells"][2].GetString()), "green");
  t = s.Get("/apis/example.com/v1beta1/namespaces/default/widgets",
            "application/json;as=Table;v=v1;g=meta.k8s.io");
  ASSERT_EQ(t.json["columnDefinitions"].Size(), 2u) << t.body;
  EXPECT_EQ(std::string(t.json["columnDefinitions"][1]["name"].GetString()),
            "Age");

  // The scale subresource over spec.size / status.size.
  Response sc = s.Get(std::string(kWidgets) + "/a/scale");
  ASSERT_EQ(sc.code, 200) << sc.body;
  EXPECT_EQ(sc.Str({"kind"}), "Scale");
  EXPECT_EQ(sc.Str({"apiVersion"}), "autoscaling/v1");
  EXPECT_EQ((*sc.At({"spec", "replicas"})).GetInt(), 5);
  Response scaled =
      s.Patch(std::string(kWidgets) + "/a/scale", R"({"spec":{"replicas":8}})",
              "application/merge-patch+json");
  ASSERT_EQ(scaled.code, 200) << scaled.body;
  EXPECT_EQ((*scaled.At({"spec", "replicas"})).GetInt(), 8);
  EXPECT_EQ(
      (*s.Get(std::string(kWidgets) + "/a").At({"spec", "size"})).GetInt(), 8);

  // Delete one, then the collection.
  EXPECT_EQ(s.Delete(std::string(kWidgets) + "/a").code, 200);
  EXPECT_EQ(s.Get(std::string(kWidgets) + "/a").code, 404);
  EXPECT_EQ(s.Delete(kWidgets).code, 200);
  EXPECT_EQ(s.Get(kWidgets).json["items"].Size(), 0u);
}

TEST(CrdTest, ClusterScopedResource) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(false), "gadgets.example.com");
  Response c = s.Post(
      "/apis/example.com/v1/gadgets",
      R"({"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{}})");
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_EQ(c.Str({"metadata", "namespace"}), "");
  EXPECT_EQ(s.Get("/apis/example.com/v1/gadgets/g").code, 200);
  EXPECT_EQ(s.Get("/apis/example.com/v1/namespaces/default/gadgets/g").code,
            404);
}

TEST(CrdTest, VersionsAreServedWithConversionNone) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  std::string beta = Widget("a", 1);
  beta.replace(beta.find("example.com/v1"), 14, "example.com/v1beta1");
  Response c =
      s.Post("/apis/example.com/v1beta1/namespaces/default/widgets", beta);
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_EQ(c.Str({"apiVersion"}), "example.com/v1beta1");
  EXPECT_EQ(s.Get(std::string(kWidgets) + "/a").Str({"apiVersion"}),
            "example.com/v1");
  Response l = s.Get(kWidgets);
  EXPECT_EQ(std::string(l.json["items"][0]["apiVersion"].GetString()),
            "example.com/v1");
  // A body of another version than the URL's is refused.
  EXPECT_EQ(s.Post(kWidgets, beta).code, 400);
}

// Objects stored before a CRD's storage version changed are read as the
// new storage version (conversion None) and stored as it on their next
// write; a version leaves spec.versions only once status.storedVersions no
// longer lists it (kube's stored-versions rule), so every stored object
// stays readable.
TEST(CrdTest, TheStorageVersionCanChange) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  ASSERT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 201);
  const std::string crd = std::string(kCrds) + "/widgets.example.com";
  const std::string json_patch = "application/json-patch+json";
  Response moved = s.Patch(
      crd,
      R"([{"op":"replace","path":"/spec/versions/0/storage","value":false},)"
      R"({"op":"replace","path":"/spec/versions/1/storage","value":true}])",
      json_patch);
  ASSERT_EQ(moved.code, 200) << moved.body;
  const rapidjson::Value* stored = moved.At({"status", "storedVersions"});
  ASSERT_NE(stored, nullptr);
  ASSERT_EQ(stored->Size(), 2u) << moved.body;
  EXPECT_EQ(std::string((*stored)[1].GetString()), "v1beta1");
  // One reconcile serves every CRD it lists before it writes their
  // status: once a CRD created after the change is Established, the
  // change is served.
  CreateAndAwaitEstablished(s, WidgetCrd(false), "gadgets.example.com");

  const std::string betas =
      "/apis/example.com/v1beta1/namespaces/default/widgets";
  Response a = s.Get(betas + "/a");
  ASSERT_EQ(a.code, 200) << a.body;
  EXPECT_EQ(a.Str({"apiVersion"}), "example.com/v1beta1");
  EXPECT_EQ((*a.At({"spec", "size"})).GetInt(), 1);
  Response listed = s.Get(kWidgets);
  ASSERT_EQ(listed.code, 200) << listed.body;
  EXPECT_EQ(listed.json["items"].Size(), 1u);
  ASSERT_EQ(s.Patch(std::string(kWidgets) + "/a", R"({"spec":{"size":2}})",
                    "application/merge-patch+json")
                .code,
            200);
  etcdserverpb::RangeRequest raw;
  raw.set_key("/registry/example.com/widgets/default/a");
  auto r = s.store()->Range(raw);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_THAT(r->kvs(0).value(), ::testing::HasSubstr("example.com/v1beta1"));

  // v1 may still be stored: it cannot leave spec.versions yet.
  const std::string drop_v1 = R"([{"op":"remove","path":"/spec/versions/0"}])";
  Response refused = s.Patch(crd, drop_v1, json_patch);
  EXPECT_EQ(refused.code, 422) << refused.body;
  EXPECT_THAT(refused.Str({"message"}),
              ::testing::HasSubstr("status.storedVersions[0]: Invalid value: "
                                   "\"v1\": must appear in spec.versions"));
  // The status must keep the storage version.
  Response bad_status =
      s.Patch(crd + "/status", R"({"status":{"storedVersions":["v1"]}})",
              "application/merge-patch+json");
  EXPECT_EQ(bad_status.code, 422) << bad_status.body;
  EXPECT_THAT(bad_status.Str({"message"}),
              ::testing::HasSubstr("must have the storage version v1beta1"));
  // Once every object is rewritten, the status drops v1 and v1 can go.
  Response migrated =
      s.Patch(crd + "/status", R"({"status":{"storedVersions":["v1beta1"]}})",
              "application/merge-patch+json");
  ASSERT_EQ(migrated.code, 200) << migrated.body;
  Response dropped = s.Patch(crd, drop_v1, json_patch);
  EXPECT_EQ(dropped.code, 200) << dropped.body;
}

// Discovery lists a custom group's versions in kube's priority order, so
// its preferred version (what kubectl uses) is the released one, not the
// first the CRD lists.
TEST(CrdTest, DiscoveryPrefersVersionsAsKube) {
  TestServer s;
  std::string versions;
  for (const char* v : {"v1alpha1", "v1beta1", "v1", "v2beta1", "vnext"}) {
    versions += std::string(versions.empty() ? "" : ",") + R"({"name":")" + v +
                R"(","served":true,"storage":)" +
                (std::string(v) == "v1" ? "true" : "false") +
                R"(,"schema":{"openAPIV3Schema":{"type":"object",)"
                R"("x-kubernetes-preserve-unknown-fields":true}}})";
  }
  CreateAndAwaitEstablished(s,
                            R"({"apiVersion":"apiextensions.k8s.io/v1",
      "kind":"CustomResourceDefinition","metadata":{"name":"gears.example.org"},
      "spec":{"group":"example.org","scope":"Namespaced",
      "names":{"plural":"gears","kind":"Gear"},"versions":[)" +
                                versions + "]}}",
                            "gears.example.org");
  Response g = s.Get("/apis/example.org");
  ASSERT_EQ(g.code, 200) << g.body;
  EXPECT_EQ(g.Str({"preferredVersion", "version"}), "v1") << g.body;
  std::vector<std::string> order;
  for (const auto& v : g.json["versions"].GetArray()) {
    order.push_back(v["version"].GetString());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"v1", "v2beta1", "v1beta1",
                                             "v1alpha1", "vnext"}));
}

// Custom resources are JSON (and YAML) only, as kube serves them: protobuf
// alone is 406, protobuf-or-JSON answers JSON, a protobuf body is 415.
TEST(CrdTest, CustomResourcesAreNotServedAsProtobuf) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  ASSERT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 201);
  Response pb = s.Get(std::string(kWidgets) + "/a",
                      "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(pb.code, 406) << pb.body;
  EXPECT_EQ(pb.Str({"message"}),
            "only the following media types are accepted: application/json, "
            "application/yaml");
  Response either = s.Get(std::string(kWidgets) + "/a",
                          "application/vnd.kubernetes.protobuf, "
                          "application/json");
  EXPECT_EQ(either.code, 200) << either.body;
  EXPECT_EQ(either.headers.Get("Content-Type"), "application/json");
  Response body =
      s.Do("POST", kWidgets, "\x6b\x38\x73\x00",
           {{"Content-Type", "application/vnd.kubernetes.protobuf"}});
  EXPECT_EQ(body.code, 415) << body.body;
  EXPECT_EQ(body.Str({"message"}),
            "the body of the request was in an unknown format - accepted "
            "media types include: application/json, application/yaml");
  // Built-in resources still speak protobuf.
  EXPECT_EQ(
      s.Get("/api/v1/namespaces/default", "application/vnd.kubernetes.protobuf")
          .headers.Get("Content-Type"),
      "application/vnd.kubernetes.protobuf");
}

// The names a CRD holds stay with it (kube's naming controller): a newer
// CRD of the same group naming one of them (its plural, singular or short
// names among resources, its kind or listKind among kinds) gets
// NamesAccepted False with the conflict's reason and is not served, and
// the established one keeps serving its objects. A newer CRD of the same
// kind used to take the kind over (the established resource went 404);
// the other names were not checked.
TEST(CrdTest, AcceptedNamesStayWithTheirCrd) {
  TestServer s;
  // `names` is the JSON members of spec.names after plural.
  auto crd = [](const std::string& plural, const std::string& names) {
    return R"({"apiVersion":"apiextensions.k8s.io/v1",
      "kind":"CustomResourceDefinition","metadata":{"name":")" +
           plural + R"(.example.org"},"spec":{"group":"example.org",
      "scope":"Namespaced","names":{"plural":")" +
           plural + "\"," + names + R"(},"versions":[{"name":"v1",
      "served":true,"storage":true,"schema":{"openAPIV3Schema":{
      "type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})";
  };
  // Holds zoos, foo (singular), zz (short name), Foo and FooList.
  CreateAndAwaitEstablished(s,
                            crd("zoos", R"("kind":"Foo","shortNames":["zz"])"),
                            "zoos.example.org");
  const char* zoos = "/apis/example.org/v1/namespaces/default/zoos";
  ASSERT_EQ(s.Post(zoos, R"({"apiVersion":"example.org/v1","kind":"Foo",)"
                         R"("metadata":{"name":"z"}})")
                .code,
            201);
  struct Case {
    std::string plural, names, reason, message;
  };
  const std::vector<Case> cases = {
      // (with its default listKind FooList, the last conflict kube reports
      // would be ListKindConflict)
      {"apples", R"("kind":"Foo","listKind":"Apples")", "KindConflict",
       R"("Foo" is already in use)"},
      {"foo", R"("kind":"Fox")", "PluralConflict",
       R"("foo" is already in use)"},
      {"dogs", R"("kind":"Dog","singular":"zoos")", "SingularConflict",
       R"("zoos" is already in use)"},
      {"cats", R"("kind":"Cat","shortNames":["c","zz"])", "ShortNamesConflict",
       R"("zz" is already in use)"},
      {"eggs", R"("kind":"Egg","listKind":"FooList")", "ListKindConflict",
       R"("FooList" is already in use)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.plural);
    const std::string name = c.plural + ".example.org";
    auto w = s.Watch(std::string(kCrds) +
                     "?watch=1&fieldSelector=metadata.name%3D" + name);
    ASSERT_EQ(s.Post(kCrds, crd(c.plural, c.names)).code, 201);
    std::string reason, message;
    while (reason.empty()) {
      rapidjson::Document e = w->NextJson();
      ASSERT_TRUE(e.IsObject()) << "no NamesAccepted condition on " << name;
      const rapidjson::Value& o = e["object"];
      if (!o.HasMember("status") || !o["status"].HasMember("conditions")) {
        continue;
      }
      for (const rapidjson::Value& cond :
           o["status"]["conditions"].GetArray()) {
        if (std::string(cond["type"].GetString()) == "NamesAccepted") {
          EXPECT_STREQ(cond["status"].GetString(), "False");
          reason = cond["reason"].GetString();
          message = cond["message"].GetString();
        }
      }
    }
    EXPECT_EQ(reason, c.reason);
    EXPECT_EQ(message, c.message);
    EXPECT_EQ(s.Get("/apis/example.org/v1/namespaces/default/" + c.plural).code,
              404);
  }
  Response listed = s.Get(zoos);
  ASSERT_EQ(listed.code, 200) << listed.body;
  EXPECT_EQ(listed.json["items"].Size(), 1u);
}

TEST(CrdTest, StatusSubresourceSplitsSpecAndStatus) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  std::string w = Widget("a", 1);
  w.insert(w.size() - 1, R"(,"status":{"ready":true})");
  Response c = s.Post(kWidgets, w);
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_EQ(c.At({"status"}), nullptr) << c.body;  // dropped on create
  EXPECT_EQ((*c.At({"metadata", "generation"})).GetInt(), 1);

  Response st = s.Patch(std::string(kWidgets) + "/a/status",
                        R"({"status":{"ready":true},"spec":{"size":9}})",
                        "application/merge-patch+json");
  ASSERT_EQ(st.code, 200) << st.body;
  EXPECT_TRUE((*st.At({"status", "ready"})).GetBool());
  EXPECT_EQ((*st.At({"spec", "size"})).GetInt(), 1);  // spec kept
  EXPECT_EQ((*st.At({"metadata", "generation"})).GetInt(), 1);

  Response mp = s.Patch(std::string(kWidgets) + "/a",
                        R"({"status":{"ready":false},"spec":{"size":2}})",
                        "application/merge-patch+json");
  ASSERT_EQ(mp.code, 200) << mp.body;
  EXPECT_TRUE((*mp.At({"status", "ready"})).GetBool());  // status kept
  EXPECT_EQ((*mp.At({"spec", "size"})).GetInt(), 2);
  EXPECT_EQ((*mp.At({"metadata", "generation"})).GetInt(), 2);
}

TEST(CrdTest, InvalidCrdsAreRefusedWithKubesMessages) {
  TestServer s;
  std::string crd = WidgetCrd();
  crd.replace(crd.find("widgets.example.com"), 19, "things.example.com");
  Response r = s.Post(kCrds, crd);
  EXPECT_EQ(r.code, 422) << r.body;
  EXPECT_EQ(r.Str({"message"}),
            "CustomResourceDefinition.apiextensions.k8s.io "
            "\"things.example.com\" is invalid: metadata.name: Invalid "
            "value: \"things.example.com\": must be "
            "spec.names.plural+\".\"+spec.group");

  crd = WidgetCrd();
  crd.replace(crd.find("\"storage\":false"), 15, "\"storage\":true");
  r = s.Post(kCrds, crd);
  EXPECT_EQ(r.code, 422) << r.body;
  EXPECT_NE(
      r.Str({"message"})
          .find("spec.versions: Invalid value: []string{\"v1\", \"v1beta1\"}: "
                "must have exactly one version marked as storage version"),
      std::string::npos)
      << r.Str({"message"});

  r = s.Post(kCrds, R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":"xs.example"},
    "spec":{"group":"example","names":{"plural":"xs","kind":"X"},
    "scope":"Galaxy","versions":[{"name":"v1","served":true,"storage":true}]}})");
  EXPECT_EQ(r.code, 422) << r.body;
  const std::string m = r.Str({"message"});
  EXPECT_NE(m.find("spec.group: Invalid value: \"example\": should be a "
                   "domain with at least one dot"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.scope: Unsupported value: \"Galaxy\": supported "
                   "values: \"Cluster\", \"Namespaced\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.versions[0].schema.openAPIV3Schema: Required "
                   "value: schemas are required"),
            std::string::npos)
      << m;
}

// Names and settings this server cannot honour are refused: a resource
// it serves itself (its store keys are the custom resources' too), a
// Kubernetes group without the approval annotation, conversion webhooks,
// scale paths outside .spec/.status, keys listed twice.
TEST(CrdTest, CrdsThatCannotBeServedSafelyAreRefused) {
  TestServer s;
  auto crd = [](const std::string& group, const std::string& plural,
                const std::string& extra_spec, const std::string& version_extra,
                const std::string& schema_props = "") {
    return R"({"apiVersion":"apiextensions.k8s.io/v1",
      "kind":"CustomResourceDefinition","metadata":{"name":")" +
           plural + "." + group + R"("},"spec":{"group":")" + group +
           R"(","scope":"Cluster","names":{"plural":")" + plural +
           R"(","kind":"Thing"})" + extra_spec +
           R"(,"versions":[{"name":"v1","served":true,"storage":true)" +
           version_extra +
           R"(,"schema":{"openAPIV3Schema":{"type":"object",
           "x-kubernetes-preserve-unknown-fields":true)" +
           schema_props + "}}}]}}";
  };
  auto message = [&](const std::string& body) {
    Response r = s.Post(kCrds, body);
    EXPECT_EQ(r.code, 422) << r.body;
    return r.Str({"message"});
  };
  using ::testing::HasSubstr;
  EXPECT_THAT(
      message(crd("apiextensions.k8s.io", "customresourcedefinitions", "", "")),
      HasSubstr("spec.names.plural: Invalid value: "
                "\"customresourcedefinitions\": is a resource the API server "
                "serves itself"));
  EXPECT_THAT(message(crd("apps", "deployments", "", "")),
              HasSubstr("is a resource the API server serves itself"));
  EXPECT_THAT(message(crd("widgets.k8s.io", "gears", "", "")),
              HasSubstr("metadata.annotations[api-approved.kubernetes.io]: "
                        "Required value: protected groups must have approval "
                        "annotation"));
  EXPECT_THAT(
      message(crd("example.com", "gears",
                  R"(,"conversion":{"strategy":"Webhook"})", "")),
      HasSubstr("spec.conversion.strategy: Invalid value: \"Webhook\": "
                "conversion webhooks are not supported by this server"));
  EXPECT_THAT(message(crd("example.com", "gears",
                          R"(,"conversion":{"strategy":"Magic"})", "")),
              HasSubstr("spec.conversion.strategy: Unsupported value"));
  EXPECT_THAT(
      message(crd("example.com", "gears", "",
                  R"(,"subresources":{"scale":{"specReplicasPath":
                  ".status.replicas","statusReplicasPath":".status.n"}})")),
      HasSubstr("spec.versions[0].subresources.scale.specReplicasPath: "
                "Invalid value: \".status.replicas\": should be a json path "
                "under .spec of field names only"));
  EXPECT_THAT(message(crd("example.com", "gears", "",
                          R"(,"subresources":{"scale":{"specReplicasPath":
                  ".spec.r[0]","statusReplicasPath":".status.n"}})")),
              HasSubstr("specReplicasPath: Invalid value: \".spec.r[0]\""));
  EXPECT_THAT(message(crd("example.com", "gears", "", "",
                          R"(,"properties":{"items":{"type":"array",
                  "x-kubernetes-list-type":"map",
                  "x-kubernetes-list-map-keys":["k","k"],
                  "items":{"type":"object","required":["k","k"],
                  "properties":{"k":{"type":"string"}}}}})")),
              ::testing::AllOf(
                  HasSubstr("x-kubernetes-list-map-keys[1]: Duplicate value: "
                            "\"k\""),
                  HasSubstr("required[1]: Duplicate value: \"k\"")));
  // The annotated protected group and good scale paths are fine.
  Response ok = s.Post(
      kCrds,
      crd("example.com", "gears", "",
          R"(,"subresources":{"scale":{"specReplicasPath":".spec.replicas",
          "statusReplicasPath":".status.replicas",
          "labelSelectorPath":".status.selector"}})"));
  EXPECT_EQ(ok.code, 201) << ok.body;
  std::string approved = crd("widgets.k8s.io", "gears", "", "");
  approved.replace(approved.find(R"("name":"gears.widgets.k8s.io")"),
                   std::string(R"("name":"gears.widgets.k8s.io")").size(),
                   R"("name":"gears.widgets.k8s.io","annotations":)"
                   R"({"api-approved.kubernetes.io":"unapproved, testing"})");
  Response approved_r = s.Post(kCrds, approved);
  EXPECT_EQ(approved_r.code, 201) << approved_r.body;
}

// A Gizmo's schema: spec.size an integer 1..10 (required), spec.tags a set;
// with `color_default`, spec.color defaults to red.
std::string GizmoCrd(bool color_default, const std::string& rv = "") {
  const std::string color =
      color_default ? R"(,"color":{"type":"string","default":"red"})" : "";
  return R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":"gizmos.example.com")" +
         (rv.empty() ? "" : R"(,"resourceVersion":")" + rv + "\"") +
         R"(},"spec":{"group":"example.com","scope":"Namespaced",
    "names":{"plural":"gizmos","kind":"Gizmo"},
    "versions":[{"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
      "spec":{"type":"object","required":["size"],"properties":{
        "size":{"type":"integer","minimum":1,"maximum":10},
        "tags":{"type":"array","items":{"type":"string"},
                "x-kubernetes-list-type":"set"})" +
         color + "}}}}}}]}}";
}

constexpr char kGizmos[] = "/apis/example.com/v1/namespaces/default/gizmos";

std::string Gizmo(const std::string& name, const std::string& spec) {
  return R"({"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":")" +
         name + R"("},"spec":)" + spec + "}";
}

TEST(CrdTest, SchemaValidatesPrunesAndDefaults) {
  TestServer s;
  CreateAndAwaitEstablished(s, GizmoCrd(false), "gizmos.example.com");

  // Invalid: 422 with kube's message and causes.
  Response bad =
      s.Post(kGizmos, Gizmo("g0", R"({"size":11,"tags":["a","a"]})"));
  EXPECT_EQ(bad.code, 422) << bad.body;
  EXPECT_EQ(bad.Str({"message"}),
            "Gizmo.example.com \"g0\" is invalid: [spec.size: Invalid value: "
            "11: spec.size in body should be less than or equal to 10, "
            "spec.tags[1]: Duplicate value: \"a\"]");
  const rapidjson::Value* causes = bad.At({"details", "causes"});
  ASSERT_TRUE(causes != nullptr && causes->IsArray() && causes->Size() == 2)
      << bad.body;
  EXPECT_EQ(std::string((*causes)[0]["field"].GetString()), "spec.size");
  EXPECT_EQ(std::string((*causes)[1]["reason"].GetString()),
            "FieldValueDuplicate");
  Response missing = s.Post(kGizmos, Gizmo("g0", "{}"));
  EXPECT_EQ(missing.code, 422) << missing.body;
  EXPECT_EQ(missing.Str({"message"}),
            "Gizmo.example.com \"g0\" is invalid: spec.size: Required value");

  // Unknown fields: Strict refuses, Warn warns, Ignore prunes quietly.
  const std::string extra = Gizmo("g1", R"({"size":1,"bogus":true})");
  Response strict =
      s.Post(std::string(kGizmos) + "?fieldValidation=Strict", extra);
  EXPECT_EQ(strict.code, 400) << strict.body;
  EXPECT_EQ(strict.Str({"message"}),
            "strict decoding error: unknown field \"spec.bogus\"");
  Response warn = s.Post(std::string(kGizmos) + "?fieldValidation=Warn", extra);
  EXPECT_EQ(warn.code, 201) << warn.body;
  EXPECT_EQ(warn.headers.Get("Warning"),
            "299 - \"unknown field \\\"spec.bogus\\\"\"");
  EXPECT_EQ(warn.body.find("bogus"), std::string::npos) << warn.body;
  Response ignored = s.Post(std::string(kGizmos) + "?fieldValidation=Ignore",
                            Gizmo("g2", R"({"size":2,"junk":1})"));
  EXPECT_EQ(ignored.code, 201) << ignored.body;
  EXPECT_FALSE(ignored.headers.Has("Warning"));
  EXPECT_EQ(s.Get(std::string(kGizmos) + "/g2").body.find("junk"),
            std::string::npos);
  // Patches are pruned and validated too.
  Response patched =
      s.Patch(std::string(kGizmos) + "/g2?fieldValidation=Strict",
              R"({"spec":{"more":1}})", "application/merge-patch+json");
  EXPECT_EQ(patched.code, 400) << patched.body;
  patched = s.Patch(std::string(kGizmos) + "/g2", R"({"spec":{"size":0}})",
                    "application/merge-patch+json");
  EXPECT_EQ(patched.code, 422) << patched.body;

  // A default added to the schema applies on read to what is stored.
  Response crd = s.Get(std::string(kCrds) + "/gizmos.example.com");
  ASSERT_EQ(crd.code, 200);
  Response put =
      s.Put(std::string(kCrds) + "/gizmos.example.com",
            GizmoCrd(true, crd.Str({"metadata", "resourceVersion"})));
  ASSERT_EQ(put.code, 200) << put.body;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  Response g2 = s.Get(std::string(kGizmos) + "/g2");
  while (g2.Str({"spec", "color"}).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
    g2 = s.Get(std::string(kGizmos) + "/g2");
  }
  EXPECT_EQ(g2.Str({"spec", "color"}), "red") << g2.body;
  // ... and on write.
  Response g3 = s.Post(kGizmos, Gizmo("g3", R"({"size":3})"));
  EXPECT_EQ(g3.code, 201) << g3.body;
  EXPECT_EQ(g3.Str({"spec", "color"}), "red") << g3.body;
}

TEST(CrdTest, DeletingTheCrdDeletesItsObjects) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  ASSERT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 201);
  ASSERT_EQ(s.Post(kWidgets, Widget("b", 2)).code, 201);
  ASSERT_TRUE(DeleteAndAwaitGone(s, "widgets.example.com"))
      << "the CRD was not deleted";
  EXPECT_EQ(s.Get(kWidgets).code, 404);
  EXPECT_EQ(s.Get("/apis/example.com/v1").code, 404);

  // Created again, it serves an empty collection: the objects went.
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  Response l = s.Get(kWidgets);
  ASSERT_EQ(l.code, 200) << l.body;
  EXPECT_EQ(l.json["items"].Size(), 0u) << l.body;
}

// A CRD that serves no version still has objects stored; deleting it
// deletes them (kube's finalizer builds storage for the storage version
// whether or not it is served), so they do not come back with a new CRD.
TEST(CrdTest, DeletingACrdThatServesNothingDeletesItsObjects) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  ASSERT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 201);
  const std::string crd = std::string(kCrds) + "/widgets.example.com";
  Response unserved = s.Patch(
      crd,
      R"([{"op":"replace","path":"/spec/versions/0/served","value":false},)"
      R"({"op":"replace","path":"/spec/versions/1/served","value":false}])",
      "application/json-patch+json");
  ASSERT_EQ(unserved.code, 200) << unserved.body;
  ASSERT_TRUE(DeleteAndAwaitGone(s, "widgets.example.com"))
      << "the CRD was not deleted";
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  Response l = s.Get(kWidgets);
  ASSERT_EQ(l.code, 200) << l.body;
  EXPECT_EQ(l.json["items"].Size(), 0u) << l.body;
}

TEST(CrdTest, CreateIsRefusedWhileTheCrdIsTerminating) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  // A finalizer on the widget keeps the CRD terminating.
  const std::string held =
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{)"
      R"("name":"held","finalizers":["example.com/hold"]},"spec":{}})";
  ASSERT_EQ(s.Post(kWidgets, held).code, 201);
  auto w = s.Watch(std::string(kWidgets) + "?watch=1");
  ASSERT_EQ(s.Delete(std::string(kCrds) + "/widgets.example.com").code, 200);
  // The apiserver deletes the widgets once it sees the CRD terminating.
  bool deleting = false;
  while (!deleting) {
    rapidjson::Document e = w->NextJson();
    if (!e.IsObject()) break;
    deleting = e["object"]["metadata"].HasMember("deletionTimestamp");
  }
  ASSERT_TRUE(deleting) << "the widget was not deleted";

  Response c = s.Post(kWidgets, Widget("late", 1));
  EXPECT_EQ(c.code, 405) << c.body;
  EXPECT_EQ(c.Str({"reason"}), "MethodNotAllowed");
  EXPECT_EQ(c.Str({"message"}),
            "create not allowed while custom resource definition is "
            "terminating");
  EXPECT_EQ(c.Str({"details", "group"}), "example.com");
  EXPECT_EQ(c.Str({"details", "kind"}), "widgets");
  // Other verbs still work: the finalizer can be removed.
  EXPECT_EQ(s.Get(std::string(kWidgets) + "/held").code, 200);
  Response p = s.Patch(std::string(kWidgets) + "/held",
                       R"({"metadata":{"finalizers":null}})",
                       "application/merge-patch+json");
  EXPECT_EQ(p.code, 200) << p.body;
}

// A CRD with a structural schema: nullable, int-or-string, an embedded
// resource, a required nullable field and a preserve-unknown-fields map.
constexpr char kSchemaCrd[] = R"({"apiVersion":"apiextensions.k8s.io/v1",
  "kind":"CustomResourceDefinition","metadata":{"name":"gizmos.example.io"},
  "spec":{"group":"example.io","scope":"Namespaced",
    "names":{"plural":"gizmos","kind":"Gizmo"},
    "versions":[{"name":"v1","served":true,"storage":true,
      "subresources":{"status":{}},
      "schema":{"openAPIV3Schema":{"type":"object",
        "description":"A Gizmo does things.",
        "properties":{
          "spec":{"type":"object","required":["size","note"],
            "properties":{
              "size":{"type":"integer","description":"How big."},
              "port":{"x-kubernetes-int-or-string":true},
              "note":{"type":"string","nullable":true},
              "template":{"type":"object",
                "x-kubernetes-embedded-resource":true,
                "x-kubernetes-preserve-unknown-fields":true},
              "extra":{"type":"object",
                "x-kubernetes-preserve-unknown-fields":true,
                "properties":{"a":{"type":"string"}}},
              "choice":{"type":"string","anyOf":[{"enum":["a"]},{"enum":["b"]}]}}},
          "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}}]}})";

const rapidjson::Value* Path(const rapidjson::Value& v,
                             std::initializer_list<const char*> keys) {
  const rapidjson::Value* cur = &v;
  for (const char* k : keys) {
    if (!cur->IsObject() || !cur->HasMember(k)) return nullptr;
    cur = &(*cur)[k];
  }
  return cur;
}

std::string HeaderOf(const Response& r, std::string_view name) {
  return std::string(r.headers.Get(name));
}

TEST(CrdTest, SchemasArePublishedInBothOpenApiDocuments) {
  TestServer s;
  Response v2_before = s.Get("/openapi/v2");
  ASSERT_EQ(v2_before.code, 200);
  Response index_before = s.Get("/openapi/v3");
  Response apps_before = s.Get("/openapi/v3/apis/apps/v1");
  ASSERT_EQ(s.Get("/openapi/v3/apis/example.io/v1").code, 404);
  CreateAndAwaitEstablished(s, kSchemaCrd, "gizmos.example.io");

  // /openapi/v2: the kind and list definitions and the paths.
  Response v2 = s.Get("/openapi/v2");
  ASSERT_EQ(v2.code, 200);
  ASSERT_TRUE(v2.json.IsObject()) << v2.body.substr(0, 200);
  EXPECT_NE(HeaderOf(v2, "ETag"), HeaderOf(v2_before, "ETag"));
  const rapidjson::Value& defs = v2.json["definitions"];
  ASSERT_TRUE(defs.HasMember("io.example.v1.Gizmo"));
  ASSERT_TRUE(defs.HasMember("io.example.v1.GizmoList"));
  // The built-in ones are all still there.
  EXPECT_EQ(defs.MemberCount(),
            v2_before.json["definitions"].MemberCount() + 2);
  EXPECT_TRUE(defs.HasMember("io.k8s.api.core.v1.Pod"));
  const rapidjson::Value& gizmo = defs["io.example.v1.Gizmo"];
  EXPECT_EQ(std::string(gizmo["description"].GetString()),
            "A Gizmo does things.");
  EXPECT_EQ(std::string(
                (*Path(gizmo, {"properties", "metadata", "$ref"})).GetString()),
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_EQ(
      std::string(
          (*Path(gizmo, {"properties", "apiVersion", "type"})).GetString()),
      "string");
  const rapidjson::Value& gvk = gizmo["x-kubernetes-group-version-kind"][0];
  EXPECT_EQ(std::string(gvk["group"].GetString()), "example.io");
  EXPECT_EQ(std::string(gvk["version"].GetString()), "v1");
  EXPECT_EQ(std::string(gvk["kind"].GetString()), "Gizmo");
  const rapidjson::Value& spec = *Path(gizmo, {"properties", "spec"});
  // v2: the nullable note is untyped and not required; the preserving
  // `extra` has no properties; anyOf is gone; the embedded template (which
  // preserves unknown fields) gets no metadata.
  ASSERT_TRUE(spec["required"].IsArray());
  EXPECT_EQ(spec["required"].Size(), 1u);
  EXPECT_FALSE(Path(spec, {"properties", "note", "type"}));
  EXPECT_FALSE(Path(spec, {"properties", "note", "nullable"}));
  EXPECT_FALSE(Path(spec, {"properties", "extra", "properties"}));
  EXPECT_FALSE(Path(spec, {"properties", "choice", "anyOf"}));
  EXPECT_FALSE(Path(spec, {"properties", "template", "properties"}));
  EXPECT_TRUE(Path(spec, {"properties", "size", "description"}));
  EXPECT_TRUE(v2.json["paths"].HasMember(
      "/apis/example.io/v1/namespaces/{namespace}/gizmos/{name}/status"));
  EXPECT_EQ(
      std::string((*Path(v2.json["paths"],
                         {"/apis/example.io/v1/namespaces/{namespace}/gizmos",
                          "post", "operationId"}))
                      .GetString()),
      "createExampleIoV1NamespacedGizmo");
  // The protobuf form has them as well (same bytes as a merge).
  Response proto =
      s.Get("/openapi/v2",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
  ASSERT_EQ(proto.code, 200);
  openapi::v2::Document decoded;
  ASSERT_TRUE(decoded.ParseFromString(proto.body));
  EXPECT_EQ(decoded.swagger(), "2.0");
  EXPECT_EQ(
      static_cast<size_t>(decoded.definitions().additional_properties_size()),
      defs.MemberCount());
  EXPECT_EQ(static_cast<size_t>(decoded.paths().path_size()),
            v2.json["paths"].MemberCount());
  EXPECT_EQ(decoded.definitions()
                .additional_properties(
                    decoded.definitions().additional_properties_size() - 1)
                .name(),
            "io.example.v1.GizmoList");

  // /openapi/v3: listed with its hash, served; the built-in documents are
  // unchanged.
  Response index = s.Get("/openapi/v3");
  ASSERT_EQ(index.code, 200);
  EXPECT_NE(HeaderOf(index, "ETag"), HeaderOf(index_before, "ETag"));
  const rapidjson::Value* url =
      Path(index.json, {"paths", "apis/example.io/v1", "serverRelativeURL"});
  ASSERT_NE(url, nullptr) << index.body;
  Response v3 = s.Get(url->GetString());
  ASSERT_EQ(v3.code, 200) << url->GetString();
  EXPECT_EQ(HeaderOf(v3, "Cache-Control"), "public, immutable");
  EXPECT_EQ(HeaderOf(s.Get("/openapi/v3/apis/apps/v1"), "ETag"),
            HeaderOf(apps_before, "ETag"));
  EXPECT_EQ(std::string((*Path(index.json,
                               {"paths", "apis/apps/v1", "serverRelativeURL"}))
                            .GetString()),
            std::string((*Path(index_before.json,
                               {"paths", "apis/apps/v1", "serverRelativeURL"}))
                            .GetString()));
  const rapidjson::Value& schemas = v3.json["components"]["schemas"];
  ASSERT_TRUE(schemas.HasMember("io.example.v1.Gizmo"));
  EXPECT_TRUE(
      schemas.HasMember("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
  EXPECT_TRUE(schemas.HasMember("io.k8s.apimachinery.pkg.apis.meta.v1.Status"));
  const rapidjson::Value& spec3 =
      *Path(schemas["io.example.v1.Gizmo"], {"properties", "spec"});
  // v3 keeps nullable and anyOf, and spells int-or-string out.
  EXPECT_TRUE(Path(spec3, {"properties", "note", "nullable"}));
  EXPECT_EQ(spec3["required"].Size(), 2u);
  EXPECT_TRUE(Path(spec3, {"properties", "choice", "anyOf"}));
  ASSERT_TRUE(Path(spec3, {"properties", "port", "anyOf"}));
  EXPECT_EQ((*Path(spec3, {"properties", "port", "anyOf"})).Size(), 2u);
  // The embedded resource is an object of its own.
  EXPECT_EQ(std::string((*Path(spec3, {"properties", "template", "properties",
                                       "metadata", "allOf"}))[0]["$ref"]
                            .GetString()),
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1."
            "ObjectMeta");

  // Updated: the documents follow (new ETag, the old hash redirects).
  Response p = s.Patch(
      std::string(kCrds) + "/gizmos.example.io",
      R"([{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/description","value":"Changed."}])",
      "application/json-patch+json");
  ASSERT_EQ(p.code, 200) << p.body;
  std::string changed;
  for (int i = 0; i < 500 && changed.empty(); ++i) {
    Response d = s.Get("/openapi/v3/apis/example.io/v1");
    if (d.body.find("Changed.") != std::string::npos) changed = d.body;
    // The CRD controller reacts to its watch; there is no event to await
    // from outside but the document itself.
    if (changed.empty()) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_FALSE(changed.empty()) << "the v3 document did not change";
  EXPECT_EQ(s.Get(url->GetString()).code, 301);
  EXPECT_NE(s.Get("/openapi/v2").body.find("Changed."), std::string::npos);

  // Deleted: gone from both.
  ASSERT_TRUE(DeleteAndAwaitGone(s, "gizmos.example.io"));
  // The apiserver stops serving a CRD before it releases it.
  EXPECT_EQ(s.Get("/openapi/v3/apis/example.io/v1").code, 404);
  Response v2_after = s.Get("/openapi/v2");
  EXPECT_FALSE(v2_after.json["definitions"].HasMember("io.example.v1.Gizmo"));
  EXPECT_EQ(HeaderOf(v2_after, "ETag"), HeaderOf(v2_before, "ETag"));
}

// The CustomResourceDefinition type itself is in both documents, under
// kube's names (issue 19: `kubectl explain crd.spec.versions.schema`, and
// kubectl 1.20 validating CRD manifests from /openapi/v2), before any CRD
// exists and after one is created.
TEST(CrdTest, TheCrdTypeItselfIsPublishedInBothOpenApiDocuments) {
  constexpr char kExt[] =
      "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.";
  const std::string crd_def = std::string(kExt) + "CustomResourceDefinition";
  TestServer s;
  auto check_v2 = [&](const Response& v2) {
    ASSERT_EQ(v2.code, 200);
    ASSERT_TRUE(v2.json.IsObject());
    const rapidjson::Value& defs = v2.json["definitions"];
    ASSERT_TRUE(defs.HasMember(crd_def.c_str())) << "no " << crd_def;
    const rapidjson::Value& crd = defs[crd_def.c_str()];
    EXPECT_EQ(
        std::string((*Path(crd, {"properties", "spec", "$ref"})).GetString()),
        "#/definitions/" + crd_def + "Spec");
    ASSERT_TRUE(crd["required"].IsArray());
    EXPECT_EQ(std::string(crd["required"][0].GetString()), "spec");
    const rapidjson::Value& gvk = crd["x-kubernetes-group-version-kind"][0];
    EXPECT_EQ(std::string(gvk["group"].GetString()), "apiextensions.k8s.io");
    EXPECT_EQ(std::string(gvk["kind"].GetString()), "CustomResourceDefinition");
    // What `explain crd.spec.versions.schema.openAPIV3Schema` walks.
    const std::string version_def = crd_def + "Version";
    ASSERT_TRUE(defs.HasMember(version_def.c_str()));
    EXPECT_EQ(
        std::string(
            (*Path(defs[version_def.c_str()], {"properties", "schema", "$ref"}))
                .GetString()),
        "#/definitions/" + std::string(kExt) + "CustomResourceValidation");
    EXPECT_EQ(defs[version_def.c_str()]["required"].Size(), 3u);
    const std::string props_def = std::string(kExt) + "JSONSchemaProps";
    ASSERT_TRUE(defs.HasMember(props_def.c_str()));
    EXPECT_EQ(std::string((*Path(defs[props_def.c_str()],
                                 {"properties", "properties",
                                  "additionalProperties", "$ref"}))
                              .GetString()),
              "#/definitions/" + props_def);
    // Any JSON: untyped, so clients accept every value.
    EXPECT_FALSE(Path(defs[(std::string(kExt) + "JSON").c_str()], {"type"}));
    // The paths, with kube's operationIds; PATCH without strategic merge
    // patch (kplane answers it 415 for CRDs).
    const rapidjson::Value* patch =
        Path(v2.json["paths"],
             {"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
              "patch"});
    ASSERT_NE(patch, nullptr);
    EXPECT_EQ(std::string((*patch)["operationId"].GetString()),
              "patchApiextensionsV1CustomResourceDefinition");
    for (const rapidjson::Value& ct : (*patch)["consumes"].GetArray()) {
      EXPECT_NE(std::string(ct.GetString()),
                "application/strategic-merge-patch+json");
    }
    EXPECT_TRUE(v2.json["paths"].HasMember(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}/"
        "status"));
  };
  auto check_v3 = [&] {
    Response index = s.Get("/openapi/v3");
    ASSERT_EQ(index.code, 200);
    const rapidjson::Value* url =
        Path(index.json,
             {"paths", "apis/apiextensions.k8s.io/v1", "serverRelativeURL"});
    ASSERT_NE(url, nullptr) << index.body;
    Response v3 = s.Get(url->GetString());
    ASSERT_EQ(v3.code, 200);
    const rapidjson::Value& schemas = v3.json["components"]["schemas"];
    ASSERT_TRUE(schemas.HasMember(crd_def.c_str()));
    EXPECT_TRUE(
        schemas.HasMember((std::string(kExt) + "JSONSchemaProps").c_str()));
    EXPECT_TRUE(
        schemas.HasMember("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    EXPECT_TRUE(v3.json["paths"].HasMember(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"));
  };
  ASSERT_NO_FATAL_FAILURE(check_v2(s.Get("/openapi/v2")));
  ASSERT_NO_FATAL_FAILURE(check_v3());
  // kubectl reads the protobuf form.
  Response proto =
      s.Get("/openapi/v2",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
  ASSERT_EQ(proto.code, 200);
  openapi::v2::Document decoded;
  ASSERT_TRUE(decoded.ParseFromString(proto.body));
  bool found = false;
  for (const auto& d : decoded.definitions().additional_properties()) {
    found = found || d.name() == crd_def;
  }
  EXPECT_TRUE(found);

  // With a CRD served, the documents built from the built-in ones keep it.
  CreateAndAwaitEstablished(s, kSchemaCrd, "gizmos.example.io");
  Response v2 = s.Get("/openapi/v2");
  ASSERT_TRUE(v2.json.IsObject());
  ASSERT_TRUE(v2.json["definitions"].HasMember("io.example.v1.Gizmo"));
  ASSERT_NO_FATAL_FAILURE(check_v2(v2));
  ASSERT_NO_FATAL_FAILURE(check_v3());
}

// A CRD's own unknown fields, as kube's typed decoding of CRDs treats them
// (kubectl 1.27+ sends fieldValidation=Strict; 1.20 refuses them on the
// client from the definitions above): Strict refuses with every path,
// Warn stores the CRD without them, nested schemas (items included) are
// checked, and schema values (default, enum, properties' names) are not.
TEST(CrdTest, UnknownFieldsOfACrdAreRefusedOrDroppedAsKubeDecodes) {
  TestServer s;
  auto crd = [](const std::string& name, const std::string& spec_extra,
                const std::string& version_extra,
                const std::string& list_items) {
    return R"({"apiVersion":"apiextensions.k8s.io/v1",
      "kind":"CustomResourceDefinition","metadata":{"name":")" +
           name + R"(.example.org"},
      "spec":{"group":"example.org","scope":"Namespaced",)" +
           spec_extra + R"(
        "names":{"plural":")" +
           name + R"(","kind":"K)" + name + R"("},
        "versions":[{"name":"v1","served":true,"storage":true,)" +
           version_extra + R"(
          "schema":{"openAPIV3Schema":{"type":"object","properties":{
            "spec":{"type":"object","properties":{
              "bogus":{"type":"string","default":"x","enum":["x","y"]},
              "list":{"type":"array","items":)" +
           list_items + R"(}}}}}}}]}})";
  };
  // Strict: 400 with kube's message, every path, nothing stored.
  Response strict =
      s.Post(std::string(kCrds) + "?fieldValidation=Strict",
             crd("things", R"("scopee":"Namespaced",)", R"("servedd":true,)",
                 R"({"type":"integer","typo":1})"));
  EXPECT_EQ(strict.code, 400) << strict.body;
  EXPECT_EQ(strict.Str({"message"}),
            "strict decoding error: unknown field \"spec.scopee\", unknown "
            "field \"spec.versions[0].servedd\", unknown field "
            "\"spec.versions[0].schema.openAPIV3Schema.properties.spec."
            "properties.list.items.typo\"");
  EXPECT_EQ(s.Get(std::string(kCrds) + "/things.example.org").code, 404);

  // Warn: stored without them, one warning each.
  Response warn = s.Post(
      std::string(kCrds) + "?fieldValidation=Warn",
      crd("things", R"("scopee":"Namespaced",)", "", R"({"type":"integer"})"));
  EXPECT_EQ(warn.code, 201) << warn.body;
  EXPECT_EQ(warn.headers.Get("Warning"),
            "299 - \"unknown field \\\"spec.scopee\\\"\"");
  Response stored = s.Get(std::string(kCrds) + "/things.example.org");
  EXPECT_EQ(stored.body.find("scopee"), std::string::npos) << stored.body;
  // The schema's own content is kept: a property named like nothing
  // apiextensions knows, its default and enum.
  ASSERT_TRUE(stored.json.IsObject()) << stored.body;
  const rapidjson::Value* bogus =
      Path(stored.json["spec"]["versions"][0],
           {"schema", "openAPIV3Schema", "properties", "spec", "properties",
            "bogus", "default"});
  ASSERT_NE(bogus, nullptr) << stored.body;
  EXPECT_EQ(std::string(bogus->GetString()), "x");

  // A valid CRD is not touched: no warning.
  Response clean = s.Post(std::string(kCrds) + "?fieldValidation=Strict",
                          crd("others", "", "", R"({"type":"integer"})"));
  EXPECT_EQ(clean.code, 201) << clean.body;
  EXPECT_FALSE(clean.headers.Has("Warning"));
}

TEST(CrdTest, RbacAuthorizesCustomResourcesLikeAnyResource) {
  char tmpl[] = "/tmp/kplane-crd-rbac-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/tokens.csv")
      << "admin-token,admin,1,\"system:masters\"\nbob-token,bob,2\n";
  {
    TestServer s([&](ApiServerOptions* o) {
      o->auth.enabled = true;
      o->auth.token_auth_file = dir + "/tokens.csv";
    });
    const net::HttpHeaders admin{{"Authorization", "Bearer admin-token"},
                                 {"Content-Type", "application/json"}};
    const net::HttpHeaders bob{{"Authorization", "Bearer bob-token"},
                               {"Content-Type", "application/json"}};
    CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com", admin);
    ASSERT_EQ(s.Do("POST", kWidgets, Widget("a", 1), admin).code, 201);
    Response denied = s.Do("GET", kWidgets, {}, bob);
    EXPECT_EQ(denied.code, 403) << denied.body;

    ASSERT_EQ(s.Do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                   R"({"metadata":{"name":"widget-viewer"},"rules":[
                       {"apiGroups":["example.com"],"resources":["widgets"],
                        "verbs":["get","list","watch"]}]})",
                   admin)
                  .code,
              201);
    ASSERT_EQ(
        s.Do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
             R"({"metadata":{"name":"bob-widgets"},
                 "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                            "kind":"ClusterRole","name":"widget-viewer"},
                 "subjects":[{"kind":"User","name":"bob"}]})",
             admin)
            .code,
        201);
    // The binding takes effect when its watch event reaches the policy
    // cache, within moments.
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    Response list = s.Do("GET", kWidgets, {}, bob);
    while (list.code != 200 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
      list = s.Do("GET", kWidgets, {}, bob);
    }
    EXPECT_EQ(list.code, 200) << list.body;
    Response create = s.Do("POST", kWidgets, Widget("b", 1), bob);
    EXPECT_EQ(create.code, 403);
    EXPECT_EQ(create.Str({"message"}),
              "widgets.example.com is forbidden: User \"bob\" cannot create "
              "resource \"widgets\" in API group \"example.com\" in the "
              "namespace \"default\"");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// A Thing CRD (cluster-scoped, no subresources): v1 with `columns` as its
// additionalPrinterColumns (JSON array, or "" for none), v1beta1 without.
std::string ThingCrd(const std::string& columns) {
  const std::string schema = R"("schema":{"openAPIV3Schema":{"type":"object",)"
                             R"("x-kubernetes-preserve-unknown-fields":true}})";
  return R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
    "spec":{"group":"example.com","scope":"Cluster",
    "names":{"plural":"things","kind":"Thing"},
    "versions":[{"name":"v1","served":true,"storage":true,)" +
         schema +
         (columns.empty() ? "" : ",\"additionalPrinterColumns\":" + columns) +
         R"(},{"name":"v1beta1","served":true,"storage":false,)" + schema +
         "}]}}";
}

// A row's cells as JSON ("null" for a null cell).
std::string Cells(const rapidjson::Value& row) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  row["cells"].Accept(w);
  return buf.GetString();
}

// kube's tableconvertor: a date cell is the age of the time (kubectl's
// AGE, also the default column), "<unknown>" for the zero time,
// "<invalid>" when it does not parse; a cell whose value is not of the
// column's type is null; the path is client-go's JSONPath (filters
// included), its first result printed.
TEST(CrdTest, PrinterColumnsAreConvertedLikeKube) {
  SkewedClock clock;
  TestServer s([&](ApiServerOptions* o) { o->clock = &clock; });
  CreateAndAwaitEstablished(
      s,
      ThingCrd(
          R"([{"name":"Ready","type":"string",)"
          R"("jsonPath":".status.conditions[?(@.type==\"Ready\")].status"},)"
          R"({"name":"Count","type":"integer","jsonPath":".spec.count"},)"
          R"({"name":"Seen","type":"date","jsonPath":".spec.seen"},)"
          R"({"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])"),
      "things.example.com");
  constexpr char kThings[] = "/apis/example.com/v1/things";
  Response c = s.Post(kThings, R"({"apiVersion":"example.com/v1",
      "kind":"Thing","metadata":{"name":"a"},
      "spec":{"count":"three","seen":"yesterday"},
      "status":{"conditions":[{"type":"Synced","status":"False"},
                              {"type":"Ready","status":"True"}]}})");
  ASSERT_EQ(c.code, 201) << c.body;
  c = s.Post(kThings, R"({"apiVersion":"example.com/v1","kind":"Thing",
      "metadata":{"name":"b"},
      "spec":{"count":3,"seen":"0001-01-01T00:00:00Z"}})");
  ASSERT_EQ(c.code, 201) << c.body;
  // Two hours on (whole minutes whatever second the objects were made in).
  clock.Skip(hours(2));

  constexpr char kTable[] = "application/json;as=Table;v=v1;g=meta.k8s.io";
  Response t = s.Get(kThings, kTable);
  ASSERT_EQ(t.code, 200) << t.body;
  ASSERT_EQ(t.json["rows"].Size(), 2u) << t.body;
  EXPECT_EQ(Cells(t.json["rows"][0]),
            R"(["a","True",null,"<invalid>","120m"])");
  EXPECT_EQ(Cells(t.json["rows"][1]), R"(["b",null,3,"<unknown>","120m"])");

  // v1beta1 declares no columns: kube's default Age, a date column too.
  t = s.Get("/apis/example.com/v1beta1/things", kTable);
  ASSERT_EQ(t.code, 200) << t.body;
  ASSERT_EQ(t.json["columnDefinitions"].Size(), 2u) << t.body;
  EXPECT_EQ(std::string(t.json["columnDefinitions"][1]["type"].GetString()),
            "date");
  EXPECT_EQ(Cells(t.json["rows"][0]), R"(["a","120m"])");
}

// ValidateCustomResourceColumnDefinition, at kube's paths: columns equal in
// every version are validated once as spec.additionalPrinterColumns (kube
// folds them to the top level), others per version.
TEST(CrdTest, PrinterColumnsAreValidated) {
  TestServer s;
  auto causes = [&](const std::string& crd) {
    Response r = s.Post(kCrds, crd);
    EXPECT_EQ(r.code, 422) << r.body;
    std::vector<std::string> out;
    const rapidjson::Value* cs = r.At({"details", "causes"});
    if (cs == nullptr || !cs->IsArray()) return out;
    for (const rapidjson::Value& c : cs->GetArray()) {
      out.push_back(std::string(c["field"].GetString()) + " " +
                    c["reason"].GetString() + " " + c["message"].GetString());
    }
    return out;
  };
  const std::string bad =
      R"([{"name":"","type":"float","format":"hex","jsonPath":"spec.x"},)"
      R"({"name":"B","jsonPath":""},{"name":"C","type":"date",)"
      R"("format":"date-time","jsonPath":".metadata.creationTimestamp"}])";
  const std::string p = "spec.versions[0].additionalPrinterColumns";
  EXPECT_THAT(
      causes(ThingCrd(bad)),
      ::testing::ElementsAre(
          p + "[0].name FieldValueRequired Required value",
          p + "[0].type FieldValueInvalid Invalid value: \"float\": must be "
              "one of boolean,date,integer,number,string",
          p + "[0].format FieldValueInvalid Invalid value: \"hex\": must be "
              "one of byte,date,date-time,double,float,int32,int64,password",
          p + "[0].JSONPath FieldValueInvalid Invalid value: \"spec.x\": "
              "must be a simple json path starting with .",
          p + "[1].type FieldValueRequired Required value: must be one of "
              "boolean,date,integer,number,string",
          p + "[1].JSONPath FieldValueRequired Required value"));

  // The same columns in both versions: once, at the top level.
  std::string both = ThingCrd(bad);
  both.replace(both.rfind("}]}}"), 4,
               ",\"additionalPrinterColumns\":" + bad + "}]}}");
  std::vector<std::string> got = causes(both);
  ASSERT_EQ(got.size(), 6u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0],
            "spec.additionalPrinterColumns[0].name "
            "FieldValueRequired Required value");
  EXPECT_EQ(got[5],
            "spec.additionalPrinterColumns[1].JSONPath "
            "FieldValueRequired Required value");
}

// `v` with every object's members in reverse order: the same value to
// kube (apiequality.Semantic.DeepEqual ignores member order), other text.
rapidjson::Value Reversed(const rapidjson::Value& v,
                          rapidjson::Document::AllocatorType& a) {
  if (v.IsObject()) {
    rapidjson::Value out(rapidjson::kObjectType);
    for (auto m = v.MemberEnd(); m != v.MemberBegin();) {
      --m;
      out.AddMember(rapidjson::Value(m->name, a), Reversed(m->value, a), a);
    }
    return out;
  }
  if (v.IsArray()) {
    rapidjson::Value out(rapidjson::kArrayType);
    for (const rapidjson::Value& e : v.GetArray()) {
      out.PushBack(Reversed(e, a), a);
    }
    return out;
  }
  return rapidjson::Value(v, a);
}

// `object` (a GET's body) with its members reversed and the label
// edited=yes: what `kubectl get -o yaml | edit a label | kubectl replace`
// sends back (kubectl sorts the members it writes).
std::string ReorderedWithLabel(const rapidjson::Value& object) {
  rapidjson::Document d;
  rapidjson::Value r = Reversed(object, d.GetAllocator());
  static_cast<rapidjson::Value&>(d) = std::move(r);
  auto& a = d.GetAllocator();
  rapidjson::Value& meta = d["metadata"];
  if (!meta.HasMember("labels")) {
    meta.AddMember("labels", rapidjson::Value(rapidjson::kObjectType), a);
  }
  meta["labels"].AddMember("edited", "yes", a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

// A replace that changes only the order of members and the labels leaves a
// custom resource's spec as it was: its generation stays.
TEST(CrdTest, ReorderedMembersAreNoChangeToACustomResourcesGeneration) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  Response c = s.Post(
      kWidgets,
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},)"
      R"("spec":{"size":1,"color":"blue","nested":{"x":1,"y":[{"p":1,"q":2}]}}})");
  ASSERT_EQ(c.code, 201) << c.body;
  ASSERT_EQ((*c.At({"metadata", "generation"})).GetInt(), 1);
  const std::string body = ReorderedWithLabel(c.json);
  ASSERT_NE(body.find(R"("nested":{"y":[{"q":2,"p":1}],"x":1})"),
            std::string::npos)
      << body;
  Response u = s.Put(std::string(kWidgets) + "/a", body);
  ASSERT_EQ(u.code, 200) << u.body;
  EXPECT_EQ(u.Str({"metadata", "labels", "edited"}), "yes");
  EXPECT_EQ((*u.At({"metadata", "generation"})).GetInt(), 1) << u.body;
  // A change of the spec still counts.
  Response p = s.Patch(std::string(kWidgets) + "/a", R"({"spec":{"size":2}})",
                       "application/merge-patch+json");
  ASSERT_EQ(p.code, 200) << p.body;
  EXPECT_EQ((*p.At({"metadata", "generation"})).GetInt(), 2);
}

// The same for a CRD (whose defaults kplane appends last): its generation
// stays, so it is not served anew and the watches on its resource stay
// open.
TEST(CrdTest, ReorderedMembersAreNoChangeToACrd) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  auto watch = s.Watch(std::string(kWidgets) + "?watch=1");
  const std::string crd = std::string(kCrds) + "/widgets.example.com";
  Response g = s.Get(crd);
  ASSERT_EQ(g.code, 200) << g.body;
  const int generation = (*g.At({"metadata", "generation"})).GetInt();
  Response u = s.Put(crd, ReorderedWithLabel(g.json));
  ASSERT_EQ(u.code, 200) << u.body;
  EXPECT_EQ(u.Str({"metadata", "labels", "edited"}), "yes");
  EXPECT_EQ((*u.At({"metadata", "generation"})).GetInt(), generation) << u.body;
  // One reconcile serves every CRD it lists before it writes their
  // status: once a CRD created after the replace is Established, the
  // replace was reconciled. The watch still delivers.
  CreateAndAwaitEstablished(s, WidgetCrd(false), "gadgets.example.com");
  ASSERT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 201);
  rapidjson::Document added = watch->NextJson();
  ASSERT_TRUE(added.IsObject());
  EXPECT_EQ(std::string(added["type"].GetString()), "ADDED");
  EXPECT_EQ(std::string(added["object"]["metadata"]["name"].GetString()), "a");
}

// What is served is compared as a value: member order is no change.
TEST(CrdTest, ServingKeyIgnoresMemberOrder) {
  objects::Unstructured a;
  a.mutable_metadata()->set_name("widgets.example.com");
  a.set_content(R"({"spec":{"group":"example.com","scope":"Namespaced",)"
                R"("names":{"plural":"widgets","kind":"Widget"},)"
                R"("versions":[{"name":"v1","served":true,"storage":true,)"
                R"("subresources":{"scale":{"specReplicasPath":".spec.r",)"
                R"("statusReplicasPath":".status.r"}}}]}})");
  objects::Unstructured b = a;
  b.set_content(
      R"({"spec":{"versions":[{"subresources":{"scale":{)"
      R"("statusReplicasPath":".status.r","specReplicasPath":".spec.r"}},)"
      R"("storage":true,"served":true,"name":"v1"}],)"
      R"("names":{"kind":"Widget","plural":"widgets"},)"
      R"("scope":"Namespaced","group":"example.com"}})");
  EXPECT_EQ(ParseCrd(a).serving_key, ParseCrd(b).serving_key);
  objects::Unstructured c = a;
  c.set_content(
      R"({"spec":{"group":"example.com","scope":"Namespaced",)"
      R"("names":{"plural":"widgets","kind":"Widget"},)"
      R"("versions":[{"name":"v1","served":false,"storage":true}]}})");
  EXPECT_NE(ParseCrd(a).serving_key, ParseCrd(c).serving_key);
}

// A CRD of kind `kind` (plural lower-case kind + "s") in example.com with
// `schema` as its openAPIV3Schema and `extra` in its version.
std::string SimpleCrd(const std::string& kind, const std::string& schema,
                      const std::string& extra = "") {
  std::string plural = kind + "s";
  plural[0] = static_cast<char>(std::tolower(plural[0]));
  return R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":")" +
         plural + R"(.example.com"},"spec":{"group":"example.com",
    "scope":"Namespaced","names":{"plural":")" +
         plural + R"(","kind":")" + kind + R"("},
    "versions":[{"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":)" +
         schema + "}" + extra + "}]}}";
}

// The schema's constraints on metadata.name (the only ones on metadata
// it may have, with generateName's) apply to the objects, as kube
// validates the whole object.
TEST(CrdTest, SchemaConstraintsOnMetadataNameAreEnforced) {
  TestServer s;
  CreateAndAwaitEstablished(
      s,
      SimpleCrd(
          "Namer",
          R"({"type":"object","x-kubernetes-preserve-unknown-fields":true,)"
          R"("properties":{"metadata":{"type":"object","properties":{)"
          R"("name":{"type":"string","maxLength":5,)"
          R"("pattern":"^[a-z]+$"}}}}})"),
      "namers.example.com");
  const std::string namers = "/apis/example.com/v1/namespaces/default/namers";
  auto namer = [](const std::string& meta) {
    return R"({"apiVersion":"example.com/v1","kind":"Namer","metadata":)" +
           meta + R"(,"spec":{}})";
  };
  Response bad = s.Post(namers, namer(R"({"name":"toolong-name-1"})"));
  EXPECT_EQ(bad.code, 422) << bad.body;
  EXPECT_EQ(bad.Str({"message"}),
            "Namer.example.com \"toolong-name-1\" is invalid: "
            "[metadata.name: Too long: may not be more than 5 bytes, "
            "metadata.name: Invalid value: \"toolong-name-1\": metadata.name "
            "in body should match '^[a-z]+$']");
  const rapidjson::Value* causes = bad.At({"details", "causes"});
  ASSERT_TRUE(causes != nullptr && causes->IsArray() && causes->Size() == 2)
      << bad.body;
  EXPECT_EQ(std::string((*causes)[0]["field"].GetString()), "metadata.name");
  EXPECT_EQ(std::string((*causes)[0]["reason"].GetString()),
            "FieldValueTooLong");
  EXPECT_EQ(std::string((*causes)[1]["field"].GetString()), "metadata.name");
  EXPECT_EQ(std::string((*causes)[1]["reason"].GetString()),
            "FieldValueInvalid");
  // A generated name is validated too.
  Response generated = s.Post(namers, namer(R"({"generateName":"ab"})"));
  EXPECT_EQ(generated.code, 422) << generated.body;
  EXPECT_THAT(generated.Str({"message"}),
              ::testing::HasSubstr("metadata.name: Too long"));
  Response ok = s.Post(namers, namer(R"({"name":"abc"})"));
  EXPECT_EQ(ok.code, 201) << ok.body;
  // And on update.
  std::string body = ok.body;
  Response u = s.Put(namers + "/abc", body);
  EXPECT_EQ(u.code, 200) << u.body;
}

// The scale subresource's replicas and selector must be what /scale can
// read (kube's ValidateScaleSpec and ValidateScaleStatus), on create,
// update and status update.
TEST(CrdTest, ScaleReplicasAndSelectorAreValidated) {
  TestServer s;
  CreateAndAwaitEstablished(
      s,
      SimpleCrd(
          "Scaler",
          R"({"type":"object","x-kubernetes-preserve-unknown-fields":true})",
          R"(,"subresources":{"scale":{"specReplicasPath":".spec.replicas",)"
          R"("statusReplicasPath":".status.replicas",)"
          R"("labelSelectorPath":".status.selector"}})"),
      "scalers.example.com");
  const std::string scalers = "/apis/example.com/v1/namespaces/default/scalers";
  auto scaler = [](const std::string& rest) {
    return R"({"apiVersion":"example.com/v1","kind":"Scaler",)"
           R"("metadata":{"name":"s"},)" +
           rest + "}";
  };
  auto message = [&](const std::string& rest) {
    Response r = s.Post(scalers, scaler(rest));
    EXPECT_EQ(r.code, 422) << r.body;
    return r.Str({"message"});
  };
  const std::string prefix = "Scaler.example.com \"s\" is invalid: ";
  Response negative = s.Post(scalers, scaler(R"("spec":{"replicas":-3})"));
  EXPECT_EQ(negative.code, 422) << negative.body;
  EXPECT_EQ(negative.Str({"message"}),
            prefix +
                ".spec.replicas: Invalid value: -3: should be a "
                "non-negative integer");
  const rapidjson::Value* causes = negative.At({"details", "causes"});
  ASSERT_TRUE(causes != nullptr && causes->IsArray() && causes->Size() == 1)
      << negative.body;
  EXPECT_EQ(std::string((*causes)[0]["field"].GetString()), ".spec.replicas");
  EXPECT_EQ(message(R"("spec":{"replicas":"three"})"),
            prefix +
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor "
                "error: three is of the type string, expected int64");
  EXPECT_EQ(message(R"("spec":{"replicas":2147483648})"),
            prefix +
                ".spec.replicas: Invalid value: 2147483648: should be "
                "less than or equal to 2147483647");
  EXPECT_EQ(message(R"("spec":{"replicas":1.5})"),
            prefix +
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor "
                "error: 1.5 is of the type float64, expected int64");
  EXPECT_EQ(message(R"("spec":"x")"),
            prefix +
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor "
                "error: x is of the type string, expected "
                "map[string]interface{}");
  EXPECT_EQ(
      message(R"("spec":{"replicas":1},"status":{"replicas":-1,"selector":5})"),
      prefix +
          "[.status.replicas: Invalid value: -1: should be a non-negative "
          "integer, .status.selector: Invalid value: \"\": .status.selector "
          "accessor error: 5 is of the type int64, expected string]");

  // Absent values are fine; so are good ones, and /scale reads them.
  Response ok = s.Post(scalers, scaler(R"("spec":{"replicas":2},)"
                                       R"("status":{"replicas":1,)"
                                       R"("selector":"app=s"})"));
  ASSERT_EQ(ok.code, 201) << ok.body;
  Response sc = s.Get(scalers + "/s/scale");
  ASSERT_EQ(sc.code, 200) << sc.body;
  EXPECT_EQ((*sc.At({"spec", "replicas"})).GetInt(), 2);
  EXPECT_EQ(sc.Str({"status", "selector"}), "app=s");
  // Updates are validated too.
  Response u = s.Patch(scalers + "/s", R"({"spec":{"replicas":"two"}})",
                       "application/merge-patch+json");
  EXPECT_EQ(u.code, 422) << u.body;
  EXPECT_THAT(u.Str({"message"}),
              ::testing::HasSubstr(".spec.replicas accessor error: two is of "
                                   "the type string, expected int64"));
  u = s.Patch(scalers + "/s", R"({"status":{"replicas":-2}})",
              "application/merge-patch+json");
  EXPECT_EQ(u.code, 422) << u.body;
  EXPECT_THAT(u.Str({"message"}),
              ::testing::HasSubstr(".status.replicas: Invalid value: -2: "
                                   "should be a non-negative integer"));
}

// With /status, the status update validates the status's replicas and
// selector (and not the spec's, which it cannot change).
TEST(CrdTest, ScaleStatusIsValidatedOnStatusUpdate) {
  TestServer s;
  CreateAndAwaitEstablished(s, WidgetCrd(), "widgets.example.com");
  ASSERT_EQ(s.Post(kWidgets, Widget("a", 1)).code, 201);
  Response st =
      s.Patch(std::string(kWidgets) + "/a/status", R"({"status":{"size":-1}})",
              "application/merge-patch+json");
  EXPECT_EQ(st.code, 422) << st.body;
  EXPECT_EQ(st.Str({"message"}),
            "Widget.example.com \"a\" is invalid: .status.size: Invalid "
            "value: -1: should be a non-negative integer");
  st = s.Patch(std::string(kWidgets) + "/a/status", R"({"status":{"size":3}})",
               "application/merge-patch+json");
  EXPECT_EQ(st.code, 200) << st.body;
}

}  // namespace
}  // namespace kplane::apiserver
