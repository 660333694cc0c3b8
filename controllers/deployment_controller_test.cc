#include "controllers/deployment_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "controllers/util.h"
#include "informer/event_recorder.h"
#include "objects/meta.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

TEST(DeploymentHelpersTest, ScaledValueFromIntOrPercent) {
  struct Case {
    int type;
    int32_t i;
    std::string s;
    int32_t total;
    bool up;
    int32_t want;
  };
  for (const Case& c :
       std::vector<Case>{{0, 3, "", 10, true, 3},
                         {1, 0, "25%", 10, true, 3},
                         {1, 0, "25%", 10, false, 2},
                         {1, 0, "100%", 7, false, 7},
                         {1, 0, "0%", 7, true, 0},
                         {1, 0, "bad", 7, true, 0},
                         // Not a percentage (kube's error): 0.
                         {1, 0, "50", 10, true, 0},
                         // A valid maxSurge far past int32.
                         {1, 0, "5000000000000%", 1000, true, INT32_MAX}}) {
    objects::intstr::IntOrString v;
    v.set_type(c.type);
    v.set_intval(c.i);
    v.set_strval(c.s);
    EXPECT_EQ(ScaledValueFromIntOrPercent(v, c.total, c.up), c.want) << c.s;
  }
}

TEST(DeploymentHelpersTest, TemplateHashIgnoresItsOwnLabelAndTracksChanges) {
  corev1::PodTemplateSpec a = Template({{"app", "web"}}, "nginx:1");
  std::string h = ComputePodTemplateHash(a);
  EXPECT_FALSE(h.empty());
  EXPECT_EQ(h.find_first_not_of("bcdfghjklmnpqrstvwxz2456789"),
            std::string::npos);
  corev1::PodTemplateSpec labeled = a;
  (*labeled.mutable_metadata()->mutable_labels())[kPodTemplateHashLabel] = h;
  EXPECT_EQ(ComputePodTemplateHash(labeled), h);
  EXPECT_NE(ComputePodTemplateHash(Template({{"app", "web"}}, "nginx:2")), h);
}

class DeploymentTest : public ::testing::Test {
 protected:
  DeploymentTest()
      : controller_({.api = &fake_,
                     .deployments = &deployments_,
                     .replicasets = &replicasets_,
                     .pods = &pods_,
                     .clock = &clock_,
                     .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(1700000100)));
    fake_.ReflectUpdates(DeploymentsResource(), &deployments_);
  }
  std::shared_ptr<appsv1::Deployment> AddDeployment(int32_t replicas,
                                                    const std::string& image,
                                                    int surge,
                                                    int unavailable) {
    auto d = NewDeployment("default", "web", replicas, {{"app", "web"}}, image);
    auto* ru = d->mutable_spec()->mutable_strategy()->mutable_rollingupdate();
    ru->mutable_maxsurge()->set_type(0);
    ru->mutable_maxsurge()->set_intval(surge);
    ru->mutable_maxunavailable()->set_type(0);
    ru->mutable_maxunavailable()->set_intval(unavailable);
    deployments_.Upsert(d);
    return d;
  }
  // An RS of the deployment: spec replicas, status replicas and available.
  std::shared_ptr<appsv1::ReplicaSet> AddRs(const appsv1::Deployment& d,
                                            const std::string& image,
                                            int32_t spec, int32_t available,
                                            int revision, int64_t created) {
    corev1::PodTemplateSpec t = Template({{"app", "web"}}, image);
    std::string hash = ComputePodTemplateHash(t);
    auto rs =
        NewReplicaSet("default", "web-" + hash, spec, {{"app", "web"}}, image);
    (*rs->mutable_metadata()->mutable_labels())[kPodTemplateHashLabel] = hash;
    (*rs->mutable_spec()
          ->mutable_template_()
          ->mutable_metadata()
          ->mutable_labels())[kPodTemplateHashLabel] = hash;
    (*rs->mutable_metadata()->mutable_annotations())[kRevisionAnnotation] =
        std::to_string(revision);
    objects::SetTime(rs->mutable_metadata()->mutable_creationtimestamp(),
                     created);
    OwnedBy(rs->mutable_metadata(), "Deployment", d.metadata());
    rs->mutable_status()->set_replicas(spec);
    rs->mutable_status()->set_readyreplicas(available);
    rs->mutable_status()->set_availablereplicas(available);
    replicasets_.Upsert(rs);
    return rs;
  }
  // The replicas each RS update set, in order: "name=replicas".
  std::vector<std::string> Scales() {
    std::vector<std::string> out;
    for (const auto& w : fake_.Written()) {
      auto* rs = dynamic_cast<const appsv1::ReplicaSet*>(w.get());
      if (rs != nullptr) {
        out.push_back(rs->metadata().name() + "=" +
                      std::to_string(rs->spec().replicas()));
      }
    }
    return out;
  }
  // A running pod whose controller is `rs`; `deleting`: marked for
  // deletion (the RS controller no longer counts it, the kubelet still
  // runs it).
  std::shared_ptr<corev1::Pod> AddPod(const std::string& name,
                                      const appsv1::ReplicaSet& rs,
                                      bool deleting) {
    auto p = NewPod("default", name, {{"app", "web"}});
    OwnedBy(p->mutable_metadata(), "ReplicaSet", rs.metadata());
    RunOn(p.get(), "n1", true);
    if (deleting) {
      objects::SetTime(p->mutable_metadata()->mutable_deletiontimestamp(),
                       int64_t{1700000090});
    }
    pods_.Upsert(p);
    return p;
  }
  std::shared_ptr<const appsv1::Deployment> Current() {
    return std::static_pointer_cast<const appsv1::Deployment>(
        deployments_.Get("default/web"));
  }
  const appsv1::DeploymentCondition* Condition(const std::string& type) {
    for (const auto& c : Current()->status().conditions()) {
      if (c.type() == type) return &c;
    }
    return nullptr;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer deployments_;
  informer::Indexer replicasets_;
  informer::Indexer pods_;
  DeploymentController controller_;
};

TEST_F(DeploymentTest, NewDeploymentCreatesHashedReplicaSet) {
  AddDeployment(3, "nginx:1", 1, 1);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  std::string hash =
      ComputePodTemplateHash(Template({{"app", "web"}}, "nginx:1"));
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create replicasets default/web-" + hash,
                          "update deployments default/web",
                          "update-status deployments default/web"));
  auto rs =
      std::dynamic_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[0]);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->spec().replicas(), 3);
  EXPECT_EQ(rs->metadata().labels().at(kPodTemplateHashLabel), hash);
  EXPECT_EQ(rs->spec().selector().matchlabels().at(kPodTemplateHashLabel),
            hash);
  EXPECT_EQ(
      rs->spec().template_().metadata().labels().at(kPodTemplateHashLabel),
      hash);
  EXPECT_EQ(objects::Annotation(rs->metadata(), kRevisionAnnotation), "1");
  EXPECT_EQ(objects::ControllerRef(rs->metadata())->kind(), "Deployment");
  EXPECT_EQ(objects::Annotation(Current()->metadata(), kRevisionAnnotation),
            "1");
  ASSERT_NE(Condition("Progressing"), nullptr);
  EXPECT_EQ(Condition("Progressing")->reason(), "NewReplicaSetCreated");
  EXPECT_EQ(Condition("Available")->status(), "False");
}

// Replica counts near int32's end: desired + surge overflowed and the new
// ReplicaSet stayed at 0 replicas; an adopted ReplicaSet's revision
// annotation at int64's end made the next revision overflow.
TEST_F(DeploymentTest, CountsNearTheirEndsDoNotWrap) {
  AddDeployment(INT32_MAX, "nginx:1", INT32_MAX, 1);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  auto rs =
      std::dynamic_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[0]);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->spec().replicas(), INT32_MAX);

  fake_.Clear();
  auto d = AddDeployment(INT32_MAX, "nginx:2", 1, 1);
  AddRs(*d, "nginx:1", INT32_MAX, INT32_MAX, 1, 1700000000);
  auto old = AddRs(*d, "nginx:0", INT32_MAX, INT32_MAX, 1, 1600000000);
  (*old->mutable_metadata()->mutable_annotations())[kRevisionAnnotation] =
      "9223372036854775807";
  replicasets_.Upsert(old);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  rs = std::dynamic_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[0]);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(objects::Annotation(rs->metadata(), kRevisionAnnotation),
            "9223372036854775807");
  EXPECT_EQ(rs->spec().replicas(), 0);  // two full sets: no room to surge
  EXPECT_EQ(Current()->status().replicas(), INT32_MAX);
}

TEST_F(DeploymentTest, RollingUpdateStepsWithinSurgeAndUnavailable) {
  // desired 4, surge 1, unavailable 1; old RS fully available.
  auto d = AddDeployment(4, "nginx:2", 1, 1);
  auto old_rs = AddRs(*d, "nginx:1", 4, 4, 1, 1700000000);
  std::string new_name =
      "web-" + ComputePodTemplateHash(Template({{"app", "web"}}, "nginx:2"));
  std::string old_name = old_rs->metadata().name();
  // Step 1: a new RS with the one surge pod; nothing old goes yet (the new
  // pod is not available and 4 - 1 = 3 must stay).
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(new_name + "=1"));
  auto new_rs =
      std::static_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[0]);
  // Step 2: the new RS exists (1 pod, not available): one old pod may go.
  fake_.Clear();
  AddRs(*d, "nginx:2", 1, 0, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(old_name + "=3"));
  // Step 3: old at 3 (3 available), new 1 available: new -> 2, old -> 2.
  fake_.Clear();
  AddRs(*d, "nginx:1", 3, 3, 1, 1700000000);
  AddRs(*d, "nginx:2", 1, 1, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(new_name + "=2", old_name + "=2"));
  EXPECT_EQ(Condition("Progressing")->reason(), "ReplicaSetUpdated");
  // Done: old 0, new 4 available -> complete.
  fake_.Clear();
  AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  AddRs(*d, "nginx:2", 4, 4, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre());
  const appsv1::DeploymentStatus& st = Current()->status();
  EXPECT_EQ(st.replicas(), 4);
  EXPECT_EQ(st.updatedreplicas(), 4);
  EXPECT_EQ(st.availablereplicas(), 4);
  EXPECT_EQ(st.unavailablereplicas(), 0);
  EXPECT_EQ(st.observedgeneration(), 1);
  EXPECT_EQ(Condition("Progressing")->reason(), "NewReplicaSetAvailable");
  EXPECT_EQ(Condition("Available")->reason(), "MinimumReplicasAvailable");
  EXPECT_EQ(objects::Annotation(Current()->metadata(), kRevisionAnnotation),
            "2");
}

TEST_F(DeploymentTest, RecreateWaitsForOldPodsToGo) {
  auto d = AddDeployment(3, "nginx:2", 1, 1);
  d->mutable_spec()->mutable_strategy()->set_type("Recreate");
  d->mutable_spec()->mutable_strategy()->clear_rollingupdate();
  deployments_.Upsert(d);
  auto old_rs = AddRs(*d, "nginx:1", 3, 3, 1, 1700000000);
  std::string new_name =
      "web-" + ComputePodTemplateHash(Template({{"app", "web"}}, "nginx:2"));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(new_name + "=0"));  // created empty
  fake_.Clear();
  AddRs(*d, "nginx:2", 0, 0, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(old_rs->metadata().name() + "=0"));
  // Old RS at 0 in spec but its pods still run: the new RS waits.
  fake_.Clear();
  auto draining = AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  draining->mutable_status()->set_replicas(2);
  replicasets_.Upsert(draining);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre());
  // The RS controller counts active pods only: its status says 0 as soon
  // as the old pods are marked for deletion, but they still run. Kube's
  // oldPodsRunning lists the pods: the new RS waits for them too.
  fake_.Clear();
  AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  const std::string old_name = old_rs->metadata().name();
  auto finishing = AddPod(old_name + "-a", *old_rs, true);
  AddPod(old_name + "-b", *old_rs, true);
  // Another deployment's running pod does not hold this one back.
  auto other = NewReplicaSet("default", "other-1", 1, {{"app", "other"}}, "x");
  AddPod("other-1-a", *other, false);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre());
  // One old pod ended (Succeeded), the other is gone: scale up.
  fake_.Clear();
  auto ended = std::make_shared<corev1::Pod>(*finishing);
  ended->mutable_status()->set_phase("Succeeded");
  pods_.Upsert(ended);
  pods_.Delete("default/" + old_name + "-b");
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(new_name + "=3"));
}

// The new RS of a Recreate rollout is created at 0 while an old RS's pods
// are still terminating (its status already says 0).
TEST_F(DeploymentTest, RecreateCreatesTheNewReplicaSetEmptyWhileOldPodsRun) {
  auto d = AddDeployment(3, "nginx:2", 1, 1);
  d->mutable_spec()->mutable_strategy()->set_type("Recreate");
  d->mutable_spec()->mutable_strategy()->clear_rollingupdate();
  deployments_.Upsert(d);
  auto old_rs = AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  AddPod(old_rs->metadata().name() + "-a", *old_rs, true);
  const std::string new_name =
      "web-" + ComputePodTemplateHash(Template({{"app", "web"}}, "nginx:2"));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(new_name + "=0"));
}

// The last old pod going away changes no RS status: the pod's deletion
// itself enqueues a Recreate deployment (kube's deletePod).
TEST_F(DeploymentTest, DeletedPodEnqueuesItsRecreateDeployment) {
  auto d = AddDeployment(3, "nginx:2", 1, 1);
  auto old_rs = AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  auto pod = AddPod(old_rs->metadata().name() + "-a", *old_rs, true);
  controller_.OnPodDeleted(*pod);
  EXPECT_EQ(controller_.QueueDepth(), 0);  // RollingUpdate: not needed
  d->mutable_spec()->mutable_strategy()->set_type("Recreate");
  d->mutable_spec()->mutable_strategy()->clear_rollingupdate();
  deployments_.Upsert(d);
  controller_.OnPodDeleted(*pod);
  ASSERT_EQ(controller_.QueueDepth(), 1);
  std::optional<std::string> key = controller_.queue().Get();
  EXPECT_EQ(key.value_or(""), "default/web");
  if (key) controller_.queue().Done(*key);
  // A pod of an RS that is not (or no longer) this deployment's: nothing.
  auto stray = NewReplicaSet("default", "web-stray", 0, {{"app", "web"}}, "x");
  controller_.OnPodDeleted(*AddPod("web-stray-a", *stray, true));
  EXPECT_EQ(controller_.QueueDepth(), 0);
}

TEST_F(DeploymentTest, RollbackByTemplateBumpsTheOldReplicaSetsRevision) {
  auto d = AddDeployment(2, "nginx:1", 1, 0);
  auto first = AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  AddRs(*d, "nginx:2", 2, 2, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  ASSERT_FALSE(fake_.Actions().empty());
  EXPECT_EQ(fake_.Actions()[0],
            "update replicasets default/" + first->metadata().name());
  auto bumped =
      std::dynamic_pointer_cast<const appsv1::ReplicaSet>(fake_.Written()[0]);
  EXPECT_EQ(objects::Annotation(bumped->metadata(), kRevisionAnnotation), "3");
  EXPECT_EQ(objects::Annotation(Current()->metadata(), kRevisionAnnotation),
            "3");
}

TEST_F(DeploymentTest, ScaleDownGoesToTheNewReplicaSet) {
  auto d = AddDeployment(2, "nginx:1", 1, 1);
  auto rs = AddRs(*d, "nginx:1", 5, 5, 1, 1700000000);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(rs->metadata().name() + "=2"));
}

TEST_F(DeploymentTest, ProgressDeadlineExceeded) {
  auto d = AddDeployment(2, "nginx:2", 1, 0);
  d->mutable_spec()->set_progressdeadlineseconds(30);
  deployments_.Upsert(d);
  AddRs(*d, "nginx:1", 2, 2, 1, 1700000000);
  AddRs(*d, "nginx:2", 1, 0, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_EQ(Condition("Progressing")->reason(), "ReplicaSetUpdated");
  // No progress for longer than the deadline.
  clock_.SetWall(WallTime(seconds(1700000100 + 31)));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_EQ(Condition("Progressing")->status(), "False");
  EXPECT_EQ(Condition("Progressing")->reason(), "ProgressDeadlineExceeded");
}

// Kube's syncRolloutStatus: a complete rollout (replicas == updated and
// NewReplicaSetAvailable) is not estimated again; losing a pod later is
// no stalled rollout.
TEST_F(DeploymentTest, CompleteDeploymentLosingAvailabilityDoesNotTimeOut) {
  auto d = AddDeployment(3, "nginx:1", 1, 0);
  d->mutable_spec()->set_progressdeadlineseconds(30);
  deployments_.Upsert(d);
  AddRs(*d, "nginx:1", 3, 3, 1, 1700000000);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  ASSERT_NE(Condition("Progressing"), nullptr);
  EXPECT_EQ(Condition("Progressing")->status(), "True");
  EXPECT_EQ(Condition("Progressing")->reason(), "NewReplicaSetAvailable");
  // A pod stops being available.
  AddRs(*d, "nginx:1", 3, 2, 1, 1700000000);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_EQ(Condition("Available")->status(), "False");
  EXPECT_EQ(Condition("Progressing")->status(), "True");
  EXPECT_EQ(Condition("Progressing")->reason(), "NewReplicaSetAvailable");
  clock_.SetWall(WallTime(seconds(1700000100 + 31)));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_EQ(Condition("Progressing")->status(), "True");
  EXPECT_EQ(Condition("Progressing")->reason(), "NewReplicaSetAvailable");
}

// Kube's getNewReplicaSet: the existing new RS follows the deployment's
// minReadySeconds (paused or not), not only when it is created.
TEST_F(DeploymentTest, MinReadySecondsReachesTheExistingNewReplicaSet) {
  auto d = AddDeployment(3, "nginx:1", 1, 0);
  d->mutable_spec()->set_minreadyseconds(30);
  deployments_.Upsert(d);
  auto rs = AddRs(*d, "nginx:1", 3, 3, 1, 1700000000);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  auto written = [&]() -> std::shared_ptr<const appsv1::ReplicaSet> {
    for (const auto& w : fake_.Written()) {
      auto r = std::dynamic_pointer_cast<const appsv1::ReplicaSet>(w);
      if (r != nullptr && r->metadata().name() == rs->metadata().name()) {
        return r;
      }
    }
    return nullptr;
  };
  ASSERT_NE(written(), nullptr);
  EXPECT_EQ(written()->spec().minreadyseconds(), 30);
  EXPECT_EQ(written()->spec().replicas(), 3);
  // Paused: still.
  fake_.Clear();
  d->mutable_spec()->set_paused(true);
  d->mutable_spec()->set_minreadyseconds(10);
  deployments_.Upsert(d);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  ASSERT_NE(written(), nullptr);
  EXPECT_EQ(written()->spec().minreadyseconds(), 10);
}

TEST_F(DeploymentTest, OldReplicaSetsBeyondHistoryLimitAreDeleted) {
  auto d = AddDeployment(1, "nginx:9", 1, 0);
  d->mutable_spec()->set_revisionhistorylimit(1);
  deployments_.Upsert(d);
  auto r1 = AddRs(*d, "nginx:1", 0, 0, 1, 1700000000);
  AddRs(*d, "nginx:2", 0, 0, 2, 1700000010);
  AddRs(*d, "nginx:9", 1, 1, 3, 1700000020);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  std::vector<std::string> actions = fake_.Actions();
  EXPECT_THAT(actions, ::testing::Contains("delete replicasets default/" +
                                           r1->metadata().name()));
  EXPECT_EQ(std::count_if(
                actions.begin(), actions.end(),
                [](const std::string& a) { return a.rfind("delete", 0) == 0; }),
            1);
}

TEST_F(DeploymentTest, PausedDeploymentScalesButDoesNotRollOut) {
  auto d = AddDeployment(5, "nginx:2", 1, 0);
  d->mutable_spec()->set_paused(true);
  deployments_.Upsert(d);
  auto rs = AddRs(*d, "nginx:2", 3, 3, 1, 1700000000);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(Scales(), ElementsAre(rs->metadata().name() + "=5"));
  EXPECT_EQ(Condition("Progressing")->reason(), "DeploymentPaused");
  // A template change while paused creates nothing.
  fake_.Clear();
  d->mutable_spec()
      ->mutable_template_()
      ->mutable_spec()
      ->mutable_containers(0)
      ->set_image("nginx:3");
  deployments_.Upsert(d);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  for (const std::string& a : fake_.Actions()) {
    EXPECT_EQ(a.rfind("create", 0), std::string::npos) << a;
  }
}

TEST_F(DeploymentTest, RecordsScalingReplicaSetEvents) {
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  controller_.set_event_recorder(std::move(recorder));
  auto d = AddDeployment(4, "nginx:2", 1, 1);
  auto old_rs = AddRs(*d, "nginx:1", 4, 4, 1, 1700000000);
  const std::string new_name =
      "web-" + ComputePodTemplateHash(Template({{"app", "web"}}, "nginx:2"));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  AddRs(*d, "nginx:2", 1, 0, 2, 1700000050);
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(events->Events(),
              ElementsAre("Normal ScalingReplicaSet Scaled up replica set " +
                              new_name + " from 0 to 1",
                          "Normal ScalingReplicaSet Scaled down replica set " +
                              old_rs->metadata().name() + " from 4 to 3"));
}

}  // namespace
}  // namespace kplane::controllers
