#include "controllers/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "controllers/scheduler_test_rig.h"
#include "controllers/test_objects.h"
#include "informer/event_recorder.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
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

// Requests near int64's end neither wrap a pod's sum negative (so that it
// fits anywhere) nor a node's usage (so that every later pod fits there).
TEST(SelectNodeTest, HugeRequestsDoNotWrap) {
  auto node = NewNode("n", true, "4", "8Gi", "110");
  std::map<std::string, NodeUsage> usage;
  auto twice = NewPod("default", "twice");
  SetRequests(twice.get(), "", "4Ei");
  *twice->mutable_spec()->add_containers() = twice->spec().containers(0);
  twice->mutable_spec()->mutable_containers(1)->set_name("second");
  EXPECT_EQ(SelectNode(*twice, {node.get()}, usage).status().message(),
            "0/1 nodes are available: 1 Insufficient memory.");
  auto placed = NewPod("default", "placed");
  SetRequests(placed.get(), "1", "1Gi");
  usage["n"].Add(*placed);
  auto huge = NewPod("default", "huge");
  SetRequests(huge.get(), "9223372036854775807", "8Ei");
  EXPECT_EQ(SelectNode(*huge, {node.get()}, usage).status().message(),
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient "
            "memory.");
  // Usage saturates; a small pod still does not fit a node so used.
  usage["n"].Add(*twice);
  usage["n"].Add(*huge);
  EXPECT_EQ(usage["n"].memory, INT64_MAX);
  auto small = NewPod("default", "small");
  SetRequests(small.get(), "1m", "1Ki");
  EXPECT_EQ(SelectNode(*small, {node.get()}, usage).status().message(),
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient "
            "memory.");
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

TEST(SelectNodeTest, NumFeasibleNodesToFindAsKubeScheduler) {
  // kube-scheduler's numFeasibleNodesToFind: every node below 100, else an
  // adaptive 50 % - 1 % per 125 nodes (at least 5 %), never under 100.
  EXPECT_EQ(NumFeasibleNodesToFind(0, 0), 0u);
  EXPECT_EQ(NumFeasibleNodesToFind(99, 0), 99u);
  EXPECT_EQ(NumFeasibleNodesToFind(100, 0), 100u);   // 50 % is 50: 100
  EXPECT_EQ(NumFeasibleNodesToFind(1000, 0), 420u);  // 42 %
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 0), 500u);  // 10 %
  EXPECT_EQ(NumFeasibleNodesToFind(6000, 0), 300u);  // 2 % -> 5 %
  EXPECT_EQ(NumFeasibleNodesToFind(50000, 0), 2500u);
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 30), 1500u);
  EXPECT_EQ(NumFeasibleNodesToFind(500, 10), 100u);  // at least 100
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 100), 5000u);
}

// 300 nodes, `free` without pods, every other one with `busy` pods.
struct Fleet {
  std::vector<std::shared_ptr<corev1::Node>> owned;
  std::vector<const corev1::Node*> nodes;
  explicit Fleet(int n) {
    for (int i = 0; i < n; ++i) {
      char name[16];
      snprintf(name, sizeof name, "n%03d", i);
      owned.push_back(NewNode(name));
      nodes.push_back(owned.back().get());
    }
  }
};

TEST(SelectNodeTest, SamplesFromTheStartAndStopsAtEnoughFeasibleNodes) {
  Fleet fleet(300);
  for (int i = 250; i < 260; ++i) {  // filtered out: the walk goes past
    fleet.owned[i]->mutable_status()->clear_conditions();
  }
  std::set<std::string> free = {"n120", "n270"};
  std::vector<std::string> asked;
  auto usage_of = [&](const corev1::Node& n) {
    asked.push_back(n.metadata().name());
    NodeUsage u;
    if (free.count(n.metadata().name()) == 0) {
      u.cpu_milli = 1000;
      u.pods = 3;
    }
    return u;
  };
  auto pod = NewPod("default", "p");
  auto got = SelectNode(*pod, fleet.nodes, usage_of,
                        {.start = 250, .feasible_to_find = 100});
  ASSERT_TRUE(got.ok()) << got.status();
  // n120 is free too, but outside the walk: 250..299, then 0..59.
  EXPECT_EQ(got->node, "n270");
  EXPECT_EQ(got->evaluated, 110u);
  // Usage is built only for nodes that passed the cheap filters.
  EXPECT_EQ(asked.size(), 100u);
  EXPECT_EQ(asked.front(), "n260");
  EXPECT_EQ(asked.back(), "n059");
  // Every node scored: n120 ties n270, and wins by name.
  asked.clear();
  got = SelectNode(*pod, fleet.nodes, usage_of, {.start = 250});
  EXPECT_EQ(got->node, "n120");
  EXPECT_EQ(got->evaluated, 300u);
}

TEST(SelectNodeTest, NoFeasibleNodeVisitsAndCountsEveryNode) {
  Fleet fleet(300);
  for (auto& n : fleet.owned) n->mutable_spec()->set_unschedulable(true);
  fleet.owned[7]->mutable_spec()->set_unschedulable(false);
  fleet.owned[7]->mutable_status()->clear_conditions();
  auto pod = NewPod("default", "p");
  auto got = SelectNode(*pod, fleet.nodes,
                        [](const corev1::Node&) { return NodeUsage{}; },
                        {.start = 123, .feasible_to_find = 100});
  EXPECT_EQ(got.status().message(),
            "0/300 nodes are available: 1 node(s) were not ready, 299 "
            "node(s) were unschedulable.");
}

TEST(SchedulerTest, EachPodsWalkStartsWhereThePreviousStopped) {
  for (int percentage : {10, 100}) {
    SCOPED_TRACE(percentage);
    SchedulerRig rig(percentage);
    auto& [clock, reg, fake, pods, nodes, s] = rig;
    Fleet fleet(300);
    for (auto& n : fleet.owned) nodes.Upsert(n);
    for (const char* n : {"p1", "p2", "p3", "p4"}) {
      pods.Upsert(NewPod("default", n));
      ASSERT_TRUE(s.Sync(std::string("default/") + n).ok());
    }
    if (percentage == 10) {
      // 10 % of 300 is under 100: 100 feasible nodes per pod, the walks
      // 0-99, 100-199, 200-299, 0-99 (where n000 holds p1 now).
      EXPECT_THAT(fake.Actions(), ElementsAre("bind pods default/p1 -> n000",
                                              "bind pods default/p2 -> n100",
                                              "bind pods default/p3 -> n200",
                                              "bind pods default/p4 -> n001"));
    } else {
      EXPECT_THAT(fake.Actions(), ElementsAre("bind pods default/p1 -> n000",
                                              "bind pods default/p2 -> n001",
                                              "bind pods default/p3 -> n002",
                                              "bind pods default/p4 -> n003"));
    }
  }
}

TEST(SchedulerTest, KeptUsageFollowsPodEventsOnTheNode) {
  SchedulerRig rig;
  auto& [clock, reg, fake, pods, nodes, s] = rig;
  nodes.Upsert(NewNode("a", true, "4", "8Gi", "2"));  // room for 2 pods
  auto first = NewPod("default", "first");
  first->mutable_spec()->set_nodename("a");
  pods.Upsert(first);
  // What the informer does once the scheduler's bind is seen.
  // (Through `rig`: clang 14 cannot capture structured bindings.)
  auto seen_bound = [&rig](const std::string& name) {
    auto p = std::make_shared<corev1::Pod>(
        static_cast<const corev1::Pod&>(*rig.pods.Get("default/" + name)));
    p->mutable_spec()->set_nodename("a");
    rig.pods.Upsert(p);
    rig.s.OnPodEvent(*p, false);
  };
  pods.Upsert(NewPod("default", "p1"));
  ASSERT_TRUE(s.Sync("default/p1").ok());
  seen_bound("p1");
  pods.Upsert(NewPod("default", "p2"));
  ASSERT_TRUE(s.Sync("default/p2").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre("bind pods default/p1 -> a",
                                          "update-status pods default/p2"));
  ASSERT_EQ(fake.Written().size(), 1u);
  EXPECT_THAT(fake.Written()[0]->DebugString(), HasSubstr("Too many pods"));
  // A pod on the node goes away: its room is free again.
  fake.Clear();
  ObjectPtr gone = pods.Delete("default/first");
  s.OnPodEvent(static_cast<const corev1::Pod&>(*gone), true);
  ASSERT_TRUE(s.Sync("default/p2").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre("bind pods default/p2 -> a"));
}

TEST(SchedulerTest, BindsAndSpreadsABurstThroughAssumedPods) {
  SchedulerRig rig;
  auto& [clock, reg, fake, pods, nodes, s] = rig;
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
  SchedulerRig rig;
  auto& [clock, reg, fake, pods, nodes, s] = rig;
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
  SchedulerRig rig;
  auto& [clock, reg, fake, pods, nodes, s] = rig;
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
