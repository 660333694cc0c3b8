// NodeLifecycleController: notices nodes whose kubelet stopped renewing its
// Lease, marks them NotReady and taints them, and evicts their pods after
// their toleration (Kubernetes' pkg/controller/nodelifecycle plus its
// taint-eviction controller).
//
// Health: a node is healthy while its Lease (kube-node-lease/<node>)
// changed its spec.renewTime within `grace_period`, measured on this
// process's monotonic clock from when the change was *observed* (as
// Kubernetes does, so clock skew between machines does not matter). A node
// first seen, or without a Lease, gets a full grace period from then.
// Every `monitor_period` every node is re-checked (a healthy one in place:
// only a node whose state needs work is queued for Sync), so a stopped
// lease is noticed within grace + period. A Lease event records the renewal's time
// (ObserveLease) but syncs the node only when it is new here or marked
// unhealthy: a healthy node's renewal needs no Sync until the next period
// (kube's monitorNodeHealth), so renewals cost no workqueue round trip.
//
// Sync(node):
//   unhealthy: conditions Ready (added if missing), MemoryPressure,
//     DiskPressure, PIDPressure -> status Unknown, reason
//     "NodeStatusUnknown", "Kubelet stopped posting node status."; taint
//     node.kubernetes.io/unreachable:NoExecute (timeAdded now); the Ready
//     condition of its pods -> False.
//   healthy again: the unreachable taint is removed, and a Ready=Unknown
//     we set ourselves is put back to True ("KubeletReady") -- in
//     Kubernetes the kubelet rewrites it; kplane's simulated kubelets may
//     only renew the Lease.
//   NoExecute taints: a pod not tolerating one of them is deleted at once;
//     one that tolerates them all is deleted at timeAdded + the smallest
//     matching tolerationSeconds (none: never). The toleration the API
//     server's DefaultTolerationSeconds admission adds (Exists, NoExecute,
//     300 s, not-ready/unreachable), or no toleration at all for those two
//     taints, counts as `default_toleration_seconds` instead.
//     At most `eviction_qps` pods per second are deleted (token bucket).
//   node deleted: its pods are deleted at once with grace 0, once a live
//     GET confirms the node is gone (Kubernetes' PodGC); the monitor also
//     looks for nodes that only pods still name.
//
// Ownership: borrows writer and caches (pods must have kPodNodeIndex).
// Thread-safety: as Controller; Run also starts the monitor thread.
#ifndef KPLANE_CONTROLLERS_NODE_LIFECYCLE_CONTROLLER_H_
#define KPLANE_CONTROLLERS_NODE_LIFECYCLE_CONTROLLER_H_

#include <condition_variable>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

inline constexpr char kUnreachableTaint[] = "node.kubernetes.io/unreachable";
inline constexpr char kNotReadyTaint[] = "node.kubernetes.io/not-ready";
inline constexpr char kNodeLeaseNamespace[] = "kube-node-lease";

struct NodeLifecycleOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* nodes = nullptr;
  const informer::Indexer* leases = nullptr;  // kube-node-lease
  const informer::Indexer* pods = nullptr;
  Duration grace_period = seconds(40);
  Duration monitor_period = seconds(5);
  int64_t default_toleration_seconds = 300;
  double eviction_qps = 10;  // <= 0: unlimited
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class NodeLifecycleController : public Controller {
 public:
  explicit NodeLifecycleController(NodeLifecycleOptions options);
  ~NodeLifecycleController() override;

  void RegisterHandlers(informer::SharedIndexInformer* nodes,
                        informer::SharedIndexInformer* leases,
                        informer::SharedIndexInformer* pods);
  Status Sync(const std::string& key) override;
  void Run(int workers) override;
  void Stop() override;

  // What the monitor thread does each period: enqueues every node whose
  // Sync would do something (not registered yet, marked unhealthy, with a
  // NoExecute taint, or past its grace period) and every node that only
  // pods still name.
  void MonitorOnce();
  // What the informer's handler does with a Lease of kube-node-lease that
  // was added or updated: records when its renewTime was seen to change (the
  // start of the node's grace period, as Sync's own check would) and returns
  // whether the node needs a Sync now: it has not been synced yet, is not in
  // the node cache, or is marked unhealthy (Ready=Unknown set by this
  // controller, or the unreachable taint), so that a node renewing again is
  // made Ready at once.
  bool ObserveLease(const coordinationv1::Lease& lease);
  // Seconds a pod tolerates the node's NoExecute taints: 0 = evict now,
  // -1 = forever.
  int64_t TolerationSeconds(const corev1::Pod& pod,
                            const corev1::Node& node) const;

 private:
  // A Lease's spec.renewTime (unset: no lease or no renewal).
  struct RenewTime {
    bool set = false;
    int64_t seconds = 0;
    int32_t nanos = 0;
    bool operator==(const RenewTime&) const = default;
  };
  struct Probe {
    RenewTime renew;  // as last observed
    TimePoint observed;
  };
  static RenewTime RenewTimeOf(const coordinationv1::Lease& lease);
  // Whether the monitor's periodic check must sync the node: it is not
  // registered here yet, is marked unhealthy, carries a NoExecute taint
  // (evictions are due in time), or is no longer healthy. A healthy node
  // syncs to nothing, so it is skipped.
  bool NeedsSync(const std::string& name);
  bool Healthy(const std::string& node);
  // Pods bound to a node that no longer exists (confirmed by a live GET)
  // are deleted at once (Kubernetes' PodGC).
  Status DeleteOrphanedPods(const std::string& node);
  bool TakeEvictionToken(Duration* wait);
  void MonitorLoop();

  NodeLifecycleOptions options_;
  Mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Probe> probes_ GUARDED_BY(mu_);
  // Nodes a RegisteredNode event was recorded for (kube's knownNodeSet).
  std::set<std::string> registered_ GUARDED_BY(mu_);
  double tokens_ GUARDED_BY(mu_) = 0;
  TimePoint tokens_at_ GUARDED_BY(mu_) = {};
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread monitor_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_NODE_LIFECYCLE_CONTROLLER_H_
