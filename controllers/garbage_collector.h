// GarbageCollector: deletes objects whose owners are gone and carries out
// the "orphan" and "foregroundDeletion" finalizers the API server puts on
// owners deleted with propagationPolicy Orphan / Foreground (Kubernetes'
// pkg/controller/garbagecollector), for every resource it follows: the
// typed caches it is given (Deployment, ReplicaSet, Pod, and with the
// jobs caches Job and CronJob), and the resources added at run time with
// AddResource() -- GcResourceMonitor (gc_resource_monitor.h) adds every
// other resource discovery lists as deletable, listable and watchable,
// custom resources included, and removes them when they go away.
//
// Keys are "<resource>/<namespace>/<name>" ("pods/default/web-x1") for the
// typed caches and "<resource>.<group>/<namespace>/<name>"
// ("widgets.example.com/default/w1", "configmaps/default/c") for the
// others; cluster-scoped objects have no namespace part.
// Sync(key) follows Kubernetes' attemptToDeleteItem:
//   an object being deleted is never collected itself (a one-way trip);
//     only the GC finalizers on it are carried out (below).
//   as a dependent: every ownerReference is resolved (apiVersion's group +
//     kind -> a followed resource; the version does not matter, the uid
//     does) and checked in the owner's cache and, when absent there, by a
//     live GET (a cache can lag behind a create). Each is then
//       solid: the owner exists and is not deleting its dependents;
//       waiting: the owner is being deleted with "foregroundDeletion";
//       dangling: the owner is gone (404, or a different uid).
//     With a solid owner the object is kept, its dangling and waiting
//     references removed (a waiting owner must not wait for it). Without
//     one: if an owner is waiting and the object has dependents of its
//     own, it is deleted with Foreground propagation (so the owner waits
//     for the whole subtree), after its own blocking references are made
//     non-blocking when one of those dependents is itself deleting its
//     dependents (a cycle of blocking references would otherwise wait
//     forever; kube's heuristic, false positives included); else it is
//     deleted with the policy its own finalizers ask for (orphan ->
//     Orphan, foregroundDeletion -> Foreground), Background by default.
//     An owner kind no followed resource serves is, before the monitor's
//     first discovery (MarkDiscovered), assumed alive; after it, the sync
//     fails with kUnavailable and is retried with backoff, as Kubernetes
//     does with an owner its RESTMapper cannot map (the kind may be a CRD
//     not yet discovered): the object is kept. Either way it is synced
//     again as soon as a resource of that kind is added.
//     A cluster-scoped object referring to a namespaced kind is kept as it
//     is, not retried, and gets a Warning OwnerRefInvalidNamespace event
//     (kube's namespacedOwnerOfClusterScopedObjectErr): the reference has
//     no namespace to find the owner in.
//   as an owner being deleted:
//     "orphan": the ownerReferences to it are removed from its
//       dependents, then the finalizer;
//     "foregroundDeletion": its dependents not yet being deleted are
//       enqueued (their own sync, above, deletes them or drops the
//       reference); the finalizer is removed (the API server then deletes
//       the owner) once the caches show no dependent whose reference to it
//       has blockOwnerDeletion=true. Non-blocking dependents are deleted
//       too but do not hold the owner.
// Objects of the typed caches are written with PUT (resourceVersion CAS);
// those of added resources, which the GC holds as metadata only
// (metav1::PartialObjectMetadata, from GcResourceMonitor's metadata
// informers; informer::UnstructuredObject is handled alike), with JSON
// patches that test what they remove (a changed object fails the patch; the
// sync is retried).
// Events drive every step, so cascades need no periodic scan: an owner's
// deletion enqueues its dependents (found through an index of owner uids
// in every cache that has it); a dependent's deletion enqueues those of its
// owners that are deleting their dependents, and so does a dependent's
// update that removes a blocking reference or makes it non-blocking (the
// owner may now lose its finalizer).
//
// Ownership: borrows writer and caches; the pods and replicasets caches
// must have the kOwnerUidIndex index (jobs, deployments and cronjobs
// should: without it their objects are not found as dependents). An added
// resource's cache is kept alive by its keep_alive handle while a sync uses
// it. Thread-safety: as Controller; AddResource/RemoveResource may be
// called from any thread.
#ifndef KPLANE_CONTROLLERS_GARBAGE_COLLECTOR_H_
#define KPLANE_CONTROLLERS_GARBAGE_COLLECTOR_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

inline constexpr char kOwnerUidIndex[] = "owner-uid";
// Every owner uid of an object.
std::vector<std::string> OwnerUidIndexFunc(
    const google::protobuf::Message& obj);

// A resource the collector follows besides its typed caches.
struct GcResource {
  // How the resource is named in keys: GroupResource() ("configmaps",
  // "widgets.example.com").
  std::string name;
  std::string group;
  std::string kind;  // "Widget"
  bool namespaced = true;
  // The resource for API calls (an informer::DynamicClient's).
  const objects::ResourceInfo* info = nullptr;
  // Its cache, with kOwnerUidIndex; objects are PartialObjectMetadata (or
  // UnstructuredObjects).
  const informer::Indexer* cache = nullptr;
  // Keeps `info` and `cache` alive while the collector uses them.
  std::shared_ptr<const void> keep_alive;
};

struct GarbageCollectorOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* replicasets = nullptr;
  const informer::Indexer* deployments = nullptr;
  // batch/v1 Jobs (owners of pods, dependents of CronJobs) and CronJobs;
  // optional, both or neither (kOwnerUidIndex on jobs).
  const informer::Indexer* jobs = nullptr;
  const informer::Indexer* cronjobs = nullptr;
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

  // Follows `resource` (replacing one of the same name) and syncs every
  // object of its cache that has owners or a GC finalizer, and every
  // object whose owner of this kind could not be resolved before. Call it
  // once the cache has synced; events after that go to ObjectChanged.
  void AddResource(GcResource resource);
  // Stops following the resource named `name` (its CRD was deleted):
  // queued keys of it are dropped when they come up.
  void RemoveResource(const std::string& name);
  // Whether `name` (GroupResource) is followed, typed or added.
  bool Follows(const std::string& name) const;
  // The added resources' names.
  std::vector<std::string> AddedResources() const;
  // Discovery has run once: owner kinds nothing serves are unresolvable
  // from now on (see the contract above).
  void MarkDiscovered();
  // An informer event of the added resource `name`.
  void ObjectChanged(const std::string& name, const ObjectEvent& event);

  // "pods/default/web-x1" for a pod.
  static std::string KeyFor(const objects::ResourceInfo& resource,
                            const google::protobuf::Message& obj);
  // Enqueues the dependents of an owner (after its deletion).
  void EnqueueDependents(const google::protobuf::Message& owner);

 private:
  void Watch(informer::SharedIndexInformer* inf,
             const objects::ResourceInfo& resource);
  // The followed resource `name`, typed or added.
  std::optional<GcResource> Find(const std::string& name) const EXCLUDES(mu_);
  // The followed resource serving `kind` in `api_version`'s group.
  std::optional<GcResource> FindKind(const std::string& api_version,
                                     const std::string& kind) const
      EXCLUDES(mu_);
  // Every followed resource (dependents are looked for in all of them).
  std::vector<GcResource> All() const EXCLUDES(mu_);
  bool Discovered() const EXCLUDES(mu_);
  void EnqueueEvent(const GcResource& resource, const ObjectEvent& event);
  // The key of the owner `ref` of `dependent` names, when a followed
  // resource serves its kind.
  std::optional<std::string> OwnerKey(const metav1::ObjectMeta& dependent,
                                      const metav1::OwnerReference& ref) const;
  // The cached owner `ref` of `dependent` names, when its uid matches.
  ObjectPtr CachedOwner(const metav1::ObjectMeta& dependent,
                        const metav1::OwnerReference& ref) const;
  // Enqueues the cached owners of `dependent` that are deleting their
  // dependents (it went away: they may be done).
  void EnqueueWaitingOwners(const metav1::ObjectMeta& dependent);
  // Enqueues the owners whose blocking references `before` had and `after`
  // no longer has (removed, or blockOwnerDeletion now false).
  void EnqueueUnblockedOwners(const metav1::ObjectMeta& before,
                              const metav1::ObjectMeta& after);
  struct Dependent {
    GcResource resource;
    ObjectPtr object;
  };
  // The cached objects with an ownerReference to `uid`, in every followed
  // resource whose cache has kOwnerUidIndex.
  std::vector<Dependent> DependentsOf(const std::string& uid) const;
  Status OrphanDependents(const GcResource& resource,
                          const google::protobuf::Message& owner);
  Status ProcessDeletingDependents(const GcResource& resource,
                                   const google::protobuf::Message& owner);
  Status AttemptToDelete(const GcResource& resource,
                         const google::protobuf::Message& obj);
  // Whether the object `cached` describes still is that object with the
  // same owner references (uids and blocking, in order), by a live read of
  // its metadata: false when it is gone, replaced or refers otherwise; an
  // error when the read fails or answers no uid.
  StatusOr<bool> StillAsCached(const GcResource& resource,
                               const metav1::ObjectMeta& cached);
  // Logs and records (Warning OwnerRefInvalidNamespace, kube's message)
  // that `obj`'s reference `ref` cannot name an owner in its namespace.
  void ReportInvalidNamespaceOwnerRef(const GcResource& resource,
                                      const google::protobuf::Message& obj,
                                      const metav1::OwnerReference& ref) const;
  // DELETE of `obj` with `policy` and its uid as precondition; gone or
  // replaced already is success.
  Status DeleteObject(const GcResource& resource,
                      const google::protobuf::Message& obj,
                      const std::string& policy);
  // Writes `obj` without its ownerReferences to `uids`.
  Status RemoveOwnerRefs(const GcResource& resource,
                         const google::protobuf::Message& obj,
                         const std::vector<std::string>& uids);
  // Writes `obj` with blockOwnerDeletion=false on every reference that
  // has it true (none: nothing is written).
  Status UnblockOwnerRefs(const GcResource& resource,
                          const google::protobuf::Message& obj);
  // Writes `obj` without `finalizer`.
  Status RemoveGcFinalizer(const GcResource& resource,
                           const google::protobuf::Message& obj,
                           const std::string& finalizer);

  GarbageCollectorOptions options_;
  std::vector<GcResource> typed_;  // fixed after construction
  mutable Mutex mu_;
  std::map<std::string, GcResource> added_ GUARDED_BY(mu_);
  bool discovered_ GUARDED_BY(mu_) = false;
  // Keys of objects a sync found with an owner kind no followed resource
  // served, by "<group>/<Kind>": AddResource of that kind enqueues them, so
  // an owner deleted before its resource was followed (no event for it
  // will come) is still noticed. A key leaves when its object is deleted;
  // past kMaxUnresolved keys no more are kept (those objects' syncs fail
  // and are retried with the queue's back-off anyway), so owner kinds
  // made up by the thousand cannot grow it without bound.
  static constexpr size_t kMaxUnresolved = 10000;
  std::map<std::string, std::set<std::string>> unresolved_ GUARDED_BY(mu_);
  size_t unresolved_keys_ GUARDED_BY(mu_) = 0;

  void ForgetUnresolved(const GcResource& resource,
                        const google::protobuf::Message& deleted) EXCLUDES(mu_);

 public:
  // For tests: the keys kept for owner kinds not followed.
  size_t UnresolvedKeysForTest() const EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return unresolved_keys_;
  }
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_GARBAGE_COLLECTOR_H_
