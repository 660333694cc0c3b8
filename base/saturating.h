// Integer addition held at int64's ends instead of overflowing, for sums of
// values that come from stored objects or specs and are not trusted to be
// small (deletion timestamps plus grace periods, deadlines from a spec's
// int64 seconds).
//
//   SaturatingAdd(INT64_MAX, 1)  -> INT64_MAX
//   SaturatingAdd(INT64_MIN, -1) -> INT64_MIN
//   SaturatingAdd(2, 3)          -> 5
//   SaturatingAdd(now, SaturatingSeconds(toleration_seconds))
//
// Thread-safety: a pure function. Errors: none; overflow saturates.
#ifndef KPLANE_BASE_SATURATING_H_
#define KPLANE_BASE_SATURATING_H_

#include <chrono>
#include <cstdint>
#include <limits>

namespace kplane {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    // Overflow is only possible when a and b share a sign; b's says which.
    return b > 0 ? std::numeric_limits<int64_t>::max()
                 : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

// `seconds` in nanoseconds (the clocks' unit), held at their ends (about
// 292 years either way): seconds from a spec or a query (a toleration, a
// grace period, sinceSeconds) that kube bounds only from below.
inline std::chrono::nanoseconds SaturatingSeconds(int64_t seconds) {
  int64_t ns = 0;
  if (__builtin_mul_overflow(seconds, int64_t{1000000000}, &ns)) {
    return seconds > 0 ? std::chrono::nanoseconds::max()
                       : std::chrono::nanoseconds::min();
  }
  return std::chrono::nanoseconds(ns);
}

// t + d, held at the clock's ends instead of overflowing.
template <typename Clock>
std::chrono::time_point<Clock, std::chrono::nanoseconds> SaturatingAdd(
    std::chrono::time_point<Clock, std::chrono::nanoseconds> t,
    std::chrono::nanoseconds d) {
  using TimePoint = std::chrono::time_point<Clock, std::chrono::nanoseconds>;
  return TimePoint(std::chrono::nanoseconds(
      SaturatingAdd(t.time_since_epoch().count(), d.count())));
}

}  // namespace kplane

#endif  // KPLANE_BASE_SATURATING_H_
