// Integer addition held at int64's ends instead of overflowing, for sums of
// values that come from stored objects or specs and are not trusted to be
// small (deletion timestamps plus grace periods, deadlines from a spec's
// int64 seconds).
//
//   SaturatingAdd(INT64_MAX, 1)  -> INT64_MAX
//   SaturatingAdd(INT64_MIN, -1) -> INT64_MIN
//   SaturatingAdd(2, 3)          -> 5
//
// Thread-safety: a pure function. Errors: none; overflow saturates.
#ifndef KPLANE_BASE_SATURATING_H_
#define KPLANE_BASE_SATURATING_H_

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

}  // namespace kplane

#endif  // KPLANE_BASE_SATURATING_H_
