// RBAC: rbac.authorization.k8s.io/v1's evaluation, as kube-apiserver's
// --authorization-mode=RBAC (k8s.io/kubernetes/plugin/pkg/auth/authorizer/
// rbac): a request is allowed when a rule of a role bound to its user
// allows it; there are no deny rules.
//
//  - A ClusterRoleBinding grants its ClusterRole's rules everywhere: every
//    namespace, cluster-scoped resources and non-resource URLs.
//  - A RoleBinding in namespace N grants the rules of a Role in N or of a
//    ClusterRole, only for requests in N.
//  - A subject is a User (by name), a Group (one of the user's groups) or a
//    ServiceAccount (the user "system:serviceaccount:<ns>:<name>"; an empty
//    namespace in a RoleBinding's subject means the binding's namespace).
//  - A rule matches a resource request when its verbs, apiGroups, resources
//    ("*", "pods", "pods/log" for a subresource, "*/scale" for a
//    subresource of any resource) and resourceNames (empty: any) all match;
//    a non-resource request when its verbs and nonResourceURLs ("*",
//    "/healthz", "/apis/*" as a prefix) match.
//
//   StaticPolicy policy;                          // or the API's objects
//   policy.AddClusterRole(...); policy.AddClusterRoleBinding(...);
//   RbacAuthorizer rbac(&policy);
//   rbac.Authorize(attributes, &reason);
//
// The policy is read through PolicySource, so that the API server can
// answer from its informer caches and tests from a StaticPolicy.
// Thread-safety: RbacAuthorizer is as safe as its PolicySource (StaticPolicy:
// safe for concurrent reads once built). Errors: a binding whose role does
// not exist adds `RBAC: <kind> "<name>" not found` to the reason and grants
// nothing, as kube.
#ifndef KPLANE_APISERVER_AUTH_RBAC_H_
#define KPLANE_APISERVER_AUTH_RBAC_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apiserver/auth/authorizer.h"

namespace kplane::apiserver::auth {

struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> non_resource_urls;
};

struct Subject {
  enum class Kind { kUser, kGroup, kServiceAccount };
  Kind kind = Kind::kUser;
  std::string name;
  std::string ns;  // ServiceAccount only
};

struct RoleRef {
  bool cluster_role = true;  // kind ClusterRole, else Role
  std::string name;
};

struct Role {  // a Role (ns set) or a ClusterRole (ns empty)
  std::string ns;
  std::string name;
  std::vector<PolicyRule> rules;
};

struct RoleBinding {  // a RoleBinding (ns set) or a ClusterRoleBinding
  std::string ns;
  std::string name;
  RoleRef role_ref;
  std::vector<Subject> subjects;
};

// Where RBAC reads the policy. Lookups return nullptr when absent; the
// pointers stay valid for the duration of one Authorize call.
class PolicySource {
 public:
  virtual ~PolicySource() = default;
  virtual const Role* GetRole(const std::string& ns,
                              const std::string& name) const = 0;
  virtual const Role* GetClusterRole(const std::string& name) const = 0;
  // Calls `visit` for each binding; stops when it returns false.
  virtual void ForEachClusterRoleBinding(
      const std::function<bool(const RoleBinding&)>& visit) const = 0;
  virtual void ForEachRoleBinding(
      const std::string& ns,
      const std::function<bool(const RoleBinding&)>& visit) const = 0;
};

// A policy held in memory: the bootstrap policy, tests.
class StaticPolicy final : public PolicySource {
 public:
  void AddRole(Role r);            // ClusterRole if r.ns is empty
  void AddBinding(RoleBinding b);  // ClusterRoleBinding if b.ns is empty

  const Role* GetRole(const std::string& ns,
                      const std::string& name) const override;
  const Role* GetClusterRole(const std::string& name) const override;
  void ForEachClusterRoleBinding(
      const std::function<bool(const RoleBinding&)>& visit) const override;
  void ForEachRoleBinding(
      const std::string& ns,
      const std::function<bool(const RoleBinding&)>& visit) const override;

 private:
  std::map<std::pair<std::string, std::string>, Role> roles_;  // (ns, name)
  std::vector<RoleBinding> cluster_bindings_;
  std::multimap<std::string, RoleBinding> bindings_;  // by namespace
};

// Whether `rule` allows `a` (the rule's matching only; no subjects).
bool RuleAllows(const PolicyRule& rule, const Attributes& a);
// Whether `subject` names `user`; `binding_ns` is the binding's namespace
// ("" for a ClusterRoleBinding).
bool SubjectMatches(const Subject& subject, const UserInfo& user,
                    const std::string& binding_ns);

class RbacAuthorizer final : public Authorizer {
 public:
  // Borrows `policy`, which must outlive this.
  explicit RbacAuthorizer(const PolicySource* policy) : policy_(policy) {}

  // kAllow with the granting binding and role in `reason`, else
  // kNoOpinion (RBAC never denies; the chain's end does).
  Decision Authorize(const Attributes& a, std::string* reason) const override;

  // Every rule that applies to `user` in namespace `ns` ("" : cluster-wide
  // bindings only), in evaluation order, and the evaluation errors (missing
  // roles) in `errors`: what SelfSubjectRulesReview reports.
  std::vector<PolicyRule> RulesFor(const UserInfo& user, const std::string& ns,
                                   std::vector<std::string>* errors) const;

 private:
  // Visits the rules bound to `user` for `ns`; `visit` returns false to
  // stop. `source` names the binding and role for a reason string.
  void VisitRules(const UserInfo& user, const std::string& ns,
                  const std::function<bool(const std::string& source,
                                           const PolicyRule&)>& visit,
                  std::vector<std::string>* errors) const;

  const PolicySource* const policy_;
};

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_RBAC_H_
