#include "apiserver/errors.h"

#include "base/strings.h"

namespace kplane::apiserver {

namespace {

// How the watch cache and the object store begin the message of a read
// at a revision the store has not reached.
constexpr std::string_view kTooLargeResourceVersion =
    "Too large resource version: ";

}  // namespace

StatusMapping MapStatusCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return {200, ""};
    case StatusCode::kNotFound:
      return {404, "NotFound"};
    case StatusCode::kAlreadyExists:
      return {409, "AlreadyExists"};
    case StatusCode::kConflict:
      return {409, "Conflict"};
    case StatusCode::kExpired:
    case StatusCode::kCompacted:
      return {410, "Expired"};
    case StatusCode::kInvalidArgument:
      return {400, "BadRequest"};
    case StatusCode::kFailedPrecondition:
      return {422, "Invalid"};
    case StatusCode::kPermissionDenied:
      return {403, "Forbidden"};
    case StatusCode::kResourceExhausted:
      return {429, "TooManyRequests"};
    case StatusCode::kTooLarge:
      return {413, "RequestEntityTooLarge"};
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kFutureRevision:
      return {504, "Timeout"};
    case StatusCode::kUnavailable:
    case StatusCode::kNotLeader:
      return {503, "ServiceUnavailable"};
    case StatusCode::kUnimplemented:
      return {405, "MethodNotAllowed"};
    case StatusCode::kUnauthenticated:
      return {401, "Unauthorized"};
    default:
      return {500, "InternalError"};
  }
}

std::string QualifiedKind(std::string_view group, std::string_view kind) {
  if (group.empty()) return std::string(kind);
  return std::string(kind) + "." + std::string(group);
}

objects::metav1::Status ApiError::ToStatus() const {
  objects::metav1::Status s;
  s.mutable_metadata();
  if (!list_continue.empty())
    s.mutable_metadata()->set_continue_(list_continue);
  s.set_status("Failure");
  s.set_message(message);
  s.set_reason(reason);
  s.set_code(code);
  if (!name.empty() || !group.empty() || !kind.empty() || !uid.empty() ||
      !causes.empty() || retry_after_seconds > 0) {
    auto* d = s.mutable_details();
    if (!name.empty()) d->set_name(name);
    if (!group.empty()) d->set_group(group);
    if (!kind.empty()) d->set_kind(kind);
    if (!uid.empty()) d->set_uid(uid);
    for (const Cause& c : causes) {
      auto* pc = d->add_causes();
      if (!c.reason.empty()) pc->set_reason(c.reason);
      if (!c.message.empty()) pc->set_message(c.message);
      if (!c.field.empty()) pc->set_field(c.field);
    }
    if (retry_after_seconds > 0) d->set_retryafterseconds(retry_after_seconds);
  }
  return s;
}

namespace {

void FillResource(ApiError* e, const objects::ResourceInfo* resource,
                  std::string_view name) {
  e->name = std::string(name);
  if (resource != nullptr) {
    e->group = resource->gv.group;
    e->kind = resource->resource;
  }
}

}  // namespace

ApiError ApiError::FromStatus(const Status& s,
                              const objects::ResourceInfo* resource,
                              std::string_view name) {
  StatusMapping m = MapStatusCode(s.code());
  ApiError e;
  e.code = m.http_code;
  e.reason = std::string(m.reason);
  e.message = s.message();
  switch (s.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
      FillResource(&e, resource, name);
      break;
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kFutureRevision:
      e.retry_after_seconds = 1;
      if (s.message().starts_with(kTooLargeResourceVersion)) {
        // storage.NewTooLargeResourceVersionError: a Timeout whose cause
        // tells clients (client-go's reflector) the revision is not there
        // yet, rather than that the server is slow.
        e.message = "Timeout: " + s.message();
        e.causes.push_back(
            {"ResourceVersionTooLarge", "Too large resource version", ""});
      }
      break;
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable:
    case StatusCode::kNotLeader:
      e.retry_after_seconds = 1;
      break;
    case StatusCode::kExpired:
    case StatusCode::kCompacted:
      if (s.Is(StatusCode::kCompacted) && e.message.empty()) {
        e.message = "The resourceVersion for the provided list is too old.";
      }
      break;
    default:
      if (m.http_code == 500) {
        e.message = "Internal error occurred: " + s.message();
        e.causes.push_back({"", s.message(), ""});
      }
      break;
  }
  return e;
}

ApiError ApiError::NotFound(const objects::ResourceInfo& resource,
                            std::string_view name) {
  ApiError e;
  e.code = 404;
  e.reason = "NotFound";
  e.message =
      resource.GroupResource() + " \"" + std::string(name) + "\" not found";
  FillResource(&e, &resource, name);
  return e;
}

ApiError ApiError::NotFoundPath() {
  ApiError e;
  e.code = 404;
  e.reason = "NotFound";
  e.message = "the server could not find the requested resource";
  return e;
}

ApiError ApiError::AlreadyExists(const objects::ResourceInfo& resource,
                                 std::string_view name) {
  ApiError e;
  e.code = 409;
  e.reason = "AlreadyExists";
  e.message = resource.GroupResource() + " \"" + std::string(name) +
              "\" already exists";
  FillResource(&e, &resource, name);
  return e;
}

ApiError ApiError::Conflict(const objects::ResourceInfo& resource,
                            std::string_view name, std::string_view detail) {
  ApiError e;
  e.code = 409;
  e.reason = "Conflict";
  e.message = "Operation cannot be fulfilled on " + resource.GroupResource() +
              " \"" + std::string(name) + "\": " + std::string(detail);
  FillResource(&e, &resource, name);
  return e;
}

ApiError ApiError::Invalid(std::string_view group, std::string_view kind,
                           std::string_view name, const FieldErrors& errors) {
  ApiError e;
  e.code = 422;
  e.reason = "Invalid";
  e.message = InvalidMessage(QualifiedKind(group, kind), name, errors);
  e.name = std::string(name);
  e.group = std::string(group);
  e.kind = std::string(kind);
  for (const FieldError& fe : errors) {
    e.causes.push_back({fe.Reason(), fe.Body(), fe.field});
  }
  return e;
}

ApiError ApiError::BadRequest(std::string_view message) {
  ApiError e;
  e.code = 400;
  e.reason = "BadRequest";
  e.message = std::string(message);
  return e;
}

ApiError ApiError::Forbidden(const objects::ResourceInfo& resource,
                             std::string_view name, std::string_view detail) {
  ApiError e;
  e.code = 403;
  e.reason = "Forbidden";
  e.message = resource.GroupResource() + " \"" + std::string(name) +
              "\" is forbidden: " + std::string(detail);
  FillResource(&e, &resource, name);
  return e;
}

ApiError ApiError::MethodNotAllowed(std::string_view method,
                                    std::string_view what) {
  ApiError e;
  e.code = 405;
  e.reason = "MethodNotAllowed";
  e.message = std::string(method) +
              " is not supported on resources of kind \"" + std::string(what) +
              "\"";
  e.kind = std::string(what);
  return e;
}

ApiError ApiError::UnsupportedMediaType(
    std::string_view content_type, const std::vector<std::string>& accepted) {
  ApiError e;
  e.code = 415;
  e.reason = "UnsupportedMediaType";
  e.message =
      "the body of the request was in an unknown format - accepted media "
      "types include: " +
      StrJoin(accepted, ", ");
  return e;
}

ApiError ApiError::NotAcceptable(const std::vector<std::string>& accepted) {
  ApiError e;
  e.code = 406;
  e.reason = "NotAcceptable";
  e.message =
      "only the following media types are accepted: " + StrJoin(accepted, ", ");
  return e;
}

ApiError ApiError::TooManyRequests(std::string_view message,
                                   int retry_after_seconds) {
  ApiError e;
  e.code = 429;
  e.reason = "TooManyRequests";
  e.message = std::string(message);
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

ApiError ApiError::RequestEntityTooLarge(size_t limit) {
  ApiError e;
  e.code = 413;
  e.reason = "RequestEntityTooLarge";
  e.message = "Request entity too large: limit is " + std::to_string(limit);
  return e;
}

ApiError ApiError::Expired(std::string_view message) {
  ApiError e;
  e.code = 410;
  e.reason = "Expired";
  e.message = std::string(message);
  return e;
}

ApiError ApiError::Timeout(std::string_view message, int retry_after_seconds) {
  ApiError e;
  e.code = 504;
  e.reason = "Timeout";
  e.message = "Timeout: " + std::string(message);
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

ApiError ApiError::Internal(std::string_view message) {
  ApiError e;
  e.code = 500;
  e.reason = "InternalError";
  e.message = "Internal error occurred: " + std::string(message);
  e.causes.push_back({"", std::string(message), ""});
  return e;
}

ApiError ApiError::ServiceUnavailable(std::string_view message) {
  ApiError e;
  e.code = 503;
  e.reason = "ServiceUnavailable";
  e.message = std::string(message);
  e.retry_after_seconds = 1;
  return e;
}

}  // namespace kplane::apiserver
