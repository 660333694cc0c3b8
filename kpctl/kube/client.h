// KubeClient: the API server as kpctl sees it — objects as JSON DOMs (any
// kind, no typed code per resource), server-side Tables for `get`, and
// watches delivered line by line. Requests go through informer::RestClient
// (retries on 429/5xx, errors as Status carrying the server's
// metav1.Status: informer/api_errors.h gives ReasonOf/HttpCodeOf); watches
// use a net::HttpClient of their own.
//
//   auto c = KubeClient::New(config);
//   const objects::ResourceInfo* deploy = objects::Scheme::Default().Resolve("deploy");
//   StatusOr<rapidjson::Document> d = (*c)->Get(*deploy, "default", "web");
//   (*c)->Patch(*deploy, "default", "web", PatchType::kMergePatch,
//               R"({"spec":{"replicas":3}})", "kubectl-scale", "scale");
//   (*c)->Watch(*deploy, "default", {.field_selector = "metadata.name=web"},
//               false, [](std::string_view type, rapidjson::Value& obj) {
//                 ...; return true;  // false ends the watch
//               });
//
// Namespaces: `ns` is ignored for cluster-scoped resources; "" on a LIST or
// WATCH of a namespaced resource means every namespace.
//
// Thread-safety: calls may run concurrently; a Watch blocks its caller.
// Errors: as RestClient (NotFound, AlreadyExists, Conflict, Invalid ...
// with the server's message); a malformed answer is InvalidArgument (a
// LIST whose server repeats a continue token too); a watch past its
// deadline is DeadlineExceeded, one whose event line passes
// kMaxWatchEventBytes is TooLarge.
#ifndef KPLANE_KPCTL_KUBE_CLIENT_H_
#define KPLANE_KPCTL_KUBE_CLIENT_H_

#include <rapidjson/document.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "objects/scheme.h"
#include "base/clock.h"
#include "base/statusor.h"
#include "informer/rest_client.h"
#include "kpctl/kube/kubeconfig.h"

namespace kplane::kpctl::kube {

using informer::PatchType;

struct ListQuery {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  bool allow_bookmarks = false;            // WATCH only
  std::optional<int64_t> timeout_seconds;  // WATCH only
};

// The longest watch event line Watch() buffers while waiting for its
// newline; a longer one fails the watch (kTooLarge) instead of growing
// memory without bound. kube-apiserver takes request bodies up to 3 MiB, so
// a real event is far smaller.
inline constexpr size_t kMaxWatchEventBytes = 16 << 20;

// One watch event; `object` may be modified (moved out) by the callback.
using WatchCallback =
    std::function<bool(std::string_view type, rapidjson::Value& object)>;

class KubeClient {
 public:
  // `timeout`: one request's limit (--request-timeout), retries and their
  // waits (a 429's Retry-After) included.
  static StatusOr<std::unique_ptr<KubeClient>> New(
      const ClientConfig& config, Duration timeout = seconds(30),
      Clock* clock = nullptr);
  ~KubeClient();

  const ClientConfig& config() const { return config_; }
  // Every later write carries dryRun=All: the server validates and answers
  // but stores nothing (--dry-run=server).
  void set_server_dry_run(bool on) { server_dry_run_ = on; }
  Clock* clock() const { return clock_; }

  StatusOr<rapidjson::Document> Get(const objects::ResourceInfo& r,
                                    std::string_view ns, std::string_view name,
                                    std::string_view subresource = {});
  // Every page (limit=500, following continue) merged into one list.
  StatusOr<rapidjson::Document> List(const objects::ResourceInfo& r,
                                     std::string_view ns,
                                     const ListQuery& query = {});
  // A meta.k8s.io/v1 Table for one object (`name` set: one request) or for
  // the list, every page's rows merged.
  StatusOr<rapidjson::Document> Table(const objects::ResourceInfo& r,
                                      std::string_view ns,
                                      std::string_view name,
                                      const ListQuery& query = {});
  StatusOr<rapidjson::Document> Create(const objects::ResourceInfo& r,
                                       std::string_view ns,
                                       const rapidjson::Value& obj,
                                       std::string_view field_manager);
  StatusOr<rapidjson::Document> Update(const objects::ResourceInfo& r,
                                       std::string_view ns,
                                       std::string_view name,
                                       const rapidjson::Value& obj,
                                       std::string_view field_manager);
  StatusOr<rapidjson::Document> Patch(
      const objects::ResourceInfo& r, std::string_view ns, std::string_view name,
      PatchType type, std::string_view patch, std::string_view field_manager,
      std::string_view subresource = {},
      const std::vector<std::pair<std::string, std::string>>& extra_query = {});
  // DELETE with {"propagationPolicy": policy} ("" = the server's default).
  // The answer is the object (still terminating) or a Status.
  StatusOr<rapidjson::Document> Delete(
      const objects::ResourceInfo& r, std::string_view ns, std::string_view name,
      std::string_view propagation_policy = "Background");
  // GET /version.
  StatusOr<rapidjson::Document> Version();

  // Streams events until `on_event` returns false (OK), the server ends
  // the stream (OK), `deadline` passes (DeadlineExceeded) or an error.
  // With `table`, objects are one-row meta.k8s.io/v1 Tables. The client's
  // `timeout` bounds connecting and the wait for the response head
  // (DeadlineExceeded "timed out"), not the stream.
  Status Watch(const objects::ResourceInfo& r, std::string_view ns,
               const ListQuery& query, bool table,
               const WatchCallback& on_event,
               std::optional<TimePoint> deadline = std::nullopt);

 private:
  KubeClient(ClientConfig config, std::unique_ptr<informer::RestClient> rest,
             Clock* clock, Duration timeout);
  StatusOr<rapidjson::Document> Send(informer::RestRequest req);
  static std::vector<std::pair<std::string, std::string>> ListParams(
      const ListQuery& query);

  const ClientConfig config_;
  std::unique_ptr<informer::RestClient> rest_;
  Clock* const clock_;
  const Duration timeout_;
  bool server_dry_run_ = false;
};

// Parses a JSON body. InvalidArgument when it is not JSON.
StatusOr<rapidjson::Document> ParseJsonBody(std::string_view body);

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_CLIENT_H_
