// API errors: the metav1.Status bodies the API server answers with, as
// kplane Status values, and the predicates callers branch on (client-go's
// k8s.io/apimachinery/pkg/api/errors).
//
//   StatusOr<std::unique_ptr<corev1::Pod>> pod = client->Get<corev1::Pod>(ns,
//   n); if (IsNotFound(pod.status())) ...          // 404 NotFound if
//   (IsConflict(s)) requeue;                // 409 Conflict (stale RV) if
//   (IsExpired(s)) relist;                  // 410 Expired / Gone
//
// Encoding: a Status built here carries
//   code()    the kplane code for the Kubernetes reason (table below),
//   detail()  the HTTP status code (404, 409, 410, 422, 429, ...),
//   message() the metav1.Status message verbatim (`pods "web" not found`).
// ApiStatusOf() rebuilds the metav1.Status (code, reason, message) from it,
// so the reason survives the trip: a code plus an HTTP status name exactly
// one reason, except that 410 "Gone" comes back as "Expired" (both mean
// "too old: relist", and client-go treats them alike).
//
//   reason               HTTP  kplane code
//   NotFound             404   kNotFound
//   AlreadyExists        409   kAlreadyExists
//   Conflict             409   kConflict
//   Expired, Gone        410   kExpired
//   Invalid              422   kInvalidArgument
//   BadRequest           400   kInvalidArgument
//   Unauthorized         401   kUnauthenticated
//   Forbidden            403   kPermissionDenied
//   MethodNotAllowed     405   kUnimplemented
//   NotAcceptable        406   kUnimplemented
//   RequestEntityTooLarge 413  kTooLarge
//   UnsupportedMediaType 415   kUnimplemented
//   TooManyRequests      429   kResourceExhausted
//   InternalError        500   kInternal
//   ServerTimeout        500   kDeadlineExceeded
//   ServiceUnavailable   503   kUnavailable
//   Timeout              504   kDeadlineExceeded
// A body that is not a Status (a proxy's HTML page) is classified by its
// HTTP status alone, with the start of the body as the message.
//
// Transport failures (connection refused, timeouts) keep the codes of
// net/http_client.h (kUnavailable, kDeadlineExceeded) with detail 0, so
// HttpCodeOf() tells "the server said so" from "we never got an answer".
//
// Thread-safety: pure functions.
#ifndef KPLANE_INFORMER_API_ERRORS_H_
#define KPLANE_INFORMER_API_ERRORS_H_

#include <string>
#include <string_view>

#include "objects/types.h"
#include "base/status.h"

namespace kplane::informer {

// The Status for a metav1.Status error body received with `http_code`.
Status StatusFromApiStatus(const objects::metav1::Status& status, int http_code);
// The Status for an error response: `body` is decoded as a metav1.Status
// (JSON or protobuf, by `content_type`) when it is one.
Status StatusFromResponse(int http_code, std::string_view content_type,
                          std::string_view body);

// The HTTP status code an API error carried (0 for transport errors and
// for OK).
int HttpCodeOf(const Status& s);
// The Kubernetes reason ("NotFound", "Conflict", ...; "" for OK and for
// transport errors without an HTTP status).
std::string_view ReasonOf(const Status& s);
// The metav1.Status an API error corresponds to (status "Failure", reason,
// code, message); for OK a Status with status "Success" and code 200.
objects::metav1::Status ApiStatusOf(const Status& s);

bool IsNotFound(const Status& s);
bool IsAlreadyExists(const Status& s);
bool IsConflict(const Status& s);
// 410: a resourceVersion or continue token older than the server keeps.
bool IsExpired(const Status& s);
bool IsInvalid(const Status& s);     // 422
bool IsBadRequest(const Status& s);  // 400
bool IsForbidden(const Status& s);
bool IsUnauthorized(const Status& s);
bool IsTooManyRequests(const Status& s);
bool IsInternalError(const Status& s);
bool IsServiceUnavailable(const Status& s);
// 504 Timeout or 500 ServerTimeout.
bool IsTimeout(const Status& s);

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_API_ERRORS_H_
