// Event recording for controllers and simulated kubelets: client-go's
// tools/record in C++. A component makes one EventBroadcaster (one writer
// thread) and hands EventRecorders to its parts; Event() never blocks the
// caller: it builds the core/v1 Event and queues it, the writer correlates
// and writes it.
//
//   RestEventSink sink(rest_client);
//   EventBroadcaster broadcaster({.sink = &sink, .clock = clock});
//   std::unique_ptr<EventRecorder> recorder =
//       broadcaster.NewRecorder("replicaset-controller");
//   recorder->Event(rs, kEventNormal, "SuccessfulCreate",
//                   "Created pod: web-x7k2p");
//
// What gets written (kube's EventCorrelator, same constants):
//   - name <object name>.<hex of unix nanos>, in the object's namespace
//     ("default" for cluster-scoped objects), count 1, first/lastTimestamp,
//     source.component/host, reportingComponent/reportingInstance.
//   - The same object/type/reason/message again: a merge PATCH of count,
//     lastTimestamp and message on the first event instead of a new one.
//   - More than aggregate_max_similar (10) different messages with the same
//     object/type/reason within aggregate_window (10 min): one event
//     "(combined from similar events): <message>" that is patched from then.
//   - Spam filter: a token bucket per source + involved object + type
//     (burst 25, one token back every 5 min); events without a token are
//     dropped. The type is in the key (as in client-go since 1.31) so that
//     a burst of Normal events does not silence the Warning after it.
//   - The queue holds max_queued events; more are dropped (counted).
// Retries (client-go's recordToSink): a write that got no answer from the
// API server (kUnavailable or kDeadlineExceeded without an HTTP status:
// refused, reset, timed out) is tried up to max_tries (12) times in all,
// retry_interval (10 s) apart, the first wait a random part of it so that
// clients do not all come back at once. The writer thread waits (on the
// Clock), Event() callers never do; meanwhile the queue fills and drops as
// above. An answer of the server (any HTTP status: AlreadyExists, 422, even
// 503) is not retried, as client-go does not retry a StatusError: the
// server saw the event and refused it (RestClient itself retries what the
// server asks to have retried: 429, Retry-After). A failed PATCH whose event is
// gone is re-sent as a create. Shutdown: no more retries; what is queued is
// still written (one try each) for shutdown_grace (1 s) and then dropped, so a
// stopping component keeps its last events when the server answers but is not
// held up when it does not. Each sink call has a deadline (write_timeout, 5 s,
// and not past the end of the grace), so Shutdown waits at most about
// max(write_timeout, shutdown_grace) for a sink that honours deadlines
// (RestEventSink does: RestClient's CallDeadline).
// Every outcome is counted in events_recorded_total{result=created|patched|
// dropped_queue_full|dropped_shutdown|spam_filtered|failed} (failed: given
// up after its tries, refused by the server, or a retry cut by Shutdown).
//
// Thread-safety: Event() and the broadcaster's methods may be called from
// any thread; the EventSink is called from the writer thread only.
// Ownership: recorders must not outlive their broadcaster. Errors: none
// reach the caller (events are best effort, as in Kubernetes).
#ifndef KPLANE_INFORMER_EVENT_RECORDER_H_
#define KPLANE_INFORMER_EVENT_RECORDER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "informer/rest_client.h"
#include "objects/types.h"

namespace kplane::informer {

inline constexpr std::string_view kEventNormal = "Normal";
inline constexpr std::string_view kEventWarning = "Warning";

// Where events are written (client-go's EventSink).
class EventSink {
 public:
  virtual ~EventSink() = default;
  // Each call ends by `deadline` on the broadcaster's Clock
  // (kDeadlineExceeded then), so that Shutdown is not held up by a server
  // that never answers; a sink that ignores it holds Shutdown up as long as
  // its calls take.
  //
  // POST of a new event; returns the stored one.
  virtual StatusOr<objects::corev1::Event> CreateWithDeadline(
      const objects::corev1::Event& ev, CallDeadline deadline) = 0;
  // Merge PATCH of count, lastTimestamp and message onto the stored event
  // named ev.metadata.name (NotFound when it expired meanwhile).
  virtual StatusOr<objects::corev1::Event> PatchWithDeadline(
      const objects::corev1::Event& ev, CallDeadline deadline) = 0;
};

// Writes through `client`, whose Clock must be the broadcaster's (the
// deadlines are on it).
class RestEventSink : public EventSink {
 public:
  explicit RestEventSink(RestClient* client) : client_(client) {}
  StatusOr<objects::corev1::Event> CreateWithDeadline(
      const objects::corev1::Event& ev, CallDeadline deadline) override;
  StatusOr<objects::corev1::Event> PatchWithDeadline(
      const objects::corev1::Event& ev, CallDeadline deadline) override;

 private:
  RestClient* const client_;
};

// The correlator's knobs; the defaults are kube's.
struct EventCorrelatorOptions {
  int spam_burst = 25;
  Duration spam_refill_interval = minutes(5);
  Duration aggregate_window = minutes(10);
  int aggregate_max_similar = 10;
  size_t max_cache_entries = 4096;  // per cache, least recently used out
};

// kube's EventCorrelator: aggregation, deduplication into counts, spam
// filter. Pure logic over the recording times; used by the broadcaster's writer
// thread (not thread-safe: one caller at a time).
class EventCorrelator {
 public:
  explicit EventCorrelator(EventCorrelatorOptions options);
  ~EventCorrelator();

  struct Result {
    objects::corev1::Event event;  // what to write
    bool patch = false;            // PATCH of an existing event, else POST
    bool skip = false;             // spam-filtered: write nothing
  };
  // `recorded`: when the event was recorded (the windows and the token
  // bucket count from then, not from when the writer gets to it).
  Result Correlate(objects::corev1::Event ev, TimePoint recorded);
  // After a successful write: remember the stored event's name and count.
  void UpdateState(const objects::corev1::Event& written);

 private:
  struct Caches;
  const EventCorrelatorOptions options_;
  std::unique_ptr<Caches> caches_;
};

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  // Records an event about `object` (any API object with metadata;
  // `type` kEventNormal or kEventWarning, `reason` UpperCamelCase).
  virtual void Event(const google::protobuf::Message& object,
                     std::string_view type, std::string_view reason,
                     std::string_view message) = 0;
};

// Records nothing but "<type> <reason> <message>" strings: client-go's
// FakeRecorder, for controller unit tests.
class FakeEventRecorder : public EventRecorder {
 public:
  void Event(const google::protobuf::Message& object, std::string_view type,
             std::string_view reason, std::string_view message) override;
  std::vector<std::string> Events() const;
  void Clear();

 private:
  mutable Mutex mu_;
  std::vector<std::string> events_ GUARDED_BY(mu_);
};

// The object reference an event names: kind and apiVersion from the
// scheme, namespace, name, uid and resourceVersion from the metadata.
objects::corev1::ObjectReference ReferenceTo(
    const google::protobuf::Message& object);

struct EventBroadcasterOptions {
  EventSink* sink = nullptr;             // required
  Clock* clock = nullptr;                // nullptr: Clock::Real()
  metrics::Registry* metrics = nullptr;  // nullptr: Registry::Default()
  size_t max_queued = 1000;              // client-go's maxQueuedEvents
  EventCorrelatorOptions correlator;
  // Retries of writes without an answer (see the top of this file):
  // client-go's maxTriesPerEvent and defaultSleepDuration.
  int max_tries = 12;
  Duration retry_interval = seconds(10);
  // The deadline of each sink call: the longest Shutdown waits for a call
  // in flight.
  Duration write_timeout = seconds(5);
  // How long Shutdown goes on writing what is queued before dropping it.
  Duration shutdown_grace = seconds(1);
  uint64_t seed = 0;  // the first retry's jitter; 0: random
};

class EventBroadcaster {
 public:
  explicit EventBroadcaster(EventBroadcasterOptions options);
  // Shutdown().
  ~EventBroadcaster();
  EventBroadcaster(const EventBroadcaster&) = delete;
  EventBroadcaster& operator=(const EventBroadcaster&) = delete;

  // A recorder whose events carry source.component = reportingComponent =
  // `component` and source.host = reportingInstance = `host`.
  std::unique_ptr<EventRecorder> NewRecorder(std::string component,
                                             std::string host = "");
  // Queues an event built by a recorder (or by hand); false when dropped
  // because the queue is full or the broadcaster is shut down.
  bool Enqueue(objects::corev1::Event ev);
  // The name a new event about `object_name` gets: <name>.<hex nanos>,
  // distinct per broadcaster even when the clock stands still.
  std::string NewEventName(std::string_view object_name);
  // Blocks until every event queued before the call was written, given up
  // or dropped (tests; with a failing sink that includes the retry waits).
  void Flush();
  // Stops retrying, writes what is queued for at most shutdown_grace (one
  // try each; the call in flight ends by its deadline), drops the rest and
  // stops the writer (idempotent); later events are dropped.
  void Shutdown();
  // Events never tried: the queue was full or the broadcaster shut down.
  int64_t dropped() const;

  Clock* clock() const { return clock_; }

 private:
  void WriterLoop() EXCLUDES(mu_);
  // Correlates and writes one event, with its retries.
  void Write(objects::corev1::Event ev, TimePoint recorded) EXCLUDES(mu_);
  // One try: PATCH or POST (POST again when the PATCH finds no event).
  Status WriteOnce(EventCorrelator::Result& r, CallDeadline deadline);
  // Shutdown's grace is over: what is queued is not written.
  void DropQueued() REQUIRES(mu_);

  EventSink* const sink_;
  Clock* const clock_;
  const size_t max_queued_;
  const int max_tries_;
  const Duration retry_interval_;
  const Duration write_timeout_;
  const Duration shutdown_grace_;
  EventCorrelator correlator_;  // writer thread only
  std::mt19937_64 rng_;         // writer thread only
  metrics::Counter* created_;
  metrics::Counter* patched_;
  metrics::Counter* dropped_full_;
  metrics::Counter* dropped_shutdown_;
  metrics::Counter* spam_filtered_;
  metrics::Counter* failed_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<objects::corev1::Event, TimePoint>> queue_
      GUARDED_BY(mu_);
  uint64_t enqueued_ GUARDED_BY(mu_) = 0;
  uint64_t written_ GUARDED_BY(mu_) = 0;  // taken off the queue and done
  int64_t dropped_ GUARDED_BY(mu_) = 0;
  int64_t last_name_nanos_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  // Set by Shutdown: queued events are written until then.
  TimePoint drain_deadline_ GUARDED_BY(mu_) = TimePoint::max();
  std::thread writer_;
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_EVENT_RECORDER_H_
