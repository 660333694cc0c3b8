// TimerQueue: one thread that fires many timers on an injected Clock, so a
// fleet of thousands of simulated nodes needs one timer thread instead of a
// thread (or a sleeping goroutine, as in KWOK) per node.
//
// A binary min-heap ordered by (due, sequence): timers due at the same
// instant fire in the order they were scheduled. Cancel is lazy: the id
// leaves the set of live ids and its entry is dropped when it reaches the
// top of the heap.
//
//   after Schedule(t=5,a) Schedule(t=3,b) Schedule(t=5,c):
//     heap (3,#2,b) (5,#1,a) (5,#3,c)    live {#1,#2,#3}
//   Cancel(#1)                           live {#2,#3}
//   clock reaches 3: b fires             live {#3}
//   clock reaches 5: (5,#1,a) popped and skipped (not live), c fires.
//
// Callbacks run on the timer thread, one at a time, and must be quick: the
// fleet's callbacks only post work to an executor. A callback may Schedule
// or Cancel (the lock is not held while it runs).
//
// Ownership: owns its thread; Stop() (also in the destructor) joins it and
// drops pending timers without running them.
// Thread-safety: every method may be called from any thread.
#ifndef KPLANE_KUBELETSIM_TIMER_QUEUE_H_
#define KPLANE_KUBELETSIM_TIMER_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <queue>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/saturating.h"

namespace kplane::kubeletsim {

using TimerId = uint64_t;

class TimerQueue {
 public:
  explicit TimerQueue(Clock* clock);
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs `fn(due)` once the clock reaches `due` (at once if already past).
  // Returns an id for Cancel (never 0). After Stop(), returns 0 and drops fn.
  TimerId Schedule(TimePoint due, std::function<void(TimePoint due)> fn);
  TimerId ScheduleAfter(Duration d, std::function<void(TimePoint due)> fn) {
    return Schedule(SaturatingAdd(clock_->Now(), d), std::move(fn));
  }
  // The timer will not fire (no effect if it already fired or id is 0).
  void Cancel(TimerId id);

  // Timers scheduled and not yet fired or cancelled.
  size_t Pending() const;
  // The due time of the earliest pending timer, or TimePoint::max().
  TimePoint NextDue() const;

  // Tests: blocks until no callback is running and no timer is due on the
  // clock (a FakeClock that is not advanced leaves later timers pending).
  // Does not wait on the clock itself, so it never counts as a waiter.
  void WaitIdle() const;

  void Stop();

 private:
  struct Entry {
    TimePoint due;
    uint64_t seq;  // == TimerId
    std::function<void(TimePoint)> fn;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.due != b.due ? a.due > b.due : a.seq > b.seq;
    }
  };
  void Run();
  void DropCancelledTop() REQUIRES(mu_);

  Clock* const clock_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, Later> heap_ GUARDED_BY(mu_);
  // Scheduled, not fired or cancelled
  std::unordered_set<TimerId> live_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  uint64_t changes_ GUARDED_BY(mu_) =
      0;  // bumped when the top may have moved earlier
  bool stopped_ GUARDED_BY(mu_) = false;
  bool firing_ GUARDED_BY(mu_) = false;  // a callback is running
  mutable std::condition_variable idle_cv_;
  std::thread thread_;
};

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_TIMER_QUEUE_H_
