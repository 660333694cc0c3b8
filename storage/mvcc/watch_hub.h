// WatchHub: the store's watcher registry and delivery engine (etcd's
// watchableStore). Internal to kplane_mvcc; users see WatchStream.
//
// Every watcher is in exactly one group:
//   synced    seen every event up to the hub revision; the writer hands it
//             new events inline (Notify) by key lookup or range match.
//   unsynced  behind (started in the past, or was parked); the watch thread
//             reads its events from the store's event log in windows of at
//             most kMaxRevisionsPerSync revisions and moves it to synced once
//             it reaches the hub revision.
//   victim    its stream's queue was full. It keeps its next revision
//             (min_rev) and waits until the consumer pops; then it becomes
//             unsynced and re-reads what it missed from the log. Nothing is
//             held in memory for it, so a stalled consumer costs nothing.
//
// Worked example (queue capacity 2, one watcher W on prefix /a, hub rev 10):
//   put /a/1 -> rev 11: W synced, queue [11]
//   put /a/2 -> rev 12: queue [11 12]
//   put /a/3 -> rev 13: queue full -> W victim, min_rev 13
//   put /a/4 -> rev 14: W not synced, not notified
//   consumer pops 11 -> kick -> W unsynced (min_rev 13) -> watch thread reads
//   revs 13..14 from the log, queues one response [13,14] with header 14,
//   W.min_rev = 15 > hub rev 14 -> W synced again.
//
// Locking: hub mutex -> stream mutex. The writer calls Notify under its own
// write lock (so notifications are in revision order), which takes the hub
// mutex; the watch thread reads the log without the hub mutex. Notify hooks
// run after every lock is released.
//
// Thread-safety: all public methods are safe to call concurrently.
#ifndef KPLANE_STORAGE_MVCC_WATCH_HUB_H_
#define KPLANE_STORAGE_MVCC_WATCH_HUB_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "schemas/kv.pb.h"
#include "schemas/rpc.pb.h"
#include "storage/mvcc/watch.h"

namespace kplane::mvcc {

using EventList = std::vector<mvccpb::Event>;

// What the hub needs from the store to catch watchers up.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Appends the events with main revision in [from, to] in revision order,
  // reading from one consistent snapshot. Sets *compacted to the scheduled
  // compaction revision observed after the snapshot was taken; events below
  // it are not read (and may be gone). prev_kv is filled for non-create
  // events when `with_prev` and the previous version still exists.
  virtual Status ReadEvents(int64_t from, int64_t to, bool with_prev,
                            EventList* out, int64_t* compacted) = 0;
  // The scheduled compaction revision.
  virtual int64_t CompactRevision() const = 0;
  // The latest revision written, which readers may already have seen; the
  // hub may not have been told of it yet (Notify runs after the write).
  virtual int64_t CurrentRevision() const = 0;
};

struct Watcher;

struct StreamState {
  explicit StreamState(size_t cap) : capacity(cap) {}

  // Taken after the hub's mutex when both are held.
  mutable Mutex mu;
  std::condition_variable cv;
  std::deque<WatchItem> queue GUARDED_BY(mu);
  const size_t capacity;  // the hub's queue_capacity
  std::function<void()> notify GUARDED_BY(mu);
  bool stopped GUARDED_BY(mu) = false;  // the hub stopped; Next() returns

  // Guarded by the hub mutex (a comment only: the analysis cannot name
  // another object's member here; the hub's *Locked methods touch them).
  std::map<int64_t, std::shared_ptr<Watcher>> watchers;
  int64_t next_id = 0;
  int not_synced = 0;  // watchers of this stream that are unsynced/victims
  bool progress_pending = false;
  bool notify_scheduled = false;
  bool closed = false;

  // Set while the hub waits for this queue to drain (victims or a pending
  // progress); a pop then kicks the watch thread.
  std::atomic<bool> wants_kick{false};

  // Queued items at which a push parks its watcher (a victim): `capacity`,
  // or one per watcher of the stream when it has more. A change that every
  // watcher of a big stream sees (1,000 watchers of one prefix on one gRPC
  // stream) then queues for all of them at once, each item sharing the one
  // event list, instead of parking all but `capacity` and having the watch
  // thread read the change back from the log for the rest (~20 % of the
  // member's CPU at 10,000 watchers on 10 streams). A stream whose consumer
  // does not drain still parks its watchers at this bound, and what the
  // queue holds is bounded in bytes after the drain (the servers' send
  // queues). Needs the hub mutex (watchers).
  size_t Limit() const { return std::max(capacity, watchers.size()); }
};

struct Watcher {
  enum class Group { kSynced, kUnsynced, kVictim, kGone };

  int64_t id = 0;
  std::string key;
  std::string end;           // empty: the single key
  bool to_infinity = false;  // range_end was "\0"
  bool prev_kv = false;
  bool progress_notify = false;
  bool no_put = false;
  bool no_delete = false;
  int64_t min_rev = 0;         // next revision this watcher must receive
  Group group = Group::kGone;  // not in any group yet
  bool sent_since_tick = false;
  StreamState* stream = nullptr;

  bool IsRange() const { return to_infinity || !end.empty(); }
  bool Matches(std::string_view k) const;
};

class WatchHub : public std::enable_shared_from_this<WatchHub> {
 public:
  static constexpr int64_t kMaxRevisionsPerSync = 1000;
  static constexpr size_t kMaxWatchersPerSync = 512;

  struct Options {
    size_t queue_capacity = 128;
    Duration progress_interval = minutes(10);
  };

  WatchHub(Clock* clock, EventSource* source, int64_t current_revision,
           Options options);
  ~WatchHub();

  void Start();
  // Stops the watch thread; later stream calls fail with Unavailable.
  void Stop() EXCLUDES(mu_);

  std::unique_ptr<WatchStream> NewStream() EXCLUDES(mu_);

  // Cheap checks for the writer: build events only when someone listens.
  bool HasSyncedWatchers() const { return num_synced_.load() > 0; }
  bool WantsPrevKv() const { return num_prev_kv_.load() > 0; }
  // Called by the writer, in revision order, after `revision` is durable in
  // RocksDB. `events` may be null when HasSyncedWatchers() was false when
  // the write began, and lack prev_kv when WantsPrevKv() was false: watchers
  // that a watch created meanwhile needs served are moved to unsynced and
  // read the revision from the log instead.
  void Notify(int64_t revision, std::shared_ptr<const EventList> events,
              bool with_prev) EXCLUDES(mu_);

  // Counts for tests and metrics.
  struct Stats {
    size_t synced = 0, unsynced = 0, victims = 0;
  };
  Stats GetStats() const EXCLUDES(mu_);

 private:
  friend class WatchStream;

  using RangeKey = std::tuple<std::string, std::string, bool>;

  StatusOr<int64_t> Watch(StreamState* s,
                          const etcdserverpb::WatchCreateRequest& req)
      EXCLUDES(mu_);
  Status Cancel(StreamState* s, int64_t id) EXCLUDES(mu_);
  size_t WatcherCount(const StreamState* s) const EXCLUDES(mu_);
  void CloseStream(StreamState* s) EXCLUDES(mu_);
  void RequestProgress(StreamState* s) EXCLUDES(mu_);
  void Kick() EXCLUDES(mu_);

  void AddSyncedLocked(Watcher* w) REQUIRES(mu_);
  void RemoveSyncedLocked(Watcher* w) REQUIRES(mu_);
  void SetGroupLocked(Watcher* w, Watcher::Group g) REQUIRES(mu_);
  void RemoveWatcherLocked(Watcher* w) REQUIRES(mu_);
  // Queues an item; false when the queue is full. Records the stream for a
  // notify call after the lock is released.
  bool PushLocked(StreamState* s, WatchItem item) REQUIRES(mu_);
  // Events of `all` that `w` wants after filters; null when none.
  static std::shared_ptr<const EventList> Filter(
      const Watcher& w, const std::shared_ptr<const EventList>& matching);
  bool DeliverLocked(Watcher* w, int64_t revision,
                     std::shared_ptr<const EventList> events) REQUIRES(mu_);
  void AnswerProgressLocked(StreamState* s) REQUIRES(mu_);
  void ProgressTickLocked() REQUIRES(mu_);
  // Takes the streams to notify; call the hooks after unlocking.
  std::vector<std::shared_ptr<StreamState>> TakeNotifiesLocked() REQUIRES(mu_);
  static void RunNotifies(const std::vector<std::shared_ptr<StreamState>>& v);

  void Loop() EXCLUDES(mu_);
  // One catch-up round; returns true when it did something. Releases mu_
  // while it reads the event log, and holds it again on return.
  bool SyncOnce() REQUIRES(mu_);

  Clock* const clock_;
  EventSource* const source_;
  const Options options_;

  mutable Mutex mu_;
  std::condition_variable cv_;  // wakes the watch thread
  bool stopped_ GUARDED_BY(mu_) = false;
  bool kicked_ GUARDED_BY(mu_) = false;
  int64_t hub_rev_ GUARDED_BY(mu_);  // last revision notified
  TimePoint next_progress_tick_ GUARDED_BY(mu_);

  // Synced index.
  std::unordered_map<std::string, std::set<Watcher*>> synced_keys_
      GUARDED_BY(mu_);
  std::map<RangeKey, std::set<Watcher*>> synced_ranges_ GUARDED_BY(mu_);
  std::set<Watcher*> unsynced_ GUARDED_BY(mu_);
  std::set<Watcher*> victims_ GUARDED_BY(mu_);
  std::unordered_map<StreamState*, std::shared_ptr<StreamState>> streams_
      GUARDED_BY(mu_);
  std::set<StreamState*> progress_pending_ GUARDED_BY(mu_);
  std::atomic<size_t> num_synced_{0};
  std::atomic<size_t> num_prev_kv_{0};

  // Streams that got items since the last TakeNotifiesLocked().
  std::vector<std::shared_ptr<StreamState>> to_notify_ GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_WATCH_HUB_H_
