// The EndpointSlice strategy (discovery.k8s.io/v1; upstream:
// pkg/registry/discovery/endpointslice/strategy.go, ValidateEndpointSlice
// in pkg/apis/discovery/validation and SetDefaults_EndpointPort of
// Kubernetes 1.32).
//
// Slices are written by the EndpointSlice controller for Services with a
// selector, and by clients for their own. The addressType (IPv4, IPv6 or
// FQDN, immutable) decides how addresses are checked; at most 1000
// endpoints of 1..100 addresses each; ports have unique names, a protocol
// (defaulted to TCP) and a name defaulted to "". The generation moves when
// anything but metadata (labels included) changes. Not checked: the
// reserved topology.kubernetes.io/zone key of deprecatedTopology (kube
// answers it with an internal error).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/discovery_types.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver {

namespace {

using objects::discoveryv1::Endpoint;
using objects::discoveryv1::EndpointPort;
using objects::discoveryv1::EndpointSlice;
using validation::Append;
using validation::Duplicate;
using validation::InvalidString;
using validation::NotSupportedString;
using validation::Path;
using validation::Required;
using validation::TooMany;

constexpr int kMaxTopologyLabels = 16;
constexpr int kMaxAddresses = 100;
constexpr int kMaxPorts = 20000;
constexpr int kMaxEndpoints = 1000;
constexpr int kMaxZoneHints = 8;

// validation.IsFullyQualifiedDomainName.
FieldErrors ValidateFQDN(std::string name, const Path& p) {
  if (name.empty()) return {Required(p)};
  if (name.back() == '.') name.pop_back();
  std::vector<std::string> msgs = machinery::IsDNS1123Subdomain(name);
  if (!msgs.empty()) return {InvalidString(p, name, StrJoin(msgs, ","))};
  std::vector<std::string> labels = StrSplit(name, '.');
  if (labels.size() < 2) {
    return {InvalidString(
        p, name,
        "should be a domain with at least two segments separated by dots")};
  }
  for (const std::string& label : labels) {
    msgs = machinery::IsDNS1123Label(label);
    if (!msgs.empty()) return {InvalidString(p, label, StrJoin(msgs, ","))};
  }
  return {};
}

FieldErrors ValidateAddress(const std::string& address, const std::string& type,
                            const Path& p) {
  // Unknown types fall through unchecked (the type itself is refused).
  if (type == "IPv4") {
    if (!validation::IsIPv4(address)) {
      return {InvalidString(p, address, "must be a valid IPv4 address")};
    }
    return validation::ValidateNonSpecialIP(address, p);
  }
  if (type == "IPv6") {
    if (!validation::IsIPv6(address)) {
      return {InvalidString(p, address, "must be a valid IPv6 address")};
    }
    return validation::ValidateNonSpecialIP(address, p);
  }
  if (type == "FQDN") return ValidateFQDN(address, p);
  return {};
}

FieldErrors ValidateEndpoint(const Endpoint& endpoint,
                             const std::string& address_type, const Path& p) {
  FieldErrors errs;
  const Path addresses = p.Child("addresses");
  if (endpoint.addresses().empty()) {
    errs.push_back(Required(addresses, "must contain at least 1 address"));
  } else if (endpoint.addresses_size() > kMaxAddresses) {
    errs.push_back(
        TooMany(addresses, endpoint.addresses_size(), kMaxAddresses));
  }
  for (int i = 0; i < endpoint.addresses_size(); ++i) {
    Append(&errs, ValidateAddress(endpoint.addresses(i), address_type,
                                  addresses.Index(i)));
  }
  if (endpoint.has_nodename()) {
    for (std::string& m : machinery::IsDNS1123Subdomain(endpoint.nodename())) {
      errs.push_back(
          InvalidString(p.Child("nodeName"), endpoint.nodename(), m));
    }
  }
  const Path topology = p.Child("deprecatedTopology");
  if (endpoint.deprecatedtopology_size() > kMaxTopologyLabels) {
    errs.push_back(TooMany(topology, endpoint.deprecatedtopology_size(),
                           kMaxTopologyLabels));
  }
  Append(&errs,
         validation::ValidateLabels(endpoint.deprecatedtopology(), topology));
  if (endpoint.has_hostname()) {
    Append(&errs, validation::ValidateDNS1123Label(endpoint.hostname(),
                                                   p.Child("hostname")));
  }
  if (endpoint.has_hints()) {
    const Path zones = p.Child("hints").Child("forZones");
    const auto& for_zones = endpoint.hints().forzones();
    if (for_zones.size() > kMaxZoneHints) {
      errs.push_back(TooMany(zones, for_zones.size(), kMaxZoneHints));
      return errs;
    }
    std::set<std::string> seen;
    for (int i = 0; i < for_zones.size(); ++i) {
      const Path name = zones.Index(i).Child("name");
      const std::string& zone = for_zones[i].name();
      if (!seen.insert(zone).second) {
        errs.push_back(Duplicate(name, GoQuote(zone)));
      }
      for (std::string& m : machinery::IsValidLabelValue(zone)) {
        errs.push_back(InvalidString(name, zone, m));
      }
    }
  }
  return errs;
}

FieldErrors ValidatePorts(const EndpointSlice& slice) {
  const Path ports("ports");
  if (slice.ports_size() > kMaxPorts) {
    return {TooMany(ports, slice.ports_size(), kMaxPorts)};
  }
  FieldErrors errs;
  std::set<std::string> names;
  for (int i = 0; i < slice.ports_size(); ++i) {
    const EndpointPort& port = slice.ports(i);
    const Path idx = ports.Index(i);
    if (!port.name().empty()) {
      Append(&errs,
             validation::ValidateDNS1123Label(port.name(), idx.Child("name")));
    }
    if (!names.insert(port.name()).second) {
      errs.push_back(Duplicate(idx.Child("name"), GoQuote(port.name())));
    }
    if (!port.has_protocol()) {
      errs.push_back(Required(idx.Child("protocol")));
    } else if (port.protocol() != "TCP" && port.protocol() != "UDP" &&
               port.protocol() != "SCTP") {
      errs.push_back(NotSupportedString(idx.Child("protocol"), port.protocol(),
                                        {"SCTP", "TCP", "UDP"}));
    }
    if (port.has_appprotocol()) {
      Append(&errs, validation::ValidateQualifiedName(
                        port.appprotocol(), idx.Child("appProtocol")));
    }
  }
  return errs;
}

FieldErrors ValidateEndpointSlice(const EndpointSlice& slice) {
  FieldErrors errs = validation::ValidateObjectMeta(
      slice.metadata(), true, validation::NameRule::kDNS1123Subdomain);
  const Path address_type("addressType");
  const std::string& type = slice.addresstype();
  if (type.empty()) {
    errs.push_back(Required(address_type));
  } else if (type != "IPv4" && type != "IPv6" && type != "FQDN") {
    errs.push_back(
        NotSupportedString(address_type, type, {"FQDN", "IPv4", "IPv6"}));
  }
  const Path endpoints("endpoints");
  if (slice.endpoints_size() > kMaxEndpoints) {
    errs.push_back(TooMany(endpoints, slice.endpoints_size(), kMaxEndpoints));
  } else {
    for (int i = 0; i < slice.endpoints_size(); ++i) {
      Append(&errs,
             ValidateEndpoint(slice.endpoints(i), type, endpoints.Index(i)));
    }
  }
  Append(&errs, ValidatePorts(slice));
  return errs;
}

class EndpointSliceStrategy : public TypedStrategy<EndpointSlice> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::EndpointSliceColumns();
  }

 protected:
  // SetDefaults_EndpointPort.
  void DefaultT(EndpointSlice* slice) const override {
    for (auto& port : *slice->mutable_ports()) {
      if (!port.has_name()) port.set_name("");
      if (!port.has_protocol()) port.set_protocol("TCP");
    }
  }
  void CreateT(EndpointSlice* slice) const override {
    slice->mutable_metadata()->set_generation(1);
  }
  // The generation moves when anything but metadata, or the labels, change.
  void UpdateT(EndpointSlice* slice, const EndpointSlice& old) const override {
    EndpointSlice now_body = *slice, old_body = old;
    now_body.clear_metadata();
    old_body.clear_metadata();
    if (!validation::Equal(now_body, old_body) ||
        !validation::MapsEqual(slice->metadata().labels(),
                               old.metadata().labels())) {
      slice->mutable_metadata()->set_generation(old.metadata().generation() +
                                                1);
    }
  }
  FieldErrors ValidateCreateT(const EndpointSlice& slice) const override {
    return ValidateEndpointSlice(slice);
  }
  FieldErrors ValidateUpdateT(const EndpointSlice& slice,
                              const EndpointSlice& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(slice.metadata(), old.metadata());
    Append(&errs, ValidateEndpointSlice(slice));
    Append(&errs, validation::ValidateImmutable(
                      slice.addresstype() == old.addresstype(),
                      GoQuote(slice.addresstype()), Path("addressType")));
    return errs;
  }
  std::vector<TableCell> RowT(const EndpointSlice& slice,
                              WallTime now) const override {
    return printers::EndpointSliceRow(slice, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewEndpointSliceStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<EndpointSliceStrategy>(r);
}

}  // namespace kplane::apiserver
