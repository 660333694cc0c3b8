// Test support (not part of the library): a Scheduler over fresh caches and
// a fake writer, for scheduler_test.cc and scheduler_bench.cc.
//
//   SchedulerRig rig(/*percentage_of_nodes_to_score=*/100);
//   rig.nodes.Upsert(NewNode("a"));
//   rig.pods.Upsert(NewPod("default", "p"));
//   rig.s.Sync("default/p");   // rig.fake.Actions(): "bind pods default/p ->
//   a"
//
// The pods cache has the namespace and node indexes the scheduler reads;
// what the informer would do (a bind seen, a pod deleted) is the caller's:
// update `pods` and call s.OnPodEvent. Thread-safety: test-only, single
// thread. Errors: n/a.
#ifndef KPLANE_CONTROLLERS_SCHEDULER_TEST_RIG_H_
#define KPLANE_CONTROLLERS_SCHEDULER_TEST_RIG_H_

#include <string>

#include "base/clock.h"
#include "base/metrics.h"
#include "controllers/api_writer.h"
#include "controllers/scheduler.h"
#include "controllers/util.h"
#include "informer/indexer.h"

namespace kplane::controllers::testing {

struct SchedulerRig {
  // 0: kube-scheduler's adaptive sample of nodes.
  explicit SchedulerRig(int percentage_of_nodes_to_score = 0)
      : s({.api = &fake,
           .pods = &pods,
           .nodes = &nodes,
           .percentage_of_nodes_to_score = percentage_of_nodes_to_score,
           .clock = &clock,
           .metrics = &reg}) {}
  FakeClock clock;
  metrics::Registry reg;
  FakeApiWriter fake;
  informer::Indexer pods{
      {{std::string(informer::kNamespaceIndex), informer::NamespaceIndexFunc},
       {kPodNodeIndex, PodNodeIndexFunc}}};
  informer::Indexer nodes;
  Scheduler s;  // last: built from the members above
};

}  // namespace kplane::controllers::testing

#endif  // KPLANE_CONTROLLERS_SCHEDULER_TEST_RIG_H_
