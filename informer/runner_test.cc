#include "informer/runner.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <map>

#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::Recorder;

TEST(RunnerTest, SuccessForgetsAndFailureRequeuesWithBackoff) {
  FakeClock clock;
  RateLimitingQueue queue({.clock = &clock},
                          std::make_unique<ItemExponentialFailureRateLimiter>(
                              milliseconds(5), seconds(1000)));
  Recorder syncs;
  std::atomic<int> failures_left{2};
  Runner runner(&queue, [&](const std::string& key) {
    syncs.Record(key);
    if (key == "flaky" && failures_left-- > 0)
      return UnavailableError("try again");
    return Status::Ok();
  });
  runner.Start();
  queue.Add("ok");
  queue.Add("flaky");
  ASSERT_TRUE(syncs.WaitForCount(2));
  clock.WaitForWaiters(1);  // flaky waits 5 ms
  EXPECT_EQ(queue.NumRequeues("flaky"), 1);
  EXPECT_EQ(queue.NumRequeues("ok"), 0);
  clock.Advance(milliseconds(5));
  ASSERT_TRUE(syncs.WaitForCount(3));
  clock.WaitForWaiters(1);  // then 10 ms
  EXPECT_EQ(queue.NumRequeues("flaky"), 2);
  clock.Advance(milliseconds(10));
  ASSERT_TRUE(syncs.WaitForCount(4));
  runner.Stop();
  EXPECT_EQ(queue.NumRequeues("flaky"), 0);  // forgotten after success
  EXPECT_EQ(runner.stats().synced, 2);
  EXPECT_EQ(runner.stats().failed, 2);
  EXPECT_EQ(syncs.Items(),
            (std::vector<std::string>{"ok", "flaky", "flaky", "flaky"}));
}

TEST(RunnerTest, GivesUpAfterMaxRetries) {
  FakeClock clock;
  RateLimitingQueue queue({.clock = &clock},
                          std::make_unique<ItemFastSlowRateLimiter>(
                              milliseconds(1), seconds(1), 100));
  Recorder syncs;
  Runner runner(&queue,
                [&](const std::string& key) {
                  syncs.Record(key);
                  return InternalError("always");
                },
                {.name = "doomed", .max_retries = 3});
  runner.Start();
  queue.Add("k");
  for (size_t n = 1; n <= 3; ++n) {
    ASSERT_TRUE(syncs.WaitForCount(n));
    clock.WaitForWaiters(1);
    clock.Advance(milliseconds(1));
  }
  ASSERT_TRUE(syncs.WaitForCount(4));
  runner.Stop();
  EXPECT_EQ(runner.stats().dropped, 1);
  EXPECT_EQ(queue.NumRequeues("k"), 0);
  EXPECT_EQ(syncs.Items().size(), 4u);  // 1 + 3 retries, then dropped
}

// Many workers, few keys, keys re-added while being synced: Sync never
// runs twice at once for one key, and the last add of each key is synced.
TEST(RunnerTest, NeverSyncsOneKeyConcurrently) {
  constexpr int kKeys = 4;
  RateLimitingQueue queue;
  std::array<std::atomic<int>, kKeys> in_flight{};
  std::array<std::atomic<int>, kKeys> added{};
  std::array<std::atomic<int>, kKeys> covered{};
  std::atomic<int> overlaps{0};
  Runner runner(
      &queue,
      [&](const std::string& key) {
        int k = std::stoi(key);
        if (in_flight[k].fetch_add(1) != 0) ++overlaps;
        int seen = added[k].load();
        std::this_thread::yield();
        int prev = covered[k].load();
        while (prev < seen && !covered[k].compare_exchange_weak(prev, seen)) {
        }
        in_flight[k].fetch_sub(1);
        return Status::Ok();
      },
      {.workers = 8});
  runner.Start();
  for (int i = 0; i < 20000; ++i) {
    int k = i % kKeys;
    added[k].fetch_add(1);
    queue.Add(std::to_string(k));
  }
  runner.Stop();  // drains what is queued
  EXPECT_EQ(overlaps.load(), 0);
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(covered[k].load(), added[k].load());
}

}  // namespace
}  // namespace kplane::informer
