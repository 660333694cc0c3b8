// PodGCController: deletes the pods whose graceful deletion ran out with
// nobody left to finish it (kplane's pod reaper; docs/controllers.md).
//
// Deleting a pod bound to a node is graceful: the API server sets
// deletionTimestamp = now + grace and deletionGracePeriodSeconds, and the
// node's kubelet removes the pod (DELETE with grace 0) once its containers
// have stopped. A pod whose kubelet is gone (a stopped simulated node, or no
// kubelet at all) would stay Terminating for ever; once its
// deletionTimestamp has passed, this controller deletes it with grace 0 and
// a uid precondition. Kubernetes' pod GC (pkg/controller/podgc) force-
// deletes terminating pods only on nodes tainted
// node.kubernetes.io/out-of-service, and marks them Failed first; kplane
// force-deletes every pod whose grace period is over, as is.
//
// Keys are pod keys ("default/web-1"). An event of a pod with a
// deletionTimestamp and a positive grace period enqueues the key after the
// time left; Sync(key) deletes the pod when its time is up, else enqueues
// it again for the rest. A pod deleted in the meantime (404) or replaced by
// one of the same name (409: another uid) is left alone.
//
// Ownership: borrows the writer and the pods cache. Thread-safety: as
// Controller.
#ifndef KPLANE_CONTROLLERS_POD_GC_CONTROLLER_H_
#define KPLANE_CONTROLLERS_POD_GC_CONTROLLER_H_

#include <optional>
#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

struct PodGCControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* pods = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class PodGCController : public Controller {
 public:
  explicit PodGCController(PodGCControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* pods);
  Status Sync(const std::string& key) override;

 private:
  // How long until the pod's grace period is over (<= 0: over); nullopt
  // when it is not being deleted gracefully.
  std::optional<Duration> GraceLeft(const corev1::Pod& pod) const;

  PodGCControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_POD_GC_CONTROLLER_H_
