// Kubernetes' time types: meta.v1.Time (RFC 3339, seconds), meta.v1.MicroTime
// (RFC 3339 with exactly six fractional digits) and meta.v1.Duration (Go
// duration strings), with the conversions the codec and controllers need.
//
// Conventions, as in Kubernetes:
//  - Times are written in UTC: "2026-11-29T08:37:42Z",
//    "2026-11-29T08:37:42.123456Z".
//  - Parsing accepts any RFC 3339 time: a fractional second of any length and
//    a numeric offset ("+02:00") are accepted and normalised to UTC. Time
//    keeps whole seconds (Kubernetes drops the fraction on the way through
//    protobuf too); MicroTime keeps microseconds.
//  - A Time or MicroTime message with no field set is the zero time (Go's
//    time.Time{}), which JSON writes as null. Setters always set seconds and
//    nanos, so a set time is never mistaken for zero, even the Unix epoch.
//
// Thread-safety: all functions are pure. Errors: parsers return
// InvalidArgument with the offending text.
#ifndef KPLANE_OBJECTS_TIME_H_
#define KPLANE_OBJECTS_TIME_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "objects/types.h"
#include "base/clock.h"
#include "base/statusor.h"

namespace kplane::objects {

struct Timestamp {
  int64_t seconds = 0;  // since the Unix epoch, UTC
  int32_t nanos = 0;    // 0..999999999
};

// "2026-11-29T08:37:42Z".
std::string FormatRfc3339(int64_t unix_seconds);
// "2026-11-29T08:37:42.123456Z" (nanos truncated to microseconds).
std::string FormatRfc3339Micro(int64_t unix_seconds, int32_t nanos);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"; 't' and 'z' are
// accepted in lower case, as Go does.
StatusOr<Timestamp> ParseRfc3339(std::string_view text);

// Go's time.Duration.String(): "0s", "1.5s", "1m30s", "1h0m0s", "250ms".
std::string FormatGoDuration(int64_t nanos);
// Go's time.ParseDuration ("300ms", "-1.5h", "2h45m").
StatusOr<int64_t> ParseGoDurationNanos(std::string_view text);

// meta.v1.Time helpers.
bool IsZero(const metav1::Time& t);
void SetTime(metav1::Time* t, int64_t unix_seconds);
void SetTime(metav1::Time* t, WallTime when);  // truncates to seconds
int64_t UnixSeconds(const metav1::Time& t);    // 0 for the zero time
metav1::Time TimeNow(const Clock& clock);

// meta.v1.MicroTime helpers.
bool IsZero(const metav1::MicroTime& t);
void SetMicroTime(metav1::MicroTime* t, int64_t unix_seconds, int32_t nanos);
void SetMicroTime(metav1::MicroTime* t, WallTime when);  // to microseconds
// Times beyond about 1824 and 2116 are read as those bounds: the clock
// (nanoseconds) holds 1678 to 2262, and a difference with now must fit too.
WallTime ToWallTime(const metav1::MicroTime& t);
WallTime ToWallTime(const metav1::Time& t);
metav1::MicroTime MicroTimeNow(const Clock& clock);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_TIME_H_
