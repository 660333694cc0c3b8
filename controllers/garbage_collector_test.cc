#include "controllers/garbage_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/meta.h"
#include "controllers/test_objects.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using namespace testing;  // NOLINT: test builders

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
             .metrics = &reg_}) {}

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
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
    FakeApiWriter fake;
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
  objects::SetTime(rs->mutable_metadata()->mutable_deletiontimestamp(),
               int64_t{1700000000});
  rs->mutable_metadata()->add_finalizers("foregroundDeletion");
  replicasets_.Upsert(rs);
  auto p = NewPod("default", "a");
  OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
  pods_.Upsert(p);
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/a"));
  EXPECT_EQ(gc_.queue().NumWaiting(), 1);  // re-checked until none is left
  fake_.Clear();
  pods_.Delete("default/a");
  ASSERT_TRUE(gc_.Sync("replicasets/default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update replicasets default/web"));
}

}  // namespace
}  // namespace kplane::controllers
