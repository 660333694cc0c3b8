#include "base/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace kplane {
namespace {

TEST(FakeClockTest, AdvanceMovesBothClocks) {
  FakeClock clock;
  TimePoint t0 = clock.Now();
  WallTime w0 = clock.WallNow();
  clock.Advance(seconds(3));
  EXPECT_EQ(clock.Now() - t0, seconds(3));
  EXPECT_EQ(clock.WallNow() - w0, seconds(3));
}

TEST(FakeClockTest, WaitUntilEndsOnlyWhenDeadlinePasses) {
  FakeClock clock;
  Mutex mu;
  std::condition_variable cv;
  bool woke = false;
  bool result = true;
  std::thread t([&] {
    MutexLock lock(&mu);
    result =
        clock.WaitFor(lock.native(), cv, seconds(10), [] { return false; });
    woke = true;
  });
  clock.WaitForWaiters(1);
  clock.Advance(seconds(9));
  // Still waiting: the deadline is one second away.
  clock.WaitForWaiters(1);
  {
    MutexLock l(&mu);
    EXPECT_FALSE(woke);
  }
  clock.Advance(seconds(1));
  t.join();
  EXPECT_TRUE(woke);
  EXPECT_FALSE(result);
  EXPECT_EQ(clock.NumWaiters(), 0);
}

TEST(FakeClockTest, WaitUntilEndsOnPredicate) {
  FakeClock clock;
  Mutex mu;
  std::condition_variable cv;
  bool ready = false;
  bool result = false;
  std::thread t([&] {
    MutexLock lock(&mu);
    result = clock.WaitFor(lock.native(), cv, hours(1), [&] { return ready; });
  });
  clock.WaitForWaiters(1);
  {
    MutexLock l(&mu);
    ready = true;
  }
  cv.notify_all();
  t.join();
  EXPECT_TRUE(result);
}

TEST(FakeClockTest, SleepForWakesOnAdvance) {
  FakeClock clock;
  std::atomic<bool> done{false};
  std::thread t([&] {
    clock.SleepFor(milliseconds(500));
    done = true;
  });
  clock.WaitForWaiters(1);
  EXPECT_FALSE(done);
  clock.Advance(milliseconds(500));
  t.join();
  EXPECT_TRUE(done);
}

TEST(RealClockTest, WaitForTimesOut) {
  Clock* clock = Clock::Real();
  Mutex mu;
  std::condition_variable cv;
  MutexLock lock(&mu);
  TimePoint start = clock->Now();
  EXPECT_FALSE(
      clock->WaitFor(lock.native(), cv, milliseconds(5), [] { return false; }));
  EXPECT_GE(clock->Now() - start, milliseconds(5));
}

}  // namespace
}  // namespace kplane
