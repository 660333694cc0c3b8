// Dispatcher: the watch cache's fan-out (internal to apiserver/cacher). One
// thread hands every change to the watchers that want it, sends their
// initial events and bookmarks, and closes them on timeout, on a refused
// event or on a relist.
//
// Inputs arrive through one queue, processed in the order they were pushed:
// Publish (a change), Progress (the cache reached a revision without a
// change), Register (a new watcher), CloseAll (relist). The cache pushes a
// change and registers a watcher while holding its own lock, so a watcher
// registered from a snapshot at revision R sees exactly the changes after R.
//
// Finding the watchers of a change costs O(candidates), not O(watchers).
// Each watcher sits in exactly one bucket:
//   by index value  if it set WatchOptions::index_value (pods: nodeName),
//   by namespace    else if it watches one namespace,
//   "all"           else.
// A change of pod default/web on node-7 (was on node-3) visits the buckets
// "all", namespace "default", index "node-7" and index "node-3", and
// evaluates predicates only there:
//
//   all:         [w1 (no selector), w2 (app=db)]
//   ns default:  [w3]            ns kube-system: [w4 ... w900]  (skipped)
//   idx node-7:  [w5]            idx node-3: [w6]   idx node-8..: (skipped)
//   -> w1 MODIFIED (shared event), w2 nothing (app=web both times),
//      w3 MODIFIED, w5 ADDED (it starts matching), w6 DELETED (it stops)
//
// A bucket whose last watcher leaves is erased (as kube's watchersBuckets
// are): namespace and node-name churn would otherwise keep one per name
// ever watched.
//
// A watcher that is still sending initial events ("catching up": a
// snapshot, or the window's events after the revision it resumes from)
// queues later changes behind them; catching-up watchers are served in
// slices of a few hundred events per turn, so one large initial list does
// not stall everyone else.
//
// Pacing: a watcher is only sent events while its sink is Ready() (its
// connection's buffer is below its allowance). When it is not, it becomes
// catching up: its later changes queue behind (pointers to the cache's
// shared events), and the sink's wake-up (NotifyWhenReady) resumes it. So
// an initial replay of any size goes out as fast as the client reads it,
// and a client that stops reading costs a small buffer plus its queue; once
// the queue (the changes behind its initial events, which are the cache's
// and not counted) would pass max_pending_events or max_pending_bytes
// (unless it is empty) the watcher is closed with ResourceExhausted (counted in
// watchers_terminated) and the client re-watches from its last revision or
// relists. Before closing it, the dispatcher serves it what its sink takes
// now: its wake-up may still be in the queue behind a burst of changes,
// and a client that has read since is not behind.
//
//   pace 256 KiB, max_pending_bytes 16 MiB, 900 KB events, a client that
//   stopped reading: event 1 is written (buffer 900 KB, not Ready), events
//   2..19 queue (16.2 MB), event 20 would pass 16 MiB: the sink is still
//   not Ready, so the watcher is closed and its queue freed.
//
// Timers (bookmarks every bookmark_interval and 2 s before a timeout, and
// the timeouts) are a min-heap on the injected clock, checked once per turn;
// the thread sleeps on the clock until the earliest one. A closed watcher's
// timers are not looked for in the heap: they are skipped when due, and
// once they outnumber the live watchers' the heap is rebuilt without them,
// so a client retrying an expired revision many times a second does not
// pile up timers due an hour later.
//
// Sending: a change is matched, converted and paced on the dispatch thread
// alone. When `send_threads` > 1 and at least `parallel_min_sends` watchers
// are to be sent one change right away, the writes (a sink's Send: for
// HTTP, one non-blocking sendmsg) are shared out in small runs between the
// dispatch thread and send_threads - 1 helper threads, and the dispatch
// thread waits until every one is done before it takes the next input.
// Each watcher gets a given change from exactly one thread, and the next
// change only after that, so its events stay in order; a refused send
// closes the watcher on the dispatch thread after the round, as a serial
// one does. (kube-apiserver's cacher gets the spread from goroutines: its
// dispatcher only puts the event in each watcher's buffered channel, and
// per watcher one goroutine converts it and the watch handler's encodes
// and flushes it.)
//
//   change for 1,000 ready watchers, send_threads 2:
//     dispatch thread: match + pace all 1,000 -> list of 1,000 sends
//     dispatch thread: sends runs 0-7, 16-23, ...  helper: 8-15, 24-31, ...
//     (whoever is free takes the next run), then both done -> next input
//
// Helpers start on the first round that needs them, so a resource that
// never has that many watchers costs no thread.
//
// Sinks are called one event at a time per watcher: WatchSink::Send from the
// dispatch thread or, during a parallel round, a helper; Close, Ready and
// NotifyWhenReady from the dispatch thread. A sink that refuses an event is
// closed with ResourceExhausted and dropped at once. Destroying a
// WatchHandle (on any thread, also from inside the sink's own Send or
// Close) stops delivery before the destructor returns.
//
// Thread-safety: all public methods may be called from any thread.
#ifndef KPLANE_APISERVER_CACHER_DISPATCHER_H_
#define KPLANE_APISERVER_CACHER_DISPATCHER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "apiserver/cacher/cache_event.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"

namespace kplane::apiserver::internal {

// Everything the dispatcher needs to start one watcher.
struct WatcherInit {
  WatchOptions opts;
  std::shared_ptr<WatchSink> sink;
  TimePoint start_time;  // timers count from here
  // Bookmarks are sent only for revisions newer than this.
  int64_t start_revision = 0;
  // Initial events: the objects of a snapshot (in key order) at
  // `snapshot_revision`, then (end_bookmark) a BOOKMARK ending them.
  std::shared_ptr<const std::vector<StoreEntryPtr>> snapshot;
  int64_t snapshot_revision = 0;
  bool end_bookmark = false;
  // Window events after the requested revision, replayed first.
  std::vector<CacheEventPtr> replay;
  // Not OK: the watch is closed at once with this status (e.g. Expired).
  Status fail;
};

class Dispatcher : public std::enable_shared_from_this<Dispatcher> {
 public:
  struct Options {
    Clock* clock = Clock::Real();
    Duration bookmark_interval = seconds(60);
    bool has_index = false;
    size_t max_pending_events = 0;  // 0: no bound
    size_t max_pending_bytes = 0;   // CacheEvent::bytes; 0: no bound
    // Threads that write one change to its watchers, the dispatch thread
    // included (1: it alone), and the fewest sends worth sharing out.
    int send_threads = 1;
    size_t parallel_min_sends = 64;
    metrics::Counter* events_dispatched = nullptr;
    metrics::Counter* watchers_terminated = nullptr;
    metrics::Gauge* watchers = nullptr;
  };

  explicit Dispatcher(Options options);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void Start() EXCLUDES(mu_);
  // Closes every watcher with Close(OK) and ends the thread. Idempotent.
  void Stop() EXCLUDES(mu_);

  void Publish(CacheEventPtr event) EXCLUDES(mu_);
  void Progress(int64_t revision) EXCLUDES(mu_);
  // Closes every watcher registered so far with Close(OK) (a relist).
  void CloseAll(int64_t list_revision) EXCLUDES(mu_);
  // Null once stopped.
  std::unique_ptr<WatchHandle> Register(WatcherInit init) EXCLUDES(mu_);

  size_t num_watchers() const { return num_watchers_.load(); }
  // Test-only: counted on the dispatch thread after every earlier input
  // (zeros once stopped).
  WatchBookkeeping BookkeepingForTest() EXCLUDES(mu_);

 private:
  struct Watcher;
  struct Bucket {
    std::vector<Watcher*> members;
  };
  struct Input {
    enum Kind {
      kEvent,
      kProgress,
      kRegister,
      kRemove,
      kCloseAll,
      kWake,
      kBookkeeping
    } kind;
    CacheEventPtr event;
    int64_t revision = 0;
    std::shared_ptr<Watcher> watcher;
    uint64_t id = 0;
    std::shared_ptr<std::promise<WatchBookkeeping>> bookkeeping;
  };
  struct Timer {
    TimePoint when;
    uint64_t watcher_id;
    bool timeout;  // else a bookmark
    bool operator>(const Timer& o) const { return when > o.when; }
  };
  class Handle;
  // One send of a parallel round.
  struct SendItem {
    Watcher* w;
    WatchEventPtr ev;
    enum Result { kSent, kRefused, kCancelled } result = kSent;
  };

  void Push(Input in) EXCLUDES(mu_);
  void Run() EXCLUDES(mu_);
  void Process(Input& in);
  void Dispatch(const CacheEventPtr& ev);
  void Deliver(Watcher* w, const CacheEventPtr& ev);
  // The event this watcher sees for `ev`, or null.
  WatchEventPtr Convert(const Watcher& w, const CacheEvent& ev) const;
  bool Matches(const Watcher& w, const google::protobuf::Message& obj,
               const std::string& ns, const std::string& index_value) const;
  // Sends and drops the watcher if the sink refuses. False if it is gone.
  bool Send(Watcher* w, const WatchEventPtr& ev);
  // The sink call of Send, on any of the sending threads; changes no
  // dispatcher state.
  static SendItem::Result SendToSink(Watcher* w, const WatchEventPtr& ev);
  // The rest of Send, on the dispatch thread: removes a cancelled watcher,
  // drops a refusing one. False if it is gone.
  bool AfterSend(Watcher* w, SendItem::Result result);
  // Sends this change's collected round (round_), in parallel when it is
  // large enough, then settles refusals on the dispatch thread.
  void FlushRound();
  // Sends items of the current parallel round until none is left.
  void SendRuns(SendItem* items, size_t n);
  void HelperLoop() EXCLUDES(pool_mu_);
  void StopHelpers() EXCLUDES(pool_mu_);
  void Drop(Watcher* w, const Status& reason);
  void Remove(Watcher* w);
  void FlushRemovals();
  void AddWatcher(std::shared_ptr<Watcher> w);
  // Serves catching-up watchers a slice each; true if any has more.
  bool DrainBacklogs();
  // Sends one backlog item; false when the backlog is empty.
  bool DrainOne(Watcher* w);
  // True if the sink takes events now; otherwise asks it for a wake-up.
  bool SinkReady(Watcher* w);
  // Queues `ev` behind w's backlog; closes w if that is too long.
  void Enqueue(Watcher* w, const CacheEventPtr& ev);
  // True if queueing `ev` would put w's queue past a bound.
  bool QueueFull(const Watcher& w, const CacheEvent& ev) const;
  void FireTimers();
  void PushTimer(Watcher* w, TimePoint when, bool timeout);
  // Rebuilds timers_ without closed watchers' entries once those outnumber
  // the live ones. After FlushRemovals only.
  void CompactTimers();
  void ScheduleBookmark(Watcher* w, TimePoint after);
  WatchEventPtr Bookmark(int64_t revision);
  Bucket* BucketFor(const Watcher& w);
  // Erases the (empty) map entry BucketFor made for w ("all" stays).
  void EraseBucketOf(const Watcher& w);

  Options options_;
  Clock* clock_;

  // The queue. Lock order: the cacher's cache lock -> mu_ (changes are
  // published under it). A watcher's own mutex (held while its sink is
  // called, on the dispatch thread) is never held together with mu_.
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<Input> inbox_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<size_t> num_watchers_{0};

  // Dispatch-thread state.
  std::unordered_map<uint64_t, std::shared_ptr<Watcher>> watchers_;
  Bucket all_;
  std::unordered_map<std::string, Bucket> by_ns_;
  std::unordered_map<std::string, Bucket> by_index_;
  std::vector<Watcher*> catching_up_;
  std::vector<Watcher*> removals_;
  // A min-heap (std::push_heap with std::greater<>).
  std::vector<Timer> timers_;
  // The entries of timers_ whose watcher is still in watchers_ (the sum of
  // their Watcher::timers); the rest are flushed watchers'.
  size_t live_timers_ = 0;
  int64_t dispatched_revision_ = 0;
  WatchEventPtr last_bookmark_;
  // While Dispatch() collects: the watchers to send the change to now.
  bool collecting_ = false;
  std::vector<SendItem> round_;

  // The helpers of parallel rounds. Lock order: pool_mu_ is a leaf (never
  // held with mu_ or a watcher's mutex).
  Mutex pool_mu_;
  std::condition_variable pool_cv_;   // a new round, or stop
  std::condition_variable done_cv_;   // a helper finished its round
  std::vector<std::thread> helpers_;  // dispatch thread only
  uint64_t pool_round_ GUARDED_BY(pool_mu_) = 0;
  SendItem* pool_items_ GUARDED_BY(pool_mu_) = nullptr;
  size_t pool_n_ GUARDED_BY(pool_mu_) = 0;
  int pool_busy_ GUARDED_BY(pool_mu_) = 0;  // helpers still in the round
  bool pool_stop_ GUARDED_BY(pool_mu_) = false;
  std::atomic<size_t> pool_next_{0};  // the next unclaimed item
};

}  // namespace kplane::apiserver::internal

#endif  // KPLANE_APISERVER_CACHER_DISPATCHER_H_
