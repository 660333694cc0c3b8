#include "controllers/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "informer/event_recorder.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

TEST(SelectNodeTest, Filters) {
  auto ready = NewNode("ready");
  auto not_ready = NewNode("not-ready", false);
  auto cordoned = NewNode("cordoned");
  cordoned->mutable_spec()->set_unschedulable(true);
  auto tainted = NewNode("tainted");
  corev1::Taint* t = tainted->mutable_spec()->add_taints();
  t->set_key("dedicated");
  t->set_value("db");
  t->set_effect("NoSchedule");
  auto small = NewNode("small", true, "500m", "1Gi", "2");
  auto ssd = NewNode("ssd");
  (*ssd->mutable_metadata()->mutable_labels())["disk"] = "ssd";

  struct Case {
    std::string name;
    std::vector<const corev1::Node*> nodes;
    std::function<void(corev1::Pod*)> pod;
    std::string want;  // node, or the error text
  };
  auto none = [](corev1::Pod*) {};
  std::vector<Case> cases = {
      {"ready node", {not_ready.get(), ready.get()}, none, "ready"},
      {"not ready",
       {not_ready.get()},
       none,
       "0/1 nodes are available: 1 node(s) were not ready."},
      {"cordoned",
       {cordoned.get()},
       none,
       "0/1 nodes are available: 1 node(s) were unschedulable."},
      {"untolerated taint",
       {tainted.get()},
       none,
       "0/1 nodes are available: 1 node(s) had untolerated taint(s)."},
      {"tolerated taint",
       {tainted.get()},
       [](corev1::Pod* p) {
         corev1::Toleration* tol = p->mutable_spec()->add_tolerations();
         tol->set_key("dedicated");
         tol->set_operator_("Equal");
         tol->set_value("db");
         tol->set_effect("NoSchedule");
       },
       "tainted"},
      {"node selector",
       {ready.get(), ssd.get()},
       [](corev1::Pod* p) {
         (*p->mutable_spec()->mutable_nodeselector())["disk"] = "ssd";
       },
       "ssd"},
      {"node selector unmatched",
       {ready.get()},
       [](corev1::Pod* p) {
         (*p->mutable_spec()->mutable_nodeselector())["disk"] = "ssd";
       },
       "0/1 nodes are available: 1 node(s) didn't match Pod's node "
       "affinity/selector."},
      {"cpu",
       {small.get()},
       [](corev1::Pod* p) { SetRequests(p, "1", ""); },
       "0/1 nodes are available: 1 Insufficient cpu."},
      {"memory",
       {small.get()},
       [](corev1::Pod* p) { SetRequests(p, "", "2Gi"); },
       "0/1 nodes are available: 1 Insufficient memory."},
      {"fits small",
       {small.get()},
       [](corev1::Pod* p) { SetRequests(p, "500m", "1Gi"); },
       "small"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = NewPod("default", "p");
    c.pod(pod.get());
    StatusOr<std::string> got = SelectNode(*pod, c.nodes, {});
    EXPECT_EQ(got.ok() ? *got : got.status().message(), c.want);
  }
}

TEST(SelectNodeTest, PodCountAndUsage) {
  auto small = NewNode("small", true, "1", "1Gi", "2");
  std::map<std::string, NodeUsage> usage;
  auto placed = NewPod("default", "x");
  SetRequests(placed.get(), "600m", "");
  usage["small"].Add(*placed);
  auto pod = NewPod("default", "p");
  SetRequests(pod.get(), "500m", "");
  EXPECT_EQ(SelectNode(*pod, {small.get()}, usage).status().message(),
            "0/1 nodes are available: 1 Insufficient cpu.");
  usage["small"] = {};
  usage["small"].pods = 2;
  SetRequests(pod.get(), "1m", "");
  EXPECT_EQ(SelectNode(*pod, {small.get()}, usage).status().message(),
            "0/1 nodes are available: 1 Too many pods.");
}

TEST(SelectNodeTest, ScoresSpreadOwnersAndPreferFreeNodes) {
  auto a = NewNode("a"), b = NewNode("b");
  auto rs = NewReplicaSet("default", "web", 3, {{"app", "web"}});
  auto mine = NewPod("default", "m");
  OwnedBy(mine->mutable_metadata(), "ReplicaSet", rs->metadata());
  std::map<std::string, NodeUsage> usage;
  usage["a"].Add(*mine);
  auto pod = NewPod("default", "p");
  OwnedBy(pod->mutable_metadata(), "ReplicaSet", rs->metadata());
  EXPECT_EQ(*SelectNode(*pod, {a.get(), b.get()}, usage), "b");  // spread
  // Without an owner, the less loaded node wins.
  auto loner = NewPod("default", "l");
  auto heavy = NewPod("default", "h");
  SetRequests(heavy.get(), "3", "6Gi");
  usage["b"].Add(*heavy);
  EXPECT_EQ(*SelectNode(*loner, {a.get(), b.get()}, usage), "a");
}

TEST(SchedulerTest, BindsAndSpreadsABurstThroughAssumedPods) {
  FakeClock clock;
  metrics::Registry reg;
  FakeApiWriter fake;
  informer::Indexer pods(
      {{std::string(informer::kNamespaceIndex), informer::NamespaceIndexFunc},
       {kPodNodeIndex, PodNodeIndexFunc}});
  informer::Indexer nodes;
  Scheduler s({.api = &fake,
               .pods = &pods,
               .nodes = &nodes,
               .clock = &clock,
               .metrics = &reg});
  nodes.Upsert(NewNode("a"));
  nodes.Upsert(NewNode("b"));
  nodes.Upsert(NewNode("c"));
  auto rs = NewReplicaSet("default", "web", 3, {{"app", "web"}});
  for (const char* n : {"p1", "p2", "p3"}) {
    auto p = NewPod("default", n);
    OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
    pods.Upsert(p);
  }
  // A bound pod and one for another scheduler are left alone.
  auto bound = NewPod("default", "bound");
  bound->mutable_spec()->set_nodename("a");
  pods.Upsert(bound);
  auto other = NewPod("default", "other");
  other->mutable_spec()->set_schedulername("my-scheduler");
  pods.Upsert(other);
  for (const char* k : {"default/p1", "default/p2", "default/p3",
                        "default/bound", "default/other"}) {
    ASSERT_TRUE(s.Sync(k).ok());
  }
  // The cache never showed p1..p3 bound: the assumed pods still spread them.
  EXPECT_THAT(fake.Actions(), ElementsAre("bind pods default/p1 -> b",
                                          "bind pods default/p2 -> c",
                                          "bind pods default/p3 -> a"));
  // A second sync of a bound-but-unseen pod does not bind twice.
  fake.Clear();
  ASSERT_TRUE(s.Sync("default/p1").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre());
}

TEST(SchedulerTest, UnschedulablePodIsRetriedLater) {
  FakeClock clock;
  metrics::Registry reg;
  FakeApiWriter fake;
  informer::Indexer pods(
      {{std::string(informer::kNamespaceIndex), informer::NamespaceIndexFunc},
       {kPodNodeIndex, PodNodeIndexFunc}});
  informer::Indexer nodes;
  Scheduler s({.api = &fake,
               .pods = &pods,
               .nodes = &nodes,
               .clock = &clock,
               .metrics = &reg});
  pods.Upsert(NewPod("default", "p"));
  ASSERT_TRUE(s.Sync("default/p").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre("update-status pods default/p"));
  EXPECT_EQ(s.queue().NumWaiting(), 1);
  auto marked = std::dynamic_pointer_cast<const corev1::Pod>(fake.Written()[0]);
  const corev1::PodCondition* c =
      FindPodCondition(marked->status(), "PodScheduled");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status(), "False");
  EXPECT_EQ(c->reason(), "Unschedulable");
  EXPECT_EQ(c->message(), "0/0 nodes are available.");
  // The same reason is not written again.
  pods.Upsert(marked);
  fake.Clear();
  ASSERT_TRUE(s.Sync("default/p").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre());
  // A failed bind is an error (retried with backoff) and forgets the pod.
  nodes.Upsert(NewNode("a"));
  fake.FailNext("bind", ConflictError("pod already bound"));
  EXPECT_FALSE(s.Sync("default/p").ok());
  ASSERT_TRUE(s.Sync("default/p").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre("bind pods default/p -> a",
                                          "bind pods default/p -> a"));
}

TEST(SchedulerTest, RecordsScheduledAndFailedScheduling) {
  FakeClock clock;
  metrics::Registry reg;
  FakeApiWriter fake;
  informer::Indexer pods(
      {{std::string(informer::kNamespaceIndex), informer::NamespaceIndexFunc},
       {kPodNodeIndex, PodNodeIndexFunc}});
  informer::Indexer nodes;
  Scheduler s({.api = &fake,
               .pods = &pods,
               .nodes = &nodes,
               .clock = &clock,
               .metrics = &reg});
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  s.set_event_recorder(std::move(recorder));
  pods.Upsert(NewPod("default", "p"));
  ASSERT_TRUE(s.Sync("default/p").ok());
  nodes.Upsert(NewNode("a"));
  ASSERT_TRUE(s.Sync("default/p").ok());
  EXPECT_THAT(events->Events(),
              ElementsAre("Warning FailedScheduling 0/0 nodes are available.",
                          "Normal Scheduled Successfully assigned default/p "
                          "to a"));
}

}  // namespace
}  // namespace kplane::controllers
