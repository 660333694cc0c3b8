// Status: the result of an operation that can fail, passed across module
// boundaries instead of exceptions (leveldb's Status, abseil's Status).
//
// A Status is a code plus a human-readable message. Domain codes (Compacted,
// FutureRevision, NotLeader, ...) name the storage and API conditions that
// callers branch on; translating them to HTTP/gRPC/Kubernetes reasons happens
// in exactly one table per protocol (the etcd JSON API and the apiserver).
//
// Some codes carry one integer of detail: Compacted carries the compacted
// revision, FutureRevision the current revision, NotLeader the leader's id
// (0 when unknown). Read it with detail().
//
// Thread-safety: a Status is a value; const methods are safe to call
// concurrently.
#ifndef KPLANE_BASE_STATUS_H_
#define KPLANE_BASE_STATUS_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace kplane {

enum class StatusCode : int {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,  // a request, proposal or wait did not finish in time
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kUnauthenticated,
  // Domain codes.
  kConflict,        // optimistic-lock failure (stale resourceVersion)
  kCompacted,       // revision at or below the compaction point; detail = it
  kFutureRevision,  // revision above the current one; detail = current
  kNotLeader,       // this replica cannot serve; detail = leader id or 0
  kNoSpace,         // database over quota (etcd's NOSPACE alarm)
  kTooLarge,        // request or value over the configured limit
  kExpired,         // a watch or continue token is too old (HTTP 410)
  kCorruption,      // stored or received data failed a check (data loss)
  kIOError,         // the operating system refused a read or write
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string_view message, int64_t detail = 0);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  int64_t detail() const { return rep_ ? rep_->detail : 0; }

  // "NotFound: key not found".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  Status Annotate(std::string_view prefix) const;

  bool Is(StatusCode c) const { return code() == c; }

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message() &&
           a.detail() == b.detail();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
    int64_t detail;
  };
  // Null when OK, so an OK Status costs one pointer and no allocation.
  std::shared_ptr<const Rep> rep_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Constructors for the common codes.
Status InvalidArgumentError(std::string_view msg);
Status NotFoundError(std::string_view msg);
Status AlreadyExistsError(std::string_view msg);
Status FailedPreconditionError(std::string_view msg);
Status InternalError(std::string_view msg);
Status UnavailableError(std::string_view msg);
Status UnimplementedError(std::string_view msg);
Status ConflictError(std::string_view msg);
Status CompactedError(int64_t compact_revision);
Status FutureRevisionError(int64_t current_revision);
Status NotLeaderError(uint64_t leader_id);
Status IOError(std::string_view msg);
Status CorruptionError(std::string_view msg);
Status CancelledError(std::string_view msg);
Status DeadlineExceededError(std::string_view msg);
Status ResourceExhaustedError(std::string_view msg);
Status OutOfRangeError(std::string_view msg);

}  // namespace kplane

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::kplane::Status _kp_status = (expr);      \
    if (!_kp_status.ok()) return _kp_status;   \
  } while (0)

#endif  // KPLANE_BASE_STATUS_H_
