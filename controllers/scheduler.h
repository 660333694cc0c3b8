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
// Sampling, as kube-scheduler's percentageOfNodesToScore: in a large
// cluster a pod is placed on the best of the first feasible nodes found,
// not of all of them. The walk starts where the previous pod's stopped
// (so pods spread over the whole list) and stops once
// NumFeasibleNodesToFind nodes passed the filters; a node's usage is built
// only when the walk reaches it. Below 100 nodes every node is scored.
// With no feasible node every node has been filtered, so the
// "0/N nodes are available" reasons count all N.
// Each node's usage is kept between pods and rebuilt from the pod cache
// when an event names a pod on that node (kube-scheduler keeps its
// NodeInfo snapshot the same way), so a pod costs the nodes it visits,
// not the pods on them.
// Pods bound by this scheduler count on their node at once ("assumed")
// until the informer shows them bound, so a burst of 10 pods spreads.
// An unschedulable pod is retried every `retry_unschedulable` and whenever
// a node changes; its reason is logged ("0/3 nodes are available: ...").
//
// Ownership: borrows the writer and caches (the pods cache must have the
// kPodNodeIndex index). Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_SCHEDULER_H_
#define KPLANE_CONTROLLERS_SCHEDULER_H_

#include <functional>
#include <map>
#include <optional>
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

// How many feasible nodes to look for among `all_nodes` before scoring, as
// kube-scheduler's numFeasibleNodesToFind: every node below 100 nodes or
// at `percentage` >= 100; else `percentage` of them (0: adaptive, 50 % -
// 1 % per 125 nodes, at least 5 %), and never fewer than 100.
size_t NumFeasibleNodesToFind(size_t all_nodes, int percentage);

// Where a walk over the nodes starts and when it stops.
struct NodeSample {
  size_t start = 0;  // index into `nodes` of the first node visited
  size_t feasible_to_find = static_cast<size_t>(-1);  // stop after so many
};

struct Placement {
  std::string node;
  size_t evaluated = 0;  // nodes visited (filtered out or feasible)
};

// What is on `node`; asked only for nodes that pass the filters that do
// not need usage (ready, schedulable, taints, node selector).
using NodeUsageFn = std::function<NodeUsage(const corev1::Node& node)>;

// The best node for `pod` among the feasible nodes of the walk, or
// FailedPrecondition("0/N nodes are available: ...") naming why the nodes
// were filtered out (then every node was visited).
StatusOr<Placement> SelectNode(const corev1::Pod& pod,
                               const std::vector<const corev1::Node*>& nodes,
                               const NodeUsageFn& usage_of, NodeSample sample);

// Every node scored; usage from a map (a node not in it has nothing).
StatusOr<std::string> SelectNode(const corev1::Pod& pod,
                                 const std::vector<const corev1::Node*>& nodes,
                                 const std::map<std::string, NodeUsage>& usage);

struct SchedulerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* nodes = nullptr;
  std::string scheduler_name = "default-scheduler";
  Duration retry_unschedulable = seconds(5);
  // kube-scheduler's percentageOfNodesToScore (0: adaptive; 100: all).
  int percentage_of_nodes_to_score = 0;
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
  // What the pod cache (not counting assumed pods) has on `node`.
  NodeUsage CachedUsage(const std::string& node) EXCLUDES(mu_);
  // A pod on `node` was added, changed or deleted.
  void ForgetUsage(const std::string& node) EXCLUDES(mu_);

  SchedulerOptions options_;
  Mutex mu_;
  // Pods bound by us that the cache does not show bound yet: key -> node.
  std::map<std::string,
           std::pair<std::string, std::shared_ptr<const corev1::Pod>>>
      assumed_ GUARDED_BY(mu_);
  // The usage of each node a walk needed, from the pod cache: built when
  // first needed, dropped when an event names a pod on that node (a pod's
  // node never changes once set, so its events name every node it counted
  // on). A usage built while such an event arrived is not kept: `version`.
  struct NodeUsageEntry {
    uint64_t version = 0;
    std::optional<NodeUsage> usage;
  };
  std::map<std::string, NodeUsageEntry, std::less<>> usage_by_node_
      GUARDED_BY(mu_);
  // Where the next pod's walk over the node list starts.
  size_t next_start_node_ GUARDED_BY(mu_) = 0;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_SCHEDULER_H_
