// Bounded memory for watches (issue 15): a watch that does not read is
// paced to a small buffer and closed once it falls too far behind; one
// that reads gets an initial replay of any size; all watches together stay
// under a byte ceiling. Against a real ApiServer on a loopback port.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "apiserver/test_server.h"
#include "net/http_test_util.h"

namespace kplane::apiserver {
namespace {

using net::testing::RawConnection;
using testing::TestServer;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";
constexpr size_t kValueBytes = 64 * 1024;

std::string ConfigMap(const std::string& name) {
  return R"({"metadata":{"name":")" + name + R"("},"data":{"k":")" +
         std::string(kValueBytes, 'v') + "\"}}";
}

double Metric(TestServer& s, const std::string& line_prefix) {
  std::string text = "\n" + s.metrics()->Render();
  size_t pos = text.find("\n" + line_prefix + " ");
  if (pos == std::string::npos) return 0;
  return std::stod(text.substr(pos + line_prefix.size() + 2));
}

// A watch client that sends its request and never reads a byte. With
// `small_window` the kernel takes less of the stream for it (but reading
// it all later is slow: keep it for clients that never read).
std::unique_ptr<RawConnection> StuckWatch(TestServer& s, const std::string& rv,
                                          bool small_window) {
  auto c = std::make_unique<RawConnection>(s.port());
  if (small_window) {
    int small = 4096;
    setsockopt(c->fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  }
  c->Send("GET " + std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv +
          " HTTP/1.1\r\nHost: x\r\n\r\n");
  return c;
}

std::string CurrentRv(TestServer& s) {
  return s.Get(kConfigMaps).Str({"metadata", "resourceVersion"});
}

// Creates `n` 64 KiB ConfigMaps, then one small sentinel that `reader`
// waits for: by then the cache has dispatched every earlier event.
void CreateAndSync(TestServer& s, testing::WatchStream* reader,
                   const std::string& prefix, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(s.Post(kConfigMaps, ConfigMap(prefix + std::to_string(i))).code,
              201);
  }
  ASSERT_EQ(s.Post(kConfigMaps,
                   R"({"metadata":{"name":")" + prefix + R"(-sentinel"}})")
                .code,
            201);
  for (;;) {
    std::optional<std::string> line = reader->Next();
    ASSERT_TRUE(line.has_value()) << "the reading watch ended";
    if (line->find(prefix + "-sentinel") != std::string::npos) return;
  }
}

TEST(ApiWatchMemoryTest, WatchThatNeverReadsIsClosedAndItsBufferFreed) {
  TestServer s([](ApiServerOptions* o) {
    o->max_watch_buffer_bytes = 64 * 1024;
    o->max_watch_pending_events = 20;
    o->max_watch_buffer_total_bytes = 0;  // this test is about one watch
  });
  const std::string rv = CurrentRv(s);
  auto reader =
      s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv);
  auto stuck = StuckWatch(s, rv, /*small_window=*/false);
  constexpr int kEvents = 200;  // 12.5 MiB of events
  CreateAndSync(s, reader.get(), "cm", kEvents);
  EXPECT_EQ(Metric(s,
                   "apiserver_terminated_watchers_total{group=\"\","
                   "resource=\"configmaps\"}"),
            1);
  // The server dropped the connection (and its buffer): the client reads
  // what was on the wire, then the end.
  EXPECT_TRUE(stuck->WaitForClose());
  EXPECT_LT(stuck->buffer().size(), kEvents * kValueBytes / 2)
      << "the stuck watch was sent most of the stream";
  // The reading watch is still served.
  ASSERT_EQ(s.Post(kConfigMaps, R"({"metadata":{"name":"after"}})").code, 201);
  std::optional<std::string> after = reader->Next();
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("\"after\""), std::string::npos);
}

TEST(ApiWatchMemoryTest, ReadingWatchGetsAnInitialReplayLargerThanItsBuffer) {
  TestServer s([](ApiServerOptions* o) {
    o->max_watch_buffer_bytes = 64 * 1024;
    o->max_watch_pending_events = 20;
    // The hard cap behind pacing is buffer + 4 x this = 576 KiB, far less
    // than the replay.
    o->max_request_body_bytes = 128 * 1024;
  });
  constexpr int kObjects = 100;  // 6.3 MiB of initial events
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("cm" + std::to_string(i))).code,
              201);
  }
  auto w = s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=0");
  for (int i = 0; i < kObjects; ++i) {
    std::optional<std::string> line = w->Next();
    ASSERT_TRUE(line.has_value()) << "the watch ended after " << i;
    EXPECT_EQ(line->rfind("{\"type\":\"ADDED\"", 0), 0u);
  }
  ASSERT_EQ(s.Post(kConfigMaps, R"({"metadata":{"name":"later"}})").code, 201);
  std::optional<std::string> later = w->Next();
  ASSERT_TRUE(later.has_value()) << "the watch ended";
  EXPECT_NE(later->find("\"later\""), std::string::npos);
  EXPECT_EQ(Metric(s,
                   "apiserver_terminated_watchers_total{group=\"\","
                   "resource=\"configmaps\"}"),
            0);
}

TEST(ApiWatchMemoryTest, BudgetClosesTheWatchesHoldingTheMost) {
  TestServer s([](ApiServerOptions* o) {
    o->max_watch_buffer_bytes = 256 * 1024;
    o->max_watch_pending_events = 0;  // only the budget closes watches here
    o->max_watch_buffer_total_bytes = 1024 * 1024;
  });
  const std::string rv = CurrentRv(s);
  auto reader =
      s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv);
  std::vector<std::unique_ptr<RawConnection>> stuck;
  for (int i = 0; i < 8; ++i) stuck.push_back(StuckWatch(s, rv, /*small_window=*/true));
  // Each stuck watch holds 256 KiB + one event once its socket is full:
  // 8 of them pass the 1 MiB ceiling.
  CreateAndSync(s, reader.get(), "cm", 100);
  const double closed =
      Metric(s, "apiserver_watch_buffer_budget_closed_watchers_total");
  EXPECT_GE(closed, 4);
  EXPECT_LE(closed, 8);
  // The reader was never the one holding the most: it got every event.
  ASSERT_EQ(s.Post(kConfigMaps, R"({"metadata":{"name":"after"}})").code, 201);
  std::optional<std::string> after = reader->Next();
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("\"after\""), std::string::npos);
}

}  // namespace
}  // namespace kplane::apiserver
