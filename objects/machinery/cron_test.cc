#include "objects/machinery/cron.h"

#include <gtest/gtest.h>

#include <chrono>

namespace kplane::machinery {
namespace {

using namespace std::chrono;

// 2026-12-03T14:37:20Z, a Thursday.
WallTime T(int y, int mo, int d, int h, int mi, int s = 0) {
  return time_point_cast<WallTime::duration>(
      sys_days{year(y) / mo / d} + hours(h) + minutes(mi) + seconds(s));
}

WallTime Next(std::string_view spec, WallTime t) {
  auto s = CronSchedule::Parse(spec);
  EXPECT_TRUE(s.ok()) << spec << ": " << s.status();
  return s.ok() ? s->Next(t) : WallTime::min();
}

TEST(CronScheduleTest, NextMatchingMinute) {
  const WallTime now = T(2026, 12, 3, 14, 37, 20);
  EXPECT_EQ(Next("*/1 * * * *", now), T(2026, 12, 3, 14, 38));
  EXPECT_EQ(Next("*/15 * * * *", now), T(2026, 12, 3, 14, 45));
  EXPECT_EQ(Next("5 * * * *", now), T(2026, 12, 3, 15, 5));
  EXPECT_EQ(Next("0 9-17/4 * * *", now), T(2026, 12, 3, 17, 0));
  EXPECT_EQ(Next("30 8 * * MON-FRI", now), T(2026, 12, 4, 8, 30));  // Fri
  EXPECT_EQ(Next("0 0 * * sun", now), T(2026, 12, 6, 0, 0));
  EXPECT_EQ(Next("0 0 * * 7", now), T(2026, 12, 6, 0, 0));
  EXPECT_EQ(Next("0 0 1 jan,JUL *", now), T(2027, 1, 1, 0, 0));
  EXPECT_EQ(Next("@hourly", now), T(2026, 12, 3, 15, 0));
  EXPECT_EQ(Next("@daily", now), T(2026, 12, 4, 0, 0));
  EXPECT_EQ(Next("@weekly", now), T(2026, 12, 6, 0, 0));
  EXPECT_EQ(Next("@monthly", now), T(2027, 1, 1, 0, 0));
  EXPECT_EQ(Next("@yearly", now), T(2027, 1, 1, 0, 0));
  EXPECT_EQ(Next("0 0 29 2 *", now), T(2028, 2, 29, 0, 0));
  // Both day fields restricted: either matches (the 10th, or a Monday).
  EXPECT_EQ(Next("0 0 10 * 1", now), T(2026, 12, 7, 0, 0));
  EXPECT_EQ(Next("0 0 30 2 *", now), WallTime::max());
  // A step beyond the field's span (even one past INT_MAX, found by
  // fuzz/cron_fuzz) keeps only the start of the range.
  EXPECT_EQ(Next("*/2222222221 * * * *", now), T(2026, 12, 3, 15, 0));
  EXPECT_EQ(Next("10/9223372036854775807 * * * *", now),
            T(2026, 12, 3, 15, 10));
  // Strictly after: a time on the minute moves on.
  EXPECT_EQ(Next("38 14 * * *", T(2026, 12, 3, 14, 38)),
            T(2026, 12, 4, 14, 38));
}

TEST(CronScheduleTest, RefusesWhatKubeRefuses) {
  auto error = [](std::string_view spec) {
    auto s = CronSchedule::Parse(spec);
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  EXPECT_EQ(error("* * * *"), "expected exactly 5 fields, found 4: [* * * *]");
  EXPECT_EQ(error("0-60 * * * *"),
            "end of range (60) above maximum (59): 0-60");
  EXPECT_EQ(error("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
  EXPECT_EQ(error("*/0 * * * *"),
            "step of range should be a positive number: */0");
  EXPECT_EQ(error("TZ=UTC * * * * *"),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
  EXPECT_EQ(error("@fortnightly"), "unrecognized descriptor: @fortnightly");
  EXPECT_EQ(error("* * * foo *"), "failed to parse int from foo");
}

}  // namespace
}  // namespace kplane::machinery
