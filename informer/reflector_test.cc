#include "informer/reflector.h"

#include <gtest/gtest.h>

#include "objects/meta.h"
#include "informer/api_errors.h"
#include "informer/fake_list_watcher.h"
#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::MakePod;
using testing::PodKind;
using testing::Recorder;

// Records what the reflector does to its store as "op key@rv" strings.
class RecordingStore : public ReflectorStore {
 public:
  void Add(ObjectPtr obj) override { Record("add", *obj); }
  void Update(ObjectPtr obj) override { Record("update", *obj); }
  void Delete(ObjectPtr obj) override { Record("delete", *obj); }
  void Replace(std::vector<ObjectPtr> objects, const std::string& rv) override {
    std::string s = "replace@" + rv + " [";
    for (size_t i = 0; i < objects.size(); ++i) {
      if (i > 0) s += " ";
      s += objects::Name(*objects[i]) + "@" + objects::ResourceVersion(*objects[i]);
    }
    ops.Record(s + "]");
  }
  Recorder ops;

 private:
  void Record(const std::string& op, const google::protobuf::Message& obj) {
    ops.Record(op + " " + objects::Name(obj) + "@" + objects::ResourceVersion(obj));
  }
};

class ReflectorTest : public ::testing::Test {
 protected:
  ReflectorTest() : fake_(PodKind()) {}

  ReflectorOptions Options() {
    ReflectorOptions o;
    o.clock = &clock_;
    o.seed = 7;
    // Deterministic jitter: every delay is 1.5x its base.
    o.backoff.random = [] { return 0.5; };
    o.on_backoff = [this](Duration d) {
      backoffs_.Record(std::to_string(d.count()));
    };
    return o;
  }

  void StartReflector(ReflectorOptions o) {
    reflector_ = std::make_unique<Reflector>(&fake_, &store_, std::move(o));
    reflector_->Start();
  }

  // Waits until the reflector sleeps in its next backoff, checks the delay
  // it chose, and lets it pass.
  void ExpectBackoffAndPass(Duration expected) {
    WaitForBackoff();
    EXPECT_EQ(reflector_->stats().last_backoff, expected);
    clock_.Advance(expected);
  }
  // The next backoff has begun (the previous wait is over) and the
  // reflector is blocked on the clock.
  void WaitForBackoff() {
    ASSERT_TRUE(backoffs_.WaitForCount(++backoffs_seen_));
    clock_.WaitForWaiters(1);
  }

  FakeClock clock_;
  FakeListerWatcher fake_;
  RecordingStore store_;
  Recorder backoffs_;
  size_t backoffs_seen_ = 0;
  std::unique_ptr<Reflector> reflector_;
};

TEST_F(ReflectorTest, ListsThenWatchesFromTheListResourceVersion) {
  ASSERT_TRUE(fake_.Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(fake_.Create(MakePod("default", "b")).ok());
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);

  std::vector<ListOptions> lists = fake_.ListCalls();
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].resource_version, "0");  // served from the watch cache
  EXPECT_EQ(lists[0].limit, 500);
  EXPECT_EQ(store_.ops.Items(),
            (std::vector<std::string>{"replace@2 [a@1 b@2]"}));

  ListOptions w = fake_.WatchCalls()[0];
  EXPECT_EQ(w.resource_version, "2");
  EXPECT_TRUE(w.allow_watch_bookmarks);
  ASSERT_TRUE(w.timeout_seconds.has_value());
  EXPECT_GE(*w.timeout_seconds, 300);
  EXPECT_LT(*w.timeout_seconds, 600);
  EXPECT_EQ(reflector_->LastSyncResourceVersion(), "2");
}

TEST_F(ReflectorTest, AppliesEventsAndRewatchesFromTheLastOnClose) {
  ASSERT_TRUE(fake_.Create(MakePod("default", "a")).ok());
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);

  ASSERT_TRUE(fake_.Create(MakePod("default", "b")).ok());  // rev 2
  objects::corev1::Pod a2 = MakePod("default", "a");
  a2.mutable_metadata()->mutable_labels()->insert({"v", "2"});
  ASSERT_TRUE(fake_.Update(a2).ok());              // rev 3
  ASSERT_TRUE(fake_.Delete("default", "b").ok());  // rev 4
  ASSERT_TRUE(store_.ops.WaitForCount(4));
  EXPECT_EQ(store_.ops.Items(),
            (std::vector<std::string>{"replace@1 [a@1]", "add b@2",
                                      "update a@3", "delete b@4"}));

  // The server ends the watch (its timeout): watch again at once, from the
  // last event's resourceVersion, without listing.
  fake_.CloseWatches();
  fake_.WaitForWatchCalls(2);
  EXPECT_EQ(fake_.WatchCalls()[1].resource_version, "4");
  EXPECT_EQ(fake_.ListCalls().size(), 1u);
  EXPECT_EQ(reflector_->stats().backoffs, 0);
  EXPECT_EQ(reflector_->stats().events, 3);
}

TEST_F(ReflectorTest, BookmarksAdvanceTheResourceVersion) {
  ASSERT_TRUE(fake_.Create(MakePod("default", "a")).ok());
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  fake_.AdvanceRevision(100);  // writes elsewhere in the store
  fake_.SendBookmark();
  fake_.CloseWatches();
  fake_.WaitForWatchCalls(2);
  EXPECT_EQ(fake_.WatchCalls()[1].resource_version, "101");
  EXPECT_EQ(reflector_->stats().bookmarks, 1);
  // A bookmark changes nothing in the store.
  EXPECT_EQ(store_.ops.Items().size(), 1u);
}

TEST_F(ReflectorTest, BrokenConnectionBacksOffAndRewatchesWithoutRelist) {
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  ASSERT_TRUE(fake_.Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(store_.ops.WaitForCount(2));
  fake_.CloseWatches(UnavailableError("connection reset by peer"));
  ExpectBackoffAndPass(milliseconds(1200));
  fake_.WaitForWatchCalls(2);
  EXPECT_EQ(fake_.WatchCalls()[1].resource_version, "1");
  EXPECT_EQ(fake_.ListCalls().size(), 1u);

  // Refused (apiserver restarting): same again, without a relist.
  fake_.FailNextWatches(UnavailableError("connection refused"));
  fake_.CloseWatches(UnavailableError("connection reset by peer"));
  ExpectBackoffAndPass(milliseconds(2400));  // the open attempt fails
  ExpectBackoffAndPass(milliseconds(4800));
  fake_.WaitForWatchCalls(4);
  EXPECT_EQ(fake_.WatchCalls()[3].resource_version, "1");
  EXPECT_EQ(fake_.ListCalls().size(), 1u);
}

// The seeds' ErrCompacted: the reflector was away while the store compacted
// past its resourceVersion. The watch says 410; the reflector relists at
// its last RV (an exact paged read: 410 too), then lists the latest.
TEST_F(ReflectorTest, ExpiredWatchRelistsAtTheLatestRevision) {
  ASSERT_TRUE(fake_.Create(MakePod("default", "a")).ok());  // 1
  ASSERT_TRUE(fake_.Create(MakePod("default", "b")).ok());  // 2
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  fake_.CloseWatches(UnavailableError("connection reset by peer"));
  WaitForBackoff();  // backing off: "disconnected"

  ASSERT_TRUE(fake_.Delete("default", "b").ok());           // 3
  ASSERT_TRUE(fake_.Create(MakePod("default", "c")).ok());  // 4
  fake_.Compact();
  clock_.Advance(reflector_->stats().last_backoff);

  fake_.WaitForWatchCalls(2);  // rv 2: answered by ERROR 410
  EXPECT_EQ(fake_.WatchCalls()[1].resource_version, "2");
  ExpectBackoffAndPass(milliseconds(2400));
  fake_.WaitForWatchCalls(3);

  std::vector<ListOptions> lists = fake_.ListCalls();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[1].resource_version, "2");  // 410: compacted
  EXPECT_EQ(lists[2].resource_version, "");   // consistent read
  EXPECT_EQ(store_.ops.Items().back(), "replace@4 [a@1 c@4]");
  EXPECT_EQ(fake_.WatchCalls()[2].resource_version, "4");
  EXPECT_EQ(reflector_->stats().expired, 1);
  EXPECT_EQ(reflector_->LastSyncResourceVersion(), "4");
}

TEST_F(ReflectorTest, ExpiredOnWatchOpenAlsoRelists) {
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  fake_.FailNextWatches(
      Status(StatusCode::kExpired, "too old resource version", 410));
  ASSERT_TRUE(fake_.Create(MakePod("default", "a")).ok());
  ASSERT_TRUE(store_.ops.WaitForCount(2));
  fake_.CloseWatches();  // had an event: re-watch at once ... and get 410
  ExpectBackoffAndPass(milliseconds(1200));
  fake_.WaitForWatchCalls(3);
  EXPECT_EQ(fake_.ListCalls().size(), 2u);
  EXPECT_EQ(fake_.ListCalls()[1].resource_version, "1");
}

TEST_F(ReflectorTest, ListFailuresBackOffExponentiallyWithJitter) {
  fake_.FailNextLists(InternalError("etcd is sad"), 4);
  StartReflector(Options());
  // 800ms * 2^k, times 1.5 for the fixed jitter draw.
  for (int64_t ms : {1200, 2400, 4800, 9600}) {
    ExpectBackoffAndPass(milliseconds(ms));
  }
  fake_.WaitForWatchCalls(1);
  EXPECT_EQ(fake_.ListCalls().size(), 5u);
  EXPECT_EQ(reflector_->stats().errors, 4);
  EXPECT_EQ(store_.ops.Items().size(), 1u);
}

TEST_F(ReflectorTest, BackoffIsCappedAndResetsAfterAQuietPeriod) {
  ReflectorOptions o = Options();
  o.backoff.max = seconds(2);
  fake_.FailNextLists(InternalError("down"), 3);
  StartReflector(o);
  ExpectBackoffAndPass(milliseconds(1200));
  ExpectBackoffAndPass(milliseconds(2400));
  ExpectBackoffAndPass(milliseconds(3000));  // base capped at 2s, x1.5
  fake_.WaitForWatchCalls(1);
  // Healthy for 3 minutes, then a failure: the sequence starts over.
  clock_.Advance(minutes(3));
  fake_.CloseWatches(UnavailableError("reset"));
  ExpectBackoffAndPass(milliseconds(1200));
  fake_.WaitForWatchCalls(2);
}

TEST_F(ReflectorTest, ShortEmptyWatchCountsAsAnError) {
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  fake_.CloseWatches();  // no event, no time passed
  ExpectBackoffAndPass(milliseconds(1200));
  fake_.WaitForWatchCalls(2);
  EXPECT_EQ(fake_.ListCalls().size(), 1u);
}

TEST_F(ReflectorTest, OtherWatchErrorsRelist) {
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  fake_.SendWatchError(Status(StatusCode::kInternal, "boom", 500));
  ExpectBackoffAndPass(milliseconds(1200));
  fake_.WaitForWatchCalls(2);
  EXPECT_EQ(fake_.ListCalls().size(), 2u);
  EXPECT_EQ(reflector_->stats().errors, 1);
}

TEST_F(ReflectorTest, ListsInPagesAtOneSnapshot) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(fake_.Create(MakePod("default", "p" + std::to_string(i))).ok());
  }
  ReflectorOptions o = Options();
  o.page_size = 3;
  StartReflector(o);
  fake_.WaitForWatchCalls(1);
  std::vector<ListOptions> lists = fake_.ListCalls();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[0].continue_token, "");
  EXPECT_NE(lists[1].continue_token, "");
  EXPECT_EQ(lists[1].resource_version, "");  // the token carries it
  EXPECT_EQ(reflector_->stats().list_pages, 3);
  EXPECT_EQ(store_.ops.Items()[0],
            "replace@7 [p0@1 p1@2 p2@3 p3@4 p4@5 p5@6 p6@7]");
  EXPECT_EQ(fake_.WatchCalls()[0].resource_version, "7");
}

TEST_F(ReflectorTest, StopEndsAWatchAndABackoff) {
  StartReflector(Options());
  fake_.WaitForWatchCalls(1);
  reflector_->Stop();  // blocked in Next(): the stream is stopped
  EXPECT_EQ(fake_.OpenWatches(), 0);

  FakeListerWatcher other(PodKind());
  other.FailNextLists(InternalError("x"));
  RecordingStore store;
  ReflectorOptions o = Options();
  Reflector r(&other, &store, o);
  r.Start();
  WaitForBackoff();
  r.Stop();  // returns without the clock moving
  EXPECT_TRUE(store.ops.Items().empty());
}

TEST(BackoffTest, SequenceJitterAndReset) {
  FakeClock clock;
  double draw = 0.0;
  Backoff b({.initial = milliseconds(100),
             .max = milliseconds(500),
             .factor = 2.0,
             .jitter = 1.0,
             .reset_after = seconds(10),
             .random = [&] { return draw; }},
            &clock);
  EXPECT_EQ(b.Next(), milliseconds(100));
  EXPECT_EQ(b.Next(), milliseconds(200));
  draw = 0.99;
  EXPECT_EQ(b.Next(), milliseconds(796));  // 400 + 99%
  draw = 0.0;
  EXPECT_EQ(b.Next(), milliseconds(500));  // capped
  EXPECT_EQ(b.Next(), milliseconds(500));
  clock.Advance(seconds(11));
  EXPECT_EQ(b.Next(), milliseconds(100));  // quiet period: reset
  b.Reset();
  EXPECT_EQ(b.CurrentBase(), milliseconds(100));
}

TEST(BackoffTest, SeededJitterStaysInRange) {
  FakeClock clock;
  Backoff b({.initial = seconds(1), .max = seconds(8), .seed = 3}, &clock);
  Duration base = seconds(1);
  for (int i = 0; i < 6; ++i) {
    Duration d = b.Next();
    EXPECT_GE(d, base);
    EXPECT_LT(d, 2 * base);
    base = std::min(base * 2, Duration(seconds(8)));
  }
}

}  // namespace
}  // namespace kplane::informer
