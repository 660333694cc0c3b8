// Clock: every read of time and every timed wait in kplane goes through an
// injected Clock, so tests can drive time by hand (client-go's clock,
// leveldb's Env).
//
// Two kinds of time:
//   Now()     monotonic; for timeouts, intervals, lease expiry, backoff.
//   WallNow() calendar time; for timestamps users see (creationTimestamp,
//             renewTime).
// A FakeClock moves both together when advanced.
//
// Timed waits use WaitUntil(): it waits on the caller's condition variable
// until `pred()` holds or the deadline passes on this clock. Components keep
// their own mutex/condvar and call notify as usual; the clock only adds the
// deadline. On a FakeClock the wait ends when a test calls Advance() past the
// deadline, so no test ever sleeps for real.
//
//   MutexLock lock(&mu_);
//   clock_->WaitUntil(lock.native(), cv_, clock_->Now() + interval_,
//                     [&]() REQUIRES(mu_) { return stopped_; });
//
// Thread-safety: all methods are safe to call from any thread.
#ifndef KPLANE_BASE_CLOCK_H_
#define KPLANE_BASE_CLOCK_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "base/mutex.h"

namespace kplane {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

class Clock {
 public:
  virtual ~Clock() = default;

  virtual TimePoint Now() const = 0;
  virtual WallTime WallNow() const = 0;

  // Waits on `cv` (with `lock` held, as std::condition_variable::wait) until
  // `pred()` is true or `deadline` has passed on this clock. Returns pred().
  // Spurious wakeups are handled here; callers need no loop.
  bool WaitUntil(std::unique_lock<std::mutex>& lock,
                 std::condition_variable& cv, TimePoint deadline,
                 const std::function<bool()>& pred) {
    return WaitUntilImpl(lock, cv, deadline, pred);
  }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
               Duration d, const std::function<bool()>& pred) {
    return WaitUntil(lock, cv, Now() + d, pred);
  }

  // Blocks the calling thread for `d` of this clock's time.
  void SleepFor(Duration d);

  // The process-wide real clock. Never null, never destroyed.
  static Clock* Real();

 protected:
  virtual bool WaitUntilImpl(std::unique_lock<std::mutex>& lock,
                             std::condition_variable& cv, TimePoint deadline,
                             const std::function<bool()>& pred) = 0;
};

class RealClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override {
    return std::chrono::system_clock::now();
  }

 protected:
  bool WaitUntilImpl(std::unique_lock<std::mutex>& lock,
                     std::condition_variable& cv, TimePoint deadline,
                     const std::function<bool()>& pred) override;
};

// A clock that moves only when told to. Waiters registered through
// WaitUntil() are woken by Advance() and re-check their deadline.
//
// Tests that need "the component is now asleep" await it with
// WaitForWaiters(n) instead of sleeping.
class FakeClock : public Clock {
 public:
  // Starts at an arbitrary fixed monotonic point and at `wall`
  // (default 2026-01-01T00:00:00Z).
  explicit FakeClock(WallTime wall = DefaultWall());

  TimePoint Now() const override;
  WallTime WallNow() const override;

  // Moves both clocks forward by `d` (d >= 0) and wakes every waiter.
  void Advance(Duration d) EXCLUDES(mu_);
  // Sets the wall clock without moving monotonic time.
  void SetWall(WallTime wall);

  // Number of threads currently blocked in WaitUntil on this clock.
  int NumWaiters() const EXCLUDES(mu_);
  // Blocks (for real) until at least `n` threads wait on this clock.
  void WaitForWaiters(int n) const EXCLUDES(mu_);

  static WallTime DefaultWall();

 protected:
  bool WaitUntilImpl(std::unique_lock<std::mutex>& lock,
                     std::condition_variable& cv, TimePoint deadline,
                     const std::function<bool()>& pred) override;

 private:
  struct Waiter {
    std::mutex* mu;
    std::condition_variable* cv;
  };
  // Time is atomic so Now() never takes mu_: a waiter calls Now() while
  // holding its own mutex, and Advance() holds mu_ while taking that mutex.
  std::atomic<int64_t> mono_offset_ns_{0};
  std::atomic<int64_t> wall_ns_;
  // Lock order: mu_ -> a waiter's mutex (Advance); a waiter never holds
  // its own mutex while taking mu_.
  mutable Mutex mu_;
  mutable std::condition_variable waiters_changed_;
  std::set<Waiter*> waiters_ GUARDED_BY(mu_);
};

}  // namespace kplane

#endif  // KPLANE_BASE_CLOCK_H_
