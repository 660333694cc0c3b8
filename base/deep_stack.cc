#include "base/deep_stack.h"

#include <pthread.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <string>

#include "base/mutex.h"

namespace kplane {

namespace {

// Admission to the deep threads: at most kMaxDeepRuns at once.
class DeepRunSlots {
 public:
  void Acquire() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    cv_.wait(lock.native(),
             [&]() REQUIRES(mu_) { return running_ < kMaxDeepRuns; });
    ++running_;
  }
  void Release() EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      --running_;
    }
    cv_.notify_one();
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int running_ GUARDED_BY(mu_) = 0;
};

DeepRunSlots& Slots() {
  static DeepRunSlots* slots = new DeepRunSlots();
  return *slots;
}

void* RunFunction(void* arg) {
  (*static_cast<const std::function<void()>*>(arg))();
  return nullptr;
}

}  // namespace

Status RunWithDeepStack(const std::function<void()>& fn) {
  Slots().Acquire();
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, kDeepStackBytes);
  pthread_t thread;
  if (rc == 0) {
    rc = pthread_create(&thread, &attr, RunFunction,
                        const_cast<std::function<void()>*>(&fn));
  }
  pthread_attr_destroy(&attr);
  if (rc == 0) pthread_join(thread, nullptr);
  Slots().Release();
  if (rc != 0) {
    return ResourceExhaustedError(
        std::string("cannot start a thread for deeply nested input: ") +
        std::strerror(rc));
  }
  return Status::Ok();
}

Status RunForDepth(int depth, const std::function<void()>& fn) {
  if (depth <= kInlineDepth) {
    fn();
    return Status::Ok();
  }
  return RunWithDeepStack(fn);
}

}  // namespace kplane
