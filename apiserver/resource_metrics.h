// metrics.k8s.io/v1beta1: the resource metrics API that metrics-server
// serves in Kubernetes (k8s.io/metrics/pkg/apis/metrics/v1beta1), so
// `kubectl top nodes` and `kubectl top pods` work against kplane.
//
//   GET /apis/metrics.k8s.io/v1beta1/nodes[/<name>]          NodeMetrics
//   GET /apis/metrics.k8s.io/v1beta1/pods                    PodMetrics, all
//   GET /apis/metrics.k8s.io/v1beta1/namespaces/<ns>/pods[/<name>]
//
// Simulation: kplane's nodes are simulated, so there is nothing to scrape.
// The usage is a deterministic function of the objects the apiserver
// already holds in its watch caches (pods and nodes) and of the time: no
// kubelet round trip, nothing stored, nothing computed until a client asks
// (a fleet of 5,000 simulated nodes pays nothing for it). See
// docs/kubeletsim.md for the formula; in short, per container:
//   cpu    = base * (0.8 + 0.25 sin(a) + 0.05 sin(b)), within [0.5, 1.1] x
//            base, capped at the limit; base = the cpu request, else half
//            the limit, else 2m; a and b advance with time at rates and
//            phases drawn from a hash of the pod's uid and container name;
//   memory = base * (0.85 + 0.1 sin(c)) * ramp, base = the memory request,
//            else half the limit, else 16Mi, capped at the limit; the ramp
//            grows from 0.5 to 1 over the first minute after the pod's
//            status.startTime.
// Samples are taken every kMetricsResolutionSeconds (the timestamp is the
// time floored to it, window "15s"), so two reads in one window agree.
// The pod annotations kubeletsim.kplane.io/cpu-usage and
// kubeletsim.kplane.io/memory-usage (quantities: "250m", "100Mi") fix the
// pod's usage instead (split evenly between its containers); on a Node
// they fix the node's usage. A node's usage is the sum of its running
// pods' plus a system share (cpu 50m, memory 256Mi, with the same wobble).
//
// Which objects have metrics, as with metrics-server: pods in phase
// Running bound to a node, and nodes whose Ready condition is True. A
// pod or node without metrics is 404 `pods.metrics.k8s.io "<ns>/<name>"
// not found` (`nodes.metrics.k8s.io "<name>" not found`), one that does
// not exist 404 `pods "<name>" not found`, as metrics-server answers.
// Label selectors select by the pod's or node's labels, field selectors by
// the pod's or node's fields (kubectl top pods -l / --field-selector).
//
// Thread-safety: the usage functions are pure; MetricsApi's methods may be
// called concurrently (the caches are thread-safe). Errors: ApiError as
// above; a cache that cannot be read gives its error.
#ifndef KPLANE_APISERVER_RESOURCE_METRICS_H_
#define KPLANE_APISERVER_RESOURCE_METRICS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apiserver/cacher/cacher.h"
#include "apiserver/errors.h"
#include "apiserver/query_params.h"
#include "objects/scheme.h"
#include "objects/types.h"

namespace kplane::apiserver {

inline constexpr char kMetricsGroup[] = "metrics.k8s.io";
inline constexpr char kCpuUsageAnnotation[] = "kubeletsim.kplane.io/cpu-usage";
inline constexpr char kMemoryUsageAnnotation[] =
    "kubeletsim.kplane.io/memory-usage";
inline constexpr int64_t kMetricsResolutionSeconds = 15;

struct ResourceUsage {
  int64_t cpu_nanocores = 0;
  int64_t memory_bytes = 0;
};

// Whether metrics-server would report the object.
bool PodHasMetrics(const objects::corev1::Pod& pod);
bool NodeHasMetrics(const objects::corev1::Node& node);

// The usage of each of the pod's containers (spec order) at a sample time
// (Unix seconds).
std::vector<std::pair<std::string, ResourceUsage>> SimulatedPodUsage(
    const objects::corev1::Pod& pod, int64_t at_unix_seconds);
// The node's usage given the pods that run on it (PodHasMetrics ones).
ResourceUsage SimulatedNodeUsage(
    const objects::corev1::Node& node,
    const std::vector<const objects::corev1::Pod*>& pods,
    int64_t at_unix_seconds);

// The discovery entries (get, list): nodes (cluster-scoped, NodeMetrics)
// and pods (namespaced, PodMetrics) of metrics.k8s.io/v1beta1.
const objects::ResourceInfo& NodeMetricsResource();
const objects::ResourceInfo& PodMetricsResource();

// One GET or LIST of the API, answered as JSON.
struct MetricsRequest {
  std::string_view resource;       // "pods" or "nodes"
  std::string_view ns;             // pods: "" = all namespaces
  std::string_view name;           // "" = list
  ObjectPredicate pod_predicate;   // pods: selects pods (null: all)
  ObjectPredicate node_predicate;  // nodes: selects nodes (null: all)
  int64_t now_unix_seconds = 0;
};

class MetricsApi {
 public:
  // The caches must outlive the MetricsApi.
  MetricsApi(Cacher* pods, Cacher* nodes) : pods_(pods), nodes_(nodes) {}
  // The JSON body of a PodMetrics(List) or NodeMetrics(List).
  ApiResult<std::string> Serve(const MetricsRequest& r) const;

 private:
  ApiResult<std::string> ServePods(const MetricsRequest& r,
                                   const std::string& timestamp,
                                   int64_t at) const;
  ApiResult<std::string> ServeNodes(const MetricsRequest& r,
                                    const std::string& timestamp,
                                    int64_t at) const;
  Cacher* pods_;
  Cacher* nodes_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_RESOURCE_METRICS_H_
