// Controller: the small framework every controller here is built on. A
// controller is a Sync(key) function over its informer caches; handlers it
// registers on shared informers Enqueue keys; Run(workers) starts an
// informer::Runner of N workers over a rate-limited work queue (a key is
// never synced by two workers at once; errors are retried with per-key
// exponential backoff).
//
//   class FooController : public Controller {
//     Status Sync(const std::string& key) override { ... }
//   };
//   FooController foo(...);        // registers its handlers
//   factory.Start(); factory.WaitForCacheSync();
//   foo.Run(2);
//   ...
//   factory.Shutdown();            // no more handler calls
//   foo.Stop();
//
// Metrics (per controller, label `controller`):
//   controller_sync_duration_seconds   histogram of Sync latency
//   controller_sync_total{result}      ok | error
// plus the queue's workqueue_* metrics (informer/workqueue.h).
//
// A running controller must be Stop()ped before it is destroyed: the base
// destructor's Stop() runs after the subclass, whose Sync the workers call,
// is gone.
//
// Ownership: owns its queue and runner. Thread-safety: Enqueue from any
// thread; Run/Stop from the owner; Sync runs on worker threads (and in
// unit tests directly on the test thread).
#ifndef KPLANE_CONTROLLERS_CONTROLLER_H_
#define KPLANE_CONTROLLERS_CONTROLLER_H_

#include <atomic>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/status.h"
#include "informer/runner.h"
#include "informer/workqueue.h"

namespace kplane::controllers {

class Controller {
 public:
  Controller(std::string name, Clock* clock, metrics::Registry* metrics);
  virtual ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Reconciles the object named by `key` with the world; an error retries
  // the key with backoff.
  virtual Status Sync(const std::string& key) = 0;

  void Enqueue(const std::string& key) { queue_.Add(key); }
  void EnqueueAfter(const std::string& key, Duration delay) {
    queue_.AddAfter(key, delay);
  }
  // Starts `workers` threads running Sync over the queue.
  virtual void Run(int workers);
  // Shuts the queue down and joins the workers (idempotent). Syncs in
  // flight finish; keys still queued are dropped.
  virtual void Stop();

  const std::string& name() const { return name_; }
  int QueueDepth() const { return queue_.Len(); }
  informer::RateLimitingQueue& queue() { return queue_; }

 protected:
  Clock* const clock_;

 private:
  Status TimedSync(const std::string& key);

  const std::string name_;
  informer::RateLimitingQueue queue_;
  std::unique_ptr<informer::Runner> runner_;
  std::atomic<bool> stopping_{false};
  metrics::Histogram* sync_duration_;
  metrics::Counter* sync_ok_;
  metrics::Counter* sync_error_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_CONTROLLER_H_
