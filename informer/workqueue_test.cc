#include "informer/workqueue.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <future>
#include <random>
#include <thread>

#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::Recorder;

// ---- Rate limiters

TEST(RateLimiterTest, ExponentialPerItemWithCap) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  EXPECT_EQ(rl.When("a"), milliseconds(5));
  EXPECT_EQ(rl.When("a"), milliseconds(10));
  EXPECT_EQ(rl.When("a"), milliseconds(20));
  EXPECT_EQ(rl.When("b"), milliseconds(5));  // per item
  EXPECT_EQ(rl.NumRequeues("a"), 3);
  for (int i = 0; i < 100; ++i) (void)rl.When("a");  // no overflow
  EXPECT_EQ(rl.When("a"), seconds(1000));
  rl.Forget("a");
  EXPECT_EQ(rl.NumRequeues("a"), 0);
  EXPECT_EQ(rl.When("a"), milliseconds(5));
}

TEST(RateLimiterTest, FastSlow) {
  ItemFastSlowRateLimiter rl(milliseconds(5), seconds(10), 2);
  EXPECT_EQ(rl.When("a"), milliseconds(5));
  EXPECT_EQ(rl.When("a"), milliseconds(5));
  EXPECT_EQ(rl.When("a"), seconds(10));
  rl.Forget("a");
  EXPECT_EQ(rl.When("a"), milliseconds(5));
}

// The worked example of rate_limiter.h.
TEST(RateLimiterTest, BucketBurstThenRate) {
  FakeClock clock;
  BucketRateLimiter rl(10, 2, &clock);
  EXPECT_EQ(rl.When("a"), Duration(0));
  EXPECT_EQ(rl.When("b"), Duration(0));
  EXPECT_EQ(rl.When("c"), milliseconds(100));
  EXPECT_EQ(rl.When("d"), milliseconds(200));
  clock.Advance(seconds(1));
  // 1 s refills 10 tokens but the bucket holds 2 (and owed 2): 0, 0 then wait.
  EXPECT_EQ(rl.When("e"), Duration(0));
  EXPECT_EQ(rl.When("f"), Duration(0));
  EXPECT_EQ(rl.When("g"), milliseconds(100));
}

TEST(RateLimiterTest, MaxOfTakesTheLongestAndForgetsEverywhere) {
  FakeClock clock;
  auto rl = DefaultControllerRateLimiter(&clock);
  EXPECT_EQ(rl->When("a"), milliseconds(5));
  EXPECT_EQ(rl->When("a"), milliseconds(10));
  EXPECT_EQ(rl->NumRequeues("a"), 2);
  rl->Forget("a");
  EXPECT_EQ(rl->NumRequeues("a"), 0);
  // 100 quick failures of distinct keys drain the overall bucket: the
  // 101st waits 100 ms (10 qps) although its own backoff is 5 ms.
  for (int i = 0; i < 98; ++i) (void)rl->When("k" + std::to_string(i));
  EXPECT_EQ(rl->When("z"), milliseconds(100));
}

// ---- WorkQueue

TEST(WorkQueueTest, DeduplicatesWaitingKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2);
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Len(), 0);
}

// The worked example of workqueue.h.
TEST(WorkQueueTest, KeyAddedWhileProcessingWaitsForDone) {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Get(), "a");
  q.Add("a");  // dirty, not queued: a is being processed
  EXPECT_EQ(q.Len(), 1);
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Len(), 0);
  q.Done("a");  // now queued again
  EXPECT_EQ(q.Len(), 1);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  q.Done("b");
  EXPECT_EQ(q.Len(), 0);
}

TEST(WorkQueueTest, ShutDownDrainsThenReleasesEveryGetter) {
  WorkQueue q;
  q.Add("a");
  q.ShutDown();
  q.Add("b");  // ignored
  EXPECT_TRUE(q.ShuttingDown());
  EXPECT_EQ(q.Get(), "a");  // what was queued is still handed out
  EXPECT_EQ(q.Get(), std::nullopt);

  WorkQueue q2;
  auto blocked = std::async(std::launch::async, [&] { return q2.Get(); });
  q2.ShutDown();
  EXPECT_EQ(blocked.get(), std::nullopt);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForKeysInProcessing) {
  WorkQueue q;
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  Recorder order;
  std::thread drainer([&] {
    q.ShutDownWithDrain();
    order.Record("drained");
  });
  // Wait until the drain has begun (it marks the queue first).
  for (int i = 0; !q.ShuttingDown() && i < 10'000'000; ++i) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(q.ShuttingDown());
  order.Record("done");
  q.Done("a");
  drainer.join();
  EXPECT_EQ(order.Items(), (std::vector<std::string>{"done", "drained"}));
}

// The guarantee controllers rely on: a key is never processed by two
// workers at once, and a key added while processed is processed again
// (no update is lost).
TEST(WorkQueueTest, NeverHandsOneKeyToTwoWorkersAndLosesNoAdd) {
  constexpr int kKeys = 5;
  constexpr int kWorkers = 6;
  constexpr int kAdds = 20000;
  WorkQueue q;
  std::array<std::atomic<int>, kKeys> in_flight{};
  std::array<std::atomic<int>, kKeys> added{};      // adds so far per key
  std::array<std::atomic<int>, kKeys> processed{};  // adds covered per key
  std::atomic<int> overlaps{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (std::optional<std::string> key = q.Get()) {
        int k = std::stoi(*key);
        if (in_flight[k].fetch_add(1) != 0) ++overlaps;
        // Every add before this point is covered by this processing.
        int seen = added[k].load();
        std::this_thread::yield();
        int prev = processed[k].load();
        while (prev < seen && !processed[k].compare_exchange_weak(prev, seen)) {
        }
        in_flight[k].fetch_sub(1);
        q.Done(*key);
      }
    });
  }
  std::mt19937 rng(42);
  for (int i = 0; i < kAdds; ++i) {
    int k = static_cast<int>(rng() % kKeys);
    added[k].fetch_add(1);
    q.Add(std::to_string(k));
  }
  q.ShutDown();  // workers drain the queue, including re-queued keys
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(processed[k].load(), added[k].load()) << "key " << k;
  }
}

// ---- DelayingQueue

TEST(DelayingQueueTest, AddAfterWaitsOnTheClock) {
  FakeClock clock;
  DelayingQueue q({.clock = &clock});
  q.AddAfter("a", seconds(1));
  EXPECT_EQ(q.Len(), 0);
  EXPECT_EQ(q.NumWaiting(), 1);
  clock.WaitForWaiters(1);
  clock.Advance(milliseconds(999));
  EXPECT_EQ(q.Len(), 0);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(q.Get(), "a");  // blocks until the wait loop adds it
  EXPECT_EQ(q.NumWaiting(), 0);
}

// A delay too long to add to the clock's time (a deadline a client chose)
// waits forever rather than wrapping into the past.
TEST(DelayingQueueTest, ADelayPastTheClocksEndNeverComesDue) {
  FakeClock clock;
  DelayingQueue q({.clock = &clock});
  q.AddAfter("far", Duration::max());
  q.AddAfter("near", seconds(1));
  EXPECT_EQ(q.Len(), 0);
  clock.WaitForWaiters(1);
  clock.Advance(seconds(1));
  EXPECT_EQ(q.Get(), "near");
  EXPECT_EQ(q.NumWaiting(), 1);
}

TEST(DelayingQueueTest, NonPositiveDelayAddsAtOnce) {
  DelayingQueue q;
  q.AddAfter("a", Duration(0));
  EXPECT_EQ(q.Len(), 1);
}

TEST(DelayingQueueTest, KeepsTheEarlierTimeOfAKey) {
  FakeClock clock;
  DelayingQueue q({.clock = &clock});
  q.AddAfter("a", seconds(10));
  q.AddAfter("a", seconds(2));  // earlier: wins
  q.AddAfter("a", seconds(8));  // later: ignored
  EXPECT_EQ(q.NumWaiting(), 1);
  clock.WaitForWaiters(1);
  clock.Advance(seconds(2));
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  clock.Advance(seconds(10));
  EXPECT_EQ(q.Len(), 0);  // not added a second time
}

TEST(DelayingQueueTest, AnEarlierKeyWakesTheWaitLoop) {
  FakeClock clock;
  DelayingQueue q({.clock = &clock});
  q.AddAfter("late", seconds(100));
  clock.WaitForWaiters(1);
  q.AddAfter("soon", seconds(1));
  clock.Advance(seconds(1));
  EXPECT_EQ(q.Get(), "soon");
  EXPECT_EQ(q.NumWaiting(), 1);
}

// ---- RateLimitingQueue

TEST(RateLimitingQueueTest, ExponentialRequeueAndForget) {
  FakeClock clock;
  RateLimitingQueue q({.clock = &clock},
                      std::make_unique<ItemExponentialFailureRateLimiter>(
                          milliseconds(5), seconds(1000)));
  q.AddRateLimited("a");
  EXPECT_EQ(q.NumRequeues("a"), 1);
  clock.WaitForWaiters(1);
  clock.Advance(milliseconds(5));
  ASSERT_EQ(q.Get(), "a");
  q.AddRateLimited("a");  // second failure: 10 ms
  q.Done("a");
  EXPECT_EQ(q.NumRequeues("a"), 2);
  clock.WaitForWaiters(1);
  clock.Advance(milliseconds(9));
  EXPECT_EQ(q.Len(), 0);
  clock.Advance(milliseconds(1));
  ASSERT_EQ(q.Get(), "a");
  q.Forget("a");
  q.Done("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
}

TEST(RateLimitingQueueTest, MetricsUseClientGoNames) {
  FakeClock clock;
  metrics::Registry registry;
  RateLimitingQueue q(
      {.name = "deployment", .clock = &clock, .metrics = &registry});
  q.Add("a");
  q.Add("b");
  q.Add("a");
  clock.Advance(milliseconds(250));
  ASSERT_EQ(q.Get(), "a");
  clock.Advance(milliseconds(500));
  q.AddRateLimited("a");
  q.Done("a");
  std::string text = registry.Render();
  EXPECT_NE(text.find("workqueue_adds_total{name=\"deployment\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("workqueue_depth{name=\"deployment\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("workqueue_retries_total{name=\"deployment\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "workqueue_queue_duration_seconds_sum{name=\"deployment\"} 0.25"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("workqueue_work_duration_seconds_sum{name=\"deployment\"} 0.5"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace kplane::informer
