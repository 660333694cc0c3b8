// ServiceAllocator: ClusterIPs and NodePorts for core/v1 Services, as
// kube-apiserver allocates them (pkg/registry/core/service/storage's
// allocators over ipallocator and portallocator, Kubernetes 1.32).
//
//   --service-cluster-ip-range (default 10.96.0.0/12, as kubeadm): IPv4
//     only, a /12 .. /30; the network and broadcast addresses are never
//     handed out, the first address (10.96.0.1) is the `kubernetes`
//     Service's (FirstIP()).
//   --service-node-port-range (default 30000-32767).
//
// On create and update (WriteAllocator, called by the services
// ResourceStore after validation):
//   - a Service that is not ExternalName and not headless (clusterIP None)
//     gets spec.clusterIP/clusterIPs: the one it asks for, or a free one;
//   - a NodePort or LoadBalancer Service holds the nodePorts it asks for,
//     and a port without one gets a free one, except on a LoadBalancer
//     with allocateLoadBalancerNodePorts false (no new ports, but the
//     ones it names are its own, as in kube's alloc.go; one port number
//     serves the same port for TCP and UDP);
//   - what the stored Service held and the new one no longer does (a type
//     change, a removed port) is given back once the update is stored;
//   - a failed write gives back what it took; a delete gives back all.
// Errors are kube's 422s, e.g. `Service "web" is invalid: spec.clusterIPs:
// Invalid value: []string{"10.96.0.10"}: failed to allocate IP 10.96.0.10:
// provided IP is already allocated` and `spec.ports[0].nodePort: Invalid
// value: 30080: provided port is already allocated` / `provided port is not
// in the valid range. The range of valid ports is 30000-32767`.
//
// The bitmaps live in the store (RangeAllocator: /registry/ranges/serviceips
// and /registry/ranges/servicenodeports, compare-and-swap), so restarts and
// several apiservers on one store never allocate twice. Not done: kube's
// repair controller (an allocation whose Service write never happened, e.g.
// the process died in between, stays taken), IPv6 and dual-stack,
// healthCheckNodePort.
//
// Thread-safety: all methods may be called concurrently.
#ifndef KPLANE_APISERVER_SERVICE_ALLOCATION_H_
#define KPLANE_APISERVER_SERVICE_ALLOCATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "apiserver/range_allocator.h"
#include "apiserver/resource_store.h"
#include "base/statusor.h"
#include "storage/kv.h"

namespace kplane::apiserver {

inline constexpr std::string_view kDefaultServiceClusterIPRange =
    "10.96.0.0/12";
inline constexpr std::string_view kDefaultServiceNodePortRange = "30000-32767";

class ServiceAllocator : public WriteAllocator {
 public:
  // InvalidArgument for a malformed or unsupported range.
  static StatusOr<std::unique_ptr<ServiceAllocator>> New(
      storage::KV* kv, std::string_view storage_prefix,
      std::string_view cluster_ip_range, std::string_view node_port_range);

  // The first address of the range ("10.96.0.1").
  std::string FirstIP() const { return IPAt(0); }

  ApiResult<std::unique_ptr<Pending>> Allocate(
      google::protobuf::Message* obj, const google::protobuf::Message* old,
      bool dry_run) override;
  void Release(const google::protobuf::Message& deleted) override;

 private:
  ServiceAllocator(storage::KV* kv, std::string_view prefix, uint32_t base,
                   int prefix_len, std::string ip_range, int node_port_base,
                   int node_port_count, std::string port_range);
  std::string IPAt(int64_t offset) const;
  // The offset of `ip` in the range, -1 when it is not in it.
  int64_t OffsetOf(std::string_view ip) const;

  const uint32_t base_;  // the network address
  const int node_port_base_;
  RangeAllocator ips_;
  RangeAllocator ports_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_SERVICE_ALLOCATION_H_
