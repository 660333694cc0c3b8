#include "apiserver/cacher/dispatcher.h"

#include <algorithm>
#include <functional>

#include "apiserver/storage/object_store.h"
#include "base/logging.h"
#include "objects/meta.h"

namespace kplane::apiserver::internal {
namespace {

// Backlog items (initial events, replayed or queued changes) one
// catching-up watcher is served per turn before the others get theirs.
constexpr int kBacklogSlice = 256;
// kube-apiserver's cacher bookmarks a watch with a deadline this long
// before the deadline.
constexpr Duration kPreTimeoutBookmark = seconds(2);
// Sends a thread claims at a time in a parallel round: few enough that the
// threads finish together, enough that claiming costs little.
constexpr size_t kSendRun = 8;

// The watcher (Dispatcher::Watcher*) whose sink this thread is calling,
// holding that watcher's mutex: a handle of it destroyed from inside the
// call must not take the mutex again.
thread_local const void* t_in_sink = nullptr;

class InSink {
 public:
  explicit InSink(const void* w) : prev_(t_in_sink) { t_in_sink = w; }
  ~InSink() { t_in_sink = prev_; }
  InSink(const InSink&) = delete;
  InSink& operator=(const InSink&) = delete;

 private:
  const void* prev_;
};

}  // namespace

struct Dispatcher::Watcher {
  uint64_t id = 0;
  WatchOptions opts;
  std::shared_ptr<WatchSink> sink;
  // Held while the sink is called, so that a handle destroyed on another
  // thread waits for an ongoing Send and no Send follows.
  Mutex mu;
  std::atomic<bool> cancelled{false};

  // Dispatch thread only.
  bool closed = false;
  Status fail;
  int64_t start_revision = 0;
  TimePoint start_time;
  bool has_deadline = false;
  TimePoint deadline;
  bool has_bookmark = false;
  TimePoint next_bookmark;
  bool catching_up = false;
  bool wake_armed = false;  // the sink will push a kWake
  std::shared_ptr<const std::vector<StoreEntryPtr>> snapshot;
  size_t snapshot_pos = 0;
  int64_t snapshot_revision = 0;
  bool end_bookmark = false;
  // The window's events after the revision a watch resumes from, sent
  // before `pending`. Like the snapshot they are shared with the cache and
  // count toward neither max_pending bound (kube's cacheWatcher replays
  // this interval outside its bounded input channel); each is let go once
  // sent.
  std::vector<CacheEventPtr> replay;
  size_t replay_pos = 0;
  // Changes that arrived while the watcher could not take them.
  std::deque<CacheEventPtr> pending;
  size_t pending_bytes = 0;  // sum of pending's CacheEvent::bytes
  Bucket* bucket = nullptr;
  size_t bucket_pos = 0;
  size_t timers = 0;  // its entries in timers_

  bool HasBacklog() const {
    return snapshot || end_bookmark || replay_pos < replay.size() ||
           !pending.empty();
  }
};

class Dispatcher::Handle : public WatchHandle {
 public:
  Handle(std::shared_ptr<Dispatcher> d, std::shared_ptr<Watcher> w)
      : d_(std::move(d)), w_(std::move(w)) {}
  ~Handle() override {
    if (t_in_sink == w_.get()) {
      // Destroyed from inside its own sink's call: this thread already
      // holds the watcher's lock, and the sink is not called after it.
      w_->cancelled.store(true);
    } else {
      MutexLock l(&w_->mu);
      w_->cancelled.store(true);
    }
    Input in{Input::kRemove};
    in.id = w_->id;
    d_->Push(std::move(in));
  }

 private:
  std::shared_ptr<Dispatcher> d_;
  std::shared_ptr<Watcher> w_;
};

Dispatcher::Dispatcher(Options options)
    : options_(std::move(options)), clock_(options_.clock) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start() {
  MutexLock l(&mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void Dispatcher::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    CHECK(std::this_thread::get_id() != thread_.get_id())
        << "the watch cache was stopped from its own dispatch thread";
    thread_.join();
  }
}

void Dispatcher::Push(Input in) {
  {
    MutexLock l(&mu_);
    inbox_.push_back(std::move(in));
  }
  cv_.notify_one();
}

void Dispatcher::Publish(CacheEventPtr event) {
  Input in{Input::kEvent};
  in.event = std::move(event);
  Push(std::move(in));
}

void Dispatcher::Progress(int64_t revision) {
  Input in{Input::kProgress};
  in.revision = revision;
  Push(std::move(in));
}

void Dispatcher::CloseAll(int64_t list_revision) {
  Input in{Input::kCloseAll};
  in.revision = list_revision;
  Push(std::move(in));
}

std::unique_ptr<WatchHandle> Dispatcher::Register(WatcherInit init) {
  auto w = std::make_shared<Watcher>();
  w->id = next_id_.fetch_add(1);
  w->opts = std::move(init.opts);
  w->sink = std::move(init.sink);
  w->fail = std::move(init.fail);
  w->start_revision = init.start_revision;
  w->start_time = init.start_time;
  w->snapshot = std::move(init.snapshot);
  w->snapshot_revision = init.snapshot_revision;
  w->end_bookmark = init.end_bookmark;
  w->replay = std::move(init.replay);
  Input in{Input::kRegister};
  in.watcher = w;
  {
    MutexLock l(&mu_);
    // After Stop nothing would ever close the watcher.
    if (stopping_) return nullptr;
    num_watchers_.fetch_add(1);
    if (options_.watchers) options_.watchers->Inc();
    inbox_.push_back(std::move(in));
  }
  cv_.notify_one();
  return std::make_unique<Handle>(shared_from_this(), std::move(w));
}

WatchBookkeeping Dispatcher::BookkeepingForTest() {
  auto answer = std::make_shared<std::promise<WatchBookkeeping>>();
  std::future<WatchBookkeeping> counted = answer->get_future();
  Input in{Input::kBookkeeping};
  in.bookkeeping = std::move(answer);
  {
    MutexLock l(&mu_);
    // Past Stop (or before Start) no turn would answer.
    if (stopping_ || !thread_.joinable()) return {};
    inbox_.push_back(std::move(in));
  }
  cv_.notify_one();
  return counted.get();
}

// ---------------------------------------------------------------------------
// The dispatch thread.

void Dispatcher::Run() {
  MutexLock l(&mu_);
  for (;;) {
    std::vector<Input> batch;
    batch.swap(inbox_);
    const bool stop = stopping_;
    l.Unlock();
    for (Input& in : batch) Process(in);
    FlushRemovals();
    if (stop) {
      for (auto& [id, w] : watchers_) Drop(w.get(), Status::Ok());
      FlushRemovals();
      StopHelpers();
      return;
    }
    const bool more = DrainBacklogs();
    FireTimers();
    FlushRemovals();
    l.Lock();
    if (more || !inbox_.empty() || stopping_) continue;
    auto woken = [this]()
                     REQUIRES(mu_) { return !inbox_.empty() || stopping_; };
    if (timers_.empty()) {
      cv_.wait(l.native(), woken);
    } else {
      clock_->WaitUntil(l.native(), cv_, timers_.front().when, woken);
    }
  }
}

void Dispatcher::Process(Input& in) {
  switch (in.kind) {
    case Input::kEvent:
      Dispatch(in.event);
      break;
    case Input::kProgress:
      dispatched_revision_ = std::max(dispatched_revision_, in.revision);
      break;
    case Input::kRegister: {
      Watcher* w = in.watcher.get();
      AddWatcher(std::move(in.watcher));
      if (!w->fail.ok()) Drop(w, w->fail);
      break;
    }
    case Input::kRemove: {
      auto it = watchers_.find(in.id);
      if (it != watchers_.end()) Remove(it->second.get());
      break;
    }
    case Input::kWake: {
      auto it = watchers_.find(in.id);
      if (it != watchers_.end()) it->second->wake_armed = false;
      break;  // the turn's DrainBacklogs serves it
    }
    case Input::kCloseAll:
      for (auto& [id, w] : watchers_) Drop(w.get(), Status::Ok());
      dispatched_revision_ = in.revision;
      last_bookmark_.reset();
      break;
    case Input::kBookkeeping:
      FlushRemovals();  // the closes before it count
      in.bookkeeping->set_value(
          WatchBookkeeping{.buckets = by_ns_.size() + by_index_.size(),
                           .timers = timers_.size()});
      break;
  }
}

Dispatcher::Bucket* Dispatcher::BucketFor(const Watcher& w) {
  if (options_.has_index && w.opts.index_value) {
    return &by_index_[*w.opts.index_value];
  }
  if (!w.opts.ns.empty()) return &by_ns_[w.opts.ns];
  return &all_;
}

void Dispatcher::EraseBucketOf(const Watcher& w) {
  if (options_.has_index && w.opts.index_value) {
    by_index_.erase(*w.opts.index_value);
  } else if (!w.opts.ns.empty()) {
    by_ns_.erase(w.opts.ns);
  }
}

void Dispatcher::AddWatcher(std::shared_ptr<Watcher> w) {
  Watcher* raw = w.get();
  watchers_[raw->id] = std::move(w);
  raw->bucket = BucketFor(*raw);
  raw->bucket_pos = raw->bucket->members.size();
  raw->bucket->members.push_back(raw);
  if (raw->opts.timeout > Duration(0)) {
    raw->has_deadline = true;
    raw->deadline = raw->start_time + raw->opts.timeout;
    PushTimer(raw, raw->deadline, /*timeout=*/true);
  }
  ScheduleBookmark(raw, raw->start_time);
  if (raw->HasBacklog()) {
    raw->catching_up = true;
    catching_up_.push_back(raw);
  }
}

void Dispatcher::Dispatch(const CacheEventPtr& ev) {
  dispatched_revision_ = std::max(dispatched_revision_, ev->revision);
  if (options_.events_dispatched) options_.events_dispatched->Inc();
  // Deliver() collects the watchers to send to now into round_;
  // FlushRound() sends them all.
  auto visit = [&](const Bucket& b) {
    for (Watcher* w : b.members) Deliver(w, ev);
  };
  visit(all_);
  if (!ev->ns.empty() && !by_ns_.empty()) {
    auto it = by_ns_.find(ev->ns);
    if (it != by_ns_.end()) visit(it->second);
  }
  if (options_.has_index && !by_index_.empty()) {
    auto it = by_index_.find(ev->index_value);
    if (it != by_index_.end()) visit(it->second);
    if (ev->prev && ev->prev_index_value != ev->index_value) {
      it = by_index_.find(ev->prev_index_value);
      if (it != by_index_.end()) visit(it->second);
    }
  }
  FlushRound();
}

void Dispatcher::Deliver(Watcher* w, const CacheEventPtr& ev) {
  // A watch from a revision the cache had not reached yet skips what the
  // client has already seen.
  if (w->closed || ev->revision <= w->start_revision) return;
  if (w->catching_up) {
    Enqueue(w, ev);  // behind its initial events or its unsent queue
    return;
  }
  WatchEventPtr out = Convert(*w, *ev);
  if (!out) return;
  if (!SinkReady(w)) {
    // The client is behind: queue from here on, resume on its wake-up.
    w->catching_up = true;
    catching_up_.push_back(w);
    Enqueue(w, ev);
    return;
  }
  // A watcher sits in one bucket, and Dispatch visits a bucket once: at
  // most one item per watcher per round.
  round_.push_back(SendItem{w, std::move(out)});
}

bool Dispatcher::QueueFull(const Watcher& w, const CacheEvent& ev) const {
  if (options_.max_pending_events != 0 &&
      w.pending.size() >= options_.max_pending_events) {
    return true;
  }
  return options_.max_pending_bytes != 0 && !w.pending.empty() &&
         w.pending_bytes + ev.bytes > options_.max_pending_bytes;
}

void Dispatcher::Enqueue(Watcher* w, const CacheEventPtr& ev) {
  if (QueueFull(*w, *ev)) {
    // Its client may have read since it was paused (the wake-up waits in
    // the inbox behind this burst): judge it on what it takes now.
    int served = 0;
    while (served < kBacklogSlice && SinkReady(w) && DrainOne(w)) ++served;
    if (w->closed) return;
    if (QueueFull(*w, *ev)) {
      if (options_.watchers_terminated) options_.watchers_terminated->Inc();
      Drop(w,
           ResourceExhaustedError(
               "the watcher fell more than " +
               std::to_string(options_.max_pending_events) + " events or " +
               std::to_string(options_.max_pending_bytes) + " bytes behind"));
      return;
    }
  }
  w->pending.push_back(ev);
  w->pending_bytes += ev->bytes;
}

bool Dispatcher::SinkReady(Watcher* w) {
  if (w->closed) return false;
  bool ready;
  {
    MutexLock l(&w->mu);
    if (w->cancelled.load()) return false;
    InSink in_sink(w);
    ready = w->sink->Ready();
    if (!ready && !w->wake_armed) {
      w->wake_armed = true;
      std::weak_ptr<Dispatcher> weak = weak_from_this();
      const uint64_t id = w->id;
      w->sink->NotifyWhenReady([weak, id] {
        if (std::shared_ptr<Dispatcher> d = weak.lock()) {
          Input in{Input::kWake};
          in.id = id;
          d->Push(std::move(in));
        }
      });
    }
  }
  return ready;
}

bool Dispatcher::Matches(const Watcher& w, const google::protobuf::Message& obj,
                         const std::string& ns,
                         const std::string& index_value) const {
  if (!w.opts.ns.empty() && w.opts.ns != ns) return false;
  if (options_.has_index && w.opts.index_value &&
      *w.opts.index_value != index_value) {
    return false;
  }
  return !w.opts.predicate || w.opts.predicate(obj);
}

WatchEventPtr Dispatcher::Convert(const Watcher& w,
                                  const CacheEvent& ev) const {
  switch (ev.type) {
    case WatchEventType::kAdded:
      return Matches(w, *ev.object, ev.ns, ev.index_value) ? ev.event : nullptr;
    case WatchEventType::kDeleted:
      return ev.prev && Matches(w, *ev.prev, ev.ns, ev.prev_index_value)
                 ? ev.event
                 : nullptr;
    case WatchEventType::kModified: {
      bool now = Matches(w, *ev.object, ev.ns, ev.index_value);
      bool before = ev.prev && Matches(w, *ev.prev, ev.ns, ev.prev_index_value);
      if (now && before) return ev.event;
      if (now) {
        if (!ev.as_added) {
          ev.as_added = MakeWatchEvent(
              WatchEventType::kAdded, ev.object, ev.revision,
              /*initial_events_end=*/false, ev.event->object_json);
        }
        return ev.as_added;
      }
      if (before) {
        if (!ev.as_deleted) {
          // The state the watcher knew, at the revision it left the
          // selector (kube-apiserver's cacheWatcher does the same).
          MutableObject last(ev.prev->New());
          last->CopyFrom(*ev.prev);
          objects::SetResourceVersion(
              last.get(), Versioner::ToResourceVersion(ev.revision));
          ev.as_deleted =
              MakeWatchEvent(WatchEventType::kDeleted,
                             ObjectPtr(std::move(last)), ev.revision);
        }
        return ev.as_deleted;
      }
      return nullptr;
    }
    case WatchEventType::kBookmark:
      return nullptr;
  }
  return nullptr;
}

Dispatcher::SendItem::Result Dispatcher::SendToSink(Watcher* w,
                                                    const WatchEventPtr& ev) {
  MutexLock l(&w->mu);
  if (w->cancelled.load()) return SendItem::kCancelled;
  InSink in_sink(w);
  return w->sink->Send(ev) ? SendItem::kSent : SendItem::kRefused;
}

bool Dispatcher::Send(Watcher* w, const WatchEventPtr& ev) {
  if (w->closed) return false;
  return AfterSend(w, SendToSink(w, ev));
}

bool Dispatcher::AfterSend(Watcher* w, SendItem::Result result) {
  switch (result) {
    case SendItem::kSent:
      return true;
    case SendItem::kCancelled:
      Remove(w);
      return false;
    case SendItem::kRefused:
      if (options_.watchers_terminated) options_.watchers_terminated->Inc();
      Drop(w, ResourceExhaustedError(
                  "the watcher did not keep up with the event stream"));
      return false;
  }
  return false;
}

void Dispatcher::FlushRound() {
  if (round_.empty()) return;
  if (options_.send_threads <= 1 ||
      round_.size() < std::max<size_t>(options_.parallel_min_sends, 2)) {
    for (SendItem& item : round_) Send(item.w, item.ev);
    round_.clear();
    return;
  }
  if (helpers_.empty()) {
    uint64_t seen;
    {
      MutexLock l(&pool_mu_);
      seen = pool_round_;
    }
    for (int i = 1; i < options_.send_threads; ++i) {
      helpers_.emplace_back([this, seen] {
        uint64_t round = seen;
        for (;;) {
          SendItem* items;
          size_t n;
          {
            MutexLock l(&pool_mu_);
            pool_cv_.wait(l.native(), [&]() REQUIRES(pool_mu_) {
              return pool_stop_ || pool_round_ != round;
            });
            if (pool_stop_) return;
            round = pool_round_;
            items = pool_items_;
            n = pool_n_;
          }
          SendRuns(items, n);
          {
            MutexLock l(&pool_mu_);
            --pool_busy_;
          }
          done_cv_.notify_one();
        }
      });
    }
  }
  {
    MutexLock l(&pool_mu_);
    pool_items_ = round_.data();
    pool_n_ = round_.size();
    pool_next_.store(0);
    pool_busy_ = static_cast<int>(helpers_.size());
    ++pool_round_;
  }
  pool_cv_.notify_all();
  SendRuns(round_.data(), round_.size());
  {
    // The next change may go to the same watchers: every send of this one
    // must be done first (per-watcher order), and round_ must outlive the
    // helpers' use of it.
    MutexLock l(&pool_mu_);
    done_cv_.wait(l.native(),
                  [&]() REQUIRES(pool_mu_) { return pool_busy_ == 0; });
    pool_items_ = nullptr;
    pool_n_ = 0;
  }
  // What a serial Send does after the sink call, on this thread.
  for (SendItem& item : round_) AfterSend(item.w, item.result);
  round_.clear();
}

void Dispatcher::SendRuns(SendItem* items, size_t n) {
  for (;;) {
    const size_t begin = pool_next_.fetch_add(kSendRun);
    if (begin >= n) return;
    const size_t end = std::min(begin + kSendRun, n);
    for (size_t i = begin; i < end; ++i) {
      items[i].result = SendToSink(items[i].w, items[i].ev);
    }
  }
}

void Dispatcher::StopHelpers() {
  {
    MutexLock l(&pool_mu_);
    pool_stop_ = true;
  }
  pool_cv_.notify_all();
  for (std::thread& t : helpers_) t.join();
  helpers_.clear();
}

void Dispatcher::Remove(Watcher* w) {
  if (w->closed) return;
  w->closed = true;
  removals_.push_back(w);
  num_watchers_.fetch_sub(1);
  if (options_.watchers) options_.watchers->Dec();
}

void Dispatcher::Drop(Watcher* w, const Status& reason) {
  if (w->closed) return;
  Remove(w);
  MutexLock l(&w->mu);
  InSink in_sink(w);
  if (!w->cancelled.load()) w->sink->Close(reason);
  // Let the connection go now rather than when the handle dies.
  w->sink.reset();
}

void Dispatcher::FlushRemovals() {
  if (removals_.empty()) return;
  std::erase_if(catching_up_, [](Watcher* w) { return w->closed; });
  for (Watcher* w : removals_) {
    Bucket* b = w->bucket;
    Watcher* last = b->members.back();
    b->members[w->bucket_pos] = last;
    last->bucket_pos = w->bucket_pos;
    b->members.pop_back();
    if (b->members.empty()) EraseBucketOf(*w);
    live_timers_ -= w->timers;
    watchers_.erase(w->id);  // may free w
  }
  removals_.clear();
  CompactTimers();
}

bool Dispatcher::DrainOne(Watcher* w) {
  if (w->snapshot) {
    if (w->snapshot_pos < w->snapshot->size()) {
      const StoreEntryPtr& e = (*w->snapshot)[w->snapshot_pos++];
      if (Matches(*w, *e->object, e->ns, e->index_value)) {
        if (!e->added) {
          e->added =
              MakeWatchEvent(WatchEventType::kAdded, e->object, e->revision,
                             /*initial_events_end=*/false, e->json);
        }
        Send(w, e->added);
      }
      return true;
    }
    w->snapshot.reset();
  }
  if (w->end_bookmark) {
    w->end_bookmark = false;
    Send(w, MakeWatchEvent(WatchEventType::kBookmark, nullptr,
                           w->snapshot_revision, /*initial_events_end=*/true));
    return true;
  }
  if (w->replay_pos < w->replay.size()) {
    CacheEventPtr ev = std::move(w->replay[w->replay_pos++]);
    if (w->replay_pos == w->replay.size()) {
      w->replay = {};
      w->replay_pos = 0;
    }
    if (WatchEventPtr out = Convert(*w, *ev)) Send(w, out);
    return true;
  }
  if (w->pending.empty()) return false;
  CacheEventPtr ev = std::move(w->pending.front());
  w->pending.pop_front();
  w->pending_bytes -= ev->bytes;
  if (WatchEventPtr out = Convert(*w, *ev)) Send(w, out);
  return true;
}

bool Dispatcher::DrainBacklogs() {
  bool more = false;
  for (Watcher* w : catching_up_) {
    int served = 0;
    bool paused = false;
    while (!w->closed && served < kBacklogSlice) {
      if (w->wake_armed || !SinkReady(w)) {
        paused = true;  // its wake-up brings it back
        break;
      }
      if (!DrainOne(w)) break;
      ++served;
    }
    if (w->closed) continue;
    if (!w->HasBacklog()) {
      w->catching_up = false;
    } else if (!paused) {
      more = true;
    }
  }
  std::erase_if(catching_up_,
                [](Watcher* w) { return w->closed || !w->catching_up; });
  return more;
}

void Dispatcher::ScheduleBookmark(Watcher* w, TimePoint after) {
  w->has_bookmark = false;
  if (!w->opts.allow_bookmarks) return;
  TimePoint next = after + options_.bookmark_interval;
  if (w->has_deadline) {
    TimePoint pre_timeout = w->deadline - kPreTimeoutBookmark;
    if (pre_timeout > after && pre_timeout < next) next = pre_timeout;
    if (next >= w->deadline) return;
  }
  w->has_bookmark = true;
  w->next_bookmark = next;
  PushTimer(w, next, /*timeout=*/false);
}

void Dispatcher::PushTimer(Watcher* w, TimePoint when, bool timeout) {
  timers_.push_back(Timer{when, w->id, timeout});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
  ++w->timers;
  ++live_timers_;
}

void Dispatcher::CompactTimers() {
  // Dead entries more than the live ones: the heap stays within twice the
  // live watchers' timers, and a rebuild (linear) drops at least as many
  // entries as it keeps.
  if (timers_.size() - live_timers_ <= live_timers_) return;
  std::erase_if(timers_, [this](const Timer& t) {
    return !watchers_.contains(t.watcher_id);
  });
  std::make_heap(timers_.begin(), timers_.end(), std::greater<>());
  DCHECK(timers_.size() == live_timers_);
}

WatchEventPtr Dispatcher::Bookmark(int64_t revision) {
  if (!last_bookmark_ || last_bookmark_->revision != revision) {
    last_bookmark_ =
        MakeWatchEvent(WatchEventType::kBookmark, nullptr, revision);
  }
  return last_bookmark_;
}

void Dispatcher::FireTimers() {
  const TimePoint now = clock_->Now();
  while (!timers_.empty() && timers_.front().when <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    const Timer t = timers_.back();
    timers_.pop_back();
    auto it = watchers_.find(t.watcher_id);
    if (it == watchers_.end()) continue;  // a flushed watcher's
    Watcher* w = it->second.get();
    --w->timers;
    --live_timers_;
    if (w->closed) continue;
    if (t.timeout) {
      Drop(w, Status::Ok());
      continue;
    }
    if (!w->has_bookmark || w->next_bookmark != t.when) continue;  // stale
    // "Everything up to R was delivered": only for an R the watcher has not
    // already been told about, and never in the middle of initial events.
    if (!w->catching_up && dispatched_revision_ > w->start_revision) {
      Send(w, Bookmark(dispatched_revision_));
    }
    if (!w->closed) ScheduleBookmark(w, t.when);
  }
}

}  // namespace kplane::apiserver::internal
