#include "base/clock.h"

#include <vector>

#include "base/logging.h"

namespace kplane {

void Clock::SleepFor(Duration d) {
  Mutex mu;
  std::condition_variable cv;
  MutexLock lock(&mu);
  WaitUntil(lock.native(), cv, Now() + d, [] { return false; });
}

Clock* Clock::Real() {
  static RealClock* const kReal = new RealClock();
  return kReal;
}

bool RealClock::WaitUntilImpl(std::unique_lock<std::mutex>& lock,
                              std::condition_variable& cv, TimePoint deadline,
                              const std::function<bool()>& pred) {
  return cv.wait_until(lock, deadline, pred);
}

namespace {
// An arbitrary but fixed monotonic origin so FakeClock times are stable
// within a process and far from zero.
const TimePoint kFakeOrigin = TimePoint(std::chrono::hours(24 * 365));
}  // namespace

WallTime FakeClock::DefaultWall() {
  // 2026-01-01T00:00:00Z.
  return WallTime(std::chrono::seconds(1767225600));
}

FakeClock::FakeClock(WallTime wall)
    : wall_ns_(std::chrono::duration_cast<nanoseconds>(wall.time_since_epoch())
                   .count()) {}

TimePoint FakeClock::Now() const {
  return kFakeOrigin + nanoseconds(mono_offset_ns_.load());
}

WallTime FakeClock::WallNow() const {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      nanoseconds(wall_ns_.load())));
}

void FakeClock::Advance(Duration d) {
  CHECK_GE(d.count(), 0);
  // Lock order is always clock mutex -> waiter mutex; waiters never hold
  // their own mutex while taking ours (see WaitUntilImpl).
  MutexLock l(&mu_);
  mono_offset_ns_ += d.count();
  wall_ns_ += d.count();
  for (Waiter* w : waiters_) {
    std::lock_guard<std::mutex> wl(*w->mu);
    w->cv->notify_all();
  }
}

void FakeClock::SetWall(WallTime wall) {
  wall_ns_ = std::chrono::duration_cast<nanoseconds>(wall.time_since_epoch())
                 .count();
}

int FakeClock::NumWaiters() const {
  MutexLock l(&mu_);
  return static_cast<int>(waiters_.size());
}

void FakeClock::WaitForWaiters(int n) const {
  MutexLock l(&mu_);
  waiters_changed_.wait(l.native(), [&]() REQUIRES(mu_) {
    return static_cast<int>(waiters_.size()) >= n;
  });
}

bool FakeClock::WaitUntilImpl(std::unique_lock<std::mutex>& lock,
                              std::condition_variable& cv, TimePoint deadline,
                              const std::function<bool()>& pred) {
  Waiter w{lock.mutex(), &cv};
  auto set_registered = [&](bool on) {
    // Never take the clock mutex while holding the waiter's mutex: Advance()
    // takes them in the opposite order.
    lock.unlock();
    {
      MutexLock l(&mu_);
      if (on) {
        waiters_.insert(&w);
      } else {
        waiters_.erase(&w);
      }
      waiters_changed_.notify_all();
    }
    lock.lock();
  };
  while (true) {
    if (pred()) return true;
    if (Now() >= deadline) return pred();
    // Registered before the time check below, so an Advance() that lands in
    // between either is seen by that check or notifies us.
    set_registered(true);
    if (!pred() && Now() < deadline) cv.wait(lock);
    set_registered(false);
  }
}

}  // namespace kplane
