// Work queues of string keys for controllers (client-go's util/workqueue):
//
//   WorkQueue          Add / Get / Done with de-duplication, and the
//                      guarantee that one key is never handed to two
//                      workers at once.
//   DelayingQueue      + AddAfter(key, d) on the injected Clock.
//   RateLimitingQueue  + AddRateLimited(key) / Forget / NumRequeues, with a
//                      RateLimiter (default: per-key exponential 5ms..1000s
//                      and an overall 10 qps / burst 100 bucket).
//
// The dirty / processing sets, worked example (keys a, b):
//
//   Add(a) Add(b) Add(a)   queue [a b]  dirty {a b}  processing {}
//                          (the second a is absorbed: a is already dirty)
//   Get() -> a             queue [b]    dirty {b}    processing {a}
//   Add(a)                 queue [b]    dirty {a b}  processing {a}
//                          (a changed while being worked on: remembered in
//                           dirty but not queued, so no second worker gets it)
//   Get() -> b             queue []     dirty {a}    processing {a b}
//   Done(a)                queue [a]    dirty {a}    processing {b}
//                          (now a is queued again and will be re-processed)
//   Get() -> a             ...
//
// Every key handed out by Get() must be given back with Done(). A worker
// that fails typically calls AddRateLimited(key) then Done(key); one that
// succeeds calls Forget(key) then Done(key).
//
// ShutDown(): Add is ignored from then on; Get() still hands out what is
// queued and then returns nullopt to every caller. ShutDownWithDrain()
// additionally waits until every key being processed is Done. Delayed keys
// not yet due are dropped.
//
// Metrics (client-go's names, one child per queue through the label
// name=<queue name>; a queue without a name records none):
//   workqueue_depth, workqueue_adds_total, workqueue_queue_duration_seconds
//   (Add -> Get), workqueue_work_duration_seconds (Get -> Done),
//   workqueue_retries_total (AddRateLimited).
//
// Thread-safety: every method may be called from any thread. Errors: none.
#ifndef KPLANE_INFORMER_WORKQUEUE_H_
#define KPLANE_INFORMER_WORKQUEUE_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "informer/rate_limiter.h"

namespace kplane::informer {

struct WorkQueueOptions {
  std::string name;                      // metrics label; "" = no metrics
  Clock* clock = nullptr;                // nullptr: Clock::Real()
  metrics::Registry* metrics = nullptr;  // nullptr: Registry::Default()
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  virtual ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key) EXCLUDES(mu_);
  // Blocks until a key is available; nullopt once shut down and empty.
  std::optional<std::string> Get() EXCLUDES(mu_);
  // Marks `key` as no longer being processed (re-queues it if it was
  // added meanwhile).
  void Done(const std::string& key) EXCLUDES(mu_);
  // Keys waiting to be handed out.
  int Len() const EXCLUDES(mu_);
  virtual void ShutDown() EXCLUDES(mu_);
  virtual void ShutDownWithDrain() EXCLUDES(mu_);
  bool ShuttingDown() const EXCLUDES(mu_);

 protected:
  Clock* clock() const { return clock_; }
  const std::string& name() const { return options_.name; }
  metrics::Registry* registry() const { return registry_; }

 private:
  struct Metrics;

  const WorkQueueOptions options_;
  Clock* const clock_;
  metrics::Registry* const registry_;
  std::unique_ptr<Metrics> metrics_;  // null without a name

  mutable Mutex mu_;
  std::condition_variable cv_;        // queue_ non-empty or shutting down
  std::condition_variable drain_cv_;  // processing_ emptied
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  std::unordered_set<std::string> dirty_ GUARDED_BY(mu_);
  std::unordered_set<std::string> processing_ GUARDED_BY(mu_);
  // Queued since
  std::unordered_map<std::string, TimePoint> added_at_ GUARDED_BY(mu_);
  // Processing since
  std::unordered_map<std::string, TimePoint> started_at_ GUARDED_BY(mu_);
  bool shutting_down_ GUARDED_BY(mu_) = false;
};

class DelayingQueue : public WorkQueue {
 public:
  explicit DelayingQueue(WorkQueueOptions options = {});
  ~DelayingQueue() override;

  // Adds `key` once `delay` has passed on the clock (at once if <= 0). A
  // key already waiting keeps the earlier of its two times.
  void AddAfter(const std::string& key, Duration delay) EXCLUDES(wait_mu_);
  // Keys waiting for their time.
  int NumWaiting() const EXCLUDES(wait_mu_);

  void ShutDown() override;
  void ShutDownWithDrain() override;

 private:
  void WaitLoop() EXCLUDES(wait_mu_);
  void StopWaitLoop() EXCLUDES(wait_mu_);

  // Lock order: wait_mu_ -> WorkQueue::mu_ (WaitLoop adds due keys under
  // it; the base never calls back). A comment only: the base's mu_ is
  // private, so ACQUIRED_BEFORE cannot name it here.
  mutable Mutex wait_mu_;
  std::condition_variable wait_cv_;
  // Key -> due
  std::map<std::string, TimePoint> ready_at_ GUARDED_BY(wait_mu_);
  // (due, key)
  std::set<std::pair<TimePoint, std::string>> due_ GUARDED_BY(wait_mu_);
  bool stop_waiting_ GUARDED_BY(wait_mu_) = false;
  std::thread wait_thread_;
};

class RateLimitingQueue : public DelayingQueue {
 public:
  // `limiter` null: DefaultControllerRateLimiter on the queue's clock.
  explicit RateLimitingQueue(WorkQueueOptions options = {},
                             std::unique_ptr<RateLimiter> limiter = nullptr);
  ~RateLimitingQueue() override;

  // Adds `key` after the wait its limiter prescribes (a failure recorded).
  void AddRateLimited(const std::string& key);
  // The key succeeded: its failures are forgotten.
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

 private:
  std::unique_ptr<RateLimiter> limiter_;
  metrics::Counter* retries_ = nullptr;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_WORKQUEUE_H_
