#include "base/log_throttle.h"

#include <gtest/gtest.h>

namespace kplane {
namespace {

TEST(LogThrottleTest, OneLinePerIntervalAndTheCountLeftOut) {
  LogThrottle throttle(seconds(10));
  const TimePoint t0 = TimePoint() + seconds(100);
  uint64_t left_out = 99;
  EXPECT_TRUE(throttle.Allow(t0, &left_out));
  EXPECT_EQ(left_out, 0u);
  EXPECT_FALSE(throttle.Allow(t0));
  EXPECT_FALSE(throttle.Allow(t0 + seconds(9)));
  EXPECT_FALSE(throttle.Allow(t0 + seconds(10) - milliseconds(1)));
  EXPECT_TRUE(throttle.Allow(t0 + seconds(10), &left_out));
  EXPECT_EQ(left_out, 3u);
  // The interval runs from the last line written, not from the first.
  EXPECT_FALSE(throttle.Allow(t0 + seconds(19)));
  EXPECT_TRUE(throttle.Allow(t0 + seconds(20), &left_out));
  EXPECT_EQ(left_out, 1u);
}

TEST(LogThrottleTest, LeftOutNamesTheCountOnlyWhenThereIsOne) {
  EXPECT_EQ(LogThrottle::LeftOut(0, "failures"), "");
  EXPECT_EQ(LogThrottle::LeftOut(3, "failed checks"),
            " (+3 more failed checks since the last message)");
}

TEST(LogThrottleTest, TheFirstCallIsAllowedWhateverTheClock) {
  LogThrottle throttle(seconds(10));
  EXPECT_TRUE(throttle.Allow(TimePoint()));
  EXPECT_FALSE(throttle.Allow(TimePoint() + seconds(1)));
}

}  // namespace
}  // namespace kplane
