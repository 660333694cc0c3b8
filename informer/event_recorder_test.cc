#include "informer/event_recorder.h"

#include <gtest/gtest.h>

#include <map>

#include "objects/time.h"

namespace kplane::informer {
namespace {

namespace corev1 = objects::corev1;

// The API in memory: creates keep the event, patches raise its count.
class FakeEventSink : public EventSink {
 public:
  StatusOr<corev1::Event> Create(const corev1::Event& ev) override {
    MutexLock l(&mu_);
    if (block_)
      cv_.wait(l.native(), [&] {
        mu_.AssertHeld();
        return !block_;
      });
    actions_.push_back("create " + ev.metadata().name());
    auto [it, inserted] = stored_.emplace(ev.metadata().name(), ev);
    if (!inserted) return AlreadyExistsError(ev.metadata().name());
    it->second.mutable_metadata()->set_resourceversion(std::to_string(++rv_));
    return it->second;
  }
  StatusOr<corev1::Event> Patch(const corev1::Event& ev) override {
    MutexLock l(&mu_);
    actions_.push_back("patch " + ev.metadata().name());
    auto it = stored_.find(ev.metadata().name());
    if (it == stored_.end()) return NotFoundError(ev.metadata().name());
    it->second.set_count(ev.count());
    it->second.set_message(ev.message());
    *it->second.mutable_lasttimestamp() = ev.lasttimestamp();
    return it->second;
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

 private:
  Mutex mu_;
  std::condition_variable cv_;
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

  FakeClock clock_;
  metrics::Registry metrics_;
  FakeEventSink sink_;
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

TEST(FakeEventRecorderTest, KeepsTypeReasonMessage) {
  FakeEventRecorder r;
  r.Event(MakePod("x"), kEventNormal, "SuccessfulCreate", "Created pod: x");
  EXPECT_EQ(r.Events(),
            std::vector<std::string>{"Normal SuccessfulCreate Created pod: x"});
}

}  // namespace
}  // namespace kplane::informer
