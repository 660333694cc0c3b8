#include "apiserver/cacher/cacher.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <shared_mutex>
#include <thread>
#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif

#include "apiserver/cacher/dispatcher.h"
#include "apiserver/cacher/event_window.h"
#include "base/logging.h"
#include "base/strings.h"
#include "objects/codec.h"
#include "objects/meta.h"
#include "objects/unstructured.h"

namespace kplane::apiserver {
namespace {

using internal::CacheEvent;
using internal::CacheEventPtr;
using internal::MakeWatchEvent;
using internal::StoreEntry;
using internal::StoreEntryPtr;

// The initial list (and a watch-list's initial state read from the store,
// Cacher::Watch) reads the store in pages of this many objects, all at the
// revision of the first.
constexpr int64_t kListPage = 1000;
// While reads wait for the cache to catch up, the storage watch is asked for
// progress this often (kube-apiserver: 100 ms).
constexpr Duration kProgressRequestInterval = milliseconds(100);

// A quiet resource's window letting go of a burst on its tick (thousands
// of events of full objects) leaves that memory free inside glibc's
// arenas, where it stays part of the process's RSS: 2,000 pods' events
// freed ~210 MB that RSS never gave back (docs/performance.md). Past this
// many events dropped at once, hand the free pages back to the system.
constexpr size_t kReleaseMemoryAfterDropping = 1000;

void ReleaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);  // madvises every arena's free pages away
#endif
}

// Pause before relisting after a failed list or watch.
constexpr Duration kRelistBackoff = seconds(1);

// The cache's reader-writer lock. glibc's rwlock (under std::shared_mutex)
// prefers readers, so a steady stream of LISTs could starve the storage
// watch's updates; here a writer that arrives closes the turnstile, and
// readers that come after it wait until it is done (Go's RWMutex, which
// kube's watch cache relies on, behaves the same). Annotated like
// base/mutex.h's SharedMutex; the standard members are its implementation.
class CAPABILITY("shared_mutex") WriterFirstMutex {
 public:
  void Lock() ACQUIRE() {
    std::lock_guard<std::mutex> gate(turnstile_);
    rw_.lock();
  }
  void Unlock() RELEASE() { rw_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() {
    { std::lock_guard<std::mutex> gate(turnstile_); }
    rw_.lock_shared();
  }
  void ReaderUnlock() RELEASE_SHARED() { rw_.unlock_shared(); }

 private:
  std::mutex turnstile_;
  std::shared_mutex rw_;
};

// Holds a WriterFirstMutex exclusively for its scope.
class SCOPED_CAPABILITY CacheWriterLock {
 public:
  explicit CacheWriterLock(WriterFirstMutex* mu) ACQUIRE(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~CacheWriterLock() RELEASE() { mu_->Unlock(); }
  CacheWriterLock(const CacheWriterLock&) = delete;
  CacheWriterLock& operator=(const CacheWriterLock&) = delete;

 private:
  WriterFirstMutex* const mu_;
};

// Holds a WriterFirstMutex shared for its scope.
class SCOPED_CAPABILITY CacheReaderLock {
 public:
  explicit CacheReaderLock(WriterFirstMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ~CacheReaderLock() RELEASE() { mu_->ReaderUnlock(); }
  CacheReaderLock(const CacheReaderLock&) = delete;
  CacheReaderLock& operator=(const CacheReaderLock&) = delete;

 private:
  WriterFirstMutex* const mu_;
};

Status TooLargeResourceVersion(int64_t wanted, int64_t current) {
  return Status(StatusCode::kDeadlineExceeded,
                "Too large resource version: " + std::to_string(wanted) +
                    ", current: " + std::to_string(current),
                current);
}

}  // namespace

std::string_view WatchEventTypeName(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

std::shared_ptr<const std::string> WatchEvent::Encoded(
    const std::string& format,
    const std::function<std::string(const WatchEvent&)>& encode) const {
  MutexLock l(&mu_);
  auto it = cache_.find(format);
  if (it != cache_.end()) return it->second;
  auto bytes = std::make_shared<const std::string>(encode(*this));
  cache_.emplace(format, bytes);
  return bytes;
}

struct Cacher::Impl {
  Impl(Cacher* self, ObjectStore* store, const CacherOptions& options)
      : self(self),
        store(store),
        options(options),
        clock(options.clock),
        window(options.window_events, options.window_min_events,
               options.window_max_age),
        all_prefix(store->Prefix("")) {
    const objects::ResourceInfo& r = store->resource();
    std::vector<std::string> labels = {r.gv.group, r.resource};
    metrics::Registry* m = options.metrics;
    events_received =
        m->NewCounter("apiserver_watch_cache_events_received_total",
                      "Counter of events received in watch cache broken by "
                      "resource type.",
                      {"group", "resource"})
            ->With(labels);
    initializations =
        m->NewCounter("apiserver_watch_cache_initializations_total",
                      "Counter of watch cache initializations broken by "
                      "resource type.",
                      {"group", "resource"})
            ->With(labels);
    resource_version =
        m->NewGauge("apiserver_watch_cache_resource_version",
                    "Current resource version of watch cache broken by "
                    "resource type.",
                    {"group", "resource"})
            ->With(labels);
    window_events =
        m->NewGauge("apiserver_watch_cache_window_events",
                    "Events the watch cache keeps for resuming watches, by "
                    "resource.",
                    {"group", "resource"})
            ->With(labels);
    read_wait =
        m->NewHistogram("apiserver_watch_cache_read_wait_seconds",
                        "Histogram of time spent waiting for a watch cache to "
                        "become fresh.",
                        {"group", "resource"},
                        {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25,
                         1.5, 2, 3})
            ->With(labels);
    revision_waits_refused =
        m->NewCounter("apiserver_watch_cache_revision_waits_refused_total",
                      "Reads and watches of a revision the watch cache had "
                      "not reached that were answered without waiting for "
                      "it, because the bound on such waits was reached.",
                      {"group", "resource"})
            ->With(labels);
    consistent_reads =
        m->NewCounter("apiserver_watch_cache_consistent_read_total",
                      "Counter for consistent reads from cache.",
                      {"group", "resource", "success", "fallback"});
    const std::vector<std::string> index_labels = {r.gv.group, r.resource, ""};
    cache_lists = m->NewCounter("apiserver_cache_list_total",
                                "Number of LIST requests served from watch "
                                "cache",
                                {"group", "resource", "index"})
                      ->With(index_labels);
    cache_list_fetched =
        m->NewCounter("apiserver_cache_list_fetched_objects_total",
                      "Number of objects read from watch cache in the course "
                      "of serving a LIST request",
                      {"group", "resource", "index"})
            ->With(index_labels);
    cache_list_returned =
        m->NewCounter("apiserver_cache_list_returned_objects_total",
                      "Number of objects returned for a LIST request from "
                      "watch cache",
                      {"group", "resource"})
            ->With(labels);
    internal::Dispatcher::Options d;
    d.clock = clock;
    d.bookmark_interval = options.bookmark_interval;
    d.max_pending_events = options.max_pending_events;
    d.max_pending_bytes = options.max_pending_bytes;
    d.has_index = static_cast<bool>(options.index_func);
    d.send_threads = options.send_threads;
    if (d.send_threads <= 0) {
      d.send_threads = static_cast<int>(
          std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
    }
    d.parallel_min_sends = options.parallel_min_sends;
    d.events_dispatched =
        m->NewCounter("apiserver_watch_cache_events_dispatched_total",
                      "Counter of events dispatched in watch cache broken by "
                      "resource type.",
                      {"group", "resource"})
            ->With(labels);
    d.watchers_terminated =
        m->NewCounter("apiserver_terminated_watchers_total",
                      "Counter of watchers closed due to unresponsiveness "
                      "broken by resource type.",
                      {"group", "resource"})
            ->With(labels);
    d.watchers = m->NewGauge("apiserver_watch_cache_watchers",
                             "Watchers served by the watch cache, by "
                             "resource.",
                             {"group", "resource"})
                     ->With(labels);
    dispatcher = std::make_shared<internal::Dispatcher>(d);
  }

  // ---- the reflector thread: list, watch, relist ---------------------------
  void ReflectorLoop();
  // The store's objects under Prefix(ns) that match, at its latest
  // revision, read in pages of kListPage at the revision of the first.
  StatusOr<ListResult> ListStore(std::string_view ns,
                                 const ObjectPredicate& pred);
  StatusOr<int64_t> ListAndReplace();
  Status StartStorageWatch(int64_t list_revision);
  // Returns when the storage watch broke or the cacher stops; asks the
  // storage watch for progress meanwhile while reads wait for it.
  void AwaitWatchEnd();
  void Backoff();
  bool Stopping() {
    MutexLock l(&loop_mu);
    return stopping;
  }
  // Ends storage watch `generation`: the reflector relists, and its later
  // responses are ignored meanwhile (the cache missed a change, so what
  // follows would skip it).
  void MarkBroken(uint64_t generation);
  // Drops the window's events past its age bound (CacherOptions); returns
  // how many.
  size_t ExpireWindow() {
    CacheWriterLock l(&cache_mu);
    return ExpireWindowLocked(clock->Now());
  }
  size_t ExpireWindowLocked(TimePoint now) REQUIRES(cache_mu) {
    size_t dropped = window.Expire(now);
    window_events->Set(static_cast<double>(window.size()));
    return dropped;
  }

  // ---- the storage watch callback (the KV's thread) ------------------------
  void OnWatchResponse(uint64_t generation,
                       const etcdserverpb::WatchResponse& resp);
  void OnProgress(int64_t revision);
  // Applies one change to the store and window and publishes it.
  void ApplyLocked(const mvccpb::Event& e, ObjectPtr object,
                   std::shared_ptr<const std::string> json, TimePoint now)
      REQUIRES(cache_mu);
  // The object's list-item JSON (CacherOptions::keep_json), or null. Called
  // outside cache_mu: the encoding is the costly part of taking an object
  // in, and readers need not wait for it.
  std::shared_ptr<const std::string> JsonOf(
      const google::protobuf::Message& obj) const {
    if (!options.keep_json || objects::IsUnstructured(obj)) return nullptr;
    std::string json = objects::EncodeJson(obj);
    if (options.json_budget) return options.json_budget->Keep(std::move(json));
    return std::make_shared<const std::string>(std::move(json));
  }

  std::string IndexOf(const google::protobuf::Message& obj) const {
    return options.index_func ? options.index_func(obj) : std::string();
  }
  void NotifyStateChange() {
    { MutexLock l(&state_mu); }
    state_cv.notify_all();
  }
  void SetReady(bool ready) {
    {
      MutexLock l(&state_mu);
      self->ready_.store(ready);
    }
    state_cv.notify_all();
  }

  // ---- reads ----------------------------------------------------------------
  void RequestProgress() {
    MutexLock l(&watch_mu);
    if (watch) watch->RequestProgress();
  }
  // Waits until the cache reaches `revision` (or, `for_watch_start`, until
  // an unordered progress answer says the store has: see store_reached);
  // false after consistent_read_wait.
  bool WaitForRevision(int64_t revision, bool for_watch_start = false);
  // The store's unordered progress answer (progress_ordered false).
  void OnUnorderedProgress(int64_t revision);
  bool WaitReady(Duration timeout) {
    MutexLock l(&state_mu);
    return clock->WaitFor(l.native(), state_cv, timeout,
                          [&]() REQUIRES(state_mu) {
                            return self->ready_.load() || stopped;
                          }) &&
           self->ready_.load();
  }
  // The cache's objects under Prefix(ns) that match, at the cache's
  // revision. With `limit` > 0 at most that many, then a continue token
  // and remaining count exactly as ObjectStore::List makes them for the
  // same revision (cacher.h, "LIST semantics").
  ListResult ListFromCache(std::string_view ns, const ObjectPredicate& pred,
                           int64_t limit);

  Cacher* self;
  ObjectStore* store;
  CacherOptions options;
  Clock* clock;

  metrics::Counter* events_received;
  metrics::Counter* initializations;
  metrics::Gauge* resource_version;
  metrics::Gauge* window_events;
  metrics::Histogram* read_wait;
  metrics::Counter* revision_waits_refused;
  metrics::Family<metrics::Counter>* consistent_reads;
  // kube's RecordListCacheMetrics (index "": the cache has no list index).
  metrics::Counter* cache_lists;
  metrics::Counter* cache_list_fetched;
  metrics::Counter* cache_list_returned;
  std::shared_ptr<internal::Dispatcher> dispatcher;

  // The cache: every object by key, the recent changes, and the revision
  // both reflect. Writers: the watch callback and the reflector.
  // Lock order: cache_mu -> the dispatcher's queue lock (changes are
  // published under it); state_mu, loop_mu and watch_mu are leaves, never
  // held together or with cache_mu.
  mutable WriterFirstMutex cache_mu;
  std::map<std::string, StoreEntryPtr> objects GUARDED_BY(cache_mu);
  internal::EventWindow window GUARDED_BY(cache_mu);
  const std::string all_prefix;

  // Readiness and revision changes, for waiters.
  Mutex state_mu;
  std::condition_variable state_cv;
  bool stopped GUARDED_BY(state_mu) = false;
  std::atomic<int> revision_waiters{0};

  // The reflector.
  Mutex loop_mu;
  std::condition_variable loop_cv;
  bool stopping GUARDED_BY(loop_mu) = false;
  bool watch_broken GUARDED_BY(loop_mu) = false;
  bool started GUARDED_BY(loop_mu) = false;
  std::atomic<uint64_t> watch_generation{0};
  std::thread reflector;
  Mutex watch_mu;
  std::unique_ptr<storage::Watch> watch GUARDED_BY(watch_mu);
  // Whether the storage watch's progress answers come after its events
  // (storage::Watch::ProgressOrdered; false until it has started). When
  // not (etcd 3.4.23), an answer only says the store was at its revision,
  // not that the cache has every change up to it: it does not move the
  // cache's revision, it is kept here, and only a watch from a revision
  // waits for it (the dispatcher drops, for each watcher, the changes at or
  // before the revision it started from, which may still be on their way).
  // A watch-list the cache has not reached reads its initial state from
  // the store instead (Cacher::Watch), and lists go to the store.
  std::atomic<bool> progress_ordered{false};
  std::atomic<int64_t> store_reached{0};
};

// ---------------------------------------------------------------------------
// Reflector

void Cacher::Impl::ReflectorLoop() {
  while (!Stopping()) {
    StatusOr<int64_t> listed = ListAndReplace();
    if (!listed.ok()) {
      LOG(WARNING) << "watch cache of " << store->resource().GroupResource()
                   << ": list failed: " << listed.status();
      Backoff();
      continue;
    }
    Status watching = StartStorageWatch(*listed);
    if (watching.ok()) {
      // Ready once the storage watch has said whether its progress answers
      // are ordered (progress_ordered): before, a consistent read would
      // take the store's path for an unordered one, although the cache
      // could serve it.
      SetReady(true);
      AwaitWatchEnd();
    }
    {
      MutexLock l(&watch_mu);
      watch.reset();  // waits for its thread: no callback after this
    }
    if (Stopping()) break;
    LOG(INFO) << "watch cache of " << store->resource().GroupResource()
              << ": storage watch ended ("
              << (watching.ok() ? std::string("canceled") : watching.ToString())
              << "); relisting";
    // Like kube-apiserver's cacher: stop serving, close every watcher (they
    // re-watch and get 410 if the new window misses their revision), relist.
    SetReady(false);
    {
      CacheWriterLock l(&cache_mu);
      dispatcher->CloseAll(self->revision_.load());
    }
    if (!watching.ok()) Backoff();
  }
}

void Cacher::Impl::Backoff() {
  MutexLock l(&loop_mu);
  clock->WaitFor(l.native(), loop_cv, kRelistBackoff,
                 [&]() REQUIRES(loop_mu) { return stopping; });
}

StatusOr<ListResult> Cacher::Impl::ListStore(std::string_view ns,
                                             const ObjectPredicate& pred) {
  ListResult all;
  ListOptions page_opts{.limit = kListPage, .predicate = pred};
  do {
    ASSIGN_OR_RETURN(ListResult page, store->List(ns, page_opts));
    all.revision = page.revision;
    all.items.insert(all.items.end(), page.items.begin(), page.items.end());
    page_opts.continue_token = page.continue_token;
  } while (!page_opts.continue_token.empty());
  return all;
}

StatusOr<int64_t> Cacher::Impl::ListAndReplace() {
  ASSIGN_OR_RETURN(ListResult listed, ListStore("", nullptr));
  const int64_t revision = listed.revision;
  std::vector<ObjectPtr>& items = listed.items;

  std::map<std::string, StoreEntryPtr> fresh;
  for (ObjectPtr& obj : items) {
    const objects::metav1::ObjectMeta* meta = objects::GetObjectMeta(*obj);
    auto entry = std::make_shared<StoreEntry>();
    entry->revision = Versioner::Parse(meta->resourceversion()).value_or(0);
    entry->ns = meta->namespace_();
    entry->index_value = IndexOf(*obj);
    entry->json = JsonOf(*obj);
    std::string key = store->Key(entry->ns, meta->name());
    entry->object = std::move(obj);
    fresh.emplace_hint(fresh.end(), std::move(key), std::move(entry));
  }
  {
    CacheWriterLock l(&cache_mu);
    objects.swap(fresh);
    window.Reset(revision);
    window_events->Set(0);
    self->revision_.store(revision);
    // Watchers that registered against the old state cannot continue.
    dispatcher->CloseAll(revision);
  }
  resource_version->Set(static_cast<double>(revision));
  initializations->Inc();
  return revision;
}

Status Cacher::Impl::StartStorageWatch(int64_t list_revision) {
  etcdserverpb::WatchCreateRequest req;
  req.set_key(all_prefix);
  req.set_range_end(PrefixRangeEnd(all_prefix));
  req.set_start_revision(list_revision + 1);
  // No prev_kv: the cache holds every key's last state since the list at
  // list_revision, so a DELETE's last state comes from there. Asking for it
  // made the store read and send every event's previous value (a Lease
  // renewal's event twice its size) and this side parse and drop it.
  req.set_progress_notify(true);
  const uint64_t generation = watch_generation.fetch_add(1) + 1;
  {
    MutexLock l(&loop_mu);
    watch_broken = false;
  }
  progress_ordered.store(false);  // until this watch says otherwise
  // The callback may run before StartWatch returns (a compacted start).
  auto w = store->kv()->StartWatch(
      req, [this, generation](const etcdserverpb::WatchResponse& resp) {
        OnWatchResponse(generation, resp);
      });
  if (!w.ok()) return w.status();
  progress_ordered.store((*w)->ProgressOrdered());
  MutexLock l(&watch_mu);
  watch = std::move(*w);
  return Status::Ok();
}

void Cacher::Impl::AwaitWatchEnd() {
  MutexLock l(&loop_mu);
  auto done = [&]() REQUIRES(loop_mu) { return stopping || watch_broken; };
  while (!done()) {
    if (revision_waiters.load() > 0) {
      clock->WaitFor(l.native(), loop_cv, kProgressRequestInterval, done);
      if (!done() && revision_waiters.load() > 0) {
        l.Unlock();
        RequestProgress();
        l.Lock();
      }
    } else if (options.window_max_age > Duration(0)) {
      // Real time, not `clock`: this only decides when to look (tests
      // count the waiters on a fake clock); Expire judges ages on `clock`.
      if (!loop_cv.wait_for(l.native(), options.window_expire_interval,
                            [&]() REQUIRES(loop_mu) {
                              return done() || revision_waiters.load() > 0;
                            })) {
        l.Unlock();  // loop_mu is a leaf: never held with cache_mu
        if (ExpireWindow() >= kReleaseMemoryAfterDropping) {
          ReleaseFreeMemory();
        }
        l.Lock();
      }
    } else {
      loop_cv.wait(l.native(), [&]() REQUIRES(loop_mu) {
        return done() || revision_waiters.load() > 0;
      });
    }
  }
}

void Cacher::Impl::MarkBroken(uint64_t generation) {
  // Past this, the watch's responses count as an old watch's and are
  // dropped on arrival; until the relist every change after the one it
  // missed would otherwise be applied and sent, as if that one never
  // happened. (Compare-and-swap: a newer watch's generation stays.)
  watch_generation.compare_exchange_strong(generation, generation + 1);
  {
    MutexLock l(&loop_mu);
    watch_broken = true;
  }
  loop_cv.notify_all();
}

// ---------------------------------------------------------------------------
// The storage watch

void Cacher::Impl::OnWatchResponse(uint64_t generation,
                                   const etcdserverpb::WatchResponse& resp) {
  if (generation != watch_generation.load()) return;  // an old watch
  if (resp.canceled()) {
    LOG(INFO) << "watch cache of " << store->resource().GroupResource()
              << ": storage watch canceled (compact_revision="
              << resp.compact_revision() << ", reason \""
              << resp.cancel_reason() << "\")";
    MarkBroken(generation);
    return;
  }
  if (resp.events_size() == 0) {
    if (resp.created()) return;
    if (progress_ordered.load()) {
      OnProgress(resp.header().revision());
    } else {
      OnUnorderedProgress(resp.header().revision());
    }
    return;
  }
  // Decode outside the lock; readers keep going meanwhile.
  std::vector<ObjectPtr> decoded(resp.events_size());
  std::vector<std::shared_ptr<const std::string>> json(resp.events_size());
  for (int i = 0; i < resp.events_size(); ++i) {
    const mvccpb::Event& e = resp.events(i);
    if (e.type() == mvccpb::Event::PUT) {
      auto obj =
          store->Decode(e.kv().key(), e.kv().value(), e.kv().mod_revision());
      if (!obj.ok()) {
        LOG(ERROR) << "watch cache of " << store->resource().GroupResource()
                   << ": cannot decode " << e.kv().key() << ": " << obj.status()
                   << "; relisting";
        MarkBroken(generation);
        return;
      }
      decoded[i] = ObjectPtr(std::move(*obj));
      json[i] = JsonOf(*decoded[i]);
    }
  }
  int64_t last = 0;
  {
    CacheWriterLock l(&cache_mu);
    const TimePoint now = clock->Now();
    for (int i = 0; i < resp.events_size(); ++i) {
      ApplyLocked(resp.events(i), std::move(decoded[i]), std::move(json[i]),
                  now);
    }
    ExpireWindowLocked(now);
    last = resp.events(resp.events_size() - 1).kv().mod_revision();
    if (last > self->revision_.load()) self->revision_.store(last);
  }
  events_received->Inc(resp.events_size());
  resource_version->Set(static_cast<double>(last));
  NotifyStateChange();
}

void Cacher::Impl::ApplyLocked(const mvccpb::Event& e, ObjectPtr object,
                               std::shared_ptr<const std::string> json,
                               TimePoint now) {
  const std::string& key = e.kv().key();
  auto it = objects.find(key);
  auto ev = std::make_shared<CacheEvent>();
  ev->revision = e.kv().mod_revision();
  ev->recorded = now;
  if (e.type() == mvccpb::Event::PUT) {
    ev->type = it == objects.end() ? WatchEventType::kAdded
                                   : WatchEventType::kModified;
    ev->ns = objects::Namespace(*object);
    ev->index_value = IndexOf(*object);
    if (it != objects.end()) {
      ev->prev = it->second->object;
      ev->prev_index_value = it->second->index_value;
    }
    ev->object = object;
    ev->bytes = e.kv().value().size();
    ev->event = MakeWatchEvent(ev->type, object, ev->revision,
                               /*initial_events_end=*/false, json);
    auto entry = std::make_shared<StoreEntry>();
    entry->object = std::move(object);
    entry->revision = ev->revision;
    entry->ns = ev->ns;
    entry->index_value = ev->index_value;
    entry->bytes = ev->bytes;
    entry->json = std::move(json);
    if (ev->type == WatchEventType::kAdded) entry->added = ev->event;
    objects.insert_or_assign(it, key, std::move(entry));
  } else {
    // The last state: what the cache holds (the list and every event
    // since); a key it never knew has nothing to report.
    if (it == objects.end()) return;
    ObjectPtr last = it->second->object;
    MutableObject at_deletion(last->New());
    at_deletion->CopyFrom(*last);
    objects::SetResourceVersion(at_deletion.get(),
                                Versioner::ToResourceVersion(ev->revision));
    ev->type = WatchEventType::kDeleted;
    ev->bytes = it->second->bytes;
    ev->ns = objects::Namespace(*last);
    ev->prev_index_value = it->second->index_value;
    ev->index_value = ev->prev_index_value;
    ev->prev = std::move(last);
    ev->object = ObjectPtr(std::move(at_deletion));
    ev->event = MakeWatchEvent(ev->type, ev->object, ev->revision);
    objects.erase(it);
  }
  window.Push(ev);
  dispatcher->Publish(std::move(ev));
}

void Cacher::Impl::OnProgress(int64_t revision) {
  {
    CacheWriterLock l(&cache_mu);
    if (revision <= self->revision_.load()) return;
    self->revision_.store(revision);
    dispatcher->Progress(revision);
  }
  resource_version->Set(static_cast<double>(revision));
  NotifyStateChange();
}

void Cacher::Impl::OnUnorderedProgress(int64_t revision) {
  int64_t seen = store_reached.load();
  while (seen < revision &&
         !store_reached.compare_exchange_weak(seen, revision)) {
  }
  NotifyStateChange();
}

// ---------------------------------------------------------------------------
// Reads

bool Cacher::Impl::WaitForRevision(int64_t revision, bool for_watch_start) {
  auto reached = [&] {
    return self->revision_.load() >= revision ||
           (for_watch_start && store_reached.load() >= revision);
  };
  if (reached()) return true;
  RevisionWaitBudget* budget = options.revision_waits.get();
  if (budget != nullptr && !budget->TryAcquire()) {
    revision_waits_refused->Inc();
    return false;
  }
  struct Release {
    RevisionWaitBudget* b;
    ~Release() {
      if (b != nullptr) b->Release();
    }
  } release{budget};
  const TimePoint start = clock->Now();
  revision_waiters.fetch_add(1);
  {
    MutexLock l(&loop_mu);  // wake the reflector's ticker
  }
  loop_cv.notify_all();
  RequestProgress();
  bool caught_up;
  {
    MutexLock l(&state_mu);
    caught_up =
        clock->WaitFor(
            l.native(), state_cv, options.consistent_read_wait,
            [&]() REQUIRES(state_mu) { return reached() || stopped; }) &&
        reached();
  }
  revision_waiters.fetch_sub(1);
  read_wait->Observe(
      std::chrono::duration<double>(clock->Now() - start).count());
  return caught_up;
}

ListResult Cacher::Impl::ListFromCache(std::string_view ns,
                                       const ObjectPredicate& pred,
                                       int64_t limit) {
  const std::string prefix = store->Prefix(ns);
  const bool all = ns.empty() || !store->resource().namespaced;
  ListResult result;
  int64_t fetched = 0;
  {
    CacheReaderLock l(&cache_mu);
    if (all && limit <= 0) {
      result.items.reserve(objects.size());
      if (options.keep_json) result.item_json.reserve(objects.size());
    }
    auto it = objects.lower_bound(prefix);
    // The end taken here, under the lock: the lambda below cannot carry
    // the lock's annotation.
    const auto end = objects.end();
    auto in_range = [&] { return it != end && it->first.starts_with(prefix); };
    for (; in_range(); ++it) {
      // A full page with a key after it: another page exists, whether or
      // not that key matches (the store reads one key past a page, kube's
      // cache looks at the next item; neither evaluates it).
      if (limit > 0 && static_cast<int64_t>(result.items.size()) >= limit) {
        break;
      }
      ++fetched;
      if (!pred || pred(*it->second->object)) {
        result.items.push_back(it->second->object);
        if (options.keep_json) result.item_json.push_back(it->second->json);
      }
    }
    result.revision = self->revision_.load();
    if (in_range()) {
      // The page ended at its last item (the loop stops right after
      // filling it), so the next page starts just past that item's key:
      // the token ObjectStore::List would hand out at this revision.
      const std::string& last = std::prev(it)->first;
      std::string next = last.substr(prefix.size());
      next.push_back('\0');
      result.continue_token = EncodeContinueToken(result.revision, next);
      if (!pred) {
        // The keys after the page (the store: its range's count minus the
        // page). Counted only without a predicate, as the store and kube
        // report it only then.
        int64_t after = 0;
        if (all) {
          after = static_cast<int64_t>(objects.size()) - fetched;
        } else {
          for (; in_range(); ++it) ++after;
        }
        result.remaining_items = after;
      }
    }
  }
  cache_lists->Inc();
  cache_list_fetched->Inc(static_cast<double>(fetched));
  cache_list_returned->Inc(static_cast<double>(result.items.size()));
  return result;
}

// ---------------------------------------------------------------------------
// Cacher

Cacher::Cacher(ObjectStore* store, CacherOptions options)
    : store_(store),
      options_(std::move(options)),
      impl_(std::make_unique<Impl>(this, store, options_)) {}

Cacher::~Cacher() { Stop(); }

Status Cacher::Start() {
  {
    MutexLock l(&impl_->loop_mu);
    if (impl_->started) return FailedPreconditionError("cacher started twice");
    if (impl_->stopping) return FailedPreconditionError("cacher stopped");
    impl_->started = true;
  }
  impl_->dispatcher->Start();
  impl_->reflector = std::thread([this] { impl_->ReflectorLoop(); });
  return Status::Ok();
}

void Cacher::Stop() {
  {
    MutexLock l(&impl_->loop_mu);
    impl_->stopping = true;
  }
  impl_->loop_cv.notify_all();
  if (impl_->reflector.joinable()) impl_->reflector.join();
  {
    MutexLock l(&impl_->state_mu);
    impl_->stopped = true;
    ready_.store(false);
  }
  impl_->state_cv.notify_all();
  impl_->dispatcher->Stop();
}

bool Cacher::WaitReady(Duration timeout) { return impl_->WaitReady(timeout); }

size_t Cacher::num_watchers() const {
  return impl_->dispatcher->num_watchers();
}

WatchBookkeeping Cacher::BookkeepingForTest() {
  return impl_->dispatcher->BookkeepingForTest();
}

StatusOr<ListResult> Cacher::List(std::string_view ns, int64_t revision,
                                  bool consistent, const ListOptions& opts,
                                  bool not_older_than) {
  ListOptions from_store = opts;
  from_store.revision = consistent ? 0 : revision;
  // What the store serves (kube-apiserver 1.33's delegator, for a cache
  // without snapshots): a continue page (at its token's revision, which the
  // cache no longer has) and a limited list at an exact revision (the
  // legacy match; NotOlderThan is never delegated). A first page of a
  // consistent or not-older-than list is the cache's; "any"
  // (resourceVersion=0) ignores the limit.
  if (!opts.continue_token.empty() ||
      (opts.limit > 0 && !consistent && revision > 0 && !not_older_than)) {
    return store_->List(ns, from_store);
  }
  // Not ready, or a cache that cannot tell whether it has every change up
  // to the store's revision (progress_ordered), asked for a revision it
  // has not reached: kube-apiserver's answer when the watch cache cannot
  // serve (and against etcd without ordered progress answers it serves no
  // consistent read from the cache either).
  if (!ready_.load() || (!impl_->progress_ordered.load() &&
                         (consistent || revision > revision_.load()))) {
    // Not-older-than N on the store: read the latest and check it.
    from_store.revision = 0;
    ASSIGN_OR_RETURN(ListResult r, store_->List(ns, from_store));
    if (!consistent && revision > r.revision) {
      return TooLargeResourceVersion(revision, r.revision);
    }
    return r;
  }
  if (consistent) {
    ASSIGN_OR_RETURN(int64_t current, store_->CurrentRevision());
    const std::string& group = store_->resource().gv.group;
    const std::string& resource = store_->resource().resource;
    if (!impl_->WaitForRevision(current)) {
      impl_->consistent_reads->With({group, resource, "false", "true"})->Inc();
      return store_->List(ns, from_store);
    }
    impl_->consistent_reads->With({group, resource, "true", "false"})->Inc();
  } else if (revision > 0 && !impl_->WaitForRevision(revision)) {
    return TooLargeResourceVersion(revision, revision_.load());
  }
  const bool paged = consistent || (not_older_than && revision > 0);
  return impl_->ListFromCache(ns, opts.predicate, paged ? opts.limit : 0);
}

StatusOr<ObjectPtr> Cacher::Get(std::string_view ns, std::string_view name) {
  if (!ready_.load()) return store_->Get(ns, name);
  std::string key = store_->Key(ns, name);
  {
    CacheReaderLock l(&impl_->cache_mu);
    auto it = impl_->objects.find(key);
    if (it != impl_->objects.end()) return it->second->object;
  }
  std::string gr = store_->resource().GroupResource();
  return NotFoundError(gr + " \"" + std::string(name) + "\" not found");
}

StatusOr<std::unique_ptr<WatchHandle>> Cacher::Watch(
    const WatchOptions& opts, std::shared_ptr<WatchSink> sink) {
  {
    MutexLock l(&impl_->loop_mu);
    if (impl_->stopping) return UnavailableError("the watch cache is stopped");
  }
  if (!impl_->WaitReady(options_.consistent_read_wait)) {
    return ResourceExhaustedError("storage is (re)initializing");
  }
  // The revision the cache must have reached: the one asked for or, for a
  // consistent watch-list, the store's now (kube's
  // getWatchCacheResourceVersion).
  int64_t required = opts.revision;
  if (opts.consistent && opts.send_initial_events && opts.revision == 0) {
    ASSIGN_OR_RETURN(required, store_->CurrentRevision());
  }
  // A watch-list the cache has not reached, over a store whose progress
  // answers may run ahead of its events (etcd 3.4.23): no answer proves the
  // cache has every change up to `required`, and on a resource nobody
  // writes no event ever brings it there, so waiting would end in Too
  // large resource version. Its initial state is read from the store
  // instead, at the store's latest revision L (>= required), and the watch
  // continues after L: the changes at or before L that reach the cache
  // later are in the list and are skipped, as for a watch from a revision
  // below (start_revision). This is what kube's client does on its own:
  // kube-apiserver refuses a watch-list when etcd cannot order progress
  // answers (cacher.go: "a watch stream was requested by the client but
  // the required storage feature RequestWatchProgress is disabled") and
  // client-go's reflector falls back to a LIST and a WATCH from the list's
  // revision; here that is one request, with the same result.
  std::vector<StoreEntryPtr> listed;
  int64_t listed_revision = 0;
  if (opts.send_initial_events && required > revision_.load() &&
      !impl_->progress_ordered.load()) {
    ASSIGN_OR_RETURN(ListResult from_store,
                     impl_->ListStore(opts.ns, opts.predicate));
    listed_revision = from_store.revision;
    // Only a revision nobody was ever given is ahead of the store.
    if (listed_revision < required) {
      return TooLargeResourceVersion(required, listed_revision);
    }
    listed.reserve(from_store.items.size());
    for (ObjectPtr& obj : from_store.items) {
      auto entry = std::make_shared<StoreEntry>();
      entry->revision = Versioner::Parse(objects::ResourceVersion(*obj))
                            .value_or(listed_revision);
      entry->ns = objects::Namespace(*obj);
      entry->index_value = impl_->IndexOf(*obj);
      entry->object = std::move(obj);
      listed.push_back(std::move(entry));
    }
  } else if (required > 0) {
    // Not reached yet: wait for it (it may be in flight), at most
    // consistent_read_wait, then refuse, as kube-apiserver's watch cache
    // does (blockTimeout, 3 s). Without this a watch from a revision far in
    // the future would be accepted and never see an event, and a watch-list
    // would start from older state than its client already saw. A watch
    // from a revision (no initial state) may start once the store has
    // reached it, even if changes before it are still on their way.
    if (!impl_->WaitForRevision(
            required, /*for_watch_start=*/!opts.send_initial_events)) {
      return TooLargeResourceVersion(required, revision_.load());
    }
  }
  internal::WatcherInit init;
  init.opts = opts;
  if (!store_->resource().namespaced) init.opts.ns.clear();
  init.sink = std::move(sink);
  init.start_time = options_.clock->Now();
  // Under the cache lock: the snapshot or window slice and the registration
  // are one step relative to incoming changes.
  CacheReaderLock l(&impl_->cache_mu);
  const int64_t now = revision_.load();
  if (opts.send_initial_events && listed_revision > now) {
    // The store's list (above), newer than the cache. The cache applies
    // changes in revision order, so it has applied none after
    // listed_revision: there is nothing of the window to replay, and every
    // later change reaches the dispatcher after this registration.
    init.snapshot =
        std::make_shared<std::vector<StoreEntryPtr>>(std::move(listed));
    init.snapshot_revision = listed_revision;
    init.start_revision = listed_revision;
    init.end_bookmark = opts.allow_bookmarks && !opts.legacy_initial_events;
  } else if (opts.send_initial_events) {
    // From the cache: also when a store list was read but the cache has
    // caught up with it since (a change made meanwhile may already have
    // been dispatched, and is only in the cache's state).
    const std::string prefix = store_->Prefix(opts.ns);
    auto snapshot = std::make_shared<std::vector<StoreEntryPtr>>();
    for (auto it = impl_->objects.lower_bound(prefix);
         it != impl_->objects.end() && it->first.starts_with(prefix); ++it) {
      snapshot->push_back(it->second);
    }
    init.snapshot = std::move(snapshot);
    init.snapshot_revision = now;
    init.start_revision = now;
    init.end_bookmark = opts.allow_bookmarks && !opts.legacy_initial_events;
  } else if (opts.revision == 0) {
    init.start_revision = now;
  } else if (opts.revision < impl_->window.resumable_from()) {
    init.fail =
        Status(StatusCode::kExpired,
               "too old resource version: " + std::to_string(opts.revision) +
                   " (" + std::to_string(impl_->window.resumable_from()) + ")");
  } else {
    init.replay = impl_->window.Since(opts.revision);
    init.start_revision = opts.revision;
  }
  std::unique_ptr<WatchHandle> handle =
      impl_->dispatcher->Register(std::move(init));
  if (!handle) return UnavailableError("the watch cache is stopped");
  return handle;
}

}  // namespace kplane::apiserver
