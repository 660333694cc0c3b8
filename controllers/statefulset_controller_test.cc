#include "controllers/statefulset_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/controller_history.h"
#include "controllers/revision_test_util.h"
#include "controllers/test_objects.h"
#include "objects/codec.h"
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
                     .revisions = &revisions_,
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
  // A revision of `set` with its template at `image`, numbered `number`,
  // in the cache.
  std::shared_ptr<const appsv1::ControllerRevision> AddRevision(
      const appsv1::StatefulSet& set, const std::string& image,
      int64_t number) {
    corev1::PodTemplateSpec tmpl = set.spec().template_();
    tmpl.mutable_spec()->mutable_containers(0)->set_image(image);
    const std::string data = TemplatePatch(tmpl);
    auto r = std::make_shared<const appsv1::ControllerRevision>(
        NewRevision(set.metadata(), "StatefulSet", tmpl, data,
                    HashRevisionData(data, 0), number));
    revisions_.Upsert(r);
    return r;
  }
  void SetImage(std::shared_ptr<appsv1::StatefulSet> set,
                const std::string& image) {
    set->mutable_spec()
        ->mutable_template_()
        ->mutable_spec()
        ->mutable_containers(0)
        ->set_image(image);
    sets_.Upsert(set);
  }
  // "<name>:<revision>" of every cached revision, by name.
  std::vector<std::string> CachedRevisions() {
    std::vector<std::string> out;
    for (const ObjectPtr& o : revisions_.List()) {
      const auto& r = static_cast<const appsv1::ControllerRevision&>(*o);
      out.push_back(r.metadata().name() + ":" + std::to_string(r.revision()));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> Sync() {
    fake_.Clear();
    revision_actions_.clear();
    Status s = controller_.Sync("default/web");
    EXPECT_TRUE(s.ok()) << s;
    std::vector<std::string> out;
    for (const std::string& a :
         ReflectRevisionWrites(fake_, &revisions_, &revision_actions_)) {
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

  // Two replicas from ordinal `start`, partition 1, the second pod at the
  // update revision and the first gone: it comes back at the current
  // revision (newVersionedStatefulSetPod: ordinal < start + partition).
  void ExpectFirstPodRecreatedAtTheCurrentRevision(int start) {
    auto set = AddSet(2, "nginx:2");
    if (start != 0) set->mutable_spec()->mutable_ordinals()->set_start(start);
    set->mutable_spec()
        ->mutable_updatestrategy()
        ->mutable_rollingupdate()
        ->set_partition(1);
    auto v1 = AddRevision(*set, "nginx", 1);
    AddRevision(*set, "nginx:2", 2);
    set->mutable_status()->set_currentrevision(v1->metadata().name());
    sets_.Upsert(set);
    AddPod(*set, start + 1, true, "nginx:2");
    EXPECT_THAT(Sync(), ElementsAre("create pods default/web-" +
                                    std::to_string(start)));
    std::shared_ptr<const corev1::Pod> pod;
    for (const ObjectPtr& w : fake_.Written()) {
      if (auto p = std::dynamic_pointer_cast<const corev1::Pod>(w)) pod = p;
    }
    ASSERT_NE(pod, nullptr);
    EXPECT_EQ(pod->spec().containers(0).image(), "nginx");
    EXPECT_EQ(pod->metadata().labels().at(kControllerRevisionHashLabel),
              v1->metadata().name());
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer sets_;
  informer::Indexer pods_;
  informer::Indexer revisions_;
  std::vector<std::string> revision_actions_;  // of the last Sync()
  StatefulSetController controller_;
};

TEST_F(StatefulSetTest, OrderedReadyCreatesOneAtATimeWaitingForReady) {
  auto set = AddSet(3);
  EXPECT_THAT(Sync(), ElementsAre("create pods default/web-0"));
  auto pod = std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[1]);
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

// replicas 2^31 - 1 (what `kubectl scale --replicas` allows): a sync takes
// memory for the pods that exist, not for every ordinal, and a Parallel set
// creates at most 500 pods per sync.
TEST_F(StatefulSetTest, HugeReplicasCreateInBurstsWithoutASlotPerOrdinal) {
  auto set = AddSet(INT32_MAX, "nginx", "Parallel");
  std::vector<std::string> created = Sync();
  EXPECT_EQ(created.size(), 500u);
  EXPECT_EQ(created.back(), "create pods default/web-499");
  auto ordered = AddSet(INT32_MAX);
  AddPod(*ordered, 0, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/web-1"));
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

// kube's processCondemned: only a target that is itself unhealthy waits,
// unless it is the first unhealthy pod.
TEST_F(StatefulSetTest, ScaleDownDeletesAReadyHighestPastAnUnhealthyOne) {
  auto set = AddSet(2);
  AddPod(*set, 0, true, "nginx");
  AddPod(*set, 1, true, "nginx");
  AddPod(*set, 2, true, "nginx");
  AddPod(*set, 3, false, "nginx");
  auto p4 = AddPod(*set, 4, true, "nginx");
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-4"));
  pods_.Delete(informer::ObjectKey(*p4));
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/web-3"));
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
  AddRevision(*set, "nginx", 1);
  AddRevision(*set, "nginx:2", 2);
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

// `kubectl delete sts web --cascade=orphan`: the garbage collector removes
// the pods' ownerReferences, then the set goes. When the pods informer lags
// the sets informer, the cache still shows the reference: the DELETE carries
// the cached resourceVersion, so the server refuses it for the orphan (kube's
// garbage collector re-reads the latest object before deleting).
TEST_F(StatefulSetTest, PodsOrphanedBeforeTheSetWentAreNotDeleted) {
  auto set = AddSet(1);
  auto cached = AddPod(*set, 0, true, "nginx");
  auto rev = std::make_shared<appsv1::ControllerRevision>(
      *AddRevision(*set, "nginx", 1));
  rev->mutable_metadata()->set_resourceversion("1");  // as the informer
  revisions_.Upsert(rev);
  auto live_pod = std::make_shared<corev1::Pod>(*cached);
  live_pod->mutable_metadata()->clear_ownerreferences();
  live_pod->mutable_metadata()->set_resourceversion("2");
  fake_.SetLive(PodsResource(), live_pod);
  auto live_rev = std::make_shared<appsv1::ControllerRevision>(*rev);
  live_rev->mutable_metadata()->clear_ownerreferences();
  live_rev->mutable_metadata()->set_resourceversion("2");
  fake_.SetLive(ControllerRevisionsResource(), live_rev);
  sets_.Delete("default/web");
  EXPECT_THAT(Sync(), ElementsAre("delete-refused pods default/web-0"));
  EXPECT_THAT(revision_actions_,
              ElementsAre("delete-refused controllerrevisions default/" +
                          rev->metadata().name()));
  // The informers catch up: nothing of the set is left to delete.
  pods_.Upsert(live_pod);
  revisions_.Upsert(live_rev);
  EXPECT_THAT(Sync(), IsEmpty());
  EXPECT_THAT(revision_actions_, IsEmpty());
}

TEST_F(StatefulSetTest, AdoptsMatchingOrphansWithItsNames) {
  auto set = AddSet(1);
  auto orphan = NewPod("default", "web-0", {{"app", "web"}});
  pods_.Upsert(orphan);
  auto stranger = NewPod("default", "other", {{"app", "web"}});
  pods_.Upsert(stranger);
  EXPECT_THAT(Sync(), ElementsAre("update pods default/web-0"));
}

TEST_F(StatefulSetTest, FirstSyncCreatesRevisionOneOwnedByTheSet) {
  auto set = AddSet(1);
  Sync();
  const std::string name = StatefulSetRevision(*set);
  EXPECT_THAT(revision_actions_,
              ElementsAre("create controllerrevisions default/" + name));
  auto rev = std::static_pointer_cast<const appsv1::ControllerRevision>(
      revisions_.Get("default/" + name));
  ASSERT_NE(rev, nullptr);
  EXPECT_EQ(rev->revision(), 1);
  EXPECT_EQ(rev->metadata().labels().at("app"), "web");
  EXPECT_EQ(name,
            "web-" + rev->metadata().labels().at(kControllerRevisionHashLabel));
  const metav1::OwnerReference* ref = objects::ControllerRef(rev->metadata());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind(), "StatefulSet");
  EXPECT_EQ(ref->uid(), "uid-web");
  // kube's getPatch: the template, replacing the set's on a patch.
  EXPECT_THAT(
      rev->data().raw(),
      ::testing::StartsWith(R"({"spec":{"template":{"$patch":"replace",)"));
  StatusOr<corev1::PodTemplateSpec> tmpl = RevisionTemplate(*rev);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  // Equal as JSON (decoding sets the empty objects Go writes).
  EXPECT_EQ(objects::EncodeJson(*tmpl),
            objects::EncodeJson(set->spec().template_()));
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updaterevision(), name);
  EXPECT_EQ(LastStatus()->currentrevision(), name);
  // Nothing changed: no new revision.
  Sync();
  EXPECT_THAT(revision_actions_, IsEmpty());
}

TEST_F(StatefulSetTest, TemplateChangeCreatesTheNextRevision) {
  auto set = AddSet(1);
  Sync();
  const std::string first = StatefulSetRevision(*set);
  set->mutable_status()->set_currentrevision(first);
  SetImage(set, "nginx:2");
  Sync();
  const std::string second = StatefulSetRevision(*set);
  EXPECT_NE(first, second);
  EXPECT_THAT(revision_actions_,
              ElementsAre("create controllerrevisions default/" + second));
  EXPECT_THAT(CachedRevisions(),
              ::testing::UnorderedElementsAre(first + ":1", second + ":2"));
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updaterevision(), second);
  EXPECT_EQ(LastStatus()->currentrevision(), first);
}

TEST_F(StatefulSetTest, RollbackRenumbersTheEqualOldRevision) {
  auto set = AddSet(1);
  auto v1 = AddRevision(*set, "nginx", 1);
  AddRevision(*set, "nginx:2", 2);
  // `kubectl rollout undo`: the template is nginx again.
  Sync();
  EXPECT_THAT(revision_actions_,
              ElementsAre("update controllerrevisions default/" +
                          v1->metadata().name()));
  auto now = std::static_pointer_cast<const appsv1::ControllerRevision>(
      revisions_.Get("default/" + v1->metadata().name()));
  EXPECT_EQ(now->revision(), 3);
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updaterevision(), v1->metadata().name());
}

TEST_F(StatefulSetTest, HistoryIsTruncatedToTheLimitKeepingLiveRevisions) {
  auto set = AddSet(1);
  set->mutable_spec()->set_revisionhistorylimit(1);
  sets_.Upsert(set);
  auto v1 = AddRevision(*set, "v1", 1);  // a pod still runs it
  auto v2 = AddRevision(*set, "v2", 2);
  auto v3 = AddRevision(*set, "v3", 3);
  auto v4 = AddRevision(*set, "v4", 4);
  AddPod(*set, 0, true, "v1");
  SetImage(set, "v5");
  Sync();
  // Not live: v2, v3, v4; one is kept (the newest): v2 and v3 go.
  EXPECT_THAT(
      revision_actions_,
      ElementsAre(
          "create controllerrevisions default/" + StatefulSetRevision(*set),
          "delete controllerrevisions default/" + v2->metadata().name(),
          "delete controllerrevisions default/" + v3->metadata().name()));
  EXPECT_THAT(CachedRevisions(),
              ::testing::UnorderedElementsAre(
                  v1->metadata().name() + ":1", v4->metadata().name() + ":4",
                  StatefulSetRevision(*set) + ":5"));
}

TEST_F(StatefulSetTest, NameTakenByOtherDataBumpsTheCollisionCount) {
  auto set = AddSet(1);
  const std::string taken = StatefulSetRevision(*set);
  auto other = std::make_shared<appsv1::ControllerRevision>();
  SetMeta(other->mutable_metadata(), "default", taken);
  other->mutable_data()->set_raw(R"({"other":true})");
  fake_.SetLive(ControllerRevisionsResource(), other);
  fake_.FailNext("create controllerrevisions",
                 AlreadyExistsError("controllerrevisions \"" + taken +
                                    "\" already exists"));
  Sync();
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->collisioncount(), 1);
  appsv1::StatefulSet bumped = *set;
  bumped.mutable_status()->set_collisioncount(1);
  EXPECT_NE(StatefulSetRevision(bumped), taken);
  EXPECT_THAT(revision_actions_,
              ElementsAre("create controllerrevisions default/" + taken,
                          "create controllerrevisions default/" +
                              StatefulSetRevision(bumped)));
  EXPECT_EQ(LastStatus()->updaterevision(), StatefulSetRevision(bumped));
}

TEST_F(StatefulSetTest, PodBelowThePartitionIsRecreatedAtTheCurrentRevision) {
  ExpectFirstPodRecreatedAtTheCurrentRevision(0);
}

// The partition counts from ordinals.start.
TEST_F(StatefulSetTest,
       PodBelowThePartitionIsRecreatedAtTheCurrentRevisionFromStart) {
  ExpectFirstPodRecreatedAtTheCurrentRevision(3);
}

TEST_F(StatefulSetTest, RevisionsOfADeletedSetAreDeleted) {
  auto set = AddSet(1);
  auto v1 = AddRevision(*set, "nginx", 1);
  sets_.Delete("default/web");
  Sync();
  EXPECT_THAT(revision_actions_,
              ElementsAre("delete controllerrevisions default/" +
                          v1->metadata().name()));
}

TEST_F(StatefulSetTest, AdoptsAnOrphanRevisionMatchingItsSelector) {
  AddSet(1);
  auto orphan = std::make_shared<appsv1::ControllerRevision>();
  SetMeta(orphan->mutable_metadata(), "default", "web-old", {{"app", "web"}});
  orphan->mutable_data()->set_raw(R"({"spec":{"template":{}}})");
  orphan->set_revision(1);
  revisions_.Upsert(orphan);
  Sync();
  ASSERT_FALSE(revision_actions_.empty());
  EXPECT_EQ(revision_actions_[0], "update controllerrevisions default/web-old");
  auto adopted = std::static_pointer_cast<const appsv1::ControllerRevision>(
      revisions_.Get("default/web-old"));
  ASSERT_NE(objects::ControllerRef(adopted->metadata()), nullptr);
}

}  // namespace
}  // namespace kplane::controllers
