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
// kube aggregates admin/edit/view from labelled ClusterRoles; here their
// rules are written out (aggregation is not served yet).
// Thread-safety: pure functions. Errors: none.
#ifndef KPLANE_APISERVER_AUTH_BOOTSTRAP_POLICY_H_
#define KPLANE_APISERVER_AUTH_BOOTSTRAP_POLICY_H_

#include <vector>

#include "apiserver/auth/rbac.h"

namespace kplane::apiserver::auth {

std::vector<Role> BootstrapClusterRoles();
std::vector<RoleBinding> BootstrapClusterRoleBindings();

// Adds both to `policy`.
void AddBootstrapPolicy(StaticPolicy* policy);

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_BOOTSTRAP_POLICY_H_
