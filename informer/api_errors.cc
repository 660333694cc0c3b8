#include "informer/api_errors.h"

#include <string>

#include "objects/serializer.h"

namespace kplane::informer {

namespace {

struct ReasonRow {
  std::string_view reason;
  int http_code;
  StatusCode code;
};

// Where two rows share an HTTP status, the first is what a bare HTTP status
// means (409 -> Conflict, 410 -> Expired, 500 -> InternalError); where two
// share (code, HTTP status) the first is what ReasonOf() answers.
constexpr ReasonRow kReasons[] = {
    {"NotFound", 404, StatusCode::kNotFound},
    {"Conflict", 409, StatusCode::kConflict},
    {"AlreadyExists", 409, StatusCode::kAlreadyExists},
    {"Expired", 410, StatusCode::kExpired},
    {"Gone", 410, StatusCode::kExpired},
    {"Invalid", 422, StatusCode::kInvalidArgument},
    {"BadRequest", 400, StatusCode::kInvalidArgument},
    {"Unauthorized", 401, StatusCode::kUnauthenticated},
    {"Forbidden", 403, StatusCode::kPermissionDenied},
    {"MethodNotAllowed", 405, StatusCode::kUnimplemented},
    {"NotAcceptable", 406, StatusCode::kUnimplemented},
    {"RequestEntityTooLarge", 413, StatusCode::kTooLarge},
    {"UnsupportedMediaType", 415, StatusCode::kUnimplemented},
    {"TooManyRequests", 429, StatusCode::kResourceExhausted},
    {"InternalError", 500, StatusCode::kInternal},
    {"ServerTimeout", 500, StatusCode::kDeadlineExceeded},
    {"ServiceUnavailable", 503, StatusCode::kUnavailable},
    {"Timeout", 504, StatusCode::kDeadlineExceeded},
};

const ReasonRow* RowForReason(std::string_view reason) {
  for (const ReasonRow& r : kReasons) {
    if (r.reason == reason) return &r;
  }
  return nullptr;
}

const ReasonRow* RowForHttp(int http_code) {
  for (const ReasonRow& r : kReasons) {
    if (r.http_code == http_code) return &r;
  }
  return nullptr;
}

StatusCode CodeForHttp(int http_code) {
  if (const ReasonRow* r = RowForHttp(http_code)) return r->code;
  return StatusCode::kUnknown;
}

}  // namespace

Status StatusFromApiStatus(const objects::metav1::Status& status, int http_code) {
  int code = status.code() != 0 ? status.code() : http_code;
  std::string message = status.message();
  if (message.empty()) {
    message = "the server responded with HTTP " + std::to_string(code);
    if (!status.reason().empty()) message += " (" + status.reason() + ")";
  }
  const ReasonRow* row = RowForReason(status.reason());
  StatusCode sc = row != nullptr ? row->code : CodeForHttp(code);
  return Status(sc, message, code);
}

Status StatusFromResponse(int http_code, std::string_view content_type,
                          std::string_view body) {
  StatusOr<objects::MediaType> type = objects::ParseMediaType(content_type);
  if (type.ok() && !body.empty()) {
    objects::metav1::Status st;
    StatusOr<objects::DecodeResult> r = objects::DecodeBody(*type, body, &st);
    if (r.ok() && (r->type_meta.kind == "Status" ||
                   (r->type_meta.kind.empty() && st.has_status()))) {
      return StatusFromApiStatus(st, http_code);
    }
  }
  std::string message =
      "the server responded with HTTP " + std::to_string(http_code);
  if (!body.empty()) {
    message += ": ";
    message.append(body.substr(0, 200));
  }
  return Status(CodeForHttp(http_code), message, http_code);
}

int HttpCodeOf(const Status& s) {
  if (s.ok()) return 0;
  int64_t d = s.detail();
  return d >= 100 && d <= 599 ? static_cast<int>(d) : 0;
}

std::string_view ReasonOf(const Status& s) {
  if (s.ok()) return "";
  int http = HttpCodeOf(s);
  for (const ReasonRow& r : kReasons) {
    if (r.code == s.code() && (http == 0 || r.http_code == http)) {
      return r.reason;
    }
  }
  return "";
}

objects::metav1::Status ApiStatusOf(const Status& s) {
  objects::metav1::Status out;
  out.mutable_metadata();
  if (s.ok()) {
    out.set_status("Success");
    out.set_code(200);
    return out;
  }
  out.set_status("Failure");
  out.set_message(s.message());
  std::string_view reason = ReasonOf(s);
  if (!reason.empty()) out.set_reason(std::string(reason));
  int http = HttpCodeOf(s);
  if (http == 0) {
    if (const ReasonRow* r = RowForReason(reason)) http = r->http_code;
  }
  out.set_code(http != 0 ? http : 500);
  return out;
}

bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
bool IsAlreadyExists(const Status& s) {
  return s.code() == StatusCode::kAlreadyExists;
}
bool IsConflict(const Status& s) { return s.code() == StatusCode::kConflict; }
bool IsExpired(const Status& s) { return s.code() == StatusCode::kExpired; }
bool IsInvalid(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument && HttpCodeOf(s) == 422;
}
bool IsBadRequest(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument && HttpCodeOf(s) == 400;
}
bool IsForbidden(const Status& s) {
  return s.code() == StatusCode::kPermissionDenied;
}
bool IsUnauthorized(const Status& s) {
  return s.code() == StatusCode::kUnauthenticated;
}
bool IsTooManyRequests(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted && HttpCodeOf(s) == 429;
}
bool IsInternalError(const Status& s) {
  return s.code() == StatusCode::kInternal;
}
bool IsServiceUnavailable(const Status& s) {
  return s.code() == StatusCode::kUnavailable && HttpCodeOf(s) == 503;
}
bool IsTimeout(const Status& s) {
  return s.code() == StatusCode::kDeadlineExceeded && HttpCodeOf(s) != 0;
}

}  // namespace kplane::informer
