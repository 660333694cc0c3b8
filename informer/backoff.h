// Backoff: jittered exponential delays between retries (client-go's
// wait.Backoff / ExponentialBackoffManager), on an injected Clock.
//
//   Backoff b({.initial = 800ms, .max = 30s, .factor = 2, .jitter = 1.0,
//              .reset_after = 2min}, clock);
//   b.Next()  // 800ms..1.6s, then 1.6s..3.2s, 3.2s..6.4s, ... 30s..60s
//
// The n-th delay is min(initial * factor^n, max) plus a uniform random
// extra of up to `jitter` times that (jitter 1.0: up to double), so many
// clients that failed together do not retry together. When more than
// `reset_after` has passed since the previous Next(), the sequence starts
// over at `initial` (a long healthy period forgets past failures).
//
// Thread-safety: not thread-safe; one owner. Errors: none.
#ifndef KPLANE_INFORMER_BACKOFF_H_
#define KPLANE_INFORMER_BACKOFF_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <random>

#include "base/clock.h"

namespace kplane::informer {

struct BackoffOptions {
  Duration initial = milliseconds(800);
  Duration max = seconds(30);
  double factor = 2.0;
  double jitter = 1.0;
  Duration reset_after = minutes(2);  // 0: never reset
  // Source of randomness in [0, 1); null: a seeded mt19937_64.
  std::function<double()> random;
  uint64_t seed = 0;  // 0: random_device
};

class Backoff {
 public:
  Backoff(BackoffOptions options, Clock* clock);

  // The next delay (and advances the sequence).
  Duration Next();
  // Starts the sequence over.
  void Reset();
  // The un-jittered base of the next delay.
  Duration CurrentBase() const { return base_; }

 private:
  BackoffOptions options_;
  Clock* clock_;
  std::mt19937_64 rng_;
  Duration base_;
  std::optional<TimePoint> last_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_BACKOFF_H_
