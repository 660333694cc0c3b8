// RBAC's policy as the API server serves it: the Role, ClusterRole,
// RoleBinding and ClusterRoleBinding objects of rbac.authorization.k8s.io/v1
// read from the server's own watch caches (apiserver/cacher), so that a new
// or changed binding takes effect as soon as its watch event arrives, with
// no restart and no store read per request (kube's RBAC authorizer reads
// its informers the same way).
//
//   RbacPolicyCache policy({.roles = ..., .cluster_roles = ...,
//                           .role_bindings = ..., .cluster_role_bindings =
//                           ...},
//                          bootstrap);
//   RETURN_IF_ERROR(policy.Start(revision_after_bootstrap_writes));
//   std::shared_ptr<const auth::StaticPolicy> now = policy.Current();
//   auth::RbacAuthorizer rbac(now.get());      // one per request
//   ...
//   policy.Stop();                             // before the caches stop
//
// Each Current() is an immutable snapshot (rebuilt on every change of the
// four resources; RBAC objects are few and change rarely), so one request
// is evaluated against one consistent policy. Until every cache has sent
// its initial objects (as of the revision given to Start, so the bootstrap
// objects just written are in), Current() is the `fallback` policy (the
// compiled-in bootstrap policy). A watch the cache closes (a relist) is
// opened again; the last snapshot stays in effect until the new initial
// objects have all arrived.
//
// Also here: the conversions between the API objects and auth/'s types,
// and the bootstrap objects as stored (with kube's
// rbac.authorization.kubernetes.io/autoupdate annotation).
//
// Thread-safety: Current() from any thread; Start/Stop from one. Errors:
// Start returns the caches' watch errors.
#ifndef KPLANE_APISERVER_RBAC_POLICY_H_
#define KPLANE_APISERVER_RBAC_POLICY_H_

#include <array>
#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "apiserver/auth/rbac.h"
#include "apiserver/cacher/cacher.h"
#include "base/mutex.h"
#include "base/status.h"
#include "schemas/k8s/rbac.pb.h"

namespace kplane::apiserver {

namespace rbacv1 = ::k8s::io::api::rbac::v1;

inline constexpr char kRbacGroup[] = "rbac.authorization.k8s.io";
inline constexpr char kAutoupdateAnnotation[] =
    "rbac.authorization.kubernetes.io/autoupdate";

// API object -> auth/ type.
auth::PolicyRule PolicyRuleFromApi(const rbacv1::PolicyRule& r);
auth::Role RoleFromApi(const rbacv1::Role& r);
auth::Role RoleFromApi(const rbacv1::ClusterRole& r);
auth::RoleBinding BindingFromApi(const rbacv1::RoleBinding& b);
auth::RoleBinding BindingFromApi(const rbacv1::ClusterRoleBinding& b);

// auth/ type -> API object, as the bootstrap policy is stored: labelled
// kubernetes.io/bootstrapping=rbac-defaults, annotated autoupdate "true".
rbacv1::PolicyRule PolicyRuleToApi(const auth::PolicyRule& r);
rbacv1::ClusterRole BootstrapClusterRoleToApi(const auth::Role& r);
rbacv1::ClusterRoleBinding BootstrapClusterRoleBindingToApi(
    const auth::RoleBinding& b);

// RBAC's escalation check (kube's ConfirmNoEscalation): nullopt when
// `owner_rules` (what the user holds where the role applies) cover every
// rule of `rules`, else kube's message: `user "alice" (groups=["dev"
// "system:authenticated"]) is attempting to grant RBAC permissions not
// currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["create"]}`,
// one line per missing rule. Coverage is kube's: a wildcard is covered
// only by a wildcard, a rule without resourceNames only by one without.
std::optional<std::string> EscalationError(
    const auth::UserInfo& user,
    const std::vector<auth::PolicyRule>& owner_rules,
    const std::vector<auth::PolicyRule>& rules,
    const std::vector<std::string>& resolution_errors);

class RbacPolicyCache {
 public:
  struct Caches {
    Cacher* roles = nullptr;
    Cacher* cluster_roles = nullptr;
    Cacher* role_bindings = nullptr;
    Cacher* cluster_role_bindings = nullptr;
  };
  RbacPolicyCache(Caches caches,
                  std::shared_ptr<const auth::StaticPolicy> fallback);
  ~RbacPolicyCache();  // Stop()s
  RbacPolicyCache(const RbacPolicyCache&) = delete;
  RbacPolicyCache& operator=(const RbacPolicyCache&) = delete;

  // Opens the four watches (initial objects as of at least `revision`).
  Status Start(int64_t revision);
  void Stop();

  std::shared_ptr<const auth::StaticPolicy> Current() const;
  // Every cache's initial objects have arrived (Current() is no longer the
  // fallback).
  bool synced() const;

 private:
  class Sink;
  enum Kind { kRoles, kClusterRoles, kRoleBindings, kClusterRoleBindings };
  static constexpr int kKinds = 4;

  Cacher* CacherOf(int kind) const;
  Status Watch(int kind, int64_t revision);
  void OnEvent(int kind, uint64_t generation, const WatchEvent& e);
  void OnClose(int kind, uint64_t generation);
  void Rebuild() REQUIRES(mu_);
  void RewatchLoop();

  const Caches caches_;
  const std::shared_ptr<const auth::StaticPolicy> fallback_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  // Per kind: objects by "ns/name", as converted; `loading` collects a
  // watch's initial objects until its end bookmark replaces `live`.
  struct KindState {
    std::map<std::string, auth::Role> roles;
    std::map<std::string, auth::RoleBinding> bindings;
    std::map<std::string, auth::Role> loading_roles;
    std::map<std::string, auth::RoleBinding> loading_bindings;
    bool loading = true;
    bool ever_synced = false;
    bool needs_rewatch = false;
    uint64_t generation = 0;  // which watch the events belong to
  };
  std::array<KindState, kKinds> kinds_ GUARDED_BY(mu_);
  std::shared_ptr<const auth::StaticPolicy> current_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::array<std::unique_ptr<WatchHandle>, kKinds> handles_ GUARDED_BY(mu_);
  std::thread rewatch_thread_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_RBAC_POLICY_H_
