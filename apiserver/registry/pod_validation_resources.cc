// Pod validation: container resource requirements (upstream:
// ValidateResourceRequirements, validateContainerResourceName,
// ValidateResourceQuantityValue and the hugepages rules in
// pkg/apis/core/validation/validation.go).
#include <optional>

#include "apiserver/registry/pod_validation_internal.h"
#include "base/strings.h"
#include "objects/machinery/validation.h"

namespace kplane::apiserver::podvalidation::internal {

namespace {

// --- resources ---

bool IsHugePages(std::string_view name) {
  return name.starts_with("hugepages-");
}

bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}

bool IsExtendedResource(std::string_view name) {
  if (IsNativeResource(name) || name.starts_with("requests.")) return false;
  return machinery::IsQualifiedName("requests." + std::string(name)).empty();
}

bool IsStandardResourceName(std::string_view name) {
  static const auto* s =
      new std::set<std::string, std::less<>>{"cpu",
                                             "memory",
                                             "ephemeral-storage",
                                             "requests.cpu",
                                             "requests.memory",
                                             "requests.ephemeral-storage",
                                             "limits.cpu",
                                             "limits.memory",
                                             "limits.ephemeral-storage",
                                             "pods",
                                             "resourcequotas",
                                             "services",
                                             "replicationcontrollers",
                                             "secrets",
                                             "configmaps",
                                             "persistentvolumeclaims",
                                             "storage",
                                             "requests.storage",
                                             "services.nodeports",
                                             "services.loadbalancers"};
  return s->count(name) > 0 || IsHugePages(name) ||
         name.starts_with("requests.hugepages-");
}

FieldErrors ValidateContainerResourceName(const std::string& name,
                                          const Path& p) {
  FieldErrors errs;
  for (auto& m : machinery::IsQualifiedName(name)) {
    errs.push_back(InvalidString(p, name, m));
  }
  if (!errs.empty()) return errs;
  bool slash = name.find('/') != std::string::npos;
  if (!slash && !IsStandardResourceName(name)) {
    errs.push_back(InvalidString(
        p, name, "must be a standard resource type or fully qualified"));
  }
  if (!slash) {
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage" &&
        !IsHugePages(name)) {
      errs.push_back(
          InvalidString(p, name, "must be a standard resource for containers"));
    }
  } else if (!IsNativeResource(name) && !IsExtendedResource(name)) {
    errs.push_back(InvalidString(p, name,
                                 "doesn't follow extended resource name "
                                 "standard"));
  }
  return errs;
}

FieldErrors ValidateQuantityValue(const std::string& name, const Quantity& q,
                                  const Path& p) {
  FieldErrors errs;
  if (q.Sign() < 0) {
    errs.push_back(InvalidString(p, q.String(),
                                 std::string(validation::kIsNegativeErrorMsg)));
  }
  if (IsExtendedResource(name) && q.MilliValue() % 1000 != 0) {
    errs.push_back(Invalid(p, q.String(), "must be an integer"));
  }
  return errs;
}

std::optional<std::string> HugePageError(const std::string& name,
                                         const Quantity& q) {
  if (!IsHugePages(name)) return std::nullopt;
  auto page = Quantity::Parse(name.substr(strlen("hugepages-")));
  bool ok = page.ok() && page->Sign() > 0 && page->MilliValue() % 1000 == 0 &&
            q.Value() % page->Value() == 0;
  if (ok) return std::nullopt;
  return q.String() + " is not positive integer multiple of " + name;
}

}  // namespace

FieldErrors ValidateResourceRequirements(const ResourceRequirements& r,
                                         const Path& p) {
  FieldErrors errs;
  Path lim_path = p.Child("limits");
  Path req_path = p.Child("requests");
  bool lim_cpu_mem = false, req_cpu_mem = false, lim_huge = false,
       req_huge = false;
  for (const std::string& name : SortedKeys(r.limits())) {
    Path fp = lim_path.Key(name);
    Append(&errs, ValidateContainerResourceName(name, fp));
    auto q = Quantity::Parse(r.limits().at(name).string());
    if (!q.ok()) continue;
    Append(&errs, ValidateQuantityValue(name, *q, fp));
    if (IsHugePages(name)) {
      lim_huge = true;
      if (auto e = HugePageError(name, *q)) {
        errs.push_back(InvalidString(fp, q->String(), *e));
      }
    }
    if (name == "cpu" || name == "memory") lim_cpu_mem = true;
  }
  for (const std::string& name : SortedKeys(r.requests())) {
    Path fp = req_path.Key(name);
    Append(&errs, ValidateContainerResourceName(name, fp));
    auto q = Quantity::Parse(r.requests().at(name).string());
    if (!q.ok()) continue;
    Append(&errs, ValidateQuantityValue(name, *q, fp));
    bool overcommit = IsNativeResource(name) && !IsHugePages(name);
    auto lit = r.limits().find(name);
    if (lit != r.limits().end()) {
      auto lim = Quantity::Parse(lit->second.string());
      if (lim.ok()) {
        if (q->Cmp(*lim) != 0 && !overcommit) {
          errs.push_back(InvalidString(
              req_path, q->String(),
              "must be equal to " + name + " limit of " + lim->String()));
        } else if (q->Cmp(*lim) > 0) {
          errs.push_back(InvalidString(req_path, q->String(),
                                       "must be less than or equal to " + name +
                                           " limit of " + lim->String()));
        }
      }
    } else if (!overcommit) {
      errs.push_back(Required(lim_path,
                              "Limit must be set for non overcommitable "
                              "resources"));
    }
    if (IsHugePages(name)) {
      req_huge = true;
      if (auto e = HugePageError(name, *q)) {
        errs.push_back(InvalidString(fp, q->String(), *e));
      }
    }
    if (name == "cpu" || name == "memory") req_cpu_mem = true;
  }
  if (!lim_cpu_mem && !req_cpu_mem && (lim_huge || req_huge)) {
    errs.push_back(Forbidden(p, "HugePages require cpu or memory"));
  }
  std::set<std::string> claim_names;
  for (int i = 0; i < r.claims_size(); ++i) {
    const std::string& name = r.claims(i).name();
    if (name.empty()) {
      errs.push_back(Required(p.Child("claims").Index(i)));
      continue;
    }
    if (!claim_names.insert(name).second) {
      errs.push_back(Duplicate(p.Child("claims").Index(i), GoQuote(name)));
    }
  }
  return errs;
}

}  // namespace kplane::apiserver::podvalidation::internal
