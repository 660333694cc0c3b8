// The PodDisruptionBudget strategy (policy/v1; upstream:
// pkg/registry/policy/poddisruptionbudget/strategy.go and
// ValidatePodDisruptionBudget{,Status} in pkg/apis/policy/validation of
// Kubernetes 1.32).
//
// minAvailable and maxUnavailable are each a non-negative integer or a
// percentage of at most 100%, not both; the selector is a valid label
// selector (in policy/v1 an empty one selects every pod of the namespace);
// unhealthyPodEvictionPolicy is IfHealthyBudget or AlwaysAllow. Creates
// start with an empty status and generation 1; spec changes bump the
// generation; /status writes keep the spec and need non-negative counts.
// The "both set" error prints the two values, not Go's %#v of the spec
// (whose pointers no client can rely on).
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "objects/discovery_types.h"

namespace kplane::apiserver {

namespace {

using objects::policyv1::PodDisruptionBudget;
using objects::policyv1::PodDisruptionBudgetSpec;
using objects::policyv1::PodDisruptionBudgetStatus;
using validation::Append;
using validation::GoIntOrString;
using validation::Invalid;
using validation::NotSupportedString;
using validation::Path;

FieldErrors ValidateSpec(const PodDisruptionBudgetSpec& spec) {
  FieldErrors errs;
  const Path p("spec");
  if (spec.has_minavailable() && spec.has_maxunavailable()) {
    errs.push_back(Invalid(
        p,
        "policy.PodDisruptionBudgetSpec{MinAvailable:" +
            GoIntOrString(spec.minavailable()) +
            ", MaxUnavailable:" + GoIntOrString(spec.maxunavailable()) + "}",
        "minAvailable and maxUnavailable cannot be both set"));
  }
  for (const auto& [set, value, name] :
       {std::tuple{spec.has_minavailable(), &spec.minavailable(),
                   "minAvailable"},
        std::tuple{spec.has_maxunavailable(), &spec.maxunavailable(),
                   "maxUnavailable"}}) {
    if (!set) continue;
    Append(&errs,
           validation::ValidatePositiveIntOrPercent(*value, p.Child(name)));
    Append(&errs, validation::IsNotMoreThan100Percent(*value, p.Child(name)));
  }
  if (spec.has_selector()) {
    Append(&errs, validation::ValidateLabelSelector(spec.selector(),
                                                    p.Child("selector")));
  }
  if (spec.has_unhealthypodevictionpolicy() &&
      spec.unhealthypodevictionpolicy() != "IfHealthyBudget" &&
      spec.unhealthypodevictionpolicy() != "AlwaysAllow") {
    errs.push_back(NotSupportedString(p.Child("unhealthyPodEvictionPolicy"),
                                      spec.unhealthypodevictionpolicy(),
                                      {"AlwaysAllow", "IfHealthyBudget"}));
  }
  return errs;
}

// ValidatePodDisruptionBudgetStatusUpdate for policy/v1.
FieldErrors ValidateStatus(const PodDisruptionBudgetStatus& status) {
  const Path p("status");
  FieldErrors errs;
  Append(&errs, validation::ValidateNonnegative(status.disruptionsallowed(),
                                                p.Child("disruptionsAllowed")));
  Append(&errs, validation::ValidateNonnegative(status.currenthealthy(),
                                                p.Child("currentHealthy")));
  Append(&errs, validation::ValidateNonnegative(status.desiredhealthy(),
                                                p.Child("desiredHealthy")));
  Append(&errs, validation::ValidateNonnegative(status.expectedpods(),
                                                p.Child("expectedPods")));
  return errs;
}

class PodDisruptionBudgetStrategy : public TypedStrategy<PodDisruptionBudget> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::PodDisruptionBudgetColumns();
  }

 protected:
  void CreateT(PodDisruptionBudget* pdb) const override {
    pdb->mutable_status()->Clear();
    pdb->mutable_metadata()->set_generation(1);
  }
  void UpdateT(PodDisruptionBudget* pdb,
               const PodDisruptionBudget& old) const override {
    *pdb->mutable_status() = old.status();
    if (!validation::Equal(pdb->spec(), old.spec())) {
      pdb->mutable_metadata()->set_generation(old.metadata().generation() + 1);
    }
  }
  void StatusUpdateT(PodDisruptionBudget* pdb,
                     const PodDisruptionBudget& old) const override {
    *pdb->mutable_spec() = old.spec();
  }
  FieldErrors ValidateCreateT(const PodDisruptionBudget& pdb) const override {
    FieldErrors errs = validation::ValidateObjectMeta(
        pdb.metadata(), true, validation::NameRule::kDNS1123Subdomain);
    Append(&errs, ValidateSpec(pdb.spec()));
    return errs;
  }
  FieldErrors ValidateUpdateT(const PodDisruptionBudget& pdb,
                              const PodDisruptionBudget& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(pdb.metadata(), old.metadata());
    Append(&errs, ValidateSpec(pdb.spec()));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(
      const PodDisruptionBudget& pdb,
      const PodDisruptionBudget& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(pdb.metadata(), old.metadata());
    Append(&errs, ValidateStatus(pdb.status()));
    return errs;
  }
  std::vector<TableCell> RowT(const PodDisruptionBudget& pdb,
                              WallTime now) const override {
    return printers::PodDisruptionBudgetRow(pdb, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewPodDisruptionBudgetStrategy(
    const objects::ResourceInfo* r) {
  return std::make_unique<PodDisruptionBudgetStrategy>(r);
}

}  // namespace kplane::apiserver
