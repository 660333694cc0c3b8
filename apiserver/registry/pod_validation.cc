#include "apiserver/registry/pod_validation.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <set>

#include "apiserver/registry/pod_validation_internal.h"
#include "base/json.h"
#include "base/strings.h"
#include "objects/codec.h"
#include "objects/machinery/quantity.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver::podvalidation {

// The topics live in pod_validation_<topic>.cc; their shared names and
// pieces in pod_validation_internal.h.
using namespace internal;  // NOLINT: one file, split by topic

namespace {

FieldErrors ValidatePodDNSConfig(const PodSpec& spec, const Path& p) {
  FieldErrors errs;
  if (spec.dnspolicy() == "None" && !spec.has_dnsconfig()) {
    return {Required(p, "must provide `dnsConfig` when `dnsPolicy` is None")};
  }
  if (!spec.has_dnsconfig()) return errs;
  const PodDNSConfig& c = spec.dnsconfig();
  if (spec.dnspolicy() == "None" && c.nameservers().empty()) {
    errs.push_back(Required(p.Child("nameservers"),
                            "must provide at least one DNS nameserver when "
                            "`dnsPolicy` is None"));
  }
  if (c.nameservers_size() > 3) {
    errs.push_back(Invalid(p.Child("nameservers"),
                           validation::GoStringSlice(c.nameservers()),
                           "must not have more than 3 nameservers"));
  }
  for (int i = 0; i < c.nameservers_size(); ++i) {
    if (!validation::IsIP(c.nameservers(i))) {
      errs.push_back(InvalidString(p.Child("nameservers").Index(i),
                                   c.nameservers(i),
                                   "must be valid IP address"));
    }
  }
  if (c.searches_size() > 32) {
    errs.push_back(Invalid(p.Child("searches"),
                           validation::GoStringSlice(c.searches()),
                           "must not have more than 32 search paths"));
  }
  for (int i = 0; i < c.searches_size(); ++i) {
    std::string s = c.searches(i);
    if (s == ".") continue;
    if (!s.empty() && s.back() == '.') s.pop_back();
    Append(&errs, validation::ValidateDNS1123Subdomain(
                      s, p.Child("searches").Index(i)));
  }
  for (int i = 0; i < c.options_size(); ++i) {
    if (c.options(i).name().empty()) {
      errs.push_back(Required(p.Child("options").Index(i),
                              "Option.Name must not be empty"));
    }
  }
  return errs;
}

}  // namespace

FieldErrors ValidatePodSpec(const PodSpec& spec, const Path& p,
                            bool resource_is_pod) {
  FieldErrors errs;
  if (!spec.has_terminationgraceperiodseconds()) {
    errs.push_back(Required(p.Child("terminationGracePeriodSeconds")));
  }
  auto volumes = ValidateVolumes(spec.volumes(), p.Child("volumes"), &errs);
  std::set<std::string> claims;
  for (int i = 0; i < spec.resourceclaims_size(); ++i) {
    const auto& c = spec.resourceclaims(i);
    Path cp = p.Child("resourceClaims").Index(i);
    Append(&errs, validation::ValidateDNS1123Label(c.name(), cp.Child("name")));
    if (!claims.insert(c.name()).second) {
      errs.push_back(Duplicate(cp.Child("name"), GoQuote(c.name())));
    }
  }
  Append(&errs, ValidateContainers(spec, volumes, p.Child("containers")));
  Append(&errs,
         ValidateInitContainers(spec, volumes, p.Child("initContainers")));
  if (spec.hostnetwork()) {
    Path cp = p.Child("containers");
    for (int i = 0; i < spec.containers_size(); ++i) {
      const Container& c = spec.containers(i);
      for (int j = 0; j < c.ports_size(); ++j) {
        int32_t hp = c.ports(j).hostport(), cport = c.ports(j).containerport();
        if ((resource_is_pod || hp != 0) && hp != cport) {
          errs.push_back(InvalidInt(
              cp.Index(i).Child("ports").Index(j).Child("hostPort"), hp,
              "must match `containerPort` when "
              "`hostNetwork` is true"));
        }
      }
    }
  }
  const std::string& rp = spec.restartpolicy();
  if (rp.empty()) {
    errs.push_back(Required(p.Child("restartPolicy")));
  } else if (rp != "Always" && rp != "OnFailure" && rp != "Never") {
    errs.push_back(NotSupportedString(p.Child("restartPolicy"), rp,
                                      {"Always", "OnFailure", "Never"}));
  }
  const std::string& dp = spec.dnspolicy();
  if (dp.empty()) {
    errs.push_back(Required(p.Child("dnsPolicy")));
  } else if (dp != "ClusterFirstWithHostNet" && dp != "ClusterFirst" &&
             dp != "Default" && dp != "None") {
    errs.push_back(NotSupportedString(
        p.Child("dnsPolicy"), dp,
        {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}));
  }
  Append(&errs, validation::ValidateLabels(spec.nodeselector(),
                                           p.Child("nodeSelector")));
  Append(&errs, ValidatePodSecurityContext(spec, p.Child("securityContext")));
  for (int i = 0; i < spec.imagepullsecrets_size(); ++i) {
    (void)i;  // only `name` exists in our schema, so nothing else can be set
  }
  Append(&errs, ValidateAffinity(spec, p.Child("affinity")));
  Append(&errs, ValidatePodDNSConfig(spec, p.Child("dnsConfig")));
  for (int i = 0; i < spec.readinessgates_size(); ++i) {
    Append(&errs,
           validation::ValidateQualifiedName(
               spec.readinessgates(i).conditiontype(),
               p.Child("readinessGates").Index(i).Child("conditionType")));
  }
  std::set<std::string> gates;
  for (int i = 0; i < spec.schedulinggates_size(); ++i) {
    const std::string& g = spec.schedulinggates(i).name();
    Path gp = p.Child("schedulingGates").Index(i);
    Append(&errs, validation::ValidateQualifiedName(g, gp));
    if (!gates.insert(g).second) errs.push_back(Duplicate(gp, GoQuote(g)));
  }
  Append(&errs,
         ValidateTopologySpread(spec, p.Child("topologySpreadConstraints")));
  if (!spec.serviceaccountname().empty()) {
    for (auto& m : NameIsDNSSubdomain(spec.serviceaccountname())) {
      errs.push_back(InvalidString(p.Child("serviceAccountName"),
                                   spec.serviceaccountname(), m));
    }
  }
  if (!spec.nodename().empty()) {
    for (auto& m : NameIsDNSSubdomain(spec.nodename())) {
      errs.push_back(InvalidString(p.Child("nodeName"), spec.nodename(), m));
    }
  }
  if (spec.has_activedeadlineseconds()) {
    int64_t v = spec.activedeadlineseconds();
    if (v < 1 || v > kMaxInt32) {
      errs.push_back(InvalidInt(p.Child("activeDeadlineSeconds"), v,
                                validation::InclusiveRangeError(1, kMaxInt32)));
    }
  }
  if (!spec.hostname().empty()) {
    Append(&errs, validation::ValidateDNS1123Label(spec.hostname(),
                                                   p.Child("hostname")));
  }
  if (!spec.subdomain().empty()) {
    Append(&errs, validation::ValidateDNS1123Label(spec.subdomain(),
                                                   p.Child("subdomain")));
  }
  if (!spec.tolerations().empty()) {
    Append(&errs,
           ValidateTolerations(spec.tolerations(), p.Child("tolerations")));
  }
  for (int i = 0; i < spec.hostaliases_size(); ++i) {
    const auto& ha = spec.hostaliases(i);
    Path hp = p.Child("hostAliases").Index(i);
    Append(&errs, validation::ValidateValidIP(ha.ip(), hp.Child("ip")));
    for (int j = 0; j < ha.hostnames_size(); ++j) {
      Append(&errs, validation::ValidateDNS1123Subdomain(
                        ha.hostnames(j), hp.Child("hostnames").Index(j)));
    }
  }
  if (!spec.priorityclassname().empty()) {
    for (auto& m : NameIsDNSSubdomain(spec.priorityclassname())) {
      errs.push_back(InvalidString(p.Child("priorityClassName"),
                                   spec.priorityclassname(), m));
    }
  }
  if (spec.has_runtimeclassname()) {
    for (auto& m : NameIsDNSSubdomain(spec.runtimeclassname())) {
      errs.push_back(InvalidString(p.Child("runtimeClassName"),
                                   spec.runtimeclassname(), m));
    }
  }
  if (spec.has_preemptionpolicy()) {
    const std::string& pp = spec.preemptionpolicy();
    if (pp.empty()) {
      errs.push_back(Required(p.Child("preemptionPolicy")));
    } else if (pp != "PreemptLowerPriority" && pp != "Never") {
      errs.push_back(NotSupportedString(p.Child("preemptionPolicy"), pp,
                                        {"PreemptLowerPriority", "Never"}));
    }
  }
  if (spec.has_os()) {
    if (spec.os().name().empty()) {
      errs.push_back(Required(p.Child("os").Child("name"), "cannot be empty"));
    } else if (spec.os().name() != "linux" && spec.os().name() != "windows") {
      errs.push_back(NotSupportedString(p.Child("os"), spec.os().name(),
                                        {"linux", "windows"}));
    }
  }
  return errs;
}

FieldErrors ValidatePodTemplateSpec(const PodTemplateSpec& t, const Path& p) {
  FieldErrors errs;
  Append(&errs,
         validation::ValidateLabels(t.metadata().labels(), p.Child("labels")));
  Append(&errs, validation::ValidateAnnotations(t.metadata().annotations(),
                                                p.Child("annotations")));
  Append(&errs, ValidatePodSpec(t.spec(), p.Child("spec"), false));
  return errs;
}

FieldErrors ValidatePodTemplateForController(
    const PodTemplateSpec& t, const machinery::LabelSelector& selector,
    const Path& p, std::string_view owner_kind) {
  FieldErrors errs;
  if (!selector.Empty() &&
      !selector.Matches(validation::ToLabels(t.metadata().labels()))) {
    errs.push_back(Invalid(p.Child("metadata", "labels"),
                           validation::GoStringMap(t.metadata().labels()),
                           "`selector` does not match template `labels`"));
  }
  Append(&errs, ValidatePodTemplateSpec(t, p));
  if (t.spec().restartpolicy() != "Always") {
    errs.push_back(NotSupportedString(p.Child("spec", "restartPolicy"),
                                      t.spec().restartpolicy(), {"Always"}));
  }
  if (t.spec().has_activedeadlineseconds()) {
    errs.push_back(Forbidden(p.Child("spec", "activeDeadlineSeconds"),
                             "activeDeadlineSeconds in " +
                                 std::string(owner_kind) +
                                 " is not Supported"));
  }
  return errs;
}

namespace {

FieldErrors ValidatePodMetadataAndSpec(const Pod& pod) {
  Path meta("metadata");
  Path spec("spec");
  FieldErrors errs = validation::ValidateObjectMeta(
      pod.metadata(), true, validation::NameRule::kDNS1123Subdomain, meta);
  // Pod-specific annotations: the mirror-pod rule and pod deletion cost.
  const auto& ann = pod.metadata().annotations();
  if (auto it = ann.find("kubernetes.io/config.mirror");
      it != ann.end() && pod.spec().nodename().empty()) {
    errs.push_back(InvalidString(meta.Child("annotations").Key(it->first),
                                 it->second,
                                 "must set spec.nodeName if mirror pod "
                                 "annotation is set"));
  }
  if (auto it = ann.find("controller.kubernetes.io/pod-deletion-cost");
      it != ann.end()) {
    auto v = ParseInt64(it->second);
    if (!v || *v < INT32_MIN || *v > INT32_MAX) {
      errs.push_back(InvalidString(meta.Child("annotations").Key(it->first),
                                   it->second, "must be a 32bit integer"));
    }
  }
  Append(&errs, ValidatePodSpec(pod.spec(), spec, true));
  if (pod.spec().serviceaccountname().empty()) {
    for (int vi = 0; vi < pod.spec().volumes_size(); ++vi) {
      const auto& v = pod.spec().volumes(vi).volumesource();
      if (!v.has_projected()) continue;
      for (int si = 0; si < v.projected().sources_size(); ++si) {
        if (v.projected().sources(si).has_serviceaccounttoken()) {
          errs.push_back(Forbidden(spec.Child("volumes")
                                       .Index(vi)
                                       .Child("projected")
                                       .Child("sources")
                                       .Index(si)
                                       .Child("serviceAccountToken"),
                                   "must not be specified when "
                                   "serviceAccountName is not set"));
        }
      }
    }
  }
  for (auto [list, name] :
       {std::pair{&pod.spec().containers(), "containers"},
        std::pair{&pod.spec().initcontainers(), "initContainers"}}) {
    for (int i = 0; i < list->size(); ++i) {
      const std::string& image = (*list)[i].image();
      std::string_view trimmed = StripWhitespace(image);
      if (trimmed.size() != image.size()) {
        errs.push_back(InvalidString(spec.Child(name).Index(i).Child("image"),
                                     image,
                                     "must not have leading or trailing "
                                     "whitespace"));
      }
    }
  }
  return errs;
}

// A one-line JSON rendering of one field of `m` ("null" when unset), for
// the update diff.
std::string FieldJson(const google::protobuf::Message& m,
                      const google::protobuf::FieldDescriptor* f) {
  const auto* r = m.GetReflection();
  bool present = f->is_repeated() ? r->FieldSize(m, f) > 0 : r->HasField(m, f);
  if (!present) return "null";
  rapidjson::Document doc;
  rapidjson::Value v = objects::ToJsonValue(m, doc.GetAllocator());
  auto it = v.FindMember(f->name().c_str());
  if (it == v.MemberEnd()) return "null";
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  json::Accept(it->value, w);  // without recursion
  return buf.GetString();
}

}  // namespace

FieldErrors ValidatePodCreate(const Pod& pod) {
  FieldErrors errs = ValidatePodMetadataAndSpec(pod);
  if (!pod.spec().nodename().empty() && !pod.spec().schedulinggates().empty()) {
    errs.push_back(Forbidden(Path("spec").Child("nodeName"),
                             "cannot be set until all schedulingGates have "
                             "been cleared"));
  }
  return errs;
}

namespace {

bool TolerationEqualIgnoringSeconds(const Toleration& a, const Toleration& b) {
  return a.key() == b.key() && a.operator_() == b.operator_() &&
         a.value() == b.value() && a.effect() == b.effect();
}

}  // namespace

FieldErrors ValidatePodUpdate(const Pod& pod, const Pod& old) {
  Path meta("metadata");
  Path spec_path("spec");
  FieldErrors errs = validation::ValidateObjectMetaUpdate(pod.metadata(),
                                                          old.metadata(), meta);
  Append(&errs, ValidatePodMetadataAndSpec(pod));
  const auto& na = pod.metadata().annotations();
  const auto& oa = old.metadata().annotations();
  constexpr std::string_view kMirror = "kubernetes.io/config.mirror";
  if (oa.contains(std::string(kMirror)) &&
      (!na.contains(std::string(kMirror)) ||
       na.at(std::string(kMirror)) != oa.at(std::string(kMirror)))) {
    errs.push_back(Forbidden(meta.Child("annotations").Key(kMirror),
                             "may not remove or update mirror pod annotation"));
  }
  if (!oa.contains(std::string(kMirror)) && na.contains(std::string(kMirror))) {
    errs.push_back(Forbidden(meta.Child("annotations").Key(kMirror),
                             "may not add mirror pod annotation"));
  }

  const PodSpec& ns = pod.spec();
  const PodSpec& os = old.spec();
  for (auto [nl, ol, name] :
       {std::tuple{&ns.containers(), &os.containers(), "containers"},
        std::tuple{&ns.initcontainers(), &os.initcontainers(),
                   "initContainers"}}) {
    if (nl->size() != ol->size()) {
      errs.push_back(Forbidden(spec_path.Child(name),
                               "pod updates may not add or remove containers"));
      return errs;
    }
    for (int i = 0; i < nl->size(); ++i) {
      const std::string& image = (*nl)[i].image();
      if (image.empty()) {
        errs.push_back(Required(spec_path.Child(name).Index(i).Child("image")));
      }
      if (StripWhitespace(image).size() != image.size()) {
        errs.push_back(
            InvalidString(spec_path.Child(name).Index(i).Child("image"), image,
                          "must not have leading or trailing "
                          "whitespace"));
      }
    }
  }
  if (ns.has_activedeadlineseconds()) {
    int64_t v = ns.activedeadlineseconds();
    if (v < 0 || v > kMaxInt32) {
      errs.push_back(InvalidInt(spec_path.Child("activeDeadlineSeconds"), v,
                                validation::InclusiveRangeError(0, kMaxInt32)));
      return errs;
    }
    if (os.has_activedeadlineseconds() && os.activedeadlineseconds() < v) {
      errs.push_back(
          InvalidInt(spec_path.Child("activeDeadlineSeconds"), v,
                     "must be less than or equal to previous value"));
      return errs;
    }
  } else if (os.has_activedeadlineseconds()) {
    errs.push_back(Invalid(spec_path.Child("activeDeadlineSeconds"), "null",
                           "must not update from a positive integer to nil "
                           "value"));
  }
  // Only additions to tolerations (tolerationSeconds may change).
  bool tolerations_ok = true;
  for (const Toleration& ot : os.tolerations()) {
    bool found = false;
    for (const Toleration& nt : ns.tolerations()) {
      if (TolerationEqualIgnoringSeconds(ot, nt)) {
        found = true;
        break;
      }
    }
    if (!found) {
      errs.push_back(Forbidden(spec_path.Child("tolerations"),
                               "existing toleration can not be modified except "
                               "its tolerationSeconds"));
      tolerations_ok = false;
      break;
    }
  }
  if (tolerations_ok) {
    Append(&errs, ValidateTolerations(ns.tolerations(),
                                      spec_path.Child("tolerations")));
  }
  // Only deletions of scheduling gates.
  if (!ns.schedulinggates().empty()) {
    std::set<std::string> old_gates;
    for (const auto& g : os.schedulinggates()) old_gates.insert(g.name());
    for (int i = 0; i < ns.schedulinggates_size(); ++i) {
      const std::string& g = ns.schedulinggates(i).name();
      if (!old_gates.count(g)) {
        errs.push_back(Forbidden(
            spec_path.Child("schedulingGates").Index(i).Child("name"),
            "only deletion is allowed, but found new scheduling gate '" + g +
                "'"));
      }
    }
  }
  if (validation::Equal(ns, os)) return errs;
  std::string old_qos = old.status().qosclass().empty()
                            ? ComputeQOS(old)
                            : old.status().qosclass();
  if (old_qos != ComputeQOS(pod)) {
    errs.push_back(
        InvalidString(meta, pod.status().qosclass(), "Pod QoS is immutable"));
  }

  // Munge the updatable fields back to their old values and compare.
  PodSpec munged = ns;
  for (int i = 0; i < munged.containers_size(); ++i) {
    munged.mutable_containers(i)->set_image(os.containers(i).image());
  }
  for (int i = 0; i < munged.initcontainers_size(); ++i) {
    munged.mutable_initcontainers(i)->set_image(os.initcontainers(i).image());
  }
  if (os.has_activedeadlineseconds()) {
    munged.set_activedeadlineseconds(os.activedeadlineseconds());
  } else {
    munged.clear_activedeadlineseconds();
  }
  *munged.mutable_schedulinggates() = os.schedulinggates();
  *munged.mutable_tolerations() = os.tolerations();
  if (os.has_terminationgraceperiodseconds() &&
      os.terminationgraceperiodseconds() < 0 &&
      munged.has_terminationgraceperiodseconds() &&
      munged.terminationgraceperiodseconds() == 1) {
    munged.set_terminationgraceperiodseconds(
        os.terminationgraceperiodseconds());
  }
  if (!os.schedulinggates().empty()) {
    // Gated pods may add nodeSelector entries and node affinity terms; we
    // accept any change to those two fields while gated.
    *munged.mutable_nodeselector() = os.nodeselector();
    if (os.has_affinity() || munged.has_affinity()) {
      Affinity a = munged.affinity();
      if (os.affinity().has_nodeaffinity()) {
        *a.mutable_nodeaffinity() = os.affinity().nodeaffinity();
      } else {
        a.clear_nodeaffinity();
      }
      if (validation::Equal(a, Affinity()) && !os.has_affinity()) {
        munged.clear_affinity();
      } else {
        *munged.mutable_affinity() = a;
      }
    }
  }
  if (!validation::Equal(munged, os)) {
    // Upstream appends cmp.Diff(old, new) of the Go structs; we list the
    // PodSpec fields that differ, old and new value as JSON.
    std::string diff;
    const auto* d = PodSpec::descriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const auto* f = d->field(i);
      std::string a = FieldJson(os, f);
      std::string b = FieldJson(munged, f);
      if (a == b) continue;
      diff += "  - " + f->json_name() + ": " + a + "\n";
      diff += "  + " + f->json_name() + ": " + b + "\n";
    }
    errs.push_back(Forbidden(
        spec_path,
        "pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,"
        "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow "
        "it to be set to 1 if it was previously negative)\n" +
            diff));
  }
  return errs;
}

FieldErrors ValidatePodStatusUpdate(const Pod& pod, const Pod& old) {
  Path meta("metadata");
  FieldErrors errs = validation::ValidateObjectMetaUpdate(pod.metadata(),
                                                          old.metadata(), meta);
  static const auto* system =
      new std::set<std::string>{"PodScheduled", "Ready", "Initialized"};
  for (int i = 0; i < pod.status().conditions_size(); ++i) {
    const std::string& t = pod.status().conditions(i).type();
    if (system->count(t)) continue;
    // Upstream's path here is metadata.conditions[i].Type (sic).
    Append(&errs, validation::ValidateQualifiedName(
                      t, meta.Child("conditions").Index(i).Child("Type")));
  }
  Path st("status");
  if (pod.spec().nodename() != old.spec().nodename()) {
    errs.push_back(
        Forbidden(st.Child("nodeName"), "may not be changed directly"));
  }
  const std::string& nn = pod.status().nominatednodename();
  if (nn != old.status().nominatednodename() && !nn.empty()) {
    for (auto& m : NameIsDNSSubdomain(nn)) {
      errs.push_back(InvalidString(st.Child("nominatedNodeName"), nn, m));
    }
  }
  // Terminated containers may not come back unless the pod restarts them.
  auto transitions = [&](const auto& news, const auto& olds, const Path& p,
                         const std::string& policy, bool init) {
    if (policy == "Always") return;
    for (int i = 0; i < olds.size(); ++i) {
      const ContainerStatus& o = olds[i];
      if (!o.state().has_terminated()) continue;
      if (o.state().terminated().exitcode() != 0 && policy == "OnFailure")
        continue;
      if (init) {
        bool restartable = false;
        for (const auto& c : old.spec().initcontainers()) {
          if (c.name() == o.name()) {
            restartable = c.restartpolicy() == "Always";
            break;
          }
        }
        if (restartable) continue;
      }
      for (const ContainerStatus& n : news) {
        if (n.name() == o.name() && !n.state().has_terminated()) {
          errs.push_back(Forbidden(p.Index(i).Child("state"),
                                   "may not be transitioned to non-terminated "
                                   "state"));
        }
      }
    }
  };
  transitions(pod.status().containerstatuses(),
              old.status().containerstatuses(), st.Child("containerStatuses"),
              old.spec().restartpolicy(), false);
  transitions(pod.status().initcontainerstatuses(),
              old.status().initcontainerstatuses(),
              st.Child("initContainerStatuses"), old.spec().restartpolicy(),
              true);
  transitions(pod.status().ephemeralcontainerstatuses(),
              old.status().ephemeralcontainerstatuses(),
              st.Child("ephemeralContainerStatuses"), "Never", false);
  // podIPs and hostIPs: valid, unique, at most one per family; hostIP ==
  // hostIPs[0] (podIP is made equal to podIPs[0] by conversion).
  auto ips = [&](const auto& list, const std::string& type, const Path& lp) {
    auto go_list = [&] {
      std::string out = "[]core." + type + "{";
      for (int i = 0; i < list.size(); ++i) {
        if (i > 0) out += ", ";
        out += "core." + type + "{IP:" + GoQuote(list[i].ip()) + "}";
      }
      return out + "}";
    };
    for (int i = 0; i < list.size(); ++i) {
      Append(&errs, validation::ValidateValidIP(list[i].ip(), lp.Index(i)));
    }
    if (list.size() > 1) {
      int v6 = 0;
      for (const auto& e : list) v6 += validation::IsIPv6(e.ip()) ? 1 : 0;
      if (list.size() > 2 || v6 != 1) {
        errs.push_back(Invalid(lp, go_list(),
                               "may specify no more than one IP for each IP "
                               "family"));
      }
      std::set<std::string> seen;
      for (int i = 0; i < list.size(); ++i) {
        if (!seen.insert(list[i].ip()).second) {
          errs.push_back(
              Duplicate(lp.Index(i),
                        "core." + type + "{IP:" + GoQuote(list[i].ip()) + "}"));
        }
      }
    }
  };
  ips(pod.status().podips(), "PodIP", st.Child("podIPs"));
  const auto& host_ips = pod.status().hostips();
  if (!host_ips.empty() && pod.status().hostip() != host_ips[0].ip()) {
    errs.push_back(InvalidString(st.Child("hostIPs").Index(0).Child("ip"),
                                 host_ips[0].ip(),
                                 "must be equal to `hostIP`"));
  }
  ips(host_ips, "HostIP", st.Child("hostIPs"));
  return errs;
}

std::string ComputeQOS(const Pod& pod) {
  std::map<std::string, Quantity> requests, limits;
  bool guaranteed = true;
  auto visit = [&](const Container& c) {
    for (const auto& [name, q] : c.resources().requests()) {
      if (name != "cpu" && name != "memory") continue;
      auto v = Quantity::Parse(q.string());
      if (!v.ok() || v->Sign() <= 0) continue;
      requests[name].Add(*v);
    }
    std::set<std::string> found;
    for (const auto& [name, q] : c.resources().limits()) {
      if (name != "cpu" && name != "memory") continue;
      auto v = Quantity::Parse(q.string());
      if (!v.ok() || v->Sign() <= 0) continue;
      found.insert(name);
      limits[name].Add(*v);
    }
    if (!found.count("cpu") || !found.count("memory")) guaranteed = false;
  };
  for (const auto& c : pod.spec().containers()) visit(c);
  for (const auto& c : pod.spec().initcontainers()) visit(c);
  if (requests.empty() && limits.empty()) return "BestEffort";
  if (guaranteed) {
    for (const auto& [name, req] : requests) {
      auto it = limits.find(name);
      if (it == limits.end() || it->second.Cmp(req) != 0) {
        guaranteed = false;
        break;
      }
    }
  }
  if (guaranteed && requests.size() == limits.size()) return "Guaranteed";
  return "Burstable";
}

}  // namespace kplane::apiserver::podvalidation
