#include "informer/backoff.h"

#include <algorithm>

namespace kplane::informer {

Backoff::Backoff(BackoffOptions options, Clock* clock)
    : options_(std::move(options)),
      clock_(clock != nullptr ? clock : Clock::Real()),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()),
      base_(options_.initial) {}

void Backoff::Reset() {
  base_ = options_.initial;
  last_.reset();
}

Duration Backoff::Next() {
  TimePoint now = clock_->Now();
  if (last_.has_value() && options_.reset_after.count() > 0 &&
      now - *last_ > options_.reset_after) {
    base_ = options_.initial;
  }
  last_ = now;
  Duration d = std::min(base_, options_.max);
  double r;
  if (options_.random) {
    r = options_.random();
  } else {
    r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  }
  Duration jittered =
      d + Duration(static_cast<int64_t>(static_cast<double>(d.count()) *
                                        options_.jitter * r));
  double next = static_cast<double>(base_.count()) * options_.factor;
  base_ = next >= static_cast<double>(options_.max.count())
              ? options_.max
              : Duration(static_cast<int64_t>(next));
  return jittered;
}

}  // namespace kplane::informer
