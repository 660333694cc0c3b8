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
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "base/metrics.h"
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

  void Add(const std::string& key);
  // Blocks until a key is available; nullopt once shut down and empty.
  std::optional<std::string> Get();
  // Marks `key` as no longer being processed (re-queues it if it was
  // added meanwhile).
  void Done(const std::string& key);
  // Keys waiting to be handed out.
  int Len() const;
  virtual void ShutDown();
  virtual void ShutDownWithDrain();
  bool ShuttingDown() const;

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

  mutable std::mutex mu_;
  std::condition_variable cv_;        // queue_ non-empty or shutting down
  std::condition_variable drain_cv_;  // processing_ emptied
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  std::unordered_map<std::string, TimePoint> added_at_;    // queued since
  std::unordered_map<std::string, TimePoint> started_at_;  // processing since
  bool shutting_down_ = false;
};

class DelayingQueue : public WorkQueue {
 public:
  explicit DelayingQueue(WorkQueueOptions options = {});
  ~DelayingQueue() override;

  // Adds `key` once `delay` has passed on the clock (at once if <= 0). A
  // key already waiting keeps the earlier of its two times.
  void AddAfter(const std::string& key, Duration delay);
  // Keys waiting for their time.
  int NumWaiting() const;

  void ShutDown() override;
  void ShutDownWithDrain() override;

 private:
  void WaitLoop();
  void StopWaitLoop();

  mutable std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::map<std::string, TimePoint> ready_at_;        // key -> due
  std::set<std::pair<TimePoint, std::string>> due_;  // (due, key)
  bool stop_waiting_ = false;
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
