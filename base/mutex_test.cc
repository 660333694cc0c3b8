#include "base/mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <thread>
#include <vector>

#include "base/clock.h"

namespace kplane {
namespace {

class Counter {
 public:
  void Add() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++n_;
    cv_.notify_all();
  }
  // Waits until the count reaches `n` on `clock`, or `d` passes.
  bool WaitFor(int n, Clock* clock, Duration d) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return clock->WaitFor(lock.native(), cv_, d,
                          [&]() REQUIRES(mu_) { return n_ >= n; });
  }
  int value() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return n_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int n_ GUARDED_BY(mu_) = 0;
};

TEST(MutexTest, ExcludesConcurrentWriters) {
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.Add();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
}

TEST(MutexTest, ConditionVariableWaitsOnTheScopedLock) {
  Counter c;
  std::thread adder([&] {
    for (int i = 0; i < 3; ++i) c.Add();
  });
  EXPECT_TRUE(c.WaitFor(3, Clock::Real(), minutes(1)));
  adder.join();
}

TEST(MutexTest, FakeClockEndsATimedWait) {
  Counter c;
  FakeClock clock;
  std::atomic<bool> result{true};
  std::thread waiter([&] { result = c.WaitFor(1, &clock, seconds(5)); });
  clock.WaitForWaiters(1);
  clock.Advance(seconds(5));
  waiter.join();
  EXPECT_FALSE(result);
}

TEST(MutexTest, UnlockAndLockInsideTheScope) {
  Mutex mu;
  MutexLock lock(&mu);
  lock.Unlock();
  // Another thread can take it while this scope has released it.
  std::thread other([&] { MutexLock l(&mu); });
  other.join();
  lock.Lock();
  EXPECT_FALSE(mu.TryLock());
}

TEST(MutexTest, TryLockFailsWhileHeld) {
  Mutex mu;
  if (mu.TryLock()) {
    std::thread other([&] { EXPECT_FALSE(mu.TryLock()); });
    other.join();
    mu.Unlock();
  } else {
    ADD_FAILURE() << "TryLock of a free mutex failed";
  }
}

TEST(SharedMutexTest, ReadersShareTheLock) {
  SharedMutex mu;
  std::atomic<int> readers_inside{0};
  std::atomic<bool> saw_two{false};
  std::mutex gate_mu;
  std::condition_variable gate;
  int arrived = 0;
  auto reader = [&] {
    ReaderLock l(&mu);
    readers_inside++;
    std::unique_lock<std::mutex> g(gate_mu);
    ++arrived;
    gate.notify_all();
    // Both readers hold the lock at once, or this wait would never end.
    gate.wait(g, [&] { return arrived == 2; });
    if (readers_inside.load() == 2) saw_two = true;
  };
  std::thread a(reader), b(reader);
  a.join();
  b.join();
  EXPECT_TRUE(saw_two);
}

}  // namespace
}  // namespace kplane
