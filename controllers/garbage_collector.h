// GarbageCollector: deletes objects whose owners are gone and carries out
// the "orphan" and "foregroundDeletion" finalizers the API server puts on
// owners deleted with propagationPolicy Orphan / Foreground (Kubernetes'
// pkg/controller/garbagecollector, for the kinds kplane's controllers own:
// Deployment -> ReplicaSet -> Pod).
//
// Keys are "<resource>/<namespace>/<name>" ("pods/default/web-x1").
// Sync(key):
//   as a dependent: every ownerReference is checked, in the owner's cache
//     and, when absent there, by a live GET (a cache can lag behind a
//     create). Owners gone (404, or a different uid): if none is left the
//     object is deleted (background propagation: its own dependents follow
//     in turn); otherwise the dangling references are removed. Owner
//     kinds other than Deployment, ReplicaSet and (with the jobs caches)
//     Job and CronJob are assumed alive.
//   as an owner being deleted:
//     "orphan": the ownerReferences to it are removed from its
//       dependents, then the finalizer;
//     "foregroundDeletion": its dependents are deleted; once the cache
//       shows none left, the finalizer is removed (the API server then
//       deletes the owner).
// Owner deletions enqueue the dependents (found through an index of owner
// uids), so background cascades need no periodic scan.
//
// Ownership: borrows writer and caches; the pods and replicasets caches
// must have the kOwnerUidIndex index. Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_GARBAGE_COLLECTOR_H_
#define KPLANE_CONTROLLERS_GARBAGE_COLLECTOR_H_

#include <string>
#include <vector>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

inline constexpr char kOwnerUidIndex[] = "owner-uid";
// Every owner uid of an object.
std::vector<std::string> OwnerUidIndexFunc(
    const google::protobuf::Message& obj);

struct GarbageCollectorOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* replicasets = nullptr;
  const informer::Indexer* deployments = nullptr;
  // batch/v1 Jobs (owners of pods, dependents of CronJobs) and CronJobs;
  // optional, both or neither (kOwnerUidIndex on jobs).
  const informer::Indexer* jobs = nullptr;
  const informer::Indexer* cronjobs = nullptr;
  Duration foreground_recheck = seconds(1);
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class GarbageCollector : public Controller {
 public:
  explicit GarbageCollector(GarbageCollectorOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* pods,
                        informer::SharedIndexInformer* replicasets,
                        informer::SharedIndexInformer* deployments);
  // Follows Jobs and CronJobs too (options.jobs/cronjobs: their caches).
  void RegisterJobHandlers(informer::SharedIndexInformer* jobs,
                           informer::SharedIndexInformer* cronjobs);
  Status Sync(const std::string& key) override;

  // "pods/default/web-x1" for a pod.
  static std::string KeyFor(const objects::ResourceInfo& resource,
                            const google::protobuf::Message& obj);
  // Enqueues the dependents of an owner (after its deletion).
  void EnqueueDependents(const google::protobuf::Message& owner);

 private:
  void Watch(informer::SharedIndexInformer* inf,
             const objects::ResourceInfo& resource);
  const informer::Indexer* CacheFor(const std::string& resource) const;
  const objects::ResourceInfo* ResourceFor(const std::string& resource) const;
  // The dependents' (resource, cache) of an owner resource.
  std::vector<std::pair<const objects::ResourceInfo*, const informer::Indexer*>>
  DependentCaches(const std::string& owner_resource) const;
  Status SyncOwner(const objects::ResourceInfo& resource,
                   const google::protobuf::Message& owner);
  Status SyncDependent(const objects::ResourceInfo& resource,
                       const google::protobuf::Message& obj);

  GarbageCollectorOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_GARBAGE_COLLECTOR_H_
