#include "base/abseil_mutex_mode.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/testing/absl_lock_cycle.h"

namespace kplane {
namespace {

using ::kplane::testing::LockAbslMutexesInBothOrders;

// Each test runs in a child process of its own (death tests fork), so the
// process-wide mode one sets does not leak into the other. The children
// leave with _Exit: no exit handlers, no leak check of a half-run test.

// The premise: Debian's libabsl, built without NDEBUG, aborts on the cycle.
TEST(AbseilMutexModeTest, DebiansAbseilAbortsOnTheCycle) {
  EXPECT_DEATH(LockAbslMutexesInBothOrders(), "potential deadlock");
}

TEST(AbseilMutexModeTest, StoppedDetectionLetsTheCyclePass) {
  EXPECT_EXIT(
      {
        unsetenv("KPLANE_ABSL_DEADLOCK_DETECTION");
        if (!StopAbseilDeadlockDetection()) std::_Exit(3);
        LockAbslMutexesInBothOrders();
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(AbseilMutexModeTest, TheEnvironmentKeepsAbseilsDefault) {
  EXPECT_DEATH(
      {
        setenv("KPLANE_ABSL_DEADLOCK_DETECTION", "1", 1);
        if (StopAbseilDeadlockDetection()) std::_Exit(3);
        LockAbslMutexesInBothOrders();
        std::_Exit(0);
      },
      "potential deadlock");
}

}  // namespace
}  // namespace kplane
