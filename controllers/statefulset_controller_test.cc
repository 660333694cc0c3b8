#include "controllers/statefulset_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "objects/meta.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: test builders

class StatefulSetTest : public ::testing::Test {
 protected:
  StatefulSetTest()
      : controller_({.api = &fake_,
                     .statefulsets = &sets_,
                     .pods = &pods_,
                     .clock = &clock_,
                     .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(1700000100)));
  }

  std::shared_ptr<appsv1::StatefulSet> AddSet(
      int32_t replicas, const std::string& image = "nginx",
      const std::string& policy = "OrderedReady") {
    auto s = std::make_shared<appsv1::StatefulSet>();
    SetMeta(s->mutable_metadata(), "default", "web", {{"app", "web"}});
    s->mutable_spec()->set_replicas(replicas);
    (*s->mutable_spec()->mutable_selector()->mutable_matchlabels())["app"] =
        "web";
    *s->mutable_spec()->mutable_template_() = Template({{"app", "web"}}, image);
    s->mutable_spec()->set_servicename("web-svc");
    s->mutable_spec()->set_podmanagementpolicy(policy);
    s->mutable_spec()->mutable_updatestrategy()->set_type("RollingUpdate");
    s->mutable_spec()
        ->mutable_updatestrategy()
        ->mutable_rollingupdate()
        ->set_partition(0);
    sets_.Upsert(s);
    return s;
  }
  // A pod of `set` at ordinal `ord`, at the revision of `image`'s template.
  std::shared_ptr<corev1::Pod> AddPod(const appsv1::StatefulSet& set, int ord,
                                      bool ready, const std::string& image) {
    appsv1::StatefulSet at = set;
    at.mutable_spec()
        ->mutable_template_()
        ->mutable_spec()
        ->mutable_containers(0)
        ->set_image(image);
    std::string name = "web-" + std::to_string(ord);
    auto p = NewPod("default", name,
                    {{"app", "web"},
                     {kControllerRevisionHashLabel, StatefulSetRevision(at)}});
    OwnedBy(p->mutable_metadata(), "StatefulSet", set.metadata());
    if (ready) RunOn(p.get(), "node-0", true);
    pods_.Upsert(p);
    return p;
  }
  std::vector<std::string> Sync() {
    fake_.Clear();
    Status s = controller_.Sync("default/web");
    EXPECT_TRUE(s.ok()) << s;
    std::vector<std::string> out;
    for (const std::string& a : fake_.Actions()) {
      if (a.rfind("update-status", 0) != 0) out.push_back(a);
    }
    return out;
  }
  const appsv1::StatefulSetStatus* LastStatus() {
    auto w = fake_.Written();
    for (auto it = w.rbegin(); it != w.rend(); ++it) {
      if (auto* s = dynamic_cast<const appsv1::StatefulSet*>(it->get())) {
        return &s->status();
      }
    }
    return nullptr;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer sets_;
  informer::Indexer pods_;
  StatefulSetController controller_;
};

TEST_F(StatefulSetTest, OrderedReadyCreatesOneAtATimeWaitingForReady) {
  auto set = AddSet(3);
  EXPECT_THAT(Sync(), ElementsAre("create pods default/web-0"));
  auto pod = std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[0]);
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->metadata().labels().at(kStatefulSetPodNameLabel), "web-0");
  EXPECT_EQ(pod->metadata().labels().at(kPodIndexLabel), "0");
  EXPECT_EQ(pod->metadata().labels().at(kControllerRevisionHashLabel),
            StatefulSetRevision(*set));
  EXPECT_EQ(pod->metadata().labels().at("app"), "web");
  EXPECT_EQ(pod->spec().hostname(), "web-0");
  EXPECT_EQ(pod->spec().subdomain(), "web-svc");
  const metav1::OwnerReference* ref = objects::ControllerRef(pod->metadata());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind(), "StatefulSet");
  EXPECT_EQ(ref->uid(), "uid-web");

  // web-0 exists but is not ready: nothing more.
  AddPod(*set, 0, false, "nginx");
  EXPECT_THAT(Sync(), IsEmpty());
  // Ready: the next ordinal.
  AddPod(*set, 0, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/web-1"));
  AddPod(*set, 1, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/web-2"));
  AddPod(*set, 2, true, "nginx");
  EXPECT_THAT(Sync(), IsEmpty());
}

TEST_F(StatefulSetTest, ParallelCreatesAllAtOnce) {
  AddSet(3, "nginx", "Parallel");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/web-0",
                                  "create pods default/web-1",
                                  "create pods default/web-2"));
}

TEST_F(StatefulSetTest, ScaleDownFromTheHighestOrdinalOneAtATime) {
  auto set = AddSet(1);
  AddPod(*set, 0, true, "nginx");
  AddPod(*set, 1, true, "nginx");
  auto p2 = AddPod(*set, 2, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-2"));
  // Terminating: wait for it to go.
  objects::SetTime(p2->mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000090});
  pods_.Upsert(p2);
  EXPECT_THAT(Sync(), IsEmpty());
  pods_.Delete(informer::ObjectKey(*p2));
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-1"));
}

TEST_F(StatefulSetTest, ScaleDownWaitsWhileAnotherPodIsUnhealthy) {
  auto set = AddSet(1);
  AddPod(*set, 0, false, "nginx");
  AddPod(*set, 1, true, "nginx");
  EXPECT_THAT(Sync(), IsEmpty());
}

TEST_F(StatefulSetTest, ParallelScaleDownDeletesEveryCondemnedPod) {
  auto set = AddSet(1, "nginx", "Parallel");
  AddPod(*set, 0, true, "nginx");
  AddPod(*set, 1, false, "nginx");
  AddPod(*set, 2, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-2",
                                  "delete pods default/web-1"));
}

TEST_F(StatefulSetTest, RollingUpdateFromTheHighestOrdinalDown) {
  auto set = AddSet(3, "nginx:2");
  AddPod(*set, 0, true, "nginx");
  AddPod(*set, 1, true, "nginx");
  AddPod(*set, 2, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-2"));
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updatedreplicas(), 0);
  EXPECT_EQ(LastStatus()->updaterevision(), StatefulSetRevision(*set));
  // The replacement is not ready yet: wait.
  AddPod(*set, 2, false, "nginx:2");
  EXPECT_THAT(Sync(), IsEmpty());
  AddPod(*set, 2, true, "nginx:2");
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-1"));
  AddPod(*set, 1, true, "nginx:2");
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-0"));
  AddPod(*set, 0, true, "nginx:2");
  EXPECT_THAT(Sync(), IsEmpty());
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updatedreplicas(), 3);
  EXPECT_EQ(LastStatus()->currentreplicas(), 3);
  EXPECT_EQ(LastStatus()->readyreplicas(), 3);
  EXPECT_EQ(LastStatus()->currentrevision(), StatefulSetRevision(*set));
}

TEST_F(StatefulSetTest, PartitionKeepsLowerOrdinalsAtTheCurrentRevision) {
  auto set = AddSet(3, "nginx:2");
  set->mutable_spec()
      ->mutable_updatestrategy()
      ->mutable_rollingupdate()
      ->set_partition(2);
  appsv1::StatefulSet old = *set;
  old.mutable_spec()
      ->mutable_template_()
      ->mutable_spec()
      ->mutable_containers(0)
      ->set_image("nginx");
  set->mutable_status()->set_currentrevision(StatefulSetRevision(old));
  sets_.Upsert(set);
  AddPod(*set, 0, true, "nginx");
  AddPod(*set, 1, true, "nginx");
  AddPod(*set, 2, true, "nginx:2");
  EXPECT_THAT(Sync(), IsEmpty());
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updatedreplicas(), 1);
  EXPECT_EQ(LastStatus()->currentreplicas(), 2);
  EXPECT_EQ(LastStatus()->currentrevision(), StatefulSetRevision(old));
}

TEST_F(StatefulSetTest, OnDeleteReplacesNothingItself) {
  auto set = AddSet(2, "nginx:2");
  set->mutable_spec()->mutable_updatestrategy()->set_type("OnDelete");
  set->mutable_spec()->mutable_updatestrategy()->clear_rollingupdate();
  sets_.Upsert(set);
  AddPod(*set, 0, true, "nginx");
  AddPod(*set, 1, true, "nginx");
  EXPECT_THAT(Sync(), IsEmpty());
}

TEST_F(StatefulSetTest, FailedPodIsDeletedToBeRecreated) {
  auto set = AddSet(1);
  auto p = AddPod(*set, 0, false, "nginx");
  p->mutable_status()->set_phase("Failed");
  pods_.Upsert(p);
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-0"));
}

TEST_F(StatefulSetTest, PodsOfADeletedSetAreDeletedOnceTheServerSaysGone) {
  auto set = AddSet(1);
  AddPod(*set, 0, true, "nginx");
  sets_.Delete("default/web");
  // The fake's live GET answers 404 for anything not SetLive.
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-0"));
  // Still there per the server (the cache lags): nothing is deleted.
  fake_.SetLive(StatefulSetsResource(), set);
  EXPECT_THAT(Sync(), IsEmpty());
}

TEST_F(StatefulSetTest, AdoptsMatchingOrphansWithItsNames) {
  auto set = AddSet(1);
  auto orphan = NewPod("default", "web-0", {{"app", "web"}});
  pods_.Upsert(orphan);
  auto stranger = NewPod("default", "other", {{"app", "web"}});
  pods_.Upsert(stranger);
  EXPECT_THAT(Sync(), ElementsAre("update pods default/web-0"));
}

}  // namespace
}  // namespace kplane::controllers
