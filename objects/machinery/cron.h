// CronSchedule: the standard 5-field cron expressions of CronJob's
// spec.schedule, as Kubernetes parses them (robfig/cron/v3's ParseStandard):
// minute hour day-of-month month day-of-week, split on any whitespace (Go's
// strings.Fields, Unicode spaces too), each `*` or `?`, a value, a range
// `a-b`, a step `*/n`, `a-b/n` or `a/n` (a to the field's maximum), or a
// comma list of these (empty items dropped: "," never matches); months
// 1-12 or JAN-DEC, weekdays 0-6 or SUN-SAT (names in any case; 7 is refused,
// as robfig does); and the macros @yearly (@annually), @monthly, @weekly,
// @daily (@midnight), @hourly. When both day fields are restricted a day
// matches if either does (cron's rule). Times are UTC (kplane's CronJobs
// accept only the UTC time zone).
//
//   auto s = CronSchedule::Parse("*/15 9-17 * * MON-FRI");
//   WallTime next = s->Next(now);  // the first matching minute after now
//
// Not supported (refused): "@every <duration>", "TZ=" / "CRON_TZ=" prefixes
// (kube refuses those too in favour of spec.timeZone), a seconds field.
//
// Thread-safety: immutable after Parse. Errors: InvalidArgument with
// robfig/cron's texts, e.g. "expected exactly 5 fields, found 4: [* * * *]",
// "end of range (7) above maximum (6): 7", "failed to parse int from x:
// strconv.Atoi: parsing \"x\": invalid syntax".
#ifndef KPLANE_OBJECTS_MACHINERY_CRON_H_
#define KPLANE_OBJECTS_MACHINERY_CRON_H_

#include <bitset>
#include <string_view>

#include "base/clock.h"
#include "base/statusor.h"

namespace kplane::machinery {

class CronSchedule {
 public:
  static StatusOr<CronSchedule> Parse(std::string_view spec);

  // The first matching minute strictly after `t` (UTC); WallTime::max()
  // when there is none within 5 years (e.g. "0 0 30 2 *").
  WallTime Next(WallTime t) const;

 private:
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;      // 1..31
  std::bitset<13> months_;    // 1..12
  std::bitset<7> weekdays_;   // 0 = Sunday
  bool any_day_ = false;      // day-of-month was * or ?
  bool any_weekday_ = false;  // day-of-week was * or ?
};

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_CRON_H_
