#include "kubeletsim/pod_logs.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"
#include "kubeletsim/timer_queue.h"
#include "net/http_server.h"

namespace kplane::kubeletsim {
namespace {

LogSource Source() {
  return {.ns = "default",
          .pod = "web",
          .container = "app",
          .started_at = WallTime(std::chrono::seconds(1764781200)),
          .interval = std::chrono::seconds(10)};
}

TEST(PodLogs, LinesFollowTheStartTimeAndInterval) {
  LogSource s = Source();
  EXPECT_EQ(LinesWritten(s, s.started_at - std::chrono::seconds(1)), 0);
  EXPECT_EQ(LinesWritten(s, s.started_at), 1);
  EXPECT_EQ(LinesWritten(s, s.started_at + std::chrono::seconds(29)), 3);
  EXPECT_EQ(LinesWritten(s, s.started_at + std::chrono::seconds(30)), 4);
  s.finished_at = s.started_at + std::chrono::seconds(15);
  EXPECT_EQ(LinesWritten(s, s.started_at + std::chrono::hours(1)), 2);
  EXPECT_EQ(LogLine(s, 0, false),
            "kubeletsim: container app of pod default/web started\n");
  EXPECT_EQ(LogLine(s, 2, true),
            "2025-12-03T17:00:20.000000000Z app: log line 2 of pod "
            "default/web\n");
}

// A follow stream's client: keeps what is written, advances the fake clock
// by `advance` right after the first write that holds `trigger` (a client
// that moves time as soon as it reads a line), and lets the test await a
// text.
class FollowClient : public net::Responder {
 public:
  FollowClient(FakeClock* clock, std::string trigger, Duration advance)
      : clock_(clock), trigger_(std::move(trigger)), advance_(advance) {}

  // True once `want` was written (false after 20 s).
  bool Await(const std::string& want) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return cv_.wait_for(
        l.native(), std::chrono::seconds(20),
        [&]() REQUIRES(mu_) { return got_.find(want) != std::string::npos; });
  }
  std::string got() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return got_;
  }
  // Ends the exchange: the follower's OnClose runs (and drops its hold).
  void EndExchange() {
    std::function<void()> f;
    {
      MutexLock l(&mu_);
      f = std::move(on_close_);
    }
    if (f) f();
  }

  const net::HttpRequest& request() const override { return request_; }
  bool Respond(int, net::HttpHeaders, std::string) override { return true; }
  bool StartStream(int, net::HttpHeaders) override { return true; }
  bool Write(std::string_view chunk) override EXCLUDES(mu_) {
    bool advance = false;
    {
      MutexLock l(&mu_);
      got_.append(chunk);
      if (!advanced_ && got_.find(trigger_) != std::string::npos) {
        advanced_ = advance = true;
      }
    }
    cv_.notify_all();
    if (advance) clock_->Advance(advance_);
    return true;
  }
  bool WriteChunks(std::span<const std::string_view> chunks) override {
    for (std::string_view c : chunks) Write(c);
    return true;
  }
  bool Finish() override { return true; }
  size_t BufferedBytes() const override { return 0; }
  void SetMaxBufferedBytes(size_t) override {}
  void SetResponseDeadline(Duration) override {}
  void OnDrained(size_t, std::function<void()>) override {}
  void OnClose(std::function<void()> callback) override EXCLUDES(mu_) {
    MutexLock l(&mu_);
    on_close_ = std::move(callback);
  }
  bool IsClosed() const override { return false; }
  void OnBodyData(std::function<void(std::string_view, bool)>) override {}
  void Close() override {}

 private:
  FakeClock* const clock_;
  const std::string trigger_;
  const Duration advance_;
  const net::HttpRequest request_;
  Mutex mu_;
  std::condition_variable cv_;
  std::string got_ GUARDED_BY(mu_);
  bool advanced_ GUARDED_BY(mu_) = false;
  std::function<void()> on_close_ GUARDED_BY(mu_);
};

// The next line's timer counts from the time its lines were written, not
// from a clock read after the write: a client that advances the clock as
// soon as it reads line 2 (as FleetTest.ContainerLogsThroughTheApiserver
// does) gets line 3 without advancing again.
TEST(PodLogs, FollowTimerCountsFromTheWrite) {
  LogSource s = Source();
  FakeClock clock(s.started_at + std::chrono::seconds(25));  // lines 0-2
  TimerQueue timers(&clock);
  auto client = std::make_shared<FollowClient>(&clock, "log line 2 of",
                                               std::chrono::seconds(10));
  LogQuery q;
  q.follow = true;
  q.tail_lines = 1;
  ServeContainerLog(
      q, [&]() -> StatusOr<LogSource> { return s; }, &clock, &timers, client);
  EXPECT_TRUE(client->Await("log line 3 of")) << client->got();
  EXPECT_EQ(client->got(),
            "app: log line 2 of pod default/web\n"
            "app: log line 3 of pod default/web\n");
  client->EndExchange();
  timers.Stop();
}

TEST(PodLogs, QuerySelectsTailAndSince) {
  LogSource s = Source();
  const WallTime now = s.started_at + std::chrono::seconds(95);  // 10 lines
  const int64_t written = LinesWritten(s, now);
  ASSERT_EQ(written, 10);
  EXPECT_EQ(FirstLine(s, {}, written, now), 0);
  EXPECT_EQ(FirstLine(s, {.tail_lines = 3}, written, now), 7);
  EXPECT_EQ(FirstLine(s, {.tail_lines = 0}, written, now), 10);
  EXPECT_EQ(FirstLine(s, {.tail_lines = 50}, written, now), 0);
  // Written at or after now - 25s = start + 70s: lines 7, 8, 9.
  EXPECT_EQ(FirstLine(s, {.since_seconds = 25}, written, now), 7);
  EXPECT_EQ(FirstLine(s, {.since_seconds = 26}, written, now), 7);
  EXPECT_EQ(FirstLine(s, {.since_seconds = 24}, written, now), 8);
  // Both: the later of the two.
  EXPECT_EQ(FirstLine(s, {.tail_lines = 1, .since_seconds = 25}, written, now),
            9);
}

// A log neither grows with the container's age nor overflows: the interval
// is held in [1ms, 24h], only the last 100,000 lines exist, and far times in
// the query are held at the clock's ends.
TEST(PodLogs, OldLinesAreRotatedAwayAndTimesHeld) {
  using std::chrono::hours;
  using std::chrono::milliseconds;
  EXPECT_EQ(LogIntervalFromAnnotation("1ns"), milliseconds(1));
  EXPECT_EQ(LogIntervalFromAnnotation("2100000h"), hours(24));
  EXPECT_EQ(LogIntervalFromAnnotation("5s"), std::chrono::seconds(5));
  EXPECT_EQ(LogIntervalFromAnnotation(""), kDefaultLogInterval);
  EXPECT_EQ(LogIntervalFromAnnotation("-1s"), kDefaultLogInterval);
  EXPECT_EQ(LogIntervalFromAnnotation("soon"), kDefaultLogInterval);

  LogSource s = Source();
  s.interval = LogIntervalFromAnnotation("1ns");
  const WallTime now = s.started_at + hours(24);
  const int64_t written = LinesWritten(s, now);
  ASSERT_EQ(written, 86400001);
  EXPECT_EQ(FirstLine(s, {}, written, now), written - kRetainedLogLines);
  EXPECT_EQ(FirstLine(s, {.tail_lines = 5}, written, now), written - 5);
  EXPECT_EQ(FirstLine(s, {.tail_lines = INT64_MAX}, written, now),
            written - kRetainedLogLines);
  EXPECT_EQ(FirstLine(s, {.since_seconds = INT64_MAX}, written, now),
            written - kRetainedLogLines);
  EXPECT_EQ(FirstLine(s, {.since_seconds = INT64_MIN}, written, now),
            written - 1);  // since now: the line due now

  net::HttpRequest req;
  req.query = {{"sinceTime", "9999-12-31T23:59:59Z"}};
  StatusOr<LogQuery> q = ParseLogQuery(req);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(FirstLine(s, *q, written, now), written);  // all before it
  req.query = {{"sinceTime", "0001-01-01T00:00:00Z"}};
  q = ParseLogQuery(req);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(FirstLine(s, *q, written, now), written - kRetainedLogLines);
}

TEST(PodLogs, ParsesTheKubeletsQuery) {
  net::HttpRequest req;
  req.query = {{"follow", "true"},
               {"tailLines", "5"},
               {"timestamps", "true"},
               {"sinceTime", "2025-12-03T17:00:00Z"}};
  StatusOr<LogQuery> q = ParseLogQuery(req);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_TRUE(q->follow);
  EXPECT_TRUE(q->timestamps);
  EXPECT_FALSE(q->previous);
  EXPECT_EQ(q->tail_lines, 5);
  EXPECT_EQ(q->since_time, WallTime(std::chrono::seconds(1764781200)));
  EXPECT_FALSE(q->limit_bytes.has_value());
  req.query = {{"tailLines", "five"}};
  EXPECT_EQ(ParseLogQuery(req).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kplane::kubeletsim
