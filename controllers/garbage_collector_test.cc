#include "controllers/garbage_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "base/logging.h"
#include "base/mutex.h"
#include "controllers/test_objects.h"
#include "informer/event_recorder.h"
#include "informer/unstructured.h"
#include "objects/meta.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using namespace testing;  // NOLINT: test builders

// A FakeApiWriter that also records each deletion's propagationPolicy
// and uid precondition: "<name>: <policy> <uid>", and refuses full GETs
// (the collector reads owners' metadata only).
class RecordingApiWriter : public FakeApiWriter {
 public:
  // The collector reads an owner's metadata only (GetMetadata), as
  // Kubernetes' does through its metadata client: a full read fails here.
  StatusOr<ObjectPtr> Get(const objects::ResourceInfo& resource,
                          std::string_view ns, std::string_view name) override {
    return InternalError("a full GET of " + resource.resource + " " +
                         std::string(ns) + "/" + std::string(name) +
                         ": the collector reads owners' metadata only");
  }
  Status Delete(const objects::ResourceInfo& resource, std::string_view ns,
                std::string_view name,
                const metav1::DeleteOptions& options) override {
    {
      MutexLock l(&mu_);
      deletions_.push_back(std::string(name) + ": " +
                           options.propagationpolicy() + " " +
                           options.preconditions().uid());
    }
    return FakeApiWriter::Delete(resource, ns, name, options);
  }
  std::vector<std::string> Deletions() const {
    MutexLock l(&mu_);
    return deletions_;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> deletions_ GUARDED_BY(mu_);
};

// A reference to `owner` of `api_version`/`kind`, blocking its foreground
// deletion or not.
metav1::OwnerReference RefTo(const std::string& api_version,
                             const std::string& kind,
                             const metav1::ObjectMeta& owner, bool block) {
  metav1::OwnerReference r;
  r.set_apiversion(api_version);
  r.set_kind(kind);
  r.set_name(owner.name());
  r.set_uid(owner.uid());
  r.set_blockownerdeletion(block);
  return r;
}

// `m` as the API server leaves it after a DELETE with `policy`
// Foreground: deletionTimestamp and the foregroundDeletion finalizer.
void MarkDeletingDependents(metav1::ObjectMeta* m) {
  objects::SetTime(m->mutable_deletiontimestamp(), int64_t{1700000000});
  m->add_finalizers("foregroundDeletion");
}

class GarbageCollectorTest : public ::testing::Test {
 protected:
  GarbageCollectorTest()
      : pods_({{std::string(informer::kNamespaceIndex),
                informer::NamespaceIndexFunc},
               {kOwnerUidIndex, OwnerUidIndexFunc}}),
        replicasets_({{std::string(informer::kNamespaceIndex),
                       informer::NamespaceIndexFunc},
                      {kOwnerUidIndex, OwnerUidIndexFunc}}),
        gc_({.api = &fake_,
             .pods = &pods_,
             .replicasets = &replicasets_,
             .deployments = &deployments_,
             .clock = &clock_,
             .metrics = &reg_}) {
    // The server as the caches show it: the collector reads a dependent
    // (and an owner missing from its cache) live before deleting it.
    ServeCaches(&fake_);
  }
  void ServeCaches(FakeApiWriter* fake) {
    fake->ServeLiveFrom(PodsResource(), &pods_);
    fake->ServeLiveFrom(ReplicaSetsResource(), &replicasets_);
    fake->ServeLiveFrom(DeploymentsResource(), &deployments_);
  }

  // Takes every key off the collector's queue, in order.
  std::vector<std::string> DrainQueue() {
    std::vector<std::string> keys;
    while (gc_.QueueDepth() > 0) {
      std::optional<std::string> key = gc_.queue().Get();
      gc_.queue().Done(*key);
      keys.push_back(*key);
    }
    return keys;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  RecordingApiWriter fake_;
  informer::Indexer pods_, replicasets_, deployments_;
  GarbageCollector gc_;
};

TEST_F(GarbageCollectorTest, DependentsTable) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  auto rs_recreated = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  rs_recreated->mutable_metadata()->set_uid("uid-web-2");
  auto d = NewDeployment("default", "app", 1, {{"app", "web"}});
  struct Case {
    std::string name;
    std::vector<std::shared_ptr<google::protobuf::Message>> cached;  // owners
    std::vector<std::shared_ptr<google::protobuf::Message>> live;
    std::vector<const metav1::ObjectMeta*> owners;  // of the pod
    std::vector<std::string> actions;
  };
  std::vector<Case> cases = {
      {"owner in cache", {rs}, {}, {&rs->metadata()}, {}},
      {"owner gone", {}, {}, {&rs->metadata()}, {"delete pods default/p"}},
      {"owner only live (cache lags)", {}, {rs}, {&rs->metadata()}, {}},
      {"owner recreated with a new uid",
       {rs_recreated},
       {rs_recreated},
       {&rs->metadata()},
       {"delete pods default/p"}},
      {"one of two owners gone",
       {d},
       {},
       {&rs->metadata(), &d->metadata()},
       {"update pods default/p"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RecordingApiWriter fake;
    ServeCaches(&fake);
    GarbageCollector gc({.api = &fake,
                         .pods = &pods_,
                         .replicasets = &replicasets_,
                         .deployments = &deployments_,
                         .clock = &clock_,
                         .metrics = &reg_});
    replicasets_.Replace({});
    deployments_.Replace({});
    for (const auto& o : c.cached) {
      if (dynamic_cast<appsv1::ReplicaSet*>(o.get())) {
        replicasets_.Upsert(o);
      } else {
        deployments_.Upsert(o);
      }
    }
    for (const auto& o : c.live) {
      fake.SetLive(dynamic_cast<appsv1::ReplicaSet*>(o.get())
                       ? ReplicaSetsResource()
                       : DeploymentsResource(),
                   o);
    }
    auto pod = NewPod("default", "p");
    for (const metav1::ObjectMeta* m : c.owners) {
      OwnedBy(pod->mutable_metadata(),
              m == &d->metadata() ? "Deployment" : "ReplicaSet", *m);
    }
    pods_.Replace({pod});
    ASSERT_TRUE(gc.Sync("pods/default/p").ok());
    EXPECT_THAT(fake.Actions(), ::testing::ElementsAreArray(c.actions));
    if (c.name == "one of two owners gone") {
      auto updated =
          std::dynamic_pointer_cast<const corev1::Pod>(fake.Written()[0]);
      ASSERT_EQ(updated->metadata().ownerreferences_size(), 1);
      EXPECT_EQ(updated->metadata().ownerreferences(0).kind(), "Deployment");
    }
  }
}

// An owner missing from the cache whose live read fails (not a 404): the
// sync fails, to be retried, and the dependent stays untouched.
TEST_F(GarbageCollectorTest, FailedOwnerReadKeepsTheDependent) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  fake_.SetLive(ReplicaSetsResource(), rs);
  auto pod = NewPod("default", "p");
  OwnedBy(pod->mutable_metadata(), "ReplicaSet", rs->metadata());
  pods_.Replace({pod});
  fake_.FailNext("get-metadata replicasets default/web",
                 UnavailableError("etcdserver: request timed out"));
  Status s = gc_.Sync("pods/default/p");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // Read again on the retry: the owner is there, the pod stays.
  EXPECT_TRUE(gc_.Sync("pods/default/p").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

// A live read that answers no uid (not an object's metadata) is no ground
// to act on, for an owner or for the dependent itself.
TEST_F(GarbageCollectorTest, LiveAnswerWithoutUidDeletesNothing) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  auto pod = NewPod("default", "p");
  OwnedBy(pod->mutable_metadata(), "ReplicaSet", rs->metadata());
  pods_.Replace({pod});
  auto no_uid = [](auto obj) {
    obj->mutable_metadata()->clear_uid();
    return obj;
  };
  fake_.SetLive(ReplicaSetsResource(),
                no_uid(std::make_shared<appsv1::ReplicaSet>(*rs)));
  EXPECT_EQ(gc_.Sync("pods/default/p").code(), StatusCode::kInternal);
  fake_.RemoveLive(ReplicaSetsResource(), "default", "web");  // owner gone
  fake_.SetLive(PodsResource(), no_uid(std::make_shared<corev1::Pod>(*pod)));
  EXPECT_EQ(gc_.Sync("pods/default/p").code(), StatusCode::kInternal);
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

// The cache lags behind a dependent whose owner orphaned it and then went
// (the race of `kubectl delete --cascade=orphan`): the collector reads the
// dependent as it is now before deleting it, and leaves it alone.
TEST_F(GarbageCollectorTest, StaleCachedReferenceDoesNotDeleteAnOrphan) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  auto pod = NewPod("default", "p");
  auto orphaned = std::make_shared<corev1::Pod>(*pod);  // no references
  OwnedBy(pod->mutable_metadata(), "ReplicaSet", rs->metadata());
  pods_.Replace({pod});  // still with its reference; the owner is gone
  fake_.SetLive(PodsResource(), orphaned);
  ASSERT_TRUE(gc_.Sync("pods/default/p").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // While the server's pod holds the reference too, it goes.
  fake_.SetLive(PodsResource(), pod);
  ASSERT_TRUE(gc_.Sync("pods/default/p").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/p"));
}

// Updates that change what the collector compares before a delete are
// synced again: a reference that starts or stops blocking, an object
// replaced under its name (a relist reports it as an update); a label
// change is not.
TEST_F(GarbageCollectorTest, UpdatesChangingReferencesOrUidAreSynced) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  // The keys an update of pod `name` enqueues.
  auto update = [&](const std::string& name,
                    const std::function<void(metav1::ObjectMeta*)>& change) {
    auto before = NewPod("default", name);
    OwnedBy(before->mutable_metadata(), "ReplicaSet", rs->metadata());
    auto after = std::make_shared<corev1::Pod>(*before);
    change(after->mutable_metadata());
    gc_.ObjectChanged(
        "pods", ObjectEvent{ObjectEvent::Type::kUpdated, *after, before.get()});
    return DrainQueue();
  };
  EXPECT_THAT(update("a",
                     [](metav1::ObjectMeta* m) {
                       auto* ref = m->mutable_ownerreferences(0);
                       ref->set_blockownerdeletion(!ref->blockownerdeletion());
                     }),
              ::testing::Contains("pods/default/a"));
  EXPECT_THAT(update("b", [](metav1::ObjectMeta* m) { m->set_uid("uid-b-2"); }),
              ElementsAre("pods/default/b"));
  EXPECT_THAT(update("c",
                     [](metav1::ObjectMeta* m) {
                       (*m->mutable_labels())["tier"] = "back";
                     }),
              ElementsAre());
}

TEST_F(GarbageCollectorTest, OwnerDeletionEnqueuesDependents) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  for (const char* n : {"a", "b"}) {
    auto p = NewPod("default", n);
    OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
    pods_.Upsert(p);
  }
  pods_.Upsert(NewPod("default", "unrelated"));
  gc_.EnqueueDependents(*rs);
  EXPECT_EQ(gc_.QueueDepth(), 2);
}

TEST_F(GarbageCollectorTest, OrphanFinalizer) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  objects::SetTime(rs->mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000000});
  rs->mutable_metadata()->add_finalizers("orphan");
  replicasets_.Upsert(rs);
  auto p = NewPod("default", "a");
  OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
  pods_.Upsert(p);
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update pods default/a",
                                           "update replicasets default/web"));
  auto pod = std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[0]);
  EXPECT_EQ(pod->metadata().ownerreferences_size(), 0);
  auto owner =
      std::dynamic_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[1]);
  EXPECT_EQ(owner->metadata().finalizers_size(), 0);
}

TEST_F(GarbageCollectorTest, ForegroundFinalizer) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  MarkDeletingDependents(rs->mutable_metadata());
  replicasets_.Upsert(rs);
  auto p = NewPod("default", "a");
  OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
  pods_.Upsert(p);
  // The owner hands its dependents to their own syncs and waits.
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  EXPECT_EQ(gc_.QueueDepth(), 1);
  EXPECT_EQ(gc_.queue().NumWaiting(), 0);  // no polling: events re-enqueue
  ASSERT_TRUE(gc_.Sync("pods/default/a").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/a"));
  EXPECT_THAT(fake_.Deletions(), ElementsAre("a: Background uid-a"));
  fake_.Clear();
  pods_.Delete("default/a");
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update replicasets default/web"));
}

// Kubernetes' processDeletingDependentsItem: only references with
// blockOwnerDeletion=true hold the owner; the other dependents are deleted
// as well, but the owner goes without waiting for them.
TEST_F(GarbageCollectorTest, ForegroundWaitsOnlyForBlockingDependents) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  MarkDeletingDependents(rs->mutable_metadata());
  replicasets_.Upsert(rs);
  auto blocking = NewPod("default", "a");
  *blocking->mutable_metadata()->add_ownerreferences() =
      RefTo("apps/v1", "ReplicaSet", rs->metadata(), true);
  pods_.Upsert(blocking);
  auto loose = NewPod("default", "b");
  *loose->mutable_metadata()->add_ownerreferences() =
      RefTo("apps/v1", "ReplicaSet", rs->metadata(), false);
  pods_.Upsert(loose);

  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  EXPECT_EQ(gc_.QueueDepth(), 2);  // both dependents, blocking or not
  ASSERT_TRUE(gc_.Sync("pods/default/a").ok());
  ASSERT_TRUE(gc_.Sync("pods/default/b").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("delete pods default/a", "delete pods default/b"));

  // b lingers (Terminating, held by a finalizer of its own); a is gone.
  fake_.Clear();
  objects::SetTime(loose->mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000000});
  loose->mutable_metadata()->add_finalizers("example.com/hold");
  pods_.Upsert(loose);
  pods_.Delete("default/a");
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("update replicasets default/web"));
  auto owner =
      std::dynamic_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[0]);
  EXPECT_EQ(owner->metadata().finalizers_size(), 0);
}

// A dependent with another live owner is kept: only the reference to the
// owner being deleted goes (kube's attemptToDeleteItem, "solid" owners).
TEST_F(GarbageCollectorTest, ForegroundKeepsADependentWithAnotherLiveOwner) {
  auto rs = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  MarkDeletingDependents(rs->mutable_metadata());
  replicasets_.Upsert(rs);
  auto d = NewDeployment("default", "app", 1, {{"app", "web"}});
  deployments_.Upsert(d);
  auto p = NewPod("default", "p");
  OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
  OwnedBy(p->mutable_metadata(), "Deployment", d->metadata());
  pods_.Upsert(p);

  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  ASSERT_TRUE(gc_.Sync("pods/default/p").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("update pods default/p"));
  auto kept = std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[0]);
  ASSERT_EQ(kept->metadata().ownerreferences_size(), 1);
  EXPECT_EQ(kept->metadata().ownerreferences(0).kind(), "Deployment");

  // Without the reference the owner is no longer held.
  fake_.Clear();
  pods_.Upsert(kept);
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update replicasets default/web"));
}

// A dependent collected for a foreground owner is deleted with Foreground
// when it has dependents of its own (so the owner waits for the whole
// subtree), with Background otherwise, and with the policy its own
// finalizer asks for when it has one.
TEST_F(GarbageCollectorTest, ForegroundPropagatesToDependentsWithDependents) {
  auto d = NewDeployment("default", "app", 1, {{"app", "web"}});
  MarkDeletingDependents(d->mutable_metadata());
  deployments_.Upsert(d);
  auto web = NewReplicaSet("default", "web", 1, {{"app", "web"}});
  OwnedBy(web->mutable_metadata(), "Deployment", d->metadata());
  replicasets_.Upsert(web);
  auto pod = NewPod("default", "web-x1");
  OwnedBy(pod->mutable_metadata(), "ReplicaSet", web->metadata());
  pods_.Upsert(pod);
  auto lone = NewReplicaSet("default", "lone", 0, {{"app", "lone"}});
  OwnedBy(lone->mutable_metadata(), "Deployment", d->metadata());
  replicasets_.Upsert(lone);
  auto keeper = NewReplicaSet("default", "keeper", 0, {{"app", "k"}});
  OwnedBy(keeper->mutable_metadata(), "Deployment", d->metadata());
  keeper->mutable_metadata()->add_finalizers("orphan");
  replicasets_.Upsert(keeper);

  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  ASSERT_TRUE(gc_.Sync("replicasets/default/lone").ok());
  ASSERT_TRUE(gc_.Sync("replicasets/default/keeper").ok());
  EXPECT_THAT(fake_.Deletions(), ElementsAre("web: Foreground uid-web",
                                             "lone: Background uid-lone",
                                             "keeper: Orphan uid-keeper"));
}

// Kubernetes' e2e "should not be blocked by dependency circle": p1 owned by
// p3, p2 by p1, p3 by p2, every reference blocking, p1 deleted with
// Foreground. The collector makes p3's references non-blocking before it
// deletes p3 (one of p3's dependents, p1, already waits for its own), so
// the chain unwinds instead of each waiting for the next forever.
TEST_F(GarbageCollectorTest, ForegroundCycleOfBlockingReferencesUnwinds) {
  fake_.ReflectUpdates(PodsResource(), &pods_);
  auto p1 = NewPod("default", "p1");
  auto p2 = NewPod("default", "p2");
  auto p3 = NewPod("default", "p3");
  *p1->mutable_metadata()->add_ownerreferences() =
      RefTo("v1", "Pod", p3->metadata(), true);
  *p2->mutable_metadata()->add_ownerreferences() =
      RefTo("v1", "Pod", p1->metadata(), true);
  *p3->mutable_metadata()->add_ownerreferences() =
      RefTo("v1", "Pod", p2->metadata(), true);
  MarkDeletingDependents(p1->mutable_metadata());
  for (const auto& p : {p1, p2, p3}) pods_.Upsert(p);
  // What the API server does with a Foreground DELETE.
  auto deleting = [&](const std::string& name) {
    auto now = std::dynamic_pointer_cast<const corev1::Pod>(
        pods_.Get("default/" + name));
    auto next = std::make_shared<corev1::Pod>(*now);
    MarkDeletingDependents(next->mutable_metadata());
    pods_.Upsert(next);
  };

  // p2: its owner waits, it has a dependent (p3) that does not.
  ASSERT_TRUE(gc_.Sync("pods/default/p2").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/p2"));
  deleting("p2");
  // p3: its owner waits and its dependent p1 waits too: unblock, delete.
  fake_.Clear();
  ASSERT_TRUE(gc_.Sync("pods/default/p3").ok());
  ASSERT_THAT(fake_.Actions(),
              ElementsAre("update pods default/p3", "delete pods default/p3"));
  auto unblocked =
      std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[0]);
  ASSERT_EQ(unblocked->metadata().ownerreferences_size(), 1);
  EXPECT_FALSE(unblocked->metadata().ownerreferences(0).blockownerdeletion());
  deleting("p3");
  // p2 no longer waits for p3; then p1 for p2, then p3 for p1.
  for (const char* name : {"p2", "p1", "p3"}) {
    SCOPED_TRACE(name);
    fake_.Clear();
    ASSERT_TRUE(gc_.Sync(std::string("pods/default/") + name).ok());
    EXPECT_THAT(fake_.Actions(),
                ElementsAre(std::string("update pods default/") + name));
    pods_.Delete(std::string("default/") + name);
  }
  EXPECT_THAT(fake_.Deletions(),
              ElementsAre("p2: Foreground uid-p2", "p3: Foreground uid-p3"));
}

// ---- Resources beyond the typed caches (custom resources, ConfigMaps) ----

// A resource as GcResourceMonitor adds it: a JSON-object cache with the
// owner-uid index and a ResourceInfo of an unstructured kind.
struct DynamicResource {
  DynamicResource(std::string group, std::string plural, std::string kind,
                  bool namespaced = true)
      : kind_info(informer::MakeUnstructuredKind({group, "v1"}, kind)),
        cache({{std::string(informer::kNamespaceIndex),
                informer::NamespaceIndexFunc},
               {kOwnerUidIndex, OwnerUidIndexFunc}}) {
    info.gv = {group, "v1"};
    info.resource = plural;
    info.kind = &kind_info;
    info.list_kind = &kind_info;
    resource = GcResource{.name = group.empty() ? plural : plural + "." + group,
                          .group = group,
                          .kind = kind,
                          .namespaced = namespaced,
                          .info = &info,
                          .cache = &cache};
  }
  objects::KindInfo kind_info;
  objects::ResourceInfo info;
  informer::Indexer cache;
  GcResource resource;
};

// An object of `api_version`/`kind` as a dynamic informer caches it.
ObjectPtr JsonObject(const std::string& api_version, const std::string& kind,
                     const std::string& name, const std::string& uid,
                     const std::string& extra_metadata = "") {
  std::string json = R"({"apiVersion":")" + api_version + R"(","kind":")" +
                     kind + R"(","metadata":{"name":")" + name +
                     R"(","namespace":"default","uid":")" + uid + "\"" +
                     extra_metadata + R"(},"spec":{"size":1}})";
  auto o = informer::NewUnstructuredObject(json);
  CHECK(o.ok()) << o.status() << " " << json;
  return *o;
}

std::string OwnerRefJson(const std::string& api_version,
                         const std::string& kind, const std::string& name,
                         const std::string& uid) {
  return R"({"apiVersion":")" + api_version + R"(","kind":")" + kind +
         R"(","name":")" + name + R"(","uid":")" + uid + R"("})";
}

class CustomResourceGcTest : public GarbageCollectorTest {
 protected:
  CustomResourceGcTest()
      : widgets_("example.com", "widgets", "Widget"),
        configmaps_("", "configmaps", "ConfigMap") {
    gc_.AddResource(widgets_.resource);
    gc_.AddResource(configmaps_.resource);
    gc_.MarkDiscovered();
    fake_.ServeLiveFrom(widgets_.info, &widgets_.cache);
    fake_.ServeLiveFrom(configmaps_.info, &configmaps_.cache);
  }
  // The widget "parent" (uid-parent), optionally being deleted with a GC
  // finalizer.
  ObjectPtr Parent(const std::string& finalizer = "") {
    std::string extra;
    if (!finalizer.empty()) {
      extra = R"(,"deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":[")" +
              finalizer + "\"]";
    }
    return JsonObject("example.com/v1", "Widget", "parent", "uid-parent",
                      extra);
  }
  ObjectPtr OwnedByParent(const std::string& api_version,
                          const std::string& kind, const std::string& name,
                          bool block = false) {
    std::string ref =
        OwnerRefJson("example.com/v1", "Widget", "parent", "uid-parent");
    if (block) ref.insert(ref.size() - 1, R"(,"blockOwnerDeletion":true)");
    return JsonObject(api_version, kind, name, "uid-" + name,
                      R"(,"ownerReferences":[)" + ref + "]");
  }

  DynamicResource widgets_, configmaps_;
};

TEST_F(CustomResourceGcTest, CustomResourceOfAGoneCustomResourceIsDeleted) {
  widgets_.cache.Upsert(OwnedByParent("example.com/v1", "Widget", "child"));
  // Owner alive in the cache: kept.
  widgets_.cache.Upsert(Parent());
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/child").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // Owner gone from the cache and from the server: deleted.
  widgets_.cache.Delete("default/parent");
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/child").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete widgets default/child"));
  // Owner only on the server (the cache lags): kept.
  fake_.Clear();
  fake_.SetLive(widgets_.info, Parent());
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/child").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

TEST_F(CustomResourceGcTest, BuiltInDependentsOfAGoneCustomResource) {
  configmaps_.cache.Upsert(OwnedByParent("v1", "ConfigMap", "settings"));
  auto pod = NewPod("default", "worker");
  *pod->mutable_metadata()->add_ownerreferences() = [] {
    metav1::OwnerReference r;
    r.set_apiversion("example.com/v1");
    r.set_kind("Widget");
    r.set_name("parent");
    r.set_uid("uid-parent");
    return r;
  }();
  pods_.Upsert(pod);
  ASSERT_TRUE(gc_.Sync("configmaps/default/settings").ok());
  ASSERT_TRUE(gc_.Sync("pods/default/worker").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete configmaps default/settings",
                                           "delete pods default/worker"));
}

TEST_F(CustomResourceGcTest, OwnerDeletionEnqueuesDependentsOfEveryResource) {
  widgets_.cache.Upsert(OwnedByParent("example.com/v1", "Widget", "child"));
  configmaps_.cache.Upsert(OwnedByParent("v1", "ConfigMap", "settings"));
  configmaps_.cache.Upsert(JsonObject("v1", "ConfigMap", "other", "uid-o"));
  gc_.EnqueueDependents(*Parent());
  EXPECT_EQ(gc_.QueueDepth(), 2);
}

TEST_F(CustomResourceGcTest, OrphanFinalizerOnACustomResource) {
  widgets_.cache.Upsert(Parent("orphan"));
  widgets_.cache.Upsert(OwnedByParent("example.com/v1", "Widget", "child"));
  configmaps_.cache.Upsert(OwnedByParent("v1", "ConfigMap", "settings"));
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/parent").ok());
  EXPECT_THAT(fake_.Actions(),
              UnorderedElementsAre("patch widgets default/child",
                                   "patch configmaps default/settings",
                                   "patch widgets default/parent"));
  EXPECT_EQ(fake_.Actions().back(), "patch widgets default/parent");
  std::vector<std::string> patches = fake_.Patches();
  ASSERT_EQ(patches.size(), 3u);
  // Each reference removal tests the uid first, so a changed object fails.
  EXPECT_EQ(patches[0],
            R"([{"op":"test","path":"/metadata/ownerReferences/0/uid",)"
            R"("value":"uid-parent"},)"
            R"({"op":"remove","path":"/metadata/ownerReferences/0"}])");
  EXPECT_EQ(patches[2], R"([{"op":"test","path":"/metadata/finalizers/0",)"
                        R"("value":"orphan"},)"
                        R"({"op":"remove","path":"/metadata/finalizers/0"}])");
}

TEST_F(CustomResourceGcTest, ForegroundFinalizerOnACustomResource) {
  widgets_.cache.Upsert(Parent("foregroundDeletion"));
  widgets_.cache.Upsert(
      OwnedByParent("example.com/v1", "Widget", "child", /*block=*/true));
  configmaps_.cache.Upsert(OwnedByParent("v1", "ConfigMap", "settings"));
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/parent").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  EXPECT_EQ(gc_.QueueDepth(), 2);
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/child").ok());
  ASSERT_TRUE(gc_.Sync("configmaps/default/settings").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("delete widgets default/child",
                          "delete configmaps default/settings"));
  // The ConfigMap's reference does not block: the widget was all it
  // waited for.
  fake_.Clear();
  widgets_.cache.Delete("default/child");
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/parent").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("patch widgets default/parent"));
  EXPECT_THAT(fake_.Patches()[0],
              ::testing::HasSubstr(R"("value":"foregroundDeletion")"));
}

// A dependent going away, or its reference ceasing to block, brings a
// waiting owner back at once (no resync, no polling).
TEST_F(CustomResourceGcTest, DependentChangesEnqueueTheWaitingOwner) {
  ObjectPtr blocking =
      OwnedByParent("example.com/v1", "Widget", "child", /*block=*/true);
  ObjectPtr loose = OwnedByParent("example.com/v1", "Widget", "child");
  auto next_key = [&]() -> std::string {
    if (gc_.QueueDepth() != 1)
      return "depth " + std::to_string(gc_.QueueDepth());
    std::optional<std::string> key = gc_.queue().Get();
    gc_.queue().Done(*key);
    return *key;
  };
  widgets_.cache.Upsert(Parent("foregroundDeletion"));
  gc_.ObjectChanged("widgets.example.com",
                    ObjectEvent{ObjectEvent::Type::kDeleted, *blocking});
  EXPECT_EQ(next_key(), "widgets.example.com/default/parent");
  gc_.ObjectChanged(
      "widgets.example.com",
      ObjectEvent{ObjectEvent::Type::kUpdated, *loose, blocking.get()});
  // The waiting owner, and the child itself (its reference changed).
  EXPECT_THAT(DrainQueue(),
              UnorderedElementsAre("widgets.example.com/default/parent",
                                   "widgets.example.com/default/child"));
  // An owner that is not waiting is left alone when a dependent goes.
  widgets_.cache.Upsert(Parent());
  gc_.ObjectChanged("widgets.example.com",
                    ObjectEvent{ObjectEvent::Type::kDeleted, *blocking});
  EXPECT_EQ(gc_.QueueDepth(), 0);
}

// The cycle breaker on a custom resource: a JSON patch that tests each
// blocking reference's uid, then sets blockOwnerDeletion to false.
TEST_F(CustomResourceGcTest, CycleBreakerPatchesCustomResources) {
  widgets_.cache.Upsert(Parent("foregroundDeletion"));
  widgets_.cache.Upsert(
      OwnedByParent("example.com/v1", "Widget", "child", /*block=*/true));
  // The child's own dependent already waits for its dependents.
  widgets_.cache.Upsert(JsonObject(
      "example.com/v1", "Widget", "grandchild", "uid-grandchild",
      R"(,"ownerReferences":[)" +
          OwnerRefJson("example.com/v1", "Widget", "child", "uid-child") +
          R"(],"deletionTimestamp":"2026-01-01T00:00:00Z",)"
          R"("finalizers":["foregroundDeletion"])"));
  ASSERT_TRUE(gc_.Sync("widgets.example.com/default/child").ok());
  ASSERT_THAT(fake_.Actions(), ElementsAre("patch widgets default/child",
                                           "delete widgets default/child"));
  EXPECT_EQ(fake_.Patches()[0],
            R"([{"op":"test","path":"/metadata/ownerReferences/0/uid",)"
            R"("value":"uid-parent"},)"
            R"({"op":"replace",)"
            R"("path":"/metadata/ownerReferences/0/blockOwnerDeletion",)"
            R"("value":false}])");
  EXPECT_THAT(fake_.Deletions(), ElementsAre("child: Foreground uid-child"));
}

// An owner kind nothing serves (a CRD not discovered yet, or never): the
// object is kept; after discovery the sync fails so that it is retried.
TEST_F(CustomResourceGcTest, UnresolvableOwnerKindKeepsTheObject) {
  std::string ref = OwnerRefJson("other.io/v1", "Gizmo", "g", "uid-g");
  configmaps_.cache.Upsert(JsonObject("v1", "ConfigMap", "settings", "uid-s",
                                      R"(,"ownerReferences":[)" + ref + "]"));
  Status s = gc_.Sync("configmaps/default/settings");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("Gizmo"));
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // Before any discovery the kind is assumed alive (no error, kept).
  GarbageCollector fresh({.api = &fake_,
                          .pods = &pods_,
                          .replicasets = &replicasets_,
                          .deployments = &deployments_,
                          .clock = &clock_,
                          .metrics = &reg_});
  fresh.AddResource(configmaps_.resource);
  EXPECT_TRUE(fresh.Sync("configmaps/default/settings").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

// The keys kept for owner kinds nothing serves leave with their objects
// and are bounded: owner kinds made up by a user (one per object, each
// created and deleted) grew them for as long as the process ran.
TEST_F(CustomResourceGcTest, KeysKeptForUnknownOwnerKindsAreBounded) {
  std::vector<ObjectPtr> made;
  for (int i = 0; i < 10100; ++i) {
    const std::string name = "cm-" + std::to_string(i);
    std::string ref =
        OwnerRefJson("other.io/v1", "Gizmo" + std::to_string(i), "g", "uid-g");
    made.push_back(JsonObject("v1", "ConfigMap", name, "uid-" + name,
                              R"(,"ownerReferences":[)" + ref + "]"));
    configmaps_.cache.Upsert(made.back());
    EXPECT_FALSE(gc_.Sync("configmaps/default/" + name).ok());
  }
  EXPECT_EQ(gc_.UnresolvedKeysForTest(), 10000u);
  for (const ObjectPtr& o : made) {
    gc_.ObjectChanged("configmaps",
                      {.type = ObjectEvent::Type::kDeleted, .object = *o});
  }
  EXPECT_EQ(gc_.UnresolvedKeysForTest(), 0u);
}

// An object synced while its owner's kind was not followed yet (assumed
// alive before the first discovery, so no retry) is synced again when that
// kind's resource is added: its owner may be gone already, and no event
// would ever bring the object back.
TEST_F(CustomResourceGcTest, OwnerKindAddedLaterSyncsItsDependentsAgain) {
  GarbageCollector fresh({.api = &fake_,
                          .pods = &pods_,
                          .replicasets = &replicasets_,
                          .deployments = &deployments_,
                          .clock = &clock_,
                          .metrics = &reg_});
  std::string ref = OwnerRefJson("other.io/v1", "Gizmo", "g", "uid-g");
  configmaps_.cache.Upsert(JsonObject("v1", "ConfigMap", "settings", "uid-s",
                                      R"(,"ownerReferences":[)" + ref + "]"));
  fresh.AddResource(configmaps_.resource);
  auto next_key = [&]() -> std::string {
    if (fresh.QueueDepth() != 1) {
      return "depth " + std::to_string(fresh.QueueDepth());
    }
    std::optional<std::string> key = fresh.queue().Get();
    fresh.queue().Done(*key);
    return *key;
  };
  ASSERT_EQ(next_key(), "configmaps/default/settings");
  ASSERT_TRUE(fresh.Sync("configmaps/default/settings").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // The Gizmo resource arrives; its cache never held g.
  DynamicResource gizmos("other.io", "gizmos", "Gizmo");
  fresh.AddResource(gizmos.resource);
  EXPECT_EQ(next_key(), "configmaps/default/settings");
  ASSERT_TRUE(fresh.Sync("configmaps/default/settings").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("delete configmaps default/settings"));
}

// A resource added later (a new CRD) has its cached objects synced; one
// removed (a deleted CRD) is dropped: its keys sync to nothing, its owners
// cannot be resolved any more, and nothing crashes.
TEST_F(CustomResourceGcTest, ResourcesAddedAndRemovedAtRunTime) {
  DynamicResource gadgets("example.com", "gadgets", "Gadget");
  gadgets.cache.Upsert(OwnedByParent("example.com/v1", "Gadget", "g1"));
  gadgets.cache.Upsert(JsonObject("example.com/v1", "Gadget", "free", "u"));
  fake_.ServeLiveFrom(gadgets.info, &gadgets.cache);
  EXPECT_FALSE(gc_.Follows("gadgets.example.com"));
  const int before = gc_.QueueDepth();
  gc_.AddResource(gadgets.resource);
  EXPECT_TRUE(gc_.Follows("gadgets.example.com"));
  EXPECT_EQ(gc_.QueueDepth(), before + 1);  // g1 has an owner, free not
  ASSERT_TRUE(gc_.Sync("gadgets.example.com/default/g1").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete gadgets default/g1"));

  fake_.Clear();
  gc_.RemoveResource("widgets.example.com");
  EXPECT_FALSE(gc_.Follows("widgets.example.com"));
  EXPECT_THAT(gc_.AddedResources(),
              UnorderedElementsAre("configmaps", "gadgets.example.com"));
  EXPECT_TRUE(gc_.Sync("widgets.example.com/default/child").ok());
  gc_.EnqueueDependents(*Parent());
  // Widgets own g1 still: with no widget resource the owner cannot be
  // resolved, and the object is kept.
  EXPECT_EQ(gc_.Sync("gadgets.example.com/default/g1").code(),
            StatusCode::kUnavailable);
  EXPECT_THAT(fake_.Actions(), ElementsAre());
}

// A cluster-scoped object (here a Namespace) whose ownerReference names a
// namespaced kind: the reference has no namespace to look the owner up in,
// so it is invalid, not dangling. Kube's isDangling returns
// namespacedOwnerOfClusterScopedObjectErr: the object is kept, an
// OwnerRefInvalidNamespace event recorded, and the item is not retried. The
// GET of "widgets /parent" answered 404 and the Namespace was deleted.
TEST_F(CustomResourceGcTest, ClusterScopedObjectWithANamespacedOwnerIsKept) {
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  gc_.set_event_recorder(std::move(recorder));
  DynamicResource namespaces("", "namespaces", "Namespace",
                             /*namespaced=*/false);
  gc_.AddResource(namespaces.resource);
  fake_.ServeLiveFrom(namespaces.info, &namespaces.cache);
  auto ns = informer::NewUnstructuredObject(
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a",)"
      R"("uid":"uid-team-a","ownerReferences":[)" +
      OwnerRefJson("example.com/v1", "Widget", "parent", "uid-parent") + "]}}");
  ASSERT_TRUE(ns.ok()) << ns.status();
  namespaces.cache.Upsert(*ns);
  // A Widget "parent" exists, in some namespace: still no ground to look
  // it up in one.
  widgets_.cache.Upsert(Parent());
  DrainQueue();

  Status s = gc_.Sync("namespaces/team-a");
  EXPECT_TRUE(s.ok()) << s;  // not retried: a retry cannot make it valid
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  EXPECT_THAT(fake_.Deletions(), ElementsAre());
  EXPECT_THAT(events->Events(),
              ElementsAre("Warning OwnerRefInvalidNamespace ownerRef "
                          "[example.com/v1/Widget, namespace: , name: parent, "
                          "uid: uid-parent] does not exist in namespace \"\""));
  EXPECT_EQ(gc_.QueueDepth(), 0);
}

// Updates that leave owners, deletion and GC finalizers alone (lease
// renewals, status writes) are not synced; those that change them are.
TEST_F(CustomResourceGcTest, OnlyOwnershipChangesAreSynced) {
  ObjectPtr v1 = OwnedByParent("example.com/v1", "Widget", "child");
  ObjectPtr v2 = OwnedByParent("example.com/v1", "Widget", "child");
  ObjectPtr unowned = JsonObject("example.com/v1", "Widget", "child", "u");
  const int before = gc_.QueueDepth();
  gc_.ObjectChanged("widgets.example.com",
                    ObjectEvent{ObjectEvent::Type::kUpdated, *v2, v1.get()});
  EXPECT_EQ(gc_.QueueDepth(), before);
  gc_.ObjectChanged(
      "widgets.example.com",
      ObjectEvent{ObjectEvent::Type::kUpdated, *v2, unowned.get()});
  EXPECT_EQ(gc_.QueueDepth(), before + 1);
}

}  // namespace
}  // namespace kplane::controllers
