// The endpoints strategy (core/v1 Endpoints; upstream:
// pkg/registry/core/endpoint/strategy.go, ValidateEndpoints in
// pkg/apis/core/validation and SetDefaults_EndpointPort of Kubernetes 1.32).
//
// Endpoints are written by the endpoints controller for Services with a
// selector, and by clients for their own (Patroni keeps its leader lock in
// an Endpoints' annotations): nothing here needs a Service. A name is a
// DNS-1123 subdomain; each subset needs an address (ready or not); each
// address a valid IP that is not unspecified, loopback or link-local; each
// port a number, a protocol (defaulted to TCP) and, when the subset has
// several ports, a DNS-1123 label name.
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "objects/endpoints_types.h"

namespace kplane::apiserver {

namespace {

using objects::corev1::EndpointAddress;
using objects::corev1::EndpointPort;
using objects::corev1::Endpoints;
using validation::Append;
using validation::InvalidInt;
using validation::InvalidString;
using validation::NotSupportedString;
using validation::Path;
using validation::Required;

FieldErrors ValidateEndpointAddress(const EndpointAddress& address,
                                    const Path& p) {
  FieldErrors errs = validation::ValidateValidIP(address.ip(), p.Child("ip"));
  if (!address.hostname().empty()) {
    Append(&errs, validation::ValidateDNS1123Label(address.hostname(),
                                                   p.Child("hostname")));
  }
  if (address.has_nodename()) {
    Append(&errs, validation::ValidateDNS1123Subdomain(address.nodename(),
                                                       p.Child("nodeName")));
  }
  Append(&errs, validation::ValidateNonSpecialIP(address.ip(), p.Child("ip")));
  return errs;
}

FieldErrors ValidateEndpointPort(const EndpointPort& port, bool require_name,
                                 const Path& p) {
  FieldErrors errs;
  if (require_name && port.name().empty()) {
    errs.push_back(Required(p.Child("name")));
  } else if (!port.name().empty()) {
    Append(&errs,
           validation::ValidateDNS1123Label(port.name(), p.Child("name")));
  }
  for (auto& m : validation::IsValidPortNum(port.port())) {
    errs.push_back(InvalidInt(p.Child("port"), port.port(), m));
  }
  if (port.protocol().empty()) {
    errs.push_back(Required(p.Child("protocol")));
  } else if (port.protocol() != "TCP" && port.protocol() != "UDP" &&
             port.protocol() != "SCTP") {
    errs.push_back(NotSupportedString(p.Child("protocol"), port.protocol(),
                                      {"SCTP", "TCP", "UDP"}));
  }
  if (port.has_appprotocol()) {
    Append(&errs, validation::ValidateQualifiedName(port.appprotocol(),
                                                    p.Child("appProtocol")));
  }
  return errs;
}

FieldErrors ValidateEndpoints(const Endpoints& ep) {
  FieldErrors errs = validation::ValidateObjectMeta(
      ep.metadata(), true, validation::NameRule::kDNS1123Subdomain);
  const Path subsets("subsets");
  for (int i = 0; i < ep.subsets_size(); ++i) {
    const auto& ss = ep.subsets(i);
    const Path idx = subsets.Index(i);
    if (ss.addresses().empty() && ss.notreadyaddresses().empty()) {
      errs.push_back(
          Required(idx, "must specify `addresses` or `notReadyAddresses`"));
    }
    for (int a = 0; a < ss.addresses_size(); ++a) {
      Append(&errs, ValidateEndpointAddress(ss.addresses(a),
                                            idx.Child("addresses").Index(a)));
    }
    for (int a = 0; a < ss.notreadyaddresses_size(); ++a) {
      Append(&errs,
             ValidateEndpointAddress(ss.notreadyaddresses(a),
                                     idx.Child("notReadyAddresses").Index(a)));
    }
    for (int n = 0; n < ss.ports_size(); ++n) {
      Append(&errs, ValidateEndpointPort(ss.ports(n), ss.ports_size() > 1,
                                         idx.Child("ports").Index(n)));
    }
  }
  return errs;
}

class EndpointsStrategy : public TypedStrategy<Endpoints> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::EndpointsColumns();
  }

 protected:
  // SetDefaults_EndpointPort.
  void DefaultT(Endpoints* ep) const override {
    for (auto& ss : *ep->mutable_subsets()) {
      for (auto& port : *ss.mutable_ports()) {
        if (port.protocol().empty()) port.set_protocol("TCP");
      }
    }
  }
  FieldErrors ValidateCreateT(const Endpoints& ep) const override {
    return ValidateEndpoints(ep);
  }
  FieldErrors ValidateUpdateT(const Endpoints& ep,
                              const Endpoints& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(ep.metadata(), old.metadata());
    Append(&errs, ValidateEndpoints(ep));
    return errs;
  }
  std::vector<TableCell> RowT(const Endpoints& ep,
                              WallTime now) const override {
    return printers::EndpointsRow(ep, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewEndpointsStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<EndpointsStrategy>(r);
}

}  // namespace kplane::apiserver
