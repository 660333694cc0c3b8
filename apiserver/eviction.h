// Evictions: the pods/<name>/eviction subresource, POST
// /api/v1/namespaces/<ns>/pods/<name>/eviction with a policy/v1 Eviction,
// as kube-apiserver's pkg/registry/core/pod/storage/eviction.go: a delete
// that respects PodDisruptionBudgets.
//
//   1. The Eviction's name must be the URL's (400 "name in URL does not
//      match name in Eviction object"); the pod must exist (404).
//   2. A pod that is Pending, Succeeded, Failed or being deleted is
//      deleted at once (no budget is consulted). A Pending pod's delete
//      is guarded by a resourceVersion precondition from the pod read
//      (kube's shouldEnforceResourceVersion: a terminal or terminating
//      pod has no such guard); a conflict reads the pod again (20 tries)
//      unless the client set a resourceVersion precondition itself.
//   3. Otherwise the budgets of the namespace whose selector matches the
//      pod are read: more than one is a 500 ("This pod has more than one
//      PodDisruptionBudget, which the eviction subresource does not
//      support."); none deletes the pod.
//   4. A pod that is not Ready is deleted without touching the budget
//      when unhealthyPodEvictionPolicy is AlwaysAllow, or when the budget
//      is met (currentHealthy >= desiredHealthy > 0) — with the pod's
//      resourceVersion as precondition, a conflict answering 429.
//   5. Else the budget is checked and decremented: status not yet
//      observed (observedGeneration < generation) or disruptionsAllowed 0
//      answer 429 TooManyRequests "Cannot evict pod as it would violate
//      the pod's disruption budget." with a DisruptionBudget cause (and
//      Retry-After 10 for the unobserved budget, as kube); else
//      disruptionsAllowed-1 and disruptedPods[pod] = now are written
//      through /status with the budget's resourceVersion as precondition,
//      so that two evictions cannot both take the last disruption: a
//      conflict re-reads the budget and checks again (20 tries, then 504).
//   6. The pod gets the condition DisruptionTarget=True (reason
//      EvictionByEvictionAPI) and is deleted with the Eviction's
//      deleteOptions; the answer is 201 with a Success Status.
// dryRun (query or deleteOptions) checks everything and writes nothing.
//
//   Evictions evictions({.pods = pods_rest, .pdbs = pdbs_rest});
//   ApiResult<objects::metav1::Status> r =
//       evictions.Evict("default", "web-0", eviction, /*dry_run=*/false);
//
// Ownership: borrows the ResourceStores and the clock. Thread-safety: any
// thread; concurrent evictions are serialised by the stores' preconditions.
#ifndef KPLANE_APISERVER_EVICTION_H_
#define KPLANE_APISERVER_EVICTION_H_

#include <functional>
#include <string_view>

#include "apiserver/errors.h"
#include "apiserver/resource_store.h"
#include "base/clock.h"
#include "objects/discovery_types.h"

namespace kplane::apiserver {

inline constexpr char kEvictionDeniedMessage[] =
    "Cannot evict pod as it would violate the pod's disruption budget.";

struct EvictionOptions {
  ResourceStore* pods = nullptr;
  ResourceStore* pdbs = nullptr;
  Clock* clock = Clock::Real();
  // Tests only: called with the budget's name after it was read and before
  // its decremented status is written.
  std::function<void(std::string_view pdb)> before_budget_write;
  // Tests only: called with the pod's name after a pod that needs no
  // budget (step 2) was read and before it is marked and deleted.
  std::function<void(std::string_view pod)> before_pod_delete;
};

class Evictions {
 public:
  explicit Evictions(EvictionOptions options);
  ApiResult<objects::metav1::Status> Evict(
      std::string_view ns, std::string_view name,
      const objects::policyv1::Eviction& eviction, bool dry_run);

 private:
  // checkAndDecrement with its conflict retries.
  std::optional<ApiError> TakeDisruption(
      std::string_view ns, std::string_view pod,
      objects::policyv1::PodDisruptionBudget pdb, bool dry_run);
  // addConditionAndDeletePod.
  std::optional<ApiError> MarkAndDelete(std::string_view ns,
                                        std::string_view name,
                                        objects::metav1::DeleteOptions options,
                                        bool dry_run);

  EvictionOptions options_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_EVICTION_H_
