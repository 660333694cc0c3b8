// CallDeadlines: ends waiting calls (PendingCall) whose client deadline
// passed, for the front that has no deadline machinery of its own: the
// JSON gateway, where grpc-gateway's `Grpc-Timeout` request header is the
// client's deadline (gRPC calls are cancelled by gRPC itself).
//
//   CallDeadlines deadlines(clock);
//   deadlines.Add(clock->Now() + *ParseGrpcTimeout("1S"), call);
//   // ... at the deadline: call->Cancel(DeadlineExceeded "context deadline
//   // exceeded"), a no-op if the call has ended meanwhile.
//
// Ownership: holds only weak references to the calls; owns its thread,
// started on the first Add() and joined by the destructor (which drops what
// is pending). Thread-safety: Add() from any thread. Cancel() runs on the
// timer thread, outside every lock of this class.
#ifndef KPLANE_STORAGE_SERVER_CALL_DEADLINES_H_
#define KPLANE_STORAGE_SERVER_CALL_DEADLINES_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "storage/server/election_lock.h"

namespace kplane::storage {

// A `Grpc-Timeout` header value ("<1-8 digits><H|M|S|m|u|n>", gRPC's wire
// format) as a duration, at most kMaxGrpcTimeout; nullopt if it is not one.
std::optional<Duration> ParseGrpcTimeout(std::string_view v);
// 100 years: "now + timeout" stays within a nanosecond TimePoint (Go's
// gateway wraps past ~292 years and times out at once).
inline constexpr Duration kMaxGrpcTimeout = hours(24 * 365 * 100);

class CallDeadlines {
 public:
  explicit CallDeadlines(Clock* clock) : clock_(clock) {}
  ~CallDeadlines();
  CallDeadlines(const CallDeadlines&) = delete;
  CallDeadlines& operator=(const CallDeadlines&) = delete;

  void Add(TimePoint deadline, std::weak_ptr<PendingCall> call) EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);

  Clock* const clock_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::multimap<TimePoint, std::weak_ptr<PendingCall>> due_ GUARDED_BY(mu_);
  std::thread thread_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_CALL_DEADLINES_H_
