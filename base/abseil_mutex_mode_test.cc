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
// process-wide mode one sets does not leak into the other. The children
// leave with _Exit: no exit handlers, no leak check of a half-run test.
// The premise: Debian's libabsl, built without NDEBUG, aborts on the cycle.
TEST(AbseilMutexModeTest, DebiansAbseilAbortsOnTheCycle) {
  EXPECT_DEATH(LockInBothOrders(), "potential deadlock");
}

TEST(AbseilMutexModeTest, StoppedDetectionLetsTheCyclePass) {
  EXPECT_EXIT(
      {
        unsetenv("KPLANE_ABSL_DEADLOCK_DETECTION");
        if (!StopAbseilDeadlockDetection()) std::_Exit(3);
        LockInBothOrders();
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(AbseilMutexModeTest, TheEnvironmentKeepsAbseilsDefault) {
  EXPECT_DEATH(
      {
        setenv("KPLANE_ABSL_DEADLOCK_DETECTION", "1", 1);
        if (StopAbseilDeadlockDetection()) std::_Exit(3);
        LockInBothOrders();
        std::_Exit(0);
      },
      "potential deadlock");
}

}  // namespace
}  // namespace kplane
