// Strategies of the core/v1 resources: pods (and bindings), nodes,
// namespaces, configmaps, secrets, services and events. The upstream models
// are pkg/registry/core/<resource>/strategy.go of Kubernetes 1.32.
#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <set>

#include "objects/machinery/quantity.h"
#include "objects/machinery/validation.h"
#include "objects/meta.h"
#include "objects/time.h"
#include "apiserver/registry/defaults.h"
#include "apiserver/registry/pod_validation.h"
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

template <typename M>
std::vector<std::string> SortedKeys(const M& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// ============================== pods ==============================

class PodStrategy : public TypedStrategy<Pod> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::PodColumns();
  }

 protected:
  void DefaultT(Pod* pod) const override { defaults::DefaultPod(pod); }

  void CreateT(Pod* pod) const override {
    AdmitPod(pod);
    PodStatus status;
    status.set_phase("Pending");
    status.set_qosclass(podvalidation::ComputeQOS(*pod));
    *pod->mutable_status() = std::move(status);
    if (!pod->spec().schedulinggates().empty()) {
      PodCondition* c = pod->mutable_status()->add_conditions();
      c->set_type("PodScheduled");
      c->set_status("False");
      c->set_reason("SchedulingGated");
      c->set_message("Scheduling is blocked due to non-empty scheduling gates");
      c->mutable_lastprobetime();
      c->mutable_lasttransitiontime();
    }
  }

  void UpdateT(Pod* pod, const Pod& old) const override {
    *pod->mutable_status() = old.status();
  }

  void StatusUpdateT(Pod* pod, const Pod& old) const override {
    *pod->mutable_spec() = old.spec();
    auto* meta = pod->mutable_metadata();
    if (old.metadata().has_deletiontimestamp()) {
      *meta->mutable_deletiontimestamp() = old.metadata().deletiontimestamp();
    } else {
      meta->clear_deletiontimestamp();
    }
    // Old kubelets corrupt owner references through pods/status.
    *meta->mutable_ownerreferences() = old.metadata().ownerreferences();
    if (pod->status().qosclass().empty()) {
      pod->mutable_status()->set_qosclass(old.status().qosclass());
    }
    defaults::NormalizePodIPs(pod->mutable_status());
  }

  FieldErrors ValidateCreateT(const Pod& pod) const override {
    return podvalidation::ValidatePodCreate(pod);
  }
  FieldErrors ValidateUpdateT(const Pod& pod, const Pod& old) const override {
    return podvalidation::ValidatePodUpdate(pod, old);
  }
  FieldErrors ValidateStatusUpdateT(const Pod& pod,
                                    const Pod& old) const override {
    return podvalidation::ValidatePodStatusUpdate(pod, old);
  }

  std::optional<std::string> FieldValueT(const Pod& pod,
                                         std::string_view f) const override {
    const PodSpec& spec = pod.spec();
    if (f == "spec.nodeName") return spec.nodename();
    if (f == "spec.restartPolicy") return spec.restartpolicy();
    if (f == "spec.schedulerName") return spec.schedulername();
    if (f == "spec.serviceAccountName") return spec.serviceaccountname();
    if (f == "spec.hostNetwork") {
      return std::string(spec.hostnetwork() ? "true" : "false");
    }
    if (f == "status.phase") return pod.status().phase();
    if (f == "status.podIP") {
      return pod.status().podips().empty() ? std::string()
                                           : pod.status().podips(0).ip();
    }
    if (f == "status.nominatedNodeName")
      return pod.status().nominatednodename();
    // Accepted as a label upstream but absent from the field set: it
    // reads as "".
    if (f == "status.podIPs") return std::string();
    return std::nullopt;
  }

  std::vector<TableCell> RowT(const Pod& pod, WallTime now) const override {
    return printers::PodRow(pod, now);
  }

  // podStrategy.CheckGracefulDelete without a request value.
  int64_t GraceT(const Pod& pod) const override {
    int64_t period = pod.spec().has_terminationgraceperiodseconds()
                         ? pod.spec().terminationgraceperiodseconds()
                         : 0;
    if (pod.spec().nodename().empty()) period = 0;
    const std::string& phase = pod.status().phase();
    if (phase == "Failed" || phase == "Succeeded") period = 0;
    if (period < 0) period = 1;
    return period;
  }

 private:
  // The mutating admission plugins kube-apiserver enables by default and
  // that apply without other objects: ServiceAccount (the "default"
  // account), Priority (no PriorityClass: priority 0, PreemptLowerPriority)
  // and DefaultTolerationSeconds (300 s for not-ready and unreachable).
  static void AdmitPod(Pod* pod) {
    PodSpec* spec = pod->mutable_spec();
    if (spec->serviceaccountname().empty()) {
      spec->set_serviceaccountname("default");
      spec->set_serviceaccount("default");
    }
    if (spec->priorityclassname().empty()) {
      if (!spec->has_priority()) spec->set_priority(0);
      if (!spec->has_preemptionpolicy()) {
        spec->set_preemptionpolicy("PreemptLowerPriority");
      }
    }
    bool not_ready = false, unreachable = false;
    for (const Toleration& t : spec->tolerations()) {
      bool effect_ok = t.effect() == "NoExecute" || t.effect().empty();
      if ((t.key() == "node.kubernetes.io/not-ready" || t.key().empty()) &&
          effect_ok) {
        not_ready = true;
      }
      if ((t.key() == "node.kubernetes.io/unreachable" || t.key().empty()) &&
          effect_ok) {
        unreachable = true;
      }
    }
    for (auto [missing, key] :
         {std::pair{!not_ready, "node.kubernetes.io/not-ready"},
          std::pair{!unreachable, "node.kubernetes.io/unreachable"}}) {
      if (!missing) continue;
      Toleration* t = spec->add_tolerations();
      t->set_key(key);
      t->set_operator_("Exists");
      t->set_effect("NoExecute");
      t->set_tolerationseconds(300);
    }
  }
};

// ============================== bindings ==============================

class BindingStrategy : public TypedStrategy<Binding> {
 public:
  using TypedStrategy::TypedStrategy;

 protected:
  FieldErrors ValidateCreateT(const Binding& b) const override {
    return ValidateBinding(b);
  }
};

// ============================== nodes ==============================

std::string GoTaint(const Taint& t) {
  return "core.Taint{Key:" + GoQuote(t.key()) +
         ", Value:" + GoQuote(t.value()) + ", Effect:" + GoQuote(t.effect()) +
         ", TimeAdded:" +
         (t.has_timeadded() ? "&v1.Time{...}" : "(*v1.Time)(nil)") + "}";
}

FieldErrors ValidateTaintEffect(const std::string& effect, bool allow_empty,
                                const Path& p) {
  if (!allow_empty && effect.empty()) return {Required(p)};
  if (effect != "NoSchedule" && effect != "PreferNoSchedule" &&
      effect != "NoExecute") {
    return {NotSupportedString(
        p, effect, {"NoSchedule", "PreferNoSchedule", "NoExecute"})};
  }
  return {};
}

FieldErrors ValidateNodeTaints(
    const google::protobuf::RepeatedPtrField<Taint>& taints, const Path& p) {
  FieldErrors errs;
  std::set<std::pair<std::string, std::string>> unique;
  for (int i = 0; i < taints.size(); ++i) {
    const Taint& t = taints[i];
    Path ip = p.Index(i);
    Append(&errs, validation::ValidateLabelName(t.key(), ip.Child("key")));
    auto msgs = machinery::IsValidLabelValue(t.value());
    if (!msgs.empty()) {
      errs.push_back(
          InvalidString(ip.Child("value"), t.value(), StrJoin(msgs, ";")));
    }
    Append(&errs, ValidateTaintEffect(t.effect(), false, ip.Child("effect")));
    if (!unique.insert({t.effect(), t.key()}).second) {
      FieldError dup = Duplicate(ip, GoTaint(t));
      dup.detail = "taints must be unique by key and effect pair";
      errs.push_back(dup);
    }
  }
  return errs;
}

bool IsIntegerResource(std::string_view name) {
  static const auto* s =
      new std::set<std::string, std::less<>>{"pods",
                                             "resourcequotas",
                                             "services",
                                             "replicationcontrollers",
                                             "secrets",
                                             "configmaps",
                                             "persistentvolumeclaims",
                                             "services.nodeports",
                                             "services.loadbalancers"};
  if (s->count(name)) return true;
  // Extended resources (domain-prefixed, not kubernetes.io) are integers.
  bool native = name.find('/') == std::string_view::npos ||
                name.find("kubernetes.io/") != std::string_view::npos;
  return !native && name.substr(0, 9) != "requests." &&
         machinery::IsQualifiedName("requests." + std::string(name)).empty();
}

FieldErrors ValidateNodeResources(const Node& node) {
  FieldErrors errs;
  for (auto [map, name] :
       {std::pair{&node.status().capacity(), "capacity"},
        std::pair{&node.status().allocatable(), "allocatable"}}) {
    for (const std::string& k : SortedKeys(*map)) {
      Path rp = Path("status").Child(name).Child(k);
      auto q = machinery::Quantity::Parse(map->at(k).string());
      if (!q.ok()) continue;
      if (q->Sign() < 0) {
        errs.push_back(InvalidString(rp, q->String(),
                                     "must be greater than or equal to 0"));
      }
      if (IsIntegerResource(k) && q->MilliValue() % 1000 != 0) {
        errs.push_back(Invalid(rp, q->String(), "must be an integer"));
      }
    }
  }
  return errs;
}

FieldErrors ValidateNode(const Node& node) {
  FieldErrors errs = validation::ValidateObjectMeta(
      node.metadata(), false, NameRule::kDNS1123Subdomain);
  if (!node.spec().taints().empty()) {
    // Upstream reports these under metadata.taints (sic).
    Append(&errs, ValidateNodeTaints(node.spec().taints(),
                                     Path("metadata").Child("taints")));
  }
  Append(&errs, ValidateNodeResources(node));
  const auto& cidrs = node.spec().podcidrs();
  Path cp = Path("spec").Child("podCIDRs");
  for (int i = 0; i < cidrs.size(); ++i) {
    Append(&errs, validation::ValidateCIDR(cidrs[i], cp.Index(i)));
  }
  if (cidrs.size() > 1) {
    int v4 = 0, v6 = 0;
    for (const auto& c : cidrs) {
      std::string ip = c.substr(0, c.find('/'));
      if (validation::IsIPv4(ip)) ++v4;
      if (validation::IsIPv6(ip)) ++v6;
    }
    if (!(v4 == 1 && v6 == 1) || cidrs.size() > 2) {
      errs.push_back(Invalid(cp, validation::GoStringSlice(cidrs),
                             "may specify no more than one CIDR for each IP "
                             "family"));
    }
    std::set<std::string> seen;
    for (int i = 0; i < cidrs.size(); ++i) {
      if (!seen.insert(cidrs[i]).second) {
        errs.push_back(Duplicate(cp.Index(i), GoQuote(cidrs[i])));
      }
    }
  }
  return errs;
}

FieldErrors ValidateNodeUpdate(const Node& node, const Node& old) {
  FieldErrors errs =
      validation::ValidateObjectMetaUpdate(node.metadata(), old.metadata());
  Append(&errs, ValidateNodeResources(node));
  std::set<std::pair<std::string, std::string>> addresses;
  for (int i = 0; i < node.status().addresses_size(); ++i) {
    const NodeAddress& a = node.status().addresses(i);
    if (!addresses.insert({a.type(), a.address()}).second) {
      errs.push_back(Duplicate(Path("status").Child("addresses").Index(i),
                               "core.NodeAddress{Type:" + GoQuote(a.type()) +
                                   ", Address:" + GoQuote(a.address()) + "}"));
    }
  }
  const auto& oc = old.spec().podcidrs();
  const auto& nc = node.spec().podcidrs();
  if (!oc.empty()) {
    constexpr char kMsg[] =
        "node updates may not change podCIDR except from \"\" to valid";
    if (oc.size() != nc.size()) {
      errs.push_back(Forbidden(Path("spec").Child("podCIDRs"), kMsg));
    } else {
      for (int i = 0; i < oc.size(); ++i) {
        if (oc[i] != nc[i]) {
          errs.push_back(Forbidden(Path("spec").Child("podCIDRs"), kMsg));
        }
      }
    }
  }
  if (!old.spec().providerid().empty() &&
      old.spec().providerid() != node.spec().providerid()) {
    errs.push_back(Forbidden(Path("spec").Child("providerID"),
                             "node updates may not change providerID except "
                             "from \"\" to valid"));
  }
  if (!node.spec().taints().empty()) {
    Append(&errs, ValidateNodeTaints(node.spec().taints(),
                                     Path("metadata").Child("taints")));
  }
  if (node.spec().externalid() != old.spec().externalid()) {
    errs.push_back(
        Forbidden(Path("spec").Child("externalID"), "may not be updated"));
  }
  return errs;
}

class NodeStrategy : public TypedStrategy<Node> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "spec.unschedulable"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::NodeColumns();
  }

 protected:
  void DefaultT(Node* n) const override { defaults::DefaultNode(n); }
  // Nodes may set every field, status included, on create.
  void UpdateT(Node* n, const Node& old) const override {
    *n->mutable_status() = old.status();
  }
  void StatusUpdateT(Node* n, const Node& old) const override {
    *n->mutable_spec() = old.spec();
  }
  FieldErrors ValidateCreateT(const Node& n) const override {
    return ValidateNode(n);
  }
  FieldErrors ValidateUpdateT(const Node& n, const Node& old) const override {
    FieldErrors errs = ValidateNode(n);
    Append(&errs, ValidateNodeUpdate(n, old));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const Node& n,
                                    const Node& old) const override {
    return ValidateNodeUpdate(n, old);
  }
  std::optional<std::string> FieldValueT(const Node& n,
                                         std::string_view f) const override {
    if (f == "spec.unschedulable") {
      return std::string(n.spec().unschedulable() ? "true" : "false");
    }
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Node& n, WallTime now) const override {
    return printers::NodeRow(n, now);
  }
};

// ============================== namespaces ==============================

void EnsureNameLabel(Namespace* ns) {
  (*ns->mutable_metadata()->mutable_labels())["kubernetes.io/metadata.name"] =
      ns->metadata().name();
}

FieldErrors ValidateNamespace(const Namespace& ns) {
  FieldErrors errs = validation::ValidateObjectMeta(ns.metadata(), false,
                                                    NameRule::kDNS1123Label);
  for (const std::string& f : ns.spec().finalizers()) {
    Append(&errs, validation::ValidateFinalizerName(
                      f, Path("spec").Child("finalizers")));
  }
  return errs;
}

class NamespaceStrategy : public TypedStrategy<Namespace> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "status.phase"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::NamespaceColumns();
  }
  void PrepareForFinalizeUpdate(
      google::protobuf::Message* obj,
      const google::protobuf::Message& old) const override {
    auto* ns = static_cast<Namespace*>(obj);
    const auto& prev = static_cast<const Namespace&>(old);
    ns->mutable_metadata()->set_generation(prev.metadata().generation());
    *ns->mutable_status() = prev.status();
    EnsureNameLabel(ns);
  }
  FieldErrors ValidateFinalizeUpdate(
      const google::protobuf::Message& obj,
      const google::protobuf::Message& old) const override {
    return ValidateUpdateT(static_cast<const Namespace&>(obj),
                           static_cast<const Namespace&>(old));
  }

 protected:
  void DefaultT(Namespace* ns) const override {
    defaults::DefaultNamespace(ns);
  }
  void CreateT(Namespace* ns) const override {
    ns->mutable_status()->Clear();
    ns->mutable_status()->set_phase("Active");
    auto* fin = ns->mutable_spec()->mutable_finalizers();
    if (std::find(fin->begin(), fin->end(), "kubernetes") == fin->end()) {
      fin->Add("kubernetes");
    }
    // Canonicalize: names from generateName get their label here.
    EnsureNameLabel(ns);
  }
  void UpdateT(Namespace* ns, const Namespace& old) const override {
    *ns->mutable_spec()->mutable_finalizers() = old.spec().finalizers();
    *ns->mutable_status() = old.status();
    EnsureNameLabel(ns);
  }
  void StatusUpdateT(Namespace* ns, const Namespace& old) const override {
    *ns->mutable_spec() = old.spec();
  }
  FieldErrors ValidateCreateT(const Namespace& ns) const override {
    return ValidateNamespace(ns);
  }
  FieldErrors ValidateUpdateT(const Namespace& ns,
                              const Namespace& old) const override {
    FieldErrors errs = ValidateNamespace(ns);
    Append(&errs,
           validation::ValidateObjectMetaUpdate(ns.metadata(), old.metadata()));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const Namespace& ns,
                                    const Namespace& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(ns.metadata(), old.metadata());
    Path pp = Path("status").Child("Phase");
    if (!objects::IsBeingDeleted(ns.metadata())) {
      if (ns.status().phase() != "Active") {
        errs.push_back(InvalidString(pp, ns.status().phase(),
                                     "may only be 'Active' if "
                                     "`deletionTimestamp` is empty"));
      }
    } else if (ns.status().phase() != "Terminating") {
      errs.push_back(InvalidString(pp, ns.status().phase(),
                                   "may only be 'Terminating' if "
                                   "`deletionTimestamp` is not empty"));
    }
    return errs;
  }
  std::optional<std::string> FieldValueT(const Namespace& ns,
                                         std::string_view f) const override {
    if (f == "status.phase") return ns.status().phase();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Namespace& ns,
                              WallTime now) const override {
    return printers::NamespaceRow(ns, now);
  }
};

// ============================== configmaps ==============================

constexpr int kMaxSecretSize = 1024 * 1024;

FieldErrors ValidateConfigMap(const ConfigMap& cm) {
  FieldErrors errs = validation::ValidateObjectMeta(
      cm.metadata(), true, NameRule::kDNS1123Subdomain);
  int64_t total = 0;
  Path dp("data");
  for (const std::string& k : SortedKeys(cm.data())) {
    for (auto& m : validation::IsConfigMapKey(k)) {
      errs.push_back(InvalidString(dp.Key(k), k, m));
    }
    if (cm.binarydata().contains(k)) {
      errs.push_back(InvalidString(dp.Key(k), k,
                                   "duplicate of key present in binaryData"));
    }
    total += cm.data().at(k).size();
  }
  Path bp("binaryData");
  for (const std::string& k : SortedKeys(cm.binarydata())) {
    for (auto& m : validation::IsConfigMapKey(k)) {
      errs.push_back(InvalidString(bp.Key(k), k, m));
    }
    total += cm.binarydata().at(k).size();
  }
  if (total > kMaxSecretSize) {
    // field.NewPath("") prints as "[]".
    errs.push_back(validation::TooLong(Path("[]"), kMaxSecretSize));
  }
  return errs;
}

template <typename M>
bool MapsEqual(const M& a, const M& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) return false;
  }
  return true;
}

class ConfigMapStrategy : public TypedStrategy<ConfigMap> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::ConfigMapColumns();
  }

 protected:
  FieldErrors ValidateCreateT(const ConfigMap& cm) const override {
    return ValidateConfigMap(cm);
  }
  FieldErrors ValidateUpdateT(const ConfigMap& cm,
                              const ConfigMap& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(cm.metadata(), old.metadata());
    if (old.has_immutable() && old.immutable()) {
      constexpr char kMsg[] = "field is immutable when `immutable` is set";
      if (!cm.has_immutable() || !cm.immutable()) {
        errs.push_back(Forbidden(Path("immutable"), kMsg));
      }
      if (!MapsEqual(cm.data(), old.data())) {
        errs.push_back(Forbidden(Path("data"), kMsg));
      }
      if (!MapsEqual(cm.binarydata(), old.binarydata())) {
        errs.push_back(Forbidden(Path("binaryData"), kMsg));
      }
    }
    Append(&errs, ValidateConfigMap(cm));
    return errs;
  }
  std::vector<TableCell> RowT(const ConfigMap& cm,
                              WallTime now) const override {
    return printers::ConfigMapRow(cm, now);
  }
};

// ============================== secrets ==============================

FieldErrors ValidateSecret(const Secret& s) {
  FieldErrors errs = validation::ValidateObjectMeta(
      s.metadata(), true, NameRule::kDNS1123Subdomain);
  Path dp("data");
  int64_t total = 0;
  for (const std::string& k : SortedKeys(s.data())) {
    for (auto& m : validation::IsConfigMapKey(k)) {
      errs.push_back(InvalidString(dp.Key(k), k, m));
    }
    total += s.data().at(k).size();
  }
  if (total > kMaxSecretSize)
    errs.push_back(validation::TooLong(dp, kMaxSecretSize));
  const std::string& type = s.type();
  auto has = [&](const char* k) { return s.data().contains(k); };
  auto valid_json = [](const std::string& bytes) {
    rapidjson::Document d;
    d.Parse(bytes.c_str(), bytes.size());
    return !d.HasParseError() && d.IsObject();
  };
  if (type == "kubernetes.io/service-account-token") {
    auto it =
        s.metadata().annotations().find("kubernetes.io/service-account.name");
    if (it == s.metadata().annotations().end() || it->second.empty()) {
      errs.push_back(Required(Path("metadata")
                                  .Child("annotations")
                                  .Key("kubernetes.io/service-account.name")));
    }
  } else if (type == "kubernetes.io/dockercfg") {
    if (!has(".dockercfg")) {
      errs.push_back(Required(dp.Key(".dockercfg")));
    } else if (!valid_json(s.data().at(".dockercfg"))) {
      errs.push_back(InvalidString(
          dp.Key(".dockercfg"), "<secret contents redacted>", "invalid JSON"));
    }
  } else if (type == "kubernetes.io/dockerconfigjson") {
    if (!has(".dockerconfigjson")) {
      errs.push_back(Required(dp.Key(".dockerconfigjson")));
    } else if (!valid_json(s.data().at(".dockerconfigjson"))) {
      errs.push_back(InvalidString(dp.Key(".dockerconfigjson"),
                                   "<secret contents redacted>",
                                   "invalid JSON"));
    }
  } else if (type == "kubernetes.io/basic-auth") {
    if (!has("username") && !has("password")) {
      errs.push_back(Required(dp.Key("username")));
      errs.push_back(Required(dp.Key("password")));
    }
  } else if (type == "kubernetes.io/ssh-auth") {
    if (!has("ssh-privatekey") || s.data().at("ssh-privatekey").empty()) {
      errs.push_back(Required(dp.Key("ssh-privatekey")));
    }
  } else if (type == "kubernetes.io/tls") {
    if (!has("tls.crt")) errs.push_back(Required(dp.Key("tls.crt")));
    if (!has("tls.key")) errs.push_back(Required(dp.Key("tls.key")));
  }
  return errs;
}

class SecretStrategy : public TypedStrategy<Secret> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "metadata.namespace", "type"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::SecretColumns();
  }

 protected:
  void DefaultT(Secret* s) const override { defaults::DefaultSecret(s); }
  FieldErrors ValidateCreateT(const Secret& s) const override {
    return ValidateSecret(s);
  }
  FieldErrors ValidateUpdateT(const Secret& s,
                              const Secret& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(s.metadata(), old.metadata());
    Append(&errs, validation::ValidateImmutable(
                      s.type() == old.type(), GoQuote(s.type()), Path("type")));
    if (old.has_immutable() && old.immutable()) {
      constexpr char kMsg[] = "field is immutable when `immutable` is set";
      if (!s.has_immutable() || !s.immutable()) {
        errs.push_back(Forbidden(Path("immutable"), kMsg));
      }
      if (!MapsEqual(s.data(), old.data())) {
        errs.push_back(Forbidden(Path("data"), kMsg));
      }
    }
    Append(&errs, ValidateSecret(s));
    return errs;
  }
  std::optional<std::string> FieldValueT(const Secret& s,
                                         std::string_view f) const override {
    if (f == "type") return s.type();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Secret& s, WallTime now) const override {
    return printers::SecretRow(s, now);
  }
};

// ============================== services ==============================

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

// ============================== events ==============================

// legacyValidateEvent for requests to the core/v1 API.
FieldErrors ValidateEventV1(const Event& ev) {
  FieldErrors errs;
  const std::string& ns = ev.metadata().namespace_();
  const auto& io = ev.involvedobject();
  Path ionp = Path("involvedObject").Child("namespace");
  if (objects::IsZero(ev.eventtime())) {
    if (io.namespace_().empty()) {
      if (!ns.empty() && ns != "default") {
        errs.push_back(InvalidString(ionp, io.namespace_(),
                                     "does not match event.namespace"));
      }
    } else if (ns != io.namespace_()) {
      errs.push_back(InvalidString(ionp, io.namespace_(),
                                   "does not match event.namespace"));
    }
  } else {
    if (io.namespace_().empty() && ns != "default" && ns != "kube-system") {
      errs.push_back(InvalidString(ionp, io.namespace_(),
                                   "does not match event.namespace"));
    }
    Path rc("reportingComponent");
    if (ev.reportingcomponent().empty()) errs.push_back(Required(rc));
    Append(&errs,
           validation::ValidateQualifiedName(ev.reportingcomponent(), rc));
    if (ev.reportinginstance().empty()) {
      errs.push_back(Required(Path("reportingInstance")));
    }
    if (ev.reportinginstance().size() > 128) {
      errs.push_back(InvalidString(Path("reportingInstance"), "",
                                   "can have at most 128 characters"));
    }
    if (ev.action().empty()) errs.push_back(Required(Path("action")));
    if (ev.action().size() > 128) {
      errs.push_back(
          InvalidString(Path("action"), "", "can have at most 128 characters"));
    }
    if (ev.reason().empty()) errs.push_back(Required(Path("reason")));
    if (ev.reason().size() > 128) {
      errs.push_back(
          InvalidString(Path("reason"), "", "can have at most 128 characters"));
    }
    if (ev.message().size() > 1024) {
      errs.push_back(InvalidString(Path("message"), "",
                                   "can have at most 1024 characters"));
    }
  }
  for (auto& m : machinery::IsDNS1123Subdomain(ns)) {
    errs.push_back(InvalidString(Path("namespace"), ns, m));
  }
  return errs;
}

class EventStrategy : public TypedStrategy<Event> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::EventColumns();
  }

 protected:
  // Core/v1 events get only the legacy checks; the generic metadata pass
  // (path-segment names, labels, ...) follows when they pass, as in
  // rest.BeforeCreate.
  FieldErrors ValidateCreateT(const Event& ev) const override {
    FieldErrors errs = ValidateEventV1(ev);
    if (!errs.empty()) return errs;
    return ValidateGenericObjectMeta(ev.metadata(), true);
  }
  FieldErrors ValidateUpdateT(const Event& ev,
                              const Event& old) const override {
    FieldErrors errs = ValidateEventV1(ev);
    if (!errs.empty()) return errs;
    errs = validation::ValidateObjectMetaUpdate(ev.metadata(), old.metadata());
    Append(&errs, ValidateGenericObjectMeta(ev.metadata(), true));
    return errs;
  }
  std::optional<std::string> FieldValueT(const Event& ev,
                                         std::string_view f) const override {
    const auto& io = ev.involvedobject();
    if (f == "involvedObject.kind") return io.kind();
    if (f == "involvedObject.namespace") return io.namespace_();
    if (f == "involvedObject.name") return io.name();
    if (f == "involvedObject.uid") return io.uid();
    if (f == "involvedObject.apiVersion") return io.apiversion();
    if (f == "involvedObject.resourceVersion") return io.resourceversion();
    if (f == "involvedObject.fieldPath") return io.fieldpath();
    if (f == "reason") return ev.reason();
    if (f == "reportingComponent") return ev.reportingcomponent();
    if (f == "source") {
      return ev.source().component().empty() ? ev.reportingcomponent()
                                             : ev.source().component();
    }
    if (f == "type") return ev.type();
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Event& ev, WallTime now) const override {
    return printers::EventRow(ev, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewPodStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<PodStrategy>(r);
}
std::unique_ptr<Strategy> NewBindingStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<BindingStrategy>(r);
}
std::unique_ptr<Strategy> NewNodeStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<NodeStrategy>(r);
}
std::unique_ptr<Strategy> NewNamespaceStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<NamespaceStrategy>(r);
}
std::unique_ptr<Strategy> NewConfigMapStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<ConfigMapStrategy>(r);
}
std::unique_ptr<Strategy> NewSecretStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<SecretStrategy>(r);
}
std::unique_ptr<Strategy> NewServiceStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<ServiceStrategy>(r);
}
std::unique_ptr<Strategy> NewEventStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<EventStrategy>(r);
}

}  // namespace kplane::apiserver
