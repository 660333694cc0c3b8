// LatencyHistogram: an HdrHistogram-style record of latencies (nanoseconds)
// with bounded relative error, cheap to record into and to merge, so a
// benchmark reports true percentiles (p50 ... p99.9, max) instead of
// averages.
//
// Layout (log-linear): a value v is kept to its `sub_bits` + 1 most
// significant bits. With sub_bits = 7 every recorded value is reported within
// 1/128 (< 0.8 %) of itself, and the whole range 1 ns .. 2^63 ns fits in
// (64 - 7 + 1) * 128 = 7424 counters.
//
// Worked example, sub_bits = 2 (precision 1/4):
//   values 0..7 each have their own bucket (index = value);
//   8..15 go in steps of 2: 8-9 -> 8, 10-11 -> 9, 12-13 -> 10, 14-15 -> 11;
//   16..31 in steps of 4: 16-19 -> 12, ... 28-31 -> 15; and so on.
//   Percentile() reports the highest value of the bucket it lands in
//   (HdrHistogram's "highest equivalent value"), so p100 == max exactly.
//
// Thread-safety: not synchronized; give each thread its own and Merge().
#ifndef KPLANE_BENCH_HISTOGRAM_H_
#define KPLANE_BENCH_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kplane::bench {

class LatencyHistogram {
 public:
  explicit LatencyHistogram(int sub_bits = 7);

  void Record(int64_t value);
  void Merge(const LatencyHistogram& other);
  void Reset();

  int64_t count() const { return count_; }
  int64_t min() const { return count_ ? min_ : 0; }
  int64_t max() const { return max_; }
  double mean() const {
    return count_ ? sum_ / static_cast<double>(count_) : 0;
  }
  // The value at percentile p in [0, 100] (0 if empty).
  int64_t Percentile(double p) const;

  // "p50 1.23ms p90 ... max ..." with values in milliseconds.
  std::string Summary() const;

 private:
  size_t IndexOf(int64_t v) const;
  int64_t HighestEquivalent(size_t index) const;

  int sub_bits_;
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_HISTOGRAM_H_
