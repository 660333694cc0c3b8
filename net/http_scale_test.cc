// Many concurrent streaming connections on one server: the shape of 10,000
// Kubernetes watches, scaled to fit a unit test.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>

#include "base/mutex.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/socket.h"

namespace kplane::net {
namespace {

using testing::Latch;

int CountThreads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

TEST(HttpScaleTest, TwoThousandConcurrentStreams) {
  constexpr int kStreams = 2000;
  ASSERT_TRUE(RaiseFileDescriptorLimit().ok());
  metrics::Registry registry;
  HttpServerOptions o;
  o.metrics = &registry;
  o.worker_threads = 2;
  Mutex mu;
  std::vector<std::shared_ptr<Responder>> streams;
  Latch all_started(kStreams), all_closed(kStreams);
  std::atomic<int> closes{0};
  // After the locals its callbacks use: on any return it stops (and every
  // OnClose has run) before they go.
  HttpServer server(o);
  server.Handle("GET", "/watch",
                [&](const HttpRequest&, std::shared_ptr<Responder> r) {
                  r->StartStream(200, {{"Content-Type", "application/json"}});
                  r->OnClose([&] {
                    closes++;
                    all_closed.CountDown();
                  });
                  MutexLock l(&mu);
                  streams.push_back(r);
                  all_started.CountDown();
                });
  ASSERT_TRUE(server.Start().ok());
  const int threads_before = CountThreads();

  std::vector<ScopedFd> clients;
  const std::string request = "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < kStreams; ++i) {
    auto fd = ConnectTcp("127.0.0.1", server.port(), seconds(10));
    ASSERT_TRUE(fd.ok()) << i << ": " << fd.status();
    ASSERT_EQ(::send(fd->get(), request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    clients.push_back(std::move(*fd));
  }
  ASSERT_TRUE(all_started.Wait());
  EXPECT_EQ(server.NumConnections(), static_cast<size_t>(kStreams));
  // No thread per connection.
  EXPECT_EQ(CountThreads(), threads_before);

  // One event to every watcher; every client receives it.
  {
    MutexLock l(&mu);
    for (auto& r : streams) ASSERT_TRUE(r->Write("{\"type\":\"ADDED\"}\n"));
  }
  for (int i = 0; i < kStreams; ++i) {
    std::string got;
    while (got.find("{\"type\":\"ADDED\"}\n") == std::string::npos) {
      ASSERT_TRUE(WaitFd(clients[i].get(), false, testing::kTestDeadline).ok())
          << "client " << i << " got only: " << got;
      char buf[4096];
      ssize_t n = ::recv(clients[i].get(), buf, sizeof(buf), 0);
      ASSERT_GT(n, 0);
      got.append(buf, static_cast<size_t>(n));
    }
  }

  // Every client leaves; every producer hears about it exactly once.
  clients.clear();
  ASSERT_TRUE(all_closed.Wait());
  server.Stop();
  EXPECT_EQ(server.NumConnections(), 0u);
  EXPECT_EQ(closes.load(), kStreams);
  MutexLock l(&mu);
  for (auto& r : streams) EXPECT_TRUE(r->IsClosed());
}

}  // namespace
}  // namespace kplane::net
