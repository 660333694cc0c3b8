// ObjectStore: Kubernetes objects in the key-value store (the model is
// k8s.io/apiserver/pkg/storage's Interface over etcd3).
//
// One ObjectStore serves one resource. Objects live under
//   /registry/<resource>/<namespace>/<name>   (namespaced)
//   /registry/<resource>/<name>               (cluster-scoped)
// as the envelope bytes of objects/envelope.h ("k8s\0" + runtime.Unknown +
// protobuf), so `kpctl store get /registry/pods/default/ --prefix` shows them
// as the seeds describe. Unlike kube-apiserver, every resource uses its plural
// (nodes under /registry/nodes, not /registry/minions; services under
// /registry/services, not /registry/services/specs): docs/api.md.
//
// resourceVersion: metadata.resourceVersion of every object returned is the
// key's mod_revision, and of a list the store revision it was read at. The
// conversion lives in exactly one place (Versioner below). Objects are
// stored with resourceVersion cleared (it is derived on read, as Kubernetes
// does), so a stored value never lies about its own revision.
//
// Optimistic locking: every write is one storage Txn comparing the key's
// mod_revision with the revision the caller read (or create_revision == 0 for
// a create). GuaranteedUpdate retries its update function on a lost race
// with the fresh object; a caller-supplied precondition (metadata.uid,
// metadata.resourceVersion) that fails is a Conflict, never retried.
//
// Errors (kplane::Status; the HTTP layer maps them to metav1.Status):
//   kNotFound       `<group-resource> "<name>" not found`
//   kAlreadyExists  `<group-resource> "<name>" already exists`
//   kConflict       `Operation cannot be fulfilled on <group-resource>
//                   "<name>": the object has been modified; please apply your
//                   changes to the latest version and try again` (a stale
//                   Preconditions::resource_version on GuaranteedUpdate), or
//                   for a failed uid precondition (and any failed DELETE
//                   precondition) kube's storage text: `Operation cannot be
//                   fulfilled on pods "x": StorageError: invalid object, Code:
//                   4, Key: /registry/pods/default/x, ResourceVersion: 0,
//                   AdditionalErrorMsg: Precondition failed: UID in
//                   precondition: <a>, UID in object meta: <b>`
//   kExpired        a list or continue token whose revision was compacted
//                   (410 Expired: "The provided continue parameter is too old
//                   to display a consistent list result. You can start a new
//                   list without the continue parameter." or "The
//                   resourceVersion for the provided list is too old.")
//   kDeadlineExceeded        a revision newer than the store's (504 "Too large
//                   resource version: N, current: M"; detail = M)
//   kInvalidArgument  a malformed resourceVersion or continue token (400
//                   "invalid continue token: continue key is not valid: ..."),
//                   a resourceVersion together with a continue token, a
//                   resourceVersion set on Create ("resourceVersion should
//                   not be set on objects to be created"; kube answers 500),
//                   an empty or path-like name or namespace
//   anything the KV returns (kUnavailable, kDeadlineExceeded, kNoSpace, ...)
//
// Encryption at rest (ObjectStoreOptions::transformer, the model is
// kube-apiserver's value.Transformer in its etcd3 store): every value is
// passed through the resource's transformer on its way to the store and
// back, with the object's key as authenticated data, so get, list, watch
// (Decode), create, update and delete all see plain objects and the store
// only ciphertext. A value that does not decrypt is kCorruption (the message
// names the key and the transformer's reason; 500 to clients), never
// garbage. A value read with another than the current writing key is
// "stale": GuaranteedUpdate writes it again even when nothing changed, which
// is how rewriting every Secret moves them to a new key. Without a
// transformer values are plain and an encrypted one is refused ("identity
// transformer tried to read encrypted data").
//
// Metrics (ObjectStoreOptions::metrics): etcd_request_duration_seconds,
// etcd_requests_total and etcd_request_errors_total with labels
// {operation = get|create|update|delete|list, type = <group-resource>}.
//
// Thread-safety: all methods may be called concurrently.
#ifndef KPLANE_APISERVER_STORAGE_OBJECT_STORE_H_
#define KPLANE_APISERVER_STORAGE_OBJECT_STORE_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/encryption/transformer.h"
#include "apiserver/storage/shared_read.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "base/statusor.h"
#include "objects/scheme.h"
#include "objects/types.h"
#include "storage/kv.h"

namespace kplane::apiserver {

using ObjectPtr = std::shared_ptr<const google::protobuf::Message>;
using MutableObject = std::unique_ptr<google::protobuf::Message>;

// The one place where store revisions and resourceVersion strings meet.
struct Versioner {
  static std::string ToResourceVersion(int64_t revision);
  // "" -> 0 (unset). Anything but a non-negative decimal is InvalidArgument
  // `invalid resource version "<rv>"`, as kube-apiserver answers (400).
  static StatusOr<int64_t> Parse(std::string_view resource_version);
};

struct Preconditions {
  std::optional<std::string> uid;
  std::optional<std::string> resource_version;
};

// What List and the watch cache filter by. Label and field selectors are
// evaluated by the caller's predicate (the registry knows each kind's
// fields); the store only needs a yes/no per object.
using ObjectPredicate = std::function<bool(const google::protobuf::Message&)>;

struct ListOptions {
  // "" = most recent (a consistent read), otherwise a revision.
  int64_t revision = 0;
  // 0 = no limit.
  int64_t limit = 0;
  // An opaque token from a previous page ("" for the first page).
  std::string continue_token;
  ObjectPredicate predicate;  // null = every object
};

struct ListResult {
  std::vector<ObjectPtr> items;  // in key order, resourceVersion set
  int64_t revision = 0;          // the snapshot every page is read at
  std::string continue_token;    // "" on the last page
  // Objects after this page (the remainingItemCount of a list); absent when
  // a predicate made it unknowable.
  std::optional<int64_t> remaining_items;
  // Empty, or one entry per item (same order): the item's JSON as a list
  // item carries it, exactly objects::EncodeJson(*item) (no kind/apiVersion),
  // which the watch cache made once when it took in that version of the
  // object (cacher.h, "Encodings"). A null entry has none. Whoever filters
  // or reorders `items` must do the same here or clear it.
  std::vector<std::shared_ptr<const std::string>> item_json;
};

// A resource served in another form than the one it is stored in (the model
// is kube-apiserver's storage version; events.k8s.io/v1 events are stored as
// core/v1 Events, apiserver/storage_versions.h): values hold `stored_kind`
// objects, `to_stored` converts every object written and `from_stored`
// every object read (get, list, watch, the object an update starts from).
// Both must be lossless, so that a read-modify-write through either form
// keeps what the other wrote; keys stay the served resource's plural.
struct StorageConversion {
  const objects::KindInfo* stored_kind = nullptr;
  std::function<MutableObject(const google::protobuf::Message&)> to_stored;
  std::function<MutableObject(const google::protobuf::Message&)> from_stored;
};

struct ObjectStoreOptions {
  std::string prefix = "/registry";
  Clock* clock = Clock::Real();
  // etcd_request_duration_seconds{operation,type}, etcd_requests_total and
  // etcd_request_errors_total, as kube-apiserver names them.
  metrics::Registry* metrics = metrics::Registry::Default();
  // Encryption at rest for this resource; null: values are stored plain.
  std::shared_ptr<const encryption::Transformer> transformer;
  // Called with every object decoded from the store, before it is returned
  // or cached (custom resources: pruning and defaulting on read, as kube's
  // CRD storage codec). Null: none.
  std::function<void(google::protobuf::Message*)> on_decode;
  // Other apiVersions (same group, same kind) the stored values may carry,
  // read as the resource's own: a custom resource stored before its CRD
  // changed storage version is read as the version now stored (kube's
  // conversion None rewrites apiVersion only); writes store the resource's
  // apiVersion. Values of any other apiVersion are kCorruption.
  std::vector<std::string> also_stored_as;
  // Set when the resource is stored in another kind; null: its own.
  std::shared_ptr<const StorageConversion> conversion;
};

class LeaseManager;

class ObjectStore {
 public:
  ObjectStore(storage::KV* kv, const objects::ResourceInfo* resource,
              ObjectStoreOptions options = {});
  ~ObjectStore();

  const objects::ResourceInfo& resource() const { return *resource_; }

  // "/registry/pods/default/web"; namespace ignored for cluster scope.
  std::string Key(std::string_view ns, std::string_view name) const;
  // "/registry/pods/default/" (or "/registry/pods/" for all namespaces).
  std::string Prefix(std::string_view ns) const;

  // Creates the object at its key. `ttl_seconds` > 0 attaches a lease so
  // the store deletes it later (events). Returns the stored object with
  // resourceVersion set. kAlreadyExists if the key exists.
  StatusOr<ObjectPtr> Create(const google::protobuf::Message& obj,
                             int64_t ttl_seconds = 0);

  // The object as of the most recent revision (revision 0) or, for a
  // revision > 0, as of that revision ("resourceVersion=N" reads).
  StatusOr<ObjectPtr> Get(std::string_view ns, std::string_view name,
                          int64_t revision = 0);

  // Reads the object, calls `update` with it, and writes the result if the
  // key has not changed since the read; otherwise reads again and retries.
  // `update` may return an error to abort (it is returned as is). Returning
  // the same object unchanged (equal bytes) writes nothing and returns the
  // current object. With `create_if_missing`, `update` receives nullptr when
  // the key does not exist and its result is created.
  //
  // `cached`, if given, is the caller's copy of the current object (the
  // watch cache's, resourceVersion set) and replaces the first read: when
  // it is current, an update costs one store call instead of two. A stale
  // copy costs a failed compare-and-swap and a retry with the store's
  // object; an error from the preconditions or from `update`, or "nothing
  // changed", seen on the copy is checked again on the store's object before
  // it is returned. `update` may thus be called more than once.
  //
  // `ttl_seconds` > 0 attaches a fresh lease to what is written, created or
  // updated, so the object lives that long from this write (events: every
  // write renews --event-ttl, as kube's Store.Update asks calculateTTL on
  // create and on update); leases are shared as Create shares them. With 0
  // the key keeps the lease it has (none for objects created without one).
  // A write that changes nothing renews nothing.
  using UpdateFn =
      std::function<StatusOr<MutableObject>(const google::protobuf::Message*)>;
  StatusOr<ObjectPtr> GuaranteedUpdate(
      std::string_view ns, std::string_view name, const Preconditions& pre,
      const UpdateFn& update, bool create_if_missing = false,
      ObjectPtr cached = nullptr, int64_t ttl_seconds = 0);

  // Deletes the object if `pre` holds (and `validate`, called with the
  // current object, returns OK). Returns the object as it was deleted, with
  // resourceVersion = the deletion's revision.
  StatusOr<ObjectPtr> Delete(
      std::string_view ns, std::string_view name, const Preconditions& pre,
      const std::function<Status(const google::protobuf::Message&)>& validate =
          nullptr);

  // Lists the objects under Prefix(ns), straight from the store: paginated
  // with limit/continue at one revision (every page reports the revision of
  // the first), filtered by the predicate. A continue token or revision at
  // or below the compaction point is kExpired.
  StatusOr<ListResult> List(std::string_view ns, const ListOptions& opts);

  // The store's current revision: a linearizable read of one key (the
  // resource's prefix, count only; kube-apiserver's
  // GetCurrentResourceVersionFromStorage reads the whole prefix with limit
  // 1, which makes etcd count the resource's keys). Concurrent callers share
  // reads
  // (shared_read.h): each gets the answer of a read sent after it called,
  // so the revision covers every write acknowledged before the call, and
  // N consistent LISTs at once cost about two store reads, not N.
  StatusOr<int64_t> CurrentRevision();
  // Store reads CurrentRevision has sent.
  int64_t revision_reads() { return revision_reads_->reads(); }

  // Decodes the value stored at `key` (the watch cache decodes what its
  // store watch delivers with the same code). The key is the authenticated
  // data of an encrypted value.
  StatusOr<MutableObject> Decode(std::string_view key, std::string_view value,
                                 int64_t mod_revision) const;

  storage::KV* kv() const { return kv_; }

 private:
  struct OpMetrics {
    metrics::Histogram* latency;
    metrics::Counter* total;
    metrics::Counter* errors;
  };
  enum Op { kGet, kCreate, kUpdate, kDelete, kList, kNumOps };
  // Runs one KV call and records it under `op`.
  template <typename F>
  auto Timed(Op op, F&& call) -> decltype(call());
  StatusOr<std::string> CheckedKey(std::string_view ns,
                                   std::string_view name) const;
  // One store read of the current revision (CurrentRevision shares them).
  StatusOr<int64_t> ReadCurrentRevision();
  // Reads the key at the latest revision: the kv, or nullopt if absent.
  StatusOr<std::optional<mvccpb::KeyValue>> ReadKey(const std::string& key);
  // The plain bytes of a stored value, and whether it must be rewritten
  // (encryption::Transformer::Read::stale).
  StatusOr<encryption::Transformer::Read> Unseal(std::string_view key,
                                                 std::string_view value) const;
  // The bytes to store for plain `value` at `key`.
  StatusOr<std::string> Seal(std::string_view key, std::string value) const;
  StatusOr<MutableObject> DecodePlain(std::string_view plain,
                                      int64_t mod_revision) const;
  // The envelope bytes of `obj` (a served object) as stored: converted
  // first when the resource has a StorageConversion.
  std::string EncodeForStore(const google::protobuf::Message& obj) const;
  Status CheckPreconditions(const std::string& key,
                            const google::protobuf::Message& current,
                            const Preconditions& pre, bool for_update) const;

  storage::KV* kv_;
  const objects::ResourceInfo* resource_;
  ObjectStoreOptions options_;
  std::string group_resource_;   // "deployments.apps"
  std::string resource_prefix_;  // "/registry/deployments/"
  std::unique_ptr<LeaseManager> leases_;
  OpMetrics metrics_[kNumOps];
  std::unique_ptr<SharedRead<int64_t>> revision_reads_;
};

// The Conflict of an optimistic-lock failure, worded as kube-apiserver does:
// `Operation cannot be fulfilled on <group-resource> "<name>": the object has
// been modified; please apply your changes to the latest version and try
// again`. Update functions that compare a client's resourceVersion with the
// current object return it.
Status ObjectModifiedError(const objects::ResourceInfo& resource,
                           std::string_view name);

// Continue tokens: unpadded base64url of {"v":"meta.k8s.io/v1","rv":<rev>,
// "start":"<key suffix>\u0000"}, as kube-apiserver encodes them. The suffix
// is relative to the listed prefix (Prefix(ns)); a revision of -1 means
// "continue at the latest revision" (kube hands such tokens out with its
// inconsistent-continue 410).
std::string EncodeContinueToken(int64_t revision, std::string_view start_key);
// InvalidArgument `continue key is not valid: ...` on garbage.
StatusOr<std::pair<int64_t, std::string>> DecodeContinueToken(
    std::string_view token);
// What kube-apiserver hands out with the 410 for a continue token whose
// revision was compacted (List's kExpired): the same start key at revision
// -1, the rest of the list at the latest revision. Empty when `token` does
// not decode.
std::string InconsistentContinueToken(std::string_view token);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_STORAGE_OBJECT_STORE_H_
