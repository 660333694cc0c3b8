// The dynamic client and the dynamic informer against the real API server
// (an envtest Environment: store + ApiServer in process), over built-in
// resources read as unstructured objects: configmaps (namespaced) and nodes
// (cluster-scoped, with a status subresource).
#include "informer/dynamic_client.h"

#include <gtest/gtest.h>

#include "informer/api_errors.h"
#include "informer/dynamic_informer.h"
#include "informer/envtest.h"
#include "informer/test_util.h"
#include "objects/meta.h"

namespace kplane::informer {
namespace {

using testing::Recorder;

const GroupVersionResource kConfigMaps{"", "v1", "configmaps"};
const GroupVersionResource kNodes{"", "v1", "nodes"};

Unstructured ConfigMap(const std::string& ns, const std::string& name,
                       const std::map<std::string, std::string>& data,
                       const std::map<std::string, std::string>& labels = {}) {
  Unstructured u;
  u.SetApiVersion("v1");
  u.SetKind("ConfigMap");
  u.SetName(name);
  if (!ns.empty()) u.SetNamespace(ns);
  if (!labels.empty()) u.SetNestedStringMap({"metadata", "labels"}, labels);
  u.SetNestedStringMap({"data"}, data);
  return u;
}

class DynamicClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto env = envtest::Environment::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = env->release();
  }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  DynamicResourceClient ConfigMaps(const std::string& ns) {
    return env_->dynamic()->Resource(kConfigMaps).Namespace(ns);
  }
  static envtest::Environment* env_;
};
envtest::Environment* DynamicClientTest::env_ = nullptr;

TEST_F(DynamicClientTest, CreateGetUpdatePatchDelete) {
  DynamicResourceClient cms = ConfigMaps("default");
  StatusOr<Unstructured> created =
      cms.Create(ConfigMap("", "crud", {{"a", "1"}}));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->Namespace(), "default");
  EXPECT_FALSE(created->ResourceVersion().empty());
  EXPECT_FALSE(created->Uid().empty());

  EXPECT_TRUE(IsAlreadyExists(
      cms.Create(ConfigMap("default", "crud", {{"a", "1"}})).status()));

  StatusOr<Unstructured> got = cms.Get("crud");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->NestedString({"data", "a"}), "1");

  // Update is a compare-and-swap on the resourceVersion.
  Unstructured changed = *got;
  changed.SetNestedString({"data", "a"}, "2");
  StatusOr<Unstructured> updated = cms.Update(changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->NestedString({"data", "a"}), "2");
  Status stale = cms.Update(changed).status();  // the old resourceVersion
  EXPECT_TRUE(IsConflict(stale)) << stale;
  EXPECT_EQ(HttpCodeOf(stale), 409);

  // The three patch flavours custom resources support.
  StatusOr<Unstructured> merged =
      cms.Patch("crud", PatchType::kMergePatch, R"({"data":{"b":"x"}})");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->NestedString({"data", "b"}), "x");
  StatusOr<Unstructured> json_patched =
      cms.Patch("crud", PatchType::kJsonPatch,
                R"([{"op":"replace","path":"/data/a","value":"3"}])");
  ASSERT_TRUE(json_patched.ok()) << json_patched.status();
  EXPECT_EQ(json_patched->NestedString({"data", "a"}), "3");
  Unstructured apply = ConfigMap("default", "crud", {{"c", "applied"}});
  StatusOr<Unstructured> applied =
      cms.Apply(apply, {.field_manager = "dynamic-test", .force = true});
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->NestedString({"data", "c"}), "applied");
  EXPECT_EQ(cms.Apply(apply, {}).status().code(),
            StatusCode::kInvalidArgument);  // no field manager

  // Errors are the typed API errors.
  StatusOr<Unstructured> missing = cms.Get("nope");
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status();
  EXPECT_EQ(missing.status().message(), "configmaps \"nope\" not found");
  StatusOr<Unstructured> invalid =
      cms.Create(ConfigMap("default", "Bad_Name", {}));
  EXPECT_TRUE(IsInvalid(invalid.status())) << invalid.status();

  ASSERT_TRUE(cms.Delete("crud").ok());
  EXPECT_TRUE(IsNotFound(cms.Get("crud").status()));
  EXPECT_TRUE(IsNotFound(cms.Delete("crud")));
}

TEST_F(DynamicClientTest, RefusesAnObjectOfAnotherNamespace) {
  StatusOr<Unstructured> r =
      ConfigMaps("default").Create(ConfigMap("kube-system", "x", {}));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(HttpCodeOf(r.status()), 0) << "refused before any request";
  EXPECT_TRUE(IsNotFound(ConfigMaps("kube-system").Get("x").status()));
}

TEST_F(DynamicClientTest, ListsWithSelectorsAndPages) {
  DynamicResourceClient cms = ConfigMaps("kube-public");
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(cms.Create(ConfigMap("", "page-" + std::to_string(i),
                                     {{"i", std::to_string(i)}},
                                     {{"parity", i % 2 ? "odd" : "even"}}))
                    .ok());
  }
  StatusOr<UnstructuredList> odd = cms.List({.label_selector = "parity=odd"});
  ASSERT_TRUE(odd.ok()) << odd.status();
  ASSERT_EQ(odd->items.size(), 2u);
  EXPECT_EQ(odd->items[0].Name(), "page-1");
  EXPECT_EQ(odd->kind, "ConfigMapList");
  StatusOr<UnstructuredList> by_name =
      cms.List({.field_selector = "metadata.name=page-3"});
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  ASSERT_EQ(by_name->items.size(), 1u);

  std::vector<std::string> names;
  ListOptions page{.label_selector = "parity", .limit = 2};
  for (int pages = 0;; ++pages) {
    ASSERT_LT(pages, 5);
    StatusOr<UnstructuredList> l = cms.List(page);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_LE(l->items.size(), 2u);
    for (const Unstructured& u : l->items) names.push_back(u.Name());
    if (l->continue_token.empty()) break;
    page.continue_token = l->continue_token;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"page-0", "page-1", "page-2",
                                             "page-3", "page-4"}));

  ASSERT_TRUE(cms.DeleteCollection({}, {.label_selector = "parity=even"}).ok());
  StatusOr<UnstructuredList> left = cms.List({.label_selector = "parity"});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->items.size(), 2u);
}

TEST_F(DynamicClientTest, ClusterScopedResourceAndStatusSubresource) {
  DynamicResourceClient nodes = env_->dynamic()->Resource(kNodes);
  Unstructured node;
  node.SetApiVersion("v1");
  node.SetKind("Node");
  node.SetName("dyn-node");
  node.SetNestedStringMap({"metadata", "labels"}, {{"zone", "a"}});
  StatusOr<Unstructured> created = nodes.Create(node);
  ASSERT_TRUE(created.ok()) << created.status();
  // status goes through the subresource; the main resource ignores it.
  Unstructured with_status = *created;
  rapidjson::Value addresses(rapidjson::kArrayType);
  rapidjson::Value address(rapidjson::kObjectType);
  address.AddMember("type", "InternalIP", with_status.allocator());
  address.AddMember("address", "10.0.0.9", with_status.allocator());
  addresses.PushBack(address, with_status.allocator());
  with_status.SetNested({"status", "addresses"}, addresses);
  StatusOr<Unstructured> updated = nodes.UpdateStatus(with_status);
  ASSERT_TRUE(updated.ok()) << updated.status();
  StatusOr<Unstructured> got = nodes.Get("dyn-node", {}, "status");
  ASSERT_TRUE(got.ok()) << got.status();
  const rapidjson::Value* got_addresses = got->Nested({"status", "addresses"});
  ASSERT_NE(got_addresses, nullptr);
  ASSERT_TRUE(got_addresses->IsArray());
  EXPECT_EQ(got_addresses->Size(), 1u);
  ASSERT_TRUE(nodes.Delete("dyn-node").ok());
}

TEST_F(DynamicClientTest, WatchDeliversUnstructuredObjects) {
  DynamicResourceClient cms = ConfigMaps("kube-node-lease");
  StatusOr<UnstructuredList> list = cms.List();
  ASSERT_TRUE(list.ok());
  StatusOr<std::unique_ptr<WatchStream>> watch = cms.Watch(
      {.resource_version = list->resource_version, .timeout_seconds = 30});
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(cms.Create(ConfigMap("", "watched", {{"k", "v"}})).ok());
  ASSERT_TRUE(
      cms.Patch("watched", PatchType::kMergePatch, R"({"data":{"k":"w"}})")
          .ok());
  ASSERT_TRUE(cms.Delete("watched").ok());
  std::vector<std::string> seen;
  WatchEvent event;
  while (seen.size() < 3 && (*watch)->Next(&event)) {
    ASSERT_NE(event.object, nullptr);
    StatusOr<Unstructured> u = Unstructured::FromObject(*event.object);
    ASSERT_TRUE(u.ok()) << u.status();
    seen.push_back(std::string(EventTypeName(event.type)) + " " + u->Name() +
                   " " + u->NestedString({"data", "k"}).value_or(""));
  }
  (*watch)->Stop();
  EXPECT_EQ(seen,
            (std::vector<std::string>{"ADDED watched v", "MODIFIED watched w",
                                      "DELETED watched w"}));
}

TEST_F(DynamicClientTest, MapKindAsksDiscovery) {
  StatusOr<ResourceMapping> cm = env_->dynamic()->MapKind("v1", "ConfigMap");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ(cm->gvr, kConfigMaps);
  EXPECT_TRUE(cm->namespaced);
  StatusOr<ResourceMapping> deploy =
      env_->dynamic()->MapKind("apps/v1", "Deployment");
  ASSERT_TRUE(deploy.ok()) << deploy.status();
  EXPECT_EQ(deploy->gvr.ToString(), "deployments.v1.apps");
  StatusOr<ResourceMapping> node = env_->dynamic()->MapKind("v1", "Node");
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE(node->namespaced);
  StatusOr<ResourceMapping> none =
      env_->dynamic()->MapKind("example.com/v1", "Widget");
  EXPECT_TRUE(IsNotFound(none.status()));
  EXPECT_EQ(none.status().message(),
            "no matches for kind \"Widget\" in version \"example.com/v1\"");
  EXPECT_TRUE(IsNotFound(env_->dynamic()->MapKind("v1", "Widget").status()));
}

// The dynamic informer: the typed informer machinery over unstructured
// objects, with a protobuf-preferring RestClient (the unstructured resource
// is still read as JSON).
TEST_F(DynamicClientTest, InformerCachesNotifiesAndLists) {
  RestClientOptions ro = env_->rest_options();
  ro.protobuf = true;
  StatusOr<std::unique_ptr<RestClient>> rest = RestClient::New(ro);
  ASSERT_TRUE(rest.ok());
  DynamicClient dyn(rest->get());
  DynamicResourceClient cms = dyn.Resource(kConfigMaps).Namespace("inf");
  Unstructured ns;
  ns.SetApiVersion("v1");
  ns.SetKind("Namespace");
  ns.SetName("inf");
  ASSERT_TRUE(dyn.Resource({"", "v1", "namespaces"}).Create(ns).ok());
  ASSERT_TRUE(cms.Create(ConfigMap("", "before", {{"k", "0"}})).ok());
  // The informer's first LIST asks for resourceVersion "0", which the watch
  // cache answers at whatever revision it has reached; a consistent LIST
  // waits until the cache holds "before", so the informer's list has it and
  // its add is "initial" (it once came as a watch event under ASan).
  ASSERT_TRUE(cms.List().ok());

  DynamicSharedInformerFactory factory(&dyn, {.scope = {.ns = "inf"}});
  SharedIndexInformer* informer = factory.ForResource(kConfigMaps);
  EXPECT_EQ(informer, factory.ForResource(kConfigMaps));  // shared
  Recorder events;
  auto describe = [](const ObjectPtr& o) {
    StatusOr<Unstructured> u = Unstructured::FromObject(*o);
    return u.ok()
               ? u->Name() + "=" + u->NestedString({"data", "k"}).value_or("")
               : u.status().ToString();
  };
  informer->AddEventHandler(EventHandlerFuncs{
      .on_add =
          [&](const ObjectPtr& o, bool initial) {
            events.Record("add " + describe(o) + (initial ? " initial" : ""));
          },
      .on_update =
          [&](const ObjectPtr& old_obj, const ObjectPtr& new_obj) {
            events.Record("update " + describe(old_obj) + " -> " +
                          describe(new_obj));
          },
      .on_delete =
          [&](const DeletedObject& d) { events.Record("delete " + d.key); }});
  factory.Start();
  ASSERT_TRUE(factory.WaitForCacheSync(testing::kTestDeadline));

  ASSERT_TRUE(cms.Create(ConfigMap("", "after", {{"k", "1"}})).ok());
  ASSERT_TRUE(
      cms.Patch("after", PatchType::kMergePatch, R"({"data":{"k":"2"}})").ok());
  ASSERT_TRUE(cms.Delete("before").ok());
  ASSERT_TRUE(events.WaitForCount(4));
  EXPECT_EQ(events.Items(),
            (std::vector<std::string>{"add before=0 initial", "add after=1",
                                      "update after=1 -> after=2",
                                      "delete inf/before"}));

  Lister lister = factory.ListerFor(kConfigMaps);
  StatusOr<ObjectPtr> after = lister.ByNamespace("inf").Get("after");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(describe(*after), "after=2");
  Status gone = lister.ByNamespace("inf").Get("before").status();
  EXPECT_TRUE(IsNotFound(gone));
  EXPECT_EQ(gone.message(), "configmaps \"before\" not found");
  StatusOr<std::vector<ObjectPtr>> in_ns =
      informer->GetIndexer().ByIndex(kNamespaceIndex, "inf");
  ASSERT_TRUE(in_ns.ok());
  EXPECT_EQ(in_ns->size(), 1u);
  EXPECT_GT(informer->ReflectorStats().watches, 0);
  factory.Shutdown();
}

}  // namespace
}  // namespace kplane::informer
