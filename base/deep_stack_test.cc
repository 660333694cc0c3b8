#include "base/deep_stack.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace kplane {
namespace {

// Recursion that uses about 1 KB of stack per level, as the patch
// algorithms do; `noinline` and the volatile buffer keep the compiler from
// turning it into a loop.
__attribute__((noinline)) int Recurse(int depth) {
  volatile char frame[1024];
  frame[depth % 1024] = 1;
  if (depth == 0) return 0;
  return Recurse(depth - 1) + frame[depth % 1024];
}

TEST(DeepStack, ShallowWorkRunsOnTheCallersThread) {
  std::thread::id ran_on;
  ASSERT_TRUE(RunForDepth(kInlineDepth, [&] {
                ran_on = std::this_thread::get_id();
              }).ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(DeepStack, DeepWorkGetsAStackThatHoldsIt) {
  std::thread::id ran_on;
  int result = -1;
  // 100,000 levels of 1 KB: 100 MB, far past an 8 MiB thread stack (the
  // test's own main thread would crash).
  ASSERT_TRUE(RunForDepth(kInlineDepth + 1, [&] {
                ran_on = std::this_thread::get_id();
                result = Recurse(100000);
              }).ok());
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_EQ(result, 100000);
}

TEST(DeepStack, ConcurrentDeepRunsAreBounded) {
  std::atomic<int> running{0}, peak{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 3 * kMaxDeepRuns; ++i) {
    callers.emplace_back([&] {
      ASSERT_TRUE(RunWithDeepStack([&] {
                    int now = ++running;
                    int p = peak.load();
                    while (now > p && !peak.compare_exchange_weak(p, now)) {
                    }
                    Recurse(1000);
                    --running;
                  }).ok());
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_GE(peak.load(), 1);
  EXPECT_LE(peak.load(), kMaxDeepRuns);
}

}  // namespace
}  // namespace kplane
