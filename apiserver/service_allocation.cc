#include "apiserver/service_allocation.h"

#include <arpa/inet.h>

#include <set>
#include <utility>
#include <vector>

#include "apiserver/registry/validation_util.h"
#include "base/logging.h"
#include "base/strings.h"
#include "objects/types.h"

namespace kplane::apiserver {

namespace {

using objects::corev1::Service;
using objects::corev1::ServiceSpec;

bool NeedsClusterIP(const ServiceSpec& spec) {
  return spec.type() != "ExternalName" && spec.clusterip() != "None" &&
         !(spec.clusterips_size() > 0 && spec.clusterips(0) == "None");
}

// The node ports a Service's spec names are its own (reserved) when it
// has one of these types, whatever allocateLoadBalancerNodePorts says.
bool HoldsNodePorts(const ServiceSpec& spec) {
  return spec.type() == "NodePort" || spec.type() == "LoadBalancer";
}

// A port without a nodePort gets a free one (kube's shouldAllocateNodePorts).
bool AllocatesNodePorts(const ServiceSpec& spec) {
  return spec.type() == "NodePort" ||
         (spec.type() == "LoadBalancer" &&
          (!spec.has_allocateloadbalancernodeports() ||
           spec.allocateloadbalancernodeports()));
}

// One write's allocations: `taken` goes back unless committed, `release`
// goes back on commit.
class PendingAllocations : public WriteAllocator::Pending {
 public:
  using Held = std::pair<RangeAllocator*, int64_t>;
  ~PendingAllocations() override {
    if (!committed_) GiveBack(taken_);
  }
  void Commit() override {
    committed_ = true;
    GiveBack(release_);
  }
  void Took(RangeAllocator* a, int64_t offset) {
    taken_.push_back({a, offset});
  }
  void ReleaseOnCommit(RangeAllocator* a, int64_t offset) {
    release_.push_back({a, offset});
  }

 private:
  static void GiveBack(const std::vector<Held>& held) {
    for (const auto& [allocator, offset] : held) {
      Status s = allocator->Release(offset);
      if (!s.ok()) {
        LOG(WARNING) << "releasing offset " << offset << " of "
                     << allocator->range() << ": " << s;
      }
    }
  }
  bool committed_ = false;
  std::vector<Held> taken_;
  std::vector<Held> release_;
};

// Takes `offset`, or for a dry run only checks that it is free
// (kAlreadyExists when taken).
Status Take(RangeAllocator* allocator, int64_t offset, bool dry_run) {
  if (!dry_run) return allocator->Allocate(offset);
  StatusOr<bool> taken = allocator->Has(offset);
  if (!taken.ok()) return taken.status();
  return *taken ? AlreadyExistsError("already allocated") : Status::Ok();
}

ApiError InvalidService(const Service& svc, FieldError error) {
  return ApiError::Invalid("", "Service", svc.metadata().name(), {error});
}

}  // namespace

StatusOr<std::unique_ptr<ServiceAllocator>> ServiceAllocator::New(
    storage::KV* kv, std::string_view storage_prefix,
    std::string_view cluster_ip_range, std::string_view node_port_range) {
  const std::string cidr(cluster_ip_range);
  const size_t slash = cidr.find('/');
  in_addr addr{};
  std::optional<int64_t> bits = slash == std::string::npos
                                    ? std::nullopt
                                    : ParseInt64(cidr.substr(slash + 1));
  if (!bits || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &addr) != 1) {
    return InvalidArgumentError("--service-cluster-ip-range " + cidr +
                                ": not an IPv4 CIDR (IPv6 is not supported)");
  }
  if (*bits < 12 || *bits > 30) {
    return InvalidArgumentError("--service-cluster-ip-range " + cidr +
                                ": the prefix length must be 12 .. 30");
  }
  const uint32_t mask = ~uint32_t{0} << (32 - *bits);
  const uint32_t base = ntohl(addr.s_addr) & mask;
  const std::vector<std::string> ports =
      StrSplit(std::string(node_port_range), '-');
  std::optional<int64_t> lo, hi;
  if (ports.size() == 2) {
    lo = ParseInt64(ports[0]);
    hi = ParseInt64(ports[1]);
  }
  if (!lo || !hi || *lo < 1 || *hi > 65535 || *lo > *hi) {
    return InvalidArgumentError("--service-node-port-range " +
                                std::string(node_port_range) +
                                ": not a range of ports like 30000-32767");
  }
  in_addr net{htonl(base)};
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &net, text, sizeof text);
  return std::unique_ptr<ServiceAllocator>(new ServiceAllocator(
      kv, storage_prefix, base, static_cast<int>(*bits),
      std::string(text) + "/" + std::to_string(*bits), static_cast<int>(*lo),
      static_cast<int>(*hi - *lo + 1),
      std::to_string(*lo) + "-" + std::to_string(*hi)));
}

ServiceAllocator::ServiceAllocator(storage::KV* kv, std::string_view prefix,
                                   uint32_t base, int prefix_len,
                                   std::string ip_range, int node_port_base,
                                   int node_port_count, std::string port_range)
    : base_(base),
      node_port_base_(node_port_base),
      // Neither the network nor the broadcast address.
      ips_(kv, std::string(prefix) + "/ranges/serviceips", std::move(ip_range),
           (int64_t{1} << (32 - prefix_len)) - 2),
      ports_(kv, std::string(prefix) + "/ranges/servicenodeports",
             std::move(port_range), node_port_count,
             RangeAllocator::Kind::kNodePorts) {}

std::string ServiceAllocator::IPAt(int64_t offset) const {
  in_addr a{htonl(base_ + 1 + static_cast<uint32_t>(offset))};
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

int64_t ServiceAllocator::OffsetOf(std::string_view ip) const {
  in_addr a{};
  if (inet_pton(AF_INET, std::string(ip).c_str(), &a) != 1) return -1;
  const int64_t offset = int64_t{ntohl(a.s_addr)} - int64_t{base_} - 1;
  return offset >= 0 && offset < ips_.size() ? offset : -1;
}

ApiResult<std::unique_ptr<WriteAllocator::Pending>> ServiceAllocator::Allocate(
    google::protobuf::Message* obj, const google::protobuf::Message* old,
    bool dry_run) {
  auto* svc = dynamic_cast<Service*>(obj);
  const auto* prev = dynamic_cast<const Service*>(old);
  auto pending = std::make_unique<PendingAllocations>();
  if (svc == nullptr) return std::unique_ptr<Pending>(std::move(pending));
  ServiceSpec* spec = svc->mutable_spec();

  // --- the cluster IP ---
  const std::string old_ip = prev != nullptr && NeedsClusterIP(prev->spec())
                                 ? prev->spec().clusterip()
                                 : "";
  std::string new_ip;
  if (NeedsClusterIP(*spec)) {
    if (spec->clusterip().empty()) {
      StatusOr<int64_t> got = dry_run ? ips_.PeekNext() : ips_.AllocateNext();
      if (!got.ok()) {
        return ApiError::Internal("failed to allocate a serviceIP: " +
                                  got.status().message());
      }
      if (!dry_run) pending->Took(&ips_, *got);
      new_ip = IPAt(*got);
      spec->set_clusterip(new_ip);
      spec->clear_clusterips();
      spec->add_clusterips(new_ip);
    } else if (spec->clusterip() != old_ip) {
      new_ip = spec->clusterip();
      const int64_t offset = OffsetOf(new_ip);
      std::string why;
      if (offset < 0) {
        why = "the provided IP (" + new_ip +
              ") is not in the valid range. The range of valid IPs is " +
              ips_.range();
      } else {
        const Status s = Take(&ips_, offset, dry_run);
        if (s.Is(StatusCode::kAlreadyExists)) {
          why = "provided IP is already allocated";
        } else if (!s.ok()) {
          return ApiError::FromStatus(s, nullptr, svc->metadata().name());
        } else if (!dry_run) {
          pending->Took(&ips_, offset);
        }
      }
      if (!why.empty()) {
        return InvalidService(
            *svc, validation::Invalid(
                      validation::Path("spec").Child("clusterIPs"),
                      validation::GoStringSlice(spec->clusterips()),
                      "failed to allocate IP " + new_ip + ": " + why));
      }
    } else {
      new_ip = old_ip;
    }
  }
  if (!old_ip.empty() && old_ip != new_ip && OffsetOf(old_ip) >= 0) {
    pending->ReleaseOnCommit(&ips_, OffsetOf(old_ip));
  }

  // --- node ports ---
  std::set<int> old_ports;
  if (prev != nullptr && HoldsNodePorts(prev->spec())) {
    for (const auto& p : prev->spec().ports()) {
      if (p.nodeport() != 0) old_ports.insert(p.nodeport());
    }
  }
  std::set<int> new_ports;
  if (HoldsNodePorts(*spec)) {
    for (int i = 0; i < spec->ports_size(); ++i) {
      auto* port = spec->mutable_ports(i);
      const int want = port->nodeport();
      // No new ports, but the ones asked for are taken (kube's alloc.go).
      if (want == 0 && !AllocatesNodePorts(*spec)) continue;
      if (want != 0 && (old_ports.count(want) || new_ports.count(want))) {
        new_ports.insert(want);
        continue;
      }
      if (want == 0) {
        StatusOr<int64_t> got =
            dry_run ? ports_.PeekNext() : ports_.AllocateNext();
        if (!got.ok()) {
          return ApiError::Internal("failed to allocate a nodePort: " +
                                    got.status().message());
        }
        if (!dry_run) pending->Took(&ports_, *got);
        port->set_nodeport(node_port_base_ + static_cast<int>(*got));
        new_ports.insert(port->nodeport());
        continue;
      }
      const int64_t offset = int64_t{want} - node_port_base_;
      std::string why;
      if (offset < 0 || offset >= ports_.size()) {
        why =
            "provided port is not in the valid range. The range of valid "
            "ports is " +
            ports_.range();
      } else {
        const Status s = Take(&ports_, offset, dry_run);
        if (s.Is(StatusCode::kAlreadyExists)) {
          why = "provided port is already allocated";
        } else if (!s.ok()) {
          return ApiError::FromStatus(s, nullptr, svc->metadata().name());
        } else if (!dry_run) {
          pending->Took(&ports_, offset);
        }
      }
      if (!why.empty()) {
        return InvalidService(
            *svc, validation::InvalidInt(
                      validation::Path("spec").Child("ports").Index(i).Child(
                          "nodePort"),
                      want, why));
      }
      new_ports.insert(want);
    }
  }
  for (int p : old_ports) {
    if (!new_ports.count(p)) {
      pending->ReleaseOnCommit(&ports_, int64_t{p} - node_port_base_);
    }
  }
  return std::unique_ptr<Pending>(std::move(pending));
}

void ServiceAllocator::Release(const google::protobuf::Message& deleted) {
  const auto* svc = dynamic_cast<const Service*>(&deleted);
  if (svc == nullptr) return;
  PendingAllocations all;
  if (NeedsClusterIP(svc->spec())) {
    const int64_t offset = OffsetOf(svc->spec().clusterip());
    if (offset >= 0) all.ReleaseOnCommit(&ips_, offset);
  }
  if (HoldsNodePorts(svc->spec())) {
    std::set<int> released;
    for (const auto& p : svc->spec().ports()) {
      if (p.nodeport() != 0 && released.insert(p.nodeport()).second) {
        all.ReleaseOnCommit(&ports_, int64_t{p.nodeport()} - node_port_base_);
      }
    }
  }
  all.Commit();
}

}  // namespace kplane::apiserver
