// The service strategy (core/v1 Service; upstream:
// pkg/registry/core/service/strategy.go of Kubernetes 1.32).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "apiserver/registry/defaults.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using validation::Append;
using validation::Duplicate;
using validation::Forbidden;
using validation::Invalid;
using validation::InvalidInt;
using validation::InvalidString;
using validation::NameRule;
using validation::NotSupportedString;
using validation::Path;
using validation::Required;

bool IsHeadless(const Service& s) {
  return !s.spec().clusterips().empty() && s.spec().clusterips(0) == "None";
}

FieldErrors ValidateServicePort(const ServicePort& sp, bool require_name,
                                std::set<std::string>* names, const Path& p) {
  FieldErrors errs;
  if (require_name && sp.name().empty()) {
    errs.push_back(Required(p.Child("name")));
  } else if (!sp.name().empty()) {
    Append(&errs, validation::ValidateDNS1123Label(sp.name(), p.Child("name")));
    if (!names->insert(sp.name()).second) {
      errs.push_back(Duplicate(p.Child("name"), GoQuote(sp.name())));
    }
  }
  for (auto& m : validation::IsValidPortNum(sp.port())) {
    errs.push_back(InvalidInt(p.Child("port"), sp.port(), m));
  }
  if (sp.protocol().empty()) {
    errs.push_back(Required(p.Child("protocol")));
  } else if (sp.protocol() != "TCP" && sp.protocol() != "UDP" &&
             sp.protocol() != "SCTP") {
    errs.push_back(NotSupportedString(p.Child("protocol"), sp.protocol(),
                                      {"SCTP", "TCP", "UDP"}));
  }
  const auto& tp = sp.targetport();
  if (tp.type() == 0) {
    for (auto& m : validation::IsValidPortNum(tp.intval())) {
      errs.push_back(InvalidInt(p.Child("targetPort"), tp.intval(), m));
    }
  } else {
    for (auto& m : validation::IsValidPortName(tp.strval())) {
      errs.push_back(InvalidString(p.Child("targetPort"), tp.strval(), m));
    }
  }
  if (sp.has_appprotocol()) {
    Append(&errs, validation::ValidateQualifiedName(sp.appprotocol(),
                                                    p.Child("appProtocol")));
  }
  return errs;
}

FieldErrors ValidateClusterIPs(const Service& svc) {
  const ServiceSpec& spec = svc.spec();
  if (spec.type() == "ExternalName") return {};
  FieldErrors errs;
  Path sp("spec");
  Path ips = sp.Child("clusterIPs");
  if (!spec.clusterip().empty()) {
    if (spec.clusterips().empty()) {
      errs.push_back(Required(ips));
    } else if (spec.clusterips(0) != spec.clusterip()) {
      errs.push_back(Invalid(ips, validation::GoStringSlice(spec.clusterips()),
                             "first value must match `clusterIP`"));
    }
  } else if (!spec.clusterips().empty()) {
    errs.push_back(Invalid(ips, validation::GoStringSlice(spec.clusterips()),
                           "must be empty when `clusterIP` is not specified"));
  }
  std::set<std::string> families;
  for (int i = 0; i < spec.ipfamilies_size(); ++i) {
    const std::string& f = spec.ipfamilies(i);
    if (f != "IPv4" && f != "IPv6") {
      errs.push_back(NotSupportedString(sp.Child("ipFamilies").Index(i), f,
                                        {"IPv4", "IPv6"}));
    }
    if (!families.insert(f).second) {
      errs.push_back(Duplicate(sp.Child("ipFamilies").Index(i), GoQuote(f)));
    }
  }
  if (spec.has_ipfamilypolicy()) {
    const std::string& pol = spec.ipfamilypolicy();
    if (pol != "SingleStack" && pol != "PreferDualStack" &&
        pol != "RequireDualStack") {
      errs.push_back(NotSupportedString(
          sp.Child("ipFamilyPolicy"), pol,
          {"PreferDualStack", "RequireDualStack", "SingleStack"}));
    }
  }
  bool invalid_ips = false;
  for (int i = 0; i < spec.clusterips_size(); ++i) {
    const std::string& ip = spec.clusterips(i);
    if (i == 0 && ip == "None") {
      if (spec.clusterips_size() > 1) {
        invalid_ips = true;
        errs.push_back(Invalid(ips,
                               validation::GoStringSlice(spec.clusterips()),
                               "'None' must be the first and only value"));
      }
      continue;
    }
    auto e = validation::ValidateValidIP(ip, ips.Index(i));
    if (!e.empty()) invalid_ips = true;
    Append(&errs, std::move(e));
  }
  if (spec.clusterips_size() > 2) {
    errs.push_back(Invalid(ips, validation::GoStringSlice(spec.clusterips()),
                           "may only hold up to 2 values"));
  }
  if (invalid_ips) return errs;
  if (spec.clusterips_size() == 2 &&
      validation::IsIPv6(spec.clusterips(0)) ==
          validation::IsIPv6(spec.clusterips(1))) {
    errs.push_back(Invalid(ips, validation::GoStringSlice(spec.clusterips()),
                           "may specify no more than one IP for each IP "
                           "family"));
  }
  if (!IsHeadless(svc)) {
    for (int i = 0; i < spec.clusterips_size() && i < spec.ipfamilies_size();
         ++i) {
      const std::string& ip = spec.clusterips(i);
      std::string idx = std::to_string(i);
      if (spec.ipfamilies(i) == "IPv4" && validation::IsIPv6(ip)) {
        errs.push_back(InvalidString(ips.Index(i), ip,
                                     "expected an IPv4 value as indicated by "
                                     "`ipFamilies[" +
                                         idx + "]`"));
      }
      if (spec.ipfamilies(i) == "IPv6" && !validation::IsIPv6(ip)) {
        errs.push_back(InvalidString(ips.Index(i), ip,
                                     "expected an IPv6 value as indicated by "
                                     "`ipFamilies[" +
                                         idx + "]`"));
      }
    }
  }
  return errs;
}

FieldErrors ValidateService(const Service& svc) {
  const ServiceSpec& spec = svc.spec();
  FieldErrors errs = validation::ValidateObjectMeta(svc.metadata(), true,
                                                    NameRule::kDNS1035Label);
  Path sp("spec");
  const std::string& type = spec.type();
  if (spec.ports().empty() && !IsHeadless(svc) && type != "ExternalName") {
    errs.push_back(Required(sp.Child("ports")));
  }
  if (type == "LoadBalancer") {
    for (int i = 0; i < spec.ports_size(); ++i) {
      if (spec.ports(i).port() == 10250) {
        errs.push_back(InvalidInt(sp.Child("ports").Index(i), 10250,
                                  "may not expose port 10250 externally since "
                                  "it is used by kubelet"));
      }
    }
    if (IsHeadless(svc)) {
      errs.push_back(InvalidString(sp.Child("clusterIPs").Index(0),
                                   spec.clusterips(0),
                                   "may not be set to 'None' for LoadBalancer "
                                   "services"));
    }
  } else if (type == "NodePort") {
    if (IsHeadless(svc)) {
      errs.push_back(InvalidString(sp.Child("clusterIPs").Index(0),
                                   spec.clusterips(0),
                                   "may not be set to 'None' for NodePort "
                                   "services"));
    }
  } else if (type == "ExternalName") {
    if (!spec.clusterips().empty()) {
      errs.push_back(Forbidden(sp.Child("clusterIPs"),
                               "may not be set for ExternalName services"));
    }
    if (!spec.ipfamilies().empty()) {
      errs.push_back(Forbidden(sp.Child("ipFamilies"),
                               "may not be set for ExternalName services"));
    }
    if (spec.has_ipfamilypolicy()) {
      errs.push_back(Forbidden(sp.Child("ipFamilyPolicy"),
                               "may not be set for ExternalName services"));
    }
    std::string cname = spec.externalname();
    if (!cname.empty() && cname.back() == '.') cname.pop_back();
    if (!cname.empty()) {
      Append(&errs, validation::ValidateDNS1123Subdomain(
                        cname, sp.Child("externalName")));
    } else {
      errs.push_back(Required(sp.Child("externalName")));
    }
  }
  std::set<std::string> names;
  for (int i = 0; i < spec.ports_size(); ++i) {
    Append(&errs, ValidateServicePort(spec.ports(i), spec.ports_size() > 1,
                                      &names, sp.Child("ports").Index(i)));
  }
  Append(&errs,
         validation::ValidateLabels(spec.selector(), sp.Child("selector")));
  const std::string& aff = spec.sessionaffinity();
  if (aff.empty()) {
    errs.push_back(Required(sp.Child("sessionAffinity")));
  } else if (aff != "ClientIP" && aff != "None") {
    errs.push_back(NotSupportedString(sp.Child("sessionAffinity"), aff,
                                      {"ClientIP", "None"}));
  }
  Path ap = sp.Child("sessionAffinityConfig");
  if (aff == "ClientIP") {
    constexpr char kWhen[] = "when session affinity type is ClientIP";
    const auto& cfg = spec.sessionaffinityconfig();
    if (!spec.has_sessionaffinityconfig()) {
      errs.push_back(Required(ap, kWhen));
    } else if (!cfg.has_clientip()) {
      errs.push_back(Required(ap.Child("clientIP"), kWhen));
    } else if (!cfg.clientip().has_timeoutseconds()) {
      errs.push_back(
          Required(ap.Child("clientIP").Child("timeoutSeconds"), kWhen));
    } else if (cfg.clientip().timeoutseconds() <= 0 ||
               cfg.clientip().timeoutseconds() > 86400) {
      errs.push_back(InvalidInt(ap.Child("clientIP").Child("timeoutSeconds"),
                                cfg.clientip().timeoutseconds(),
                                "must be greater than 0 and less than 86400"));
    }
  } else if (aff == "None" && spec.has_sessionaffinityconfig()) {
    errs.push_back(
        Forbidden(ap, "must not be set when session affinity is None"));
  }
  Append(&errs, ValidateClusterIPs(svc));
  for (int i = 0; i < spec.externalips_size(); ++i) {
    Path ip = sp.Child("externalIPs").Index(i);
    auto e = validation::ValidateValidIP(spec.externalips(i), ip);
    if (!e.empty()) {
      Append(&errs, std::move(e));
    } else if (spec.externalips(i) == "0.0.0.0" ||
               spec.externalips(i) == "::" ||
               spec.externalips(i).rfind("127.", 0) == 0 ||
               spec.externalips(i) == "::1") {
      errs.push_back(InvalidString(
          ip, spec.externalips(i),
          spec.externalips(i) == "0.0.0.0" || spec.externalips(i) == "::"
              ? "may not be unspecified (0.0.0.0, ::)"
              : "may not be in the loopback range "
                "(127.0.0.0/8, ::1/128)"));
    }
  }
  if (type.empty()) {
    errs.push_back(Required(sp.Child("type")));
  } else if (type != "ClusterIP" && type != "ExternalName" &&
             type != "LoadBalancer" && type != "NodePort") {
    errs.push_back(NotSupportedString(
        sp.Child("type"), type,
        {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}));
  }
  if (type == "ClusterIP") {
    for (int i = 0; i < spec.ports_size(); ++i) {
      if (spec.ports(i).nodeport() != 0) {
        errs.push_back(Forbidden(sp.Child("ports").Index(i).Child("nodePort"),
                                 "may not be used when `type` is 'ClusterIP'"));
      }
    }
  }
  std::set<std::pair<std::string, int>> node_ports;
  for (int i = 0; i < spec.ports_size(); ++i) {
    const auto& p = spec.ports(i);
    if (p.nodeport() == 0) continue;
    if (!node_ports.insert({p.protocol(), p.nodeport()}).second) {
      errs.push_back(Duplicate(sp.Child("ports").Index(i).Child("nodePort"),
                               std::to_string(p.nodeport())));
    }
  }
  std::set<std::pair<std::string, int>> ports;
  for (int i = 0; i < spec.ports_size(); ++i) {
    const auto& p = spec.ports(i);
    if (!ports.insert({p.protocol(), p.port()}).second) {
      errs.push_back(Duplicate(
          sp.Child("ports").Index(i),
          "core.ServicePort{Name:\"\", Protocol:" + GoQuote(p.protocol()) +
              ", AppProtocol:(*string)(nil), Port:" + std::to_string(p.port()) +
              ", TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, "
              "NodePort:0}"));
    }
  }
  if (!spec.loadbalancersourceranges().empty()) {
    Path lp = sp.Child("LoadBalancerSourceRanges");
    if (type != "LoadBalancer") {
      errs.push_back(Forbidden(lp,
                               "may only be used when `type` is "
                               "'LoadBalancer'"));
    }
    for (int i = 0; i < spec.loadbalancersourceranges_size(); ++i) {
      std::string v(StripWhitespace(spec.loadbalancersourceranges(i)));
      Append(&errs, validation::ValidateCIDR(v, lp.Index(i)));
    }
  }
  if (spec.has_allocateloadbalancernodeports() && type != "LoadBalancer") {
    errs.push_back(Forbidden(sp.Child("allocateLoadBalancerNodePorts"),
                             "may only be used when `type` is 'LoadBalancer'"));
  }
  if (type == "LoadBalancer" && !spec.has_allocateloadbalancernodeports()) {
    errs.push_back(Required(Path("allocateLoadBalancerNodePorts")));
  }
  bool externally = type == "LoadBalancer" || type == "NodePort" ||
                    (type == "ClusterIP" && !spec.externalips().empty());
  if (!externally) {
    if (!spec.externaltrafficpolicy().empty()) {
      errs.push_back(InvalidString(sp.Child("externalTrafficPolicy"),
                                   spec.externaltrafficpolicy(),
                                   "may only be set for externally-accessible "
                                   "services"));
    }
  } else if (spec.externaltrafficpolicy().empty()) {
    errs.push_back(Required(sp.Child("externalTrafficPolicy")));
  } else if (spec.externaltrafficpolicy() != "Cluster" &&
             spec.externaltrafficpolicy() != "Local") {
    errs.push_back(NotSupportedString(sp.Child("externalTrafficPolicy"),
                                      spec.externaltrafficpolicy(),
                                      {"Cluster", "Local"}));
  }
  bool needs_hc =
      type == "LoadBalancer" && spec.externaltrafficpolicy() == "Local";
  if (!needs_hc) {
    if (spec.healthchecknodeport() != 0) {
      errs.push_back(InvalidInt(sp.Child("healthCheckNodePort"),
                                spec.healthchecknodeport(),
                                "may only be set when `type` is 'LoadBalancer' "
                                "and `externalTrafficPolicy` is 'Local'"));
    }
  } else if (spec.healthchecknodeport() == 0) {
    errs.push_back(Required(sp.Child("healthCheckNodePort")));
  } else {
    for (auto& m : validation::IsValidPortNum(spec.healthchecknodeport())) {
      errs.push_back(InvalidInt(sp.Child("healthCheckNodePort"),
                                spec.healthchecknodeport(), m));
    }
  }
  if (!spec.has_internaltrafficpolicy()) {
    if (type == "NodePort" || type == "LoadBalancer" || type == "ClusterIP") {
      errs.push_back(Required(sp.Child("internalTrafficPolicy")));
    }
  } else if (spec.internaltrafficpolicy() != "Cluster" &&
             spec.internaltrafficpolicy() != "Local") {
    errs.push_back(NotSupportedString(sp.Child("internalTrafficPolicy"),
                                      spec.internaltrafficpolicy(),
                                      {"Cluster", "Local"}));
  }
  if (spec.has_trafficdistribution() &&
      spec.trafficdistribution() != "PreferClose") {
    errs.push_back(NotSupportedString(sp.Child("trafficDistribution"),
                                      spec.trafficdistribution(),
                                      {"PreferClose"}));
  }
  return errs;
}

FieldErrors ValidateServiceUpdate(const Service& svc, const Service& old) {
  FieldErrors errs =
      validation::ValidateObjectMetaUpdate(svc.metadata(), old.metadata());
  const ServiceSpec& ns = svc.spec();
  const ServiceSpec& os = old.spec();
  Path ips = Path("spec").Child("clusterIPs");
  if (ns.type() != "ExternalName" && os.type() != "ExternalName" &&
      !(IsHeadless(svc) && IsHeadless(old))) {
    std::string all = validation::GoStringSlice(ns.clusterips());
    if (os.clusterips_size() == ns.clusterips_size()) {
      for (int i = 0; i < os.clusterips_size(); ++i) {
        if (os.clusterips(i) != ns.clusterips(i)) {
          errs.push_back(Invalid(ips.Index(i), all, "may not change once set"));
        }
      }
    } else if (os.clusterips_size() > ns.clusterips_size()) {
      if (ns.clusterips().empty()) {
        errs.push_back(
            Invalid(ips.Index(0), all, "primary clusterIP can not be unset"));
      } else if (ns.clusterips(0) != os.clusterips(0)) {
        errs.push_back(Invalid(ips.Index(0), all, "may not change once set"));
      }
      if (ns.clusterips_size() == 1 &&
          (!ns.has_ipfamilypolicy() || ns.ipfamilypolicy() != "SingleStack")) {
        errs.push_back(Invalid(
            Path("spec").Child("ipFamilyPolicy"),
            ns.has_ipfamilypolicy() ? GoQuote(ns.ipfamilypolicy()) : "null",
            "must be set to 'SingleStack' when releasing "
            "the secondary clusterIP"));
      }
    } else if (!os.clusterips().empty() &&
               ns.clusterips(0) != os.clusterips(0)) {
      errs.push_back(Invalid(ips.Index(0), all, "may not change once set"));
    }
  }
  if (os.type() == "LoadBalancer" && os.externaltrafficpolicy() == "Local" &&
      ns.type() == "LoadBalancer" && ns.externaltrafficpolicy() == "Local" &&
      ns.healthchecknodeport() != os.healthchecknodeport()) {
    errs.push_back(Forbidden(Path("spec").Child("healthCheckNodePort"),
                             "field is immutable"));
  }
  Append(&errs, ValidateService(svc));
  return errs;
}

template <typename Repeated>
bool SameStrings(const Repeated& a, const Repeated& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// dropTypeDependentFields (kube's service strategy): a Service is a union
// discriminated by `type`, and a patch of the type alone keeps what the old
// type used. On an update that switches to a type that does not use a
// field, the field is cleared when the request left it as it was (so kube
// may have filled it in), and the allocator gives back the freed IP and
// ports; a value the request changed is the user's and still meets
// validation.
void DropTypeDependentFields(Service* svc, const Service& old) {
  ServiceSpec* ns = svc->mutable_spec();
  const ServiceSpec& os = old.spec();
  auto needs_cluster_ip = [](const ServiceSpec& sp) {
    return sp.type() != "ExternalName";
  };
  if (needs_cluster_ip(os) && !needs_cluster_ip(*ns)) {
    if (ns->clusterip() == os.clusterip() &&
        SameStrings(ns->clusterips(), os.clusterips())) {
      ns->clear_clusterip();
      ns->clear_clusterips();
    }
    if (SameStrings(ns->ipfamilies(), os.ipfamilies())) ns->clear_ipfamilies();
    if (ns->ipfamilypolicy() == os.ipfamilypolicy()) {
      ns->clear_ipfamilypolicy();
    }
  }
  auto needs_node_port = [](const ServiceSpec& sp) {
    return sp.type() == "NodePort" || sp.type() == "LoadBalancer";
  };
  if (needs_node_port(os) && !needs_node_port(*ns)) {
    // Ports may be added, removed or changed, as long as no node port is
    // new.
    std::set<int> old_ports;
    for (const auto& p : os.ports()) old_ports.insert(p.nodeport());
    bool same = true;
    for (const auto& p : ns->ports()) {
      if (p.nodeport() != 0 && !old_ports.count(p.nodeport())) same = false;
    }
    if (same) {
      for (auto& p : *ns->mutable_ports()) p.clear_nodeport();
    }
  }
  auto needs_hc = [](const ServiceSpec& sp) {
    return sp.type() == "LoadBalancer" && sp.externaltrafficpolicy() == "Local";
  };
  if (needs_hc(os) && !needs_hc(*ns) &&
      ns->healthchecknodeport() == os.healthchecknodeport()) {
    ns->clear_healthchecknodeport();
  }
  const bool was_lb = os.type() == "LoadBalancer";
  const bool is_lb = ns->type() == "LoadBalancer";
  if (was_lb && !is_lb) {
    if (ns->has_allocateloadbalancernodeports() &&
        os.has_allocateloadbalancernodeports() &&
        ns->allocateloadbalancernodeports() ==
            os.allocateloadbalancernodeports()) {
      ns->clear_allocateloadbalancernodeports();
    }
    if (ns->has_loadbalancerclass() == os.has_loadbalancerclass() &&
        ns->loadbalancerclass() == os.loadbalancerclass()) {
      ns->clear_loadbalancerclass();
    }
  }
  auto needs_traffic_policy = [](const ServiceSpec& sp) {
    return sp.type() == "NodePort" || sp.type() == "LoadBalancer";
  };
  if (needs_traffic_policy(os) && !needs_traffic_policy(*ns) &&
      ns->externaltrafficpolicy() == os.externaltrafficpolicy()) {
    ns->clear_externaltrafficpolicy();
  }
  // The load balancer is going away; kube does not make clients wait for
  // its asynchronous de-provisioning to see that.
  if (!is_lb) svc->mutable_status()->mutable_loadbalancer()->Clear();
}

class ServiceStrategy : public TypedStrategy<Service> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "metadata.namespace", "spec.clusterIP",
            "spec.type"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::ServiceColumns();
  }

 protected:
  void DefaultT(Service* s) const override { defaults::DefaultService(s); }

  void CreateT(Service* s) const override {
    s->mutable_status()->Clear();
    s->mutable_status()->mutable_loadbalancer();
    ServiceSpec* spec = s->mutable_spec();
    // normalizeClusterIPs: an old client sets only the singular field.
    if (!spec->clusterip().empty() && spec->clusterips().empty()) {
      spec->add_clusterips(spec->clusterip());
    }
    // What the IP allocator would fill in for a single-stack IPv4 cluster
    // (kplane allocates no virtual IPs, see docs/api-validation.md).
    if (spec->type() != "ExternalName") {
      if (!spec->has_ipfamilypolicy()) spec->set_ipfamilypolicy("SingleStack");
      if (spec->ipfamilies().empty()) {
        bool v6 = !spec->clusterip().empty() && spec->clusterip() != "None" &&
                  validation::IsIPv6(spec->clusterip());
        spec->add_ipfamilies(v6 ? "IPv6" : "IPv4");
      }
    }
  }

  void UpdateT(Service* s, const Service& old) const override {
    *s->mutable_status() = old.status();
    ServiceSpec* ns = s->mutable_spec();
    const ServiceSpec& os = old.spec();
    // normalizeClusterIPs for an update.
    if (!os.clusterips().empty() && ns->clusterips().empty() &&
        os.clusterip() == ns->clusterip()) {
      *ns->mutable_clusterips() = os.clusterips();
    }
    auto same_ips = [&] {
      if (os.clusterips_size() != ns->clusterips_size()) return false;
      for (int i = 0; i < os.clusterips_size(); ++i) {
        if (os.clusterips(i) != ns->clusterips(i)) return false;
      }
      return true;
    };
    if (os.clusterip() != ns->clusterip()) {
      if (!os.clusterip().empty() && ns->clusterip().empty()) {
        if (same_ips()) ns->clear_clusterips();
      } else if (same_ips()) {
        ns->clear_clusterips();
        ns->add_clusterips(ns->clusterip());
      }
    }
    // patchAllocatedValues: keep what was allocated when the client omits it
    // (kubectl apply never sends clusterIP or nodePort).
    bool needs_ip = os.type() != "ExternalName" && ns->type() != "ExternalName";
    if (needs_ip) {
      if (ns->clusterip().empty()) ns->set_clusterip(os.clusterip());
      if (ns->clusterips().empty() && !os.clusterips().empty()) {
        *ns->mutable_clusterips() = os.clusterips();
      }
      if (ns->ipfamilies().empty()) *ns->mutable_ipfamilies() = os.ipfamilies();
      if (!ns->has_ipfamilypolicy() && os.has_ipfamilypolicy()) {
        ns->set_ipfamilypolicy(os.ipfamilypolicy());
      }
    }
    auto needs_node_port = [](const ServiceSpec& sp) {
      return sp.type() == "NodePort" ||
             (sp.type() == "LoadBalancer" &&
              (!sp.has_allocateloadbalancernodeports() ||
               sp.allocateloadbalancernodeports()));
    };
    if (needs_node_port(os) && needs_node_port(*ns)) {
      std::set<int> used_old, used_new;
      for (const auto& p : os.ports()) {
        if (p.nodeport() != 0) used_old.insert(p.nodeport());
      }
      for (const auto& p : ns->ports()) {
        if (p.nodeport() != 0) used_new.insert(p.nodeport());
      }
      std::map<std::string, int> by_name;
      for (const auto& p : os.ports()) by_name[p.name()] = p.nodeport();
      for (auto& p : *ns->mutable_ports()) {
        if (p.nodeport() != 0) continue;
        int old_value = by_name.count(p.name()) ? by_name[p.name()] : 0;
        bool used = used_old.count(old_value) && used_new.count(old_value);
        if (!used) p.set_nodeport(old_value);
      }
    }
    auto needs_hc = [](const ServiceSpec& sp) {
      return sp.type() == "LoadBalancer" &&
             sp.externaltrafficpolicy() == "Local";
    };
    if (needs_hc(os) && needs_hc(*ns) && ns->healthchecknodeport() == 0) {
      ns->set_healthchecknodeport(os.healthchecknodeport());
    }
    DropTypeDependentFields(s, old);
  }

  void StatusUpdateT(Service* s, const Service& old) const override {
    *s->mutable_spec() = old.spec();
  }

  FieldErrors ValidateCreateT(const Service& s) const override {
    return ValidateService(s);
  }
  FieldErrors ValidateUpdateT(const Service& s,
                              const Service& old) const override {
    return ValidateServiceUpdate(s, old);
  }
  FieldErrors ValidateStatusUpdateT(const Service& s,
                                    const Service& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(s.metadata(), old.metadata());
    Path ip = Path("status").Child("loadBalancer").Child("ingress");
    const auto& ingress = s.status().loadbalancer().ingress();
    for (int i = 0; i < ingress.size(); ++i) {
      const auto& ing = ingress[i];
      if (!ing.ip().empty()) {
        Append(&errs,
               validation::ValidateValidIP(ing.ip(), ip.Index(i).Child("ip")));
      }
      if (ing.has_ipmode()) {
        if (ing.ip().empty()) {
          errs.push_back(
              Forbidden(ip.Index(i).Child("ipMode"),
                        "may not be specified when `ip` is not set"));
        } else if (ing.ipmode() != "VIP" && ing.ipmode() != "Proxy") {
          errs.push_back(NotSupportedString(ip.Index(i).Child("ipMode"),
                                            ing.ipmode(), {"Proxy", "VIP"}));
        }
      } else if (!ing.ip().empty() && s.spec().type() == "LoadBalancer") {
        errs.push_back(Required(ip.Index(i).Child("ipMode"),
                                "must be specified when `ip` is set"));
      }
      if (!ing.hostname().empty()) {
        Append(&errs, validation::ValidateDNS1123Subdomain(
                          ing.hostname(), ip.Index(i).Child("hostname")));
        if (validation::IsIP(ing.hostname())) {
          errs.push_back(InvalidString(ip.Index(i).Child("hostname"),
                                       ing.hostname(),
                                       "must be a DNS name, not "
                                       "an IP address"));
        }
      }
    }
    return errs;
  }
  std::optional<std::string> FieldValueT(const Service& s,
                                         std::string_view f) const override {
    if (f == "spec.clusterIP") return s.spec().clusterip();
    if (f == "spec.type") return s.spec().type();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Service& s, WallTime now) const override {
    return printers::ServiceRow(s, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewServiceStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<ServiceStrategy>(r);
}

}  // namespace kplane::apiserver
