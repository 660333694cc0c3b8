#include "apiserver/auth/rbac.h"

#include <algorithm>
#include <string_view>

#include "base/strings.h"

namespace kplane::apiserver::auth {
namespace {

bool Has(const std::vector<std::string>& list, std::string_view v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

bool VerbMatches(const PolicyRule& r, const std::string& verb) {
  return Has(r.verbs, "*") || Has(r.verbs, verb);
}

bool ApiGroupMatches(const PolicyRule& r, const std::string& group) {
  return Has(r.api_groups, "*") || Has(r.api_groups, group);
}

// `combined` is "pods" or "pods/log"; `subresource` is "" or "log".
bool ResourceMatches(const PolicyRule& r, const std::string& combined,
                     const std::string& subresource) {
  for (const std::string& res : r.resources) {
    if (res == "*" || res == combined) return true;
    // "*/log" grants the subresource of every resource.
    if (!subresource.empty() && res.size() == subresource.size() + 2 &&
        res.compare(0, 2, "*/") == 0 &&
        res.compare(2, std::string::npos, subresource) == 0) {
      return true;
    }
  }
  return false;
}

bool ResourceNameMatches(const PolicyRule& r, const std::string& name) {
  // A rule limited to names never matches a request without one (list,
  // create, watch of a collection), as kube.
  return r.resource_names.empty() || Has(r.resource_names, name);
}

bool NonResourceUrlMatches(const PolicyRule& r, const std::string& path) {
  for (const std::string& url : r.non_resource_urls) {
    if (url == "*" || url == path) return true;
    if (!url.empty() && url.back() == '*' &&
        std::string_view(path).substr(0, url.size() - 1) ==
            std::string_view(url).substr(0, url.size() - 1)) {
      return true;
    }
  }
  return false;
}

std::string KindOf(const Subject& s) {
  switch (s.kind) {
    case Subject::Kind::kUser:
      return "User";
    case Subject::Kind::kGroup:
      return "Group";
    case Subject::Kind::kServiceAccount:
      return "ServiceAccount";
  }
  return "";
}

}  // namespace

void StaticPolicy::AddRole(Role r) {
  auto key = std::make_pair(r.ns, r.name);
  roles_[key] = std::move(r);
}

void StaticPolicy::AddBinding(RoleBinding b) {
  if (b.ns.empty()) {
    cluster_bindings_.push_back(std::move(b));
  } else {
    std::string ns = b.ns;
    bindings_.emplace(std::move(ns), std::move(b));
  }
}

const Role* StaticPolicy::GetRole(const std::string& ns,
                                  const std::string& name) const {
  if (ns.empty()) return nullptr;
  auto it = roles_.find({ns, name});
  return it == roles_.end() ? nullptr : &it->second;
}

const Role* StaticPolicy::GetClusterRole(const std::string& name) const {
  auto it = roles_.find({"", name});
  return it == roles_.end() ? nullptr : &it->second;
}

void StaticPolicy::ForEachClusterRoleBinding(
    const std::function<bool(const RoleBinding&)>& visit) const {
  for (const RoleBinding& b : cluster_bindings_) {
    if (!visit(b)) return;
  }
}

void StaticPolicy::ForEachRoleBinding(
    const std::string& ns,
    const std::function<bool(const RoleBinding&)>& visit) const {
  auto [lo, hi] = bindings_.equal_range(ns);
  for (auto it = lo; it != hi; ++it) {
    if (!visit(it->second)) return;
  }
}

bool RuleAllows(const PolicyRule& rule, const Attributes& a) {
  if (!VerbMatches(rule, a.verb)) return false;
  if (!a.resource_request) return NonResourceUrlMatches(rule, a.path);
  std::string combined = a.resource;
  if (!a.subresource.empty()) combined += "/" + a.subresource;
  return ApiGroupMatches(rule, a.api_group) &&
         ResourceMatches(rule, combined, a.subresource) &&
         ResourceNameMatches(rule, a.name);
}

bool SubjectMatches(const Subject& subject, const UserInfo& user,
                    const std::string& binding_ns) {
  switch (subject.kind) {
    case Subject::Kind::kUser:
      return subject.name == user.name;
    case Subject::Kind::kGroup:
      return Has(user.groups, subject.name);
    case Subject::Kind::kServiceAccount: {
      const std::string& ns = subject.ns.empty() ? binding_ns : subject.ns;
      if (ns.empty()) return false;
      return user.name ==
             std::string(kServiceAccountUserPrefix) + ns + ":" + subject.name;
    }
  }
  return false;
}

void RbacAuthorizer::VisitRules(
    const UserInfo& user, const std::string& ns,
    const std::function<bool(const std::string&, const PolicyRule&)>& visit,
    std::vector<std::string>* errors) const {
  bool go_on = true;
  // Which subject of `b` names the user, or nullptr.
  auto applies = [&](const RoleBinding& b) -> const Subject* {
    for (const Subject& s : b.subjects) {
      if (SubjectMatches(s, user, b.ns)) return &s;
    }
    return nullptr;
  };
  auto visit_binding = [&](const RoleBinding& b) {
    const Subject* s = applies(b);
    if (s == nullptr) return true;
    const Role* role = b.role_ref.cluster_role
                           ? policy_->GetClusterRole(b.role_ref.name)
                           : policy_->GetRole(b.ns, b.role_ref.name);
    if (role == nullptr) {
      errors->push_back((b.role_ref.cluster_role ? "clusterrole" : "role") +
                        std::string(".rbac.authorization.k8s.io ") +
                        GoQuote(b.role_ref.name) + " not found");
      return true;
    }
    std::string source =
        (b.ns.empty() ? "ClusterRoleBinding " : "RoleBinding ") +
        GoQuote(b.ns.empty() ? b.name : b.ns + "/" + b.name) + " of " +
        (b.role_ref.cluster_role ? "ClusterRole " : "Role ") +
        GoQuote(b.role_ref.name) + " to " + KindOf(*s) + " " + GoQuote(s->name);
    for (const PolicyRule& r : role->rules) {
      if (!visit(source, r)) {
        go_on = false;
        return false;
      }
    }
    return true;
  };
  policy_->ForEachClusterRoleBinding(visit_binding);
  if (!go_on || ns.empty()) return;
  policy_->ForEachRoleBinding(ns, visit_binding);
}

Decision RbacAuthorizer::Authorize(const Attributes& a,
                                   std::string* reason) const {
  std::vector<std::string> errors;
  std::string granted;
  VisitRules(
      a.user, a.ns,
      [&](const std::string& source, const PolicyRule& r) {
        if (!RuleAllows(r, a)) return true;
        granted = source;
        return false;
      },
      &errors);
  if (!granted.empty()) {
    *reason = "RBAC: allowed by " + granted;
    return Decision::kAllow;
  }
  reason->clear();
  if (!errors.empty()) {
    *reason = "RBAC: ";
    if (errors.size() > 1) *reason += "[";
    for (size_t i = 0; i < errors.size(); ++i) {
      if (i > 0) *reason += ", ";
      *reason += errors[i];
    }
    if (errors.size() > 1) *reason += "]";
  }
  return Decision::kNoOpinion;
}

std::vector<PolicyRule> RbacAuthorizer::RulesFor(
    const UserInfo& user, const std::string& ns,
    std::vector<std::string>* errors) const {
  std::vector<PolicyRule> rules;
  VisitRules(
      user, ns,
      [&](const std::string&, const PolicyRule& r) {
        rules.push_back(r);
        return true;
      },
      errors);
  return rules;
}

}  // namespace kplane::apiserver::auth
