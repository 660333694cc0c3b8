// A lock-order cycle for tests of Abseil's deadlock detection
// (base/abseil_mutex_mode.h): with the detection on, as Debian's libabsl
// leaves it, the second order aborts the process ("potential deadlock").
#ifndef KPLANE_BASE_TESTING_ABSL_LOCK_CYCLE_H_
#define KPLANE_BASE_TESTING_ABSL_LOCK_CYCLE_H_

#include <absl/synchronization/mutex.h>

namespace kplane::testing {

// Takes two absl::Mutex in one order, then in the other, on this thread
// (no second thread is needed for Abseil to see the cycle in its graph).
inline void LockAbslMutexesInBothOrders() {
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

}  // namespace kplane::testing

#endif  // KPLANE_BASE_TESTING_ABSL_LOCK_CYCLE_H_
