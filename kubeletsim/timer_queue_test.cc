#include "kubeletsim/timer_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace kplane::kubeletsim {
namespace {

class Recorder {
 public:
  std::function<void(TimePoint)> Make(int v) {
    return [this, v](TimePoint) {
      MutexLock l(&mu_);
      fired_.push_back(v);
    };
  }
  std::vector<int> fired() {
    MutexLock l(&mu_);
    return fired_;
  }

 private:
  Mutex mu_;
  std::vector<int> fired_ GUARDED_BY(mu_);
};

TEST(TimerQueueTest, FiresInDueOrderThenScheduleOrder) {
  FakeClock clock;
  TimerQueue q(&clock);
  Recorder r;
  q.ScheduleAfter(seconds(5), r.Make(1));
  q.ScheduleAfter(seconds(3), r.Make(2));
  q.ScheduleAfter(seconds(5), r.Make(3));
  q.ScheduleAfter(seconds(9), r.Make(4));
  q.WaitIdle();
  EXPECT_TRUE(r.fired().empty());
  EXPECT_EQ(q.Pending(), 4u);
  clock.Advance(seconds(5));
  q.WaitIdle();
  EXPECT_EQ(r.fired(), (std::vector<int>{2, 1, 3}));
  EXPECT_EQ(q.Pending(), 1u);
  clock.Advance(seconds(4));
  q.WaitIdle();
  EXPECT_EQ(r.fired(), (std::vector<int>{2, 1, 3, 4}));
}

TEST(TimerQueueTest, CancelledTimersDoNotFire) {
  FakeClock clock;
  TimerQueue q(&clock);
  Recorder r;
  TimerId a = q.ScheduleAfter(seconds(1), r.Make(1));
  q.ScheduleAfter(seconds(2), r.Make(2));
  TimerId c = q.ScheduleAfter(seconds(3), r.Make(3));
  q.Cancel(a);
  q.Cancel(c);
  q.Cancel(c);  // twice is harmless
  q.Cancel(0);
  EXPECT_EQ(q.Pending(), 1u);
  clock.Advance(seconds(10));
  q.WaitIdle();
  EXPECT_EQ(r.fired(), (std::vector<int>{2}));
  EXPECT_EQ(q.Pending(), 0u);
  q.Cancel(a);  // after it would have fired: no effect, no leak
  EXPECT_EQ(q.Pending(), 0u);
}

TEST(TimerQueueTest, EarlierTimerWakesTheSleepingThread) {
  FakeClock clock;
  TimerQueue q(&clock);
  Recorder r;
  q.ScheduleAfter(hours(1), r.Make(1));
  clock.WaitForWaiters(1);  // the timer thread sleeps until +1h
  q.ScheduleAfter(seconds(1), r.Make(2));
  clock.Advance(seconds(1));
  q.WaitIdle();
  EXPECT_EQ(r.fired(), (std::vector<int>{2}));
  EXPECT_EQ(q.NextDue(), clock.Now() + hours(1) - seconds(1));
}

TEST(TimerQueueTest, CallbacksMayReschedule) {
  FakeClock clock;
  TimerQueue q(&clock);
  Mutex mu;
  std::vector<TimePoint> dues;
  std::function<void(TimePoint)> tick = [&](TimePoint due) {
    {
      MutexLock l(&mu);
      dues.push_back(due);
    }
    if (dues.size() < 3) q.Schedule(due + seconds(10), tick);
  };
  TimePoint start = clock.Now();
  q.Schedule(start + seconds(10), tick);
  for (int i = 0; i < 5; ++i) {
    clock.Advance(seconds(10));
    q.WaitIdle();
  }
  MutexLock l(&mu);
  ASSERT_EQ(dues.size(), 3u);
  EXPECT_EQ(dues[0], start + seconds(10));
  EXPECT_EQ(dues[2], start + seconds(30));
}

TEST(TimerQueueTest, StopDropsPendingTimers) {
  FakeClock clock;
  Recorder r;
  {
    TimerQueue q(&clock);
    q.ScheduleAfter(seconds(1), r.Make(1));
    q.Stop();
    EXPECT_EQ(q.Schedule(clock.Now(), r.Make(2)), 0u);
    clock.Advance(seconds(5));
  }
  EXPECT_TRUE(r.fired().empty());
}

}  // namespace
}  // namespace kplane::kubeletsim
