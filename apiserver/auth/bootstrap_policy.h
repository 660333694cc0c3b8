// The RBAC roles and bindings every cluster starts with, as kube-apiserver's
// bootstrap policy (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/
// bootstrappolicy), limited to the resources kplane serves:
//
//   cluster-admin             everything; bound to the group system:masters
//   admin, edit, view         the user-facing roles (for RoleBindings):
//                             view reads all but Secrets, edit also writes
//                             and reads Secrets, admin also manages Roles and
//                             RoleBindings in the namespace
//   system:discovery          /api, /apis, /openapi, /version, health: bound
//                             to system:authenticated
//   system:public-info-viewer /healthz, /livez, /readyz, /version: bound to
//                             system:authenticated and system:unauthenticated
//   system:basic-user         SelfSubjectAccessReview, SelfSubjectRulesReview,
//                             SelfSubjectReview (kubectl auth can-i, whoami):
//                             bound to system:authenticated
//   system:kube-controller-manager  what kplane's controllers read and write
//                             (one identity for all of them: kplane runs the
//                             controllers in one process without per-
//                             controller ServiceAccounts); bound to the user
//                             system:kube-controller-manager
//   system:kube-scheduler     the scheduler's reads, bindings, pod status
//
// Aggregation, as kube: admin, edit and view carry an aggregationRule
// selecting ClusterRoles labelled rbac.authorization.k8s.io/aggregate-to-
// admin, -edit and -view "true"; edit is labelled aggregate-to-admin and
// view aggregate-to-edit (so view's rules flow into edit and admin), and
// system:aggregate-to-admin/edit/view hold the base rules. The controller
// manager's clusterrole-aggregation controller keeps each aggregated role's
// rules the union of what its selectors match. The three roles' base rules
// are also written out in them, so they grant what they should before the
// controller has run (or without a controller manager at all).
// Thread-safety: pure functions. Errors: none.
#ifndef KPLANE_APISERVER_AUTH_BOOTSTRAP_POLICY_H_
#define KPLANE_APISERVER_AUTH_BOOTSTRAP_POLICY_H_

#include <map>
#include <string>
#include <vector>

#include "apiserver/auth/rbac.h"

namespace kplane::apiserver::auth {

std::vector<Role> BootstrapClusterRoles();

// The aggregation labels kube's bootstrap roles use.
inline constexpr char kAggregateToAdminLabel[] =
    "rbac.authorization.k8s.io/aggregate-to-admin";
inline constexpr char kAggregateToEditLabel[] =
    "rbac.authorization.k8s.io/aggregate-to-edit";
inline constexpr char kAggregateToViewLabel[] =
    "rbac.authorization.k8s.io/aggregate-to-view";

// The aggregation labels bootstrap ClusterRole `name` carries (label ->
// "true"; empty for most roles).
std::map<std::string, std::string> BootstrapAggregationLabels(
    const std::string& name);
// The label whose value "true" bootstrap ClusterRole `name`'s
// aggregationRule selects; "" when the role is not aggregated.
std::string BootstrapAggregationSelector(const std::string& name);
std::vector<RoleBinding> BootstrapClusterRoleBindings();

// Adds both to `policy`.
void AddBootstrapPolicy(StaticPolicy* policy);

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_BOOTSTRAP_POLICY_H_
