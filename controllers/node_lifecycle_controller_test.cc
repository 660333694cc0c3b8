#include "controllers/node_lifecycle_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "informer/event_recorder.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

class NodeLifecycleTest : public ::testing::Test {
 protected:
  NodeLifecycleTest()
      : pods_({{std::string(informer::kNamespaceIndex),
                informer::NamespaceIndexFunc},
               {kPodNodeIndex, PodNodeIndexFunc}}),
        controller_({.api = &fake_,
                     .nodes = &nodes_,
                     .leases = &leases_,
                     .pods = &pods_,
                     .grace_period = seconds(40),
                     .monitor_period = seconds(5),
                     .default_toleration_seconds = 30,
                     .eviction_qps = 0,
                     .clock = &clock_,
                     .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(1700000000)));
    fake_.ReflectUpdates(NodesResource(), &nodes_);
    nodes_.Upsert(NewNode("n1"));
    leases_.Upsert(NewLease("n1", clock_.WallNow()));
  }
  void Renew() { leases_.Upsert(NewLease("n1", clock_.WallNow())); }
  std::shared_ptr<corev1::Pod> AddPod(const std::string& name) {
    auto p = NewPod("default", name);
    RunOn(p.get(), "n1", true);
    pods_.Upsert(p);
    return p;
  }
  std::shared_ptr<const corev1::Node> Node() {
    return std::static_pointer_cast<const corev1::Node>(nodes_.Get("n1"));
  }
  corev1::Toleration Tol(const std::string& key, std::optional<int64_t> secs) {
    corev1::Toleration t;
    t.set_key(key);
    t.set_operator_("Exists");
    t.set_effect("NoExecute");
    if (secs) t.set_tolerationseconds(*secs);
    return t;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer nodes_, leases_;
  informer::Indexer pods_;
  NodeLifecycleController controller_;
};

TEST_F(NodeLifecycleTest, StaleLeaseMakesNodeNotReadyAndTainted) {
  AddPod("web");
  ASSERT_TRUE(controller_.Sync("n1").ok());  // first sight: grace starts
  clock_.Advance(seconds(30));
  Renew();
  ASSERT_TRUE(controller_.Sync("n1").ok());  // renewed: healthy
  clock_.Advance(seconds(39));
  ASSERT_TRUE(controller_.Sync("n1").ok());  // 39 s since renewal
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  clock_.Advance(seconds(1));
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update-status nodes n1",
                          "update-status pods default/web", "update nodes n1"));
  const corev1::NodeCondition* ready =
      FindNodeCondition(Node()->status(), "Ready");
  EXPECT_EQ(ready->status(), "Unknown");
  EXPECT_EQ(ready->reason(), "NodeStatusUnknown");
  EXPECT_EQ(ready->message(), "Kubelet stopped posting node status.");
  ASSERT_EQ(Node()->spec().taints_size(), 1);
  EXPECT_EQ(Node()->spec().taints(0).key(), kUnreachableTaint);
  EXPECT_EQ(Node()->spec().taints(0).effect(), "NoExecute");
  auto pod = std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[1]);
  EXPECT_FALSE(IsPodReady(*pod));
  // Marked once: another sync changes nothing (the pod is not due yet).
  fake_.Clear();
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // The lease resumes: Ready again, taint removed.
  Renew();
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update-status nodes n1", "update nodes n1"));
  EXPECT_TRUE(IsNodeReady(*Node()));
  EXPECT_EQ(Node()->spec().taints_size(), 0);
}

TEST_F(NodeLifecycleTest, OnlyRenewalsOfNewOrUnhealthyNodesNeedASync) {
  auto lease = [&] { return NewLease("n1", clock_.WallNow()); };
  EXPECT_TRUE(controller_.ObserveLease(*lease()));  // not synced yet
  ASSERT_TRUE(controller_.Sync("n1").ok());
  clock_.Advance(seconds(30));
  Renew();
  // Healthy: the renewal is recorded, the monitor's period re-checks it.
  EXPECT_FALSE(controller_.ObserveLease(*lease()));
  // The grace period ran from the renewal the handler saw, not from the
  // next sync: 40 s later the node is NotReady.
  clock_.Advance(seconds(40));
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_EQ(FindNodeCondition(Node()->status(), "Ready")->status(), "Unknown");
  // Marked unhealthy: a renewal syncs at once, and that sync re-readies it.
  Renew();
  EXPECT_TRUE(controller_.ObserveLease(*lease()));
  fake_.Clear();
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update-status nodes n1", "update nodes n1"));
  EXPECT_FALSE(controller_.ObserveLease(*lease()));  // healthy again
  // A lease of a node never synced: Sync decides.
  EXPECT_TRUE(controller_.ObserveLease(*NewLease("n2", clock_.WallNow())));
}

TEST_F(NodeLifecycleTest, MonitorQueuesOnlyNodesWhoseSyncHasWork) {
  auto drain = [&] {
    int n = controller_.QueueDepth();
    for (int i = 0; i < n; ++i) {
      std::optional<std::string> key = controller_.queue().Get();
      controller_.queue().Done(*key);
    }
    return n;
  };
  controller_.MonitorOnce();
  EXPECT_EQ(drain(), 1);  // not registered yet
  ASSERT_TRUE(controller_.Sync("n1").ok());
  controller_.MonitorOnce();
  EXPECT_EQ(drain(), 0);  // healthy: nothing to do
  clock_.Advance(seconds(41));
  controller_.MonitorOnce();
  EXPECT_EQ(drain(), 1);  // past its grace period
  ASSERT_TRUE(controller_.Sync("n1").ok());
  controller_.MonitorOnce();
  EXPECT_EQ(drain(), 1);  // marked and tainted: evictions are due in time
  Renew();
  ASSERT_TRUE(controller_.Sync("n1").ok());
  ASSERT_TRUE(IsNodeReady(*Node()));
  controller_.MonitorOnce();
  EXPECT_EQ(drain(), 0);  // Ready again
  // Someone else's NoExecute taint: its pods may have to go.
  auto tainted = std::make_shared<corev1::Node>(*Node());
  corev1::Taint* t = tainted->mutable_spec()->add_taints();
  t->set_key("example.com/maintenance");
  t->set_effect("NoExecute");
  nodes_.Upsert(tainted);
  controller_.MonitorOnce();
  EXPECT_EQ(drain(), 1);
}

TEST_F(NodeLifecycleTest, EvictionAfterToleration) {
  auto defaulted = AddPod("defaulted");  // the apiserver's 300 s toleration
  for (const char* k : {kNotReadyTaint, kUnreachableTaint}) {
    *defaulted->mutable_spec()->add_tolerations() = Tol(k, 300);
  }
  auto patient = AddPod("patient");
  *patient->mutable_spec()->add_tolerations() = Tol(kUnreachableTaint, 100);
  auto forever = AddPod("forever");
  *forever->mutable_spec()->add_tolerations() =
      Tol(kUnreachableTaint, std::nullopt);
  for (auto& p : {defaulted, patient, forever}) pods_.Upsert(p);
  ASSERT_TRUE(controller_.Sync("n1").ok());
  clock_.Advance(seconds(41));
  ASSERT_TRUE(controller_.Sync("n1").ok());
  // Pods were marked not ready; none evicted yet.
  for (const std::string& a : fake_.Actions())
    EXPECT_NE(a.rfind("delete", 0), 0u) << a;
  fake_.Clear();
  clock_.Advance(seconds(30));  // the default (30 s here) is up
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/defaulted"));
  fake_.Clear();
  clock_.Advance(seconds(70));  // 100 s
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/defaulted",
                                           "delete pods default/patient"));
}

// Tolerations near int64's end are as good as forever: the due time must
// not wrap into an eviction now (nor the recheck into the past).
TEST_F(NodeLifecycleTest, HugeTolerationsAreNotEvictions) {
  auto ages = AddPod("ages");
  auto most = AddPod("most");
  for (const char* k : {kNotReadyTaint, kUnreachableTaint}) {
    *ages->mutable_spec()->add_tolerations() = Tol(k, 10000000000);
    *most->mutable_spec()->add_tolerations() = Tol(k, INT64_MAX);
  }
  for (auto& p : {ages, most}) pods_.Upsert(p);
  ASSERT_TRUE(controller_.Sync("n1").ok());
  clock_.Advance(seconds(41));
  ASSERT_TRUE(controller_.Sync("n1").ok());
  clock_.Advance(hours(24 * 365));
  ASSERT_TRUE(controller_.Sync("n1").ok());
  for (const std::string& a : fake_.Actions())
    EXPECT_NE(a.rfind("delete", 0), 0u) << a;
}

TEST_F(NodeLifecycleTest, TolerationSecondsTable) {
  auto node = NewNode("n1");
  corev1::Taint* t = node->mutable_spec()->add_taints();
  t->set_key(kUnreachableTaint);
  t->set_effect("NoExecute");
  struct Case {
    std::string name;
    std::vector<corev1::Toleration> tolerations;
    int64_t want;
  };
  corev1::Toleration wildcard;
  wildcard.set_operator_("Exists");
  std::vector<Case> cases = {
      {"no toleration: the default", {}, 30},
      {"admission default counts as the flag",
       {Tol(kUnreachableTaint, 300)},
       30},
      {"own seconds", {Tol(kUnreachableTaint, 12)}, 12},
      {"no seconds: forever", {Tol(kUnreachableTaint, std::nullopt)}, -1},
      {"longest matching wins",
       {Tol(kUnreachableTaint, 5), Tol(kUnreachableTaint, 50)},
       50},
      {"wildcard tolerates everything", {wildcard}, -1},
      {"other key does not match", {Tol("other", 5)}, 30},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = NewPod("default", "p");
    for (const auto& tol : c.tolerations)
      *pod->mutable_spec()->add_tolerations() = tol;
    EXPECT_EQ(controller_.TolerationSeconds(*pod, *node), c.want);
  }
  // An untolerated NoExecute taint of another kind: evict at once.
  corev1::Taint* other = node->mutable_spec()->add_taints();
  other->set_key("maintenance");
  other->set_effect("NoExecute");
  auto pod = NewPod("default", "p");
  *pod->mutable_spec()->add_tolerations() =
      Tol(kUnreachableTaint, std::nullopt);
  EXPECT_EQ(controller_.TolerationSeconds(*pod, *node), 0);
}

TEST_F(NodeLifecycleTest, EvictionRateIsBounded) {
  NodeLifecycleController limited({.api = &fake_,
                                   .nodes = &nodes_,
                                   .leases = &leases_,
                                   .pods = &pods_,
                                   .grace_period = seconds(40),
                                   .default_toleration_seconds = 0,
                                   .eviction_qps = 1,
                                   .clock = &clock_,
                                   .metrics = &reg_});
  for (const char* n : {"a", "b", "c"}) AddPod(n);
  ASSERT_TRUE(limited.Sync("n1").ok());
  clock_.Advance(seconds(41));
  fake_.Clear();
  ASSERT_TRUE(limited.Sync("n1").ok());
  int deletes = 0;
  for (const std::string& a : fake_.Actions())
    deletes += a.rfind("delete", 0) == 0;
  EXPECT_EQ(deletes, 1);  // burst 1 at 1 qps; the rest are re-queued
  EXPECT_EQ(limited.queue().NumWaiting(), 1);
}

TEST_F(NodeLifecycleTest, PodsOfADeletedNodeAreDeleted) {
  AddPod("web");
  nodes_.Delete("n1");
  // The API server still has the node (the cache is ahead): nothing.
  fake_.SetLive(NodesResource(), NewNode("n1"));
  controller_.MonitorOnce();
  EXPECT_EQ(controller_.QueueDepth(), 1);  // found through the pods
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // Gone for real.
  FakeApiWriter fake;
  NodeLifecycleController c({.api = &fake,
                             .nodes = &nodes_,
                             .leases = &leases_,
                             .pods = &pods_,
                             .clock = &clock_,
                             .metrics = &reg_});
  ASSERT_TRUE(c.Sync("n1").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre("delete pods default/web"));
}

TEST_F(NodeLifecycleTest, RecordsRegisteredNodeAndNodeNotReady) {
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  controller_.set_event_recorder(std::move(recorder));
  AddPod("web");
  ASSERT_TRUE(controller_.Sync("n1").ok());
  ASSERT_TRUE(controller_.Sync("n1").ok());  // registered once
  clock_.Advance(seconds(41));
  ASSERT_TRUE(controller_.Sync("n1").ok());
  EXPECT_THAT(
      events->Events(),
      ElementsAre("Normal RegisteredNode Node n1 event: Registered Node n1 in "
                  "Controller",
                  "Normal NodeNotReady Node n1 status is now: NodeNotReady",
                  "Warning NodeNotReady Node is not ready"));
}

}  // namespace
}  // namespace kplane::controllers
