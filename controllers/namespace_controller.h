// NamespaceController: empties a Terminating namespace, then removes its
// "kubernetes" spec finalizer, which ends it (Kubernetes' namespace
// controller: pkg/controller/namespace and its deletion package).
//
// Deleting a namespace makes it Terminating (deletionTimestamp set,
// status.phase Terminating) with spec.finalizers still holding
// "kubernetes"; the API server accepts no new content in it. For such a
// namespace, Sync(name):
//   1. reads it live (the cache may lag): gone, not being deleted, or
//      without "kubernetes" in spec.finalizers -> nothing to do;
//   2. for every namespaced resource that can be listed and deleted:
//      deletecollection in the namespace with propagationPolicy Background
//      (list and delete each object where the resource has no
//      deletecollection), then a LIST of what is left. Objects are deleted
//      as any client's DELETE would: bound pods terminate gracefully, to be
//      removed by their kubelets (or, past their grace period, by the pod
//      GC); objects with finalizers wait for them;
//   3. something is left: the name is synced again after `retry_interval`
//      (Kubernetes waits for an estimate made from the pods' grace periods
//      instead);
//   4. nothing is left: PUT namespaces/<name>/finalize with spec.finalizers
//      without "kubernetes"; the API server deletes the namespace with its
//      last finalizer (metadata finalizers, if any, still hold it).
// A failed call fails the sync; the name is retried with backoff.
//
// The resources emptied are `resources`, by default every namespaced one of
// objects::Scheme::Default() that has the list and delete verbs, and, when
// `client` is set, every other namespaced resource discovery lists on each
// sync (custom resources: the preferred version of every group, resources
// with delete, list and watch; DiscoverGcResources), emptied through
// informer::DynamicClient the same way. Kubernetes asks discovery for all
// of them. A group whose discovery fails: what could be emptied is, then
// the sync fails (retried with backoff) and the finalizer stays, as
// Kubernetes does, so that objects of an unreachable API are not left
// behind in a namespace that is gone.
// A namespace event is acted on at once; Kubernetes waits 5 s so that every
// API server of an HA control plane sees the deletion first (kplane runs
// one per `kplane up`).
//
// Keys are namespace names. Ownership: borrows the writer and the
// namespaces cache. Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_NAMESPACE_CONTROLLER_H_
#define KPLANE_CONTROLLERS_NAMESPACE_CONTROLLER_H_

#include <memory>
#include <string>
#include <vector>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/dynamic_client.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

// The spec finalizer the namespace controller owns.
inline constexpr char kNamespaceFinalizer[] = "kubernetes";

struct NamespaceControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* namespaces = nullptr;
  // Empty: every namespaced resource of the scheme with list and delete.
  std::vector<const objects::ResourceInfo*> resources;
  // Discovery and custom resources (borrowed); null: `resources` only.
  informer::RestClient* client = nullptr;
  Duration retry_interval = seconds(2);
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class NamespaceController : public Controller {
 public:
  explicit NamespaceController(NamespaceControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* namespaces);
  Status Sync(const std::string& key) override;

 private:
  // Deletes what `ns` holds; returns how many objects are left.
  StatusOr<int64_t> DeleteContent(const std::string& ns);
  // The same for the custom resources discovery lists (options_.client).
  StatusOr<int64_t> DeleteCustomContent(const std::string& ns);

  NamespaceControllerOptions options_;
  std::unique_ptr<informer::DynamicClient> dynamic_;  // with options_.client
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_NAMESPACE_CONTROLLER_H_
