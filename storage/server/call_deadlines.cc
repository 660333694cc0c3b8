#include "storage/server/call_deadlines.h"

#include <utility>
#include <vector>

namespace kplane::storage {

std::optional<Duration> ParseGrpcTimeout(std::string_view v) {
  // gRPC's TimeoutValue is at most 8 digits.
  if (v.size() < 2 || v.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : v.substr(0, v.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  // 99999999H and 99999999M are past a nanosecond Duration (about 292
  // years): longer timeouts count as kMaxGrpcTimeout.
  switch (v.back()) {
    case 'H':
      return n >= kMaxGrpcTimeout / hours(1)
                 ? kMaxGrpcTimeout
                 : std::chrono::duration_cast<Duration>(hours(n));
    case 'M':
      return n >= kMaxGrpcTimeout / minutes(1)
                 ? kMaxGrpcTimeout
                 : std::chrono::duration_cast<Duration>(minutes(n));
    case 'S':
      return std::chrono::duration_cast<Duration>(seconds(n));
    case 'm':
      return std::chrono::duration_cast<Duration>(milliseconds(n));
    case 'u':
      return std::chrono::duration_cast<Duration>(microseconds(n));
    case 'n':
      return std::chrono::duration_cast<Duration>(nanoseconds(n));
    default:
      return std::nullopt;
  }
}

CallDeadlines::~CallDeadlines() {
  std::thread t;
  {
    MutexLock l(&mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

void CallDeadlines::Add(TimePoint deadline, std::weak_ptr<PendingCall> call) {
  {
    MutexLock l(&mu_);
    if (stop_) return;
    due_.emplace(deadline, std::move(call));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  cv_.notify_all();
}

void CallDeadlines::Run() {
  MutexLock l(&mu_);
  while (!stop_) {
    if (due_.empty()) {
      cv_.wait(l.native(),
               [&]() REQUIRES(mu_) { return stop_ || !due_.empty(); });
      continue;
    }
    const TimePoint next = due_.begin()->first;
    if (clock_->Now() < next) {
      // Wakes for an earlier deadline added meanwhile, or to stop.
      clock_->WaitUntil(l.native(), cv_, next, [&]() REQUIRES(mu_) {
        return stop_ || due_.begin()->first < next;
      });
      continue;
    }
    std::vector<std::weak_ptr<PendingCall>> expired;
    const TimePoint now = clock_->Now();
    while (!due_.empty() && due_.begin()->first <= now) {
      expired.push_back(std::move(due_.begin()->second));
      due_.erase(due_.begin());
    }
    l.Unlock();
    for (auto& w : expired) {
      if (auto call = w.lock()) {
        call->Cancel(DeadlineExceededError("context deadline exceeded"));
      }
    }
    l.Lock();
  }
}

}  // namespace kplane::storage
