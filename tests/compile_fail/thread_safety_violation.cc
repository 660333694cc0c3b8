// Deliberately wrong code: scripts/clang-checks.sh compiles this file with
// the clang build's flags (-Werror=thread-safety) and expects it to FAIL.
// If it compiles, the thread-safety analysis is not active and the
// GUARDED_BY / REQUIRES annotations in the code check nothing.
//
// Built with -DKPLANE_THREAD_SAFETY_CONTROL it is correct and must compile:
// that proves the failure comes from the analysis, not from a typo here.
// Not part of the normal build (EXCLUDE_FROM_ALL in CMakeLists.txt).
#include "base/mutex.h"

namespace kplane {
namespace {

class Account {
 public:
  void Deposit(int amount) EXCLUDES(mu_) {
#ifdef KPLANE_THREAD_SAFETY_CONTROL
    MutexLock lock(&mu_);
#endif
    // Without the lock: "writing variable 'balance_' requires holding
    // mutex 'mu_' exclusively".
    balance_ += amount;
  }

 private:
  Mutex mu_;
  int balance_ GUARDED_BY(mu_) = 0;
};

}  // namespace

void UseAccount() {
  Account a;
  a.Deposit(1);
}

}  // namespace kplane
