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
  EXPECT_EQ(error("* * * foo *"),
            "failed to parse int from foo: strconv.Atoi: parsing \"foo\": "
            "invalid syntax");
}

// robfig/cron splits the spec with Go's strings.Fields: any run of
// whitespace (Unicode's too) separates fields.
TEST(CronScheduleTest, FieldsAreSplitOnAnyWhitespace) {
  const WallTime now = T(2026, 12, 3, 14, 37, 20);
  EXPECT_EQ(Next("0\t0 * * *", now), T(2026, 12, 4, 0, 0));
  EXPECT_EQ(Next(" 30\n8\v*\f*\r1 \t", now), T(2026, 12, 7, 8, 30));
  EXPECT_EQ(Next("0\u00a00\u3000*\u2003* *", now), T(2026, 12, 4, 0, 0));
  auto s = CronSchedule::Parse("0\t0 * *");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "expected exactly 5 fields, found 4: [0 0 * *]");
}

// Day-of-week is 0-6 (robfig's spec.go bounds): 7 is refused, not Sunday.
TEST(CronScheduleTest, DayOfWeekIsZeroToSix) {
  auto error = [](std::string_view spec) {
    auto s = CronSchedule::Parse(spec);
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  EXPECT_EQ(error("0 0 * * 7"), "end of range (7) above maximum (6): 7");
  EXPECT_EQ(error("0 0 * * 5-7"), "end of range (7) above maximum (6): 5-7");
  EXPECT_EQ(error("0 0 * * 0-6"), "ok");
  EXPECT_EQ(error("0 0 * * SUN,sat"), "ok");
  EXPECT_EQ(Next("0 0 * * 6", T(2026, 12, 3, 14, 37)), T(2026, 12, 5, 0, 0));
}

// The rest of robfig's getRange / getField / mustParseInt, texts included
// (the API server's 422 carries them).
TEST(CronScheduleTest, RangesParseAsRobfig) {
  auto error = [](std::string_view spec) {
    auto s = CronSchedule::Parse(spec);
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  EXPECT_EQ(error(""), "empty spec string");
  EXPECT_EQ(error("1-2-3 * * * *"), "too many hyphens: 1-2-3");
  EXPECT_EQ(error("*/2/3 * * * *"), "too many slashes: */2/3");
  EXPECT_EQ(error("*/-1 * * * *"), "negative number (-1) not allowed: -1");
  EXPECT_EQ(error("5000 * * * *"),
            "end of range (5000) above maximum (59): 5000");
  EXPECT_EQ(error("70/0 * * * *"),
            "beginning of range (70) beyond end of range (59): 70/0");
  EXPECT_EQ(error("99999999999999999999 * * * *"),
            "failed to parse int from 99999999999999999999: strconv.Atoi: "
            "parsing \"99999999999999999999\": value out of range");
  EXPECT_EQ(error("1- * * * *"),
            "failed to parse int from : strconv.Atoi: parsing \"\": invalid "
            "syntax");
  const WallTime now = T(2026, 12, 3, 14, 37, 20);
  // Empty list items are dropped (strings.FieldsFunc), '+' is a sign.
  EXPECT_EQ(Next("40,,50 * * * *", now), T(2026, 12, 3, 14, 40));
  EXPECT_EQ(Next("+45 * * * *", now), T(2026, 12, 3, 14, 45));
  // A list with no item is a field that never matches.
  EXPECT_EQ(Next(", * * * *", now), WallTime::max());
}

}  // namespace
}  // namespace kplane::machinery
