// RestClient: the Kubernetes REST API over HTTP for every resource in
// objects::Scheme (client-go's rest.RESTClient plus the typed clientsets'
// verbs). Controllers, kubeletsim, kpctl and the informers use one shared
// instance.
//
//   auto client = RestClient::New({.server = "https://127.0.0.1:6443",
//                                  .tls = client_tls_context});
//   StatusOr<std::unique_ptr<corev1::Pod>> pod =
//       (*client)->Get<corev1::Pod>("default", "web");
//   if (IsNotFound(pod.status())) ...
//   (*client)->Create(pod_spec);                  // POST
//   .../namespaces/ns/pods
//   (*client)->UpdateStatus(node);                // PUT  .../nodes/n1/status
//   (*client)->Patch<appsv1::Deployment>("default", "web",
//       PatchType::kMergePatch, R"({"spec":{"replicas":3}})");
//   auto w = (*client)->Watch(*pods, "default", {.resource_version = "42",
//       .allow_watch_bookmarks = true});
//
// Paths come from ResourceInfo: /api/v1/namespaces/<ns>/pods/<name>[/status],
// /apis/apps/v1/namespaces/<ns>/deployments, /api/v1/nodes (cluster scope;
// the namespace is ignored), /api/v1/pods (a namespaced resource listed
// across all namespaces when ns is "").
//
// Wire format: JSON by default; with `protobuf` requests carry
// application/vnd.kubernetes.protobuf bodies and ask for protobuf answers
// (JSON accepted too). Responses are decoded by their Content-Type.
//
// Retries (each attempt has its own `timeout`), with jittered exponential
// backoff between attempts (retry_initial_backoff doubling up to
// retry_max_backoff) and never more than `max_retries` retries:
//   - 429 TooManyRequests, and any 5xx carrying Retry-After: every verb (the
//     server did not act on the request). Retry-After (seconds) is honoured:
//     the wait is at least that long (capped by max_retry_after).
//   - 502/503/504 without Retry-After, and connection failures (refused,
//     reset, closed before an answer): idempotent verbs only (GET, PUT,
//     DELETE, HEAD). A PUT replayed after it had been applied answers 409
//     Conflict (its resourceVersion is stale), a replayed DELETE 404: the
//     callers' usual handling of those is right.
//   - timeouts are not retried (the caller's deadline was spent already).
//
// A 2xx answered with a metav1.Status instead of an object (POST
// pods/binding does that) returns an empty object of the expected kind.
//
// Resources of any kind (custom resources): a ResourceInfo whose kind is
// an unstructured kind (unstructured.h; the dynamic client makes them)
// is listed and watched as JSON whatever `protobuf` says, its objects
// arriving as UnstructuredObject messages, so RestListerWatcher and the
// informers work for it unchanged. The dynamic client (dynamic_client.h)
// has the other verbs for such resources.
//
// Errors: an answer other than 2xx is a Status built from its metav1.Status
// body (api_errors.h: IsNotFound, IsConflict, IsAlreadyExists, IsExpired,
// ...; detail() is the HTTP status). Transport errors are those of
// net/http_client.h (kUnavailable, kDeadlineExceeded). A body that does not
// decode is kInvalidArgument.
//
// Connections: a pool of up to `max_connections` keep-alive connections;
// a request waits for a free one when all are busy. Each watch has a
// connection of its own (it lives for minutes).
//
// Thread-safety: every method may be called concurrently from any thread.
// Retry waits sleep on the injected Clock.
#ifndef KPLANE_INFORMER_REST_CLIENT_H_
#define KPLANE_INFORMER_REST_CLIENT_H_

#include <google/protobuf/message.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "informer/watch.h"
#include "net/http_client.h"
#include "objects/scheme.h"
#include "objects/types.h"

namespace kplane::informer {

struct RestClientOptions {
  // "https://host:port" (needs `tls`) or "http://host:port" of the API
  // server.
  std::string server = "http://127.0.0.1:6443";
  // HTTPS: the CA to trust, the client certificate to present (client-go's
  // rest.Config TLSClientConfig). Required for https://, refused for
  // http:// (a URL never silently downgrades).
  std::shared_ptr<const net::TlsContext> tls;
  // Sent as "Authorization: Bearer <token>" on every request; "" = none.
  std::string bearer_token;
  // One attempt: connect, send, and the complete response (for a watch:
  // its response head).
  Duration timeout = seconds(30);
  Duration connect_timeout = seconds(5);
  int max_retries = 5;
  Duration retry_initial_backoff = milliseconds(100);
  Duration retry_max_backoff = seconds(5);
  Duration max_retry_after = seconds(60);
  int max_connections = 8;
  bool protobuf = false;
  std::string user_agent = "kplane-client/1";
  Clock* clock = nullptr;                // nullptr: Clock::Real()
  metrics::Registry* metrics = nullptr;  // nullptr: Registry::Default()
  uint64_t seed = 0;                     // jitter; 0: random
};

// Query parameters of LIST and WATCH (metav1.ListOptions).
struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  // "" = most recent (consistent), "0" = any, else a resourceVersion.
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan", "Exact"
  int64_t limit = 0;                   // 0: no paging
  std::string continue_token;
  bool allow_watch_bookmarks = false;      // WATCH only
  std::optional<int64_t> timeout_seconds;  // WATCH: the server ends it then
};

// Ends a whole call (retries, their waits and the wait for a free
// connection included) at this time on the client's Clock, whatever
// `timeout` and `max_retries` would allow: kDeadlineExceeded then. A
// caller's budget, as a Go context's deadline (leader election keeps its
// lock calls inside the renew deadline with it).
using CallDeadline = TimePoint;

struct GetOptions {
  std::string resource_version;  // "" = most recent
  CallDeadline deadline = CallDeadline::max();
};

// dryRun, fieldManager, fieldValidation of a write.
struct WriteOptions {
  bool dry_run = false;
  std::string field_manager;
  std::string field_validation;  // "", "Ignore", "Warn", "Strict"
  bool force = false;            // server-side apply only
  CallDeadline deadline = CallDeadline::max();
};

enum class PatchType {
  kJsonPatch,            // application/json-patch+json
  kMergePatch,           // application/merge-patch+json
  kStrategicMergePatch,  // application/strategic-merge-patch+json
  kApplyPatch,           // application/apply-patch+yaml (server-side apply)
};
std::string_view PatchContentType(PatchType type);

// A LIST answer with its items split out (moved, not copied) of the list
// message.
struct ListResult {
  std::vector<ObjectPtr> items;
  std::string resource_version;  // the list's metadata.resourceVersion
  std::string continue_token;    // "" on the last page
  std::optional<int64_t> remaining_item_count;
};

// One raw request (the typed verbs build these).
struct RestRequest {
  std::string method;
  std::string path;  // escaped, e.g. from ResourcePath()
  std::vector<std::pair<std::string, std::string>> query;
  net::HttpHeaders headers;
  std::string body;
  CallDeadline deadline = CallDeadline::max();
};

class RestClient {
 public:
  // kInvalidArgument for a malformed server URL, or https:// without
  // options.tls (or http:// with it).
  static StatusOr<std::unique_ptr<RestClient>> New(RestClientOptions options);
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // The Clock that call deadlines are on.
  Clock* clock() const { return clock_; }

  // "/apis/apps/v1/namespaces/default/deployments/web/scale"; empty parts
  // are left out; the namespace is ignored for cluster-scoped resources.
  static std::string ResourcePath(const objects::ResourceInfo& resource,
                                  std::string_view ns,
                                  std::string_view name = {},
                                  std::string_view subresource = {});
  // The resource whose objects are T (corev1::Pod -> pods), or nullptr.
  template <typename T>
  static const objects::ResourceInfo* ResourceFor() {
    const objects::Scheme& s = objects::Scheme::Default();
    const objects::KindInfo* k = s.KindFor(T::descriptor());
    return k != nullptr ? s.ResourceForKind(*k) : nullptr;
  }

  // ---- Generic verbs (objects of resource.kind, or of the subresource's
  // kind). For writes, an empty `ns` means the object's own namespace.
  StatusOr<std::unique_ptr<google::protobuf::Message>> Get(
      const objects::ResourceInfo& resource, std::string_view ns,
      std::string_view name, const GetOptions& options = {},
      std::string_view subresource = {});
  // The list message itself (e.g. a PodList).
  StatusOr<std::unique_ptr<google::protobuf::Message>> List(
      const objects::ResourceInfo& resource, std::string_view ns,
      const ListOptions& options = {});
  StatusOr<ListResult> ListObjects(const objects::ResourceInfo& resource,
                                   std::string_view ns,
                                   const ListOptions& options = {});
  StatusOr<std::unique_ptr<google::protobuf::Message>> Create(
      const objects::ResourceInfo& resource, std::string_view ns,
      const google::protobuf::Message& obj, const WriteOptions& options = {},
      std::string_view name_for_subresource = {},
      std::string_view subresource = {});
  // PUT to the object's own path (name and namespace from its metadata);
  // metadata.resourceVersion, when set, makes it a compare-and-swap
  // (409 Conflict if stale).
  StatusOr<std::unique_ptr<google::protobuf::Message>> Update(
      const objects::ResourceInfo& resource,
      const google::protobuf::Message& obj, const WriteOptions& options = {},
      std::string_view subresource = {});
  StatusOr<std::unique_ptr<google::protobuf::Message>> UpdateStatus(
      const objects::ResourceInfo& resource,
      const google::protobuf::Message& obj, const WriteOptions& options = {}) {
    return Update(resource, obj, options, "status");
  }
  StatusOr<std::unique_ptr<google::protobuf::Message>> Patch(
      const objects::ResourceInfo& resource, std::string_view ns,
      std::string_view name, PatchType type, std::string_view patch,
      const WriteOptions& options = {}, std::string_view subresource = {});
  // DELETE with a metav1.DeleteOptions body (preconditions, grace period,
  // propagation policy).
  Status Delete(const objects::ResourceInfo& resource, std::string_view ns,
                std::string_view name,
                const objects::metav1::DeleteOptions& options = {});
  // DELETE of the collection (deletecollection): every object of
  // `resource` in `ns` ("" = all namespaces) is deleted with `options`, as
  // if each were deleted on its own (graceful pods, finalizers).
  Status DeleteCollection(const objects::ResourceInfo& resource,
                          std::string_view ns,
                          const objects::metav1::DeleteOptions& options = {});
  // Opens a watch (no retries: the reflector decides). The response head
  // has arrived when this returns; an error answer (400, 410, ...) is
  // returned here as a Status. Events stream through the WatchStream.
  StatusOr<std::unique_ptr<WatchStream>> Watch(
      const objects::ResourceInfo& resource, std::string_view ns,
      const ListOptions& options);

  // ---- Metadata only (client-go's metadata client): LIST and WATCH of any
  // resource (custom resources too) whose objects arrive as
  // metav1::PartialObjectMetadata, asked for as kube's metadata informers
  // ask: protobuf first, then JSON, whatever `protobuf` says.
  StatusOr<ListResult> ListMetadata(const objects::ResourceInfo& resource,
                                    std::string_view ns,
                                    const ListOptions& options = {});
  StatusOr<std::unique_ptr<WatchStream>> WatchMetadata(
      const objects::ResourceInfo& resource, std::string_view ns,
      const ListOptions& options);
  // GET of one object as PartialObjectMetadata (client-go's metadata
  // client's Get): its metadata only, whatever its kind.
  StatusOr<std::unique_ptr<google::protobuf::Message>> GetMetadata(
      const objects::ResourceInfo& resource, std::string_view ns,
      std::string_view name);
  // meta.k8s.io/v1 PartialObjectMetadata: the kind of their objects.
  static const objects::KindInfo& MetadataKind();

  // ---- Typed verbs: T is the object type (corev1::Pod, ...).
  template <typename T>
  StatusOr<std::unique_ptr<T>> Get(std::string_view ns, std::string_view name,
                                   const GetOptions& options = {}) {
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, Resource<T>());
    return Downcast<T>(Get(*r, ns, name, options));
  }
  template <typename T>
  StatusOr<std::unique_ptr<T>> Create(const T& obj,
                                      const WriteOptions& options = {}) {
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, Resource<T>());
    return Downcast<T>(Create(*r, "", obj, options));
  }
  template <typename T>
  StatusOr<std::unique_ptr<T>> Update(const T& obj,
                                      const WriteOptions& options = {}) {
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, Resource<T>());
    return Downcast<T>(Update(*r, obj, options));
  }
  template <typename T>
  StatusOr<std::unique_ptr<T>> UpdateStatus(const T& obj,
                                            const WriteOptions& options = {}) {
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, Resource<T>());
    return Downcast<T>(Update(*r, obj, options, "status"));
  }
  template <typename T>
  StatusOr<std::unique_ptr<T>> Patch(std::string_view ns, std::string_view name,
                                     PatchType type, std::string_view patch,
                                     const WriteOptions& options = {},
                                     std::string_view subresource = {}) {
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, Resource<T>());
    return Downcast<T>(Patch(*r, ns, name, type, patch, options, subresource));
  }
  template <typename T>
  Status Delete(std::string_view ns, std::string_view name,
                const objects::metav1::DeleteOptions& options = {}) {
    ASSIGN_OR_RETURN(const objects::ResourceInfo* r, Resource<T>());
    return Delete(*r, ns, name, options);
  }

  // ---- Raw: sends `request` with the retry policy above. Returns the 2xx
  // response; any other answer becomes its Status.
  StatusOr<net::HttpResponse> Do(const RestRequest& request);
  // The query parameters of a LIST or WATCH (labelSelector, fieldSelector,
  // resourceVersion, resourceVersionMatch, limit, continue, timeoutSeconds;
  // not watch or allowWatchBookmarks) and of a write (dryRun,
  // fieldManager, fieldValidation, force), for raw requests.
  static void AddListQuery(RestRequest* req, const ListOptions& options);
  static void AddWriteOptions(RestRequest* req, const WriteOptions& options);

  const RestClientOptions& options() const { return options_; }

 private:
  class Pool;
  explicit RestClient(RestClientOptions options, std::string host,
                      uint16_t port);

  template <typename T>
  static StatusOr<const objects::ResourceInfo*> Resource() {
    const objects::ResourceInfo* r = ResourceFor<T>();
    if (r == nullptr) {
      return InvalidArgumentError("no resource serves " +
                                  T::descriptor()->full_name());
    }
    return r;
  }
  template <typename T>
  static StatusOr<std::unique_ptr<T>> Downcast(
      StatusOr<std::unique_ptr<google::protobuf::Message>> m) {
    if (!m.ok()) return m.status();
    // The message was made by the kind registered for T's descriptor.
    return std::unique_ptr<T>(static_cast<T*>(m->release()));
  }

  // Decodes a response body into a new message of `kind`.
  StatusOr<std::unique_ptr<google::protobuf::Message>> DecodeResponse(
      const net::HttpResponse& resp, const objects::KindInfo& kind) const;
  // The request body for `obj` in our wire format.
  void SetBody(RestRequest* req, const google::protobuf::Message& obj,
               const objects::KindInfo* kind) const;
  // LIST of a resource of an unstructured kind (JSON only).
  StatusOr<ListResult> ListUnstructured(const objects::ResourceInfo& resource,
                                        std::string_view ns,
                                        const ListOptions& options);
  // A WATCH asking for `accept`, its events decoded as `kind`.
  StatusOr<std::unique_ptr<WatchStream>> OpenWatch(
      const objects::ResourceInfo& resource, std::string_view ns,
      const ListOptions& options, const std::string& accept,
      const objects::KindInfo* kind);
  Duration Jitter(Duration d);

  const RestClientOptions options_;
  const std::string host_;
  const uint16_t port_;
  Clock* const clock_;
  std::unique_ptr<Pool> pool_;
  // Opens watch connections (OpenStream never touches its keep-alive one).
  std::unique_ptr<net::HttpClient> stream_client_;
  Mutex rng_mu_;
  std::mt19937_64 rng_ GUARDED_BY(rng_mu_);
  metrics::Family<metrics::Counter>* requests_;
  metrics::Family<metrics::Counter>* retries_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_REST_CLIENT_H_
