#include "informer/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace kplane::informer {

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(
    Duration base, Duration max)
    : base_(base), max_(max) {}

Duration ItemExponentialFailureRateLimiter::When(const std::string& item) {
  int exp;
  {
    MutexLock l(&mu_);
    exp = failures_[item]++;
  }
  // In doubles, so 2^exp cannot overflow an integer.
  double ns = static_cast<double>(base_.count()) * std::pow(2.0, exp);
  if (ns >= static_cast<double>(max_.count())) return max_;
  return Duration(static_cast<int64_t>(ns));
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& item) {
  MutexLock l(&mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::NumRequeues(
    const std::string& item) const {
  MutexLock l(&mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

ItemFastSlowRateLimiter::ItemFastSlowRateLimiter(Duration fast, Duration slow,
                                                 int max_fast_attempts)
    : fast_(fast), slow_(slow), max_fast_(max_fast_attempts) {}

Duration ItemFastSlowRateLimiter::When(const std::string& item) {
  MutexLock l(&mu_);
  int n = ++failures_[item];
  return n <= max_fast_ ? fast_ : slow_;
}

void ItemFastSlowRateLimiter::Forget(const std::string& item) {
  MutexLock l(&mu_);
  failures_.erase(item);
}

int ItemFastSlowRateLimiter::NumRequeues(const std::string& item) const {
  MutexLock l(&mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, Clock* clock)
    : qps_(qps),
      burst_(burst),
      clock_(clock != nullptr ? clock : Clock::Real()),
      tokens_(burst),
      last_(clock_->Now()) {}

Duration BucketRateLimiter::When(const std::string&) {
  MutexLock l(&mu_);
  TimePoint now = clock_->Now();
  double elapsed = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  tokens_ -= 1;  // reserve one
  if (tokens_ >= 0) return Duration(0);
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

MaxOfRateLimiter::MaxOfRateLimiter(
    std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

Duration MaxOfRateLimiter::When(const std::string& item) {
  Duration longest(0);
  // Every limiter records the failure, even when another one wins.
  for (auto& l : limiters_) longest = std::max(longest, l->When(item));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (auto& l : limiters_) l->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) const {
  int n = 0;
  for (const auto& l : limiters_) n = std::max(n, l->NumRequeues(item));
  return n;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock* clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(
      milliseconds(5), seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace kplane::informer
