// IndexWaiters on a fake clock: a callback runs once its index is reached
// or its wait is over, not before, each exactly once; what is refused is
// never called; Release calls what waits.
#include "storage/server/index_waiters.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>

namespace kplane::storage {
namespace {

// A callback that records that it ran, and fails the test if it runs twice.
struct Called {
  std::promise<void> promise;
  std::future<void> future = promise.get_future();
  std::function<void()> Callback() {
    return [this] { promise.set_value(); };  // throws if called twice
  }
  bool Done() {
    return future.wait_for(std::chrono::seconds(0)) ==
           std::future_status::ready;
  }
};

TEST(IndexWaitersTest, RunsWhenTheIndexIsReachedNotBefore) {
  FakeClock clock;
  IndexWaiters w({.clock = &clock, .max_wait = seconds(2)});
  w.Reached(5);
  Called seven;
  ASSERT_TRUE(w.Await(7, seven.Callback()));
  clock.WaitForWaiters(1);  // asleep until the deadline
  w.Reached(6);             // not enough: no wake-up, nothing runs
  EXPECT_FALSE(seven.Done());
  EXPECT_EQ(clock.NumWaiters(), 1);
  w.Reached(9);
  seven.future.get();  // on the waiters' thread, without the clock moving
  EXPECT_EQ(w.reached(), 9u);
  w.Reached(8);  // an index going back is ignored
  EXPECT_EQ(w.reached(), 9u);
}

TEST(IndexWaitersTest, RunsWhenTheWaitIsOver) {
  FakeClock clock;
  IndexWaiters w({.clock = &clock, .max_wait = seconds(2)});
  Called first, second;
  ASSERT_TRUE(w.Await(100, first.Callback()));
  clock.WaitForWaiters(1);
  clock.Advance(seconds(1));
  ASSERT_TRUE(w.Await(100, second.Callback()));
  clock.WaitForWaiters(1);  // woke, nothing due, asleep again
  EXPECT_FALSE(first.Done());
  clock.Advance(seconds(1));
  first.future.get();
  clock.WaitForWaiters(1);  // the second's deadline is a second away
  EXPECT_FALSE(second.Done());
  clock.Advance(seconds(1));
  second.future.get();
  EXPECT_EQ(w.reached(), 0u);
}

TEST(IndexWaitersTest, RefusesWhatNeedNotOrMustNotWait) {
  FakeClock clock;
  IndexWaiters w({.clock = &clock, .max_wait = seconds(2), .max_waiters = 2});
  w.Reached(10);
  auto never = [] { ADD_FAILURE() << "a refused callback ran"; };
  EXPECT_FALSE(w.Await(10, never));  // reached already
  EXPECT_FALSE(w.Await(3, never));
  Called a, b;
  ASSERT_TRUE(w.Await(11, a.Callback()));
  ASSERT_TRUE(w.Await(12, b.Callback()));
  EXPECT_FALSE(w.Await(11, never));  // max_waiters wait
  w.Reached(11);
  a.future.get();
  // The first's place is free again.
  Called c;
  ASSERT_TRUE(w.Await(13, c.Callback()));
  // Release calls what waits, on the caller's thread, and refuses more.
  w.Release();
  EXPECT_TRUE(b.Done());
  EXPECT_TRUE(c.Done());
  EXPECT_FALSE(w.Await(20, never));
}

TEST(IndexWaitersTest, DestructionDropsWhatWaits) {
  FakeClock clock;
  auto ran = std::make_shared<bool>(false);
  {
    IndexWaiters w({.clock = &clock, .max_wait = seconds(2)});
    ASSERT_TRUE(w.Await(1, [ran] { *ran = true; }));
    clock.WaitForWaiters(1);
  }
  EXPECT_FALSE(*ran);
}

}  // namespace
}  // namespace kplane::storage
