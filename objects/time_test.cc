#include "objects/time.h"

#include <gtest/gtest.h>

#include <random>

namespace kplane::objects {
namespace {

TEST(Time, FormatRfc3339) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1795941462), "2026-11-29T08:37:42Z");
  EXPECT_EQ(FormatRfc3339(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(951825600), "2000-02-29T12:00:00Z");
  EXPECT_EQ(FormatRfc3339(-62135596800), "0001-01-01T00:00:00Z");  // Go zero
  EXPECT_EQ(FormatRfc3339(253402300799), "9999-12-31T23:59:59Z");
}

TEST(Time, FormatMicro) {
  EXPECT_EQ(FormatRfc3339Micro(1795941462, 123456789),
            "2026-11-29T08:37:42.123456Z");
  EXPECT_EQ(FormatRfc3339Micro(1795941462, 0), "2026-11-29T08:37:42.000000Z");
}

TEST(Time, ParseRfc3339) {
  struct Case {
    const char* text;
    int64_t seconds;
    int32_t nanos;
  };
  const Case cases[] = {
      {"2026-11-29T08:37:42Z", 1795941462, 0},
      {"2026-11-29t08:37:42z", 1795941462, 0},
      {"2026-11-29T10:37:42+02:00", 1795941462, 0},
      {"2026-11-29T03:07:42-05:30", 1795941462, 0},
      {"2026-11-29T08:37:42.5Z", 1795941462, 500000000},
      {"2026-11-29T08:37:42.123456789Z", 1795941462, 123456789},
      {"2026-11-29T08:37:42.1234567891Z", 1795941462, 123456789},
      {"1969-12-31T23:59:59Z", -1, 0},
      {"2000-02-29T12:00:00Z", 951825600, 0},
  };
  for (const Case& c : cases) {
    StatusOr<Timestamp> t = ParseRfc3339(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.status();
    EXPECT_EQ(t->seconds, c.seconds) << c.text;
    EXPECT_EQ(t->nanos, c.nanos) << c.text;
  }
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T08:37:42", "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T08:60:00Z",
        "2026-11-29T08:37:60Z", "2026-11-29 08:37:42Z", "2026-11-29T08:37:42.Z",
        "2026-11-29T08:37:42Zx", "2026-11-29T08:37:42+0200",
        "26-11-29T08:37:42Z", "2026-11-29T08:37:42+24:00"}) {
    StatusOr<Timestamp> t = ParseRfc3339(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(Time, FormatAndParseAgreeEverywhere) {
  std::mt19937_64 rng(20261129);
  std::uniform_int_distribution<int64_t> dist(-62135596800, 253402300799);
  for (int i = 0; i < 20000; ++i) {
    const int64_t s = dist(rng);
    StatusOr<Timestamp> t = ParseRfc3339(FormatRfc3339(s));
    ASSERT_TRUE(t.ok()) << s;
    ASSERT_EQ(t->seconds, s) << FormatRfc3339(s);
  }
}

// Kubernetes' times run from year 1 to 9999, the nanosecond clock from
// 1678 to 2262: the far ones are clamped, and a difference with now still
// fits (it overflowed, undefined behaviour, for an Event's lastTimestamp of
// 9999-12-31 in a Table's age column).
TEST(Time, FarTimesAreClampedOnTheClock) {
  metav1::Time far;
  ASSERT_TRUE(ParseRfc3339("9999-12-31T23:59:59Z").ok());
  far.set_seconds(ParseRfc3339("9999-12-31T23:59:59Z")->seconds);
  metav1::Time early;
  early.set_seconds(ParseRfc3339("0001-01-01T00:00:00Z")->seconds);
  const WallTime now = Clock::Real()->WallNow();
  EXPECT_GT(ToWallTime(far), now);
  EXPECT_LT(ToWallTime(early), now);
  EXPECT_GT(ToWallTime(far) - now, std::chrono::hours(24 * 365 * 80));
  EXPECT_GT(now - ToWallTime(early), std::chrono::hours(24 * 365 * 190));
  metav1::MicroTime micro;
  micro.set_seconds(far.seconds());
  micro.set_nanos(999999000);
  EXPECT_EQ(ToWallTime(micro) - ToWallTime(far),
            std::chrono::nanoseconds(999999000));
}

TEST(Time, GoDurations) {
  struct Case {
    int64_t nanos;
    const char* text;
  };
  const Case cases[] = {
      {0, "0s"},
      {1, "1ns"},
      {999, "999ns"},
      {1500, "1.5\xc2\xb5s"},
      {1500000, "1.5ms"},
      {250000000, "250ms"},
      {1000000000, "1s"},
      {1500000000, "1.5s"},
      {90000000000, "1m30s"},
      {3600000000000, "1h0m0s"},
      {3661500000000, "1h1m1.5s"},
      {-90000000000, "-1m30s"},
      {100 * 3600000000000LL, "100h0m0s"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatGoDuration(c.nanos), c.text);
    if (c.nanos != 0) {
      StatusOr<int64_t> back = ParseGoDurationNanos(c.text);
      ASSERT_TRUE(back.ok()) << c.text;
      EXPECT_EQ(*back, c.nanos) << c.text;
    }
  }
  EXPECT_EQ(FormatGoDuration(INT64_MIN), "-2562047h47m16.854775808s");
  EXPECT_FALSE(ParseGoDurationNanos("5 minutes").ok());
}

TEST(Time, MessageHelpers) {
  metav1::Time t;
  EXPECT_TRUE(IsZero(t));
  SetTime(&t, 0);
  EXPECT_FALSE(IsZero(t));  // the epoch is a time, not the zero time
  EXPECT_EQ(UnixSeconds(t), 0);
  SetTime(&t, WallTime(std::chrono::milliseconds(1795941462999)));
  EXPECT_EQ(UnixSeconds(t), 1795941462);
  EXPECT_EQ(t.nanos(), 0);
  EXPECT_EQ(ToWallTime(t), WallTime(std::chrono::seconds(1795941462)));

  metav1::MicroTime m;
  EXPECT_TRUE(IsZero(m));
  SetMicroTime(&m, WallTime(std::chrono::microseconds(-1)));
  EXPECT_EQ(m.seconds(), -1);
  EXPECT_EQ(m.nanos(), 999999000);
  SetMicroTime(&m, 1795941462, 123456789);
  EXPECT_EQ(m.nanos(), 123456000);
  EXPECT_EQ(ToWallTime(m),
            WallTime(std::chrono::microseconds(1795941462123456LL)));
}

TEST(Time, NowComesFromTheClock) {
  FakeClock clock;
  const auto start = clock.WallNow();
  clock.Advance(std::chrono::milliseconds(2500));
  metav1::Time t = TimeNow(clock);
  metav1::MicroTime m = MicroTimeNow(clock);
  const auto expected = start + std::chrono::milliseconds(2500);
  EXPECT_EQ(UnixSeconds(t), std::chrono::floor<std::chrono::seconds>(expected)
                                .time_since_epoch()
                                .count());
  EXPECT_EQ(ToWallTime(m),
            std::chrono::floor<std::chrono::microseconds>(expected));
}

}  // namespace
}  // namespace kplane::objects
