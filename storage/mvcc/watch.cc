#include "storage/mvcc/watch.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include "base/logging.h"
#include "base/mutex.h"
#include "storage/mvcc/watch_hub.h"

namespace kplane::mvcc {

// ---- Watcher ----------------------------------------------------------------

bool Watcher::Matches(std::string_view k) const {
  if (!IsRange()) return k == key;
  if (k < std::string_view(key)) return false;
  return to_infinity || k < std::string_view(end);
}

// ---- WatchStream ------------------------------------------------------------

WatchStream::WatchStream(std::shared_ptr<WatchHub> hub,
                         std::shared_ptr<StreamState> s)
    : hub_(std::move(hub)), state_(std::move(s)) {}

WatchStream::~WatchStream() { hub_->CloseStream(state_.get()); }

StatusOr<int64_t> WatchStream::Watch(
    const etcdserverpb::WatchCreateRequest& req) {
  return hub_->Watch(state_.get(), req);
}

Status WatchStream::Cancel(int64_t watch_id) {
  return hub_->Cancel(state_.get(), watch_id);
}

void WatchStream::RequestProgress() { hub_->RequestProgress(state_.get()); }

etcdserverpb::WatchResponse ToWatchResponse(const WatchItem& item) {
  etcdserverpb::WatchResponse r;
  auto* header = r.mutable_header();
  if (item.revision != 0) header->set_revision(item.revision);
  r.set_watch_id(item.watch_id);
  r.set_compact_revision(item.compact_revision);
  r.set_canceled(item.canceled);
  if (item.events) {
    r.mutable_events()->Reserve(static_cast<int>(item.events->size()));
    for (const mvccpb::Event& ev : *item.events) {
      mvccpb::Event* e = r.add_events();
      *e = ev;
      if (!item.keep_prev_kv) e->clear_prev_kv();
    }
  }
  return r;
}

std::optional<etcdserverpb::WatchResponse> WatchStream::TryPop() {
  WatchItem item;
  bool kick = false;
  {
    MutexLock l(&state_->mu);
    if (state_->queue.empty()) return std::nullopt;
    item = std::move(state_->queue.front());
    state_->queue.pop_front();
    kick = state_->wants_kick.exchange(false);
  }
  if (kick) hub_->Kick();
  return ToWatchResponse(item);
}

size_t WatchStream::PopAll(std::vector<WatchItem>* out) {
  size_t n;
  bool kick;
  {
    MutexLock l(&state_->mu);
    n = state_->queue.size();
    if (n == 0) return 0;
    for (WatchItem& item : state_->queue) out->push_back(std::move(item));
    state_->queue.clear();
    kick = state_->wants_kick.exchange(false);
  }
  if (kick) hub_->Kick();
  return n;
}

std::optional<etcdserverpb::WatchResponse> WatchStream::Next(
    TimePoint deadline) {
  {
    MutexLock l(&state_->mu);
    hub_->clock_->WaitUntil(l.native(), state_->cv, deadline,
                            [&]() REQUIRES(state_->mu) {
                              return !state_->queue.empty() || state_->stopped;
                            });
  }
  return TryPop();
}

void WatchStream::SetNotify(std::function<void()> fn) {
  MutexLock l(&state_->mu);
  state_->notify = std::move(fn);
}

bool WatchStream::Stopped() const {
  MutexLock l(&state_->mu);
  return state_->stopped;
}

size_t WatchStream::QueueSize() const {
  MutexLock l(&state_->mu);
  return state_->queue.size();
}

size_t WatchStream::WatcherCount() const {
  return hub_->WatcherCount(state_.get());
}

// ---- WatchHub ---------------------------------------------------------------

WatchHub::WatchHub(Clock* clock, EventSource* source, int64_t current_revision,
                   Options options)
    : clock_(clock),
      source_(source),
      options_(options),
      hub_rev_(current_revision) {}

WatchHub::~WatchHub() { Stop(); }

void WatchHub::Start() {
  MutexLock l(&mu_);
  CHECK(!thread_.joinable());
  next_progress_tick_ = clock_->Now() + options_.progress_interval;
  thread_ = std::thread([this] { Loop(); });
}

void WatchHub::Stop() {
  // The servers that wait on the hooks, not on cv, learn it from them:
  // without, their clients' watches went silent for good when a snapshot
  // replaced the store under them.
  std::vector<std::function<void()>> notifies;
  {
    MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [ptr, s] : streams_) {
      MutexLock sl(&s->mu);
      s->stopped = true;
      s->cv.notify_all();
      if (s->notify) notifies.push_back(s->notify);
    }
    cv_.notify_all();
  }
  for (auto& notify : notifies) notify();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<WatchStream> WatchHub::NewStream() {
  auto s = std::make_shared<StreamState>(options_.queue_capacity);
  MutexLock l(&mu_);
  if (stopped_) {
    MutexLock sl(&s->mu);  // not shared yet; for the analysis
    s->stopped = true;
    s->closed = true;
  } else {
    streams_[s.get()] = s;
  }
  return std::unique_ptr<WatchStream>(new WatchStream(shared_from_this(), s));
}

WatchHub::Stats WatchHub::GetStats() const {
  MutexLock l(&mu_);
  Stats st;
  st.synced = num_synced_.load();
  st.unsynced = unsynced_.size();
  st.victims = victims_.size();
  return st;
}

void WatchHub::Kick() {
  MutexLock l(&mu_);
  kicked_ = true;
  cv_.notify_all();
}

StatusOr<int64_t> WatchHub::Watch(StreamState* s,
                                  const etcdserverpb::WatchCreateRequest& req) {
  std::vector<std::shared_ptr<StreamState>> notifies;
  int64_t id;
  {
    MutexLock l(&mu_);
    if (stopped_ || s->closed) return UnavailableError("mvcc: store closed");
    const std::string& range_end = req.range_end();
    bool to_infinity = range_end.size() == 1 && range_end[0] == '\0';
    if (!to_infinity && !range_end.empty() && req.key() >= range_end) {
      return InvalidArgumentError("mvcc: watcher range is empty");
    }
    id = req.watch_id();
    if (id == 0) {
      while (s->watchers.count(s->next_id) != 0) ++s->next_id;
      id = s->next_id++;
    } else if (s->watchers.count(id) != 0) {
      return AlreadyExistsError(
          "mvcc: duplicate watch ID provided on the WatchStream");
    }
    int64_t start = req.start_revision();
    int64_t compacted = source_->CompactRevision();
    if (start > 0 && start < compacted) return CompactedError(compacted);

    auto w = std::make_shared<Watcher>();
    w->id = id;
    // An empty key is "\x00", the smallest key (etcd's watch server does
    // the same): alone, it watches that key.
    w->key = req.key().empty() ? std::string(1, '\0') : req.key();
    w->to_infinity = to_infinity;
    if (!to_infinity) w->end = range_end;
    w->prev_kv = req.prev_kv();
    w->progress_notify = req.progress_notify();
    for (int f : req.filters()) {
      if (f == etcdserverpb::WatchCreateRequest::NOPUT) w->no_put = true;
      if (f == etcdserverpb::WatchCreateRequest::NODELETE) w->no_delete = true;
    }
    w->stream = s;
    s->watchers[id] = w;
    if (w->prev_kv) ++num_prev_kv_;
    // "From now" means after the latest revision a reader can have seen,
    // which may be ahead of what the hub has been told of (as etcd, where
    // the revision moves under the watchable store's lock): a client that
    // read revision r and then watches from now must not get r again.
    if (start == 0) start = std::max(hub_rev_, source_->CurrentRevision()) + 1;
    if (start > hub_rev_) {
      w->min_rev = start;
      SetGroupLocked(w.get(), Watcher::Group::kSynced);
    } else {
      w->min_rev = start;
      SetGroupLocked(w.get(), Watcher::Group::kUnsynced);
      kicked_ = true;
      cv_.notify_all();
    }
    notifies = TakeNotifiesLocked();
  }
  RunNotifies(notifies);
  return id;
}

Status WatchHub::Cancel(StreamState* s, int64_t id) {
  std::vector<std::shared_ptr<StreamState>> notifies;
  {
    MutexLock l(&mu_);
    if (stopped_ || s->closed) return UnavailableError("mvcc: store closed");
    auto it = s->watchers.find(id);
    if (it == s->watchers.end()) {
      return NotFoundError("mvcc: watcher does not exist");
    }
    RemoveWatcherLocked(it->second.get());
    {
      MutexLock sl(&s->mu);
      auto& q = s->queue;
      q.erase(std::remove_if(
                  q.begin(), q.end(),
                  [id](const WatchItem& item) { return item.watch_id == id; }),
              q.end());
    }
    AnswerProgressLocked(s);
    notifies = TakeNotifiesLocked();
  }
  RunNotifies(notifies);
  return Status::Ok();
}

size_t WatchHub::WatcherCount(const StreamState* s) const {
  MutexLock l(&mu_);
  return s->watchers.size();
}

void WatchHub::CloseStream(StreamState* s) {
  MutexLock l(&mu_);
  while (!s->watchers.empty()) {
    RemoveWatcherLocked(s->watchers.begin()->second.get());
  }
  s->closed = true;
  progress_pending_.erase(s);
  // Any pending notify for this stream still holds a reference; harmless.
  streams_.erase(s);
}

void WatchHub::RequestProgress(StreamState* s) {
  std::vector<std::shared_ptr<StreamState>> notifies;
  {
    MutexLock l(&mu_);
    if (stopped_ || s->closed) return;
    s->progress_pending = true;
    progress_pending_.insert(s);
    AnswerProgressLocked(s);
    notifies = TakeNotifiesLocked();
  }
  RunNotifies(notifies);
}

void WatchHub::AnswerProgressLocked(StreamState* s) {
  if (!s->progress_pending || s->not_synced > 0) return;
  WatchItem item;
  item.watch_id = kStreamProgressWatchId;
  item.revision = hub_rev_;
  if (PushLocked(s, std::move(item))) {
    s->progress_pending = false;
    progress_pending_.erase(s);
  }
}

void WatchHub::AddSyncedLocked(Watcher* w) {
  if (w->IsRange()) {
    synced_ranges_[RangeKey(w->key, w->end, w->to_infinity)].insert(w);
  } else {
    synced_keys_[w->key].insert(w);
  }
  ++num_synced_;
}

void WatchHub::RemoveSyncedLocked(Watcher* w) {
  if (w->IsRange()) {
    auto it = synced_ranges_.find(RangeKey(w->key, w->end, w->to_infinity));
    CHECK(it != synced_ranges_.end());
    it->second.erase(w);
    if (it->second.empty()) synced_ranges_.erase(it);
  } else {
    auto it = synced_keys_.find(w->key);
    CHECK(it != synced_keys_.end());
    it->second.erase(w);
    if (it->second.empty()) synced_keys_.erase(it);
  }
  --num_synced_;
}

void WatchHub::SetGroupLocked(Watcher* w, Watcher::Group g) {
  using G = Watcher::Group;
  if (w->group == g) return;
  // Leave the old group.
  switch (w->group) {
    case G::kSynced:
      RemoveSyncedLocked(w);
      break;
    case G::kUnsynced:
      unsynced_.erase(w);
      --w->stream->not_synced;
      break;
    case G::kVictim:
      victims_.erase(w);
      --w->stream->not_synced;
      break;
    case G::kGone:
      break;
  }
  w->group = g;
  switch (g) {
    case G::kSynced:
      AddSyncedLocked(w);
      break;
    case G::kUnsynced:
      unsynced_.insert(w);
      ++w->stream->not_synced;
      break;
    case G::kVictim:
      victims_.insert(w);
      ++w->stream->not_synced;
      break;
    case G::kGone:
      break;
  }
}

void WatchHub::RemoveWatcherLocked(Watcher* w) {
  StreamState* s = w->stream;
  SetGroupLocked(w, Watcher::Group::kGone);
  if (w->prev_kv) --num_prev_kv_;
  // Erasing the map entry may free w; picked copies in SyncOnce keep their
  // own reference.
  s->watchers.erase(w->id);
}

bool WatchHub::PushLocked(StreamState* s, WatchItem item) {
  {
    MutexLock l(&s->mu);
    if (s->queue.size() >= s->Limit()) {
      s->wants_kick = true;
      return false;
    }
    s->queue.push_back(std::move(item));
    s->cv.notify_all();
  }
  if (!s->notify_scheduled) {
    auto it = streams_.find(s);
    if (it != streams_.end()) {
      s->notify_scheduled = true;
      to_notify_.push_back(it->second);
    }
  }
  return true;
}

std::vector<std::shared_ptr<StreamState>> WatchHub::TakeNotifiesLocked() {
  std::vector<std::shared_ptr<StreamState>> out;
  out.swap(to_notify_);
  for (auto& s : out) s->notify_scheduled = false;
  return out;
}

void WatchHub::RunNotifies(
    const std::vector<std::shared_ptr<StreamState>>& streams) {
  for (const auto& s : streams) {
    std::function<void()> fn;
    {
      MutexLock l(&s->mu);
      fn = s->notify;
    }
    if (fn) fn();
  }
}

std::shared_ptr<const EventList> WatchHub::Filter(
    const Watcher& w, const std::shared_ptr<const EventList>& matching) {
  if (!w.no_put && !w.no_delete) return matching;
  auto out = std::make_shared<EventList>();
  for (const mvccpb::Event& ev : *matching) {
    bool is_put = ev.type() == mvccpb::Event::PUT;
    if ((is_put && w.no_put) || (!is_put && w.no_delete)) continue;
    out->push_back(ev);
  }
  if (out->empty()) return nullptr;
  return out;
}

bool WatchHub::DeliverLocked(Watcher* w, int64_t revision,
                             std::shared_ptr<const EventList> events) {
  auto filtered = Filter(*w, events);
  if (!filtered) return true;
  WatchItem item;
  item.watch_id = w->id;
  item.revision = revision;
  item.events = std::move(filtered);
  item.keep_prev_kv = w->prev_kv;
  if (!PushLocked(w->stream, std::move(item))) return false;
  w->sent_since_tick = true;
  return true;
}

void WatchHub::Notify(int64_t revision, std::shared_ptr<const EventList> events,
                      bool with_prev) {
  std::vector<std::shared_ptr<StreamState>> notifies;
  {
    MutexLock l(&mu_);
    CHECK_GT(revision, hub_rev_);
    hub_rev_ = revision;
    if (num_synced_.load() > 0 && !events) {
      // A watcher became synced after the writer decided nobody listened:
      // let it read this revision from the log.
      std::vector<Watcher*> due;
      for (auto& [k, ws] : synced_keys_) {
        for (Watcher* w : ws) {
          if (w->min_rev <= revision) due.push_back(w);
        }
      }
      for (auto& [rk, ws] : synced_ranges_) {
        for (Watcher* w : ws) {
          if (w->min_rev <= revision) due.push_back(w);
        }
      }
      for (Watcher* w : due) {
        w->min_rev = revision;
        SetGroupLocked(w, Watcher::Group::kUnsynced);
      }
      if (!due.empty()) {
        kicked_ = true;
        cv_.notify_all();
      }
    } else if (events && !events->empty() && num_synced_.load() > 0) {
      // Collect (watcher, events) first: delivering may move a watcher out
      // of the synced index we iterate.
      std::vector<std::pair<Watcher*, std::shared_ptr<const EventList>>> out;
      auto subset = [&](const std::vector<int>& idx) {
        if (idx.size() == events->size()) return events;
        auto list = std::make_shared<EventList>();
        list->reserve(idx.size());
        for (int i : idx) list->push_back((*events)[i]);
        return std::shared_ptr<const EventList>(std::move(list));
      };
      if (!synced_keys_.empty()) {
        std::map<const std::set<Watcher*>*, std::vector<int>> by_key;
        for (int i = 0; i < static_cast<int>(events->size()); ++i) {
          auto it = synced_keys_.find((*events)[i].kv().key());
          if (it != synced_keys_.end()) by_key[&it->second].push_back(i);
        }
        for (auto& [ws, idx] : by_key) {
          auto list = subset(idx);
          for (Watcher* w : *ws) out.emplace_back(w, list);
        }
      }
      // Linear in the number of distinct ranges (watchers on the same range
      // share one entry), which stays small: one per resource prefix.
      for (auto& [rk, ws] : synced_ranges_) {
        const Watcher* any = *ws.begin();
        std::vector<int> idx;
        for (int i = 0; i < static_cast<int>(events->size()); ++i) {
          if (any->Matches((*events)[i].kv().key())) idx.push_back(i);
        }
        if (idx.empty()) continue;
        auto list = subset(idx);
        for (Watcher* w : ws) out.emplace_back(w, list);
      }
      bool kick = false;
      for (auto& [w, list] : out) {
        // A watcher that asked for a future start revision skips earlier
        // events.
        if (revision < w->min_rev) continue;
        if (w->prev_kv && !with_prev) {
          w->min_rev = revision;
          SetGroupLocked(w, Watcher::Group::kUnsynced);
          kick = true;
          continue;
        }
        if (!DeliverLocked(w, revision, list)) {
          w->min_rev = revision;
          SetGroupLocked(w, Watcher::Group::kVictim);
        }
      }
      if (kick) {
        kicked_ = true;
        cv_.notify_all();
      }
    }
    notifies = TakeNotifiesLocked();
  }
  RunNotifies(notifies);
}

void WatchHub::ProgressTickLocked() {
  for (auto& [ptr, s] : streams_) {
    for (auto& [id, w] : s->watchers) {
      if (!w->progress_notify) continue;
      if (w->group == Watcher::Group::kSynced && !w->sent_since_tick) {
        WatchItem item;
        item.watch_id = w->id;
        item.revision = hub_rev_;
        PushLocked(s.get(), std::move(item));  // best effort
      }
      w->sent_since_tick = false;
    }
  }
}

bool WatchHub::SyncOnce() {
  auto has_room = [](StreamState* s) {
    MutexLock l(&s->mu);
    return s->queue.size() < s->Limit();
  };
  // Victims whose consumer made room go back to catching up.
  for (auto it = victims_.begin(); it != victims_.end();) {
    Watcher* w = *it++;
    if (has_room(w->stream)) SetGroupLocked(w, Watcher::Group::kUnsynced);
  }
  std::vector<std::shared_ptr<Watcher>> candidates;
  for (auto it = unsynced_.begin(); it != unsynced_.end();) {
    Watcher* w = *it++;
    if (w->min_rev > hub_rev_) {
      SetGroupLocked(w, Watcher::Group::kSynced);
      continue;
    }
    bool full;
    {
      MutexLock l(&w->stream->mu);
      full = w->stream->queue.size() >= w->stream->Limit();
      // Set under the stream lock, so the pop that makes room kicks us.
      if (full) w->stream->wants_kick = true;
    }
    if (full) {
      SetGroupLocked(w, Watcher::Group::kVictim);
      continue;
    }
    candidates.push_back(w->stream->watchers.at(w->id));
  }
  if (candidates.empty()) {
    for (StreamState* s : std::vector<StreamState*>(progress_pending_.begin(),
                                                    progress_pending_.end())) {
      AnswerProgressLocked(s);
    }
    return false;
  }
  std::sort(
      candidates.begin(), candidates.end(),
      [](const auto& a, const auto& b) { return a->min_rev < b->min_rev; });
  if (candidates.size() > kMaxWatchersPerSync) {
    candidates.resize(kMaxWatchersPerSync);
  }
  const int64_t from = candidates.front()->min_rev;
  const int64_t to = std::min(hub_rev_, from + kMaxRevisionsPerSync - 1);
  bool with_prev = false;
  for (const auto& w : candidates) with_prev |= w->prev_kv;

  // The caller's scoped lock stays in place; the read runs without mu_.
  mu_.Unlock();
  auto events = std::make_shared<EventList>();
  int64_t compacted = 0;
  Status st =
      source_->ReadEvents(from, to, with_prev, events.get(), &compacted);
  mu_.Lock();
  // A failed read of our own store is corruption or a dying disk.
  CHECK(st.ok()) << "watch catch-up read failed: " << st;
  if (stopped_) return false;
  std::shared_ptr<const EventList> all = events;
  // Watchers on the same range from the same revision get the same events:
  // one shared list, so a server encodes it once for all of them (many
  // watchers of one prefix fall behind together when the consumers lag).
  std::map<std::tuple<int64_t, std::string_view, std::string_view, bool>,
           std::shared_ptr<const EventList>>
      shared;

  for (const auto& wp : candidates) {
    Watcher* w = wp.get();
    if (w->group != Watcher::Group::kUnsynced) continue;  // canceled
    if (w->min_rev < compacted) {
      WatchItem item;
      item.watch_id = w->id;
      item.compact_revision = compacted;
      item.canceled = true;
      if (PushLocked(w->stream, std::move(item))) {
        RemoveWatcherLocked(w);
      } else {
        SetGroupLocked(w, Watcher::Group::kVictim);
      }
      continue;
    }
    if (w->min_rev > to) continue;  // beyond this window; next round
    std::shared_ptr<const EventList>& list =
        shared[{w->min_rev, w->key, w->end, w->to_infinity}];
    if (!list) {
      std::vector<int> idx;
      for (int i = 0; i < static_cast<int>(all->size()); ++i) {
        const mvccpb::KeyValue& kv = (*all)[i].kv();
        if (kv.mod_revision() >= w->min_rev && w->Matches(kv.key())) {
          idx.push_back(i);
        }
      }
      if (idx.size() == all->size()) {
        list = all;
      } else {
        auto sub = std::make_shared<EventList>();
        sub->reserve(idx.size());
        for (int i : idx) sub->push_back((*all)[i]);
        list = std::move(sub);
      }
    }
    if (!list->empty()) {
      if (!DeliverLocked(w, to, list)) {
        SetGroupLocked(w, Watcher::Group::kVictim);
        continue;
      }
    }
    w->min_rev = to + 1;
    if (w->min_rev > hub_rev_) SetGroupLocked(w, Watcher::Group::kSynced);
  }
  for (StreamState* s : std::vector<StreamState*>(progress_pending_.begin(),
                                                  progress_pending_.end())) {
    AnswerProgressLocked(s);
  }
  return true;
}

void WatchHub::Loop() {
  MutexLock lock(&mu_);
  while (!stopped_) {
    kicked_ = false;
    bool worked = SyncOnce();
    auto notifies = TakeNotifiesLocked();
    if (!notifies.empty()) {
      lock.Unlock();
      RunNotifies(notifies);
      lock.Lock();
    }
    if (stopped_) break;
    if (worked) continue;
    if (clock_->Now() >= next_progress_tick_) {
      ProgressTickLocked();
      next_progress_tick_ = clock_->Now() + options_.progress_interval;
      continue;
    }
    clock_->WaitUntil(lock.native(), cv_, next_progress_tick_,
                      [&]() REQUIRES(mu_) { return stopped_ || kicked_; });
  }
}

}  // namespace kplane::mvcc
