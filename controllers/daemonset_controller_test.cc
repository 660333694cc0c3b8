#include "controllers/daemonset_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/controller_history.h"
#include "controllers/revision_test_util.h"
#include "controllers/test_objects.h"
#include "objects/meta.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using namespace testing;  // NOLINT: test builders

class DaemonSetTest : public ::testing::Test {
 protected:
  DaemonSetTest()
      : controller_({.api = &fake_,
                     .daemonsets = &sets_,
                     .pods = &pods_,
                     .nodes = &nodes_,
                     .revisions = &revisions_,
                     .clock = &clock_,
                     .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(1700000100)));
  }

  std::shared_ptr<appsv1::DaemonSet> AddSet(const std::string& image) {
    auto d = std::make_shared<appsv1::DaemonSet>();
    SetMeta(d->mutable_metadata(), "default", "agent", {{"app", "agent"}});
    (*d->mutable_spec()->mutable_selector()->mutable_matchlabels())["app"] =
        "agent";
    *d->mutable_spec()->mutable_template_() =
        Template({{"app", "agent"}}, image);
    auto* us = d->mutable_spec()->mutable_updatestrategy();
    us->set_type("RollingUpdate");
    us->mutable_rollingupdate()->mutable_maxunavailable()->set_intval(1);
    sets_.Upsert(d);
    return d;
  }
  std::shared_ptr<corev1::Node> AddNode(const std::string& name) {
    auto n = NewNode(name);
    nodes_.Upsert(n);
    return n;
  }
  void Taint(corev1::Node* n, const std::string& key,
             const std::string& effect) {
    corev1::Taint* t = n->mutable_spec()->add_taints();
    t->set_key(key);
    t->set_effect(effect);
    nodes_.Upsert(std::make_shared<corev1::Node>(*n));
  }
  // A daemon pod of `ds` on `node` with the template of `image`.
  std::shared_ptr<corev1::Pod> AddPod(const appsv1::DaemonSet& ds,
                                      const std::string& node,
                                      const std::string& image, bool ready) {
    appsv1::DaemonSet at = ds;
    at.mutable_spec()
        ->mutable_template_()
        ->mutable_spec()
        ->mutable_containers(0)
        ->set_image(image);
    auto p = NewPod("default", "agent-" + node,
                    {{"app", "agent"},
                     {"controller-revision-hash", DaemonSetTemplateHash(at)}});
    OwnedBy(p->mutable_metadata(), "DaemonSet", ds.metadata());
    RunOn(p.get(), node, ready);
    pods_.Upsert(p);
    return p;
  }
  // A revision of `ds` with its template at `image`, numbered `number`,
  // in the cache.
  std::shared_ptr<const appsv1::ControllerRevision> AddRevision(
      const appsv1::DaemonSet& ds, const std::string& image, int64_t number) {
    appsv1::DaemonSet at = ds;
    at.mutable_spec()
        ->mutable_template_()
        ->mutable_spec()
        ->mutable_containers(0)
        ->set_image(image);
    auto r = std::make_shared<const appsv1::ControllerRevision>(
        NewRevision(ds.metadata(), "DaemonSet", at.spec().template_(),
                    TemplatePatch(at.spec().template_()),
                    DaemonSetTemplateHash(at), number));
    revisions_.Upsert(r);
    return r;
  }
  std::vector<std::string> Sync() {
    fake_.Clear();
    revision_actions_.clear();
    Status s = controller_.Sync("default/agent");
    EXPECT_TRUE(s.ok()) << s;
    std::vector<std::string> out;
    for (const std::string& a :
         ReflectRevisionWrites(fake_, &revisions_, &revision_actions_)) {
      if (a.rfind("update-status", 0) != 0) out.push_back(a);
    }
    return out;
  }
  std::vector<std::shared_ptr<const corev1::Pod>> CreatedPods() {
    std::vector<std::shared_ptr<const corev1::Pod>> out;
    for (const auto& w : fake_.Written()) {
      if (auto p = std::dynamic_pointer_cast<const corev1::Pod>(w)) {
        out.push_back(p);
      }
    }
    return out;
  }
  const appsv1::DaemonSetStatus* LastStatus() {
    auto w = fake_.Written();
    for (auto it = w.rbegin(); it != w.rend(); ++it) {
      if (auto* d = dynamic_cast<const appsv1::DaemonSet*>(it->get())) {
        return &d->status();
      }
    }
    return nullptr;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer sets_;
  informer::Indexer pods_;
  informer::Indexer nodes_;
  informer::Indexer revisions_;
  std::vector<std::string> revision_actions_;  // of the last Sync()
  DaemonSetController controller_;
};

TEST_F(DaemonSetTest, OnePodPerEligibleNodeBoundToIt) {
  auto ds = AddSet("agent:1");
  (*ds->mutable_spec()
        ->mutable_template_()
        ->mutable_spec()
        ->mutable_nodeselector())["disk"] = "ssd";
  sets_.Upsert(ds);
  auto a = AddNode("node-a");
  (*a->mutable_metadata()->mutable_labels())["disk"] = "ssd";
  nodes_.Upsert(a);
  AddNode("node-b");  // no disk=ssd label
  auto c = AddNode("node-c");
  (*c->mutable_metadata()->mutable_labels())["disk"] = "ssd";
  Taint(c.get(), "dedicated", "NoSchedule");  // not tolerated

  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-"));
  auto pods = CreatedPods();
  ASSERT_EQ(pods.size(), 1u);
  const corev1::Pod& pod = *pods[0];
  EXPECT_EQ(pod.spec().nodename(), "node-a");
  EXPECT_EQ(pod.metadata().labels().at("controller-revision-hash"),
            DaemonSetTemplateHash(*ds));
  const auto& term = pod.spec()
                         .affinity()
                         .nodeaffinity()
                         .requiredduringschedulingignoredduringexecution()
                         .nodeselectorterms(0);
  EXPECT_EQ(term.matchfields(0).key(), "metadata.name");
  EXPECT_EQ(term.matchfields(0).values(0), "node-a");
  std::vector<std::string> tolerated;
  for (const auto& t : pod.spec().tolerations()) {
    tolerated.push_back(t.key() + ":" + t.effect());
  }
  EXPECT_THAT(tolerated, UnorderedElementsAre(
                             "node.kubernetes.io/not-ready:NoExecute",
                             "node.kubernetes.io/unreachable:NoExecute",
                             "node.kubernetes.io/disk-pressure:NoSchedule",
                             "node.kubernetes.io/memory-pressure:NoSchedule",
                             "node.kubernetes.io/pid-pressure:NoSchedule",
                             "node.kubernetes.io/unschedulable:NoSchedule"));
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind(), "DaemonSet");
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->desirednumberscheduled(), 1);
  EXPECT_EQ(LastStatus()->currentnumberscheduled(), 0);
}

TEST_F(DaemonSetTest, NotReadyAndCordonedNodesStillGetTheirPod) {
  AddSet("agent:1");
  auto n = AddNode("node-a");
  n->mutable_spec()->set_unschedulable(true);
  Taint(n.get(), "node.kubernetes.io/unschedulable", "NoSchedule");
  Taint(n.get(), "node.kubernetes.io/not-ready", "NoExecute");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-"));
}

TEST_F(DaemonSetTest, RequiredNodeAffinityIsRespected) {
  auto ds = AddSet("agent:1");
  auto* req = ds->mutable_spec()
                  ->mutable_template_()
                  ->mutable_spec()
                  ->mutable_affinity()
                  ->mutable_nodeaffinity()
                  ->mutable_requiredduringschedulingignoredduringexecution()
                  ->add_nodeselectorterms()
                  ->add_matchexpressions();
  req->set_key("zone");
  req->set_operator_("In");
  req->add_values("z1");
  sets_.Upsert(ds);
  auto a = AddNode("node-a");
  (*a->mutable_metadata()->mutable_labels())["zone"] = "z1";
  nodes_.Upsert(a);
  auto b = AddNode("node-b");
  (*b->mutable_metadata()->mutable_labels())["zone"] = "z2";
  nodes_.Upsert(b);
  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-"));
  EXPECT_EQ(CreatedPods()[0]->spec().nodename(), "node-a");
}

TEST_F(DaemonSetTest, TaintsEvictOrKeepExistingPods) {
  auto ds = AddSet("agent:1");
  auto a = AddNode("node-a");
  auto b = AddNode("node-b");
  AddPod(*ds, "node-a", "agent:1", true);
  AddPod(*ds, "node-b", "agent:1", true);
  Taint(a.get(), "gpu", "NoSchedule");  // a running pod may stay
  Taint(b.get(), "gone", "NoExecute");  // a running pod must go
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/agent-node-b"));
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->desirednumberscheduled(), 0);
  EXPECT_EQ(LastStatus()->numbermisscheduled(), 2);
}

TEST_F(DaemonSetTest, ExpectationsKeepAStaleCacheFromDoublingPods) {
  AddSet("agent:1");
  AddNode("node-a");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-"));
  // The cache has not seen the pod yet: no second one.
  EXPECT_THAT(Sync(), IsEmpty());
}

TEST_F(DaemonSetTest, NewNodeGetsAPodAndAGoneNodesPodIsForceDeleted) {
  auto ds = AddSet("agent:1");
  AddNode("node-a");
  AddPod(*ds, "node-a", "agent:1", true);
  AddPod(*ds, "node-gone", "agent:1", true);
  AddNode("node-b");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-",
                                  "delete pods default/agent-node-gone"));
  EXPECT_EQ(CreatedPods()[0]->spec().nodename(), "node-b");
}

TEST_F(DaemonSetTest, RollingUpdateRespectsMaxUnavailable) {
  auto ds = AddSet("agent:2");
  AddNode("node-a");
  AddNode("node-b");
  AddNode("node-c");
  AddPod(*ds, "node-a", "agent:1", true);
  AddPod(*ds, "node-b", "agent:1", true);
  AddPod(*ds, "node-c", "agent:1", true);
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/agent-node-a"));
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updatednumberscheduled(), 0);
  EXPECT_EQ(LastStatus()->numberavailable(), 3);
  // Once gone (its deletion observed), the replacement is created.
  pods_.Delete("default/agent-node-a");
  controller_.expectations().DeletionObserved("default/agent",
                                              "default/agent-node-a");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-"));
  controller_.expectations().CreationObserved("default/agent");
  // Not ready yet: no other node is touched.
  AddPod(*ds, "node-a", "agent:2", false);
  EXPECT_THAT(Sync(), IsEmpty());
  AddPod(*ds, "node-a", "agent:2", true);
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/agent-node-b"));
}

TEST_F(DaemonSetTest, UnavailableOldPodsAreReplacedAtOnce) {
  auto ds = AddSet("agent:2");
  AddNode("node-a");
  AddNode("node-b");
  AddPod(*ds, "node-a", "agent:1", false);
  AddPod(*ds, "node-b", "agent:1", false);
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/agent-node-a",
                                  "delete pods default/agent-node-b"));
}

TEST_F(DaemonSetTest, OnDeleteLeavesOldPods) {
  auto ds = AddSet("agent:2");
  ds->mutable_spec()->mutable_updatestrategy()->set_type("OnDelete");
  ds->mutable_spec()->mutable_updatestrategy()->clear_rollingupdate();
  sets_.Upsert(ds);
  AddNode("node-a");
  AddPod(*ds, "node-a", "agent:1", true);
  EXPECT_THAT(Sync(), IsEmpty());
  ASSERT_NE(LastStatus(), nullptr);
  EXPECT_EQ(LastStatus()->updatednumberscheduled(), 0);
  EXPECT_EQ(LastStatus()->numberready(), 1);
  EXPECT_EQ(LastStatus()->currentnumberscheduled(), 1);
}

TEST_F(DaemonSetTest, FirstSyncCreatesRevisionOneAndPodsCarryItsHash) {
  auto ds = AddSet("agent:1");
  AddNode("node-a");
  EXPECT_THAT(Sync(), ElementsAre("create pods default/agent-"));
  const std::string hash = DaemonSetTemplateHash(*ds);
  EXPECT_THAT(revision_actions_,
              ElementsAre("create controllerrevisions default/agent-" + hash));
  auto rev = std::static_pointer_cast<const appsv1::ControllerRevision>(
      revisions_.Get("default/agent-" + hash));
  ASSERT_NE(rev, nullptr);
  EXPECT_EQ(rev->revision(), 1);
  EXPECT_EQ(rev->metadata().labels().at("controller-revision-hash"), hash);
  EXPECT_EQ(rev->metadata().labels().at("app"), "agent");
  const metav1::OwnerReference* ref = objects::ControllerRef(rev->metadata());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind(), "DaemonSet");
  EXPECT_EQ(rev->data().raw(), TemplatePatch(ds->spec().template_()));
  ASSERT_EQ(CreatedPods().size(), 1u);
  EXPECT_EQ(
      CreatedPods()[0]->metadata().labels().at("controller-revision-hash"),
      hash);
  // Unchanged template: no new revision.
  Sync();
  EXPECT_THAT(revision_actions_, IsEmpty());
}

TEST_F(DaemonSetTest, TemplateChangeCreatesTheNextRevision) {
  auto ds = AddSet("agent:1");
  AddRevision(*ds, "agent:1", 1);
  ds->mutable_spec()
      ->mutable_template_()
      ->mutable_spec()
      ->mutable_containers(0)
      ->set_image("agent:2");
  sets_.Upsert(ds);
  Sync();
  EXPECT_THAT(revision_actions_,
              ElementsAre("create controllerrevisions default/agent-" +
                          DaemonSetTemplateHash(*ds)));
  auto v2 = std::static_pointer_cast<const appsv1::ControllerRevision>(
      revisions_.Get("default/agent-" + DaemonSetTemplateHash(*ds)));
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2->revision(), 2);
}

TEST_F(DaemonSetTest, RollbackRenumbersTheOldRevisionAndRollsPodsBack) {
  auto ds = AddSet("agent:1");  // `kubectl rollout undo` put agent:1 back
  auto v1 = AddRevision(*ds, "agent:1", 1);
  AddRevision(*ds, "agent:2", 2);
  AddNode("node-a");
  AddPod(*ds, "node-a", "agent:2", true);
  EXPECT_THAT(Sync(), ElementsAre("delete pods default/agent-node-a"));
  EXPECT_THAT(revision_actions_,
              ElementsAre("update controllerrevisions default/" +
                          v1->metadata().name()));
  auto now = std::static_pointer_cast<const appsv1::ControllerRevision>(
      revisions_.Get("default/" + v1->metadata().name()));
  EXPECT_EQ(now->revision(), 3);
}

TEST_F(DaemonSetTest, HistoryIsCleanedUpToTheLimitSkippingLiveRevisions) {
  auto ds = AddSet("v5");
  ds->mutable_spec()->set_revisionhistorylimit(1);
  sets_.Upsert(ds);
  auto v1 = AddRevision(*ds, "v1", 1);
  AddRevision(*ds, "v2", 2);  // node-a's pod runs it
  auto v3 = AddRevision(*ds, "v3", 3);
  auto v4 = AddRevision(*ds, "v4", 4);
  AddNode("node-a");
  AddPod(*ds, "node-a", "v2", true);
  Sync();
  // Four old revisions, one to keep: three go, oldest first, v2 skipped.
  EXPECT_THAT(
      revision_actions_,
      ElementsAre(
          "create controllerrevisions default/agent-" +
              DaemonSetTemplateHash(*ds),
          "delete controllerrevisions default/" + v1->metadata().name(),
          "delete controllerrevisions default/" + v3->metadata().name(),
          "delete controllerrevisions default/" + v4->metadata().name()));
}

TEST_F(DaemonSetTest, RevisionsOfADeletedSetAreDeleted) {
  auto ds = AddSet("agent:1");
  auto v1 = AddRevision(*ds, "agent:1", 1);
  sets_.Delete("default/agent");
  Sync();
  EXPECT_THAT(revision_actions_,
              ElementsAre("delete controllerrevisions default/" +
                          v1->metadata().name()));
}

// As for a StatefulSet: pods and revisions the garbage collector orphaned
// (--cascade=orphan) before the set went are not deleted on a stale cache.
TEST_F(DaemonSetTest, PodsOrphanedBeforeTheSetWentAreNotDeleted) {
  auto ds = AddSet("agent:1");
  AddNode("node-a");
  auto cached = AddPod(*ds, "node-a", "agent:1", true);
  auto rev = std::make_shared<appsv1::ControllerRevision>(
      *AddRevision(*ds, "agent:1", 1));
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
  sets_.Delete("default/agent");
  EXPECT_THAT(Sync(), ElementsAre("delete-refused pods default/agent-node-a"));
  EXPECT_THAT(revision_actions_,
              ElementsAre("delete-refused controllerrevisions default/" +
                          rev->metadata().name()));
}

}  // namespace
}  // namespace kplane::controllers
