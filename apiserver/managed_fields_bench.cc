// Cost of managedFields on a node's Lease renewal (the fleet's most common
// write): the fast path (TrackOwnedValueChanges: the kubelet changes only
// renewTime, which it owns) and, for scale, the general path through JSON.
//
//   build/apiserver/apiserver_managed_fields_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "apiserver/node_lease_testing.h"
#include "apiserver/patching.h"
#include "objects/scheme.h"
#include "objects/time.h"
#include "objects/types.h"

namespace kplane::apiserver {
namespace {

using objects::coordinationv1::Lease;
using testing::NodeLease;

const objects::KindInfo& LeaseKind() {
  return *objects::Scheme::Default().KindFor(Lease::descriptor());
}

// The Lease as stored after the kubelet created it.
Lease Stored() {
  Lease l = NodeLease(1000);
  if (!TrackManagedFields(nullptr, &l, LeaseKind(), "kubelet",
                          "2026-12-04T01:00:00Z", {})
           .ok()) {
    std::abort();
  }
  return l;
}

void BM_LeaseRenewalFastPath(benchmark::State& state) {
  const Lease stored = Stored();
  const Lease renewed = NodeLease(1010);
  for (auto _ : state) {
    Lease obj = renewed;
    if (!TrackOwnedValueChanges(&stored, &obj, LeaseKind(), "kubelet",
                                "2026-12-04T01:00:10Z", {})) {
      state.SkipWithError("the fast path did not answer");
      break;
    }
    benchmark::DoNotOptimize(obj);
  }
}
BENCHMARK(BM_LeaseRenewalFastPath);

// The fleet's case: every node's Lease is owned by its own Node, so each
// kubelet entry's fieldsV1 names a different owner uid (k:{"uid":…}).
// Renewals go round state.range(0) such Leases.
void BM_LeaseRenewalFastPathDistinctOwners(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<Lease> stored;
  std::vector<Lease> renewed;
  for (int i = 0; i < n; ++i) {
    Lease l = NodeLease(1000);
    l.mutable_metadata()->mutable_ownerreferences(0)->set_uid(
        "node-uid-" + std::to_string(i));
    Lease r = l;
    objects::SetMicroTime(r.mutable_spec()->mutable_renewtime(), 1010, 0);
    if (!TrackManagedFields(nullptr, &l, LeaseKind(), "kubelet",
                            "2026-12-04T01:00:00Z", {})
             .ok()) {
      std::abort();
    }
    stored.push_back(std::move(l));
    renewed.push_back(std::move(r));
  }
  size_t i = 0;
  for (auto _ : state) {
    Lease obj = renewed[i];
    if (!TrackOwnedValueChanges(&stored[i], &obj, LeaseKind(), "kubelet",
                                "2026-12-04T01:00:10Z", {})) {
      state.SkipWithError("the fast path did not answer");
      break;
    }
    benchmark::DoNotOptimize(obj);
    if (++i == stored.size()) i = 0;
  }
}
BENCHMARK(BM_LeaseRenewalFastPathDistinctOwners)->Arg(1000)->Arg(50000);

void BM_LeaseRenewalThroughJson(benchmark::State& state) {
  const Lease stored = Stored();
  const Lease renewed = NodeLease(1010);
  for (auto _ : state) {
    Lease obj = renewed;
    benchmark::DoNotOptimize(
        TrackManagedFieldsThroughJson(&stored, &obj, LeaseKind(), "kubelet",
                                      "2026-12-04T01:00:10Z", {})
            .ok());
  }
}
BENCHMARK(BM_LeaseRenewalThroughJson);

}  // namespace
}  // namespace kplane::apiserver

BENCHMARK_MAIN();
