#include "informer/event_recorder.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "informer/test_util.h"
#include "objects/time.h"

namespace kplane::informer {
namespace {

namespace corev1 = objects::corev1;

// The API in memory: creates keep the event, patches raise its count.
// Failures can be scripted (FailNext) and an API server that never answers
// simulated (HangFor: each call waits on the clock, then times out).
class FakeEventSink : public EventSink {
 public:
  explicit FakeEventSink(Clock* clock) : clock_(clock) {}

  // The deadline is kept (and honoured by HangFor, as RestClient honours
  // its CallDeadline).
  StatusOr<corev1::Event> CreateWithDeadline(const corev1::Event& ev,
                                             CallDeadline deadline) override {
    SetCallDeadline(deadline);
    MutexLock l(&mu_);
    if (block_)
      cv_.wait(l.native(), [&] {
        mu_.AssertHeld();
        return !block_;
      });
    actions_.push_back("create " + ev.metadata().name());
    if (Status s = Injected(l); !s.ok()) return s;
    auto [it, inserted] = stored_.emplace(ev.metadata().name(), ev);
    if (!inserted) return AlreadyExistsError(ev.metadata().name());
    it->second.mutable_metadata()->set_resourceversion(std::to_string(++rv_));
    return it->second;
  }
  StatusOr<corev1::Event> PatchWithDeadline(const corev1::Event& ev,
                                            CallDeadline deadline) override {
    SetCallDeadline(deadline);
    MutexLock l(&mu_);
    actions_.push_back("patch " + ev.metadata().name());
    if (Status s = Injected(l); !s.ok()) return s;
    auto it = stored_.find(ev.metadata().name());
    if (it == stored_.end()) return NotFoundError(ev.metadata().name());
    it->second.set_count(ev.count());
    it->second.set_message(ev.message());
    *it->second.mutable_lasttimestamp() = ev.lasttimestamp();
    return it->second;
  }
  std::vector<CallDeadline> Deadlines() {
    MutexLock l(&mu_);
    return deadlines_;
  }
  // When the call hanging now ends.
  TimePoint HangDeadline() {
    MutexLock l(&mu_);
    return hang_deadline_;
  }
  std::vector<std::string> Actions() {
    MutexLock l(&mu_);
    return actions_;
  }
  std::map<std::string, corev1::Event> Stored() {
    MutexLock l(&mu_);
    return stored_;
  }
  void Remove(const std::string& name) {
    MutexLock l(&mu_);
    stored_.erase(name);
  }
  void SetBlocked(bool b) {
    {
      MutexLock l(&mu_);
      block_ = b;
    }
    cv_.notify_all();
  }
  // The next calls fail with these, in order.
  void FailNext(std::vector<Status> errors) {
    MutexLock l(&mu_);
    for (Status& s : errors) failures_.push_back(std::move(s));
  }
  // From now on every call waits `d` on the clock and then fails with
  // kDeadlineExceeded, as RestClient does when the server never answers.
  void HangFor(Duration d) {
    MutexLock l(&mu_);
    hang_ = d;
  }
  // Waits (real time, bounded) until more than `n` calls have begun to
  // hang or `done()` holds; false on timeout.
  bool WaitForHangingOr(int n, const std::function<bool()>& done) {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), testing::kTestDeadline, [&] {
      mu_.AssertHeld();
      return hanging_ > n || done();
    });
  }
  int Hanging() {
    MutexLock l(&mu_);
    return hanging_;
  }
  // Wakes WaitForHangingOr to re-check `done`.
  void Poke() {
    MutexLock l(&mu_);
    cv_.notify_all();
  }

 private:
  Status Injected(MutexLock& l) REQUIRES(mu_) {
    if (hang_ > Duration::zero()) {
      // The deadline is taken before the lock is let go in WaitUntil, so a
      // test that saw hanging_ go up and then advances the clock ends it.
      const TimePoint deadline =
          std::min(clock_->Now() + hang_, call_deadline_);
      hang_deadline_ = deadline;
      ++hanging_;
      cv_.notify_all();
      clock_->WaitUntil(l.native(), cv_, deadline, [] { return false; });
      return DeadlineExceededError("the server did not answer");
    }
    if (failures_.empty()) return Status::Ok();
    Status s = std::move(failures_.front());
    failures_.pop_front();
    return s;
  }

  void SetCallDeadline(CallDeadline deadline) {
    MutexLock l(&mu_);
    deadlines_.push_back(deadline);
    call_deadline_ = deadline;
  }

  Clock* const clock_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Status> failures_ GUARDED_BY(mu_);
  Duration hang_ GUARDED_BY(mu_) = Duration::zero();
  int hanging_ GUARDED_BY(mu_) = 0;
  TimePoint hang_deadline_ GUARDED_BY(mu_);
  CallDeadline call_deadline_ GUARDED_BY(mu_) = CallDeadline::max();
  std::vector<CallDeadline> deadlines_ GUARDED_BY(mu_);
  std::vector<std::string> actions_ GUARDED_BY(mu_);
  std::map<std::string, corev1::Event> stored_ GUARDED_BY(mu_);
  int rv_ GUARDED_BY(mu_) = 0;
  bool block_ GUARDED_BY(mu_) = false;
};

corev1::Pod MakePod(const std::string& name) {
  corev1::Pod p;
  p.mutable_metadata()->set_name(name);
  p.mutable_metadata()->set_namespace_("demo");
  p.mutable_metadata()->set_uid("uid-" + name);
  p.mutable_metadata()->set_resourceversion("7");
  return p;
}

class EventRecorderTest : public ::testing::Test {
 protected:
  EventBroadcaster& Broadcaster(size_t max_queued = 1000) {
    if (!broadcaster_) {
      broadcaster_ = std::make_unique<EventBroadcaster>(
          EventBroadcasterOptions{.sink = &sink_,
                                  .clock = &clock_,
                                  .metrics = &metrics_,
                                  .max_queued = max_queued});
      recorder_ = broadcaster_->NewRecorder("kubelet", "node-1");
    }
    return *broadcaster_;
  }
  EventRecorder& Recorder() {
    Broadcaster();
    return *recorder_;
  }
  void Flush() { broadcaster_->Flush(); }
  corev1::Event Only() {
    auto stored = sink_.Stored();
    EXPECT_EQ(stored.size(), 1u);
    return stored.empty() ? corev1::Event() : stored.begin()->second;
  }

  bool MetricHas(const std::string& line) {
    return metrics_.Render().find(line) != std::string::npos;
  }

  testing::TestClock clock_;
  metrics::Registry metrics_;
  FakeEventSink sink_{&clock_};
  std::unique_ptr<EventBroadcaster> broadcaster_;
  std::unique_ptr<EventRecorder> recorder_;
};

TEST_F(EventRecorderTest, WritesTheEventKubeWrites) {
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled",
                   "Container image \"nginx\" already present on machine");
  Flush();
  corev1::Event ev = Only();
  EXPECT_TRUE(ev.metadata().name().starts_with("web-1."))
      << ev.metadata().name();
  // <name>.<hex of unix nanos>: 16 hex digits for today's times.
  EXPECT_EQ(ev.metadata().name().size(), std::string("web-1.").size() + 16);
  EXPECT_EQ(ev.metadata().namespace_(), "demo");
  EXPECT_EQ(ev.involvedobject().kind(), "Pod");
  EXPECT_EQ(ev.involvedobject().apiversion(), "v1");
  EXPECT_EQ(ev.involvedobject().name(), "web-1");
  EXPECT_EQ(ev.involvedobject().uid(), "uid-web-1");
  EXPECT_EQ(ev.type(), "Normal");
  EXPECT_EQ(ev.reason(), "Pulled");
  EXPECT_EQ(ev.count(), 1);
  EXPECT_EQ(ev.source().component(), "kubelet");
  EXPECT_EQ(ev.source().host(), "node-1");
  EXPECT_EQ(ev.reportingcomponent(), "kubelet");
  EXPECT_EQ(ev.reportinginstance(), "node-1");
  EXPECT_EQ(objects::UnixSeconds(ev.firsttimestamp()),
            objects::UnixSeconds(objects::TimeNow(clock_)));
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetEventsInDefault) {
  corev1::Node node;
  node.mutable_metadata()->set_name("node-1");
  Recorder().Event(node, kEventNormal, "NodeReady",
                   "Node node-1 status is now: NodeReady");
  Flush();
  corev1::Event ev = Only();
  EXPECT_EQ(ev.metadata().namespace_(), "default");
  EXPECT_EQ(ev.involvedobject().kind(), "Node");
  EXPECT_EQ(ev.involvedobject().namespace_(), "");
}

TEST_F(EventRecorderTest, TheSameEventAgainPatchesCountAndLastTimestamp) {
  Recorder().Event(MakePod("web-1"), kEventWarning, "BackOff", "Back-off");
  Flush();
  const corev1::Event first = Only();
  clock_.Advance(seconds(30));
  Recorder().Event(MakePod("web-1"), kEventWarning, "BackOff", "Back-off");
  clock_.Advance(seconds(30));
  Recorder().Event(MakePod("web-1"), kEventWarning, "BackOff", "Back-off");
  Flush();
  corev1::Event ev = Only();
  EXPECT_EQ(ev.metadata().name(), first.metadata().name());
  EXPECT_EQ(ev.count(), 3);
  EXPECT_EQ(objects::UnixSeconds(ev.lasttimestamp()),
            objects::UnixSeconds(first.firsttimestamp()) + 60);
  EXPECT_EQ(objects::UnixSeconds(ev.firsttimestamp()),
            objects::UnixSeconds(first.firsttimestamp()));
  const std::string name = first.metadata().name();
  EXPECT_EQ(sink_.Actions(),
            (std::vector<std::string>{"create " + name, "patch " + name,
                                      "patch " + name}));
}

TEST_F(EventRecorderTest, TenSimilarEventsAreCombined) {
  for (int i = 0; i < 9; ++i) {
    Recorder().Event(MakePod("web-1"), kEventWarning, "FailedMount",
                     "volume " + std::to_string(i));
  }
  Flush();
  EXPECT_EQ(sink_.Stored().size(), 9u);
  // The tenth different message: one combined event, patched from then on.
  Recorder().Event(MakePod("web-1"), kEventWarning, "FailedMount", "volume 9");
  Recorder().Event(MakePod("web-1"), kEventWarning, "FailedMount", "volume 10");
  Flush();
  auto stored = sink_.Stored();
  ASSERT_EQ(stored.size(), 10u);
  int combined = 0;
  for (const auto& [name, ev] : stored) {
    if (ev.message().starts_with("(combined from similar events): ")) {
      ++combined;
      EXPECT_EQ(ev.message(), "(combined from similar events): volume 10");
      EXPECT_EQ(ev.count(), 2);
    }
  }
  EXPECT_EQ(combined, 1);
}

TEST_F(EventRecorderTest, AggregationForgetsAfterTenMinutes) {
  for (int i = 0; i < 9; ++i) {
    Recorder().Event(MakePod("web-1"), kEventWarning, "FailedMount",
                     "volume " + std::to_string(i));
  }
  clock_.Advance(minutes(11));
  Recorder().Event(MakePod("web-1"), kEventWarning, "FailedMount", "volume 9");
  Flush();
  for (const auto& [name, ev] : sink_.Stored()) {
    EXPECT_FALSE(ev.message().starts_with("(combined")) << ev.message();
  }
  EXPECT_EQ(sink_.Stored().size(), 10u);
}

TEST_F(EventRecorderTest, SpamFilterAllowsBurstThenOnePerFiveMinutes) {
  for (int i = 0; i < 30; ++i) {
    Recorder().Event(MakePod("web-1"), kEventNormal,
                     "Reason" + std::to_string(i), "m");
  }
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 25u);
  // Another object has its own bucket.
  Recorder().Event(MakePod("web-2"), kEventNormal, "Reason", "m");
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 26u);
  clock_.Advance(minutes(5));
  Recorder().Event(MakePod("web-1"), kEventNormal, "Later1", "m");
  Recorder().Event(MakePod("web-1"), kEventNormal, "Later2", "m");
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 27u);
  EXPECT_EQ(metrics_.Render().find(
                "events_recorded_total{result=\"spam_filtered\"} 6") !=
                std::string::npos,
            true)
      << metrics_.Render();
}

TEST_F(EventRecorderTest, AFullQueueDropsWithoutBlockingTheCaller) {
  Broadcaster(/*max_queued=*/2);
  sink_.SetBlocked(true);
  // The writer blocks in the sink on the first event it takes; two more
  // fit in the queue; the rest are dropped at once instead of waiting.
  for (int i = 0; i < 10; ++i) {
    Recorder().Event(MakePod("p" + std::to_string(i)), kEventNormal, "R", "m");
  }
  EXPECT_GE(Broadcaster().dropped(), 7);
  EXPECT_NE(metrics_.Render().find(
                "events_recorded_total{result=\"dropped_queue_full\"}"),
            std::string::npos);
  sink_.SetBlocked(false);
  Flush();
}

TEST_F(EventRecorderTest, APatchOfAnExpiredEventCreatesItAgain) {
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  Flush();
  const std::string name = Only().metadata().name();
  sink_.Remove(name);  // the event TTL ran out
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  Flush();
  EXPECT_EQ(sink_.Actions(),
            (std::vector<std::string>{"create " + name, "patch " + name,
                                      "create " + name}));
  EXPECT_EQ(Only().count(), 2);
}

TEST_F(EventRecorderTest, NamesStayDistinctWhenTheClockStandsStill) {
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  Recorder().Event(MakePod("web-1"), kEventNormal, "Created", "m");
  Recorder().Event(MakePod("web-1"), kEventNormal, "Started", "m");
  Flush();
  EXPECT_EQ(sink_.Stored().size(), 3u);
}

TEST_F(EventRecorderTest, AWarningIsNotSpamFilteredByNormalEvents) {
  // client-go's getSpamKey has the event type since 1.31: a burst of
  // Normal events must not silence the Warning that follows.
  for (int i = 0; i < 25; ++i) {
    Recorder().Event(MakePod("web-1"), kEventNormal,
                     "Reason" + std::to_string(i), "m");
  }
  Recorder().Event(MakePod("web-1"), kEventWarning, "BackOff", "m");
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 26u);
  EXPECT_FALSE(MetricHas("events_recorded_total{result=\"spam_filtered\"} 1"))
      << metrics_.Render();
}

TEST_F(EventRecorderTest, TransportErrorsAreRetriedAfterAJitteredSleep) {
  sink_.FailNext({UnavailableError("connection refused"),
                  DeadlineExceededError("no answer")});
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  // client-go's recordToSink: the first sleep is a random part of 10 s (so
  // that clients do not all come back at once), later ones 10 s.
  std::optional<Duration> first = clock_.WaitForCall(1, seconds(5));
  ASSERT_TRUE(first.has_value()) << "no retry after a transport error; "
                                 << "actions: " << sink_.Actions().size();
  EXPECT_GE(*first, Duration::zero());
  EXPECT_LT(*first, seconds(10));
  clock_.Advance(*first);
  std::optional<Duration> second = clock_.WaitForCall(2, seconds(5));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, seconds(10));
  clock_.Advance(seconds(10));
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 3u);
  EXPECT_EQ(Only().count(), 1);
  EXPECT_TRUE(MetricHas("events_recorded_total{result=\"created\"} 1"));
  EXPECT_TRUE(MetricHas("events_recorded_total{result=\"failed\"} 0"))
      << metrics_.Render();
}

TEST_F(EventRecorderTest, GivesUpAfterTwelveTries) {
  std::vector<Status> errors(20, UnavailableError("connection refused"));
  sink_.FailNext(errors);
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  for (size_t k = 1; k <= 11; ++k) {
    std::optional<Duration> d = clock_.WaitForCall(k, seconds(5));
    ASSERT_TRUE(d.has_value()) << "no retry sleep " << k;
    clock_.Advance(*d);
  }
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 12u);
  EXPECT_EQ(clock_.NumCalls(), 11u);
  EXPECT_TRUE(MetricHas("events_recorded_total{result=\"failed\"} 1"));
}

TEST_F(EventRecorderTest, AnswersOfTheServerAreNotRetried) {
  // An HTTP status from the API server is client-go's StatusError: the
  // server saw the event and refused it, trying again changes nothing
  // (even for 503: RestClient already retried what can be retried).
  sink_.FailNext({Status(StatusCode::kUnavailable, "etcd unhealthy", 503),
                  Status(StatusCode::kAlreadyExists, "exists", 409)});
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  Recorder().Event(MakePod("web-2"), kEventNormal, "Pulled", "m");
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 2u);
  EXPECT_EQ(clock_.NumCalls(), 0u);
  EXPECT_TRUE(MetricHas("events_recorded_total{result=\"failed\"} 2"));
}

TEST_F(EventRecorderTest, ShutdownDoesNotWaitForAServerThatNeverAnswers) {
  // Every write times out after 2 s (the client's timeout): Shutdown used
  // to write all 6 queued events one after the other, 12 s.
  sink_.HangFor(seconds(2));
  for (int i = 0; i < 6; ++i) {
    Recorder().Event(MakePod("p" + std::to_string(i)), kEventNormal, "R", "m");
  }
  ASSERT_TRUE(sink_.WaitForHangingOr(0, [] { return false; }));
  const TimePoint start = clock_.Now();
  std::atomic<bool> done{false};
  std::thread shutdown([&] {
    Broadcaster().Shutdown();
    done = true;
    sink_.Poke();
  });
  // Each round lets the hanging call time out; count them until Shutdown
  // returns.
  int rounds = 0;
  for (; rounds < 10; ++rounds) {
    ASSERT_TRUE(sink_.WaitForHangingOr(rounds, [&] { return done.load(); }));
    if (done) break;
    clock_.Advance(seconds(2));
  }
  shutdown.join();
  EXPECT_LE(sink_.Hanging(), 2) << "writes attempted after Shutdown";
  EXPECT_LE(clock_.Now() - start, seconds(4));
  EXPECT_TRUE(MetricHas("events_recorded_total{result=\"dropped_shutdown\"}"))
      << metrics_.Render();
}

TEST_F(EventRecorderTest, EachWriteHasADeadline) {
  const TimePoint start = clock_.Now();
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");  // PATCH
  Flush();
  EXPECT_EQ(sink_.Actions().size(), 2u);
  EXPECT_EQ(sink_.Deadlines(), (std::vector<CallDeadline>{start + seconds(5),
                                                          start + seconds(5)}));
}

TEST_F(EventRecorderTest, ShutdownEndsTheCallInFlightByItsDeadline) {
  // A server that accepts and never answers, and a client without a
  // timeout: only the call's deadline ends it.
  sink_.HangFor(hours(24));
  for (int i = 0; i < 6; ++i) {
    Recorder().Event(MakePod("p" + std::to_string(i)), kEventNormal, "R", "m");
  }
  ASSERT_TRUE(sink_.WaitForHangingOr(0, [] { return false; }));
  const TimePoint start = clock_.Now();
  std::atomic<bool> done{false};
  std::thread shutdown([&] {
    Broadcaster().Shutdown();
    done = true;
    sink_.Poke();
  });
  for (int rounds = 0; rounds < 10; ++rounds) {
    ASSERT_TRUE(sink_.WaitForHangingOr(rounds, [&] { return done.load(); }));
    if (done) break;
    clock_.Advance(sink_.HangDeadline() - clock_.Now());
  }
  shutdown.join();
  EXPECT_LE(sink_.Hanging(), 2);
  // write_timeout (5 s) for the call in flight, at most the grace (1 s)
  // for one more begun before Shutdown was seen.
  EXPECT_LE(clock_.Now() - start, seconds(6));
}

TEST_F(EventRecorderTest, ShutdownWritesWhatIsQueuedWhenTheServerAnswers) {
  for (int i = 0; i < 3; ++i) {
    Recorder().Event(MakePod("p" + std::to_string(i)), kEventNormal, "R", "m");
  }
  Broadcaster().Shutdown();
  EXPECT_EQ(sink_.Stored().size(), 3u);
}

TEST_F(EventRecorderTest, EventsAfterShutdownAreCountedAsSuch) {
  Broadcaster().Shutdown();
  Recorder().Event(MakePod("web-1"), kEventNormal, "Pulled", "m");
  EXPECT_EQ(Broadcaster().dropped(), 1);
  EXPECT_TRUE(MetricHas("events_recorded_total{result=\"dropped_shutdown\"} 1"))
      << metrics_.Render();
  EXPECT_TRUE(
      MetricHas("events_recorded_total{result=\"dropped_queue_full\"} 0"))
      << metrics_.Render();
}

// The reviewer's case end to end, on real time: an API server that accepts
// connections and never answers, a client timeout of 2 s, 6 events. The
// RestEventSink passes the write deadline to RestClient, so Shutdown waits
// about write_timeout, not 6 x 2 s.
TEST(RestEventSinkTest, ShutdownIsNotHeldUpByAServerThatNeverAnswers) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);  // the kernel accepts; nobody answers
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  metrics::Registry metrics;
  auto client = RestClient::New(
      {.server = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)),
       .timeout = seconds(2),
       .metrics = &metrics});
  ASSERT_TRUE(client.ok()) << client.status();
  RestEventSink sink(client->get());
  auto broadcaster = std::make_unique<EventBroadcaster>(
      EventBroadcasterOptions{.sink = &sink,
                              .metrics = &metrics,
                              .write_timeout = milliseconds(300),
                              .shutdown_grace = milliseconds(100)});
  auto recorder = broadcaster->NewRecorder("test");
  for (int i = 0; i < 6; ++i) {
    recorder->Event(MakePod("p" + std::to_string(i)), kEventNormal, "R", "m");
  }
  const auto start = std::chrono::steady_clock::now();
  broadcaster->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
  ::close(fd);
}

TEST(FakeEventRecorderTest, KeepsTypeReasonMessage) {
  FakeEventRecorder r;
  r.Event(MakePod("x"), kEventNormal, "SuccessfulCreate", "Created pod: x");
  EXPECT_EQ(r.Events(),
            std::vector<std::string>{"Normal SuccessfulCreate Created pod: x"});
}

}  // namespace
}  // namespace kplane::informer
