#include "base/abseil_mutex_mode.h"

#include <absl/synchronization/mutex.h>

#include <cstdlib>

namespace kplane {

bool StopAbseilDeadlockDetection() {
  if (std::getenv("KPLANE_ABSL_DEADLOCK_DETECTION") != nullptr) return false;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}

}  // namespace kplane
