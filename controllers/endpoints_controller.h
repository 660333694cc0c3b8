// EndpointsController: the core/v1 Endpoints of every Service with a
// selector, from the pods it selects (Kubernetes' EndpointController,
// pkg/controller/endpoint/endpoints_controller.go).
//
// Keys are Services' "namespace/name". A Service added, updated or deleted
// enqueues itself; a pod added, updated or deleted enqueues every Service
// of its namespace whose selector matches its labels (old or new); a
// deleted Endpoints enqueues its Service. Sync(key):
//   1. the Service is gone: delete its Endpoints (absent is fine);
//   2. no selector: nothing (such Endpoints are the user's, e.g.
//      Patroni's);
//   3. every selected pod that has a podIP, is not terminal
//      (Succeeded/Failed) and not being deleted gives an address (ip,
//      nodeName, targetRef Pod, hostname when spec.hostname is set and
//      spec.subdomain is the Service's name) — in `addresses` when the
//      pod is Ready or the Service publishes not-ready addresses, else in
//      `notReadyAddresses` — for every Service port it serves: targetPort
//      by number, or by name through the pod's container ports (a pod
//      without that named port does not serve it); a Service without
//      ports (headless) lists addresses without ports;
//   4. addresses with the same ports share a subset (kube's
//      RepackSubsets), sorted by IP; at most 1000 addresses are kept,
//      then the annotation endpoints.kubernetes.io/over-capacity:
//      truncated is set;
//   5. the Endpoints (labels: the Service's, plus
//      service.kubernetes.io/headless for clusterIP None) is created, or
//      updated when its subsets or labels differ (a conflict is retried).
//
//   EndpointsController c({.api = writer, .services = &svc_cache,
//                          .pods = &pod_cache, .endpoints = &ep_cache});
//   c.RegisterHandlers(services_informer, pods_informer, endpoints_informer);
//
// The pods cache needs informer::kNamespaceIndex (built in).
// Ownership: borrows the writer and the caches. Thread-safety: as
// Controller.
#ifndef KPLANE_CONTROLLERS_ENDPOINTS_CONTROLLER_H_
#define KPLANE_CONTROLLERS_ENDPOINTS_CONTROLLER_H_

#include <string>
#include <vector>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/endpoints_types.h"

namespace kplane::controllers {

// kube's maxCapacity for one Endpoints object.
inline constexpr int kMaxEndpointsAddresses = 1000;

struct EndpointsControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* services = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* endpoints = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

// What the Endpoints and EndpointSlice controllers share (kube's
// pkg/controller/util/endpoint and podutil.FindPort):
// The pod's port for a Service port: targetPort by number (the port itself
// when unset), or by name through the pod's container ports of the same
// protocol; 0 when the pod does not serve it.
int32_t FindServicePort(const corev1::Pod& pod, const corev1::ServicePort& sp);
// ShouldPodBeInEndpoints: has a podIP, not Succeeded/Failed, and not being
// deleted unless `include_terminating`.
bool ShouldPodBeInEndpoints(const corev1::Pod& pod, bool include_terminating);
// The Service has a selector and it matches the pod's labels.
bool ServiceSelectsPod(const corev1::Service& svc, const corev1::Pod& pod);
// The keys of the Services of `pod`'s namespace in `services` that select
// it (the pod handlers of both controllers).
std::vector<std::string> ServicesSelecting(const informer::Indexer& services,
                                           const corev1::Pod& pod);
// ShouldSetHostname: spec.hostname set and spec.subdomain the Service's.
bool ShouldSetHostname(const corev1::Pod& pod, const corev1::Service& svc);

// The Endpoints `service` should have given `pods` (the pods of its
// namespace; unselected ones are skipped): subsets and labels only, no
// other metadata. Exposed for the tests and the EndpointSlice side.
corev1::Endpoints DesiredEndpoints(
    const corev1::Service& service,
    const std::vector<informer::ObjectPtr>& pods);

class EndpointsController : public Controller {
 public:
  explicit EndpointsController(EndpointsControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* services,
                        informer::SharedIndexInformer* pods,
                        informer::SharedIndexInformer* endpoints);
  Status Sync(const std::string& key) override;

 private:
  EndpointsControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_ENDPOINTS_CONTROLLER_H_
