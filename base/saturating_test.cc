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

}  // namespace
}  // namespace kplane
