// Helpers for informer/ tests (not part of the library): object builders,
// a Recorder to await what other threads did, and TestClock.
//
// Thread-safety: Recorder and TestClock may be used from any thread.
#ifndef KPLANE_INFORMER_TEST_UTIL_H_
#define KPLANE_INFORMER_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "informer/watch.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/types.h"

namespace kplane::informer::testing {

// A failure deadline for awaiting events in tests; never slept on.
inline constexpr std::chrono::seconds kTestDeadline{20};

inline objects::corev1::Pod MakePod(
    const std::string& ns, const std::string& name,
    const std::map<std::string, std::string>& labels = {},
    const std::string& node = "") {
  objects::corev1::Pod pod;
  pod.mutable_metadata()->set_namespace_(ns);
  pod.mutable_metadata()->set_name(name);
  for (const auto& [k, v] : labels) {
    (*pod.mutable_metadata()->mutable_labels())[k] = v;
  }
  if (!node.empty()) pod.mutable_spec()->set_nodename(node);
  // The API server validates pods: one container is the least it accepts.
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("busybox");
  return pod;
}

inline ObjectPtr PodPtr(const std::string& ns, const std::string& name,
                        const std::string& rv = "1",
                        const std::map<std::string, std::string>& labels = {},
                        const std::string& node = "") {
  auto pod =
      std::make_shared<objects::corev1::Pod>(MakePod(ns, name, labels, node));
  pod->mutable_metadata()->set_resourceversion(rv);
  return pod;
}

inline const objects::KindInfo* PodKind() {
  return objects::Scheme::Default().FindKind("v1", "Pod");
}
inline const objects::ResourceInfo* PodsResource() {
  return objects::Scheme::Default().FindResource("", "v1", "pods");
}

// Collects strings from any thread; tests await a count or a predicate.
class Recorder {
 public:
  void Record(std::string s) {
    MutexLock l(&mu_);
    items_.push_back(std::move(s));
    cv_.notify_all();
  }
  std::vector<std::string> Items() const {
    MutexLock l(&mu_);
    return items_;
  }
  // Waits until at least `n` items were recorded; false after
  // kTestDeadline (a hang turned into a failure).
  bool WaitForCount(size_t n) const {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), kTestDeadline,
                        [&]() REQUIRES(mu_) { return items_.size() >= n; });
  }
  bool WaitFor(
      const std::function<bool(const std::vector<std::string>&)>& pred) const {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), kTestDeadline,
                        [&]() REQUIRES(mu_) { return pred(items_); });
  }

 private:
  mutable Mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> items_ GUARDED_BY(mu_);
};

// A fake clock that knows every timed wait (FakeClock cannot tell a fresh
// wait from one that an Advance() has just ended), so tests can
//   - await the k-th wait ever begun and learn how long it asked for
//     (WaitForCall): "the client is now sleeping 3 s before its retry";
//   - await quiescence (WaitQuiescent): exactly n threads blocked, all with
//     deadlines still in the future, i.e. nobody is about to act.
class TestClock : public Clock {
 public:
  TimePoint Now() const override {
    return TimePoint(std::chrono::hours(1)) +
           std::chrono::nanoseconds(offset_ns_.load());
  }
  WallTime WallNow() const override {
    return FakeClock::DefaultWall() +
           std::chrono::duration_cast<WallTime::duration>(
               std::chrono::nanoseconds(offset_ns_.load()));
  }

  void Advance(Duration d) {
    MutexLock l(&mu_);
    offset_ns_ += d.count();
    for (Waiter* w : waiters_) {
      std::lock_guard<std::mutex> wl(*w->mu);
      w->cv->notify_all();
    }
    changed_.notify_all();
  }

  // Blocks until the k-th (1-based) WaitUntil call has begun and is blocked
  // (or already over); returns the duration it waits for.
  Duration WaitForCall(size_t k) {
    MutexLock l(&mu_);
    changed_.wait(l.native(), [&]() REQUIRES(mu_) {
      return calls_.size() >= k &&
             (calls_[k - 1].blocked || calls_[k - 1].done);
    });
    return calls_[k - 1].deadline - calls_[k - 1].start;
  }
  // As WaitForCall, but gives up after `limit` of real time (nullopt), so
  // a test can fail where the wait it expects never begins.
  std::optional<Duration> WaitForCall(size_t k, Duration limit) {
    MutexLock l(&mu_);
    if (!changed_.wait_for(l.native(), limit, [&]() REQUIRES(mu_) {
          return calls_.size() >= k &&
                 (calls_[k - 1].blocked || calls_[k - 1].done);
        })) {
      return std::nullopt;
    }
    return calls_[k - 1].deadline - calls_[k - 1].start;
  }
  size_t NumCalls() {
    MutexLock l(&mu_);
    return calls_.size();
  }

  // Blocks until exactly live() threads wait, all with future deadlines.
  void WaitQuiescent(const std::function<int()>& live) {
    MutexLock l(&mu_);
    changed_.wait(l.native(), [&]() REQUIRES(mu_) {
      if (static_cast<int>(waiters_.size()) != live()) return false;
      for (Waiter* w : waiters_) {
        if (w->deadline <= Now()) return false;
      }
      return true;
    });
  }
  // Re-evaluates the conditions above (e.g. a thread exited).
  void Poke() {
    MutexLock l(&mu_);
    changed_.notify_all();
  }

 protected:
  bool WaitUntilImpl(std::unique_lock<std::mutex>& lock,
                     std::condition_variable& cv, TimePoint deadline,
                     const std::function<bool()>& pred) override {
    Waiter w{lock.mutex(), &cv, deadline};
    size_t call;
    {
      MutexLock l(&mu_);
      call = calls_.size();
      calls_.push_back({Now(), deadline});
      changed_.notify_all();
    }
    auto set_registered = [&](bool on) {
      lock.unlock();
      {
        MutexLock l(&mu_);
        if (on) {
          waiters_.insert(&w);
          calls_[call].blocked = true;
        } else {
          waiters_.erase(&w);
        }
        changed_.notify_all();
      }
      lock.lock();
    };
    auto finish = [&](bool result) {
      lock.unlock();
      {
        MutexLock l(&mu_);
        calls_[call].done = true;
        changed_.notify_all();
      }
      lock.lock();
      return result;
    };
    while (true) {
      if (pred()) return finish(true);
      if (Now() >= deadline) return finish(pred());
      set_registered(true);
      if (!pred() && Now() < deadline) cv.wait(lock);
      set_registered(false);
    }
  }

 private:
  struct Waiter {
    std::mutex* mu;
    std::condition_variable* cv;
    TimePoint deadline;
  };
  struct Call {
    TimePoint start;
    TimePoint deadline;
    bool blocked = false;
    bool done = false;
  };
  std::atomic<int64_t> offset_ns_{0};
  Mutex mu_;
  std::condition_variable changed_;
  std::set<Waiter*> waiters_ GUARDED_BY(mu_);
  std::vector<Call> calls_ GUARDED_BY(mu_);
};

}  // namespace kplane::informer::testing

#endif  // KPLANE_INFORMER_TEST_UTIL_H_
