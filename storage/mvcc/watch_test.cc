// Watch: live and historical delivery, many and slow watchers, compaction
// while watching, cancel, progress.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using etcdserverpb::WatchCreateRequest;
using etcdserverpb::WatchResponse;
using testing::MakeDelete;
using testing::MakePut;

WatchCreateRequest Req(const std::string& key, const std::string& end = "",
                       int64_t start = 0) {
  WatchCreateRequest r;
  r.set_key(key);
  r.set_range_end(end);
  r.set_start_revision(start);
  return r;
}

// Events as "P key=value@rev" / "D key@rev".
std::vector<std::string> Describe(const WatchResponse& r) {
  std::vector<std::string> out;
  for (const auto& ev : r.events()) {
    std::string s = ev.type() == mvccpb::Event::PUT ? "P " : "D ";
    s += ev.kv().key();
    if (ev.type() == mvccpb::Event::PUT) s += "=" + ev.kv().value();
    s += "@" + std::to_string(ev.kv().mod_revision());
    out.push_back(s);
  }
  return out;
}

class MvccWatchTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(size_t capacity = 128) {
    store_.reset();
    store_ = testing::OpenOrDie(dir_.path(), nullptr, [&](Options* o) {
      o->watch_queue_capacity = capacity;
    });
    ASSERT_NE(store_, nullptr);
  }
  int64_t Put(const std::string& k, const std::string& v) {
    auto r = store_->Put(MakePut(k, v));
    EXPECT_TRUE(r.ok()) << r.status();
    return r->header().revision();
  }
  // Waits (on the real clock, up to 10 s) for the next response.
  static WatchResponse Next(WatchStream* s) {
    auto r = s->Next(Clock::Real()->Now() + seconds(10));
    EXPECT_TRUE(r.has_value()) << "no watch response within 10 s";
    return r.value_or(WatchResponse());
  }
  // Collects events of watch `id` until `n` were seen.
  static std::vector<std::string> Collect(WatchStream* s, size_t n,
                                          int64_t id = -2) {
    std::vector<std::string> out;
    while (out.size() < n) {
      auto r = s->Next(Clock::Real()->Now() + seconds(10));
      if (!r) {
        ADD_FAILURE() << "only " << out.size() << " of " << n << " events";
        break;
      }
      if (id != -2 && r->watch_id() != id) continue;
      for (auto& e : Describe(*r)) out.push_back(e);
    }
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(MvccWatchTest, LiveEventsOnKeyAndPrefix) {
  auto s = store_->NewWatchStream();
  auto key_id = s->Watch(Req("/a"));
  auto prefix_id = s->Watch(Req("/p/", "/p0"));
  ASSERT_TRUE(key_id.ok());
  ASSERT_TRUE(prefix_id.ok());
  EXPECT_EQ(*key_id, 0);
  EXPECT_EQ(*prefix_id, 1);
  Put("/a", "1");
  Put("/b", "x");  // nobody watches it
  Put("/p/1", "2");
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("/a")).ok());
  auto r1 = Next(s.get());
  EXPECT_EQ(r1.watch_id(), 0);
  EXPECT_EQ(r1.header().revision(), 2);  // an empty store is at 1
  EXPECT_EQ(Describe(r1), (std::vector<std::string>{"P /a=1@2"}));
  auto r2 = Next(s.get());
  EXPECT_EQ(r2.watch_id(), 1);
  EXPECT_EQ(Describe(r2), (std::vector<std::string>{"P /p/1=2@4"}));
  auto r3 = Next(s.get());
  EXPECT_EQ(Describe(r3), (std::vector<std::string>{"D /a@5"}));
  EXPECT_FALSE(s->TryPop().has_value());
  // A DELETE event's kv has only key and mod_revision.
  EXPECT_EQ(r3.events(0).kv().version(), 0);
  EXPECT_EQ(r3.events(0).kv().create_revision(), 0);
}

// An empty key is "\x00", the smallest key, as etcd's watch server reads
// it: alone it watches that key, with a range end the keys from it.
// A store that closes under its streams (a snapshot replaced it) calls
// their notify hooks and says so: the servers that wait on the hooks (the
// gRPC and JSON watch fronts) end their clients' streams, which went
// silent for good before. What was queued before is still popped.
TEST_F(MvccWatchTest, ClosingTheStoreTellsItsStreams) {
  auto stream = store_->NewWatchStream();
  std::atomic<int> notified{0};
  stream->SetNotify([&] { ++notified; });
  WatchCreateRequest req;
  req.set_key("a");
  ASSERT_TRUE(stream->Watch(req).ok());
  Put("a", "1");
  // The put's response is queued (its notify is on the writer's thread).
  ASSERT_EQ(Next(stream.get()).events_size(), 1);
  Put("a", "2");
  const int before = notified.load();
  EXPECT_FALSE(stream->Stopped());
  store_->Close();
  EXPECT_TRUE(stream->Stopped());
  EXPECT_GT(notified.load(), before);
  // Still delivered: the put before the close.
  EXPECT_EQ(Next(stream.get()).events_size(), 1);
  EXPECT_FALSE(stream->TryPop().has_value());
}

TEST_F(MvccWatchTest, EmptyKeyIsTheSmallestKey) {
  auto s = store_->NewWatchStream();
  auto alone = s->Watch(Req(""));
  auto range = s->Watch(Req("", "b"));
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_TRUE(range.ok()) << range.status();
  Put("a", "1");
  Put(std::string("\0", 1), "2");
  EXPECT_EQ(Collect(s.get(), 1, *alone),
            (std::vector<std::string>{std::string("P \0=2@3", 7)}));
}

TEST_F(MvccWatchTest, TxnGivesOneResponseWithAllEvents) {
  auto s = store_->NewWatchStream();
  ASSERT_TRUE(s->Watch(Req("a", std::string("\0", 1))).ok());  // every key
  etcdserverpb::TxnRequest t;
  *t.add_success()->mutable_request_put() = MakePut("a", "1");
  *t.add_success()->mutable_request_put() = MakePut("b", "2");
  *t.add_success()->mutable_request_put() = MakePut("zz", "3");
  ASSERT_TRUE(store_->Txn(t).ok());
  auto r = Next(s.get());
  EXPECT_EQ(Describe(r),
            (std::vector<std::string>{"P a=1@2", "P b=2@2", "P zz=3@2"}));
}

TEST_F(MvccWatchTest, HistoryThenLive) {
  for (int i = 1; i <= 5; ++i) Put("k", std::to_string(i));  // 2..6
  Put("other", "x");                                         // 7
  auto s = store_->NewWatchStream();
  ASSERT_TRUE(s->Watch(Req("k", "", 3)).ok());
  // History arrives together, with the revision caught up to.
  auto hist = Next(s.get());
  EXPECT_EQ(Describe(hist), (std::vector<std::string>{"P k=2@3", "P k=3@4",
                                                      "P k=4@5", "P k=5@6"}));
  EXPECT_EQ(hist.header().revision(), 7);
  Put("k", "8");
  EXPECT_EQ(Describe(Next(s.get())), (std::vector<std::string>{"P k=8@8"}));
}

TEST_F(MvccWatchTest, LongHistorySpansSeveralWindows) {
  for (int i = 1; i <= 2500; ++i) Put("k" + std::to_string(i % 3), "v");
  auto s = store_->NewWatchStream();
  ASSERT_TRUE(s->Watch(Req("k", "l", 1)).ok());
  auto events = Collect(s.get(), 2500);
  ASSERT_EQ(events.size(), 2500u);
  for (int i = 1; i <= 2500; ++i) {
    EXPECT_EQ(events[i - 1],
              "P k" + std::to_string(i % 3) + "=v@" + std::to_string(i + 1));
  }
}

TEST_F(MvccWatchTest, FutureStartRevision) {
  auto s = store_->NewWatchStream();
  ASSERT_TRUE(s->Watch(Req("k", "", 4)).ok());
  Put("k", "2");
  Put("k", "3");
  Put("k", "4");
  auto r = Next(s.get());
  EXPECT_EQ(Describe(r), (std::vector<std::string>{"P k=4@4"}));
}

TEST_F(MvccWatchTest, PrevKvAndFilters) {
  Put("k", "old");
  auto s = store_->NewWatchStream();
  auto with_prev = Req("k");
  with_prev.set_prev_kv(true);
  ASSERT_TRUE(s->Watch(with_prev).ok());  // id 0
  auto no_put = Req("k");
  no_put.add_filters(WatchCreateRequest::NOPUT);
  ASSERT_TRUE(s->Watch(no_put).ok());  // id 1
  auto plain = Req("k");
  ASSERT_TRUE(s->Watch(plain).ok());  // id 2
  Put("k", "new");
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("k")).ok());
  std::map<int64_t, std::vector<WatchResponse>> by_id;
  for (int i = 0; i < 5; ++i) {
    auto r = Next(s.get());
    by_id[r.watch_id()].push_back(r);
  }
  EXPECT_FALSE(s->TryPop().has_value());
  ASSERT_EQ(by_id[0].size(), 2u);
  EXPECT_EQ(by_id[0][0].events(0).prev_kv().value(), "old");
  EXPECT_EQ(by_id[0][1].events(0).prev_kv().value(), "new");
  ASSERT_EQ(by_id[1].size(), 1u);  // the delete only
  EXPECT_EQ(by_id[1][0].events(0).type(), mvccpb::Event::DELETE);
  ASSERT_EQ(by_id[2].size(), 2u);
  EXPECT_FALSE(by_id[2][0].events(0).has_prev_kv());

  // History also carries prev_kv.
  auto s2 = store_->NewWatchStream();
  auto past = Req("k", "", 3);  // the put of "new" and the delete
  past.set_prev_kv(true);
  ASSERT_TRUE(s2->Watch(past).ok());
  auto hist = Next(s2.get());
  ASSERT_EQ(hist.events_size(), 2);
  EXPECT_EQ(hist.events(0).prev_kv().value(), "old");
  EXPECT_EQ(hist.events(1).prev_kv().value(), "new");
}

TEST_F(MvccWatchTest, IdsDuplicatesAndCancel) {
  auto s = store_->NewWatchStream();
  auto explicit_id = Req("a");
  explicit_id.set_watch_id(1);
  EXPECT_EQ(*s->Watch(explicit_id), 1);
  EXPECT_EQ(*s->Watch(Req("a")), 0);
  EXPECT_EQ(*s->Watch(Req("a")), 2);  // skips the taken 1
  auto dup = s->Watch(explicit_id);
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.status().message(),
            "mvcc: duplicate watch ID provided on the WatchStream");
  EXPECT_EQ(s->Watch(Req("b", "a")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s->WatcherCount(), 3u);  // refused creates count nothing
  Put("a", "1");
  // Cancel drops the watcher's queued responses.
  ASSERT_TRUE(s->Cancel(0).ok());
  ASSERT_TRUE(s->Cancel(2).ok());
  EXPECT_EQ(s->Cancel(0).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->WatcherCount(), 1u);
  auto r = Next(s.get());
  EXPECT_EQ(r.watch_id(), 1);
  EXPECT_FALSE(s->TryPop().has_value());
  Put("a", "2");
  EXPECT_EQ(Next(s.get()).watch_id(), 1);
  EXPECT_FALSE(s->TryPop().has_value());
}

TEST_F(MvccWatchTest, ManyWatchersOnOnePrefixGetEverything) {
  constexpr int kStreams = 50, kPerStream = 20, kPuts = 100;
  std::vector<std::unique_ptr<WatchStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(store_->NewWatchStream());
    for (int j = 0; j < kPerStream; ++j) {
      ASSERT_TRUE(streams.back()->Watch(Req("/registry/", "/registry0")).ok());
    }
  }
  std::vector<std::string> want;
  // Consumers drain concurrently while the writer runs.
  std::vector<std::thread> consumers;
  std::vector<std::map<int64_t, std::vector<std::string>>> got(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    consumers.emplace_back([&, i] {
      size_t total = 0;
      while (total < static_cast<size_t>(kPuts * kPerStream)) {
        auto r = streams[i]->Next(Clock::Real()->Now() + seconds(20));
        if (!r) break;
        for (auto& e : Describe(*r)) {
          got[i][r->watch_id()].push_back(e);
          ++total;
        }
      }
    });
  }
  for (int p = 0; p < kPuts; ++p) {
    std::string k = "/registry/pods/p" + std::to_string(p % 7);
    int64_t rev = Put(k, std::to_string(p));
    want.push_back("P " + k + "=" + std::to_string(p) + "@" +
                   std::to_string(rev));
  }
  for (auto& t : consumers) t.join();
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_EQ(got[i].size(), static_cast<size_t>(kPerStream));
    for (auto& [id, events] : got[i]) {
      EXPECT_EQ(events, want) << "stream " << i << " watcher " << id;
    }
  }
}

TEST_F(MvccWatchTest, SlowWatcherIsParkedAndCaughtUpWithoutBlockingWriters) {
  Reopen(/*capacity=*/4);
  auto slow = store_->NewWatchStream();
  auto fast = store_->NewWatchStream();
  ASSERT_TRUE(slow->Watch(Req("k", "l")).ok());
  ASSERT_TRUE(fast->Watch(Req("k", "l")).ok());
  std::vector<std::string> fast_got;
  std::thread fast_reader([&] { fast_got = Collect(fast.get(), 300); });
  // The slow stream is not read at all while 300 writes go through.
  std::vector<std::string> want;
  for (int i = 1; i <= 300; ++i) {
    std::string k = "k" + std::to_string(i % 5);
    Put(k, "v");
    want.push_back("P " + k + "=v@" + std::to_string(i + 1));
  }
  fast_reader.join();
  EXPECT_EQ(fast_got, want);
  EXPECT_EQ(slow->QueueSize(), 4u);
  EXPECT_GE(store_->GetWatchStats().victims, 1u);
  // Draining catches it up from the log: nothing lost, nothing reordered.
  EXPECT_EQ(Collect(slow.get(), 300), want);
  EXPECT_FALSE(slow->TryPop().has_value());
  Put("k1", "live");
  EXPECT_EQ(Describe(Next(slow.get())),
            (std::vector<std::string>{"P k1=live@302"}));
}

// A change every watcher of a stream sees queues for all of them, even past
// the configured capacity (StreamState::Limit: one per watcher); a stream
// whose consumer does not drain still parks its watchers at that bound.
TEST_F(MvccWatchTest, OneChangeQueuesForEveryWatcherOfABigStream) {
  Reopen(/*capacity=*/4);
  auto s = store_->NewWatchStream();
  constexpr int kWatchers = 10;
  for (int i = 0; i < kWatchers; ++i) ASSERT_TRUE(s->Watch(Req("k")).ok());
  const int64_t first = Put("k", "1");
  EXPECT_EQ(s->QueueSize(), static_cast<size_t>(kWatchers));
  EXPECT_EQ(store_->GetWatchStats().victims, 0u);
  // Not read: the second change finds the queue at its bound.
  Put("k", "2");
  EXPECT_EQ(s->QueueSize(), static_cast<size_t>(kWatchers));
  EXPECT_EQ(store_->GetWatchStats().victims, static_cast<size_t>(kWatchers));
  // Every watcher still gets both changes, in order.
  std::map<int64_t, std::vector<std::string>> got;
  for (int n = 0; n < 2 * kWatchers;) {
    WatchResponse r = Next(s.get());
    if (r.events_size() == 0) continue;
    for (auto& e : Describe(r)) {
      got[r.watch_id()].push_back(e);
      ++n;
    }
  }
  ASSERT_EQ(got.size(), static_cast<size_t>(kWatchers));
  const std::vector<std::string> want = {"P k=1@" + std::to_string(first),
                                         "P k=2@" + std::to_string(first + 1)};
  for (auto& [id, events] : got) EXPECT_EQ(events, want) << "watcher " << id;
}

TEST_F(MvccWatchTest, CompactionWhileWatching) {
  Reopen(/*capacity=*/1);
  auto lagging = store_->NewWatchStream();
  auto keeping_up = store_->NewWatchStream();
  ASSERT_TRUE(lagging->Watch(Req("k")).ok());
  ASSERT_TRUE(keeping_up->Watch(Req("k")).ok());
  for (int i = 2; i <= 11; ++i) {  // value i at revision i
    Put("k", std::to_string(i));
    ASSERT_EQ(Describe(Next(keeping_up.get())),
              (std::vector<std::string>{"P k=" + std::to_string(i) + "@" +
                                        std::to_string(i)}));
  }
  // lagging holds revision 2 in its queue and is parked at revision 3.
  ASSERT_TRUE(store_->Compact(9).ok());
  ASSERT_TRUE(store_->WaitForCompaction(9).ok());
  EXPECT_EQ(Describe(Next(lagging.get())),
            (std::vector<std::string>{"P k=2@2"}));
  // Revisions 3..9 are gone: the watcher is canceled with the compaction
  // revision and no header revision.
  auto r = Next(lagging.get());
  EXPECT_TRUE(r.canceled());
  EXPECT_EQ(r.compact_revision(), 9);
  EXPECT_EQ(r.header().revision(), 0);
  EXPECT_EQ(r.events_size(), 0);
  EXPECT_EQ(lagging->WatcherCount(), 0u);  // the canceled watcher is gone
  EXPECT_EQ(keeping_up->WatcherCount(), 1u);
  Put("k", "12");
  EXPECT_EQ(Describe(Next(keeping_up.get())),
            (std::vector<std::string>{"P k=12@12"}));
  EXPECT_FALSE(lagging->TryPop().has_value());
  // Starting below the compaction revision fails at once; at it works.
  EXPECT_EQ(lagging->Watch(Req("k", "", 8)).status().code(),
            StatusCode::kCompacted);
  ASSERT_TRUE(lagging->Watch(Req("k", "", 9)).ok());
  EXPECT_EQ(Describe(Next(lagging.get())),
            (std::vector<std::string>{"P k=9@9", "P k=10@10", "P k=11@11",
                                      "P k=12@12"}));
}

TEST_F(MvccWatchTest, StreamProgressWaitsForSync) {
  for (int i = 0; i < 5; ++i) Put("k", "v");
  auto s = store_->NewWatchStream();
  s->RequestProgress();  // no watchers: answered at once
  auto p0 = Next(s.get());
  EXPECT_EQ(p0.watch_id(), kStreamProgressWatchId);
  EXPECT_EQ(p0.header().revision(), 6);
  EXPECT_EQ(p0.events_size(), 0);

  ASSERT_TRUE(s->Watch(Req("k", "", 1)).ok());
  s->RequestProgress();
  // The progress comes after the history, so every event up to its
  // revision was delivered before it.
  auto first = Next(s.get());
  EXPECT_EQ(first.events_size(), 5);
  auto p1 = Next(s.get());
  EXPECT_EQ(p1.watch_id(), kStreamProgressWatchId);
  EXPECT_EQ(p1.header().revision(), 6);
}

TEST(MvccWatchProgressTest, PerWatcherProgressNotify) {
  testing::TempDir dir;
  FakeClock clock;
  auto store = testing::OpenOrDie(dir.path(), &clock, [](Options* o) {
    o->watch_progress_interval = minutes(10);
  });
  auto s = store->NewWatchStream();
  auto req = Req("quiet");
  req.set_progress_notify(true);
  ASSERT_TRUE(s->Watch(req).ok());
  ASSERT_TRUE(s->Watch(Req("quiet")).ok());  // did not ask
  ASSERT_TRUE(store->Put(MakePut("elsewhere", "v")).ok());
  clock.WaitForWaiters(1);  // the watch thread sleeps until the tick
  clock.Advance(minutes(10));
  auto r = s->Next(clock.Now() + minutes(1));  // returns when queued
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->watch_id(), 0);
  EXPECT_EQ(r->header().revision(), 2);
  EXPECT_EQ(r->events_size(), 0);
  EXPECT_FALSE(s->TryPop().has_value());
}

TEST_F(MvccWatchTest, NotifyHookRuns) {
  auto s = store_->NewWatchStream();
  std::atomic<int> calls{0};
  s->SetNotify([&] { ++calls; });
  ASSERT_TRUE(s->Watch(Req("k")).ok());
  Put("k", "1");
  EXPECT_GE(calls.load(), 1);
  EXPECT_TRUE(s->TryPop().has_value());
}

TEST_F(MvccWatchTest, WatchersCreatedDuringWritesMissNothing) {
  // Writers run while watchers are created with start revision 0; each
  // watcher must then see every revision after its creation, in order.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    int i = 0;
    while (!stop)
      ASSERT_TRUE(store_->Put(MakePut("k", std::to_string(i++))).ok());
  });
  std::vector<std::unique_ptr<WatchStream>> streams;
  std::vector<std::pair<int64_t, int64_t>> created;  // revisions around Watch
  for (int i = 0; i < 20; ++i) {
    streams.push_back(store_->NewWatchStream());
    int64_t before = store_->CurrentRevision();
    auto req = Req("k");
    req.set_prev_kv(i % 2 == 0);
    ASSERT_TRUE(streams.back()->Watch(req).ok());
    created.emplace_back(before, store_->CurrentRevision());
  }
  stop = true;
  writer.join();
  const int64_t last = Put("k", "last");  // every watcher sees at least this
  for (size_t i = 0; i < streams.size(); ++i) {
    int64_t expect = -1;
    while (expect != last) {
      auto r = streams[i]->Next(Clock::Real()->Now() + seconds(10));
      ASSERT_TRUE(r.has_value()) << "watcher " << i << " stuck at " << expect;
      for (const auto& ev : r->events()) {
        int64_t rev = ev.kv().mod_revision();
        if (expect == -1) {
          // It starts right after the revision current at its creation.
          EXPECT_GT(rev, created[i].first);
          EXPECT_LE(rev, created[i].second + 1);
        } else {
          EXPECT_EQ(rev, expect + 1);
        }
        if (i % 2 == 0 && ev.kv().version() > 1) {
          EXPECT_TRUE(ev.has_prev_kv()) << "rev " << rev;
        }
        expect = rev;
      }
    }
  }
}

}  // namespace
}  // namespace kplane::mvcc
