// GcResourceMonitor: keeps the garbage collector's view of the API
// complete, as Kubernetes' GraphBuilder does with its monitors: it asks
// discovery which resources exist (the preferred version of every group,
// GET /api/v1, /apis, /apis/<group>/<version>), and for every one that can
// be deleted, listed and watched (subresources and events excepted, and
// those the collector already has typed caches for) runs an informer over
// it (metadata only, as kube's metadata informers: PartialObjectMetadata
// in protobuf, informer::ObjectForm::kMetadata; API calls through
// informer::DynamicClient's resource info) and
// hands its cache to GarbageCollector::AddResource once synced. Resources
// that disappear from discovery (a deleted CRD) are removed from the
// collector and their informers stopped. Discovery runs at Start, every
// `resync_period`, and soon after any CustomResourceDefinition changes
// (it follows customresourcedefinitions like any resource, and a CRD event
// asks for a new pass), so a new CRD's objects are collected within about
// a second of the CRD being Established.
//
//   GcResourceMonitor monitor({.client = rest_client, .gc = &gc});
//   monitor.Start();           // a thread of its own
//   ...
//   monitor.Stop();            // before the collector stops
//
// A group whose discovery fails keeps the informers it had (an
// unavailable aggregated API does not make its objects look ownerless).
// After the first complete pass the collector is told (MarkDiscovered):
// owner kinds nothing serves are then retried, not assumed alive.
//
// Ownership: borrows the RestClient and the collector (both must outlive
// it); owns the informers, which the collector may hold on to while a sync
// uses one. Thread-safety: Resync, Kick, Stop from any thread. Errors:
// Resync returns the first discovery error (logged by the thread).
#ifndef KPLANE_CONTROLLERS_GC_RESOURCE_MONITOR_H_
#define KPLANE_CONTROLLERS_GC_RESOURCE_MONITOR_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "controllers/garbage_collector.h"
#include "informer/dynamic_client.h"
#include "informer/rest_client.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

struct GcResourceMonitorOptions {
  informer::RestClient* client = nullptr;
  GarbageCollector* gc = nullptr;
  // How often discovery is asked again without a CRD event (Kubernetes'
  // garbage collector: 30 s).
  Duration resync_period = seconds(30);
  // How long one pass waits for a new informer's first LIST; one not
  // synced by then is added on a later pass.
  Duration sync_timeout = seconds(10);
  Clock* clock = nullptr;
};

// A resource discovery lists (DiscoverGcResources; the namespace
// controller uses it too, for the custom resources it empties).
struct DiscoveredResource {
  informer::GroupVersionResource gvr;
  std::string kind;
  bool namespaced = true;
  // Discovery lists the deletecollection verb too.
  bool deletecollection = false;
  // GroupResource: "configmaps", "widgets.example.com".
  std::string Name() const;
};

// The resources of the preferred version of every group that have the
// delete, list and watch verbs, without subresources and events.
// `failed_groups` receives the groups whose discovery failed.
StatusOr<std::vector<DiscoveredResource>> DiscoverGcResources(
    informer::RestClient* client, std::vector<std::string>* failed_groups);

class GcResourceMonitor {
 public:
  explicit GcResourceMonitor(GcResourceMonitorOptions options);
  ~GcResourceMonitor();  // Stop()s
  GcResourceMonitor(const GcResourceMonitor&) = delete;
  GcResourceMonitor& operator=(const GcResourceMonitor&) = delete;

  // Starts the thread that runs Resync now and then as described above.
  void Start();
  // Stops the thread and every informer; removes the added resources from
  // the collector. Idempotent.
  void Stop();
  // One pass: discovery, informers started (waited for up to
  // sync_timeout) or stopped, the collector updated.
  Status Resync();
  // Asks the thread for a pass soon.
  void Kick();
  // The resources whose informers run (synced or not), by Name().
  std::vector<std::string> Monitored() const;

 private:
  struct Monitor {
    DiscoveredResource resource;
    std::shared_ptr<informer::SharedIndexInformer> informer;
    bool added = false;  // handed to the collector
  };
  void Loop();

  GcResourceMonitorOptions options_;
  Clock* const clock_;
  informer::DynamicClient dynamic_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool kicked_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  // Resync runs on one thread at a time (resync_mu_); monitors_ is read
  // by Monitored() under mu_.
  Mutex resync_mu_;
  std::map<std::string, Monitor> monitors_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_GC_RESOURCE_MONITOR_H_
