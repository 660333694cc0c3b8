// LogThrottle: at most one log line per interval for an event that others
// can cause at will (a failed TLS handshake, a probe of an unhealthy
// cluster), and how many were left out since the last line written.
//
//   LogThrottle throttle(seconds(10));
//   uint64_t left_out = 0;
//   if (throttle.Allow(clock->Now(), &left_out)) {
//     LOG(WARNING) << "..." << LogThrottle::LeftOut(left_out, "failures");
//   }
//
// Thread-safety: Allow() from any thread (a leaf mutex).
#ifndef KPLANE_BASE_LOG_THROTTLE_H_
#define KPLANE_BASE_LOG_THROTTLE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/mutex.h"

namespace kplane {

class LogThrottle {
 public:
  explicit LogThrottle(Duration interval) : interval_(interval) {}
  LogThrottle(const LogThrottle&) = delete;
  LogThrottle& operator=(const LogThrottle&) = delete;

  // Whether a line may be written at `now`: the first call, then once
  // `interval` has passed since the last call that returned true. On true,
  // *left_out (if given) is the number of calls that returned false since
  // then.
  bool Allow(TimePoint now, uint64_t* left_out = nullptr) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (written_ && now - last_ < interval_) {
      ++left_out_;
      return false;
    }
    written_ = true;
    last_ = now;
    if (left_out != nullptr) *left_out = left_out_;
    left_out_ = 0;
    return true;
  }

  // The end of a line Allow let through: "" when nothing was left out,
  // else " (+<left_out> more <what> since the last message)".
  static std::string LeftOut(uint64_t left_out, std::string_view what) {
    if (left_out == 0) return "";
    return " (+" + std::to_string(left_out) + " more " + std::string(what) +
           " since the last message)";
  }

 private:
  const Duration interval_;
  Mutex mu_;  // a leaf
  bool written_ GUARDED_BY(mu_) = false;
  TimePoint last_ GUARDED_BY(mu_);
  uint64_t left_out_ GUARDED_BY(mu_) = 0;
};

}  // namespace kplane

#endif  // KPLANE_BASE_LOG_THROTTLE_H_
