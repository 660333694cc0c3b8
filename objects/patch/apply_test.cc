// Server-side apply pieces: fieldsV1 sets, ownership, conflicts, pruning.
#include "objects/patch/apply.h"

#include <gtest/gtest.h>

#include "base/json_escape.h"
#include "objects/patch/test_util.h"
#include "schemas/k8s/core.pb.h"

namespace kplane::patch {
namespace {

FieldSet SetOf(const char* json) {
  rapidjson::Document d;
  EXPECT_TRUE(ParseJson(json, &d).ok());
  return ComputeFieldSet(d, DeploymentSchema());
}

TEST(FieldSetTest, ComputesFieldsV1LikeKubernetes) {
  FieldSet s = SetOf(R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"nginx","namespace":"default","labels":{"app":"nginx"},
                  "finalizers":["a"]},
      "spec":{"replicas":3,"selector":{"matchLabels":{"app":"nginx"}},
              "template":{"spec":{"containers":[{"name":"nginx","image":"n:1",
                  "ports":[{"containerPort":80}],"command":["a","b"]}]}}}})");
  EXPECT_EQ(
      s.ToJsonString(),
      R"({"f:metadata":{"f:finalizers":{"v:\"a\"":{}},"f:labels":{"f:app":{}}},)"
      R"("f:spec":{"f:replicas":{},"f:selector":{"f:matchLabels":{"f:app":{}}},)"
      R"("f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},)"
      R"("f:command":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80}":{)"
      R"(".":{},"f:containerPort":{}}}}}}}}})");
}

TEST(FieldSetTest, RoundTripsThroughJsonAndSetAlgebra) {
  FieldSet a = SetOf(R"({"spec":{"replicas":1,"paused":true}})");
  FieldSet b = SetOf(R"({"spec":{"replicas":2,"minReadySeconds":5}})");
  rapidjson::Document d;
  JsonValue j = a.ToJson(d.GetAllocator());
  auto back = FieldSet::FromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  EXPECT_EQ(a.Intersection(b).ToJsonString(),
            R"({"f:spec":{"f:replicas":{}}})");
  EXPECT_EQ(a.Difference(b).ToJsonString(), R"({"f:spec":{"f:paused":{}}})");
  EXPECT_EQ(a.Union(b).Paths().size(), 3u);
  EXPECT_TRUE(a.Has({"f:spec", "f:paused"}));
  EXPECT_FALSE(a.Has({"f:spec"}));
  EXPECT_TRUE(a.Difference(a).Empty());
  rapidjson::Document bad;
  ASSERT_TRUE(ParseJson(R"({"x:y":{}})", &bad).ok());
  EXPECT_FALSE(FieldSet::FromJson(bad).ok());
}

TEST(FieldSetTest, PathStrings) {
  EXPECT_EQ(PathString({"f:spec", "f:replicas"}), ".spec.replicas");
  EXPECT_EQ(PathString({"f:spec", "f:containers", "k:{\"name\":\"nginx\"}",
                        "f:image"}),
            ".spec.containers[name=\"nginx\"].image");
  EXPECT_EQ(PathString({"f:metadata", "f:finalizers", "v:\"a\""}),
            ".metadata.finalizers[=\"a\"]");
}

TEST(FieldPathTest, ResolveAndRemove) {
  rapidjson::Document d;
  ASSERT_TRUE(ParseJson(R"({"spec":{"containers":[{"name":"a","image":"x"},
      {"name":"b"}]},"metadata":{"finalizers":["f1","f2"]}})",
                        &d)
                  .ok());
  const JsonValue* img = ResolveFieldPath(
      d, {"f:spec", "f:containers", "k:{\"name\":\"a\"}", "f:image"});
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(StringOf(*img), "x");
  EXPECT_EQ(
      ResolveFieldPath(d, {"f:spec", "f:containers", "k:{\"name\":\"z\"}"}),
      nullptr);
  EXPECT_TRUE(
      RemoveFieldPath(d, {"f:spec", "f:containers", "k:{\"name\":\"a\"}"}));
  EXPECT_TRUE(RemoveFieldPath(d, {"f:metadata", "f:finalizers", "v:\"f2\""}));
  EXPECT_FALSE(RemoveFieldPath(d, {"f:nope"}));
  EXPECT_EQ(
      CanonicalJson(d),
      Canon(
          R"({"spec":{"containers":[{"name":"b"}]},"metadata":{"finalizers":["f1"]}})"));
}

class ServerSideApplyTest : public ::testing::Test {
 protected:
  ApplyOptions Opts(const std::string& manager, bool force = false,
                    const std::string& subresource = "") {
    ApplyOptions o;
    o.manager = manager;
    o.api_version = "apps/v1";
    o.time = "2025-01-01T00:00:00Z";
    o.force = force;
    o.schema = DeploymentSchema();
    o.subresource = subresource;
    return o;
  }
  // Applies `config` as `manager` on top of live_ (or creates it), through
  // `subresource` ("" for the main resource).
  Status Apply(const std::string& manager, const char* config,
               bool force = false, const std::string& subresource = "") {
    rapidjson::Document c;
    EXPECT_TRUE(ParseJson(config, &c).ok());
    JsonValue result;
    Status st = ServerSideApply(live_.IsNull() ? nullptr : &live_, c,
                                Opts(manager, force, subresource), &result,
                                live_.GetAllocator(), &conflicts_);
    if (st.ok()) static_cast<JsonValue&>(live_) = result;
    return st;
  }
  Status Update(const std::string& manager, const char* object,
                const std::string& subresource = "") {
    rapidjson::Document n;
    EXPECT_TRUE(ParseJson(object, &n).ok());
    JsonValue updated(n, live_.GetAllocator());
    JsonValue old(live_, live_.GetAllocator());
    RETURN_IF_ERROR(UpdateManagedFields(old.IsNull() ? nullptr : &old, updated,
                                        Opts(manager, false, subresource),
                                        live_.GetAllocator()));
    static_cast<JsonValue&>(live_) = updated;
    return Status::Ok();
  }
  std::string Without(const char* member) {
    JsonValue copy(live_, live_.GetAllocator());
    if (JsonValue* md = FindMember(copy, "metadata")) {
      RemoveMember(*md, member);
      // Tests omit metadata; managedFields alone created it.
      if (md->MemberCount() == 0) RemoveMember(copy, "metadata");
    }
    return CanonicalJson(copy);
  }
  std::vector<ManagedFieldsEntry> Entries() {
    auto e = ReadManagedFields(live_);
    EXPECT_TRUE(e.ok());
    return e.ok() ? *e : std::vector<ManagedFieldsEntry>{};
  }

  rapidjson::Document live_;
  std::vector<FieldConflict> conflicts_;
};

// An update's owned fields are found in one walk of the object: a map's
// members were looked up from the root once per member, a scan of the map
// each time. 200,000 labels (2.4 MB, within a request's size): 84 s of a
// core per write, now 1.5 s for the test's two (-O1); with 300,000 here
// the old walk passes the test's 120 s timeout.
TEST_F(ServerSideApplyTest, UpdateOfAMapWithManyKeysIsOneWalk) {
  std::string labels;
  for (int i = 0; i < 300000; ++i) {
    labels += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  }
  const std::string before =
      R"({"metadata":{"name":"big","labels":{)" + labels + "}}}";
  ASSERT_TRUE(Update("curl", before.c_str()).ok());
  std::string after = before;
  after.replace(after.find("\"k7\":\"v\""), 8, "\"k7\":\"w\"");
  ASSERT_TRUE(Update("kubectl", after.c_str()).ok());
  auto e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].manager, "kubectl");
  EXPECT_EQ(e[1].fields.ToJsonString(),
            R"({"f:metadata":{"f:labels":{"f:k7":{}}}})");
}

TEST_F(ServerSideApplyTest, CreateRecordsApplyManager) {
  ASSERT_TRUE(Apply("kubectl", R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"web"},"spec":{"replicas":2}})")
                  .ok());
  auto e = Entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].manager, "kubectl");
  EXPECT_EQ(e[0].operation, "Apply");
  EXPECT_EQ(e[0].api_version, "apps/v1");
  EXPECT_EQ(e[0].time, "2025-01-01T00:00:00Z");
  EXPECT_EQ(e[0].fields.ToJsonString(), R"({"f:spec":{"f:replicas":{}}})");
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"apiVersion":"apps/v1","kind":"Deployment",
                      "metadata":{"name":"web"},"spec":{"replicas":2}})"));
}

TEST_F(ServerSideApplyTest, ReapplyMergesAndPrunesOwnFields) {
  ASSERT_TRUE(
      Apply("kubectl", R"({"metadata":{"name":"web","labels":{"a":"1","b":"2"}},
      "spec":{"replicas":2,"template":{"spec":{"containers":[
      {"name":"app","image":"v1"},{"name":"old","image":"o"}]}}}})")
          .ok());
  ASSERT_TRUE(Apply("kubectl", R"({"metadata":{"name":"web","labels":{"a":"1"}},
      "spec":{"replicas":3,"template":{"spec":{"containers":[
      {"name":"app","image":"v2"}]}}}})")
                  .ok());
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"metadata":{"name":"web","labels":{"a":"1"}},
                      "spec":{"replicas":3,"template":{"spec":{"containers":[
                      {"name":"app","image":"v2"}]}}}})"));
  ASSERT_EQ(Entries().size(), 1u);
}

TEST_F(ServerSideApplyTest, FieldsOwnedByOthersAreNotPruned) {
  ASSERT_TRUE(Apply("a", R"({"metadata":{"labels":{"x":"1"}}})").ok());
  ASSERT_TRUE(Apply("b", R"({"metadata":{"labels":{"x":"1","y":"2"}}})").ok());
  // a stops applying x, but b still owns it (shared, same value).
  ASSERT_TRUE(Apply("a", R"({"metadata":{"labels":{}}})").ok());
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"metadata":{"labels":{"x":"1","y":"2"}}})"));
}

TEST_F(ServerSideApplyTest, ConflictWithAnotherManager) {
  ASSERT_TRUE(Apply("kubectl", R"({"spec":{"replicas":2}})").ok());
  ASSERT_TRUE(Update("kubectl-scale", R"({"spec":{"replicas":5}})").ok());
  auto e = Entries();
  ASSERT_EQ(e.size(), 1u) << "kubectl lost replicas to the scaler";
  EXPECT_EQ(e[0].manager, "kubectl-scale");
  EXPECT_EQ(e[0].operation, "Update");

  Status st = Apply("kubectl", R"({"spec":{"replicas":3}})");
  ASSERT_EQ(st.code(), StatusCode::kConflict) << st;
  EXPECT_EQ(st.message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-scale\" "
            "using apps/v1: .spec.replicas");
  ASSERT_EQ(conflicts_.size(), 1u);
  EXPECT_EQ(conflicts_[0].field, ".spec.replicas");
  EXPECT_EQ(conflicts_[0].manager, "\"kubectl-scale\" using apps/v1");

  // Same value: no conflict, ownership becomes shared.
  EXPECT_TRUE(Apply("kubectl", R"({"spec":{"replicas":5}})").ok());
  EXPECT_EQ(Entries().size(), 2u);

  // Forced: the field changes hands.
  ASSERT_TRUE(Apply("kubectl", R"({"spec":{"replicas":3}})", true).ok());
  e = Entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].manager, "kubectl");
  EXPECT_EQ(Without("managedFields"), Canon(R"({"spec":{"replicas":3}})"));
}

// kube's manager identifier holds the subresource (buildManagerInfo): an
// apply through /status is an entry of its own, which prunes only what it
// applied before and leaves the main resource's entry of the same manager
// (and the fields only that entry owns) alone.
TEST_F(ServerSideApplyTest, ApplyThroughASubresourceIsAnEntryOfItsOwn) {
  ASSERT_TRUE(Apply("x", R"({"metadata":{"name":"web","labels":{"team":"a"},
      "annotations":{"note":"keep"}},"spec":{"replicas":2}})")
                  .ok());
  const std::string main_fields = Entries()[0].fields.ToJsonString();
  ASSERT_TRUE(Apply("x", R"({"metadata":{"name":"web"},
      "status":{"replicas":1,"readyReplicas":1}})",
                    false, "status")
                  .ok());
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"metadata":{"name":"web","labels":{"team":"a"},
                      "annotations":{"note":"keep"}},"spec":{"replicas":2},
                      "status":{"replicas":1,"readyReplicas":1}})"));
  auto e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].manager, "x");
  EXPECT_EQ(e[0].subresource, "");
  EXPECT_EQ(e[0].fields.ToJsonString(), main_fields);
  EXPECT_EQ(e[1].manager, "x");
  EXPECT_EQ(e[1].operation, "Apply");
  EXPECT_EQ(e[1].subresource, "status");
  EXPECT_EQ(e[1].fields.ToJsonString(),
            R"({"f:status":{"f:readyReplicas":{},"f:replicas":{}}})");

  // Re-applied through /status without readyReplicas: that is pruned, and
  // nothing of the main resource's entry.
  ASSERT_TRUE(Apply("x", R"({"metadata":{"name":"web"},
      "status":{"replicas":1}})",
                    false, "status")
                  .ok());
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"metadata":{"name":"web","labels":{"team":"a"},
                      "annotations":{"note":"keep"}},"spec":{"replicas":2},
                      "status":{"replicas":1}})"));
  e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].fields.ToJsonString(), main_fields);
  EXPECT_EQ(e[1].fields.ToJsonString(), R"({"f:status":{"f:replicas":{}}})");

  // Re-applied to the main resource: the /status entry stays.
  ASSERT_TRUE(Apply("x", R"({"metadata":{"name":"web","labels":{"team":"a"},
      "annotations":{"note":"keep"}},"spec":{"replicas":3}})")
                  .ok());
  e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].subresource, "status");
  EXPECT_EQ(e[1].fields.ToJsonString(), R"({"f:status":{"f:replicas":{}}})");

  // Each entry's fields conflict under its own name.
  Status st = Apply("y", R"({"spec":{"replicas":5}})");
  ASSERT_EQ(st.code(), StatusCode::kConflict) << st;
  EXPECT_EQ(st.message(),
            "Apply failed with 1 conflict: conflict with \"x\": "
            ".spec.replicas");
  st = Apply("y", R"({"status":{"replicas":4}})", false, "status");
  ASSERT_EQ(st.code(), StatusCode::kConflict) << st;
  EXPECT_EQ(st.message(),
            "Apply failed with 1 conflict: conflict with \"x\" with "
            "subresource \"status\": .status.replicas");
}

// An update through a subresource is likewise its own Update entry.
TEST_F(ServerSideApplyTest, UpdateThroughASubresourceIsAnEntryOfItsOwn) {
  ASSERT_TRUE(Update("ctrl", R"({"metadata":{"name":"x"},
      "spec":{"replicas":1}})")
                  .ok());
  ASSERT_TRUE(Update("ctrl", R"({"metadata":{"name":"x"},
      "spec":{"replicas":1},"status":{"replicas":1}})",
                     "status")
                  .ok());
  auto e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].subresource, "");
  EXPECT_EQ(e[0].fields.ToJsonString(), R"({"f:spec":{"f:replicas":{}}})");
  EXPECT_EQ(e[1].manager, "ctrl");
  EXPECT_EQ(e[1].operation, "Update");
  EXPECT_EQ(e[1].subresource, "status");
  EXPECT_EQ(e[1].fields.ToJsonString(), R"({"f:status":{"f:replicas":{}}})");
  // A main-resource update adds to the main entry, not the /status one.
  ASSERT_TRUE(Update("ctrl", R"({"metadata":{"name":"x"},
      "spec":{"replicas":2,"paused":true},"status":{"replicas":1}})")
                  .ok());
  e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].subresource, "");
  EXPECT_EQ(e[0].fields.ToJsonString(),
            R"({"f:spec":{"f:paused":{},"f:replicas":{}}})");
  EXPECT_EQ(e[1].fields.ToJsonString(), R"({"f:status":{"f:replicas":{}}})");
}

TEST_F(ServerSideApplyTest, SeveralConflictsAreListedByManager) {
  ASSERT_TRUE(Apply("a", R"({"spec":{"replicas":1,"paused":false}})").ok());
  Status st = Apply("b", R"({"spec":{"replicas":2,"paused":true}})");
  ASSERT_EQ(st.code(), StatusCode::kConflict);
  EXPECT_EQ(st.message(),
            "Apply failed with 2 conflicts: conflicts with \"a\":\n"
            "- .spec.paused\n- .spec.replicas");
  EXPECT_EQ(conflicts_.size(), 2u);
}

TEST_F(ServerSideApplyTest, ListElementsOwnedSeparately) {
  ASSERT_TRUE(Apply("a", R"({"spec":{"template":{"spec":{"containers":[
      {"name":"app","image":"v1"}]}}}})")
                  .ok());
  ASSERT_TRUE(Apply("b", R"({"spec":{"template":{"spec":{"containers":[
      {"name":"sidecar","image":"s1"}]}}}})")
                  .ok());
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"spec":{"template":{"spec":{"containers":[
                {"name":"sidecar","image":"s1"},{"name":"app","image":"v1"}]}}}})"));
  Status st = Apply("b", R"({"spec":{"template":{"spec":{"containers":[
      {"name":"app","image":"v2"}]}}}})");
  ASSERT_EQ(st.code(), StatusCode::kConflict);
  EXPECT_EQ(conflicts_[0].field,
            ".spec.template.spec.containers[name=\"app\"].image");
}

// Built-in types' associative lists are keyed by all their
// x-kubernetes-list-map-keys, as kube's OpenAPI has them (+listMapKey), not
// by the one patchMergeKey: Service ports by port and protocol, container
// ports by containerPort and protocol, topology spread constraints by
// topologyKey and whenUnsatisfiable. Key members are sorted by name (SMD's
// KeyByFields), and an omitted protocol is its OpenAPI default "TCP".
TEST(FieldSetTest, ListMapKeysOfBuiltInTypes) {
  rapidjson::Document svc;
  ASSERT_TRUE(ParseJson(R"({"spec":{"ports":[
      {"name":"dns","port":53,"protocol":"UDP"},{"name":"dns-tcp","port":53}]}})",
                        &svc)
                  .ok());
  EXPECT_EQ(
      ComputeFieldSet(svc,
                      PatchSchema(k8s::io::api::core::v1::Service::descriptor(),
                                  &KubernetesPatchMetaTable()))
          .ToJsonString(),
      R"({"f:spec":{"f:ports":{)"
      R"("k:{\"port\":53,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}},)"
      R"("k:{\"port\":53,\"protocol\":\"UDP\"}":{".":{},"f:name":{},"f:port":{},)"
      R"("f:protocol":{}}}}})");
  rapidjson::Document pod;
  ASSERT_TRUE(ParseJson(R"({"spec":{"containers":[{"name":"c","ports":[
      {"containerPort":80,"protocol":"UDP"},{"containerPort":80}]}],
      "topologySpreadConstraints":[{"whenUnsatisfiable":"DoNotSchedule",
      "topologyKey":"zone","maxSkew":1}]}})",
                        &pod)
                  .ok());
  EXPECT_EQ(
      ComputeFieldSet(pod,
                      PatchSchema(k8s::io::api::core::v1::Pod::descriptor(),
                                  &KubernetesPatchMetaTable()))
          .ToJsonString(),
      R"({"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:name":{},)"
      R"("f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},)"
      R"("f:containerPort":{}},"k:{\"containerPort\":80,\"protocol\":\"UDP\"}":)"
      R"({".":{},"f:containerPort":{},"f:protocol":{}}}}},)"
      R"("f:topologySpreadConstraints":{"k:{\"topologyKey\":\"zone\",)"
      R"(\"whenUnsatisfiable\":\"DoNotSchedule\"}":{".":{},"f:maxSkew":{},)"
      R"("f:topologyKey":{},"f:whenUnsatisfiable":{}}}}})");
}

// A Service's apply merges ports by port and protocol: two ports of one
// number are two elements, each owned on its own, and dropping one from
// the configuration prunes that one only (kplane merged by port alone and
// gave the remaining element both names: 422 Duplicate value).
class ServiceApplyTest : public ::testing::Test {
 protected:
  Status Apply(const std::string& manager, const char* config) {
    rapidjson::Document c;
    EXPECT_TRUE(ParseJson(config, &c).ok());
    ApplyOptions o;
    o.manager = manager;
    o.api_version = "v1";
    o.time = "2025-01-01T00:00:00Z";
    o.schema = PatchSchema(k8s::io::api::core::v1::Service::descriptor(),
                           &KubernetesPatchMetaTable());
    JsonValue result;
    Status st = ServerSideApply(live_.IsNull() ? nullptr : &live_, c, o,
                                &result, live_.GetAllocator(), &conflicts_);
    if (st.ok()) static_cast<JsonValue&>(live_) = result;
    return st;
  }
  std::string Ports() {
    const JsonValue* p = ResolveFieldPath(live_, {"f:spec", "f:ports"});
    return p == nullptr ? "" : CanonicalJson(*p);
  }
  std::string Fields(size_t i) {
    auto e = ReadManagedFields(live_);
    EXPECT_TRUE(e.ok());
    return e.ok() && i < e->size() ? (*e)[i].fields.ToJsonString() : "";
  }
  rapidjson::Document live_;
  std::vector<FieldConflict> conflicts_;
};

TEST_F(ServiceApplyTest, PortsDifferingByProtocolAreTwoElements) {
  ASSERT_TRUE(Apply("m", R"({"spec":{"ports":[
      {"name":"dns","port":53,"protocol":"UDP"},
      {"name":"dns-tcp","port":53,"protocol":"TCP"}]}})")
                  .ok());
  ASSERT_TRUE(Apply("m", R"({"spec":{"ports":[
      {"name":"dns-tcp","port":53,"protocol":"TCP"}]}})")
                  .ok());
  EXPECT_EQ(Ports(),
            Canon(R"([{"name":"dns-tcp","port":53,"protocol":"TCP"}])"));
  EXPECT_EQ(Fields(0),
            R"({"f:spec":{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":)"
            R"({".":{},"f:name":{},"f:port":{},"f:protocol":{}}}}})");
}

TEST_F(ServiceApplyTest, ManagersOwnPortsOfOneNumberApart) {
  ASSERT_TRUE(Apply("a", R"({"spec":{"ports":[
      {"name":"dns","port":53,"protocol":"UDP"}]}})")
                  .ok());
  Status st = Apply("b", R"({"spec":{"ports":[
      {"name":"dns-tcp","port":53,"protocol":"TCP"}]}})");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(Ports(), Canon(R"([{"name":"dns-tcp","port":53,"protocol":"TCP"},
      {"name":"dns","port":53,"protocol":"UDP"}])"));
  // An omitted protocol is TCP: b's port, not a third one, and c shares
  // what it applies with the same values.
  ASSERT_TRUE(Apply("c", R"({"spec":{"ports":[
      {"name":"dns-tcp","port":53,"targetPort":5353}]}})")
                  .ok());
  EXPECT_EQ(Ports(), Canon(R"([{"name":"dns-tcp","port":53,"protocol":"TCP",
      "targetPort":5353},{"name":"dns","port":53,"protocol":"UDP"}])"));
  EXPECT_EQ(Fields(2),
            R"({"f:spec":{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":)"
            R"({".":{},"f:name":{},"f:port":{},"f:targetPort":{}}}}})");
  // a's port changes hands only when a applies to it.
  st = Apply("b", R"({"spec":{"ports":[
      {"name":"dns-tcp","port":53,"protocol":"TCP"},
      {"name":"other","port":53,"protocol":"UDP"}]}})");
  ASSERT_EQ(st.code(), StatusCode::kConflict);
  ASSERT_EQ(conflicts_.size(), 1u);
  EXPECT_EQ(conflicts_[0].field, ".spec.ports[port=53,protocol=\"UDP\"].name");
}

// Entries written before ports were keyed by protocol too name the port by
// k:{"port":53}: not this apply's key, yet it finds the port; the apply
// prunes nothing through it (it would remove the port it applies).
TEST_F(ServiceApplyTest, KeysOfFewerFieldsPruneNothing) {
  ASSERT_TRUE(ParseJson(R"({"metadata":{"managedFields":[{"manager":"m",
      "operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1",
      "fieldsV1":{"f:spec":{"f:ports":{"k:{\"port\":53}":{".":{},
      "f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}}}}}]},
      "spec":{"ports":[{"name":"dns-tcp","port":53,"protocol":"TCP",
      "targetPort":53}]}})",
                        &live_)
                  .ok());
  ASSERT_TRUE(Apply("m", R"({"spec":{"ports":[
      {"name":"dns-tcp","port":53,"protocol":"TCP","targetPort":53}]}})")
                  .ok());
  EXPECT_EQ(Ports(), Canon(R"([{"name":"dns-tcp","port":53,"protocol":"TCP",
      "targetPort":53}])"));
  EXPECT_EQ(Fields(0),
            R"({"f:spec":{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":)"
            R"({".":{},"f:name":{},"f:port":{},"f:protocol":{},)"
            R"("f:targetPort":{}}}}})");
}

// An element omitting a key without default cannot be matched (kube:
// "associative list with keys has an element that omits key field").
TEST(ListMapKeysApplyTest, ElementWithoutAKeyIsRefused) {
  rapidjson::Document live, config;
  ASSERT_TRUE(ParseJson(R"({"spec":{"topologySpreadConstraints":[
      {"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}})",
                        &live)
                  .ok());
  ASSERT_TRUE(ParseJson(R"({"spec":{"topologySpreadConstraints":[
      {"topologyKey":"zone","maxSkew":2}]}})",
                        &config)
                  .ok());
  ApplyOptions o;
  o.manager = "m";
  o.schema = PatchSchema(k8s::io::api::core::v1::Pod::descriptor(),
                         &KubernetesPatchMetaTable());
  JsonValue result;
  std::vector<FieldConflict> conflicts;
  Status st = ServerSideApply(&live, config, o, &result, live.GetAllocator(),
                              &conflicts);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            ".spec.topologySpreadConstraints: element 0: associative list with "
            "keys has an element that omits key field \"whenUnsatisfiable\" "
            "(and doesn't have default value)");
}

// Apply has no strategic merge directives (kube's structured merge reads
// such names as fields): a custom resource's free-form data holding
// kustomize patches keeps them, and nothing another manager owns is
// dropped by them. Names beginning "$$" are data too.
TEST_F(ServerSideApplyTest, DirectiveNamesAreOrdinaryFields) {
  ASSERT_TRUE(Apply("other", R"({"metadata":{"labels":{"keep":"1"},
      "finalizers":["example.com/keep"]},
      "spec":{"template":{"spec":{"containers":[{"name":"app","image":"v1"}]}}}})")
                  .ok());
  const char* applied = R"({"metadata":{"labels":{"$patch":"delete"},
      "$deleteFromPrimitiveList/finalizers":["example.com/keep"]},
      "$retainKeys":["kind"],
      "spec":{"$setElementOrder/x":[{"name":"b"}],"$$patch":"replace",
        "template":{"spec":{"containers":[
          {"name":"app","$patch":"delete"}]}},
        "postRenderers":[{"patches":[{"kind":"Deployment","$patch":"delete"}]}]}})";
  ASSERT_TRUE(Apply("mine", applied).ok()) << conflicts_.size();
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"metadata":{"labels":{"keep":"1","$patch":"delete"},
      "finalizers":["example.com/keep"],
      "$deleteFromPrimitiveList/finalizers":["example.com/keep"]},
      "$retainKeys":["kind"],
      "spec":{"$setElementOrder/x":[{"name":"b"}],"$$patch":"replace",
        "template":{"spec":{"containers":[
          {"name":"app","image":"v1","$patch":"delete"}]}},
        "postRenderers":[{"patches":[{"kind":"Deployment","$patch":"delete"}]}]}})"));
  // The stored names read back literally on the next apply, which drops
  // what it no longer applies.
  ASSERT_TRUE(
      Apply("mine", R"({"metadata":{"labels":{"$patch":"delete"}}})").ok());
  EXPECT_EQ(Without("managedFields"),
            Canon(R"({"metadata":{"labels":{"keep":"1","$patch":"delete"},
      "finalizers":["example.com/keep"]},
      "spec":{"template":{"spec":{"containers":[{"name":"app","image":"v1"}]}}}})"));
}

TEST_F(ServerSideApplyTest, RequiresManagerAndObject) {
  rapidjson::Document c;
  ASSERT_TRUE(ParseJson("[1]", &c).ok());
  JsonValue out;
  EXPECT_EQ(ServerSideApply(nullptr, c, Opts("m"), &out, c.GetAllocator(),
                            &conflicts_)
                .code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(ParseJson("{}", &c).ok());
  EXPECT_EQ(
      ServerSideApply(nullptr, c, Opts(""), &out, c.GetAllocator(), &conflicts_)
          .code(),
      StatusCode::kInvalidArgument);
}

// Found by the apply fuzz target: metadata that is not an object reached
// WriteManagedFields, which called rapidjson's member functions on it
// (an assertion in debug builds, undefined behaviour in release).
TEST_F(ServerSideApplyTest, MetadataThatIsNotAnObject) {
  for (const char* md : {R"("web")", "[1]", "3", "true"}) {
    std::string config = std::string(R"({"kind":"Pod","metadata":)") + md + "}";
    live_.SetNull();
    EXPECT_EQ(Apply("m", config.c_str()).code(), StatusCode::kInvalidArgument)
        << md;
    ASSERT_TRUE(Apply("m", R"({"metadata":{"name":"p"},"spec":{"a":1}})").ok());
    EXPECT_EQ(Apply("m", config.c_str(), true).code(),
              StatusCode::kInvalidArgument)
        << md;
  }
  // null is an absent metadata: managedFields create it, on create and on
  // update (where the merge deletes the live metadata).
  live_.SetNull();
  ASSERT_TRUE(Apply("m", R"({"kind":"Pod","metadata":null})").ok());
  EXPECT_EQ(Entries().size(), 1u);
  ASSERT_TRUE(Apply("m", R"({"kind":"Pod","metadata":null,"spec":{}})").ok());
  EXPECT_EQ(Entries().size(), 1u);
}

TEST_F(ServerSideApplyTest, UpdateTracksChangedFieldsOnly) {
  ASSERT_TRUE(
      Update("kubectl-create", R"({"metadata":{"name":"x","labels":{"a":"1"}},
      "spec":{"replicas":1}})")
          .ok());
  ASSERT_TRUE(Update("kubectl-label",
                     R"({"metadata":{"name":"x","labels":{"a":"1","b":"2"}},
      "spec":{"replicas":1}})")
                  .ok());
  auto e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(
      e[0].fields.ToJsonString(),
      R"({"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:replicas":{}}})");
  EXPECT_EQ(e[1].manager, "kubectl-label");
  EXPECT_EQ(e[1].fields.ToJsonString(),
            R"({"f:metadata":{"f:labels":{"f:b":{}}}})");
  // Removing a label drops it from its owner.
  ASSERT_TRUE(
      Update("kubectl-label", R"({"metadata":{"name":"x","labels":{"a":"1"}},
      "spec":{"replicas":1}})")
          .ok());
  EXPECT_EQ(Entries().size(), 1u);
}

std::string JsonQuoteForTest(const std::string& s) {
  return JsonQuote(s, kGoJsonEscape);
}

// Moving from client-side to server-side apply (kube's lastAppliedManager
// and lastAppliedUpdater): `kubectl apply` wrote the object as the Update
// manager kubectl-client-side-apply with the last-applied annotation.
class LastAppliedTest : public ServerSideApplyTest {
 protected:
  // What `kubectl apply` (client-side) stores: replicas 2, minReadySeconds 5.
  void ClientSideApply() {
    ASSERT_TRUE(Update("kubectl-client-side-apply", kClientSide).ok());
  }
  std::string LastApplied() {
    const JsonValue* v =
        ResolveFieldPath(live_, {"f:metadata", "f:annotations",
                                 "f:kubectl.kubernetes.io/"
                                 "last-applied-configuration"});
    return v != nullptr && v->IsString() ? std::string(StringOf(*v)) : "";
  }
  int Replicas() {
    const JsonValue* v = ResolveFieldPath(live_, {"f:spec", "f:replicas"});
    return v != nullptr && v->IsInt() ? v->GetInt() : -1;
  }

  static constexpr char kClientSide[] =
      R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"d","annotations":{
        "kubectl.kubernetes.io/last-applied-configuration":
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"annotations\":{},\"name\":\"d\"},\"spec\":{\"minReadySeconds\":5,\"replicas\":2}}\n"}},
      "spec":{"replicas":2,"minReadySeconds":5}})";
  static constexpr char kServerSide[] =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
      "spec":{"replicas":9,"minReadySeconds":5,"paused":true}})";
};

// Every conflict is on a field whose live value is still the last-applied
// one: the apply by "kubectl" is forced, and the annotation now holds the
// applied configuration (sorted keys, Go's escaping, a final newline).
TEST_F(LastAppliedTest, KubectlTakesFieldsStillAsLastApplied) {
  ClientSideApply();
  Status st = Apply("kubectl", kServerSide);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(conflicts_.empty());
  EXPECT_EQ(Replicas(), 9);
  auto e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].manager, "kubectl-client-side-apply");
  // replicas changed hands; minReadySeconds, applied at the same value, is
  // shared.
  EXPECT_EQ(e[0].fields.ToJsonString(),
            R"({"f:metadata":{"f:annotations":{)"
            R"("f:kubectl.kubernetes.io/last-applied-configuration":{}}},)"
            R"("f:spec":{"f:minReadySeconds":{}}})");
  EXPECT_EQ(e[1].manager, "kubectl");
  EXPECT_EQ(e[1].operation, "Apply");
  EXPECT_EQ(
      e[1].fields.ToJsonString(),
      R"({"f:spec":{"f:minReadySeconds":{},"f:paused":{},"f:replicas":{}}})");
  EXPECT_EQ(LastApplied(),
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
            "\"metadata\":{\"name\":\"d\"},\"spec\":{\"minReadySeconds\":5,"
            "\"paused\":true,\"replicas\":9}}\n");
}

// A field someone changed after the client-side apply (live differs from
// the annotation) stays a conflict; only it is reported, as kube's
// conflictsDifference leaves the allowed ones out, and nothing is written.
TEST_F(LastAppliedTest, FieldChangedSinceLastAppliedStillConflicts) {
  ClientSideApply();
  std::string edited = kClientSide;
  const std::string spec = "\"spec\":{\"replicas\":2,";
  edited.replace(edited.find(spec), spec.size(), "\"spec\":{\"replicas\":3,");
  ASSERT_TRUE(Update("kubectl-edit", edited.c_str()).ok());
  ASSERT_EQ(Replicas(), 3);
  const std::string before = CanonicalJson(live_);
  Status st = Apply("kubectl", kServerSide);
  ASSERT_EQ(st.code(), StatusCode::kConflict) << st;
  EXPECT_EQ(st.message(),
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" "
            "using apps/v1: .spec.replicas");
  ASSERT_EQ(conflicts_.size(), 1u);
  EXPECT_EQ(CanonicalJson(live_), before);
  // Forced, it goes through like any apply.
  ASSERT_TRUE(Apply("kubectl", kServerSide, /*force=*/true).ok());
  EXPECT_EQ(Replicas(), 9);
}

// The rule is kubectl's own: another manager, the same body, conflicts; and
// neither its apply nor a forced one rewrites the annotation.
TEST_F(LastAppliedTest, OtherManagersConflictAndLeaveTheAnnotation) {
  ClientSideApply();
  const std::string annotation = LastApplied();
  Status st = Apply("other", kServerSide);
  ASSERT_EQ(st.code(), StatusCode::kConflict) << st;
  EXPECT_EQ(st.message(),
            "Apply failed with 1 conflict: conflict with "
            "\"kubectl-client-side-apply\" using apps/v1: .spec.replicas");
  ASSERT_TRUE(Apply("other", kServerSide, /*force=*/true).ok());
  EXPECT_EQ(Replicas(), 9);
  EXPECT_EQ(LastApplied(), annotation);
}

// Without the annotation (or with one for another apiVersion, or not JSON,
// or nesting deeper than the live object) nothing is allowed: the conflict
// stands for kubectl too.
TEST_F(LastAppliedTest, NoUsableAnnotationNoAllowance) {
  const std::string deep =
      "{\"apiVersion\":\"apps/v1\",\"spec\":{\"replicas\":2},"
      "\"x\":" +
      std::string(100, '[') + std::string(100, ']') + "}";
  for (const std::string& annotation :
       {std::string(), std::string("not json"),
        std::string("{\"apiVersion\":\"apps/v1beta1\",\"kind\":\"Deployment\","
                    "\"spec\":{\"replicas\":2}}"),
        deep}) {
    SCOPED_TRACE(annotation);
    live_.SetNull();
    std::string object =
        R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
            "spec":{"replicas":2}})";
    if (!annotation.empty()) {
      object.replace(object.find("\"name\":\"d\""), 10,
                     "\"name\":\"d\",\"annotations\":{\"kubectl.kubernetes."
                     "io/last-applied-configuration\":" +
                         JsonQuoteForTest(annotation) + "}");
    }
    ASSERT_TRUE(Update("kubectl-client-side-apply", object.c_str()).ok());
    Status st = Apply("kubectl", kServerSide);
    ASSERT_EQ(st.code(), StatusCode::kConflict) << st;
    EXPECT_EQ(LastApplied(), annotation);
  }
}

// An apply by kubectl that conflicts with nobody still rewrites an existing
// annotation; an object without one gets none.
TEST_F(LastAppliedTest, KubectlRewritesOnlyAnExistingAnnotation) {
  ASSERT_TRUE(Apply("kubectl", R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"d"},"spec":{"replicas":1}})")
                  .ok());
  EXPECT_EQ(LastApplied(), "");
  ASSERT_TRUE(Update("kubectl-annotate",
                     R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"d","annotations":{
        "kubectl.kubernetes.io/last-applied-configuration":"old"}},
      "spec":{"replicas":1}})")
                  .ok());
  ASSERT_TRUE(Apply("kubectl", R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"d","annotations":{"a":"<&>"}},
      "spec":{"replicas":1}})")
                  .ok());
  EXPECT_EQ(
      LastApplied(),
      "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
      "{\"annotations\":{\"a\":\"\\u003c\\u0026\\u003e\"},\"name\":\"d\"},"
      "\"spec\":{\"replicas\":1}}\n");
  ASSERT_TRUE(Apply("m", R"({"metadata":{"labels":{"x":"1"}}})").ok());
  EXPECT_EQ(LastApplied().substr(0, 14), "{\"apiVersion\":");
}

}  // namespace
}  // namespace kplane::patch
