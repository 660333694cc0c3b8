// ResourceStore: the generic REST semantics of one resource, between the
// HTTP handlers and the object store (the model is kube-apiserver's
// k8s.io/apiserver/pkg/registry/generic/registry.Store plus rest.BeforeCreate/
// BeforeUpdate/BeforeDelete).
//
// It owns the rules every resource shares and calls the resource's Strategy
// for the rest:
//   create   body namespace vs URL, generateName (+5 random characters,
//            retried on a name clash), uid, creationTimestamp, namespace
//            lifecycle (must exist, must not be Terminating), metadata
//            validation, Default/PrepareForCreate/ValidateCreate,
//            managedFields (operation Update), events' TTL lease, dryRun.
//   update   PUT of the object or of /status: stale resourceVersion -> 409,
//            immutable metadata kept, Prepare/Validate(Status)Update, the
//            update that removes the last finalizer of a deleting object
//            deletes it (a namespace also waits for its spec.finalizers,
//            which only namespaces/finalize changes), create-on-update for
//            leases and events; every write of an event, create or
//            update (PUT, PATCH, apply), gives it a fresh TTL lease.
//   patch    JSON patch, JSON merge patch, strategic merge patch (with the
//            Kubernetes patch metadata) and server-side apply (managedFields,
//            conflicts, force, 201 on create); a resourceVersion in the patch
//            is a precondition.
//   delete   preconditions, graceful deletion of pods bound to a node
//            (deletionTimestamp = now + grace, deletionGracePeriodSeconds),
//            propagationPolicy finalizers (orphan / foregroundDeletion),
//            finalizers pending -> deletionTimestamp only, namespaces go
//            Terminating first (the namespace controller empties them and
//            removes its spec finalizer through /finalize), the
//            namespaces default/kube-system/kube-public cannot be deleted.
//   scale    /scale GET/PUT/PATCH through Strategy::ToScale/ApplyScale.
//   binding  pods/binding: sets spec.nodeName once, PodScheduled=True.
//
// Every write is one ObjectStore transaction comparing mod_revision; lost
// races retry the update function with the fresh object.
//
// Thread-safety: all methods may be called concurrently.
// Errors: ApiError values ready to be sent (api_errors.h).
#ifndef KPLANE_APISERVER_RESOURCE_STORE_H_
#define KPLANE_APISERVER_RESOURCE_STORE_H_

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apiserver/cacher/cacher.h"
#include "apiserver/errors.h"
#include "apiserver/negotiation.h"
#include "apiserver/query_params.h"
#include "apiserver/registry/strategy.h"
#include "apiserver/storage/object_store.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "objects/patch/json_value.h"

namespace kplane::apiserver {

// Namespace lifecycle admission for creates of `name` (a `resource`) in
// `ns`: nullopt when `ns` exists and is not terminating, else the error
// (404 NotFound / 403 Forbidden).
using NamespaceCheck = std::function<std::optional<ApiError>(
    const objects::ResourceInfo& resource, std::string_view name,
    std::string_view ns)>;

// Options of one write request.
struct WriteContext {
  bool dry_run = false;
  std::string field_manager;  // already defaulted from the User-Agent
  FieldValidation field_validation = FieldValidation::kWarn;
  bool force = false;
  // Warning texts to send back (unknown / duplicate fields).
  std::vector<std::string>* warnings = nullptr;
  // Validating admission with the caller's identity (RBAC's escalation
  // check): called with the object about to be stored, after validation,
  // and the stored one for an update (null for a create); an error refuses
  // the write. Null: none.
  std::function<std::optional<ApiError>(const google::protobuf::Message& obj,
                                        const google::protobuf::Message* old)>
      admit;
};

struct WriteResult {
  ObjectPtr object;
  bool created = false;  // 201 instead of 200
};

struct DeleteResult {
  ObjectPtr object;      // as deleted, or as updated when pending
  bool deleted = false;  // removed from storage (or would be: dryRun)
};

// What a resource's writes hold outside the object's own key (Services:
// ClusterIPs and NodePorts, apiserver/service_allocation.h), taken before
// the object is stored and given back when the write fails or the object
// is deleted (the model is kube-apiserver's service REST storage, which
// allocates in its BeforeCreate/BeginUpdate hooks and releases on failure
// and in AfterDelete).
class WriteAllocator {
 public:
  // One write's allocations: Commit() once the write is stored (gives back
  // what the previous object held and the new one no longer does); without
  // Commit() the destructor gives back what this write took.
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void Commit() = 0;
  };
  virtual ~WriteAllocator() = default;
  // Called after validation with the object about to be stored and the
  // stored one (null for a create); fills what `obj` leaves to the server
  // (e.g. spec.clusterIP). A dry run checks and fills without taking.
  virtual ApiResult<std::unique_ptr<Pending>> Allocate(
      google::protobuf::Message* obj, const google::protobuf::Message* old,
      bool dry_run) = 0;
  // After `deleted` was removed from the store.
  virtual void Release(const google::protobuf::Message& deleted) = 0;
};

struct ResourceStoreOptions {
  Clock* clock = Clock::Real();
  // Lease TTL for events (0 = none), renewed by every write of the event.
  int64_t event_ttl_seconds = 3600;
  NamespaceCheck namespace_check;  // null: no check
  // The largest object a PATCH may produce (the request body limit).
  size_t max_patched_bytes = size_t{3} << 20;
  // Allocations around writes (services); null: none. Not owned.
  WriteAllocator* allocator = nullptr;
  // Custom resources: drops the fields the CRD's schema does not know and
  // returns their paths ("spec.foo"), before the strategy runs, so that
  // fieldValidation=Strict refuses them (400) and Warn warns. Null: none
  // (the codec reports built-ins' unknown fields while decoding).
  std::function<std::vector<std::string>(google::protobuf::Message*)>
      prune_unknown_fields;
};

class ResourceStore {
 public:
  ResourceStore(const objects::ResourceInfo* resource, const Strategy* strategy,
                ObjectStore* store, Cacher* cacher,
                ResourceStoreOptions options);

  const objects::ResourceInfo& resource() const { return *resource_; }
  const Strategy& strategy() const { return *strategy_; }
  ObjectStore* object_store() const { return store_; }
  Cacher* cacher() const { return cacher_; }

  // --- reads ---------------------------------------------------------------
  // resourceVersion "" reads the store, "0" the cache, N the store.
  ApiResult<ObjectPtr> Get(std::string_view ns, std::string_view name,
                           std::string_view resource_version);
  // A list after the resourceVersion / resourceVersionMatch rules.
  ApiResult<ListResult> List(std::string_view ns, const ListParams& params,
                             ObjectPredicate predicate);
  // The predicate for label and field selectors (400 on bad syntax or an
  // unsupported field); null when both are empty.
  ApiResult<ObjectPredicate> Predicate(std::string_view label_selector,
                                       std::string_view field_selector) const;

  // --- writes --------------------------------------------------------------
  ApiResult<WriteResult> Create(std::string_view ns,
                                std::unique_ptr<google::protobuf::Message> obj,
                                const WriteContext& ctx);
  // PUT of the main resource (subresource ""), of "status", or of
  // namespaces' "finalize".
  ApiResult<WriteResult> Update(std::string_view ns, std::string_view name,
                                std::string_view subresource,
                                std::unique_ptr<google::protobuf::Message> obj,
                                const WriteContext& ctx);
  ApiResult<WriteResult> Patch(std::string_view ns, std::string_view name,
                               std::string_view subresource, PatchType type,
                               std::string_view patch, const WriteContext& ctx);
  ApiResult<DeleteResult> Delete(std::string_view ns, std::string_view name,
                                 const objects::metav1::DeleteOptions& opts);
  // Deletes every object the predicate matches (in `ns`, "" = all),
  // returning those deleted or marked for deletion.
  ApiResult<std::vector<ObjectPtr>> DeleteCollection(
      std::string_view ns, const objects::metav1::DeleteOptions& opts,
      ObjectPredicate predicate);

  // --- subresources --------------------------------------------------------
  ApiResult<ObjectPtr> GetScale(std::string_view ns, std::string_view name);
  ApiResult<WriteResult> UpdateScale(
      std::string_view ns, std::string_view name,
      std::unique_ptr<google::protobuf::Message> scale,
      const WriteContext& ctx);
  ApiResult<WriteResult> PatchScale(std::string_view ns, std::string_view name,
                                    PatchType type, std::string_view patch,
                                    const WriteContext& ctx);
  // pods/binding (this store must be the pods store).
  std::optional<ApiError> Bind(std::string_view ns,
                               const objects::corev1::Binding& binding,
                               bool dry_run);

  // Whether DELETE answers with the object (pods, services, namespaces)
  // rather than a Status.
  bool ReturnsDeletedObject() const;

  // A random (version 4) UID for a new object.
  std::string NewUid();

 private:
  using Msg = google::protobuf::Message;
  using MutableObject = std::unique_ptr<google::protobuf::Message>;

  // Create-time metadata and validation; nullopt when fine.
  std::optional<ApiError> PrepareCreate(std::string_view ns, Msg* obj,
                                        const WriteContext& ctx, WallTime now);
  // Update-time rules for PUT/PATCH bodies against the stored `old`.
  std::optional<ApiError> PrepareUpdate(std::string_view subresource, Msg* obj,
                                        const Msg& old, const WriteContext& ctx,
                                        WallTime now, bool is_apply);

  // The lease TTL of this resource's objects, renewed by every write
  // (events: event_ttl_seconds; others 0, no lease); kube's Store.TTLFunc.
  int64_t TtlSeconds() const;
  // The GuaranteedUpdate loop shared by update, patch, scale, binding:
  // `fn` maps the current object (null when absent and create is allowed)
  // to the new one or to an error. Handles dryRun and delete-on-update.
  using UpdateFn = std::function<ApiResult<MutableObject>(const Msg* current)>;
  ApiResult<WriteResult> DoUpdate(std::string_view ns, std::string_view name,
                                  bool create_if_missing, bool dry_run,
                                  const UpdateFn& fn);
  // Creates `obj`; `generated`: its name came from generateName, and
  // another is tried on a collision.
  ApiResult<WriteResult> CreateWithRetries(std::string_view ns,
                                           MutableObject obj, bool generated,
                                           const WriteContext& ctx);

  // managedFields bookkeeping for a non-apply write.
  std::optional<ApiError> TrackUpdate(const Msg* old, Msg* obj,
                                      std::string_view subresource,
                                      const WriteContext& ctx, WallTime now);

  std::string GenerateNameSuffix();
  // The bounds on what a PATCH may produce.
  patch::PatchLimits PatchBounds() const;
  // options_.prune_unknown_fields, reported as fieldValidation asks.
  std::optional<ApiError> PruneUnknownFields(google::protobuf::Message* obj,
                                             const WriteContext& ctx) const;

  const objects::ResourceInfo* resource_;
  const Strategy* strategy_;
  ObjectStore* store_;
  Cacher* cacher_;
  ResourceStoreOptions options_;
  Mutex rand_mu_;
  std::mt19937_64 rand_ GUARDED_BY(rand_mu_);
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_RESOURCE_STORE_H_
