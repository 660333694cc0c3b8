#include "base/status.h"

namespace kplane {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kUnknown: return "Unknown";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
    case StatusCode::kConflict: return "Conflict";
    case StatusCode::kCompacted: return "Compacted";
    case StatusCode::kFutureRevision: return "FutureRevision";
    case StatusCode::kNotLeader: return "NotLeader";
    case StatusCode::kNoSpace: return "NoSpace";
    case StatusCode::kTooLarge: return "TooLarge";
    case StatusCode::kExpired: return "Expired";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kIOError: return "IOError";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string_view message, int64_t detail) {
  if (code != StatusCode::kOk) {
    rep_ = std::make_shared<const Rep>(
        Rep{code, std::string(message), detail});
  }
}

const std::string& Status::message() const {
  static const std::string* const kEmpty = new std::string();
  return rep_ ? rep_->message : *kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code()));
  if (!message().empty()) {
    s += ": ";
    s += message();
  }
  return s;
}

Status Status::Annotate(std::string_view prefix) const {
  if (ok()) return *this;
  std::string m(prefix);
  m += ": ";
  m += message();
  return Status(code(), m, detail());
}

std::ostream& operator<<(std::ostream& os, const Status& s) {
  return os << s.ToString();
}

Status InvalidArgumentError(std::string_view m) {
  return Status(StatusCode::kInvalidArgument, m);
}
Status NotFoundError(std::string_view m) {
  return Status(StatusCode::kNotFound, m);
}
Status AlreadyExistsError(std::string_view m) {
  return Status(StatusCode::kAlreadyExists, m);
}
Status FailedPreconditionError(std::string_view m) {
  return Status(StatusCode::kFailedPrecondition, m);
}
Status InternalError(std::string_view m) {
  return Status(StatusCode::kInternal, m);
}
Status UnavailableError(std::string_view m) {
  return Status(StatusCode::kUnavailable, m);
}
Status UnimplementedError(std::string_view m) {
  return Status(StatusCode::kUnimplemented, m);
}
Status ConflictError(std::string_view m) {
  return Status(StatusCode::kConflict, m);
}
Status CompactedError(int64_t compact_revision) {
  return Status(StatusCode::kCompacted,
                "mvcc: required revision has been compacted",
                compact_revision);
}
Status FutureRevisionError(int64_t current_revision) {
  return Status(StatusCode::kFutureRevision,
                "mvcc: required revision is a future revision",
                current_revision);
}
Status NotLeaderError(uint64_t leader_id) {
  return Status(StatusCode::kNotLeader, "not leader",
                static_cast<int64_t>(leader_id));
}
Status IOError(std::string_view m) { return Status(StatusCode::kIOError, m); }
Status CorruptionError(std::string_view m) {
  return Status(StatusCode::kCorruption, m);
}
Status CancelledError(std::string_view m) {
  return Status(StatusCode::kCancelled, m);
}
Status DeadlineExceededError(std::string_view m) {
  return Status(StatusCode::kDeadlineExceeded, m);
}
Status ResourceExhaustedError(std::string_view m) {
  return Status(StatusCode::kResourceExhausted, m);
}
Status OutOfRangeError(std::string_view m) {
  return Status(StatusCode::kOutOfRange, m);
}

}  // namespace kplane
