// Garbage collection of custom resources end to end: an in-process store +
// API server (informer/envtest.h) and the controller manager running only
// the garbage collector, over plain HTTP with AlwaysAllow. Also the
// namespace controller emptying a deleted namespace of custom resources.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "base/file_system.h"
#include "base/mutex.h"
#include "controllers/controller_manager.h"
#include "controllers/gc_resource_monitor.h"
#include "informer/api_errors.h"
#include "informer/dynamic_informer.h"
#include "informer/envtest.h"

namespace kplane::controllers {
namespace {

using informer::GroupVersionResource;
using informer::Unstructured;
using informer::envtest::Environment;

constexpr Duration kWait = seconds(20);
const GroupVersionResource kWidgets{"example.com", "v1", "widgets"};
const GroupVersionResource kConfigMaps{"", "v1", "configmaps"};
const GroupVersionResource kNamespaces{"", "v1", "namespaces"};
const GroupVersionResource kCrds{"apiextensions.k8s.io", "v1",
                                 "customresourcedefinitions"};

// testdata/crd/widgets.yaml, read once.
const std::string& WidgetCrd() {
  static const std::string* yaml = [] {
    StatusOr<std::string> text =
        ReadFile(FileSystem::Default(), KPLANE_TESTDATA "/crd/widgets.yaml");
    CHECK(text.ok()) << text.status();
    return new std::string(std::move(*text));
  }();
  return *yaml;
}

// Waits on informer events (no polling) for conditions over widgets and
// configmaps.
class Observer {
 public:
  explicit Observer(informer::DynamicClient* dyn,
                    std::vector<GroupVersionResource> resources = {kWidgets,
                                                                   kConfigMaps})
      : factory_(dyn) {
    for (const GroupVersionResource& gvr : resources) {
      factory_.ForResource(gvr)->AddEventHandler(
          informer::MakeHandler(informer::EventHandlerFuncs{
              .on_add = [this](const informer::ObjectPtr&, bool) { Notify(); },
              .on_update = [this](const informer::ObjectPtr&,
                                  const informer::ObjectPtr&) { Notify(); },
              .on_delete =
                  [this](const informer::DeletedObject&) { Notify(); }}));
    }
    factory_.Start();
    CHECK(factory_.WaitForCacheSync(kWait));
  }
  ~Observer() { factory_.Shutdown(); }

  // The cached object, or null.
  std::optional<Unstructured> Get(const GroupVersionResource& gvr,
                                  const std::string& name) {
    auto o = factory_.ListerFor(gvr).ByNamespace("default").Get(name);
    if (!o.ok()) return std::nullopt;
    auto u = Unstructured::FromObject(**o);
    if (!u.ok()) return std::nullopt;
    return std::move(*u);
  }
  // Whether the cache holds `key` ("<ns>/<name>", or a cluster-scoped
  // object's name).
  bool Has(const GroupVersionResource& gvr, const std::string& key) {
    return factory_.ListerFor(gvr).Get(key).ok();
  }
  bool WaitFor(const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + kWait;
    MutexLock l(&mu_);
    for (;;) {
      uint64_t seen = events_;
      l.Unlock();
      if (pred()) return true;
      l.Lock();
      if (!cv_.wait_until(l.native(), deadline,
                          [&]() REQUIRES(mu_) { return events_ != seen; })) {
        l.Unlock();
        return pred();
      }
    }
  }

 private:
  void Notify() {
    MutexLock l(&mu_);
    ++events_;
    cv_.notify_all();
  }
  informer::DynamicSharedInformerFactory factory_;
  Mutex mu_;
  std::condition_variable cv_;
  uint64_t events_ GUARDED_BY(mu_) = 0;
};

class CustomResourceGcE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = Environment::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    ControllerManagerOptions o;
    o.server = env_->server();
    o.leader_elect = false;
    o.port = 0;
    o.metrics = &registry_;
    o.controllers = {"garbagecollector"};
    auto cm = ControllerManager::Start(o);
    ASSERT_TRUE(cm.ok()) << cm.status();
    cm_ = std::move(*cm);
    ASSERT_TRUE(cm_->WaitLeading(kWait));
    // The CRD comes after the collector started: it must be picked up.
    ASSERT_TRUE(env_->ApplyYaml(WidgetCrd()).ok());
    observer_ = std::make_unique<Observer>(env_->dynamic());
    parent_uid_ = Create(kWidgets, "Widget", "example.com/v1", "parent", "");
    // The child blocks its owner's foreground deletion, the ConfigMap not.
    Create(kWidgets, "Widget", "example.com/v1", "child",
           OwnerRefs({{"parent", parent_uid_}}, /*block=*/true));
    Create(kConfigMaps, "ConfigMap", "v1", "settings",
           OwnerRefs({{"parent", parent_uid_}}, /*block=*/false));
  }
  // `,"ownerReferences":[...]` to the widgets `owners` (name, uid).
  static std::string OwnerRefs(
      const std::vector<std::pair<std::string, std::string>>& owners,
      bool block) {
    std::string out = R"(,"ownerReferences":[)";
    for (const auto& [name, uid] : owners) {
      if (out.back() == '}') out += ",";
      out += R"({"apiVersion":"example.com/v1","kind":"Widget","name":")" +
             name + R"(","uid":")" + uid + R"(","blockOwnerDeletion":)" +
             (block ? "true" : "false") + "}";
    }
    return out + "]";
  }
  void TearDown() override {
    observer_.reset();
    if (cm_ != nullptr) cm_->Stop();
    if (env_ != nullptr) env_->Stop();
  }

  std::string Create(const GroupVersionResource& gvr, const std::string& kind,
                     const std::string& api_version, const std::string& name,
                     const std::string& extra_metadata) {
    auto u = Unstructured::Parse(
        R"({"apiVersion":")" + api_version + R"(","kind":")" + kind +
        R"(","metadata":{"name":")" + name + R"(","namespace":"default")" +
        extra_metadata + "}}");
    CHECK(u.ok()) << u.status();
    auto created =
        env_->dynamic()->Resource(gvr).Namespace("default").Create(*u);
    CHECK(created.ok()) << created.status();
    return created->Uid();
  }
  Status DeleteParent(const std::string& policy) {
    return DeleteWidget("parent", policy);
  }
  Status DeleteWidget(const std::string& name, const std::string& policy) {
    objects::metav1::DeleteOptions opts;
    if (!policy.empty()) opts.set_propagationpolicy(policy);
    return env_->dynamic()->Resource(kWidgets).Namespace("default").Delete(
        name, opts);
  }
  bool Terminating(const GroupVersionResource& gvr, const std::string& name) {
    auto o = observer_->Get(gvr, name);
    return o.has_value() &&
           o->Nested({"metadata", "deletionTimestamp"}) != nullptr;
  }
  bool Gone(const GroupVersionResource& gvr, const std::string& name) {
    return !observer_->Get(gvr, name).has_value();
  }

  metrics::Registry registry_;
  std::unique_ptr<Environment> env_;
  std::unique_ptr<ControllerManager> cm_;
  std::unique_ptr<Observer> observer_;
  std::string parent_uid_;
};

TEST_F(CustomResourceGcE2eTest, BackgroundDeletionCollectsDependents) {
  ASSERT_TRUE(DeleteParent("").ok());
  EXPECT_TRUE(observer_->WaitFor([&] {
    return Gone(kWidgets, "parent") && Gone(kWidgets, "child") &&
           Gone(kConfigMaps, "settings");
  })) << "the custom resource and the ConfigMap it owned were not collected";
}

TEST_F(CustomResourceGcE2eTest, OrphanKeepsDependentsWithoutTheReference) {
  ASSERT_TRUE(DeleteParent("Orphan").ok());
  auto unowned = [&](const GroupVersionResource& gvr, const char* name) {
    auto o = observer_->Get(gvr, name);
    return o.has_value() &&
           o->Nested({"metadata", "ownerReferences"}) == nullptr;
  };
  EXPECT_TRUE(observer_->WaitFor([&] {
    return Gone(kWidgets, "parent") && unowned(kWidgets, "child") &&
           unowned(kConfigMaps, "settings");
  })) << "orphaning did not complete";
}

TEST_F(CustomResourceGcE2eTest, ForegroundWaitsForDependents) {
  // The child cannot go before its own finalizer is removed, so the owner
  // must stay (Terminating, with foregroundDeletion) until then.
  auto widgets = env_->dynamic()->Resource(kWidgets).Namespace("default");
  ASSERT_TRUE(widgets
                  .Patch("child", informer::PatchType::kMergePatch,
                         R"({"metadata":{"finalizers":["example.com/hold"]}})")
                  .ok());
  ASSERT_TRUE(DeleteParent("Foreground").ok());
  ASSERT_TRUE(observer_->WaitFor([&] {
    auto child = observer_->Get(kWidgets, "child");
    return Gone(kConfigMaps, "settings") && child.has_value() &&
           child->Nested({"metadata", "deletionTimestamp"}) != nullptr;
  }));
  auto parent = observer_->Get(kWidgets, "parent");
  ASSERT_TRUE(parent.has_value()) << "the owner went before its dependents";
  const rapidjson::Value* finalizers =
      parent->Nested({"metadata", "finalizers"});
  ASSERT_NE(finalizers, nullptr);
  EXPECT_STREQ((*finalizers)[0].GetString(), "foregroundDeletion");

  ASSERT_TRUE(widgets
                  .Patch("child", informer::PatchType::kMergePatch,
                         R"({"metadata":{"finalizers":null}})")
                  .ok());
  EXPECT_TRUE(observer_->WaitFor(
      [&] { return Gone(kWidgets, "parent") && Gone(kWidgets, "child"); }));
}

// Only blockOwnerDeletion=true references hold a foreground deletion
// (Kubernetes' processDeletingDependentsItem): the ConfigMap, held by a
// finalizer of its own, is deleted but does not keep its owner.
TEST_F(CustomResourceGcE2eTest, ForegroundDoesNotWaitForNonBlockingDependents) {
  auto configmaps = env_->dynamic()->Resource(kConfigMaps).Namespace("default");
  ASSERT_TRUE(configmaps
                  .Patch("settings", informer::PatchType::kMergePatch,
                         R"({"metadata":{"finalizers":["example.com/hold"]}})")
                  .ok());
  ASSERT_TRUE(DeleteParent("Foreground").ok());
  EXPECT_TRUE(observer_->WaitFor([&] {
    return Gone(kWidgets, "parent") && Gone(kWidgets, "child") &&
           Terminating(kConfigMaps, "settings");
  })) << "parent left: "
      << !Gone(kWidgets, "parent")
      << ", child left: " << !Gone(kWidgets, "child")
      << ", settings terminating: " << Terminating(kConfigMaps, "settings");
  ASSERT_TRUE(configmaps
                  .Patch("settings", informer::PatchType::kMergePatch,
                         R"({"metadata":{"finalizers":null}})")
                  .ok());
  EXPECT_TRUE(
      observer_->WaitFor([&] { return Gone(kConfigMaps, "settings"); }));
}

// Kubernetes' e2e "should not be blocked by dependency circle": c1 owned by
// c3, c2 by c1, c3 by c2, every reference blocking; deleting c1 with
// Foreground removes all three instead of each waiting for the next.
TEST_F(CustomResourceGcE2eTest, ForegroundDeletionUnwindsACycle) {
  std::map<std::string, std::string> uid;
  for (const char* name : {"c1", "c2", "c3"}) {
    uid[name] = Create(kWidgets, "Widget", "example.com/v1", name, "");
  }
  auto widgets = env_->dynamic()->Resource(kWidgets).Namespace("default");
  for (const auto& [name, owner] : std::map<std::string, std::string>{
           {"c1", "c3"}, {"c2", "c1"}, {"c3", "c2"}}) {
    std::string refs = OwnerRefs({{owner, uid[owner]}}, /*block=*/true);
    ASSERT_TRUE(widgets
                    .Patch(name, informer::PatchType::kMergePatch,
                           R"({"metadata":{)" + refs.substr(1) + "}}")
                    .ok());
  }
  ASSERT_TRUE(DeleteWidget("c1", "Foreground").ok());
  EXPECT_TRUE(observer_->WaitFor([&] {
    return Gone(kWidgets, "c1") && Gone(kWidgets, "c2") && Gone(kWidgets, "c3");
  })) << "left: c1 "
      << !Gone(kWidgets, "c1") << ", c2 " << !Gone(kWidgets, "c2") << ", c3 "
      << !Gone(kWidgets, "c3");
}

// The namespace controller empties a deleted namespace of custom resources
// (found through discovery) before it lets the namespace go.
TEST(NamespaceCustomResourcesTest, DeletedNamespaceLosesItsCustomResources) {
  auto started = Environment::Start();
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<Environment> env = std::move(*started);
  ASSERT_TRUE(env->ApplyYaml(WidgetCrd()).ok());
  ASSERT_TRUE(
      env->ApplyYaml("{apiVersion: v1, kind: Namespace, metadata: {name: ns1}}")
          .ok());
  ASSERT_TRUE(env->ApplyYaml("{apiVersion: example.com/v1, kind: Widget, "
                             "metadata: {name: w1, namespace: ns1}}")
                  .ok());
  metrics::Registry registry;
  ControllerManagerOptions o;
  o.server = env->server();
  o.leader_elect = false;
  o.port = 0;
  o.metrics = &registry;
  o.controllers = {"namespace"};
  auto cm = ControllerManager::Start(o);
  ASSERT_TRUE(cm.ok()) << cm.status();
  ASSERT_TRUE((*cm)->WaitLeading(kWait));
  {
    Observer observer(env->dynamic(), {kWidgets, kNamespaces});
    ASSERT_TRUE(observer.Has(kWidgets, "ns1/w1"));
    ASSERT_TRUE(env->dynamic()->Resource(kNamespaces).Delete("ns1").ok());
    EXPECT_TRUE(observer.WaitFor([&] {
      return !observer.Has(kWidgets, "ns1/w1") &&
             !observer.Has(kNamespaces, "ns1");
    })) << "widget left: "
        << observer.Has(kWidgets, "ns1/w1")
        << ", namespace left: " << observer.Has(kNamespaces, "ns1");
  }
  (*cm)->Stop();
  env->Stop();
}

// The monitor over discovery: built-ins it has no typed cache for, a CRD
// added, the CRD deleted (its resource dropped, the collector unharmed).
TEST(GcResourceMonitorTest, FollowsDiscoveryAsCrdsComeAndGo) {
  auto env = Environment::Start();
  ASSERT_TRUE(env.ok()) << env.status();
  informer::Indexer pods, replicasets, deployments;
  RestApiWriter writer((*env)->client());
  metrics::Registry registry;
  GarbageCollector gc({.api = &writer,
                       .pods = &pods,
                       .replicasets = &replicasets,
                       .deployments = &deployments,
                       .metrics = &registry});
  GcResourceMonitor monitor(
      {.client = (*env)->client(), .gc = &gc, .resync_period = hours(1)});
  ASSERT_TRUE(monitor.Resync().ok());
  std::vector<std::string> followed = monitor.Monitored();
  EXPECT_THAT(followed, ::testing::Contains("configmaps"));
  EXPECT_THAT(followed, ::testing::Contains("leases.coordination.k8s.io"));
  EXPECT_THAT(followed, ::testing::Not(::testing::Contains("pods")));
  EXPECT_THAT(followed, ::testing::Not(::testing::Contains("events")));
  EXPECT_THAT(followed,
              ::testing::Not(::testing::Contains("events.events.k8s.io")));
  EXPECT_TRUE(gc.Follows("configmaps"));

  ASSERT_TRUE((*env)->ApplyYaml(WidgetCrd()).ok());
  ASSERT_TRUE(monitor.Resync().ok());
  EXPECT_THAT(monitor.Monitored(), ::testing::Contains("widgets.example.com"));
  EXPECT_TRUE(gc.Follows("widgets.example.com"));

  ASSERT_TRUE(
      (*env)->dynamic()->Resource(kCrds).Delete("widgets.example.com").ok());
  // Discovery drops the resource once the CRD is gone (no event to await
  // on discovery itself: re-ask it after each CRD event).
  auto crd_gone = [&] {
    return !(*env)->dynamic()->MapKind("example.com/v1", "Widget").ok();
  };
  informer::DynamicSharedInformerFactory crds((*env)->dynamic());
  Mutex mu;
  std::condition_variable cv;
  crds.ForResource(kCrds)->AddEventHandler(
      informer::MakeHandler(informer::EventHandlerFuncs{
          .on_delete = [&](const informer::DeletedObject&) {
            MutexLock l(&mu);
            cv.notify_all();
          }}));
  crds.Start();
  {
    MutexLock l(&mu);
    cv.wait_for(l.native(), std::chrono::seconds(20),
                [&] { return crd_gone(); });
  }
  crds.Shutdown();
  ASSERT_TRUE(crd_gone());
  ASSERT_TRUE(monitor.Resync().ok());
  EXPECT_THAT(monitor.Monitored(),
              ::testing::Not(::testing::Contains("widgets.example.com")));
  EXPECT_FALSE(gc.Follows("widgets.example.com"));
  EXPECT_TRUE(gc.Sync("widgets.example.com/default/anything").ok());
  monitor.Stop();
  EXPECT_FALSE(gc.Follows("configmaps"));
}

}  // namespace
}  // namespace kplane::controllers
