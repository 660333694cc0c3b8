// Durations as Kubernetes prints them.
//
// HumanDuration (k8s.io/apimachinery/pkg/util/duration), used by kubectl's
// AGE columns:
//   <2m: "75s"   <10m: "3m10s" / "3m"   <3h: "70m"   <8h: "3h1m" / "3h"
//   <48h: "47h"  <8d: "2d1h" / "2d"     <2y: "367d"  <8y: "2y1d" / "2y"
//   else "9y";   negative beyond -1s: "<invalid>"; other negatives "0s".
// ShortHumanDuration: one unit only ("59s", "1m", "23h", "364d", "1y").
// GoDurationString: Go's time.Duration.String(), the JSON form of meta/v1
// Duration ("1h0m0s", "1.5s", "300ms", "0s"). ParseDuration is its inverse
// (Go's time.ParseDuration, from base/strings.h).
//
// Durations are int64 nanoseconds, like Go's time.Duration. Pure functions.
#ifndef KPLANE_OBJECTS_MACHINERY_DURATION_H_
#define KPLANE_OBJECTS_MACHINERY_DURATION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/statusor.h"

namespace kplane::machinery {

inline constexpr int64_t kNanosecond = 1;
inline constexpr int64_t kMicrosecond = 1000;
inline constexpr int64_t kMillisecond = 1000 * kMicrosecond;
inline constexpr int64_t kSecond = 1000 * kMillisecond;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kHour = 60 * kMinute;

std::string HumanDuration(int64_t nanos);
std::string ShortHumanDuration(int64_t nanos);
std::string GoDurationString(int64_t nanos);
// InvalidArgument("time: invalid duration \"x\"") on malformed input.
StatusOr<int64_t> ParseDuration(std::string_view s);

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_DURATION_H_
