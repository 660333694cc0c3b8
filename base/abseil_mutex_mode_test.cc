#include "base/abseil_mutex_mode.h"

#include <absl/synchronization/mutex.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace kplane {
namespace {

// Takes two mutexes in one order, then in the other: a potential deadlock
// (no second thread is needed for Abseil to see the cycle in its graph).
void LockInBothOrders() {
  absl::Mutex a;
  absl::Mutex b;
  a.Lock();
  b.Lock();
  b.Unlock();
  a.Unlock();
  b.Lock();
  a.Lock();
  a.Unlock();
  b.Unlock();
}

// Each test runs in a child process of its own (death tests fork), so the
// process-wide mode one sets does not leak into the other.
// The premise: Debian's libabsl, built without NDEBUG, aborts on the cycle.
TEST(AbseilMutexModeTest, DebiansAbseilAbortsOnTheCycle) {
  EXPECT_DEATH(LockInBothOrders(), "potential deadlock");
}

TEST(AbseilMutexModeTest, StoppedDetectionLetsTheCyclePass) {
  EXPECT_EXIT(
      {
        unsetenv("KPLANE_ABSL_DEADLOCK_DETECTION");
        if (!StopAbseilDeadlockDetection()) std::exit(3);
        LockInBothOrders();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(AbseilMutexModeTest, TheEnvironmentKeepsAbseilsDefault) {
  EXPECT_EXIT(
      {
        setenv("KPLANE_ABSL_DEADLOCK_DETECTION", "1", 1);
        std::exit(StopAbseilDeadlockDetection() ? 3 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kplane
