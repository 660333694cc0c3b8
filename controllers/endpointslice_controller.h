// EndpointSliceController: the discovery.k8s.io/v1 EndpointSlices of every
// Service with a selector, from the pods it selects (Kubernetes'
// pkg/controller/endpointslice and staging/.../endpointslice reconciler).
//
// Keys are Services' "namespace/name". A Service event enqueues itself; a
// pod event enqueues the Services of its namespace that select it (old or
// new labels); an event on a slice labelled as ours enqueues its Service
// (so a slice edited or deleted by hand is put back). Sync(key):
//   1. the Service is gone: delete its slices (the garbage collector would
//      too, through the owner reference);
//   2. no selector: nothing (such slices are the user's);
//   3. for each address type of the Service (spec.ipFamilies: IPv4, IPv6;
//      by its clusterIP when unset), every selected pod that has a podIP
//      of that family and is not Succeeded/Failed gives an endpoint:
//      addresses [ip], conditions {ready: (Ready and not terminating) or
//      publishNotReadyAddresses, serving: Ready, terminating: being
//      deleted}, nodeName, hostname (spec.hostname with spec.subdomain the
//      Service's name), targetRef Pod; its ports are the Service ports the
//      pod serves (targetPort by number, or by name through its container
//      ports); endpoints with the same ports share slices;
//   4. the Service's slices (labels kubernetes.io/service-name=<name> and
//      endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io)
//      are reconciled: an endpoint stays in the slice it is in (updated
//      when it changed), new endpoints fill slices with room, then new
//      slices (generateName "<service>-") of at most
//      max_endpoints_per_slice (kube's default 100); slices left empty
//      are deleted, except one empty placeholder per address type when the
//      Service has no endpoints at all (as kube keeps);
//   5. slice labels: the Service's (minus the two above), plus
//      service.kubernetes.io/headless for clusterIP None; owner reference:
//      the Service (controller, blockOwnerDeletion).
// Stale caches: a slice this controller wrote is remembered with its
// resourceVersion (or as deleted) until the slices cache has caught up;
// a Sync before that fails (and is retried with back-off) rather than
// creating a second copy — kube's EndpointSliceTracker. A slice's delete
// event, whoever deleted it, ends the wait for that slice (HandleDeletion),
// and a Service found gone ends the wait for all of its slices
// (DeleteService).
//
//   EndpointSliceController c({.api = writer, .services = &svc_cache,
//                               .pods = &pod_cache, .slices = &slice_cache});
//   c.RegisterHandlers(services_informer, pods_informer, slices_informer);
//
// Not done: topology (zone from the node's label, hints), the
// last-change-trigger-time annotation, EndpointSlice mirroring of
// selector-less Endpoints. Ownership: borrows the writer and the caches.
// Thread-safety: as Controller; the written-slices memory has its lock.
#ifndef KPLANE_CONTROLLERS_ENDPOINTSLICE_CONTROLLER_H_
#define KPLANE_CONTROLLERS_ENDPOINTSLICE_CONTROLLER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/discovery_types.h"

namespace kplane::controllers {

namespace discoveryv1 = objects::discoveryv1;

inline constexpr char kServiceNameLabel[] = "kubernetes.io/service-name";
inline constexpr char kManagedByLabel[] =
    "endpointslice.kubernetes.io/managed-by";
inline constexpr char kEndpointSliceControllerName[] =
    "endpointslice-controller.k8s.io";

const objects::ResourceInfo& EndpointSlicesResource();

struct EndpointSliceControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* services = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* slices = nullptr;
  // kube-controller-manager's --max-endpoints-per-slice.
  int max_endpoints_per_slice = 100;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class EndpointSliceController : public Controller {
 public:
  explicit EndpointSliceController(EndpointSliceControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* services,
                        informer::SharedIndexInformer* pods,
                        informer::SharedIndexInformer* slices);
  Status Sync(const std::string& key) override;

  // Handler body (public for unit tests, which have no informers).
  void OnSliceEvent(const ObjectEvent& e);

 private:
  // The slices of `service_key` in the cache that this controller manages.
  std::vector<const discoveryv1::EndpointSlice*> ManagedSlices(
      const std::vector<informer::ObjectPtr>& in_namespace,
      const std::string& service_name) const;
  // False while a slice written for `service_key` is not yet in the cache
  // as written.
  bool CacheHasCaughtUp(const std::string& service_key);
  // `resource_version` nullopt: deleted.
  void Remember(const std::string& service_key, const std::string& slice,
                std::optional<std::string> resource_version);

  EndpointSliceControllerOptions options_;
  Mutex mu_;
  // service key -> slice name -> resourceVersion written (nullopt:
  // deleted).
  std::map<std::string, std::map<std::string, std::optional<std::string>>>
      written_ GUARDED_BY(mu_);
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_ENDPOINTSLICE_CONTROLLER_H_
