#include "apiserver/auth/bootstrap_policy.h"

#include <string>
#include <utility>

namespace kplane::apiserver::auth {
namespace {

using Strings = std::vector<std::string>;

const Strings kRead = {"get", "list", "watch"};
const Strings kWrite = {"create", "delete", "deletecollection", "patch",
                        "update"};
const Strings kReadWrite = {"get",    "list",   "watch",
                            "create", "delete", "deletecollection",
                            "patch",  "update"};

PolicyRule Res(Strings verbs, Strings groups, Strings resources) {
  return PolicyRule{.verbs = std::move(verbs),
                    .api_groups = std::move(groups),
                    .resources = std::move(resources)};
}

PolicyRule Urls(Strings verbs, Strings urls) {
  return PolicyRule{.verbs = std::move(verbs),
                    .non_resource_urls = std::move(urls)};
}

Subject Group(std::string name) {
  return Subject{.kind = Subject::Kind::kGroup, .name = std::move(name)};
}

Subject User(std::string name) {
  return Subject{.kind = Subject::Kind::kUser, .name = std::move(name)};
}

RoleBinding Bind(std::string role, std::vector<Subject> subjects) {
  RoleBinding b;
  b.name = role;
  b.role_ref = RoleRef{.cluster_role = true, .name = std::move(role)};
  b.subjects = std::move(subjects);
  return b;
}

// What `view` reads: kube's view role's resources that kplane serves or
// will (no Secrets: reading them would give a ServiceAccount's token).
std::vector<PolicyRule> ViewRules() {
  return {
      Res(kRead, {""},
          {"configmaps",
           "endpoints",
           "persistentvolumeclaims",
           "persistentvolumeclaims/status",
           "pods",
           "pods/log",
           "pods/status",
           "replicationcontrollers",
           "replicationcontrollers/scale",
           "replicationcontrollers/status",
           "serviceaccounts",
           "services",
           "services/status",
           "bindings",
           "events",
           "limitranges",
           "resourcequotas",
           "resourcequotas/status",
           "namespaces",
           "namespaces/status"}),
      Res(kRead, {"apps"},
          {"controllerrevisions", "daemonsets", "daemonsets/status",
           "deployments", "deployments/scale", "deployments/status",
           "replicasets", "replicasets/scale", "replicasets/status",
           "statefulsets", "statefulsets/scale", "statefulsets/status"}),
      Res(kRead, {"autoscaling"},
          {"horizontalpodautoscalers", "horizontalpodautoscalers/status"}),
      Res(kRead, {"batch"},
          {"cronjobs", "cronjobs/status", "jobs", "jobs/status"}),
      Res(kRead, {"coordination.k8s.io"}, {"leases"}),
      Res(kRead, {"discovery.k8s.io"}, {"endpointslices"}),
      Res(kRead, {"policy"},
          {"poddisruptionbudgets", "poddisruptionbudgets/status"}),
      // kubectl top: in kube, metrics-server's
      // system:aggregated-metrics-reader role, aggregated into view, edit
      // and admin; kplane serves metrics.k8s.io itself.
      Res(kRead, {"metrics.k8s.io"}, {"pods", "nodes"}),
  };
}

// What `edit` adds: writes to the workload resources, Secrets, exec/logs.
std::vector<PolicyRule> EditRules() {
  std::vector<PolicyRule> r = ViewRules();
  r.push_back(
      Res(kReadWrite, {""},
          {"configmaps", "endpoints", "persistentvolumeclaims", "pods",
           "replicationcontrollers", "replicationcontrollers/scale", "secrets",
           "serviceaccounts", "services", "services/proxy"}));
  r.push_back(Res({"create"}, {""},
                  {"pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
                   "pods/eviction", "serviceaccounts/token"}));
  r.push_back(Res({"get", "list", "watch"}, {""},
                  {"pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
                   "secrets"}));
  r.push_back(Res({"impersonate"}, {""}, {"serviceaccounts"}));
  r.push_back(Res(kReadWrite, {"apps"},
                  {"daemonsets", "deployments", "deployments/rollback",
                   "deployments/scale", "replicasets", "replicasets/scale",
                   "statefulsets", "statefulsets/scale"}));
  r.push_back(Res(kReadWrite, {"autoscaling"}, {"horizontalpodautoscalers"}));
  r.push_back(Res(kReadWrite, {"batch"}, {"cronjobs", "jobs"}));
  r.push_back(Res(kReadWrite, {"coordination.k8s.io"}, {"leases"}));
  r.push_back(Res(kReadWrite, {"policy"}, {"poddisruptionbudgets"}));
  return r;
}

// What `admin` adds: the namespace's own access control.
std::vector<PolicyRule> AdminRules() {
  std::vector<PolicyRule> r = EditRules();
  r.push_back(Res(kReadWrite, {"rbac.authorization.k8s.io"},
                  {"rolebindings", "roles"}));
  r.push_back(
      Res({"create"}, {"authorization.k8s.io"}, {"localsubjectaccessreviews"}));
  return r;
}

}  // namespace

std::vector<Role> BootstrapClusterRoles() {
  std::vector<Role> roles;
  auto add = [&](std::string name, std::vector<PolicyRule> rules) {
    roles.push_back(Role{.name = std::move(name), .rules = std::move(rules)});
  };
  add("cluster-admin", {Res({"*"}, {"*"}, {"*"}), Urls({"*"}, {"*"})});
  add("admin", AdminRules());
  add("edit", EditRules());
  add("view", ViewRules());
  // What the aggregated roles above select (kube's names and labels).
  add("system:aggregate-to-admin", AdminRules());
  add("system:aggregate-to-edit", EditRules());
  add("system:aggregate-to-view", ViewRules());
  add("system:discovery",
      {Urls({"get"},
            {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
             "/openapi", "/openapi/*", "/readyz", "/version", "/version/"})});
  // kplane adds the web view's static files (issue 21, docs/ui.md): the
  // page itself is public like /healthz; every call it makes carries the
  // user's token. Named one by one: "/ui/*" would also cover
  // /ui/api/store, which is not public.
  add("system:public-info-viewer",
      {Urls({"get"},
            {"/healthz", "/livez", "/readyz", "/version", "/version/", "/ui",
             "/ui/", "/ui/index.html", "/ui/app.css", "/ui/app.js"})});
  add("system:basic-user",
      {Res({"create"}, {"authorization.k8s.io"},
           {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}),
       Res({"create"}, {"authentication.k8s.io"}, {"selfsubjectreviews"})});
  // kplane's controllers (controllers/): the deployment and replica set
  // controllers, the scheduler's bindings, node lifecycle (node status,
  // taints, evictions), namespace deletion (every namespaced resource), pod
  // and garbage collection, and their leader-election lease and events.
  add("system:kube-controller-manager",
      {Res(kRead, {"*"}, {"*"}),
       Res(kReadWrite, {""},
           {"pods", "pods/status", "nodes", "nodes/status", "events",
            "configmaps", "secrets", "services", "endpoints", "serviceaccounts",
            "namespaces", "namespaces/finalize", "namespaces/status"}),
       Res({"create"}, {""},
           {"pods/binding", "bindings", "pods/eviction",
            "serviceaccounts/token"}),
       Res(kReadWrite, {"apps"},
           {"deployments", "deployments/status", "deployments/scale",
            "replicasets", "replicasets/status", "replicasets/scale"}),
       // The statefulset and daemonset controllers write the status and
       // their history (kube's daemon-set-controller and
       // statefulset-controller roles: get list watch create update patch
       // delete on controllerrevisions).
       Res({"update"}, {"apps"}, {"statefulsets/status", "daemonsets/status"}),
       Res(kReadWrite, {"apps"}, {"controllerrevisions"}),
       Res(kReadWrite, {"batch"},
           {"jobs", "jobs/status", "cronjobs", "cronjobs/status"}),
       Res(kReadWrite, {"coordination.k8s.io"}, {"leases"}),
       Res(kReadWrite, {"events.k8s.io"}, {"events"}),
       // The clusterrole-aggregation controller writes rules it need not
       // hold itself (kube's "escalate" on clusterroles).
       Res({"escalate", "update", "patch"}, {"rbac.authorization.k8s.io"},
           {"clusterroles"}),
       // The EndpointSlice controller's slices; the disruption
       // controller's budget status.
       Res({"create", "update"}, {"discovery.k8s.io"}, {"endpointslices"}),
       Res({"update"}, {"policy"}, {"poddisruptionbudgets/status"}),
       Res({"delete", "deletecollection"}, {"*"}, {"*"}),
       // The garbage collector removes ownerReferences and its finalizers
       // from objects of every resource, custom ones included (kube's
       // system:controller:generic-garbage-collector: get, list, watch,
       // patch, update, delete on everything).
       Res({"patch", "update"}, {"*"}, {"*"}),
       Urls({"get"}, {"/healthz", "/api", "/api/*", "/apis", "/apis/*"})});
  add("system:kube-scheduler",
      {Res(kRead, {""}, {"nodes", "pods", "namespaces", "services"}),
       Res({"create"}, {""}, {"pods/binding", "bindings"}),
       Res({"patch", "update"}, {""}, {"pods/status"}),
       Res({"create", "patch", "update"}, {""}, {"events"}),
       Res(kReadWrite, {"coordination.k8s.io"}, {"leases"})});
  return roles;
}

std::map<std::string, std::string> BootstrapAggregationLabels(
    const std::string& name) {
  if (name == "edit" || name == "system:aggregate-to-admin") {
    return {{kAggregateToAdminLabel, "true"}};
  }
  if (name == "view" || name == "system:aggregate-to-edit") {
    return {{kAggregateToEditLabel, "true"}};
  }
  if (name == "system:aggregate-to-view") {
    return {{kAggregateToViewLabel, "true"}};
  }
  return {};
}

std::string BootstrapAggregationSelector(const std::string& name) {
  if (name == "admin") return kAggregateToAdminLabel;
  if (name == "edit") return kAggregateToEditLabel;
  if (name == "view") return kAggregateToViewLabel;
  return "";
}

std::vector<RoleBinding> BootstrapClusterRoleBindings() {
  return {
      Bind("cluster-admin", {Group(kSystemMasters)}),
      Bind("system:discovery", {Group(kAllAuthenticated)}),
      Bind("system:public-info-viewer",
           {Group(kAllAuthenticated), Group(kAllUnauthenticated)}),
      Bind("system:basic-user", {Group(kAllAuthenticated)}),
      Bind("system:kube-controller-manager",
           {User("system:kube-controller-manager")}),
      Bind("system:kube-scheduler", {User("system:kube-scheduler")}),
  };
}

void AddBootstrapPolicy(StaticPolicy* policy) {
  for (Role& r : BootstrapClusterRoles()) policy->AddRole(std::move(r));
  for (RoleBinding& b : BootstrapClusterRoleBindings()) {
    policy->AddBinding(std::move(b));
  }
}

}  // namespace kplane::apiserver::auth
