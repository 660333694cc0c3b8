// Cost of placing one pod (Scheduler::Sync: listing nodes, filtering,
// building the usage of the nodes it visits, scoring, the bind call into a
// fake writer) at fleet sizes, with kube-scheduler's adaptive sample
// (percentage 0) against scoring every node (100). docs/controllers.md.
//
//   build/controllers/scheduler_bench --benchmark_filter=Sync
#include <benchmark/benchmark.h>

#include <cstdio>

#include "controllers/scheduler.h"
#include "controllers/scheduler_test_rig.h"
#include "controllers/test_objects.h"

namespace kplane::controllers {
namespace {

using namespace testing;  // NOLINT: test builders

// args: nodes, pods already bound, percentage of nodes to score.
void BM_SchedulerSync(benchmark::State& state) {
  const int num_nodes = state.range(0);
  const int num_pods = state.range(1);
  SchedulerRig rig(static_cast<int>(state.range(2)));
  auto& [clock, reg, fake, pods, nodes, s] = rig;
  char name[32];
  for (int i = 0; i < num_nodes; ++i) {
    snprintf(name, sizeof name, "node-%05d", i);
    nodes.Upsert(NewNode(name));
  }
  auto rs = NewReplicaSet("default", "web", num_pods, {{"app", "web"}});
  auto new_pod = [&](int i) {
    snprintf(name, sizeof name, "web-%06d", i);
    auto p = NewPod("default", name);
    OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
    SetRequests(p.get(), "100m", "128Mi");
    return p;
  };
  for (int i = 0; i < num_pods; ++i) {
    auto p = new_pod(i);
    snprintf(name, sizeof name, "node-%05d", i % num_nodes);
    p->mutable_spec()->set_nodename(name);
    pods.Upsert(p);
  }
  int next = num_pods;
  for (auto _ : state) {
    auto p = new_pod(next++);
    pods.Upsert(p);
    Status st = s.Sync(informer::ObjectKey(*p));
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    // What the informer would show: the pod bound (the scheduler forgets
    // its assumption), so the fleet's usage grows as in a real run.
    state.PauseTiming();
    std::string action = fake.Actions().back();
    auto bound = std::make_shared<corev1::Pod>(*p);
    bound->mutable_spec()->set_nodename(action.substr(action.rfind(' ') + 1));
    pods.Upsert(bound);
    s.OnPodEvent(*bound, false);
    fake.Clear();
    state.ResumeTiming();
  }
  state.counters["nodes"] = num_nodes;
}
BENCHMARK(BM_SchedulerSync)
    ->ArgNames({"nodes", "pods", "pct"})
    ->Args({1000, 2000, 0})
    ->Args({1000, 2000, 100})
    ->Args({5000, 2000, 0})
    ->Args({5000, 2000, 100})
    ->Args({5000, 10000, 0})
    ->Args({5000, 10000, 100})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kplane::controllers

BENCHMARK_MAIN();
