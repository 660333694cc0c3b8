#include "controllers/disruption_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "objects/apps_workloads_types.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: test builders

constexpr int64_t kNow = 1800000000;

std::shared_ptr<policyv1::PodDisruptionBudget> Budget(
    std::function<void(policyv1::PodDisruptionBudgetSpec*)> set) {
  auto pdb = std::make_shared<policyv1::PodDisruptionBudget>();
  SetMeta(pdb->mutable_metadata(), "default", "web-pdb");
  (*pdb->mutable_spec()->mutable_selector()->mutable_matchlabels())["app"] =
      "web";
  set(pdb->mutable_spec());
  return pdb;
}

class DisruptionControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.SetWall(WallTime(std::chrono::seconds(kNow)));
    deployment_ = std::make_shared<appsv1::Deployment>();
    SetMeta(deployment_->mutable_metadata(), "default", "web");
    deployment_->mutable_spec()->set_replicas(4);
    deployments_.Upsert(deployment_);
    auto rs = std::make_shared<appsv1::ReplicaSet>();
    SetMeta(rs->mutable_metadata(), "default", "web-1");
    OwnedBy(rs->mutable_metadata(), "Deployment", deployment_->metadata());
    rs->mutable_spec()->set_replicas(4);
    replicasets_.Upsert(rs);
    rs_ = rs;
  }
  std::unique_ptr<DisruptionController> New() {
    return std::make_unique<DisruptionController>(
        DisruptionControllerOptions{.api = &fake_,
                                    .pdbs = &pdbs_,
                                    .pods = &pods_,
                                    .replicasets = &replicasets_,
                                    .deployments = &deployments_,
                                    .statefulsets = &statefulsets_,
                                    .clock = &clock_,
                                    .metrics = &reg_});
  }
  // n pods of the Deployment's ReplicaSet, the first `ready` of them Ready.
  void AddPods(int n, int ready) {
    for (int i = 0; i < n; ++i) {
      auto pod =
          NewPod("default", "web-" + std::to_string(i), {{"app", "web"}});
      OwnedBy(pod->mutable_metadata(), "ReplicaSet", rs_->metadata());
      RunOn(pod.get(), "node-1", i < ready);
      pods_.Upsert(pod);
    }
  }
  const policyv1::PodDisruptionBudgetStatus& Written() {
    return static_cast<const policyv1::PodDisruptionBudget&>(
               *fake_.Written().back())
        .status();
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer pdbs_, pods_, replicasets_, deployments_, statefulsets_;
  std::shared_ptr<appsv1::Deployment> deployment_;
  std::shared_ptr<appsv1::ReplicaSet> rs_;
};

TEST_F(DisruptionControllerTest, MinAvailableIntegerCountsPods) {
  auto c = New();
  AddPods(3, 3);
  pdbs_.Upsert(
      Budget([](auto* s) { s->mutable_minavailable()->set_intval(2); }));
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  ASSERT_THAT(
      fake_.Actions(),
      ElementsAre("update-status poddisruptionbudgets default/web-pdb"));
  const auto& st = Written();
  EXPECT_EQ(st.expectedpods(), 3);
  EXPECT_EQ(st.desiredhealthy(), 2);
  EXPECT_EQ(st.currenthealthy(), 3);
  EXPECT_EQ(st.disruptionsallowed(), 1);
  EXPECT_EQ(st.observedgeneration(), 1);
  ASSERT_EQ(st.conditions_size(), 1);
  EXPECT_EQ(st.conditions(0).type(), "DisruptionAllowed");
  EXPECT_EQ(st.conditions(0).status(), "True");
  EXPECT_EQ(st.conditions(0).reason(), "SufficientPods");
}

TEST_F(DisruptionControllerTest, MaxUnavailableUsesTheDeploymentsScale) {
  auto c = New();
  AddPods(3, 3);  // the Deployment wants 4: one is missing
  pdbs_.Upsert(
      Budget([](auto* s) { s->mutable_maxunavailable()->set_intval(1); }));
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  EXPECT_EQ(Written().expectedpods(), 4);
  EXPECT_EQ(Written().desiredhealthy(), 3);
  EXPECT_EQ(Written().disruptionsallowed(), 0);
  EXPECT_EQ(Written().conditions(0).status(), "False");
  EXPECT_EQ(Written().conditions(0).reason(), "InsufficientPods");

  // A percentage minAvailable also scales by the controller, rounded up.
  fake_.Clear();
  AddPods(4, 4);
  pdbs_.Upsert(Budget([](auto* s) {
    s->mutable_minavailable()->set_type(1);
    s->mutable_minavailable()->set_strval("50%");
  }));
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  EXPECT_EQ(Written().expectedpods(), 4);
  EXPECT_EQ(Written().desiredhealthy(), 2);
  EXPECT_EQ(Written().disruptionsallowed(), 2);
}

TEST_F(DisruptionControllerTest, DisruptedPodsAreNotHealthyUntilTheyExpire) {
  auto c = New();
  AddPods(3, 3);
  auto pdb = Budget([](auto* s) { s->mutable_minavailable()->set_intval(1); });
  objects::SetTime(&(*pdb->mutable_status()->mutable_disruptedpods())["web-0"],
                   kNow - 30);
  objects::SetTime(&(*pdb->mutable_status()->mutable_disruptedpods())["web-1"],
                   kNow - 600);
  pdbs_.Upsert(pdb);
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  // web-0 was evicted 30 s ago: kept, not healthy. web-1's entry expired.
  EXPECT_EQ(Written().currenthealthy(), 2);
  EXPECT_EQ(Written().disruptionsallowed(), 1);
  ASSERT_EQ(Written().disruptedpods_size(), 1);
  EXPECT_EQ(Written().disruptedpods().count("web-0"), 1u);
}

TEST_F(DisruptionControllerTest, PodsOfOtherControllersFailSafe) {
  auto c = New();
  auto pod = NewPod("default", "job-pod", {{"app", "web"}});
  *pod->mutable_metadata()->add_ownerreferences() =
      ControllerRefTo("batch/v1", "Job", deployment_->metadata());
  RunOn(pod.get(), "node-1", true);
  pods_.Upsert(pod);
  auto pdb =
      Budget([](auto* s) { s->mutable_maxunavailable()->set_intval(1); });
  pdb->mutable_status()->set_disruptionsallowed(3);
  pdbs_.Upsert(pdb);
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  EXPECT_EQ(Written().disruptionsallowed(), 0);
  EXPECT_EQ(Written().conditions(0).reason(), "SyncFailed");
  EXPECT_EQ(Written().conditions(0).message(),
            "found no controllers for pod \"job-pod\"");
}

TEST_F(DisruptionControllerTest, WritesOnlyWhenTheStatusChanges) {
  auto c = New();
  AddPods(2, 2);
  pdbs_.Upsert(
      Budget([](auto* s) { s->mutable_minavailable()->set_intval(1); }));
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  auto stored = std::make_shared<policyv1::PodDisruptionBudget>(
      static_cast<const policyv1::PodDisruptionBudget&>(
          *fake_.Written().back()));
  pdbs_.Upsert(stored);
  fake_.Clear();
  clock_.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(c->Sync("default/web-pdb").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
}

}  // namespace
}  // namespace kplane::controllers
