#include "kubeletsim/pod_logs.h"

#include <gtest/gtest.h>

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
