// Cacher: the watch cache of one resource (the model is
// k8s.io/apiserver/pkg/storage/cacher).
//
// One storage watch per resource (from the revision of an initial LIST,
// with progress notifications so the cache's revision advances even when
// nothing of this resource changes) feeds:
//   - a store: the current object of every key, and
//   - a window: the last `window_events` changes (a ring buffer),
// and the cache answers LIST and WATCH from memory. Thousands of watchers are
// fanned out from one dispatch thread (a change for many watchers is written
// by it and send_threads - 1 helpers); each event is handed to a watcher's
// WatchSink, which must not block (the HTTP layer writes into the
// connection's output buffer). A sink that refuses an event (client gone, or
// its buffer over the cap: a slow client) is closed and dropped: the client
// relists; it never stalls the others.
//
// Watch semantics (the HTTP layer maps query parameters onto WatchOptions):
//   send_initial_events: first a synthetic ADDED for every object matching
//     (in key order) as of the cache's state, then every later change;
//     with `consistent` (a watch-list from resourceVersion ""), that state
//     is at least the store's current revision: the cache waits for it as
//     for a watch from a revision (below), and the watch fails rather than
//     start from a cache that lags. Over a store whose progress answers are
//     not ordered with its events (storage::Watch::ProgressOrdered false:
//     etcd < 3.4.31), where no answer proves the cache complete, a
//     revision the cache has not reached is not waited for: the initial
//     events are the store's list at its latest revision L, the
//     initial_events_end bookmark is at L, and the watch goes on with the
//     changes after L (docs/api-storage.md);
//   otherwise: every change with revision > `revision` (0: from now). A
//     `revision` older than the window's oldest event is Expired (410: "too
//     old resource version: N (M)"), delivered as Close(Expired) on the sink;
//   a `revision` newer than the cache (either form): Watch waits up to
//     `consistent_read_wait` (on the clock) for the cache to reach it, then
//     fails with kDeadlineExceeded "Too large resource version: N, current:
//     M" (kube: 504 Timeout, cause ResourceVersionTooLarge, retry after 1 s);
//   selectors: a MODIFIED event whose object stopped matching is delivered
//     as DELETED, one that started matching as ADDED (as kube-apiserver);
//   bookmarks (allow_bookmarks only): every `bookmark_interval` from the
//     watch's start, and 2 s before a timeout closes the watch, a BOOKMARK
//     with the revision up to which changes were dispatched, when that is
//     newer than the watch's start; after initial events when
//     send_initial_events and allow_bookmarks (and not
//     legacy_initial_events), one BOOKMARK marked initial_events_end
//     (docs/api-storage.md has the details);
//   timeout: the watch closes (Close(OK)) after `timeout`;
//   relist: when the storage watch breaks (compacted, canceled, or a
//     change on it that cannot be decoded, after which the rest of it is
//     ignored), every watcher is closed with Close(OK), as kube-apiserver's
//     cacher does; the clients re-watch from their last revision and get
//     410 if the new window no longer covers it;
//   not ready (initial list, relist): Watch waits up to
//     `consistent_read_wait`, then fails with kResourceExhausted "storage is
//     (re)initializing" (kube answers 429 with Retry-After 1); List and Get
//     are served by the ObjectStore meanwhile.
//
// LIST semantics (kube-apiserver 1.33's CacheDelegator with
// ConsistentListFromCache, for a cache without snapshots, i.e. with
// ListFromCacheSnapshot off; docs/api-storage.md has the table):
//   consistent (resourceVersion ""): the cache first catches up with the
//     store's current revision (a progress request on its watch), waiting up
//     to `consistent_read_wait`; if it cannot, the list is served from the
//     store instead (apiserver_watch_cache_consistent_read_total{fallback=
//     "true"});
//   consistent with `limit`: the first page likewise from the cache, at the
//     revision the cache caught up to (>= the store's when asked): the
//     predicate is applied before the limit, the page ends at its limit-th
//     match, and when any key (matching or not) follows it the page carries
//     the continue token ObjectStore::List makes for that revision
//     (EncodeContinueToken(revision, last key + "\0")) and, without a
//     predicate, remaining_items = the keys after the page. The bytes are
//     the store's for that revision;
//   continue token: served by the ObjectStore at the token's revision
//     (the cache keeps only its current state; kube 1.33 does the same
//     without snapshots), so either path can serve a list's later pages;
//   any (resourceVersion "0"): the cache as it is now; `limit` is ignored;
//   not older than N: waits up to `consistent_read_wait` for the cache to
//     reach N, else Timeout (504 "Too large resource version: N, current: M");
//   N with limit (revision > 0, not consistent), resourceVersionMatch ""
//     (legacy exact): served by the ObjectStore at exactly N (410 once N is
//     compacted), kube's rule;
//   NotOlderThan N (`not_older_than`), with or without limit: never at
//     exactly N but as "not older than N" above, a limit applied as for a
//     consistent read (the first page from the cache at the revision it
//     reached), as kube serves it from the cache; never 410.
//     resourceVersionMatch=Exact never reaches the cache
//     (ResourceStore::List).
//
// Metrics (CacherOptions::metrics, labels {group, resource}):
//   apiserver_watch_cache_events_dispatched_total
//   apiserver_watch_cache_events_received_total
//   apiserver_watch_cache_initializations_total
//   apiserver_watch_cache_resource_version
//   apiserver_watch_cache_read_wait_seconds
//   apiserver_watch_cache_consistent_read_total{success, fallback}
//   apiserver_cache_list_total{index}, apiserver_cache_list_fetched_objects_
//     total{index} (keys looked at), apiserver_cache_list_returned_objects_
//     total: LISTs served from the cache (index is always "")
//   apiserver_terminated_watchers_total (sinks that refused an event, and
//     watchers closed because they fell max_pending_events or
//     max_pending_bytes behind)
//   apiserver_watch_cache_watchers (gauge)
//   apiserver_watch_cache_window_events (gauge: events the window holds)
//
// Thread-safety: all public methods may be called concurrently. Sinks are
// called one event at a time per sink: Send from the cache's dispatch thread
// or one of its send helpers, the other WatchSink methods from the dispatch
// thread; a sink's calls never overlap.
#ifndef KPLANE_APISERVER_CACHER_CACHER_H_
#define KPLANE_APISERVER_CACHER_CACHER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "apiserver/cacher/kept_json_budget.h"
#include "apiserver/storage/object_store.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"

namespace kplane::apiserver {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };
std::string_view WatchEventTypeName(WatchEventType t);  // "ADDED", ...

// One event as one watcher receives it. Events of the cache are shared by
// every watcher (shared_ptr); per-watcher conversions (MODIFIED -> ADDED or
// DELETED through a selector) are new events sharing the objects.
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object after the change (DELETED: its last state, resourceVersion =
  // the deletion's revision). Null for bookmarks.
  ObjectPtr object;
  int64_t revision = 0;
  // Only on the bookmark that ends the initial events.
  bool initial_events_end = false;
  // objects::EncodeJson(*object) when the cache kept it for this object
  // version (CacherOptions::keep_json): a JSON watch frame is made from
  // these bytes instead of encoding the object again, so one version is
  // encoded once for LIST and WATCH both. Null otherwise (DELETED events,
  // whose object carries the deletion's resourceVersion; custom
  // resources; bookmarks).
  std::shared_ptr<const std::string> object_json;

  // Memoized encodings of this event ("json", "table", ...), so that N
  // watchers asking for one format cost one encoding.
  std::shared_ptr<const std::string> Encoded(
      const std::string& format,
      const std::function<std::string(const WatchEvent&)>& encode) const;

 private:
  mutable Mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const std::string>> cache_
      GUARDED_BY(mu_);
};
using WatchEventPtr = std::shared_ptr<const WatchEvent>;

// Where a watcher's events go. Implemented by the HTTP layer.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Delivers one event. Returns false when the sink cannot take it (client
  // gone or too far behind); the watcher is then closed with
  // Close(ResourceExhausted) and never called again.
  virtual bool Send(const WatchEventPtr& event) = 0;
  // Ends the watch: OK (timeout or server shutdown), Expired (the requested
  // revision is older than the cache's window: write an ERROR event with a
  // 410 Status, then end), ResourceExhausted (the client did not keep up:
  // drop the connection), or another error. Called exactly once.
  virtual void Close(const Status& reason) = 0;

  // Pacing. Ready(): the sink can take another event now without growing
  // its buffer past its allowance. While it is not, the cache keeps the
  // watcher's events in its queue (shared, not copied) and calls
  // NotifyWhenReady(wake); the sink calls `wake` once, from any thread but
  // never inside a WatchSink call, when Ready() may have turned true. A
  // watcher whose queue passes CacherOptions::max_pending_events or
  // max_pending_bytes is closed with ResourceExhausted. The defaults never
  // pace.
  virtual bool Ready() { return true; }
  virtual void NotifyWhenReady(std::function<void()> wake) { (void)wake; }
};

struct WatchOptions {
  std::string ns;  // "" = all namespaces
  bool send_initial_events = false;
  int64_t revision = 0;
  bool allow_bookmarks = false;
  ObjectPredicate predicate;       // null = every object
  Duration timeout = Duration(0);  // 0 = never
  // With CacherOptions::index_func: only objects whose index value (before
  // or after a change) equals this are candidates for this watcher; the
  // predicate still decides. E.g. a kubelet's `fieldSelector=spec.nodeName=
  // node-7` sets "node-7", so an event costs it nothing unless it concerns
  // node-7 (kube-apiserver's trigger index).
  std::optional<std::string> index_value;
  // With send_initial_events and revision 0: the initial events are at
  // least as new as the store's current revision (a watch-list with
  // resourceVersion "", kube's getWatchCacheResourceVersion): Watch reads
  // that revision and waits for the cache to reach it, failing with Too
  // large resource version if it cannot, as for a watch from a revision.
  // Never served from a cache that lags; over a store whose progress
  // answers are not ordered, read from the store instead of waiting.
  bool consistent = false;
  // With send_initial_events: a legacy watch (resourceVersion 0 or ""
  // without sendInitialEvents). Its initial events end with no
  // initial_events_end bookmark, which kube sends only to a watch-list
  // (sendInitialEvents=true: isListWatchRequest).
  bool legacy_initial_events = false;
};

// How many requests may wait for a revision at once (CacherOptions::
// revision_waits). Thread-safe.
class RevisionWaitBudget {
 public:
  explicit RevisionWaitBudget(int limit) : limit_(limit) {}
  // Takes one wait; false when `limit` are running.
  bool TryAcquire() {
    int n = in_use_.load();
    while (n < limit_) {
      if (in_use_.compare_exchange_weak(n, n + 1)) return true;
    }
    return false;
  }
  void Release() { in_use_.fetch_sub(1); }
  int in_use() const { return in_use_.load(); }
  int limit() const { return limit_; }

 private:
  const int limit_;
  std::atomic<int> in_use_{0};
};

struct CacherOptions {
  // The window: at most `window_events` changes; of those, the ones older
  // than `window_max_age` are dropped as long as more than
  // `window_min_events` remain (zero max age: kept until newer ones push
  // them out). Kube's watch cache keeps eventFreshDuration = 75 s of
  // history (bookmarks every 60 s plus a margin, so a watcher that got its
  // last bookmark can resume), at least 100 and at most 100 * 1024 events,
  // growing and shrinking by halves. Checked on every change and every
  // `window_expire_interval` (real time: a quiet resource lets its burst
  // go; ages are on `clock`).
  size_t window_events = 10000;
  size_t window_min_events = 100;
  Duration window_max_age = seconds(75);
  Duration window_expire_interval = seconds(5);
  // A watcher that is not reading (its sink not Ready) queues the events
  // meant for it; past this many it is closed as too slow, as
  // kube-apiserver's cacheWatcher is ("Forcing watcher close due to
  // unresponsiveness"), and the client re-watches or relists. Initial
  // events (send_initial_events, or the replay of a watch from a revision)
  // are paced to the client outside this bound: they are the cache's. 0: no
  // bound.
  size_t max_pending_events = 10000;
  // The same in bytes (the stored size of the queued events' objects): a
  // watcher whose queue would pass this is closed, unless the queue is
  // empty (one event of any size may wait). The queued events are shared
  // with the window and with other watchers, but once they leave the
  // window only the queues keep them, so without a byte bound a client
  // that stops reading pins up to max_pending_events of the largest
  // objects (10,000 x 1.5 MiB). Kube closes a watcher whose input channel
  // (at least 10 events, about a second of the resource's changes) stays
  // full for its dispatch budget (100 ms); ten of the largest objects the
  // store takes (1.5 MiB) fit in the default, so a client that reads
  // survives a burst of large writes. 0: no bound.
  size_t max_pending_bytes = 16 * 1024 * 1024;
  // Fan-out: threads that write one change to its watchers, the cache's
  // dispatch thread included (0: one per CPU, at most 4; 1: the dispatch
  // thread alone). A change is shared out only when at least
  // `parallel_min_sends` watchers take it at once; below that one thread
  // is cheaper than waking another. Each watcher still gets its events one
  // at a time and in order, paced and bounded as above
  // (apiserver/cacher/dispatcher.h, "Sending").
  int send_threads = 0;
  size_t parallel_min_sends = 64;
  Duration bookmark_interval = seconds(60);
  Duration consistent_read_wait = seconds(3);
  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
  // Encodings: keep each stored object's JSON (objects::EncodeJson, no
  // kind/apiVersion: the form of a JSON list item) next to it, made once
  // per object version when the cache takes the version in (on the
  // storage watch's thread, before the cache lock: readers do not wait for
  // it). A JSON LIST from the cache copies these bytes
  // (ListResult::item_json) instead of walking every object by reflection,
  // and the version's watch events carry them (WatchEvent::object_json), so
  // a version is encoded once for LIST and WATCH both. Eager rather than on
  // first use: a LIST after a burst of writes would otherwise pay for every
  // changed object, and with any JSON watcher every version is encoded
  // anyway. The cost is memory: the JSON is held while the version is the
  // current one (a bench pod: ~1 KiB next to its ~0.5 KiB protobuf; figures
  // in docs/performance.md, "LIST from the cache's JSON"). Custom resources
  // (Unstructured) keep none.
  bool keep_json = true;
  // With keep_json, the bound on the bytes of JSON kept by every cache that
  // shares this budget (null: no bound). A version whose JSON does not fit
  // keeps none and is encoded on each read.
  std::shared_ptr<KeptJsonBudget> json_budget;
  // A LIST or WATCH from a revision the cache has not reached waits for it
  // (up to consistent_read_wait) on the request's thread, as kube's watch
  // cache waits (in a goroutine there). At most `limit` such waits run at
  // once in every cache sharing this budget; past it a request for such a
  // revision is answered at once (Too large resource version, kube's
  // answer after its wait; a consistent LIST reads the store instead), so
  // requests for revisions that never come cannot hold every worker of the
  // apiserver. Null: no bound.
  std::shared_ptr<RevisionWaitBudget> revision_waits;
  // Optional exact-match index for watchers (pods: spec.nodeName). Must be a
  // pure function of the object.
  std::function<std::string(const google::protobuf::Message&)> index_func;
};

// The fan-out's bookkeeping (Cacher::BookkeepingForTest).
struct WatchBookkeeping {
  size_t buckets = 0;  // watcher buckets by namespace and by index value
  size_t timers = 0;   // queued timeout and bookmark timers
};

// A live watch; destroying it stops delivery (Close is not called): when
// the destructor returns, the sink is not being called and never will be.
// It may be destroyed on any thread, also inside the sink's own Send or
// Close; elsewhere it waits for a Send in progress, so do not destroy it
// while holding a lock that the sink's Send takes.
class WatchHandle {
 public:
  virtual ~WatchHandle() = default;
};

class Cacher {
 public:
  Cacher(ObjectStore* store, CacherOptions options = {});
  ~Cacher();

  // Starts the initial list and the storage watch on the cache's own
  // threads; returns at once.
  Status Start();
  void Stop();
  // Waits until the initial list is loaded and the storage watch started
  // (false on timeout).
  bool WaitReady(Duration timeout);
  bool ready() const { return ready_.load(); }

  // Every object as of the cache now, or after the consistency rules above.
  StatusOr<ListResult> List(std::string_view ns, int64_t revision,
                            bool consistent, const ListOptions& opts,
                            bool not_older_than = false);
  // The current object at a key from the cache (GET with resourceVersion=0).
  StatusOr<ObjectPtr> Get(std::string_view ns, std::string_view name);

  StatusOr<std::unique_ptr<WatchHandle>> Watch(const WatchOptions& opts,
                                               std::shared_ptr<WatchSink> sink);

  // The revision the cache has caught up to.
  int64_t revision() const { return revision_.load(); }
  size_t num_watchers() const;
  // Test-only: the dispatcher's bookkeeping once it has processed every
  // watch registered and every handle destroyed before the call.
  WatchBookkeeping BookkeepingForTest();

 private:
  ObjectStore* store_;
  CacherOptions options_;
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> revision_{0};
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_CACHER_CACHER_H_
