// API errors: what the apiserver answers when a request fails, as a
// metav1.Status with Kubernetes' HTTP code, reason, message and details
// (k8s.io/apimachinery/pkg/api/errors).
//
//   ApiError e = ApiError::NotFound(pods, "web");
//   // 404 {"kind":"Status","apiVersion":"v1","metadata":{},
//   //      "status":"Failure","message":"pods \"web\" not found",
//   //      "reason":"NotFound","details":{"name":"web","kind":"pods"},
//   //      "code":404}
//
// Errors from the layers below arrive as kplane::Status; FromStatus() maps
// them through the one table (StatusMapping below) from kplane status codes
// to (HTTP code, reason):
//
//   kNotFound 404 NotFound          kAlreadyExists 409 AlreadyExists
//   kConflict 409 Conflict          kExpired, kCompacted 410 Expired
//   kInvalidArgument 400 BadRequest kFailedPrecondition 422 Invalid
//   kPermissionDenied 403 Forbidden kResourceExhausted 429 TooManyRequests
//   kTooLarge 413 RequestEntityTooLarge
//   kDeadlineExceeded, kFutureRevision 504 Timeout (retry after 1 s; a
//     "Too large resource version: N, current: M" message gets kube's
//     "Timeout: " prefix and the cause ResourceVersionTooLarge)
//   kUnavailable, kNotLeader 503 ServiceUnavailable
//   kUnimplemented 405 MethodNotAllowed
//   kUnauthenticated 401 Unauthorized
//   anything else 500 InternalError ("Internal error occurred: ...")
//
// Thread-safety: values. Errors: n/a.
#ifndef KPLANE_APISERVER_ERRORS_H_
#define KPLANE_APISERVER_ERRORS_H_

#include <string>
#include <string_view>
#include <vector>

#include "objects/scheme.h"
#include "objects/types.h"
#include "apiserver/registry/strategy.h"
#include "base/status.h"

namespace kplane::apiserver {

struct StatusMapping {
  int http_code;
  std::string_view reason;  // metav1.StatusReason ("" for 200)
};
// The one table from kplane status codes to HTTP codes and reasons.
StatusMapping MapStatusCode(StatusCode code);

struct ApiError {
  struct Cause {
    std::string reason;  // "FieldValueRequired", "FieldManagerConflict"
    std::string message;
    std::string field;
  };

  int code = 500;
  std::string reason = "InternalError";
  std::string message;
  // details; all empty means no "details" member.
  std::string name;
  std::string group;
  std::string kind;  // Kubernetes puts the resource here for most errors
  std::string uid;
  std::vector<Cause> causes;
  int retry_after_seconds = 0;  // also sent as a Retry-After header
  // The Status's metadata.continue: the inconsistent continue token an
  // expired continue's 410 carries (InconsistentContinueToken).
  std::string list_continue;
  // Extra response headers (e.g. Warning) that go with the error.
  std::vector<std::pair<std::string, std::string>> headers;

  objects::metav1::Status ToStatus() const;

  // Through the table; `resource` and `name` fill the details (may be
  // null / empty).
  static ApiError FromStatus(const Status& s,
                             const objects::ResourceInfo* resource = nullptr,
                             std::string_view name = {});

  static ApiError NotFound(const objects::ResourceInfo& resource,
                           std::string_view name);
  // 404 for an unknown path or resource: "the server could not find the
  // requested resource".
  static ApiError NotFoundPath();
  static ApiError AlreadyExists(const objects::ResourceInfo& resource,
                                std::string_view name);
  // 409 "Operation cannot be fulfilled on <gr> "<name>": <detail>".
  static ApiError Conflict(const objects::ResourceInfo& resource,
                           std::string_view name, std::string_view detail);
  // 422 from field errors: "<Kind>.<group> "<name>" is invalid: ...". The
  // qualified kind is "Deployment.apps" or "Pod"; details.kind is the kind.
  static ApiError Invalid(std::string_view group, std::string_view kind,
                          std::string_view name, const FieldErrors& errors);
  static ApiError BadRequest(std::string_view message);
  static ApiError Forbidden(const objects::ResourceInfo& resource,
                            std::string_view name, std::string_view detail);
  static ApiError MethodNotAllowed(std::string_view method,
                                   std::string_view what);
  static ApiError UnsupportedMediaType(
      std::string_view content_type, const std::vector<std::string>& accepted);
  static ApiError NotAcceptable(const std::vector<std::string>& accepted);
  static ApiError TooManyRequests(std::string_view message,
                                  int retry_after_seconds);
  static ApiError RequestEntityTooLarge(size_t limit);
  static ApiError Expired(std::string_view message);
  static ApiError Timeout(std::string_view message, int retry_after_seconds);
  static ApiError Internal(std::string_view message);
  static ApiError ServiceUnavailable(std::string_view message);
};

// "Deployment.apps" / "Pod": how Invalid messages name a kind.
std::string QualifiedKind(std::string_view group, std::string_view kind);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_ERRORS_H_
