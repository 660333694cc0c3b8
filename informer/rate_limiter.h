// Rate limiters for work-queue retries (client-go's
// util/workqueue/default_rate_limiters.go).
//
//   ItemExponentialFailureRateLimiter(5ms, 1000s): per item, the n-th
//     consecutive failure waits base * 2^n, capped: 5ms, 10ms, 20ms, ...
//     ~1000s after 18 failures. Forget(item) resets the item's count.
//   ItemFastSlowRateLimiter(fast, slow, max_fast): `fast` for an item's
//     first max_fast failures, then `slow`.
//   BucketRateLimiter(qps, burst): one token bucket for all items (overall
//     retry rate): the first `burst` retries go at once, then `qps` per
//     second. Worked example with qps 10, burst 2, all at t=0:
//       When(a) 0, When(b) 0, When(c) 100ms, When(d) 200ms;
//     at t=1s the bucket has refilled to 2 (capped at burst).
//   MaxOfRateLimiter: the longest wait of several.
//   DefaultControllerRateLimiter(): max(exponential 5ms..1000s,
//     bucket 10 qps / burst 100), client-go's default.
//
// Time comes from the injected Clock (the bucket's refill).
// Thread-safety: every limiter may be used from any thread. Errors: none.
#ifndef KPLANE_INFORMER_RATE_LIMITER_H_
#define KPLANE_INFORMER_RATE_LIMITER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"

namespace kplane::informer {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // Records a failure of `item` and returns how long it should wait before
  // it is retried.
  virtual Duration When(const std::string& item) = 0;
  // The item succeeded: forget its failures.
  virtual void Forget(const std::string& item) = 0;
  // Failures recorded for the item since it was last forgotten.
  virtual int NumRequeues(const std::string& item) const = 0;
};

class ItemExponentialFailureRateLimiter : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(Duration base, Duration max);
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) const override;

 private:
  const Duration base_, max_;
  mutable Mutex mu_;
  std::map<std::string, int> failures_ GUARDED_BY(mu_);
};

class ItemFastSlowRateLimiter : public RateLimiter {
 public:
  ItemFastSlowRateLimiter(Duration fast, Duration slow, int max_fast_attempts);
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) const override;

 private:
  const Duration fast_, slow_;
  const int max_fast_;
  mutable Mutex mu_;
  std::map<std::string, int> failures_ GUARDED_BY(mu_);
};

class BucketRateLimiter : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, Clock* clock = nullptr);
  Duration When(const std::string& item) override;
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) const override { return 0; }

 private:
  const double qps_;
  const double burst_;
  Clock* const clock_;
  Mutex mu_;
  // May go negative: reserved tokens not yet refilled
  double tokens_ GUARDED_BY(mu_);
  TimePoint last_ GUARDED_BY(mu_);
};

class MaxOfRateLimiter : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) const override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(
    Clock* clock = nullptr);

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_RATE_LIMITER_H_
