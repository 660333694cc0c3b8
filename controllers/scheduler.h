// Scheduler: binds pending pods (no spec.nodeName, schedulerName empty or
// "default-scheduler") to nodes through the pods/binding subresource. A
// deliberately small kube-scheduler.
//
// Filters (a node must pass all):
//   NodeReady       condition Ready=True
//   Unschedulable   spec.unschedulable is false
//   TaintToleration every NoSchedule / NoExecute taint is tolerated
//   NodeSelector    spec.nodeSelector labels all on the node
//   Resources       cpu / memory requests (sum over containers) fit in
//                   allocatable minus the requests of pods on the node;
//                   the pod count fits allocatable "pods"
//                   (a resource the node does not report is not limited)
// Score (higher wins; ties to the node with fewer pods, then by name):
//   least allocated  100 * mean free fraction of cpu and memory after
//                    placing the pod
//   spread           2 * 100 * (max - mine) / max, where mine is the number
//                    of pods of the same controller (controllerRef uid)
//                    already on the node and max the largest such count
// Pods bound by this scheduler count on their node at once ("assumed")
// until the informer shows them bound, so a burst of 10 pods spreads.
// An unschedulable pod is retried every `retry_unschedulable` and whenever
// a node changes; its reason is logged ("0/3 nodes are available: ...").
//
// Ownership: borrows the writer and caches (the pods cache must have the
// kPodNodeIndex index). Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_SCHEDULER_H_
#define KPLANE_CONTROLLERS_SCHEDULER_H_

#include <map>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

// What is already placed on one node.
struct NodeUsage {
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t pods = 0;
  std::map<std::string, int> by_owner;  // controllerRef uid -> pods
  void Add(const corev1::Pod& pod);
};

// The node for `pod`, or FailedPrecondition("0/N nodes are available: ...")
// naming why the nodes were filtered out.
StatusOr<std::string> SelectNode(const corev1::Pod& pod,
                                 const std::vector<const corev1::Node*>& nodes,
                                 const std::map<std::string, NodeUsage>& usage);

struct SchedulerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* nodes = nullptr;
  std::string scheduler_name = "default-scheduler";
  Duration retry_unschedulable = seconds(5);
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class Scheduler : public Controller {
 public:
  explicit Scheduler(SchedulerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* pods,
                        informer::SharedIndexInformer* nodes);
  Status Sync(const std::string& key) override;

  bool Responsible(const corev1::Pod& pod) const;
  void OnPodEvent(const corev1::Pod& pod, bool deleted);
  void EnqueuePending();

 private:
  SchedulerOptions options_;
  Mutex mu_;
  // Pods bound by us that the cache does not show bound yet: key -> node.
  std::map<std::string,
           std::pair<std::string, std::shared_ptr<const corev1::Pod>>>
      assumed_ GUARDED_BY(mu_);
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_SCHEDULER_H_
