// DynamicClient: the Kubernetes REST API for resources of any kind, named
// by group/version/resource, with objects as JSON documents (client-go's
// dynamic.Interface). Custom resources have no compiled-in type, and
// generic tools (appliers, garbage collectors, envtest) handle every kind
// alike: both use this instead of RestClient's typed verbs.
//
//   DynamicClient dyn(rest_client);  // borrows the RestClient
//   GroupVersionResource widgets{"example.com", "v1", "widgets"};
//   StatusOr<Unstructured> w = dyn.Resource(widgets).Namespace("default")
//                                  .Get("w1");
//   if (IsNotFound(w.status())) ...
//   w->SetNestedInt64({"spec", "size"}, 5);
//   dyn.Resource(widgets).Namespace("default").Update(*w);  // PUT (CAS on RV)
//   dyn.Resource(widgets).Namespace("default").Patch(
//       "w1", PatchType::kMergePatch, R"({"spec":{"size":6}})");
//   StatusOr<UnstructuredList> all =
//       dyn.Resource(widgets).List({.label_selector = "app=web"});
//   auto watch = dyn.Resource(widgets).Watch({.resource_version = rv});
//   // watch events carry UnstructuredObject messages:
//   // Unstructured::FromObject(*event.object)
//
// Paths: /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>
// [/<subresource>]] (/api/v1/... for the core group). Without
// Namespace(), requests go to the cluster-wide path: cluster-scoped
// resources, or a LIST/WATCH across all namespaces. Create and Update use
// the client's namespace, else the object's metadata.namespace.
//
// Requests and answers are JSON whatever the RestClient's `protobuf`
// setting (custom resources have no protobuf form). Everything else is the
// RestClient's: server, TLS and client certificate, bearer token (from a
// kubeconfig: kpctl/kube/kubeconfig.h, cmd/kplane/kubeconfig_flags.h),
// retries, timeouts, connection pool, metrics.
//
// MapKind() is client-go's discovery RESTMapper: it asks discovery
// (GET /api/v1, /apis/<group>/<version>) which resource serves a kind and
// whether it is namespaced, so manifests (apiVersion + kind) can be sent
// to the right collection.
//
// Errors: the API's answers as api_errors.h Status values (IsNotFound,
// IsConflict, IsAlreadyExists, IsInvalid, ...), transport errors as
// RestClient's; InvalidArgument for an answer that is not a JSON object,
// for Update/Create of an object without metadata.name (Update) or with a
// namespace other than the client's; MapKind: NotFound
// `no matches for kind "Widget" in version "example.com/v1"`.
//
// Thread-safety: DynamicClient's methods may be called from any thread;
// DynamicResourceClient is a cheap value (copy it per thread or share it
// const). Ownership: the RestClient must outlive the DynamicClient, which
// must outlive its resource clients and their watches.
#ifndef KPLANE_INFORMER_DYNAMIC_CLIENT_H_
#define KPLANE_INFORMER_DYNAMIC_CLIENT_H_

#include <compare>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/statusor.h"
#include "informer/rest_client.h"
#include "informer/unstructured.h"
#include "informer/watch.h"
#include "objects/scheme.h"

namespace kplane::informer {

struct GroupVersionResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // plural: "widgets"

  // "widgets.v1.example.com" ("configmaps.v1." for the core group), as
  // client-go's GroupVersionResource.String() names it.
  std::string ToString() const;
  friend auto operator<=>(const GroupVersionResource&,
                          const GroupVersionResource&) = default;
};

// What discovery says about a kind (MapKind).
struct ResourceMapping {
  GroupVersionResource gvr;
  std::string kind;
  bool namespaced = true;
};

class DynamicClient;

class DynamicResourceClient {
 public:
  // The same resource in namespace `ns` ("" = cluster-wide).
  DynamicResourceClient Namespace(std::string_view ns) const;

  StatusOr<Unstructured> Get(std::string_view name,
                             const GetOptions& options = {},
                             std::string_view subresource = {}) const;
  StatusOr<UnstructuredList> List(const ListOptions& options = {}) const;
  // A watch (no retries); events carry UnstructuredObject messages.
  StatusOr<std::unique_ptr<WatchStream>> Watch(
      const ListOptions& options) const;
  // POST to the collection, or with a subresource to
  // <name>/<subresource> (name from the object).
  StatusOr<Unstructured> Create(const Unstructured& obj,
                                const WriteOptions& options = {},
                                std::string_view subresource = {}) const;
  // PUT to the object's path; metadata.resourceVersion, when set, makes it
  // a compare-and-swap (409 Conflict if stale).
  StatusOr<Unstructured> Update(const Unstructured& obj,
                                const WriteOptions& options = {},
                                std::string_view subresource = {}) const;
  StatusOr<Unstructured> UpdateStatus(const Unstructured& obj,
                                      const WriteOptions& options = {}) const {
    return Update(obj, options, "status");
  }
  // kJsonPatch, kMergePatch or kApplyPatch (custom resources have no
  // strategic merge patch: the server answers 415).
  StatusOr<Unstructured> Patch(std::string_view name, PatchType type,
                               std::string_view patch,
                               const WriteOptions& options = {},
                               std::string_view subresource = {}) const;
  // Server-side apply of `obj` (its JSON is the apply configuration);
  // options.field_manager is required, as kube-apiserver requires it.
  StatusOr<Unstructured> Apply(const Unstructured& obj,
                               const WriteOptions& options) const;
  Status Delete(std::string_view name,
                const objects::metav1::DeleteOptions& options = {}) const;
  // Deletes every object the list options select.
  Status DeleteCollection(const objects::metav1::DeleteOptions& options = {},
                          const ListOptions& list_options = {}) const;

  const GroupVersionResource& gvr() const { return gvr_; }
  const std::string& ns() const { return ns_; }

 private:
  friend class DynamicClient;
  DynamicResourceClient(DynamicClient* client, GroupVersionResource gvr,
                        const objects::ResourceInfo* resource, std::string ns)
      : client_(client),
        gvr_(std::move(gvr)),
        resource_(resource),
        ns_(std::move(ns)) {}
  std::string Path(std::string_view ns, std::string_view name = {},
                   std::string_view subresource = {}) const;
  // The namespace a write of `obj` goes to.
  StatusOr<std::string> WriteNamespace(const Unstructured& obj) const;
  StatusOr<Unstructured> Send(RestRequest req) const;

  DynamicClient* client_;
  GroupVersionResource gvr_;
  const objects::ResourceInfo* resource_;  // owned by the DynamicClient
  std::string ns_;
};

class DynamicClient {
 public:
  explicit DynamicClient(RestClient* client);
  DynamicClient(const DynamicClient&) = delete;
  DynamicClient& operator=(const DynamicClient&) = delete;

  DynamicResourceClient Resource(const GroupVersionResource& gvr);

  // The ResourceInfo this client uses for `gvr`: its kind is unstructured,
  // so RestClient::ListObjects/Watch and RestListerWatcher return
  // UnstructuredObjects for it. Valid as long as the client; the same
  // pointer for the same gvr (informer factories key on it).
  const objects::ResourceInfo& ResourceInfoFor(const GroupVersionResource& gvr)
      EXCLUDES(mu_);

  // Discovery: the resource serving `kind` of `api_version`.
  StatusOr<ResourceMapping> MapKind(std::string_view api_version,
                                    std::string_view kind);

  RestClient* rest_client() const { return client_; }

 private:
  struct Entry {
    objects::KindInfo kind;
    objects::ResourceInfo resource;
  };

  RestClient* const client_;
  Mutex mu_;
  std::map<GroupVersionResource, std::unique_ptr<Entry>> entries_
      GUARDED_BY(mu_);
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_DYNAMIC_CLIENT_H_
