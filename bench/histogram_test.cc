#include "bench/histogram.h"

#include <gtest/gtest.h>

#include <random>

namespace kplane::bench {
namespace {

TEST(HistogramTest, WorkedExampleBuckets) {
  LatencyHistogram h(2);
  for (int v : {0, 7, 8, 9, 10, 15, 16, 19, 31}) h.Record(v);
  EXPECT_EQ(h.count(), 9);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 31);
  // 8 and 9 share a bucket whose highest equivalent is 9.
  LatencyHistogram one(2);
  one.Record(8);
  EXPECT_EQ(one.Percentile(50), 8);  // capped at max
  one.Record(100);
  EXPECT_EQ(one.Percentile(50), 9);
}

TEST(HistogramTest, PercentilesWithinRelativeError) {
  LatencyHistogram h;  // 7 sub bits: < 0.8 % error
  std::vector<int64_t> values;
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(13.0, 1.0);  // ~0.4 ms median
  for (int i = 0; i < 100000; ++i) {
    int64_t v = static_cast<int64_t>(dist(rng));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    int64_t exact = values[static_cast<size_t>(p / 100 * values.size()) - 1];
    int64_t got = h.Percentile(p);
    EXPECT_NEAR(static_cast<double>(got), static_cast<double>(exact),
                exact * 0.01 + 2)
        << "p" << p;
  }
  EXPECT_EQ(h.Percentile(100), values.back());
}

TEST(HistogramTest, MergeEqualsRecordingEverything) {
  LatencyHistogram a, b, all;
  for (int i = 1; i <= 1000; ++i) {
    (i % 2 ? a : b).Record(i * 1000);
    all.Record(i * 1000);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.Percentile(99), all.Percentile(99));
  EXPECT_EQ(a.min(), 1000);
  EXPECT_EQ(a.max(), 1000000);
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
}

}  // namespace
}  // namespace kplane::bench
