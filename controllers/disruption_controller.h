// DisruptionController: the status of every policy/v1 PodDisruptionBudget
// (Kubernetes' pkg/controller/disruption), which the eviction subresource
// reads: how many of the budget's pods may be evicted now.
//
// Keys are budgets' "namespace/name". A budget event enqueues itself; a
// pod event enqueues the budgets of its namespace whose selector matches
// it (old or new labels). Sync(key):
//   1. pods: the namespace's pods the selector matches (in policy/v1 an
//      empty selector matches all of them, a missing one none);
//   2. expectedPods and desiredHealthy, as kube's getExpectedPodCount:
//      - maxUnavailable: expected = the sum of the scales of the pods'
//        controllers (Deployment spec.replicas for a ReplicaSet it owns,
//        else the ReplicaSet's; a StatefulSet's), each counted once; pods
//        without a controller are left out; desired = expected -
//        maxUnavailable (percentages rounded up), at least 0;
//      - minAvailable integer: expected = the number of pods, desired =
//        minAvailable;
//      - minAvailable percentage: expected from the controllers as above,
//        desired = that percentage of it, rounded up;
//      a pod whose controller is of another kind (a Job, a DaemonSet) or
//      is missing fails the sync: disruptionsAllowed 0 and condition
//      DisruptionAllowed=False reason SyncFailed with the error (kube's
//      failSafe);
//   3. disruptedPods: the entries the eviction subresource added for pods
//      not yet being deleted, kept for 2 minutes (kube's DeletionTimeout),
//      then dropped; the budget is re-synced when the next one expires;
//   4. currentHealthy: pods Ready, not being deleted and not in
//      disruptedPods; disruptionsAllowed = currentHealthy - desiredHealthy
//      (0 when negative or when no pods are expected);
//   5. the status (with observedGeneration and the condition
//      DisruptionAllowed: True/SufficientPods or False/InsufficientPods)
//      is written through /status when it differs.
//
//   DisruptionController c({.api = writer, .pdbs = &pdb_cache,
//                           .pods = &pod_cache, .replicasets = &rs_cache,
//                           .deployments = &deploy_cache,
//                           .statefulsets = &sts_cache, .clock = &clock});
//   c.RegisterHandlers(pdbs_informer, pods_informer);
//
// Not done: stale DisruptionTarget pod conditions (kube's second queue),
// the NoPods/UnmanagedPods events, scale through the generic /scale of
// other kinds. Ownership: borrows the writer and the caches.
// Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_DISRUPTION_CONTROLLER_H_
#define KPLANE_CONTROLLERS_DISRUPTION_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/discovery_types.h"

namespace kplane::controllers {

namespace policyv1 = objects::policyv1;

// kube's DeletionTimeout: how long an eviction's disruptedPods entry is
// honoured before the pod must be gone.
inline constexpr Duration kDisruptedPodTimeout = std::chrono::minutes(2);

const objects::ResourceInfo& PodDisruptionBudgetsResource();

// The budget's selector matches the pod (policy/v1: empty matches all,
// missing matches none). Shared with the eviction subresource's rules.
bool BudgetSelectsPod(const policyv1::PodDisruptionBudget& pdb,
                      const corev1::Pod& pod);

struct DisruptionControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* pdbs = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* replicasets = nullptr;
  const informer::Indexer* deployments = nullptr;
  const informer::Indexer* statefulsets = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class DisruptionController : public Controller {
 public:
  explicit DisruptionController(DisruptionControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* pdbs,
                        informer::SharedIndexInformer* pods);
  Status Sync(const std::string& key) override;

 private:
  // expectedPods from the pods' controllers' scales.
  StatusOr<int32_t> ExpectedScale(const std::vector<const corev1::Pod*>& pods);
  void EnqueueBudgetsOf(const corev1::Pod& pod);

  DisruptionControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_DISRUPTION_CONTROLLER_H_
