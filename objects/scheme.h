// The type registry: one table of the API kinds and resources kplane serves,
// used by the apiserver (routing, discovery, body decoding), kpctl (resolving
// "deploy", "po", "deployment.apps") and the clients.
//
//   Kind      apiVersion + kind <-> protobuf message (Pod, PodList, Status,
//             DeleteOptions, Scale, Binding, List, ...), with a factory.
//   Resource  the REST collection: group, version, plural ("deployments"),
//             singular, short names, namespaced or not, verbs, categories,
//             subresources (status, scale, binding) and the kind of each.
//
// Built-in content (Scheme::Default()):
//   core v1      pods (po), nodes (no), namespaces (ns), configmaps (cm),
//                secrets, services (svc), events (ev), bindings;
//                pods/status, pods/binding, nodes/status, namespaces/status,
//                namespaces/finalize (update only), services/status
//   apps/v1      deployments (deploy), replicasets (rs), each with /status
//                and /scale (autoscaling/v1 Scale)
//   coordination.k8s.io/v1  leases
//   events.k8s.io/v1  events (core/v1 events in another form; no short name)
//
// Thread-safety: a Scheme is immutable after construction; Default() is
// built once on first use and safe to share. Lookups return nullptr when
// nothing matches.
#ifndef KPLANE_OBJECTS_SCHEME_H_
#define KPLANE_OBJECTS_SCHEME_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "objects/codec.h"

namespace kplane::objects {

struct GroupVersion {
  std::string group;  // "" for the core group
  std::string version;
  // "v1" for core, "apps/v1" otherwise.
  std::string ApiVersion() const;
  // Splits "apps/v1" / "v1".
  static GroupVersion Parse(std::string_view api_version);
  friend bool operator==(const GroupVersion&, const GroupVersion&) = default;
};

struct KindInfo {
  GroupVersion gv;
  std::string kind;
  const google::protobuf::Descriptor* descriptor = nullptr;
  const google::protobuf::Message* prototype = nullptr;

  TypeMeta type_meta() const { return {gv.ApiVersion(), kind}; }
  std::unique_ptr<google::protobuf::Message> New() const {
    return std::unique_ptr<google::protobuf::Message>(prototype->New());
  }
};

struct SubresourceInfo {
  std::string name;  // "status", "scale", "binding", "finalize"
  // The kind the subresource reads and writes (Scale is autoscaling/v1).
  const KindInfo* kind = nullptr;
  std::vector<std::string> verbs;
};

struct ResourceInfo {
  GroupVersion gv;
  std::string resource;  // plural, e.g. "deployments"
  std::string singular;  // "deployment"
  bool namespaced = true;
  const KindInfo* kind = nullptr;
  const KindInfo* list_kind = nullptr;  // null for create-only resources
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;
  std::vector<SubresourceInfo> subresources;

  // "deployments.apps", or "pods" for the core group, as error messages
  // name resources (`deployments.apps "web" not found`).
  std::string GroupResource() const;
  const SubresourceInfo* FindSubresource(std::string_view name) const;
};

class Scheme {
 public:
  // Kinds and resources of the API kplane serves.
  static const Scheme& Default();

  Scheme(const Scheme&) = delete;
  Scheme& operator=(const Scheme&) = delete;

  // By apiVersion and kind, e.g. ("apps/v1", "Deployment").
  const KindInfo* FindKind(std::string_view api_version,
                           std::string_view kind) const;
  // The canonical kind of a message type (a type registered under several
  // group-versions, like DeleteOptions, answers its first registration).
  const KindInfo* KindFor(const google::protobuf::Descriptor* d) const;

  // By group, version and plural ("apps", "v1", "deployments").
  const ResourceInfo* FindResource(std::string_view group,
                                   std::string_view version,
                                   std::string_view resource) const;
  // The resource whose objects are of this kind (Pod -> pods).
  const ResourceInfo* ResourceForKind(const KindInfo& kind) const;
  // kubectl-style resolution of a user's word: plural, singular, short
  // name or kind, case-insensitive, optionally qualified by group
  // ("deploy", "Deployment", "deployments.apps", "rs.apps").
  const ResourceInfo* Resolve(std::string_view name) const;

  const std::vector<std::unique_ptr<ResourceInfo>>& resources() const {
    return resources_;
  }
  const std::vector<std::unique_ptr<KindInfo>>& kinds() const { return kinds_; }
  // Served group-versions, core first, in registration order.
  std::vector<GroupVersion> GroupVersions() const;

 private:
  Scheme() = default;
  const KindInfo* AddKind(std::string_view api_version, std::string_view kind,
                          const google::protobuf::Message& prototype);
  ResourceInfo* AddResource(std::unique_ptr<ResourceInfo> r);
  static void RegisterBuiltins(Scheme* s);

  std::vector<std::unique_ptr<KindInfo>> kinds_;
  std::vector<std::unique_ptr<ResourceInfo>> resources_;
};

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_SCHEME_H_
