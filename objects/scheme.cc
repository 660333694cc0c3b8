#include "objects/scheme.h"

#include "base/logging.h"
#include "base/strings.h"
#include "objects/apps_workloads_types.h"
#include "objects/batch_types.h"
#include "objects/discovery_types.h"
#include "objects/events_types.h"
#include "objects/endpoints_types.h"
#include "objects/serviceaccount_types.h"
#include "objects/types.h"
#include "schemas/k8s/authentication.pb.h"
#include "schemas/k8s/authentication_v1beta1.pb.h"
#include "schemas/k8s/authorization.pb.h"
#include "schemas/k8s/rbac.pb.h"

namespace kplane::objects {

std::string GroupVersion::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

GroupVersion GroupVersion::Parse(std::string_view api_version) {
  const size_t slash = api_version.find('/');
  if (slash == std::string_view::npos) return {"", std::string(api_version)};
  return {std::string(api_version.substr(0, slash)),
          std::string(api_version.substr(slash + 1))};
}

std::string ResourceInfo::GroupResource() const {
  return gv.group.empty() ? resource : resource + "." + gv.group;
}

const SubresourceInfo* ResourceInfo::FindSubresource(
    std::string_view name) const {
  for (const SubresourceInfo& s : subresources) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Scheme& Scheme::Default() {
  static const Scheme* scheme = [] {
    auto* s = new Scheme();
    RegisterBuiltins(s);
    return s;
  }();
  return *scheme;
}

const KindInfo* Scheme::AddKind(std::string_view api_version,
                                std::string_view kind,
                                const google::protobuf::Message& prototype) {
  CHECK(FindKind(api_version, kind) == nullptr)
      << "kind registered twice: " << api_version << " " << kind;
  auto k = std::make_unique<KindInfo>();
  k->gv = GroupVersion::Parse(api_version);
  k->kind = std::string(kind);
  k->descriptor = prototype.GetDescriptor();
  k->prototype = &prototype;
  kinds_.push_back(std::move(k));
  return kinds_.back().get();
}

ResourceInfo* Scheme::AddResource(std::unique_ptr<ResourceInfo> r) {
  CHECK(FindResource(r->gv.group, r->gv.version, r->resource) == nullptr)
      << "resource registered twice: " << r->GroupResource();
  resources_.push_back(std::move(r));
  return resources_.back().get();
}

const KindInfo* Scheme::FindKind(std::string_view api_version,
                                 std::string_view kind) const {
  for (const auto& k : kinds_) {
    if (k->kind == kind && k->gv.ApiVersion() == api_version) return k.get();
  }
  return nullptr;
}

const KindInfo* Scheme::KindFor(const google::protobuf::Descriptor* d) const {
  for (const auto& k : kinds_) {
    if (k->descriptor == d) return k.get();
  }
  return nullptr;
}

const ResourceInfo* Scheme::FindResource(std::string_view group,
                                         std::string_view version,
                                         std::string_view resource) const {
  for (const auto& r : resources_) {
    if (r->resource == resource && r->gv.group == group &&
        r->gv.version == version) {
      return r.get();
    }
  }
  return nullptr;
}

const ResourceInfo* Scheme::ResourceForKind(const KindInfo& kind) const {
  for (const auto& r : resources_) {
    if (r->kind == &kind) return r.get();
  }
  return nullptr;
}

const ResourceInfo* Scheme::Resolve(std::string_view name) const {
  std::string word = ToLower(name);
  std::string group;
  const size_t dot = word.find('.');
  if (dot != std::string::npos) {
    group = word.substr(dot + 1);
    word.resize(dot);
  }
  // kubectl prefers an exact plural, then singular, short name and kind.
  for (int pass = 0; pass < 4; ++pass) {
    for (const auto& r : resources_) {
      // "deployments.apps" or "deployments.v1.apps".
      if (dot != std::string::npos && r->gv.group != group &&
          r->gv.version + "." + r->gv.group != group) {
        continue;
      }
      bool match = false;
      switch (pass) {
        case 0:
          match = r->resource == word;
          break;
        case 1:
          match = r->singular == word;
          break;
        case 2:
          for (const std::string& s : r->short_names) match |= s == word;
          break;
        case 3:
          match = ToLower(r->kind->kind) == word;
          break;
      }
      if (match) return r.get();
    }
  }
  return nullptr;
}

std::vector<GroupVersion> Scheme::GroupVersions() const {
  std::vector<GroupVersion> out;
  for (const auto& r : resources_) {
    bool seen = false;
    for (const GroupVersion& gv : out) seen |= gv == r->gv;
    if (!seen) out.push_back(r->gv);
  }
  return out;
}

void Scheme::RegisterBuiltins(Scheme* s) {
  const std::vector<std::string> kStandardVerbs = {
      "create", "delete", "deletecollection", "get",
      "list",   "patch",  "update",           "watch"};
  const std::vector<std::string> kStatusVerbs = {"get", "patch", "update"};

  // Kinds that are not resources of their own.
  s->AddKind("v1", "Status", metav1::Status::default_instance());
  s->AddKind("v1", "DeleteOptions", metav1::DeleteOptions::default_instance());
  s->AddKind("meta.k8s.io/v1", "DeleteOptions",
             metav1::DeleteOptions::default_instance());
  s->AddKind("meta.k8s.io/v1", "PartialObjectMetadata",
             metav1::PartialObjectMetadata::default_instance());
  s->AddKind("meta.k8s.io/v1", "PartialObjectMetadataList",
             metav1::PartialObjectMetadataList::default_instance());
  s->AddKind("meta.k8s.io/v1beta1", "PartialObjectMetadata",
             metav1::PartialObjectMetadata::default_instance());
  s->AddKind("meta.k8s.io/v1beta1", "PartialObjectMetadataList",
             metav1::PartialObjectMetadataList::default_instance());
  s->AddKind("v1", "WatchEvent", metav1::WatchEvent::default_instance());
  s->AddKind("v1", "List", corev1::List::default_instance());
  const KindInfo* scale = s->AddKind("autoscaling/v1", "Scale",
                                     autoscalingv1::Scale::default_instance());
  const KindInfo* binding =
      s->AddKind("v1", "Binding", corev1::Binding::default_instance());
  // The reviews (create-only, never stored: the apiserver answers them).
  s->AddKind("authorization.k8s.io/v1", "SelfSubjectAccessReview",
             ::k8s::io::api::authorization::v1::SelfSubjectAccessReview::
                 default_instance());
  s->AddKind("authorization.k8s.io/v1", "SubjectAccessReview",
             ::k8s::io::api::authorization::v1::SubjectAccessReview::
                 default_instance());
  s->AddKind("authorization.k8s.io/v1", "LocalSubjectAccessReview",
             ::k8s::io::api::authorization::v1::LocalSubjectAccessReview::
                 default_instance());
  s->AddKind("authorization.k8s.io/v1", "SelfSubjectRulesReview",
             ::k8s::io::api::authorization::v1::SelfSubjectRulesReview::
                 default_instance());
  s->AddKind("authentication.k8s.io/v1", "SelfSubjectReview",
             ::k8s::io::api::authentication::v1::SelfSubjectReview::
                 default_instance());
  s->AddKind(
      "authentication.k8s.io/v1", "TokenReview",
      ::k8s::io::api::authentication::v1::TokenReview::default_instance());
  s->AddKind("authentication.k8s.io/v1beta1", "SelfSubjectReview",
             ::k8s::io::api::authentication::v1beta1::SelfSubjectReview::
                 default_instance());
  // The body of serviceaccounts/<name>/token (create only).
  const KindInfo* token_request =
      s->AddKind("authentication.k8s.io/v1", "TokenRequest",
                 authenticationv1::TokenRequest::default_instance());
  // The body of pods/<name>/eviction (create only).
  const KindInfo* eviction = s->AddKind("policy/v1", "Eviction",
                                        policyv1::Eviction::default_instance());

  struct Spec {
    const char* api_version;
    const char* resource;
    const char* singular;
    const char* kind;
    const google::protobuf::Message* prototype;
    const char* list_kind;
    const google::protobuf::Message* list_prototype;
    bool namespaced;
    std::vector<std::string> short_names;
    std::vector<std::string> categories;
    bool status_subresource;
    bool scale_subresource;
  };
  const Spec specs[] = {
      {"v1",
       "pods",
       "pod",
       "Pod",
       &corev1::Pod::default_instance(),
       "PodList",
       &corev1::PodList::default_instance(),
       true,
       {"po"},
       {"all"},
       true,
       false},
      {"v1",
       "nodes",
       "node",
       "Node",
       &corev1::Node::default_instance(),
       "NodeList",
       &corev1::NodeList::default_instance(),
       false,
       {"no"},
       {},
       true,
       false},
      {"v1",
       "namespaces",
       "namespace",
       "Namespace",
       &corev1::Namespace::default_instance(),
       "NamespaceList",
       &corev1::NamespaceList::default_instance(),
       false,
       {"ns"},
       {},
       true,
       false},
      {"v1",
       "configmaps",
       "configmap",
       "ConfigMap",
       &corev1::ConfigMap::default_instance(),
       "ConfigMapList",
       &corev1::ConfigMapList::default_instance(),
       true,
       {"cm"},
       {},
       false,
       false},
      {"v1",
       "secrets",
       "secret",
       "Secret",
       &corev1::Secret::default_instance(),
       "SecretList",
       &corev1::SecretList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      {"v1",
       "services",
       "service",
       "Service",
       &corev1::Service::default_instance(),
       "ServiceList",
       &corev1::ServiceList::default_instance(),
       true,
       {"svc"},
       {"all"},
       true,
       false},
      {"v1",
       "endpoints",
       "endpoints",
       "Endpoints",
       &corev1::Endpoints::default_instance(),
       "EndpointsList",
       &corev1::EndpointsList::default_instance(),
       true,
       {"ep"},
       {},
       false,
       false},
      {"v1",
       "events",
       "event",
       "Event",
       &corev1::Event::default_instance(),
       "EventList",
       &corev1::EventList::default_instance(),
       true,
       {"ev"},
       {},
       false,
       false},
      {"v1",
       "serviceaccounts",
       "serviceaccount",
       "ServiceAccount",
       &corev1::ServiceAccount::default_instance(),
       "ServiceAccountList",
       &corev1::ServiceAccountList::default_instance(),
       true,
       {"sa"},
       {},
       false,
       false},
      {"apps/v1",
       "deployments",
       "deployment",
       "Deployment",
       &appsv1::Deployment::default_instance(),
       "DeploymentList",
       &appsv1::DeploymentList::default_instance(),
       true,
       {"deploy"},
       {"all"},
       true,
       true},
      {"apps/v1",
       "replicasets",
       "replicaset",
       "ReplicaSet",
       &appsv1::ReplicaSet::default_instance(),
       "ReplicaSetList",
       &appsv1::ReplicaSetList::default_instance(),
       true,
       {"rs"},
       {"all"},
       true,
       true},
      {"apps/v1",
       "statefulsets",
       "statefulset",
       "StatefulSet",
       &appsv1::StatefulSet::default_instance(),
       "StatefulSetList",
       &appsv1::StatefulSetList::default_instance(),
       true,
       {"sts"},
       {"all"},
       true,
       true},
      {"apps/v1",
       "daemonsets",
       "daemonset",
       "DaemonSet",
       &appsv1::DaemonSet::default_instance(),
       "DaemonSetList",
       &appsv1::DaemonSetList::default_instance(),
       true,
       {"ds"},
       {"all"},
       true,
       false},
      {"apps/v1",
       "controllerrevisions",
       "controllerrevision",
       "ControllerRevision",
       &appsv1::ControllerRevision::default_instance(),
       "ControllerRevisionList",
       &appsv1::ControllerRevisionList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      {"batch/v1",
       "jobs",
       "job",
       "Job",
       &batchv1::Job::default_instance(),
       "JobList",
       &batchv1::JobList::default_instance(),
       true,
       {},
       {"all"},
       true,
       false},
      {"batch/v1",
       "cronjobs",
       "cronjob",
       "CronJob",
       &batchv1::CronJob::default_instance(),
       "CronJobList",
       &batchv1::CronJobList::default_instance(),
       true,
       {"cj"},
       {"all"},
       true,
       false},
      {"coordination.k8s.io/v1",
       "leases",
       "lease",
       "Lease",
       &coordinationv1::Lease::default_instance(),
       "LeaseList",
       &coordinationv1::LeaseList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      {"discovery.k8s.io/v1",
       "endpointslices",
       "endpointslice",
       "EndpointSlice",
       &discoveryv1::EndpointSlice::default_instance(),
       "EndpointSliceList",
       &discoveryv1::EndpointSliceList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      // The same stored objects as core/v1 events, in kube's newer form
      // (the apiserver converts: objects/events_types.h). No short name:
      // "ev" stays core/v1's, as kubectl resolves it.
      {"events.k8s.io/v1",
       "events",
       "event",
       "Event",
       &eventsv1::Event::default_instance(),
       "EventList",
       &eventsv1::EventList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      {"policy/v1",
       "poddisruptionbudgets",
       "poddisruptionbudget",
       "PodDisruptionBudget",
       &policyv1::PodDisruptionBudget::default_instance(),
       "PodDisruptionBudgetList",
       &policyv1::PodDisruptionBudgetList::default_instance(),
       true,
       {"pdb"},
       {},
       true,
       false},
      {"rbac.authorization.k8s.io/v1",
       "roles",
       "role",
       "Role",
       &::k8s::io::api::rbac::v1::Role::default_instance(),
       "RoleList",
       &::k8s::io::api::rbac::v1::RoleList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      {"rbac.authorization.k8s.io/v1",
       "clusterroles",
       "clusterrole",
       "ClusterRole",
       &::k8s::io::api::rbac::v1::ClusterRole::default_instance(),
       "ClusterRoleList",
       &::k8s::io::api::rbac::v1::ClusterRoleList::default_instance(),
       false,
       {},
       {},
       false,
       false},
      {"rbac.authorization.k8s.io/v1",
       "rolebindings",
       "rolebinding",
       "RoleBinding",
       &::k8s::io::api::rbac::v1::RoleBinding::default_instance(),
       "RoleBindingList",
       &::k8s::io::api::rbac::v1::RoleBindingList::default_instance(),
       true,
       {},
       {},
       false,
       false},
      {"rbac.authorization.k8s.io/v1",
       "clusterrolebindings",
       "clusterrolebinding",
       "ClusterRoleBinding",
       &::k8s::io::api::rbac::v1::ClusterRoleBinding::default_instance(),
       "ClusterRoleBindingList",
       &::k8s::io::api::rbac::v1::ClusterRoleBindingList::default_instance(),
       false,
       {},
       {},
       false,
       false},
  };
  for (const Spec& spec : specs) {
    auto r = std::make_unique<ResourceInfo>();
    r->gv = GroupVersion::Parse(spec.api_version);
    r->resource = spec.resource;
    r->singular = spec.singular;
    r->namespaced = spec.namespaced;
    r->kind = s->AddKind(spec.api_version, spec.kind, *spec.prototype);
    r->list_kind =
        s->AddKind(spec.api_version, spec.list_kind, *spec.list_prototype);
    r->short_names = spec.short_names;
    r->categories = spec.categories;
    r->verbs = kStandardVerbs;
    if (r->resource == "namespaces") {
      // kube's namespace REST has no DeleteCollection: one DELETE of the
      // collection would take every namespace and all in them (405).
      std::erase(r->verbs, "deletecollection");
    }
    if (spec.status_subresource) {
      r->subresources.push_back({"status", r->kind, kStatusVerbs});
    }
    if (spec.scale_subresource) {
      r->subresources.push_back({"scale", scale, kStatusVerbs});
    }
    if (r->resource == "pods") {
      r->subresources.push_back({"binding", binding, {"create"}});
      r->subresources.push_back({"eviction", eviction, {"create"}});
      // Text from the kubelet (apiserver/pod_logs.h); kube's discovery
      // names the kind Pod too.
      r->subresources.push_back({"log", r->kind, {"get"}});
      // WebSocket streams to the kubelet (apiserver/pod_exec.h); kube's
      // discovery names the kind PodExecOptions, ours the Pod, as log.
      r->subresources.push_back({"exec", r->kind, {"create", "get"}});
    }
    if (r->resource == "serviceaccounts") {
      r->subresources.push_back({"token", token_request, {"create"}});
    }
    if (r->resource == "namespaces") {
      // PUT only: the namespace controller removes its spec finalizer.
      r->subresources.push_back({"finalize", r->kind, {"update"}});
    }
    s->AddResource(std::move(r));
  }
  // POST /api/v1/namespaces/{ns}/bindings: the scheduler's older path.
  auto bindings = std::make_unique<ResourceInfo>();
  bindings->gv = {"", "v1"};
  bindings->resource = "bindings";
  bindings->singular = "binding";
  bindings->namespaced = true;
  bindings->kind = binding;
  bindings->verbs = {"create"};
  s->AddResource(std::move(bindings));
}

}  // namespace kplane::objects
