#include "apiserver/cacher/cacher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <set>
#include <thread>

#include "apiserver/storage/test_store.h"
#include "objects/codec.h"
#include "objects/meta.h"
#include "storage/forwarding_kv.h"

namespace kplane::apiserver {
namespace {

using objects::corev1::Pod;
using testing::EmbeddedStore;
using testing::MakePod;
using testing::Resource;

// Forwards to the real store; lets a test cut the cacher's storage watch
// (delivering the canceled response a compaction produces), deliver
// responses of its own on it, run something just before the next watch
// starts, or swallow progress notifications.
class InterceptKV : public storage::ForwardingKV {
 public:
  using ForwardingKV::ForwardingKV;

  StatusOr<std::unique_ptr<storage::Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req,
      storage::WatchCallback cb) override {
    std::function<void()> hook;
    {
      MutexLock l(&mu_);
      hook = std::move(before_next_watch_);
      before_next_watch_ = nullptr;
    }
    if (hook) hook();
    auto state = std::make_shared<WatchState>();
    state->cb = std::move(cb);
    {
      MutexLock l(&mu_);
      active_ = state;
      ++watches_started_;
    }
    started_cv_.notify_all();
    auto w = ForwardingKV::StartWatch(
        req, [this, state](const etcdserverpb::WatchResponse& r) {
          MutexLock l(&state->mu);
          if (state->cut) return;
          if (drop_progress_.load() && r.events_size() == 0 && !r.created() &&
              !r.canceled()) {
            return;
          }
          if (hold_events_.load() && r.events_size() > 0) {
            state->held.push_back(r);
            return;
          }
          state->cb(r);
        });
    if (!w.ok()) return w.status();
    return std::unique_ptr<storage::Watch>(
        std::make_unique<HeldWatch>(std::move(*w), state, &unordered_));
  }

  // Delivers `responses` on the active watch, one after another, as its
  // stream would. Like the store's own deliveries, they are done before the
  // watch's destructor returns.
  void Deliver(const std::vector<etcdserverpb::WatchResponse>& responses) {
    std::shared_ptr<WatchState> s;
    {
      MutexLock l(&mu_);
      s = active_;
    }
    ASSERT_NE(s, nullptr);
    MutexLock l(&s->mu);
    for (const etcdserverpb::WatchResponse& r : responses) {
      if (!s->cut) s->cb(r);
    }
  }

  // Ends the active watch as a compaction would.
  void CancelActiveWatch(int64_t compact_revision) {
    std::shared_ptr<WatchState> s;
    {
      MutexLock l(&mu_);
      s = active_;
    }
    ASSERT_NE(s, nullptr);
    MutexLock l(&s->mu);
    s->cut = true;
    etcdserverpb::WatchResponse r;
    r.set_canceled(true);
    r.set_compact_revision(compact_revision);
    r.set_cancel_reason("mvcc: required revision has been compacted");
    s->cb(r);
  }
  void BeforeNextWatch(std::function<void()> f) {
    MutexLock l(&mu_);
    before_next_watch_ = std::move(f);
  }
  // Runs `f` once, on the reader's thread, right after the next read of a
  // key range (a list; not a count) has its answer and before the reader
  // sees it: a write made there races the list.
  void AfterNextList(std::function<void()> f) {
    MutexLock l(&mu_);
    after_next_list_ = std::move(f);
  }
  StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req) override {
    auto resp = ForwardingKV::Range(req);
    if (!req.range_end().empty() && !req.count_only()) {
      std::function<void()> hook;
      {
        MutexLock l(&mu_);
        hook = std::move(after_next_list_);
        after_next_list_ = nullptr;
      }
      if (hook) hook();
    }
    return resp;
  }
  void DropProgress(bool drop) { drop_progress_.store(drop); }
  // Watches started from now on say their progress answers are not ordered
  // with their events (etcd 3.4.23's: storage::Watch::ProgressOrdered).
  void UnorderedProgress() { unordered_.store(true); }
  // Holds the active watch's event responses back (while progress answers
  // pass), as etcd may send a progress answer ahead of queued events, until
  // ReleaseEvents delivers them in order.
  void HoldEvents() { hold_events_.store(true); }
  void ReleaseEvents() {
    std::shared_ptr<WatchState> s;
    {
      MutexLock l(&mu_);
      s = active_;
    }
    ASSERT_NE(s, nullptr);
    MutexLock l(&s->mu);
    hold_events_.store(false);
    for (const etcdserverpb::WatchResponse& r : s->held) {
      if (!s->cut) s->cb(r);
    }
    s->held.clear();
  }
  int watches_started() {
    MutexLock l(&mu_);
    return watches_started_;
  }
  // The cacher starts its n-th storage watch right after its n-th list.
  void WaitWatchesStarted(int n) {
    MutexLock l(&mu_);
    ASSERT_TRUE(started_cv_.wait_for(
        l.native(), std::chrono::seconds(20),
        [&]() REQUIRES(mu_) { return watches_started_ >= n; }));
  }

 private:
  struct WatchState {
    Mutex mu;
    bool cut = false;
    storage::WatchCallback cb;
    std::vector<etcdserverpb::WatchResponse> held;
  };
  // The store's watch, which also waits for a Deliver in progress when it
  // is destroyed (and ends the state's deliveries), so that a test's
  // responses and the store's follow the same rule: none after the
  // destructor.
  class HeldWatch : public storage::Watch {
   public:
    HeldWatch(std::unique_ptr<storage::Watch> inner,
              std::shared_ptr<WatchState> state,
              const std::atomic<bool>* unordered)
        : inner_(std::move(inner)),
          state_(std::move(state)),
          unordered_(unordered->load()) {}
    ~HeldWatch() override {
      {
        MutexLock l(&state_->mu);
        state_->cut = true;
      }
      inner_.reset();  // its thread may be waiting for state_->mu
    }
    void RequestProgress() override { inner_->RequestProgress(); }
    bool ProgressOrdered() const override {
      return !unordered_ && inner_->ProgressOrdered();
    }

   private:
    std::unique_ptr<storage::Watch> inner_;
    std::shared_ptr<WatchState> state_;
    const bool unordered_;
  };
  Mutex mu_;
  std::condition_variable started_cv_;
  std::shared_ptr<WatchState> active_;
  std::function<void()> before_next_watch_;
  std::function<void()> after_next_list_;
  int watches_started_ = 0;
  std::atomic<bool> drop_progress_{false};
  std::atomic<bool> unordered_{false};
  std::atomic<bool> hold_events_{false};
};

// "ADDED a@5", "DELETED b@9", "BOOKMARK@9", "BOOKMARK@9 end".
std::string Describe(const WatchEvent& e) {
  std::string s(WatchEventTypeName(e.type));
  if (e.object) {
    s += " " + objects::Name(*e.object) + "@" +
         objects::ResourceVersion(*e.object);
    EXPECT_EQ(objects::ResourceVersion(*e.object), std::to_string(e.revision));
  } else {
    s += "@" + std::to_string(e.revision);
  }
  if (e.initial_events_end) s += " end";
  return s;
}

class RecordingSink : public WatchSink {
 public:
  // Refuses every event after the first `accept` ones (-1: never).
  explicit RecordingSink(int accept = -1) : accept_(accept) {}

  bool Send(const WatchEventPtr& e) override {
    MutexLock l(&mu_);
    if (accept_ >= 0 && static_cast<int>(events_.size()) >= accept_) {
      return false;
    }
    events_.push_back(e);
    cv_.notify_all();
    return true;
  }
  void Close(const Status& s) override {
    MutexLock l(&mu_);
    ++closes_;
    status_ = s;
    cv_.notify_all();
  }

  // Waits (a bounded real time, as a guard) for `n` events; returns what
  // arrived by then, described.
  std::vector<std::string> WaitFor(size_t n) {
    MutexLock l(&mu_);
    cv_.wait_for(l.native(), std::chrono::seconds(20),
                 [&]() REQUIRES(mu_) { return events_.size() >= n; });
    return DescribeLocked();
  }
  Status WaitClosed() {
    MutexLock l(&mu_);
    EXPECT_TRUE(cv_.wait_for(l.native(), std::chrono::seconds(20),
                             [&]() REQUIRES(mu_) { return closes_ > 0; }))
        << "not closed";
    return status_;
  }
  std::vector<std::string> Events() {
    MutexLock l(&mu_);
    return DescribeLocked();
  }
  std::vector<WatchEventPtr> Raw() {
    MutexLock l(&mu_);
    return events_;
  }
  int closes() {
    MutexLock l(&mu_);
    return closes_;
  }

 private:
  std::vector<std::string> DescribeLocked() {
    std::vector<std::string> out;
    for (const auto& e : events_) out.push_back(Describe(*e));
    return out;
  }
  int accept_;
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<WatchEventPtr> events_;
  int closes_ = 0;
  Status status_;
};

std::string At(int64_t rev) { return "@" + std::to_string(rev); }

class CacherTest : public ::testing::Test {
 protected:
  CacherTest()
      : kv_(db_.server()),
        pods_(&kv_, Resource("", "pods"),
              ObjectStoreOptions{.clock = &clock_, .metrics = &metrics_}) {}
  ~CacherTest() override { cacher_.reset(); }

  void StartCacher(CacherOptions o = {}) {
    if (o.clock == Clock::Real() && !real_clock_) o.clock = &clock_;
    o.metrics = &metrics_;
    cacher_ = std::make_unique<Cacher>(&pods_, o);
    ASSERT_TRUE(cacher_->Start().ok());
    ASSERT_TRUE(cacher_->WaitReady(seconds(20)));
  }

  int64_t Rev(const StatusOr<ObjectPtr>& o) {
    EXPECT_TRUE(o.ok()) << o.status();
    return o.ok() ? *Versioner::Parse(objects::ResourceVersion(**o)) : -1;
  }
  int64_t CreatePod(const std::string& ns, const std::string& name,
                    const std::string& app = "web",
                    const std::string& node = "") {
    Pod pod = MakePod(ns, name, node);
    (*pod.mutable_metadata()->mutable_labels())["app"] = app;
    return Rev(pods_.Create(pod));
  }
  int64_t UpdatePod(const std::string& ns, const std::string& name,
                    const std::function<void(Pod*)>& change) {
    return Rev(pods_.GuaranteedUpdate(
        ns, name, {},
        [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
          auto next = std::make_unique<Pod>(static_cast<const Pod&>(*cur));
          change(next.get());
          return MutableObject(std::move(next));
        }));
  }
  int64_t SetApp(const std::string& ns, const std::string& name,
                 const std::string& app) {
    return UpdatePod(ns, name, [&](Pod* p) {
      (*p->mutable_metadata()->mutable_labels())["app"] = app;
    });
  }
  int64_t DeletePod(const std::string& ns, const std::string& name) {
    return Rev(pods_.Delete(ns, name, {}));
  }
  // Blocks until the cache has seen `rev` (a not-older-than list).
  void WaitCacheAt(int64_t rev) {
    auto r = cacher_->List("", rev, false, {});
    ASSERT_TRUE(r.ok()) << r.status();
  }
  std::unique_ptr<WatchHandle> MustWatch(const WatchOptions& o,
                                         std::shared_ptr<WatchSink> sink) {
    auto h = cacher_->Watch(o, std::move(sink));
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? std::move(*h) : nullptr;
  }
  double Metric(const std::string& line_prefix) {
    std::string text = metrics_.Render();
    size_t pos = text.find(line_prefix + " ");
    if (pos == std::string::npos) return -1;
    return std::stod(text.substr(pos + line_prefix.size() + 1));
  }

  EmbeddedStore db_;
  InterceptKV kv_;
  FakeClock clock_;
  bool real_clock_ = false;
  metrics::Registry metrics_;
  ObjectStore pods_;
  std::unique_ptr<Cacher> cacher_;
};

TEST_F(CacherTest, InitialEventsInKeyOrderThenChanges) {
  int64_t ra = CreatePod("default", "a");
  int64_t rb = CreatePod("default", "b");
  int64_t rc = CreatePod("other", "c");
  StartCacher();
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.ns = "default", .send_initial_events = true}, sink);
  EXPECT_EQ(sink->WaitFor(2),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb)}));
  int64_t r1 = SetApp("default", "a", "db");
  int64_t r2 = DeletePod("default", "b");
  int64_t r3 = CreatePod("default", "d");
  int64_t re = CreatePod("other", "e");
  EXPECT_EQ(sink->WaitFor(5),
            (std::vector<std::string>{
                "ADDED a" + At(ra), "ADDED b" + At(rb), "MODIFIED a" + At(r1),
                "DELETED b" + At(r2), "ADDED d" + At(r3)}));
  // DELETED carries the last state.
  auto raw = sink->Raw();
  EXPECT_EQ(
      static_cast<const Pod&>(*raw[3]->object).spec().containers(0).image(),
      "nginx:1.27");

  auto all = std::make_shared<RecordingSink>();
  WaitCacheAt(re);
  auto h2 = MustWatch({.send_initial_events = true}, all);
  EXPECT_EQ(all->WaitFor(4),
            (std::vector<std::string>{"ADDED a" + At(r1), "ADDED d" + At(r3),
                                      "ADDED c" + At(rc), "ADDED e" + At(re)}));
}

TEST_F(CacherTest, InitialEventsEndWithABookmarkOnlyWhenAllowed) {
  int64_t ra = CreatePod("default", "a");
  StartCacher();
  auto with = std::make_shared<RecordingSink>();
  auto without = std::make_shared<RecordingSink>();
  auto h1 =
      MustWatch({.send_initial_events = true, .allow_bookmarks = true}, with);
  auto h2 = MustWatch({.send_initial_events = true}, without);
  int64_t now = cacher_->revision();
  EXPECT_EQ(with->WaitFor(2),
            (std::vector<std::string>{"ADDED a" + At(ra),
                                      "BOOKMARK" + At(now) + " end"}));
  int64_t rb = CreatePod("default", "b");
  EXPECT_EQ(without->WaitFor(2),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb)}));
}

TEST_F(CacherTest, EventsAfterARevisionFromTheWindow) {
  StartCacher();
  int64_t ra = CreatePod("default", "a");
  int64_t rb = CreatePod("default", "b");
  int64_t rc = SetApp("default", "a", "db");
  WaitCacheAt(rc);
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.revision = ra}, sink);
  int64_t rd = CreatePod("default", "d");
  EXPECT_EQ(sink->WaitFor(3),
            (std::vector<std::string>{"ADDED b" + At(rb), "MODIFIED a" + At(rc),
                                      "ADDED d" + At(rd)}));
  // (A revision ahead of the cache: WatchFromARevisionThatArrivesWhileWaiting
  // and WatchFromAFutureRevisionTimesOutOnTheClock below.) The sink can see
  // d before the cache's revision says so: wait for that.
  WaitCacheAt(rd);
  // revision 0 without initial events: from now on.
  auto fresh = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({}, fresh);
  int64_t re = CreatePod("default", "e");
  EXPECT_EQ(fresh->WaitFor(1), (std::vector<std::string>{"ADDED e" + At(re)}));
}

TEST_F(CacherTest, RevisionBelowTheWindowIsExpired) {
  StartCacher({.window_events = 3});
  std::vector<int64_t> revs;
  for (int i = 0; i < 6; ++i)
    revs.push_back(CreatePod("default", "p" + std::to_string(i)));
  WaitCacheAt(revs.back());
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.revision = revs[0]}, sink);
  Status closed = sink->WaitClosed();
  EXPECT_EQ(closed.code(), StatusCode::kExpired);
  // The window holds p3..p5; resuming needs a revision >= that of p2.
  EXPECT_EQ(closed.message(),
            "too old resource version: " + std::to_string(revs[0]) + " (" +
                std::to_string(revs[2]) + ")");
  EXPECT_TRUE(sink->Events().empty());
  EXPECT_EQ(sink->closes(), 1);

  auto ok = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({.revision = revs[2]}, ok);
  EXPECT_EQ(ok->WaitFor(3).size(), 3u);
  EXPECT_EQ(ok->closes(), 0);
}

// The age bound (kube's eventFreshDuration): a change arriving after the
// older ones passed window_max_age lets them go, down to window_min_events.
TEST_F(CacherTest, WindowLetsGoOfEventsPastItsAge) {
  StartCacher({.window_min_events = 1, .window_max_age = seconds(75)});
  std::vector<int64_t> revs;
  for (int i = 0; i < 3; ++i)
    revs.push_back(CreatePod("default", "p" + std::to_string(i)));
  WaitCacheAt(revs.back());
  clock_.Advance(seconds(76));
  revs.push_back(CreatePod("default", "p3"));
  WaitCacheAt(revs.back());
  // p0..p2 are stale; the floor of one keeps p3 only.
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.revision = revs[0]}, sink);
  Status closed = sink->WaitClosed();
  EXPECT_EQ(closed.code(), StatusCode::kExpired);
  EXPECT_EQ(closed.message(),
            "too old resource version: " + std::to_string(revs[0]) + " (" +
                std::to_string(revs[2]) + ")");
  EXPECT_EQ(Metric("apiserver_watch_cache_window_events{group=\"\","
                   "resource=\"pods\"}"),
            1);
  auto ok = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({.revision = revs[2]}, ok);
  EXPECT_EQ(ok->WaitFor(1),
            (std::vector<std::string>{"ADDED p3" + At(revs[3])}));
}

// A resource that goes quiet after a burst lets the burst go on the
// cache's own tick, without waiting for a next change.
TEST_F(CacherTest, QuietWindowLetsGoOfOldEventsOnItsTick) {
  StartCacher({.window_min_events = 1,
               .window_max_age = seconds(75),
               .window_expire_interval = milliseconds(5)});
  std::vector<int64_t> revs;
  for (int i = 0; i < 3; ++i)
    revs.push_back(CreatePod("default", "p" + std::to_string(i)));
  WaitCacheAt(revs.back());
  const std::string gauge =
      "apiserver_watch_cache_window_events{group=\"\",resource=\"pods\"}";
  EXPECT_EQ(Metric(gauge), 3);
  clock_.Advance(seconds(76));
  // Awaits the tick (every 5 ms of real time), at most 20 s.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Metric(gauge) != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(Metric(gauge), 1);
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.revision = revs[0]}, sink);
  EXPECT_EQ(sink->WaitClosed().code(), StatusCode::kExpired);
}

using PendingWatch = std::future<StatusOr<std::unique_ptr<WatchHandle>>>;

// Blocks until `pending` waits on the fake clock for the cache to reach its
// revision (it and the cache's progress ticker: two waiters), or answered
// without waiting. Returns whether it is waiting.
bool AwaitWaiting(const FakeClock& clock, PendingWatch& pending) {
  while (clock.NumWaiters() < 2) {
    if (pending.wait_for(std::chrono::milliseconds(5)) ==
        std::future_status::ready) {
      return false;
    }
  }
  return true;
}

TEST_F(CacherTest, WatchFromAFutureRevisionTimesOutOnTheClock) {
  StartCacher({.consistent_read_wait = seconds(3)});
  int64_t r0 = CreatePod("default", "a");
  WaitCacheAt(r0);
  auto sink = std::make_shared<RecordingSink>();
  PendingWatch pending = std::async(std::launch::async, [&] {
    return cacher_->Watch({.revision = r0 + 1000}, sink);
  });
  ASSERT_TRUE(AwaitWaiting(clock_, pending))
      << "a watch from a future revision answered without waiting";
  clock_.Advance(seconds(2));
  EXPECT_EQ(pending.wait_for(std::chrono::milliseconds(0)),
            std::future_status::timeout);
  clock_.Advance(seconds(1));
  StatusOr<std::unique_ptr<WatchHandle>> h = pending.get();
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(h.status().message(),
            "Too large resource version: " + std::to_string(r0 + 1000) +
                ", current: " + std::to_string(r0));
  EXPECT_EQ(sink->closes(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 0u);
}

// Waits for a revision run on the request's thread: past the budget's
// bound a request for a revision the cache has not reached is answered at
// once, so requests for revisions that never come cannot hold every worker
// for 3 s each; a consistent LIST then reads the store.
TEST_F(CacherTest, WaitsForARevisionAreBounded) {
  auto budget = std::make_shared<RevisionWaitBudget>(1);
  StartCacher({.consistent_read_wait = seconds(3), .revision_waits = budget});
  int64_t r0 = CreatePod("default", "a");
  WaitCacheAt(r0);
  auto sink = std::make_shared<RecordingSink>();
  PendingWatch pending = std::async(std::launch::async, [&] {
    return cacher_->Watch({.revision = r0 + 1000}, sink);
  });
  ASSERT_TRUE(AwaitWaiting(clock_, pending));
  EXPECT_EQ(budget->in_use(), 1);
  // The second wait would pass the bound: answered without the clock.
  StatusOr<std::unique_ptr<WatchHandle>> second =
      cacher_->Watch({.revision = r0 + 1000}, sink);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kDeadlineExceeded);
  auto list = cacher_->List("default", r0 + 1000, false, {});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Metric("apiserver_watch_cache_revision_waits_refused_total{"
                   "group=\"\",resource=\"pods\"}"),
            2);
  // What the cache has reached needs no wait.
  EXPECT_TRUE(cacher_->Watch({.revision = r0}, sink).ok());
  clock_.Advance(seconds(3));
  EXPECT_FALSE(pending.get().ok());
  EXPECT_EQ(budget->in_use(), 0);
}

TEST_F(CacherTest, WatchFromARevisionThatArrivesWhileWaiting) {
  StartCacher({.consistent_read_wait = seconds(3)});
  int64_t r0 = CreatePod("default", "a");
  WaitCacheAt(r0);
  auto sink = std::make_shared<RecordingSink>();
  PendingWatch pending = std::async(std::launch::async, [&] {
    return cacher_->Watch({.revision = r0 + 2}, sink);
  });
  ASSERT_TRUE(AwaitWaiting(clock_, pending));
  CreatePod("default", "b");
  ASSERT_EQ(CreatePod("default", "c"), r0 + 2);
  // Served without the clock moving: events after r0 + 2 only.
  StatusOr<std::unique_ptr<WatchHandle>> h = pending.get();
  ASSERT_TRUE(h.ok()) << h.status();
  int64_t rd = CreatePod("default", "d");
  EXPECT_EQ(sink->WaitFor(1), (std::vector<std::string>{"ADDED d" + At(rd)}));
}

TEST_F(CacherTest, SelectorTransitionsBecomeAddedAndDeleted) {
  StartCacher();
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.predicate =
                          [](const google::protobuf::Message& m) {
                            return objects::Label(*objects::GetObjectMeta(m),
                                                  "app") == "web";
                          }},
                     sink);
  CreatePod("default", "p", "db");             // not matching: nothing
  int64_t r1 = SetApp("default", "p", "web");  // enters: ADDED
  int64_t r2 = UpdatePod("default", "p", [](Pod* p) {
    p->mutable_spec()->set_nodename("n1");
  });                                         // stays: MODIFIED
  int64_t r3 = SetApp("default", "p", "db");  // leaves: DELETED
  DeletePod("default", "p");                  // not matching: nothing
  int64_t r5 = CreatePod("default", "q", "web");
  EXPECT_EQ(sink->WaitFor(4), (std::vector<std::string>{
                                  "ADDED p" + At(r1), "MODIFIED p" + At(r2),
                                  "DELETED p" + At(r3), "ADDED q" + At(r5)}));
  // The DELETED of a transition carries the state the watcher knew.
  auto raw = sink->Raw();
  EXPECT_EQ(objects::Label(*objects::GetObjectMeta(*raw[2]->object), "app"),
            "web");
}

TEST_F(CacherTest, NamespaceWatchersSeeOnlyTheirNamespace) {
  StartCacher();
  auto a = std::make_shared<RecordingSink>();
  auto all = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.ns = "a"}, a);
  auto h2 = MustWatch({}, all);
  int64_t r1 = CreatePod("a", "x");
  int64_t r2 = CreatePod("b", "y");
  int64_t r3 = CreatePod("a", "z");
  EXPECT_EQ(all->WaitFor(3),
            (std::vector<std::string>{"ADDED x" + At(r1), "ADDED y" + At(r2),
                                      "ADDED z" + At(r3)}));
  EXPECT_EQ(a->WaitFor(2),
            (std::vector<std::string>{"ADDED x" + At(r1), "ADDED z" + At(r3)}));
}

TEST_F(CacherTest, BookmarksOnlyWhenAllowedAndOnTime) {
  StartCacher({.bookmark_interval = seconds(60)});
  int64_t r0 = CreatePod("default", "a");
  WaitCacheAt(r0);
  auto with = std::make_shared<RecordingSink>();
  auto without = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.revision = r0, .allow_bookmarks = true}, with);
  auto h2 = MustWatch({.revision = r0}, without);
  int64_t r1 = CreatePod("default", "b");
  EXPECT_EQ(with->WaitFor(1), (std::vector<std::string>{"ADDED b" + At(r1)}));
  clock_.Advance(seconds(59));
  int64_t r2 = CreatePod("default", "c");
  // No bookmark before the interval has passed.
  EXPECT_EQ(with->WaitFor(2),
            (std::vector<std::string>{"ADDED b" + At(r1), "ADDED c" + At(r2)}));
  clock_.Advance(seconds(1));
  EXPECT_EQ(with->WaitFor(3).back(), "BOOKMARK" + At(r2));
  clock_.Advance(seconds(60));
  EXPECT_EQ(with->WaitFor(4).back(), "BOOKMARK" + At(r2));
  int64_t r3 = CreatePod("default", "d");
  EXPECT_EQ(with->WaitFor(5).back(), "ADDED d" + At(r3));
  EXPECT_EQ(without->WaitFor(3),
            (std::vector<std::string>{"ADDED b" + At(r1), "ADDED c" + At(r2),
                                      "ADDED d" + At(r3)}));
}

TEST_F(CacherTest, NoBookmarkBeforeAnythingNewHappened) {
  StartCacher({.bookmark_interval = seconds(10)});
  int64_t r0 = CreatePod("default", "a");
  WaitCacheAt(r0);
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.revision = r0, .allow_bookmarks = true}, sink);
  clock_.Advance(seconds(10));  // due, but nothing after r0 yet
  int64_t r1 = CreatePod("default", "b");
  EXPECT_EQ(sink->WaitFor(1).front(), "ADDED b" + At(r1));
  clock_.Advance(seconds(10));
  EXPECT_EQ(sink->WaitFor(2)[1], "BOOKMARK" + At(r1));
}

TEST_F(CacherTest, TimeoutClosesAfterAPreTimeoutBookmark) {
  StartCacher();
  int64_t r0 = CreatePod("default", "a");
  WaitCacheAt(r0);
  auto with = std::make_shared<RecordingSink>();
  auto without = std::make_shared<RecordingSink>();
  auto h1 = MustWatch(
      {.revision = r0, .allow_bookmarks = true, .timeout = seconds(10)}, with);
  auto h2 = MustWatch({.revision = r0, .timeout = seconds(10)}, without);
  EXPECT_EQ(cacher_->num_watchers(), 2u);
  int64_t r1 = CreatePod("default", "b");
  EXPECT_EQ(with->WaitFor(1).size(), 1u);
  EXPECT_EQ(without->WaitFor(1).size(), 1u);
  clock_.Advance(seconds(8));
  EXPECT_EQ(with->WaitFor(2), (std::vector<std::string>{"ADDED b" + At(r1),
                                                        "BOOKMARK" + At(r1)}));
  EXPECT_EQ(with->closes(), 0);
  clock_.Advance(seconds(2));
  EXPECT_TRUE(with->WaitClosed().ok());
  EXPECT_TRUE(without->WaitClosed().ok());
  EXPECT_EQ(without->Events(), (std::vector<std::string>{"ADDED b" + At(r1)}));
  EXPECT_EQ(cacher_->num_watchers(), 0u);
}

TEST_F(CacherTest, SlowSinkIsDroppedWithoutAffectingOthers) {
  StartCacher();
  auto slow = std::make_shared<RecordingSink>(/*accept=*/2);
  auto fine = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({}, slow);
  auto h2 = MustWatch({}, fine);
  for (int i = 0; i < 5; ++i) CreatePod("default", "p" + std::to_string(i));
  EXPECT_EQ(fine->WaitFor(5).size(), 5u);
  Status s = slow->WaitClosed();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(slow->Events().size(), 2u);
  EXPECT_EQ(slow->closes(), 1);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
  EXPECT_EQ(
      Metric(
          "apiserver_terminated_watchers_total{group=\"\",resource=\"pods\"}"),
      1);
}

// A sink with a buffer of `credit` events, as an HTTP watch is paced: it
// is Ready while it has credit, refuses (as a full buffer would) a send
// without credit, and Read(n) gives n more and fires the cache's wake-up.
class PacedSink : public RecordingSink {
 public:
  explicit PacedSink(int credit) : credit_(credit) {}
  bool Send(const WatchEventPtr& e) override {
    {
      MutexLock l(&pace_mu_);
      if (credit_ == 0) {
        ++refused_;
        return false;
      }
      --credit_;
    }
    return RecordingSink::Send(e);
  }
  bool Ready() override {
    MutexLock l(&pace_mu_);
    return credit_ > 0;
  }
  void NotifyWhenReady(std::function<void()> wake) override {
    MutexLock l(&pace_mu_);
    wake_ = std::move(wake);
  }
  // The client read `n` events' worth. With `wake` false the wake-up is
  // kept for a later Read, as if it were still on its way to the cache.
  void Read(int n, bool wake = true) {
    std::function<void()> f;
    {
      MutexLock l(&pace_mu_);
      credit_ += n;
      if (!wake) return;
      f = std::move(wake_);
      wake_ = nullptr;
    }
    if (f) f();
  }
  int refused() {
    MutexLock l(&pace_mu_);
    return refused_;
  }

 private:
  Mutex pace_mu_;
  int credit_ GUARDED_BY(pace_mu_);
  int refused_ GUARDED_BY(pace_mu_) = 0;
  std::function<void()> wake_ GUARDED_BY(pace_mu_);
};

TEST_F(CacherTest, InitialReplayLargerThanTheQueueIsPacedToAReader) {
  constexpr int kPods = 300;  // more than one backlog slice (256)
  int64_t last = 0;
  for (int i = 0; i < kPods; ++i) {
    last = CreatePod("default", "p" + std::to_string(1000 + i));
  }
  StartCacher({.max_pending_events = 5});
  WaitCacheAt(last);
  auto sink = std::make_shared<PacedSink>(/*credit=*/10);
  auto h = MustWatch({.send_initial_events = true}, sink);
  size_t seen = sink->WaitFor(10).size();
  ASSERT_EQ(seen, 10u);
  // Changes while the replay is paused queue behind it (within the bound).
  int64_t r1 = CreatePod("default", "z1");
  int64_t r2 = CreatePod("default", "z2");
  WaitCacheAt(r2);
  while (seen < kPods + 2) {
    sink->Read(7);
    std::vector<std::string> got =
        sink->WaitFor(std::min<size_t>(seen + 7, kPods + 2));
    ASSERT_GT(got.size(), seen) << "the replay did not resume";
    seen = got.size();
  }
  std::vector<std::string> events = sink->Events();
  ASSERT_EQ(events.size(), kPods + 2u);
  EXPECT_EQ(events[0].substr(0, 12), "ADDED p1000@");
  EXPECT_EQ(events[kPods - 1].substr(0, 12), "ADDED p1299@");
  EXPECT_EQ(events[kPods], "ADDED z1" + At(r1));
  EXPECT_EQ(events[kPods + 1], "ADDED z2" + At(r2));
  EXPECT_EQ(sink->refused(), 0) << "sent to a sink that was not ready";
  EXPECT_EQ(sink->closes(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
}

// The same for a watch resumed from a revision: the window's events after
// it are replayed as the client reads, and only changes queued behind them
// count toward max_pending_events. The replay is shared with the window,
// as initial events are with the cache (kube replays it outside the
// watcher's bounded input channel: cache_watcher.go processInterval); a
// replay longer than the bound closed the watcher on the next change.
TEST_F(CacherTest, ReplayFromARevisionLargerThanTheQueueIsPacedToAReader) {
  StartCacher({.max_pending_events = 5});
  const int64_t r0 = CreatePod("default", "base");
  constexpr int kPods = 20;
  int64_t last = 0;
  for (int i = 0; i < kPods; ++i) {
    last = CreatePod("default", "p" + std::to_string(100 + i));
  }
  WaitCacheAt(last);
  auto sink = std::make_shared<PacedSink>(/*credit=*/10);
  auto fine = std::make_shared<RecordingSink>();
  // `fine` sits after `sink` in their bucket: once it has a change, `sink`
  // has been handed it too.
  auto h1 = MustWatch({.revision = r0}, sink);
  auto h2 = MustWatch({}, fine);
  size_t seen = sink->WaitFor(10).size();
  ASSERT_EQ(seen, 10u);
  // A change while the replay is paused (10 events to go) queues behind it.
  const int64_t rz = CreatePod("default", "z");
  ASSERT_EQ(fine->WaitFor(1).size(), 1u);
  ASSERT_EQ(sink->closes(), 0) << sink->WaitClosed();
  while (seen < kPods + 1) {
    sink->Read(7);
    std::vector<std::string> got =
        sink->WaitFor(std::min<size_t>(seen + 7, kPods + 1));
    ASSERT_GT(got.size(), seen) << "the replay did not resume";
    seen = got.size();
  }
  std::vector<std::string> events = sink->Events();
  ASSERT_EQ(events.size(), kPods + 1u);
  EXPECT_EQ(events[0].substr(0, 11), "ADDED p100@");
  EXPECT_EQ(events[kPods - 1].substr(0, 11), "ADDED p119@");
  EXPECT_EQ(events[kPods], "ADDED z" + At(rz));
  EXPECT_EQ(sink->refused(), 0) << "sent to a sink that was not ready";
  EXPECT_EQ(sink->closes(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 2u);
}

TEST_F(CacherTest, WatcherThatStopsReadingIsClosedPastMaxPending) {
  StartCacher({.max_pending_events = 5});
  auto stuck = std::make_shared<PacedSink>(/*credit=*/2);
  auto fine = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({}, stuck);
  auto h2 = MustWatch({}, fine);
  // 2 delivered, 5 queued, the 8th passes the bound.
  for (int i = 0; i < 8; ++i) CreatePod("default", "p" + std::to_string(i));
  EXPECT_EQ(fine->WaitFor(8).size(), 8u);
  Status s = stuck->WaitClosed();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(stuck->Events().size(), 2u);
  EXPECT_EQ(stuck->refused(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
  EXPECT_EQ(
      Metric(
          "apiserver_terminated_watchers_total{group=\"\",resource=\"pods\"}"),
      1);
}

// A pod whose stored value is a little over kPadBytes.
constexpr size_t kPadBytes = 10 * 1024;
Pod BigPod(const std::string& name) {
  Pod pod = MakePod("default", name);
  (*pod.mutable_metadata()->mutable_annotations())["pad"] =
      std::string(kPadBytes, 'x');
  return pod;
}

TEST_F(CacherTest, WatcherThatStopsReadingIsClosedPastMaxPendingBytes) {
  // Two queued pods fit, a third does not; the count bound is far away.
  StartCacher({.max_pending_bytes = 2 * kPadBytes + kPadBytes / 2});
  auto stuck = std::make_shared<PacedSink>(/*credit=*/1);
  auto fine = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({}, stuck);
  auto h2 = MustWatch({}, fine);
  // 1 delivered, 2 queued, the 4th passes the bound.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pods_.Create(BigPod("p" + std::to_string(i))).ok());
  }
  EXPECT_EQ(fine->WaitFor(4).size(), 4u);
  Status s = stuck->WaitClosed();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(stuck->Events().size(), 1u);
  EXPECT_EQ(stuck->refused(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
  EXPECT_EQ(
      Metric(
          "apiserver_terminated_watchers_total{group=\"\",resource=\"pods\"}"),
      1);
}

TEST_F(CacherTest, FullQueueIsServedBeforeItsWatcherIsJudged) {
  StartCacher({.max_pending_bytes = 2 * kPadBytes + kPadBytes / 2});
  auto reader = std::make_shared<PacedSink>(/*credit=*/1);
  auto fine = std::make_shared<RecordingSink>();
  // `fine` sits after `reader` in their bucket: once it has an event,
  // `reader` has been handed it too.
  auto h1 = MustWatch({}, reader);
  auto h2 = MustWatch({}, fine);
  std::vector<int64_t> revs;
  for (int i = 0; i < 3; ++i) {
    revs.push_back(Rev(pods_.Create(BigPod("p" + std::to_string(i)))));
  }
  ASSERT_EQ(fine->WaitFor(3).size(), 3u);
  ASSERT_EQ(reader->Events().size(), 1u);  // 2 queued: the queue is full
  // The client reads, but its wake-up has not reached the cache when the
  // next change arrives: the queue is sent, not judged full.
  reader->Read(10, /*wake=*/false);
  revs.push_back(Rev(pods_.Create(BigPod("p3"))));
  ASSERT_EQ(fine->WaitFor(4).size(), 4u);
  reader->Read(0);  // the wake-up arrives
  std::vector<std::string> got = reader->WaitFor(4);
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i], "ADDED p" + std::to_string(i) + At(revs[i]));
  }
  EXPECT_EQ(reader->closes(), 0);
  EXPECT_EQ(reader->refused(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 2u);
}

// Checks order without keeping events: many of these share one counter.
// With a `send_cost`, each Send also spins that long (a socket write's
// worth, so that a round's sends are still running when the next change
// could start) and notes whether two Sends for it overlapped.
class OrderSink : public WatchSink {
 public:
  OrderSink(std::atomic<int64_t>* total, Mutex* mu, std::condition_variable* cv,
            std::chrono::microseconds send_cost = {})
      : total_(total), mu_(mu), cv_(cv), send_cost_(send_cost) {}
  bool Send(const WatchEventPtr& e) override {
    if (in_send_.exchange(true)) overlapped_ = true;
    if (e->revision <= last_) in_order_ = false;
    last_ = e->revision;
    ++count_;
    const auto until = std::chrono::steady_clock::now() + send_cost_;
    while (std::chrono::steady_clock::now() < until) {
    }
    in_send_.store(false);
    total_->fetch_add(1);
    MutexLock l(mu_);
    cv_->notify_all();
    return true;
  }
  void Close(const Status&) override {}
  int64_t last_ = 0;
  int count_ = 0;
  bool in_order_ = true;
  bool overlapped_ = false;

 private:
  std::atomic<bool> in_send_{false};
  std::atomic<int64_t>* total_;
  Mutex* mu_;
  std::condition_variable* cv_;
  const std::chrono::microseconds send_cost_;
};

TEST_F(CacherTest, AThousandWatchersReceiveEveryEventInOrder) {
  StartCacher();
  std::atomic<int64_t> total{0};
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<OrderSink>> sinks;
  std::vector<std::unique_ptr<WatchHandle>> handles;
  for (int i = 0; i < 1000; ++i) {
    auto s = std::make_shared<OrderSink>(&total, &mu, &cv);
    WatchOptions o;
    if (i % 2) o.ns = "default";
    handles.push_back(MustWatch(o, s));
    sinks.push_back(std::move(s));
  }
  constexpr int kEvents = 40;
  for (int i = 0; i < kEvents; ++i) {
    if (i % 4 == 3) {
      SetApp("default", "p" + std::to_string(i - 1), "db");
    } else {
      CreatePod("default", "p" + std::to_string(i));
    }
  }
  {
    MutexLock l(&mu);
    ASSERT_TRUE(cv.wait_for(l.native(), std::chrono::seconds(30), [&] {
      return total.load() >= 1000 * kEvents;
    })) << total.load();
  }
  EXPECT_EQ(total.load(), 1000 * kEvents);
  for (const auto& s : sinks) {
    EXPECT_TRUE(s->in_order_);
    EXPECT_EQ(s->count_, kEvents);
  }
  EXPECT_EQ(
      Metric("apiserver_watch_cache_watchers{group=\"\",resource=\"pods\"}"),
      1000);
  EXPECT_EQ(Metric("apiserver_watch_cache_events_dispatched_total{group=\"\","
                   "resource=\"pods\"}"),
            kEvents);
}

// Watchers come and go by the thousand, each in a namespace or on a node of
// its own, and a client retries a revision the window no longer covers: the
// fan-out's buckets and timers follow the live watchers, not every watcher
// there ever was.
TEST_F(CacherTest, ClosedWatchersLeaveNoBucketsOrTimersBehind) {
  CacherOptions o;
  o.window_events = 3;
  o.index_func = [](const google::protobuf::Message& m) {
    return static_cast<const Pod&>(m).spec().nodename();
  };
  StartCacher(o);
  std::vector<int64_t> revs;
  for (int i = 0; i < 6; ++i) {
    revs.push_back(CreatePod("default", "p" + std::to_string(i)));
  }
  WaitCacheAt(revs.back());
  // Each watcher has a timeout and bookmarks: two timers, an hour away on
  // the fake clock, so none fires during the test.
  auto watch = [](std::string ns, std::optional<std::string> index_value,
                  int64_t revision) {
    return WatchOptions{.ns = std::move(ns),
                        .revision = revision,
                        .allow_bookmarks = true,
                        .timeout = seconds(3600),
                        .index_value = std::move(index_value)};
  };
  const WatchBookkeeping empty = cacher_->BookkeepingForTest();
  EXPECT_EQ(empty.buckets, 0u);
  EXPECT_EQ(empty.timers, 0u);
  auto kept = MustWatch(watch("kept", std::nullopt, 0),
                        std::make_shared<RecordingSink>());
  const WatchBookkeeping before = cacher_->BookkeepingForTest();
  EXPECT_EQ(before.buckets, 1u);
  EXPECT_EQ(before.timers, 2u);

  std::vector<std::unique_ptr<WatchHandle>> handles;
  for (int i = 0; i < 1000; ++i) {
    const std::string n = std::to_string(i);
    handles.push_back(MustWatch(i % 2 == 0 ? watch("ns-" + n, std::nullopt, 0)
                                           : watch("", "node-" + n, 0),
                                std::make_shared<RecordingSink>()));
  }
  const WatchBookkeeping open = cacher_->BookkeepingForTest();
  EXPECT_EQ(open.buckets, before.buckets + 1000);
  EXPECT_EQ(open.timers, before.timers + 2000);
  handles.clear();

  for (int i = 0; i < 1000; ++i) {
    auto expired = std::make_shared<RecordingSink>();
    auto h = MustWatch(
        watch("retry-" + std::to_string(i), std::nullopt, revs[0]), expired);
    ASSERT_EQ(expired->WaitClosed().code(), StatusCode::kExpired);
  }

  const WatchBookkeeping after = cacher_->BookkeepingForTest();
  EXPECT_EQ(after.buckets, before.buckets);
  // Closed watchers' timers go once they outnumber the live ones.
  EXPECT_GE(after.timers, before.timers);
  EXPECT_LE(after.timers, 2 * before.timers);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
  kept.reset();
  const WatchBookkeeping none = cacher_->BookkeepingForTest();
  EXPECT_EQ(none.buckets, empty.buckets);
  EXPECT_EQ(none.timers, empty.timers);
}

TEST_F(CacherTest, ConsistentListCatchesUpThroughAProgressRequest) {
  StartCacher();
  int64_t r1 = CreatePod("default", "a");
  ObjectStore configmaps(&kv_, Resource("", "configmaps"),
                         ObjectStoreOptions{.metrics = &metrics_});
  auto cm = configmaps.Create(testing::MakeConfigMap("default", "x"));
  ASSERT_TRUE(cm.ok());
  int64_t r2 = Rev(cm);
  ASSERT_GT(r2, r1);  // nothing of the pods' resource changed at r2
  auto list = cacher_->List("default", 0, /*consistent=*/true, {});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_GE(list->revision, r2);
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(objects::Name(*list->items[0]), "a");
  EXPECT_EQ(Metric("apiserver_watch_cache_consistent_read_total{group=\"\","
                   "resource=\"pods\",success=\"true\",fallback=\"false\"}"),
            1)
      << metrics_.Render();
}

TEST_F(CacherTest, ConsistentListFallsBackToTheStoreWhenTheCacheLags) {
  real_clock_ = true;
  StartCacher(
      {.consistent_read_wait = milliseconds(200), .clock = Clock::Real()});
  kv_.DropProgress(true);
  CreatePod("default", "a");
  ObjectStore configmaps(&kv_, Resource("", "configmaps"),
                         ObjectStoreOptions{.metrics = &metrics_});
  int64_t r2 = Rev(configmaps.Create(testing::MakeConfigMap("default", "x")));
  auto list = cacher_->List("default", 0, /*consistent=*/true, {});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->revision, r2);  // the store's answer
  EXPECT_EQ(list->items.size(), 1u);
  EXPECT_EQ(Metric("apiserver_watch_cache_consistent_read_total{group=\"\","
                   "resource=\"pods\",success=\"false\",fallback=\"true\"}"),
            1);
  // Not older than a revision the cache cannot reach: 504-style Timeout.
  auto future = cacher_->List("default", r2 + 100, false, {});
  ASSERT_FALSE(future.ok());
  EXPECT_EQ(future.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(future.status().message().rfind(
                "Too large resource version: " + std::to_string(r2 + 100) +
                    ", current: ",
                0),
            0u);
}

// Over a store whose progress answers may precede events still on their
// way (etcd 3.4.23), an answer is no proof that the cache has caught up:
// consistent and not-older-than reads the cache has not reached go to the
// store. A watch from the store's revision still starts on such an answer,
// and the changes before its revision that arrive afterwards are not sent
// to it.
TEST_F(CacherTest, UnorderedProgressAnswersNeverServeStaleReads) {
  real_clock_ = true;
  kv_.UnorderedProgress();
  StartCacher({.consistent_read_wait = seconds(5), .clock = Clock::Real()});
  const int64_t ra = CreatePod("default", "a");
  WaitCacheAt(ra);
  auto early = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.ns = "default", .revision = ra}, early);
  kv_.HoldEvents();
  const int64_t rb = CreatePod("default", "b");
  auto names = [](const StatusOr<ListResult>& l) {
    std::vector<std::string> out;
    if (l.ok()) {
      for (const ObjectPtr& o : l->items) out.push_back(objects::Name(*o));
    }
    return out;
  };
  const std::vector<std::string> both = {"a", "b"};
  EXPECT_EQ(names(cacher_->List("default", 0, /*consistent=*/true, {})), both);
  EXPECT_EQ(names(cacher_->List("default", rb, false, {})), both);

  // From b's revision (a client that listed the store): starts, although
  // the cache has not seen b, on the store's progress answer...
  auto late = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({.ns = "default", .revision = rb}, late);
  // ... which did not move the cache past what it has.
  EXPECT_EQ(names(cacher_->List("default", rb, false, {})), both);
  kv_.ReleaseEvents();
  const int64_t rc = CreatePod("default", "c");
  EXPECT_EQ(late->WaitFor(1), (std::vector<std::string>{"ADDED c" + At(rc)}));
  EXPECT_EQ(early->WaitFor(2),
            (std::vector<std::string>{"ADDED b" + At(rb), "ADDED c" + At(rc)}));
}

// A watch-list over a store whose progress answers are not ordered (etcd
// 3.4.23) cannot wait for a progress answer to prove the cache complete,
// and on a resource nobody writes no event ever moves the cache to the
// store's revision: its initial events are the store's list at its latest
// revision L, its end bookmark is at L, and the changes after L follow
// exactly once: those at or before L that reach the cache later (held
// here) are in the list and not sent again, a write made while the list
// is read comes after it.
TEST_F(CacherTest, WatchListOverUnorderedProgressOnAQuietResource) {
  real_clock_ = true;
  kv_.UnorderedProgress();
  StartCacher({.consistent_read_wait = seconds(1), .clock = Clock::Real()});
  auto seen = std::make_shared<RecordingSink>();
  auto h0 = MustWatch({.ns = "default"}, seen);
  const int64_t ra = CreatePod("default", "a");
  const int64_t rb = CreatePod("default", "b");
  ASSERT_EQ(seen->WaitFor(2).size(), 2u);  // the cache is at b, then quiet
  kv_.HoldEvents();
  const int64_t rc = CreatePod("default", "c");  // the cache has not seen it
  ObjectStore configmaps(&kv_, Resource("", "configmaps"),
                         ObjectStoreOptions{.metrics = &metrics_});
  // Only another resource moves the store's revision.
  const int64_t rx =
      Rev(configmaps.Create(testing::MakeConfigMap("default", "x")));
  int64_t re = 0;
  kv_.AfterNextList([&] { re = CreatePod("default", "e"); });

  auto list = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.ns = "default",
                       .send_initial_events = true,
                       .allow_bookmarks = true,
                       .consistent = true},
                      list);
  ASSERT_NE(h1, nullptr);
  EXPECT_EQ(list->WaitFor(4),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb),
                                      "ADDED c" + At(rc),
                                      "BOOKMARK" + At(rx) + " end"}));
  ASSERT_GT(re, rx);

  // Not older than c, which the cache still has not seen: the store's list
  // at its latest revision, now e's.
  auto from_c = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({.ns = "default",
                       .send_initial_events = true,
                       .revision = rc,
                       .allow_bookmarks = true},
                      from_c);
  ASSERT_NE(h2, nullptr);
  EXPECT_EQ(from_c->WaitFor(5),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb),
                                      "ADDED c" + At(rc), "ADDED e" + At(re),
                                      "BOOKMARK" + At(re) + " end"}));

  kv_.ReleaseEvents();  // c, then e reach the cache
  const int64_t rd = CreatePod("default", "d");
  EXPECT_EQ(seen->WaitFor(5),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb),
                                      "ADDED c" + At(rc), "ADDED e" + At(re),
                                      "ADDED d" + At(rd)}));
  // d is the last change: once it arrived, nothing else can follow.
  EXPECT_EQ(list->WaitFor(6),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb),
                                      "ADDED c" + At(rc),
                                      "BOOKMARK" + At(rx) + " end",
                                      "ADDED e" + At(re), "ADDED d" + At(rd)}));
  EXPECT_EQ(from_c->WaitFor(6),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED b" + At(rb),
                                      "ADDED c" + At(rc), "ADDED e" + At(re),
                                      "BOOKMARK" + At(re) + " end",
                                      "ADDED d" + At(rd)}));
  EXPECT_EQ(list->closes(), 0);
  EXPECT_EQ(from_c->closes(), 0);
}

// The same, when a write made while the store's list is read reaches the
// cache before the watch-list registers: the cache is then at least as new
// as the list, and the watch-list gets the cache's state (with that write)
// and bookmark; it would miss the write if it started after the list's
// revision without it.
TEST_F(CacherTest, WatchListOverUnorderedProgressWhenTheCacheOvertakesTheList) {
  real_clock_ = true;
  kv_.UnorderedProgress();
  StartCacher({.consistent_read_wait = seconds(1), .clock = Clock::Real()});
  auto seen = std::make_shared<RecordingSink>();
  auto h0 = MustWatch({.ns = "default"}, seen);
  const int64_t ra = CreatePod("default", "a");
  ASSERT_EQ(seen->WaitFor(1).size(), 1u);
  ObjectStore configmaps(&kv_, Resource("", "configmaps"),
                         ObjectStoreOptions{.metrics = &metrics_});
  const int64_t rx =
      Rev(configmaps.Create(testing::MakeConfigMap("default", "x")));
  int64_t re = 0;
  kv_.AfterNextList([&] {
    re = CreatePod("default", "e");
    seen->WaitFor(2);  // the cache has applied e
  });

  auto list = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.ns = "default",
                       .send_initial_events = true,
                       .allow_bookmarks = true,
                       .consistent = true},
                      list);
  ASSERT_NE(h1, nullptr);
  ASSERT_GT(re, rx);
  EXPECT_EQ(list->WaitFor(3),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED e" + At(re),
                                      "BOOKMARK" + At(re) + " end"}));
  const int64_t rd = CreatePod("default", "d");
  EXPECT_EQ(list->WaitFor(4),
            (std::vector<std::string>{"ADDED a" + At(ra), "ADDED e" + At(re),
                                      "BOOKMARK" + At(re) + " end",
                                      "ADDED d" + At(rd)}));
}

// NotOlderThan N with a limit is the cache's first page at the revision it
// reached, never the store's at exactly N: after N is compacted it still
// answers (kube never answers 410 to NotOlderThan), while the legacy match
// with a limit reads the store at N and gets 410.
TEST_F(CacherTest, NotOlderThanWithALimitIsServedFromTheCache) {
  const int64_t first = CreatePod("default", "a");
  CreatePod("default", "b");
  const int64_t last = CreatePod("default", "c");
  StartCacher();
  WaitCacheAt(last);
  ASSERT_GT(db_.CompactNow(), first);

  auto page = cacher_->List("default", first, false, ListOptions{.limit = 2},
                            /*not_older_than=*/true);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->items.size(), 2u);
  EXPECT_FALSE(page->continue_token.empty());
  EXPECT_GE(page->revision, last);
  // Its next page comes from the store at the page's revision.
  auto next = cacher_->List(
      "default", 0, false,
      ListOptions{.limit = 2, .continue_token = page->continue_token});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_EQ(next->items.size(), 1u);
  EXPECT_EQ(objects::Name(*next->items[0]), "c");

  auto exact = cacher_->List("default", first, false, ListOptions{.limit = 2});
  EXPECT_EQ(exact.status().code(), StatusCode::kExpired) << exact.status();
}

TEST_F(CacherTest, ListAndGetFromMemory) {
  for (int i = 0; i < 5; ++i) CreatePod("default", "p" + std::to_string(i));
  CreatePod("other", "q");
  StartCacher();
  // resourceVersion=0 ignores the limit.
  auto any = cacher_->List("default", 0, false, ListOptions{.limit = 2});
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->items.size(), 5u);
  EXPECT_TRUE(any->continue_token.empty());
  EXPECT_EQ(any->revision, cacher_->revision());
  auto filtered = cacher_->List(
      "", 0, false,
      ListOptions{.predicate = [](const google::protobuf::Message& m) {
        return objects::Namespace(m) == "other";
      }});
  ASSERT_EQ(filtered->items.size(), 1u);
  // A limit with a consistent read: the first page from the cache, the
  // next one (a continue token) from the store at the page's revision.
  auto page = cacher_->List("default", 0, true, ListOptions{.limit = 2});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 2u);
  ASSERT_FALSE(page->continue_token.empty());
  EXPECT_EQ(page->remaining_items, 3);
  auto next = cacher_->List(
      "default", 0, false, ListOptions{.continue_token = page->continue_token});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->items.size(), 3u);
  EXPECT_EQ(next->revision, page->revision);

  auto got = cacher_->Get("default", "p3");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(objects::Name(**got), "p3");
  EXPECT_EQ(cacher_->Get("default", "nope").status().message(),
            "pods \"nope\" not found");
}

std::vector<std::string> NamesAndVersions(const ListResult& r) {
  std::vector<std::string> out;
  for (const ObjectPtr& o : r.items) {
    out.push_back(objects::Namespace(*o) + "/" + objects::Name(*o) + "@" +
                  objects::ResourceVersion(*o));
  }
  return out;
}

// A consistent LIST with a limit: its first page comes from the cache
// (no store range read) and is what the store answers at the page's
// revision: items, continue token, remaining count; selectors applied
// before the limit; later pages from the store at the token's revision,
// whatever was written in between.
TEST_F(CacherTest, ConsistentFirstPageFromTheCacheIsTheStoresPage) {
  for (int i = 0; i < 7; ++i) {
    CreatePod("default", "p" + std::to_string(i), i % 3 == 0 ? "db" : "web");
  }
  CreatePod("other", "q0", "db");
  CreatePod("zzz", "z0", "web");
  StartCacher();
  const std::string lists =
      "etcd_requests_total{operation=\"list\",type=\"pods\"}";
  const std::string from_cache =
      "apiserver_cache_list_total{group=\"\",resource=\"pods\",index=\"\"}";
  ObjectPredicate db = [](const google::protobuf::Message& m) {
    return objects::Label(*objects::GetObjectMeta(m), "app") == "db";
  };
  int writes = 0;
  for (const std::string ns : {"default", ""}) {
    for (bool selective : {false, true}) {
      for (int64_t limit : {1, 2, 3, 6, 7, 8, 20}) {
        SCOPED_TRACE("ns=" + ns + " selective=" + std::to_string(selective) +
                     " limit=" + std::to_string(limit));
        ListOptions lo{.limit = limit};
        if (selective) lo.predicate = db;
        const double store_lists = Metric(lists);
        ASSERT_GT(store_lists, 0);  // the cache's initial list counted
        const double cache_lists = Metric(from_cache);
        auto page = cacher_->List(ns, 0, /*consistent=*/true, lo);
        ASSERT_TRUE(page.ok()) << page.status();
        EXPECT_EQ(Metric(lists), store_lists) << "the page was read from store";
        EXPECT_EQ(Metric(from_cache), cache_lists + 1);
        ListOptions at = lo;
        at.revision = page->revision;
        auto stored = pods_.List(ns, at);
        ASSERT_TRUE(stored.ok()) << stored.status();
        EXPECT_EQ(NamesAndVersions(*page), NamesAndVersions(*stored));
        EXPECT_EQ(page->continue_token, stored->continue_token);
        EXPECT_EQ(page->remaining_items, stored->remaining_items);
        EXPECT_EQ(page->revision, stored->revision);
        ASSERT_EQ(page->item_json.size(), page->items.size());
        if (!selective) {
          EXPECT_EQ(page->remaining_items.has_value(),
                    !page->continue_token.empty());
        } else {
          EXPECT_FALSE(page->remaining_items.has_value());
        }

        // A write between pages, then the rest from the token: the list
        // at the first page's revision, all of it exactly once.
        CreatePod("default", "w" + std::to_string(writes++), "db");
        std::vector<std::string> all = NamesAndVersions(*page);
        std::string token = page->continue_token;
        while (!token.empty()) {
          ListOptions more = lo;
          more.continue_token = token;
          auto next = cacher_->List(ns, 0, /*consistent=*/false, more);
          ASSERT_TRUE(next.ok()) << next.status();
          EXPECT_EQ(next->revision, page->revision);
          for (const std::string& n : NamesAndVersions(*next)) {
            all.push_back(n);
          }
          token = next->continue_token;
        }
        ListOptions whole{.revision = page->revision};
        if (selective) whole.predicate = db;
        auto expected = pods_.List(ns, whole);
        ASSERT_TRUE(expected.ok());
        EXPECT_EQ(all, NamesAndVersions(*expected));
      }
    }
  }
}

// The JSON the cache keeps with each object (CacherOptions::keep_json) is
// that object version's own encoding: from the initial list, from a
// create, and after an update (never the bytes of the version before).
TEST_F(CacherTest, KeepsEachObjectVersionsJson) {
  CreatePod("default", "listed");
  StartCacher();
  CreatePod("default", "created");
  int64_t rev = SetApp("default", "listed", "changed \"é\"");
  rev = std::max(rev, SetApp("default", "created", "changed too"));
  WaitCacheAt(rev);
  auto list = cacher_->List("default", 0, false, {});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 2u);
  ASSERT_EQ(list->item_json.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(objects::Name(*list->items[i]));
    ASSERT_NE(list->item_json[i], nullptr);
    EXPECT_EQ(*list->item_json[i], objects::EncodeJson(*list->items[i]));
    EXPECT_NE(list->item_json[i]->find("changed"), std::string::npos);
  }
  // A predicate keeps the two vectors in step.
  auto one = cacher_->List(
      "default", 0, false,
      ListOptions{.predicate = [](const google::protobuf::Message& m) {
        return objects::Name(m) == "listed";
      }});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->item_json.size(), 1u);
  EXPECT_EQ(*one->item_json[0], objects::EncodeJson(*one->items[0]));
}

// Watch events share the same bytes: live ADDED and MODIFIED, initial
// events, and a MODIFIED that enters a selector (delivered as ADDED) carry
// their object version's JSON; a DELETED (whose object has the deletion's
// resourceVersion) and a MODIFIED that leaves a selector carry none.
TEST_F(CacherTest, WatchEventsCarryTheirVersionsJson) {
  CreatePod("default", "old");
  StartCacher();
  auto all = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.send_initial_events = true}, all);
  auto web = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({.predicate =
                           [](const google::protobuf::Message& m) {
                             return objects::Label(*objects::GetObjectMeta(m),
                                                   "app") == "web";
                           }},
                      web);
  CreatePod("default", "p", "db");
  SetApp("default", "p", "web");
  SetApp("default", "p", "db");
  DeletePod("default", "p");
  // all: ADDED old (initial), ADDED p, MODIFIED p, MODIFIED p, DELETED p.
  ASSERT_EQ(all->WaitFor(5).size(), 5u);
  ASSERT_EQ(web->WaitFor(2).size(), 2u);  // ADDED p, DELETED p
  auto raw = all->Raw();
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    ASSERT_NE(raw[i]->object_json, nullptr);
    EXPECT_EQ(*raw[i]->object_json, objects::EncodeJson(*raw[i]->object));
  }
  EXPECT_EQ(raw[4]->type, WatchEventType::kDeleted);
  EXPECT_EQ(raw[4]->object_json, nullptr);
  auto transitions = web->Raw();
  EXPECT_EQ(transitions[0]->type, WatchEventType::kAdded);
  ASSERT_NE(transitions[0]->object_json, nullptr);
  EXPECT_EQ(*transitions[0]->object_json,
            objects::EncodeJson(*transitions[0]->object));
  EXPECT_EQ(transitions[1]->type, WatchEventType::kDeleted);
  EXPECT_EQ(transitions[1]->object_json, nullptr);
}

TEST_F(CacherTest, KeepsNoJsonWhenToldNot) {
  CreatePod("default", "a");
  CacherOptions o;
  o.keep_json = false;
  StartCacher(o);
  auto list = cacher_->List("default", 0, false, {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 1u);
  EXPECT_TRUE(list->item_json.empty());
}

// CacherOptions::json_budget bounds the kept JSON: a version whose JSON
// does not fit keeps none (it is encoded on each read), and the bytes count
// until the last holder lets them go.
TEST_F(CacherTest, KeptJsonStaysWithinItsBudget) {
  CreatePod("default", "a");
  // One pod's JSON, measured by a cache with room to spare.
  CacherOptions o;
  o.json_budget = std::make_shared<KeptJsonBudget>(1 << 20);
  StartCacher(o);
  const int64_t one = o.json_budget->used_bytes();
  ASSERT_GT(one, 0);
  cacher_.reset();
  EXPECT_EQ(o.json_budget->used_bytes(), 0);

  // Room for one and a half: "a" is kept, "b" (the same size) is not.
  o.json_budget = std::make_shared<KeptJsonBudget>(one + one / 2);
  StartCacher(o);
  WaitCacheAt(CreatePod("default", "b"));
  auto list = cacher_->List("default", 0, false, {});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 2u);
  ASSERT_EQ(list->item_json.size(), 2u);
  ASSERT_NE(list->item_json[0], nullptr);
  EXPECT_EQ(*list->item_json[0], objects::EncodeJson(*list->items[0]));
  EXPECT_EQ(list->item_json[1], nullptr);
  EXPECT_EQ(o.json_budget->used_bytes(), one);
  EXPECT_EQ(o.json_budget->refused(), 1);
  list = StatusOr<ListResult>(NotFoundError("dropped"));
  cacher_.reset();
  EXPECT_EQ(o.json_budget->used_bytes(), 0);
}

TEST_F(CacherTest, RelistAfterTheStorageWatchIsCompacted) {
  StartCacher();
  CreatePod("default", "a");
  int64_t rb = CreatePod("default", "b");
  WaitCacheAt(rb);
  auto old_watcher = std::make_shared<RecordingSink>();
  auto h = MustWatch({.revision = rb}, old_watcher);
  int64_t rc = CreatePod("default", "c");
  EXPECT_EQ(old_watcher->WaitFor(1),
            (std::vector<std::string>{"ADDED c" + At(rc)}));

  int64_t compacted = db_.CompactNow();
  kv_.CancelActiveWatch(compacted);
  // Every watcher is closed so that it re-watches.
  EXPECT_TRUE(old_watcher->WaitClosed().ok());
  kv_.WaitWatchesStarted(2);
  ASSERT_TRUE(cacher_->WaitReady(seconds(20)));
  WaitCacheAt(rc);
  EXPECT_EQ(Metric("apiserver_watch_cache_initializations_total{group=\"\","
                   "resource=\"pods\"}"),
            2);

  // Resuming from before the relist: 410.
  auto stale = std::make_shared<RecordingSink>();
  auto h2 = MustWatch({.revision = rb}, stale);
  Status s = stale->WaitClosed();
  EXPECT_EQ(s.code(), StatusCode::kExpired);
  EXPECT_EQ(s.message(), "too old resource version: " + std::to_string(rb) +
                             " (" + std::to_string(rc) + ")");
  // From the new list on, events flow again.
  auto fresh = std::make_shared<RecordingSink>();
  auto h3 = MustWatch({.revision = rc}, fresh);
  int64_t rd = CreatePod("default", "d");
  EXPECT_EQ(fresh->WaitFor(1), (std::vector<std::string>{"ADDED d" + At(rd)}));
  auto list = cacher_->List("default", rd, false, {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 4u);
  EXPECT_EQ(kv_.watches_started(), 2);
}

// A change the cache cannot decode is lost to it, so it relists and takes
// nothing more from that storage watch until then. It used to apply the
// watch's later responses: watchers got a revision past the lost change,
// and reads served a state the store never had.
TEST_F(CacherTest, UndecodableChangeStopsTheStorageWatchUntilTheRelist) {
  StartCacher();
  CreatePod("default", "a");
  const int64_t rb = CreatePod("default", "b");
  WaitCacheAt(rb);
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({}, sink);
  // Two responses as the storage watch could carry them: a change of a
  // whose value does not decode, then b's deletion.
  etcdserverpb::WatchResponse bad;
  mvccpb::Event* put = bad.add_events();
  put->set_type(mvccpb::Event::PUT);
  put->mutable_kv()->set_key(pods_.Key("default", "a"));
  put->mutable_kv()->set_value("not a pod");
  put->mutable_kv()->set_mod_revision(rb + 1);
  etcdserverpb::WatchResponse deleted;
  mvccpb::Event* del = deleted.add_events();
  del->set_type(mvccpb::Event::DELETE);
  del->mutable_kv()->set_key(pods_.Key("default", "b"));
  del->mutable_kv()->set_mod_revision(rb + 2);
  kv_.Deliver({bad, deleted});
  // The relist closes every watcher; nothing after the lost change came
  // first.
  EXPECT_TRUE(sink->WaitClosed().ok());
  EXPECT_EQ(sink->Events(), std::vector<std::string>{});
  kv_.WaitWatchesStarted(2);
  ASSERT_TRUE(cacher_->WaitReady(seconds(20)));
  EXPECT_EQ(cacher_->revision(), rb);
  auto list = cacher_->List("default", 0, false, {});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 2u);
}

TEST_F(CacherTest, RelistWhenTheWatchStartsBelowTheCompaction) {
  // Between the initial list and the storage watch, the store moves on and
  // compacts: the watch is born canceled and the cache lists again.
  std::promise<int64_t> hook_ran;
  kv_.BeforeNextWatch([&] {
    CreatePod("default", "y");
    int64_t rz = CreatePod("default", "z");
    db_.CompactNow();
    hook_ran.set_value(rz);
  });
  StartCacher();
  int64_t rz = hook_ran.get_future().get();
  kv_.WaitWatchesStarted(2);
  WaitCacheAt(rz);
  auto list = cacher_->List("default", 0, false, {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 2u);
  EXPECT_EQ(Metric("apiserver_watch_cache_initializations_total{group=\"\","
                   "resource=\"pods\"}"),
            2);
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({}, sink);
  int64_t r = CreatePod("default", "after");
  EXPECT_EQ(sink->WaitFor(1),
            (std::vector<std::string>{"ADDED after" + At(r)}));
}

TEST_F(CacherTest, IndexedWatchersSeeTheirObjectsArriveAndLeave) {
  CacherOptions o;
  o.index_func = [](const google::protobuf::Message& m) {
    return static_cast<const Pod&>(m).spec().nodename();
  };
  StartCacher(o);
  auto n1 = std::make_shared<RecordingSink>();
  auto n2 = std::make_shared<RecordingSink>();
  auto all = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({.index_value = "n1"}, n1);
  auto h2 = MustWatch({.ns = "default", .index_value = "n2"}, n2);
  auto h3 = MustWatch({}, all);
  int64_t r1 = CreatePod("default", "p1", "web", "n1");
  int64_t r2 = CreatePod("default", "p2", "web", "n2");
  int64_t r3 = UpdatePod("default", "p1",
                         [](Pod* p) { p->mutable_spec()->set_nodename("n2"); });
  int64_t r4 = DeletePod("default", "p2");
  CreatePod("other", "p3", "web", "n2");  // n2 but another namespace
  EXPECT_EQ(all->WaitFor(5).size(), 5u);
  EXPECT_EQ(n1->WaitFor(2), (std::vector<std::string>{"ADDED p1" + At(r1),
                                                      "DELETED p1" + At(r3)}));
  EXPECT_EQ(n2->WaitFor(3),
            (std::vector<std::string>{"ADDED p2" + At(r2), "ADDED p1" + At(r3),
                                      "DELETED p2" + At(r4)}));
  auto raw = n1->Raw();
  EXPECT_EQ(static_cast<const Pod&>(*raw[1]->object).spec().nodename(), "n1");
}

// Parallel fan-out (CacherOptions::send_threads): a change for at least
// parallel_min_sends ready watchers is written by several threads.

// Two sending threads meet here: the first Send waits (a bounded real
// time, as a guard) until a Send has run on another thread too.
class Rendezvous {
 public:
  void Arrive() {
    MutexLock l(&mu_);
    threads_.insert(std::this_thread::get_id());
    cv_.notify_all();
    if (waited_) return;
    waited_ = true;
    cv_.wait_for(l.native(), std::chrono::seconds(20),
                 [&]() REQUIRES(mu_) { return threads_.size() >= 2; });
  }
  size_t threads() {
    MutexLock l(&mu_);
    return threads_.size();
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::set<std::thread::id> threads_ GUARDED_BY(mu_);
  bool waited_ GUARDED_BY(mu_) = false;
};

class MeetingSink : public RecordingSink {
 public:
  explicit MeetingSink(Rendezvous* r) : r_(r) {}
  bool Send(const WatchEventPtr& e) override {
    r_->Arrive();
    return RecordingSink::Send(e);
  }

 private:
  Rendezvous* r_;
};

TEST_F(CacherTest, ABigChangeIsSentFromSeveralThreadsAtOnce) {
  StartCacher({.send_threads = 2, .parallel_min_sends = 2});
  Rendezvous meet;
  std::vector<std::shared_ptr<MeetingSink>> sinks;
  std::vector<std::unique_ptr<WatchHandle>> handles;
  // Two runs of sends: one for each thread.
  for (int i = 0; i < 16; ++i) {
    sinks.push_back(std::make_shared<MeetingSink>(&meet));
    handles.push_back(MustWatch({}, sinks.back()));
  }
  int64_t r = CreatePod("default", "a");
  for (auto& s : sinks) {
    EXPECT_EQ(s->WaitFor(1), (std::vector<std::string>{"ADDED a" + At(r)}));
  }
  EXPECT_EQ(meet.threads(), 2u);
}

// Blocks its first Send until Open(): holds the dispatcher in one round
// while the test queues changes behind it.
class GateSink : public RecordingSink {
 public:
  bool Send(const WatchEventPtr& e) override {
    {
      MutexLock l(&gate_mu_);
      gate_cv_.wait_for(l.native(), std::chrono::seconds(20),
                        [&]() REQUIRES(gate_mu_) { return open_; });
    }
    return RecordingSink::Send(e);
  }
  void Open() {
    MutexLock l(&gate_mu_);
    open_ = true;
    gate_cv_.notify_all();
  }

 private:
  Mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool open_ GUARDED_BY(gate_mu_) = false;
};

TEST_F(CacherTest, ParallelSendsKeepEveryWatchersOrder) {
  StartCacher({.send_threads = 4, .parallel_min_sends = 2});
  std::atomic<int64_t> total{0};
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<OrderSink>> sinks;
  std::vector<std::unique_ptr<WatchHandle>> handles;
  auto gate = std::make_shared<GateSink>();
  handles.push_back(MustWatch({}, gate));
  constexpr int kWatchers = 200;
  for (int i = 0; i < kWatchers; ++i) {
    sinks.push_back(std::make_shared<OrderSink>(&total, &mu, &cv,
                                                std::chrono::microseconds(10)));
    handles.push_back(MustWatch({}, sinks.back()));
  }
  // The first change's round waits at the gate while the others queue up;
  // opened, the dispatcher sends them back to back.
  constexpr int64_t kEvents = 100;
  int64_t last = 0;
  for (int i = 0; i < kEvents; ++i) {
    last = CreatePod("default", "p" + std::to_string(i));
  }
  WaitCacheAt(last);
  gate->Open();
  {
    MutexLock l(&mu);
    ASSERT_TRUE(cv.wait_for(l.native(), std::chrono::seconds(60), [&] {
      return total.load() >= kWatchers * kEvents;
    })) << total.load();
  }
  EXPECT_EQ(gate->WaitFor(kEvents).size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(total.load(), kWatchers * kEvents);
  for (const auto& s : sinks) {
    EXPECT_TRUE(s->in_order_);
    EXPECT_FALSE(s->overlapped_);
    EXPECT_EQ(s->count_, kEvents);
  }
  EXPECT_EQ(cacher_->num_watchers(), static_cast<size_t>(kWatchers) + 1);
}

TEST_F(CacherTest, StalledWatchersAreStillCutInParallelRounds) {
  StartCacher(
      {.max_pending_events = 5, .send_threads = 2, .parallel_min_sends = 2});
  std::atomic<int64_t> total{0};
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<OrderSink>> fine;
  std::vector<std::unique_ptr<WatchHandle>> handles;
  for (int i = 0; i < 64; ++i) {
    fine.push_back(std::make_shared<OrderSink>(&total, &mu, &cv));
    handles.push_back(MustWatch({}, fine.back()));
  }
  // Refuses its third event (a full connection buffer): closed after the
  // round that refused it.
  auto refuses = std::make_shared<RecordingSink>(/*accept=*/2);
  handles.push_back(MustWatch({}, refuses));
  // Stops reading after two: its events queue, past 5 it is closed.
  auto stuck = std::make_shared<PacedSink>(/*credit=*/2);
  handles.push_back(MustWatch({}, stuck));
  constexpr int kEvents = 10;
  for (int i = 0; i < kEvents; ++i) {
    CreatePod("default", "p" + std::to_string(i));
  }
  {
    MutexLock l(&mu);
    ASSERT_TRUE(cv.wait_for(l.native(), std::chrono::seconds(30), [&] {
      return total.load() >= 64 * kEvents;
    })) << total.load();
  }
  for (const auto& s : fine) {
    EXPECT_TRUE(s->in_order_);
    EXPECT_EQ(s->count_, kEvents);
  }
  Status s = refuses->WaitClosed();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(refuses->Events().size(), 2u);
  EXPECT_EQ(refuses->closes(), 1);
  s = stuck->WaitClosed();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(stuck->Events().size(), 2u);
  EXPECT_EQ(cacher_->num_watchers(), 64u);
  EXPECT_EQ(
      Metric(
          "apiserver_terminated_watchers_total{group=\"\",resource=\"pods\"}"),
      2);
}

// Destroys its own watch handle inside its second Send.
class SelfCancellingSink : public RecordingSink {
 public:
  bool Send(const WatchEventPtr& e) override {
    bool ok = RecordingSink::Send(e);
    if (Events().size() == 2) handle.reset();
    return ok;
  }
  std::unique_ptr<WatchHandle> handle;
};

TEST_F(CacherTest, HandlesDestroyedInsideTheirSendOnAnySendingThread) {
  StartCacher({.send_threads = 2, .parallel_min_sends = 2});
  std::vector<std::shared_ptr<SelfCancellingSink>> sinks;
  for (int i = 0; i < 64; ++i) {
    sinks.push_back(std::make_shared<SelfCancellingSink>());
    sinks.back()->handle = MustWatch({}, sinks.back());
  }
  auto witness = std::make_shared<RecordingSink>();
  auto h = MustWatch({}, witness);
  CreatePod("default", "a");
  CreatePod("default", "b");
  for (auto& s : sinks) EXPECT_EQ(s->WaitFor(2).size(), 2u);
  // Published after every handle's removal: once the witness has it, the
  // cancelled watchers are gone.
  CreatePod("default", "c");
  EXPECT_EQ(witness->WaitFor(3).size(), 3u);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
  for (auto& s : sinks) {
    EXPECT_EQ(s->Events().size(), 2u);
    EXPECT_EQ(s->closes(), 0);
  }
}

TEST_F(CacherTest, DestroyedHandleStopsDeliveryWithoutClose) {
  StartCacher();
  auto gone = std::make_shared<RecordingSink>();
  auto stays = std::make_shared<RecordingSink>();
  auto h1 = MustWatch({}, gone);
  auto h2 = MustWatch({}, stays);
  h1.reset();
  int64_t r = CreatePod("default", "a");
  EXPECT_EQ(stays->WaitFor(1), (std::vector<std::string>{"ADDED a" + At(r)}));
  int64_t r2 = CreatePod("default", "b");
  EXPECT_EQ(stays->WaitFor(2).back(), "ADDED b" + At(r2));
  EXPECT_TRUE(gone->Events().empty());
  EXPECT_EQ(gone->closes(), 0);
  EXPECT_EQ(cacher_->num_watchers(), 1u);
}

TEST_F(CacherTest, StopClosesEveryWatcher) {
  StartCacher();
  auto sink = std::make_shared<RecordingSink>();
  auto h = MustWatch({.send_initial_events = true}, sink);
  cacher_->Stop();
  EXPECT_TRUE(sink->WaitClosed().ok());
  EXPECT_EQ(sink->closes(), 1);
  auto after = cacher_->Watch({}, std::make_shared<RecordingSink>());
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

TEST(WatchEventTest, EncodesOncePerFormat) {
  WatchEvent e;
  int calls = 0;
  auto encode = [&](const WatchEvent&) {
    ++calls;
    return std::string("{}");
  };
  auto a = e.Encoded("json", encode);
  auto b = e.Encoded("json", encode);
  auto c = e.Encoded("table", encode);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(WatchEventTypeName(WatchEventType::kBookmark), "BOOKMARK");
}

}  // namespace
}  // namespace kplane::apiserver
