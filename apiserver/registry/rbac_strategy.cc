// The rbac.authorization.k8s.io/v1 strategies: Role, ClusterRole,
// RoleBinding, ClusterRoleBinding (upstream: pkg/registry/rbac/*/strategy.go,
// pkg/apis/rbac/v1/defaults.go, pkg/apis/rbac/validation/validation.go and
// the rbac printers of pkg/printers/internalversion/printers.go, Kubernetes
// 1.32). An aggregated ClusterRole's rules are filled by the controller
// manager's clusterrole-aggregation controller. Escalation checks (an
// aggregation rule needs every permission) live in the API server, which
// knows the requesting user.
#include <memory>
#include <string>
#include <vector>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "schemas/k8s/rbac.pb.h"

namespace kplane::apiserver {

namespace {

namespace rbacv1 = ::k8s::io::api::rbac::v1;
using validation::Append;
using validation::NameRule;
using validation::Path;

constexpr char kRbacGroup[] = "rbac.authorization.k8s.io";

// ValidateRBACName: a path segment name.
void ValidateRbacName(const Path& p, const std::string& name,
                      FieldErrors* errs) {
  for (const std::string& msg :
       validation::ValidateName(NameRule::kPathSegment, name, false)) {
    errs->push_back(validation::InvalidString(p, name, msg));
  }
}

FieldErrors ValidatePolicyRule(const rbacv1::PolicyRule& rule, bool namespaced,
                               const Path& p) {
  FieldErrors errs;
  if (rule.verbs_size() == 0) {
    errs.push_back(validation::Required(
        p.Child("verbs"), "verbs must contain at least one value"));
  }
  if (rule.nonresourceurls_size() > 0) {
    const std::string urls = validation::GoStringSlice(rule.nonresourceurls());
    if (namespaced) {
      errs.push_back(validation::Invalid(
          p.Child("nonResourceURLs"), urls,
          "namespaced rules cannot apply to non-resource URLs"));
    }
    if (rule.apigroups_size() > 0 || rule.resources_size() > 0 ||
        rule.resourcenames_size() > 0) {
      errs.push_back(validation::Invalid(
          p.Child("nonResourceURLs"), urls,
          "rules cannot apply to both regular resources and non-resource "
          "URLs"));
    }
    return errs;
  }
  if (rule.apigroups_size() == 0) {
    errs.push_back(validation::Required(
        p.Child("apiGroups"),
        "resource rules must supply at least one api group"));
  }
  if (rule.resources_size() == 0) {
    errs.push_back(validation::Required(
        p.Child("resources"),
        "resource rules must supply at least one resource"));
  }
  return errs;
}

template <typename R>
FieldErrors ValidateRules(const R& role, bool namespaced) {
  FieldErrors errs = validation::ValidateObjectMeta(role.metadata(), namespaced,
                                                    NameRule::kPathSegment);
  for (int i = 0; i < role.rules_size(); ++i) {
    Append(&errs, ValidatePolicyRule(role.rules(i), namespaced,
                                     Path("rules").Index(i)));
  }
  return errs;
}

FieldErrors ValidateSubject(const rbacv1::Subject& s, bool namespaced,
                            const Path& p) {
  FieldErrors errs;
  if (s.name().empty()) errs.push_back(validation::Required(p.Child("name")));
  if (s.kind() == "ServiceAccount") {
    if (!s.name().empty()) {
      for (const std::string& msg : validation::ValidateName(
               NameRule::kDNS1123Subdomain, s.name(), false)) {
        errs.push_back(
            validation::InvalidString(p.Child("name"), s.name(), msg));
      }
    }
    if (!s.apigroup().empty()) {
      errs.push_back(validation::NotSupportedString(p.Child("apiGroup"),
                                                    s.apigroup(), {""}));
    }
    if (!namespaced && s.namespace_().empty()) {
      errs.push_back(validation::Required(p.Child("namespace")));
    }
  } else if (s.kind() == "User" || s.kind() == "Group") {
    if (s.apigroup() != kRbacGroup) {
      errs.push_back(validation::NotSupportedString(
          p.Child("apiGroup"), s.apigroup(), {kRbacGroup}));
    }
  } else {
    errs.push_back(validation::NotSupportedString(
        p.Child("kind"), s.kind(), {"ServiceAccount", "User", "Group"}));
  }
  return errs;
}

template <typename B>
FieldErrors ValidateBinding(const B& b, bool namespaced) {
  FieldErrors errs = validation::ValidateObjectMeta(b.metadata(), namespaced,
                                                    NameRule::kPathSegment);
  const rbacv1::RoleRef& ref = b.roleref();
  if (ref.apigroup() != kRbacGroup) {
    errs.push_back(validation::NotSupportedString(
        Path("roleRef").Child("apiGroup"), ref.apigroup(), {kRbacGroup}));
  }
  if (namespaced) {
    if (ref.kind() != "Role" && ref.kind() != "ClusterRole") {
      errs.push_back(validation::NotSupportedString(
          Path("roleRef").Child("kind"), ref.kind(), {"Role", "ClusterRole"}));
    }
  } else if (ref.kind() != "ClusterRole") {
    errs.push_back(validation::NotSupportedString(Path("roleRef").Child("kind"),
                                                  ref.kind(), {"ClusterRole"}));
  }
  if (ref.name().empty()) {
    errs.push_back(validation::Required(Path("roleRef").Child("name")));
  } else {
    ValidateRbacName(Path("roleRef").Child("name"), ref.name(), &errs);
  }
  for (int i = 0; i < b.subjects_size(); ++i) {
    Append(&errs, ValidateSubject(b.subjects(i), namespaced,
                                  Path("subjects").Index(i)));
  }
  return errs;
}

// %v of rbac.RoleRef, as kube prints it in "cannot change roleRef".
std::string GoRoleRef(const rbacv1::RoleRef& r) {
  return "rbac.RoleRef{APIGroup:" + GoQuote(r.apigroup()) +
         ", Kind:" + GoQuote(r.kind()) + ", Name:" + GoQuote(r.name()) + "}";
}

// SetDefaults_Subject and SetDefaults_RoleBinding.
template <typename B>
void DefaultBinding(B* b) {
  if (b->roleref().apigroup().empty()) {
    b->mutable_roleref()->set_apigroup(kRbacGroup);
  }
  for (rbacv1::Subject& s : *b->mutable_subjects()) {
    if (s.apigroup().empty() && (s.kind() == "User" || s.kind() == "Group")) {
      s.set_apigroup(kRbacGroup);
    }
  }
}

template <typename R>
class RoleStrategy : public TypedStrategy<R> {
 public:
  using TypedStrategy<R>::TypedStrategy;
  // Name, Created At: the default table is kube's role printer.
  std::vector<TableColumn> Columns() const override {
    return printers::DefaultColumns();
  }

 protected:
  bool Namespaced() const { return this->resource().namespaced; }
  FieldErrors ValidateCreateT(const R& r) const override {
    return ValidateRules(r, Namespaced());
  }
  FieldErrors ValidateUpdateT(const R& r, const R& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(r.metadata(), old.metadata());
    Append(&errs, ValidateRules(r, Namespaced()));
    return errs;
  }
  std::vector<TableCell> RowT(const R& r, WallTime now) const override {
    (void)now;
    return printers::DefaultRow(r.metadata());
  }
};

template <typename B>
class BindingStrategy : public TypedStrategy<B> {
 public:
  using TypedStrategy<B>::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    std::vector<TableColumn> d = printers::DefaultColumns();
    const std::string ref_doc =
        this->resource().namespaced
            ? "RoleRef can reference a Role in the current namespace or a "
              "ClusterRole in the global namespace. If the RoleRef cannot be "
              "resolved, the Authorizer must return an error. This field is "
              "immutable."
            : "RoleRef can only reference a ClusterRole in the global "
              "namespace. If the RoleRef cannot be resolved, the Authorizer "
              "must return an error. This field is immutable.";
    const std::string what =
        this->resource().namespaced ? "roleBinding" : "clusterRoleBinding";
    return {
        d[0],
        {"Role", "string", "", ref_doc, 0},
        {"Age", "string", "", d[1].description, 0},
        {"Users", "string", "", "Users in the " + what, 1},
        {"Groups", "string", "", "Groups in the " + what, 1},
        {"ServiceAccounts", "string", "", "ServiceAccounts in the " + what, 1}};
  }

 protected:
  bool Namespaced() const { return this->resource().namespaced; }
  void DefaultT(B* b) const override { DefaultBinding(b); }
  FieldErrors ValidateCreateT(const B& b) const override {
    return ValidateBinding(b, Namespaced());
  }
  FieldErrors ValidateUpdateT(const B& b, const B& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(b.metadata(), old.metadata());
    if (b.roleref().SerializeAsString() != old.roleref().SerializeAsString()) {
      errs.push_back(validation::Invalid(
          Path("roleRef"), GoRoleRef(b.roleref()), "cannot change roleRef"));
    }
    Append(&errs, ValidateBinding(b, Namespaced()));
    return errs;
  }
  std::vector<TableCell> RowT(const B& b, WallTime now) const override {
    std::vector<std::string> users, groups, sas;
    for (const rbacv1::Subject& s : b.subjects()) {
      if (s.kind() == "User") users.push_back(s.name());
      if (s.kind() == "Group") groups.push_back(s.name());
      if (s.kind() == "ServiceAccount") {
        sas.push_back(s.namespace_() + ":" + s.name());
      }
    }
    return {TableCell::Str(b.metadata().name()),
            TableCell::Str(b.roleref().kind() + "/" + b.roleref().name()),
            TableCell::Str(printers::TranslateTimestampSince(
                b.metadata().creationtimestamp(), now)),
            TableCell::Str(StrJoin(users, ", ")),
            TableCell::Str(StrJoin(groups, ", ")),
            TableCell::Str(StrJoin(sas, ", "))};
  }
};

}  // namespace

std::unique_ptr<Strategy> NewRbacStrategy(const objects::ResourceInfo* r) {
  if (r->resource == "roles") {
    return std::make_unique<RoleStrategy<rbacv1::Role>>(r);
  }
  if (r->resource == "clusterroles") {
    return std::make_unique<RoleStrategy<rbacv1::ClusterRole>>(r);
  }
  if (r->resource == "rolebindings") {
    return std::make_unique<BindingStrategy<rbacv1::RoleBinding>>(r);
  }
  return std::make_unique<BindingStrategy<rbacv1::ClusterRoleBinding>>(r);
}

}  // namespace kplane::apiserver
