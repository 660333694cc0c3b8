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
// Handlers: OnObjectEvents(informer, fn) registers one function for an
// informer's adds, updates and deletes (an ObjectEvent says which), so a
// controller's registration is one call per informer:
//
//   OnObjectEvents(replicasets,
//                  [this](const ObjectEvent& e) { Enqueue(e.Key()); });
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
#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/status.h"
#include "informer/event_recorder.h"
#include "informer/indexer.h"
#include "informer/runner.h"
#include "informer/shared_informer.h"
#include "informer/workqueue.h"

namespace kplane::controllers {

// One notification of a shared informer, as a controller's handler sees it.
struct ObjectEvent {
  enum class Type { kAdded, kUpdated, kDeleted };
  Type type;
  // Added/updated: the new state. Deleted: the final state, or the last
  // one known when the deletion was only seen by a relist.
  const google::protobuf::Message& object;
  // Updated: the state before (the same object on a periodic resync);
  // null otherwise.
  const google::protobuf::Message* old = nullptr;

  bool deleted() const { return type == Type::kDeleted; }
  // The informer key: "namespace/name", or "name" at cluster scope.
  std::string Key() const { return informer::ObjectKey(object); }
  template <typename T>
  const T& As() const {
    return static_cast<const T&>(object);
  }
  // Updates only.
  template <typename T>
  const T& OldAs() const {
    return static_cast<const T&>(*old);
  }
};

// Registers `fn` for every add, update and delete `informer` delivers (on
// the informer's handler thread for this registration; see
// shared_informer.h). The initial-list flag of adds is not passed on: no
// controller here treats the first list differently.
informer::HandlerRegistration* OnObjectEvents(
    informer::SharedIndexInformer* informer,
    std::function<void(const ObjectEvent&)> fn);

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
  // Where this controller's events go (nowhere until set; before Run()):
  // the controller manager gives each controller a recorder under kube's
  // component name, unit tests an informer::FakeEventRecorder.
  void set_event_recorder(std::unique_ptr<informer::EventRecorder> r) {
    events_ = std::move(r);
  }
  informer::RateLimitingQueue& queue() { return queue_; }

 protected:
  // Records an event about `object` (informer/event_recorder.h), if a
  // recorder is set. Never blocks.
  void RecordEvent(const google::protobuf::Message& object,
                   std::string_view type, std::string_view reason,
                   std::string_view message) const {
    if (events_) events_->Event(object, type, reason, message);
  }

  Clock* const clock_;

 private:
  std::unique_ptr<informer::EventRecorder> events_;
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
