// Human-readable and Go-format durations, after
// k8s.io/apimachinery/pkg/util/duration and Go's time.Duration.
#include "objects/machinery/duration.h"

#include <gtest/gtest.h>

namespace kplane::machinery {
namespace {

constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kYear = 365 * kDay;

TEST(HumanDurationTest, Boundaries) {
  struct Case {
    int64_t d;
    const char* want;
  } cases[] = {
      {-2 * kSecond, "<invalid>"},
      {-2 * kSecond + 1, "0s"},
      {0, "0s"},
      {kSecond - kMillisecond, "0s"},
      {kSecond, "1s"},
      {70 * kSecond, "70s"},
      {2 * kMinute - kMillisecond, "119s"},
      {2 * kMinute, "2m"},
      {2 * kMinute + kSecond, "2m1s"},
      {190 * kSecond, "3m10s"},
      {10 * kMinute - kMillisecond, "9m59s"},
      {10 * kMinute, "10m"},
      {10 * kMinute + kSecond, "10m"},
      {70 * kMinute, "70m"},
      {3 * kHour - kMillisecond, "179m"},
      {3 * kHour, "3h"},
      {3 * kHour + kMinute, "3h1m"},
      {8 * kHour - kMillisecond, "7h59m"},
      {8 * kHour, "8h"},
      {8 * kHour + 59 * kMinute, "8h"},
      {47 * kHour, "47h"},
      {2 * kDay - kMillisecond, "47h"},
      {2 * kDay, "2d"},
      {49 * kHour, "2d1h"},
      {8 * kDay - kMillisecond, "7d23h"},
      {8 * kDay, "8d"},
      {8 * kDay + 23 * kHour, "8d"},
      {367 * kDay, "367d"},
      {2 * kYear - kMillisecond, "729d"},
      {2 * kYear, "2y"},
      {2 * kYear + 23 * kHour, "2y"},
      {2 * kYear + kDay, "2y1d"},
      {2 * kYear + 25 * kHour, "2y1d"},
      {8 * kYear - kMillisecond, "7y364d"},
      {8 * kYear, "8y"},
      {8 * kYear + 2 * kHour, "8y"},
      {9 * kYear, "9y"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(HumanDuration(c.d), c.want) << c.d;
  }
}

TEST(ShortHumanDurationTest, Boundaries) {
  struct Case {
    int64_t d;
    const char* want;
  } cases[] = {
      {-2 * kSecond, "<invalid>"},
      {-2 * kSecond + 1, "0s"},
      {0, "0s"},
      {kSecond - kMillisecond, "0s"},
      {kSecond, "1s"},
      {2 * kSecond - kMillisecond, "1s"},
      {kMinute - kMillisecond, "59s"},
      {kMinute, "1m"},
      {2 * kMinute - kMillisecond, "1m"},
      {kHour - kMillisecond, "59m"},
      {kHour, "1h"},
      {kDay - kMillisecond, "23h"},
      {kDay, "1d"},
      {kYear - kMillisecond, "364d"},
      {kYear, "1y"},
      {3 * kYear, "3y"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ShortHumanDuration(c.d), c.want) << c.d;
  }
}

TEST(GoDurationTest, StringMatchesGo) {
  struct Case {
    int64_t d;
    const char* want;
  } cases[] = {
      {0, "0s"},
      {1, "1ns"},
      {1100, "1.1\xC2\xB5s"},
      {2200 * kMicrosecond, "2.2ms"},
      {300 * kMillisecond, "300ms"},
      {3300 * kMillisecond, "3.3s"},
      {kSecond, "1s"},
      {90 * kSecond, "1m30s"},
      {4 * kMinute + 5 * kSecond, "4m5s"},
      {4 * kMinute + 5001 * kMillisecond, "4m5.001s"},
      {kHour, "1h0m0s"},
      {5 * kHour + 6 * kMinute + 7001 * kMillisecond, "5h6m7.001s"},
      {8 * kMinute + 1, "8m0.000000001s"},
      {-kHour, "-1h0m0s"},
      {-1, "-1ns"},
      {INT64_MAX, "2562047h47m16.854775807s"},
      {INT64_MIN, "-2562047h47m16.854775808s"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(GoDurationString(c.d), c.want) << c.d;
    // (base/strings.h ParseGoDuration stops short of the int64 extremes.)
    if (c.d != INT64_MIN && c.d != INT64_MAX) {
      auto back = ParseDuration(GoDurationString(c.d));
      ASSERT_TRUE(back.ok()) << GoDurationString(c.d);
      EXPECT_EQ(*back, c.d);
    }
  }
  EXPECT_FALSE(ParseDuration("abc").ok());
  EXPECT_EQ(ParseDuration("1x").status().message(),
            "time: invalid duration \"1x\"");
}

}  // namespace
}  // namespace kplane::machinery
