#include "base/saturating.h"

#include <gtest/gtest.h>

#include <limits>

namespace kplane {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(SaturatingAddTest, AddsInRange) {
  EXPECT_EQ(SaturatingAdd(2, 3), 5);
  EXPECT_EQ(SaturatingAdd(-2, 3), 1);
  EXPECT_EQ(SaturatingAdd(kMax, kMin), -1);
  EXPECT_EQ(SaturatingAdd(kMax - 1, 1), kMax);
}

TEST(SaturatingAddTest, HoldsAtTheEnds) {
  EXPECT_EQ(SaturatingAdd(kMax, 1), kMax);
  EXPECT_EQ(SaturatingAdd(1, kMax), kMax);
  EXPECT_EQ(SaturatingAdd(kMax, kMax), kMax);
  EXPECT_EQ(SaturatingAdd(kMin, -1), kMin);
  EXPECT_EQ(SaturatingAdd(-1, kMin), kMin);
  EXPECT_EQ(SaturatingAdd(kMin, kMin), kMin);
}

TEST(SaturatingSecondsTest, ConvertsOrHoldsAtTheEnds) {
  using std::chrono::nanoseconds;
  EXPECT_EQ(SaturatingSeconds(3), nanoseconds(3000000000));
  EXPECT_EQ(SaturatingSeconds(-3), nanoseconds(-3000000000));
  EXPECT_EQ(SaturatingSeconds(9223372036), nanoseconds(9223372036000000000));
  EXPECT_EQ(SaturatingSeconds(9223372037), nanoseconds::max());
  EXPECT_EQ(SaturatingSeconds(kMax), nanoseconds::max());
  EXPECT_EQ(SaturatingSeconds(kMin), nanoseconds::min());
  const auto now = std::chrono::system_clock::time_point(nanoseconds(7));
  EXPECT_EQ(SaturatingAdd(now, SaturatingSeconds(kMax)),
            std::chrono::system_clock::time_point::max());
  EXPECT_EQ(SaturatingAdd(now, nanoseconds(-8)).time_since_epoch(),
            nanoseconds(-1));
}

}  // namespace
}  // namespace kplane
