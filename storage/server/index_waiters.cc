#include "storage/server/index_waiters.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace kplane::storage {

IndexWaiters::IndexWaiters(Options options) : options_(options) {}

IndexWaiters::~IndexWaiters() {
  std::thread t;
  {
    MutexLock l(&mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

bool IndexWaiters::Await(uint64_t index, std::function<void()> ready) {
  MutexLock l(&mu_);
  if (released_ || stop_ || index <= reached_.load() ||
      waiters_.size() >= static_cast<size_t>(options_.max_waiters)) {
    return false;
  }
  waiters_.push_back(
      Waiter{.index = index,
             .deadline = options_.clock->Now() + options_.max_wait,
             .ready = std::move(ready)});
  UpdateNextIndex();
  // Reached() stores reached_ before it reads next_index_, and this reads
  // reached_ after storing next_index_: one of the two sees the other.
  if (index <= reached_.load()) {
    waiters_.pop_back();
    UpdateNextIndex();
    return false;
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  cv_.notify_all();
  return true;
}

void IndexWaiters::Reached(uint64_t index) {
  uint64_t seen = reached_.load();
  while (seen < index && !reached_.compare_exchange_weak(seen, index)) {
  }
  if (index < next_index_.load()) return;
  MutexLock l(&mu_);  // not a lost wake-up: Run tests under mu_
  cv_.notify_all();
}

bool IndexWaiters::WaitForWaiters(size_t n, Duration timeout) {
  MutexLock l(&mu_);
  return cv_.wait_for(l.native(), timeout,
                      [&]() REQUIRES(mu_) { return waiters_.size() >= n; });
}

void IndexWaiters::Release() {
  std::deque<Waiter> released;
  {
    MutexLock l(&mu_);
    released_ = true;
    released.swap(waiters_);
    UpdateNextIndex();
  }
  for (Waiter& w : released) w.ready();
}

void IndexWaiters::UpdateNextIndex() {
  uint64_t next = UINT64_MAX;
  for (const Waiter& w : waiters_) next = std::min(next, w.index);
  next_index_.store(next);
}

void IndexWaiters::Run() {
  MutexLock l(&mu_);
  while (!stop_) {
    if (waiters_.empty()) {
      cv_.wait(l.native(),
               [&]() REQUIRES(mu_) { return stop_ || !waiters_.empty(); });
      continue;
    }
    // Due: the index is reached, or the wait is over.
    std::vector<std::function<void()>> due;
    const TimePoint now = options_.clock->Now();
    const uint64_t reached = reached_.load();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->index <= reached || it->deadline <= now) {
        due.push_back(std::move(it->ready));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    UpdateNextIndex();
    if (!due.empty()) {
      l.Unlock();
      for (auto& ready : due) ready();
      l.Lock();
      continue;
    }
    // The oldest waiter's deadline is the first (one max_wait for all).
    options_.clock->WaitUntil(l.native(), cv_, waiters_.front().deadline,
                              [&]() REQUIRES(mu_) {
                                return stop_ || waiters_.empty() ||
                                       reached_.load() >= next_index_.load();
                              });
  }
}

}  // namespace kplane::storage
