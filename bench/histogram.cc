#include "bench/histogram.h"

#include <algorithm>
#include <cstdio>

namespace kplane::bench {

LatencyHistogram::LatencyHistogram(int sub_bits)
    : sub_bits_(sub_bits),
      counts_(static_cast<size_t>(64 - sub_bits + 1) << sub_bits, 0) {}

size_t LatencyHistogram::IndexOf(int64_t value) const {
  uint64_t v = value < 0 ? 0 : static_cast<uint64_t>(value);
  int msb = v == 0 ? 0 : 63 - __builtin_clzll(v);
  if (msb < sub_bits_) return static_cast<size_t>(v);
  int shift = msb - sub_bits_;
  uint64_t sub = v >> shift;  // in [2^S, 2^(S+1))
  return (static_cast<size_t>(shift + 1) << sub_bits_) +
         static_cast<size_t>(sub - (uint64_t{1} << sub_bits_));
}

int64_t LatencyHistogram::HighestEquivalent(size_t index) const {
  size_t unit = size_t{1} << sub_bits_;
  if (index < unit) return static_cast<int64_t>(index);
  size_t shift = index / unit - 1;
  uint64_t sub = (index % unit) + unit;
  return static_cast<int64_t>(((sub + 1) << shift) - 1);
}

void LatencyHistogram::Record(int64_t value) {
  if (value < 0) value = 0;
  ++counts_[IndexOf(value)];
  if (count_ == 0 || value < min_) min_ = value;
  if (value > max_) max_ = value;
  ++count_;
  sum_ += static_cast<double>(value);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < counts_.size() && i < other.counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
  }
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

void LatencyHistogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = min_ = max_ = 0;
  sum_ = 0;
}

int64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  // The rank of the value that p% of values are at or below (at least 1).
  int64_t rank =
      std::max<int64_t>(1, static_cast<int64_t>(p / 100.0 * count_ + 0.5));
  if (rank >= count_) return max_;
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(HighestEquivalent(i), max_);
  }
  return max_;
}

std::string LatencyHistogram::Summary() const {
  char buf[256];
  auto ms = [](int64_t ns) { return ns / 1e6; };
  std::snprintf(buf, sizeof(buf),
                "p50 %.3fms p90 %.3fms p99 %.3fms p99.9 %.3fms max %.3fms",
                ms(Percentile(50)), ms(Percentile(90)), ms(Percentile(99)),
                ms(Percentile(99.9)), ms(max()));
  return buf;
}

}  // namespace kplane::bench
