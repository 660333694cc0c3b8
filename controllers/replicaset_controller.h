// ReplicaSetController: keeps `spec.replicas` active pods for every
// ReplicaSet (Kubernetes' pkg/controller/replicaset).
//
// Sync("ns/name"):
//  1. Claim pods: pods whose controllerRef is this RS stay claimed while
//     they match the selector (else are released: the ref is removed);
//     orphans (no controllerRef) that match are adopted (a controllerRef
//     is added). Pods of other controllers are never touched.
//  2. If the expectations of earlier writes are satisfied (the cache has
//     seen our own creates/deletes) and the RS is not being deleted:
//     create the missing pods from the template (generateName "<rs>-",
//     controllerRef to the RS) or delete the surplus, least valuable
//     first (unscheduled < scheduled, Pending < Running, not ready <
//     ready, newest first), at most `burst_replicas` per sync.
//  3. Status: replicas (active pods), fullyLabeledReplicas (pods with all
//     the template's labels), readyReplicas, availableReplicas (ready for
//     minReadySeconds), observedGeneration; written only if changed. With
//     minReadySeconds, the key is re-queued when the next pod becomes
//     available.
//
// Ownership: borrows the writer and the caches (informer indexers), which
// must outlive it. Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_REPLICASET_CONTROLLER_H_
#define KPLANE_CONTROLLERS_REPLICASET_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "controllers/expectations.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

struct ReplicaSetControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* replicasets = nullptr;
  const informer::Indexer* pods = nullptr;
  int burst_replicas = 500;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class ReplicaSetController : public Controller {
 public:
  explicit ReplicaSetController(ReplicaSetControllerOptions options);

  // Registers the handlers that enqueue RS keys and count expectations.
  void RegisterHandlers(informer::SharedIndexInformer* replicasets,
                        informer::SharedIndexInformer* pods);

  Status Sync(const std::string& key) override;

  ControllerExpectations& expectations() { return expectations_; }
  // Handler bodies (public for unit tests, which have no informers).
  void OnPodAdd(const corev1::Pod& pod);
  void OnPodUpdate(const corev1::Pod& old_pod, const corev1::Pod& new_pod);
  void OnPodDelete(const corev1::Pod& pod);

 private:
  // Enqueues every RS in the pod's namespace whose selector matches it.
  void EnqueueMatching(const corev1::Pod& pod);
  std::string OwnerKey(const corev1::Pod& pod) const;

  ReplicaSetControllerOptions options_;
  ControllerExpectations expectations_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_REPLICASET_CONTROLLER_H_
