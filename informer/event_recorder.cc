#include "informer/event_recorder.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <list>
#include <random>
#include <set>
#include <unordered_map>

#include "informer/api_errors.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/time.h"

namespace kplane::informer {

namespace corev1 = objects::corev1;
namespace metav1 = objects::metav1;

namespace {

// A map bounded to `capacity` entries, the least recently used going
// first (kube's correlator caches are golang-lru caches of 4096).
template <typename V>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity) {}

  V* Find(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  V& Put(const std::string& key, V value) {
    if (V* v = Find(key)) {
      *v = std::move(value);
      return *v;
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

 private:
  const size_t capacity_;
  std::list<std::pair<std::string, V>> order_;
  std::unordered_map<std::string,
                     typename std::list<std::pair<std::string, V>>::iterator>
      index_;
};

std::string Join(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) {
    s.append(p);
    s.push_back('\x1f');  // no field can contain it
  }
  return s;
}

// kube's getSpamKey: the source, the involved object and the type (since
// 1.31), so a burst of Normal events cannot silence the Warning after it.
std::string SpamKey(const corev1::Event& ev) {
  const auto& io = ev.involvedobject();
  return Join({ev.source().component(), ev.source().host(), io.kind(),
               io.namespace_(), io.name(), io.uid(), io.apiversion(),
               ev.type()});
}
// EventAggregatorByReasonFunc's aggregate key: everything but the message.
std::string AggregateKey(const corev1::Event& ev) {
  const auto& io = ev.involvedobject();
  return Join({ev.source().component(), ev.source().host(), io.kind(),
               io.namespace_(), io.name(), io.uid(), io.apiversion(), ev.type(),
               ev.reason(), ev.reportingcomponent(), ev.reportinginstance()});
}
// getEventKey: an identical event.
std::string EventKey(const corev1::Event& ev) {
  const auto& io = ev.involvedobject();
  return Join({ev.source().component(), ev.source().host(), io.kind(),
               io.namespace_(), io.name(), io.fieldpath(), io.uid(),
               io.apiversion(), ev.type(), ev.reason(), ev.message()});
}

}  // namespace

struct EventCorrelator::Caches {
  struct Bucket {
    double tokens;
    TimePoint last;
  };
  struct Aggregate {
    std::set<std::string> messages;
    TimePoint last;
  };
  struct Observation {
    int32_t count = 0;
    corev1::Event stored;  // name, firstTimestamp
  };
  explicit Caches(size_t n) : spam(n), aggregate(n), observed(n) {}
  LruMap<Bucket> spam;
  LruMap<Aggregate> aggregate;
  LruMap<Observation> observed;
};

EventCorrelator::EventCorrelator(EventCorrelatorOptions options)
    : options_(options),
      caches_(std::make_unique<Caches>(options.max_cache_entries)) {}
EventCorrelator::~EventCorrelator() = default;

EventCorrelator::Result EventCorrelator::Correlate(corev1::Event ev,
                                                   TimePoint now) {
  // Aggregation: a new message for an object/type/reason seen within the
  // window joins the set; beyond the limit the event becomes the combined
  // one, observed under the aggregate key.
  std::string key = EventKey(ev);
  const std::string aggregate_key = AggregateKey(ev);
  Caches::Aggregate* agg = caches_->aggregate.Find(aggregate_key);
  if (agg == nullptr || now - agg->last > options_.aggregate_window) {
    agg = &caches_->aggregate.Put(aggregate_key, {});
  }
  agg->last = now;
  agg->messages.insert(ev.message());
  if (static_cast<int>(agg->messages.size()) >=
      options_.aggregate_max_similar) {
    agg->messages.erase(ev.message());  // the set stays at its limit
    ev.set_message("(combined from similar events): " + ev.message());
    key = aggregate_key;
  }

  // Deduplication: a known event is patched with count + 1.
  Result r;
  if (Caches::Observation* seen = caches_->observed.Find(key)) {
    ev.mutable_metadata()->set_name(seen->stored.metadata().name());
    ev.mutable_metadata()->set_resourceversion(
        seen->stored.metadata().resourceversion());
    *ev.mutable_firsttimestamp() = seen->stored.firsttimestamp();
    ev.set_count(seen->count + 1);
    r.patch = true;
  }
  Caches::Observation& obs = caches_->observed.Put(key, {});
  obs.count = ev.count();
  obs.stored.mutable_metadata()->set_name(ev.metadata().name());
  *obs.stored.mutable_firsttimestamp() = ev.firsttimestamp();

  // Spam filter: a token per event, per source and object.
  const std::string spam_key = SpamKey(ev);
  Caches::Bucket* bucket = caches_->spam.Find(spam_key);
  if (bucket == nullptr) {
    bucket = &caches_->spam.Put(
        spam_key, {static_cast<double>(options_.spam_burst), now});
  }
  bucket->tokens = std::min<double>(
      options_.spam_burst,
      bucket->tokens + std::chrono::duration<double>(now - bucket->last) /
                           options_.spam_refill_interval);
  bucket->last = now;
  if (bucket->tokens < 1) {
    r.skip = true;
  } else {
    bucket->tokens -= 1;
  }
  r.event = std::move(ev);
  return r;
}

void EventCorrelator::UpdateState(const corev1::Event& written) {
  Caches::Observation& obs = caches_->observed.Put(EventKey(written), {});
  obs.count = written.count();
  obs.stored.mutable_metadata()->set_name(written.metadata().name());
  obs.stored.mutable_metadata()->set_resourceversion(
      written.metadata().resourceversion());
  *obs.stored.mutable_firsttimestamp() = written.firsttimestamp();
}

StatusOr<corev1::Event> RestEventSink::CreateWithDeadline(
    const corev1::Event& ev, CallDeadline deadline) {
  ASSIGN_OR_RETURN(std::unique_ptr<corev1::Event> out,
                   client_->Create<corev1::Event>(ev, {.deadline = deadline}));
  return std::move(*out);
}

StatusOr<corev1::Event> RestEventSink::PatchWithDeadline(
    const corev1::Event& ev, CallDeadline deadline) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("count");
  w.Int(ev.count());
  w.Key("lastTimestamp");
  const std::string last =
      objects::FormatRfc3339(objects::UnixSeconds(ev.lasttimestamp()));
  w.String(last.c_str(), last.size());
  w.Key("message");
  w.String(ev.message().c_str(), ev.message().size());
  w.EndObject();
  ASSIGN_OR_RETURN(std::unique_ptr<corev1::Event> out,
                   client_->Patch<corev1::Event>(
                       ev.metadata().namespace_(), ev.metadata().name(),
                       PatchType::kMergePatch,
                       std::string_view(buf.GetString(), buf.GetSize()),
                       {.deadline = deadline}));
  return std::move(*out);
}

void FakeEventRecorder::Event(const google::protobuf::Message&,
                              std::string_view type, std::string_view reason,
                              std::string_view message) {
  MutexLock l(&mu_);
  events_.push_back(std::string(type) + " " + std::string(reason) + " " +
                    std::string(message));
}
std::vector<std::string> FakeEventRecorder::Events() const {
  MutexLock l(&mu_);
  return events_;
}
void FakeEventRecorder::Clear() {
  MutexLock l(&mu_);
  events_.clear();
}

corev1::ObjectReference ReferenceTo(const google::protobuf::Message& object) {
  corev1::ObjectReference ref;
  if (const objects::KindInfo* kind =
          objects::Scheme::Default().KindFor(object.GetDescriptor())) {
    ref.set_kind(kind->kind);
    ref.set_apiversion(kind->gv.ApiVersion());
  }
  if (const metav1::ObjectMeta* m = objects::GetObjectMeta(object)) {
    ref.set_namespace_(m->namespace_());
    ref.set_name(m->name());
    ref.set_uid(m->uid());
    ref.set_resourceversion(m->resourceversion());
  }
  return ref;
}

namespace {

class BroadcastRecorder : public EventRecorder {
 public:
  BroadcastRecorder(EventBroadcaster* b, std::string component,
                    std::string host)
      : broadcaster_(b),
        component_(std::move(component)),
        host_(std::move(host)) {}

  // client-go's recorder.makeEvent.
  void Event(const google::protobuf::Message& object, std::string_view type,
             std::string_view reason, std::string_view message) override {
    corev1::Event ev;
    *ev.mutable_involvedobject() = ReferenceTo(object);
    const std::string& ns = ev.involvedobject().namespace_();
    ev.mutable_metadata()->set_namespace_(ns.empty() ? "default" : ns);
    ev.mutable_metadata()->set_name(
        broadcaster_->NewEventName(ev.involvedobject().name()));
    ev.set_reason(std::string(reason));
    ev.set_message(std::string(message));
    const metav1::Time now = objects::TimeNow(*broadcaster_->clock());
    *ev.mutable_firsttimestamp() = now;
    *ev.mutable_lasttimestamp() = now;
    ev.set_count(1);
    ev.set_type(std::string(type));
    ev.mutable_source()->set_component(component_);
    if (!host_.empty()) ev.mutable_source()->set_host(host_);
    ev.set_reportingcomponent(component_);
    ev.set_reportinginstance(host_);
    broadcaster_->Enqueue(std::move(ev));
  }

 private:
  EventBroadcaster* const broadcaster_;
  const std::string component_;
  const std::string host_;
};

}  // namespace

EventBroadcaster::EventBroadcaster(EventBroadcasterOptions options)
    : sink_(options.sink),
      clock_(options.clock ? options.clock : Clock::Real()),
      max_queued_(options.max_queued),
      max_tries_(std::max(1, options.max_tries)),
      retry_interval_(options.retry_interval),
      write_timeout_(options.write_timeout),
      shutdown_grace_(options.shutdown_grace),
      correlator_(options.correlator),
      rng_(options.seed != 0 ? options.seed : std::random_device{}()) {
  metrics::Registry* reg =
      options.metrics ? options.metrics : metrics::Registry::Default();
  auto* family = reg->NewCounter(
      "events_recorded_total",
      "Events recorded through the event broadcaster, by outcome.", {"result"});
  created_ = family->With({"created"});
  patched_ = family->With({"patched"});
  dropped_full_ = family->With({"dropped_queue_full"});
  dropped_shutdown_ = family->With({"dropped_shutdown"});
  spam_filtered_ = family->With({"spam_filtered"});
  failed_ = family->With({"failed"});
  writer_ = std::thread([this] { WriterLoop(); });
}

EventBroadcaster::~EventBroadcaster() { Shutdown(); }

std::unique_ptr<EventRecorder> EventBroadcaster::NewRecorder(
    std::string component, std::string host) {
  return std::make_unique<BroadcastRecorder>(this, std::move(component),
                                             std::move(host));
}

std::string EventBroadcaster::NewEventName(std::string_view object_name) {
  int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      clock_->WallNow().time_since_epoch())
                      .count();
  {
    MutexLock l(&mu_);
    nanos = std::max(nanos, last_name_nanos_ + 1);
    last_name_nanos_ = nanos;
  }
  char hex[24];
  std::snprintf(hex, sizeof(hex), "%llx",
                static_cast<unsigned long long>(nanos));
  return std::string(object_name) + "." + hex;
}

bool EventBroadcaster::Enqueue(corev1::Event ev) {
  {
    MutexLock l(&mu_);
    if (stopping_ || queue_.size() >= max_queued_) {
      ++dropped_;
      (stopping_ ? dropped_shutdown_ : dropped_full_)->Inc();
      return false;
    }
    queue_.emplace_back(std::move(ev), clock_->Now());
    ++enqueued_;
  }
  cv_.notify_all();
  return true;
}

void EventBroadcaster::Flush() {
  MutexLock l(&mu_);
  const uint64_t target = enqueued_;
  cv_.wait(l.native(), [&] {
    mu_.AssertHeld();
    return written_ >= target;
  });
}

void EventBroadcaster::Shutdown() {
  {
    MutexLock l(&mu_);
    if (stopping_ && !writer_.joinable()) return;
    if (!stopping_) {
      stopping_ = true;
      // Drain only briefly rather than drop at once: with a server that
      // answers, the last events of a stopping component (often the ones
      // that say why) get written; with one that does not, this bounds the
      // wait (client-go's Shutdown cancels the writes' context).
      drain_deadline_ = clock_->Now() + shutdown_grace_;
    }
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

int64_t EventBroadcaster::dropped() const {
  MutexLock l(&mu_);
  return dropped_;
}

void EventBroadcaster::DropQueued() {
  const int64_t n = static_cast<int64_t>(queue_.size());
  queue_.clear();
  dropped_ += n;
  written_ += n;  // done with, for Flush
  dropped_shutdown_->Inc(static_cast<double>(n));
  cv_.notify_all();
}

void EventBroadcaster::WriterLoop() {
  while (true) {
    corev1::Event ev;
    TimePoint recorded;
    {
      MutexLock l(&mu_);
      cv_.wait(l.native(), [&] {
        mu_.AssertHeld();
        return stopping_ || !queue_.empty();
      });
      if (stopping_ && !queue_.empty() && clock_->Now() >= drain_deadline_) {
        DropQueued();
      }
      if (queue_.empty()) return;  // stopping, everything written or dropped
      ev = std::move(queue_.front().first);
      recorded = queue_.front().second;
      queue_.pop_front();
    }
    Write(std::move(ev), recorded);
    {
      MutexLock l(&mu_);
      ++written_;
    }
    cv_.notify_all();
  }
}

namespace {

// client-go's recordEvent retries what is not a StatusError: the request
// got no answer (refused, reset, timed out; net/http_client.h's codes with
// no HTTP status). An answer of the server, whatever its status, would be
// the same the next time.
bool NoAnswer(const Status& s) {
  return HttpCodeOf(s) == 0 && (s.code() == StatusCode::kUnavailable ||
                                s.code() == StatusCode::kDeadlineExceeded);
}

}  // namespace

void EventBroadcaster::Write(corev1::Event ev, TimePoint recorded) {
  EventCorrelator::Result r = correlator_.Correlate(std::move(ev), recorded);
  if (r.skip) {
    spam_filtered_->Inc();
    return;
  }
  for (int tries = 1;; ++tries) {
    CallDeadline deadline = clock_->Now() + write_timeout_;
    {
      MutexLock l(&mu_);
      if (stopping_) deadline = std::min(deadline, drain_deadline_);
    }
    const Status s = WriteOnce(r, deadline);
    if (s.ok()) return;
    if (!NoAnswer(s) || tries >= max_tries_) {
      failed_->Inc();
      return;
    }
    // Randomise the first wait so that clients do not all come back at
    // once after an outage of the API server (client-go does the same).
    Duration delay = retry_interval_;
    if (tries == 1) {
      delay = std::chrono::duration_cast<Duration>(
          retry_interval_ *
          std::uniform_real_distribution<double>(0.0, 1.0)(rng_));
    }
    MutexLock l(&mu_);
    // Shutdown ends the wait: no more tries then.
    if (stopping_ ||
        clock_->WaitUntil(l.native(), cv_, clock_->Now() + delay,
                          [&]() REQUIRES(mu_) { return stopping_; })) {
      failed_->Inc();
      return;
    }
  }
}

Status EventBroadcaster::WriteOnce(EventCorrelator::Result& r,
                                   CallDeadline deadline) {
  StatusOr<corev1::Event> stored = InternalError("unset");
  if (r.patch) {
    stored = sink_->PatchWithDeadline(r.event, deadline);
    if (stored.ok()) {
      patched_->Inc();
    } else if (stored.status().code() == StatusCode::kNotFound) {
      // Expired (event TTL) since: write it anew, as client-go does.
      r.event.mutable_metadata()->clear_resourceversion();
      stored = sink_->CreateWithDeadline(r.event, deadline);
      if (stored.ok()) created_->Inc();
    }
  } else {
    stored = sink_->CreateWithDeadline(r.event, deadline);
    if (stored.ok()) created_->Inc();
  }
  if (!stored.ok()) return stored.status();
  correlator_.UpdateState(*stored);
  return Status::Ok();
}

}  // namespace kplane::informer
