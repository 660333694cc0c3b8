// Pod validation: scheduling constraints: tolerations, node affinity
// and topology spread (upstream: ValidateTolerations, validateAffinity,
// ValidateNodeSelectorTerm, ValidateNodeSelectorRequirement,
// validateTopologySpreadConstraints in
// pkg/apis/core/validation/validation.go).
#include "apiserver/registry/pod_validation_internal.h"
#include "base/strings.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver::podvalidation::internal {

// --- pod-level pieces ---

FieldErrors ValidateTolerations(
    const google::protobuf::RepeatedPtrField<Toleration>& tolerations,
    const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < tolerations.size(); ++i) {
    const Toleration& t = tolerations[i];
    Path ip = p.Index(i);
    if (!t.key().empty()) {
      Append(&errs, validation::ValidateLabelName(t.key(), ip.Child("key")));
    }
    if (t.key().empty() && t.operator_() != "Exists") {
      errs.push_back(InvalidString(
          ip.Child("operator"), t.operator_(),
          "operator must be Exists when `key` is empty, which means \"match "
          "all values and all keys\""));
    }
    if (t.has_tolerationseconds() && t.effect() != "NoExecute") {
      errs.push_back(InvalidString(ip.Child("effect"), t.effect(),
                                   "effect must be 'NoExecute' when "
                                   "`tolerationSeconds` is set"));
    }
    if (t.operator_() == "Equal" || t.operator_().empty()) {
      auto msgs = machinery::IsValidLabelValue(t.value());
      if (!msgs.empty()) {
        errs.push_back(
            InvalidString(ip.Child("operator"), t.value(), StrJoin(msgs, ";")));
      }
    } else if (t.operator_() == "Exists") {
      if (!t.value().empty()) {
        std::string v =
            "core.Toleration{Key:" + GoQuote(t.key()) +
            ", Operator:" + GoQuote(t.operator_()) +
            ", Value:" + GoQuote(t.value()) +
            ", Effect:" + GoQuote(t.effect()) + ", TolerationSeconds:" +
            (t.has_tolerationseconds() ? "(*int64)(...)" : "(*int64)(nil)") +
            "}";
        errs.push_back(Invalid(ip.Child("operator"), v,
                               "value must be empty when `operator` is "
                               "'Exists'"));
      }
    } else {
      errs.push_back(NotSupportedString(ip.Child("operator"), t.operator_(),
                                        {"Equal", "Exists"}));
    }
    if (!t.effect().empty() && t.effect() != "NoSchedule" &&
        t.effect() != "PreferNoSchedule" && t.effect() != "NoExecute") {
      errs.push_back(
          NotSupportedString(ip.Child("effect"), t.effect(),
                             {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
  }
  return errs;
}

namespace {

FieldErrors ValidateNodeSelectorRequirement(const NodeSelectorRequirement& r,
                                            const Path& p, bool field) {
  FieldErrors errs;
  const std::string& op = r.operator_();
  if (op == "In" || op == "NotIn") {
    if (r.values().empty()) {
      errs.push_back(Required(p.Child("values"),
                              "must be specified when `operator` is 'In' or "
                              "'NotIn'"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!field && !r.values().empty()) {
      errs.push_back(Forbidden(p.Child("values"),
                               "may not be specified when `operator` is "
                               "'Exists' or 'DoesNotExist'"));
    }
  } else if (op == "Gt" || op == "Lt") {
    if (r.values_size() != 1) {
      errs.push_back(Required(p.Child("values"),
                              "must be specified single value when `operator` "
                              "is 'Lt' or 'Gt'"));
    }
  } else {
    errs.push_back(InvalidString(p.Child("operator"), op,
                                 "not a valid selector operator"));
  }
  if (!field) {
    Append(&errs, validation::ValidateLabelName(r.key(), p.Child("key")));
  } else if (r.key() != "metadata.name") {
    errs.push_back(InvalidString(p.Child("key"), r.key(),
                                 "not a valid field selector key"));
  }
  return errs;
}

FieldErrors ValidateNodeSelectorTerm(const NodeSelectorTerm& t, const Path& p) {
  FieldErrors errs;
  for (int i = 0; i < t.matchexpressions_size(); ++i) {
    Append(&errs, ValidateNodeSelectorRequirement(
                      t.matchexpressions(i),
                      p.Child("matchExpressions").Index(i), false));
  }
  for (int i = 0; i < t.matchfields_size(); ++i) {
    Append(&errs, ValidateNodeSelectorRequirement(
                      t.matchfields(i), p.Child("matchFields").Index(i), true));
  }
  return errs;
}

}  // namespace

FieldErrors ValidateAffinity(const PodSpec& spec, const Path& p) {
  if (!spec.has_affinity()) return {};
  FieldErrors errs;
  const Affinity& a = spec.affinity();
  if (a.has_nodeaffinity()) {
    const NodeAffinity& na = a.nodeaffinity();
    Path np = p.Child("nodeAffinity");
    if (na.has_requiredduringschedulingignoredduringexecution()) {
      const NodeSelector& ns =
          na.requiredduringschedulingignoredduringexecution();
      Path rp = np.Child("requiredDuringSchedulingIgnoredDuringExecution");
      if (ns.nodeselectorterms().empty()) {
        errs.push_back(Required(rp.Child("nodeSelectorTerms"),
                                "must have at least one node selector term"));
      }
      for (int i = 0; i < ns.nodeselectorterms_size(); ++i) {
        Append(&errs, ValidateNodeSelectorTerm(
                          ns.nodeselectorterms(i),
                          rp.Child("nodeSelectorTerms").Index(i)));
      }
    }
    Path pp = np.Child("preferredDuringSchedulingIgnoredDuringExecution");
    for (int i = 0;
         i < na.preferredduringschedulingignoredduringexecution_size(); ++i) {
      const auto& term = na.preferredduringschedulingignoredduringexecution(i);
      if (term.weight() <= 0 || term.weight() > 100) {
        errs.push_back(InvalidInt(pp.Index(i).Child("weight"), term.weight(),
                                  "must be in the range 1-100"));
      }
      Append(&errs, ValidateNodeSelectorTerm(term.preference(),
                                             pp.Index(i).Child("preference")));
    }
  }
  return errs;
}

FieldErrors ValidateTopologySpread(const PodSpec& spec, const Path& p) {
  FieldErrors errs;
  std::set<std::pair<std::string, std::string>> seen;
  for (int i = 0; i < spec.topologyspreadconstraints_size(); ++i) {
    const auto& c = spec.topologyspreadconstraints(i);
    Path ip = p.Index(i);
    if (c.maxskew() <= 0) {
      errs.push_back(InvalidInt(ip.Child("maxSkew"), c.maxskew(),
                                "must be greater than zero"));
    }
    if (c.topologykey().empty()) {
      errs.push_back(Required(ip.Child("topologyKey"), "can not be empty"));
    } else {
      Append(&errs, validation::ValidateLabelName(c.topologykey(),
                                                  ip.Child("topologyKey")));
    }
    const std::string& wu = c.whenunsatisfiable();
    if (wu != "DoNotSchedule" && wu != "ScheduleAnyway") {
      errs.push_back(NotSupportedString(ip.Child("whenUnsatisfiable"), wu,
                                        {"DoNotSchedule", "ScheduleAnyway"}));
    }
    if (!seen.insert({c.topologykey(), wu}).second) {
      errs.push_back(Duplicate(
          ip, "{" + GoQuote(c.topologykey()) + ", " + GoQuote(wu) + "}"));
    }
  }
  return errs;
}

}  // namespace kplane::apiserver::podvalidation::internal
