// The node strategy (core/v1 Node; upstream: pkg/registry/core/node/strategy.go
// of Kubernetes 1.32).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "apiserver/registry/defaults.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/machinery/quantity.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver {

namespace {

using namespace objects::corev1;  // NOLINT: the file is about these types
using validation::Append;
using validation::Duplicate;
using validation::Forbidden;
using validation::Invalid;
using validation::InvalidString;
using validation::NameRule;
using validation::NotSupportedString;
using validation::Path;
using validation::Required;
using validation::SortedKeys;

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

}  // namespace

std::unique_ptr<Strategy> NewNodeStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<NodeStrategy>(r);
}

}  // namespace kplane::apiserver
