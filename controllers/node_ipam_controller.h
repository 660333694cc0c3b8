// NodeIpamController: gives every Node a pod CIDR from the cluster CIDR, as
// kube-controller-manager's node IPAM controller with
// --allocate-node-cidrs and the RangeAllocator (pkg/controller/nodeipam/
// ipam/range_allocator.go); docs/controllers.md, "node IPAM".
//
//   ASSIGN_OR_RETURN(auto c, NodeIpamController::New(
//       {.api = api, .nodes = &nodes->GetIndexer(),
//        .cluster_cidr = "10.0.0.0/16", .node_cidr_mask_size = 24}));
//   c->RegisterHandlers(nodes);
//   factory.Start(); factory.WaitForCacheSync();
//   c->Run(2);   // occupies the CIDRs nodes already hold, then allocates
//
// Keys are node names. Sync(name):
//   - the node is gone: its CIDR goes back to the pool;
//   - the node has spec.podCIDRs: they are marked in use (a restarted
//     manager learns every assignment this way before it allocates: Run()
//     occupies the whole cache first);
//   - else: the next free subnet is written to spec.podCIDR and
//     spec.podCIDRs with an update (resourceVersion precondition; a conflict
//     retries). When the cluster CIDR is exhausted, the node gets a Normal
//     event CIDRNotAvailable ("Node n status is now: CIDRNotAvailable", as
//     kube's RecordNodeStatusChange) and the key is retried with backoff
//     (ResourceExhausted), so a node deleted elsewhere frees a CIDR for it.
//     A failed update records CIDRAssignmentFailed; it releases the CIDR
//     only when refused (4xx), not after a timeout, transport error or 5xx,
//     which the server may have applied: the retry sends the same CIDR.
//
// Metrics: cidrset_usage_cidrs{clusterCIDR} (fraction in use),
// cidrset_cidrs_allocations_total{clusterCIDR},
// cidrset_cidrs_releases_total{clusterCIDR}, as kube's cidrset.
//
// Ownership: borrows the writer and the nodes cache. Thread-safety: as
// Controller (the pool is under a mutex). Errors: New: InvalidArgument from
// CidrSet::New for a bad cluster CIDR / mask size.
#ifndef KPLANE_CONTROLLERS_NODE_IPAM_CONTROLLER_H_
#define KPLANE_CONTROLLERS_NODE_IPAM_CONTROLLER_H_

#include <map>
#include <memory>
#include <string>

#include "base/mutex.h"
#include "controllers/api_writer.h"
#include "controllers/cidr_set.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

struct NodeIpamControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* nodes = nullptr;
  std::string cluster_cidr;      // --cluster-cidr
  int node_cidr_mask_size = 24;  // --node-cidr-mask-size
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class NodeIpamController : public Controller {
 public:
  static StatusOr<std::unique_ptr<NodeIpamController>> New(
      NodeIpamControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* nodes);
  // Occupies the CIDRs of every node in the cache, then starts the workers:
  // at least 30, kube's cidrUpdateWorkers (one update round trip each).
  void Run(int workers) override;
  Status Sync(const std::string& key) override;

  int64_t used() const;

 private:
  NodeIpamController(NodeIpamControllerOptions options, CidrSet set);
  // Marks node `name`'s `cidrs` in use and remembers them.
  void OccupyLocked(
      const std::string& name,
      const google::protobuf::RepeatedPtrField<std::string>& cidrs)
      REQUIRES(mu_);
  void ReleaseLocked(const std::string& name) REQUIRES(mu_);
  void UpdateUsage() REQUIRES(mu_);

  NodeIpamControllerOptions options_;
  mutable Mutex mu_;
  CidrSet set_ GUARDED_BY(mu_);
  // Node name -> the CIDRs it holds (as far as this controller knows).
  std::map<std::string, std::vector<std::string>> assigned_ GUARDED_BY(mu_);
  metrics::Gauge* usage_;
  metrics::Counter* allocations_;
  metrics::Counter* releases_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_NODE_IPAM_CONTROLLER_H_
