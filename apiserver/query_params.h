// Query parameters of API requests, parsed and validated the way
// kube-apiserver does (metav1.ListOptions, CreateOptions, UpdateOptions,
// PatchOptions, DeleteOptions and their validation in
// k8s.io/apimachinery/pkg/apis/meta/internalversion/validation).
//
//   ?labelSelector=app%3Dweb&limit=500&resourceVersion=0
//   ?watch=True&allowWatchBookmarks=1&timeoutSeconds=300
//   ?fieldManager=kubectl-client-side-apply&fieldValidation=Strict&dryRun=All
//
// Booleans follow Go's strconv.ParseBool (1 t T TRUE true True and the
// false forms); anything else is 400. Parameters we do not know are ignored,
// as Kubernetes ignores them.
//
// Thread-safety: pure functions. Errors: ApiError (400 BadRequest for
// syntax, 422 Invalid for rule violations, with Kubernetes' messages).
#ifndef KPLANE_APISERVER_QUERY_PARAMS_H_
#define KPLANE_APISERVER_QUERY_PARAMS_H_

#include <optional>
#include <string>
#include <variant>

#include "objects/types.h"
#include "apiserver/errors.h"
#include "net/http_message.h"

namespace kplane::apiserver {

// The longest duration a request parameter may ask for: 100 years.
// timeoutSeconds and gracePeriodSeconds above it are treated as it. It keeps
// "now + duration" within what a TimePoint (nanoseconds, int64) and a
// deletionTimestamp (converted to the system clock, good to 2262) hold;
// Kubernetes has no cap and wraps in Go's time.Duration past ~292 years.
inline constexpr int64_t kMaxRequestDurationSeconds =
    int64_t{100} * 365 * 24 * 3600;

// A parse result: the value, or the error to answer with.
template <typename T>
using ApiResult = std::variant<T, ApiError>;

struct ListParams {
  std::string label_selector;
  std::string field_selector;
  bool watch = false;
  bool allow_watch_bookmarks = false;
  std::string resource_version;        // as sent
  std::string resource_version_match;  // "", "Exact", "NotOlderThan"
  int64_t limit = 0;
  std::string continue_token;
  std::optional<int64_t> timeout_seconds;  // <= kMaxRequestDurationSeconds
  std::optional<bool> send_initial_events;
  // Table output: "Metadata" (default), "Object", "None".
  std::string include_object;
};

// Parses and validates list or watch parameters (`watch` decides which
// rules apply: sendInitialEvents is for watches only, ...).
ApiResult<ListParams> ParseListParams(const net::HttpRequest& req,
                                      bool is_watch);

enum class FieldValidation { kIgnore, kWarn, kStrict };

struct WriteParams {
  bool dry_run = false;
  std::string field_manager;  // as sent (may be empty)
  FieldValidation field_validation = FieldValidation::kWarn;
  bool force = false;  // apply only
};

// For create, update and patch. dryRun accepts only "All"; force only for
// apply patches (422 otherwise).
ApiResult<WriteParams> ParseWriteParams(const net::HttpRequest& req,
                                        bool is_apply_patch);

// The DeleteOptions of a DELETE: the body (JSON, YAML or protobuf; may be
// empty) overlaid with query parameters (gracePeriodSeconds,
// propagationPolicy, orphanDependents, dryRun), validated. A grace period
// above kMaxRequestDurationSeconds is lowered to it.
ApiResult<objects::metav1::DeleteOptions> ParseDeleteOptions(
    const net::HttpRequest& req, std::string_view body);

// Kubernetes' ValidateDeleteOptions, for DeleteOptions from any source (a
// DELETE, an Eviction's deleteOptions): 422 for an unknown dryRun or
// propagationPolicy, or orphanDependents beside a propagationPolicy; a
// negative grace period becomes 1 s (kube-apiserver's defaulting) and one
// above kMaxRequestDurationSeconds is lowered to it, in place.
std::optional<ApiError> ValidateDeleteOptions(
    objects::metav1::DeleteOptions* options);

// The fieldManager used when none was given: the User-Agent up to its first
// '/' ("kubectl/v1.32.4 (linux/amd64)" -> "kubectl"), as Kubernetes does.
std::string DefaultFieldManager(const net::HttpRequest& req);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_QUERY_PARAMS_H_
