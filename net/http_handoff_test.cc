// HttpServerOptions::handoff: a connection opening with the HTTP/2 preface
// leaves the server unread; every other connection is served as HTTP/1.1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <thread>

#include "net/http_server.h"
#include "net/http_test_util.h"

namespace kplane::net {
namespace {

using testing::Latch;
using testing::RawConnection;

class HandoffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.max_connections = max_connections_;
    o.handoff_preface = std::string(kHttp2Preface);
    o.handoff = [this](int fd, std::shared_ptr<const TlsConnectionInfo>) {
      {
        MutexLock l(&mu_);
        fds_.push_back(fd);
        ++handed_total_;
      }
      handed_cv_.notify_all();
      handed_.CountDown();
    };
    o.timer_tick = timer_tick_;
    server_ = std::make_unique<HttpServer>(o);
    server_->Handle("GET", "/x",
                    [](const HttpRequest&, std::shared_ptr<Responder> r) {
                      r->Respond(200, {}, "http1");
                    });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_->Stop();
    MutexLock l(&mu_);
    for (int fd : fds_) ::close(fd);
  }

  // Reads from the handed-off socket until `n` bytes arrived.
  std::string ReadHanded(size_t n) {
    int fd;
    {
      MutexLock l(&mu_);
      fd = fds_.at(0);
    }
    std::string got;
    while (got.size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) break;
      char buf[256];
      ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
      if (k <= 0) break;
      got.append(buf, static_cast<size_t>(k));
    }
    return got;
  }

  // Waits until `n` sockets were handed over in all; returns the last.
  int WaitHanded(size_t n) {
    MutexLock l(&mu_);
    bool done =
        handed_cv_.wait_for(l.native(), testing::kTestDeadline,
                            [&]() REQUIRES(mu_) { return handed_total_ >= n; });
    return done ? fds_.back() : -1;
  }
  // As the other server does when its connection ends.
  void CloseHanded(int fd) {
    MutexLock l(&mu_);
    std::erase(fds_, fd);
    ::close(fd);
  }
  void CloseAllHanded() {
    MutexLock l(&mu_);
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }
  // Whether the server released every handed-off slot within the test
  // deadline. It finds closed handed-off sockets on its timer ticks (or at
  // an accept at the cap) and says so to nobody, so this polls.
  bool AwaitNoneHandedOff() {
    return testing::PollUntil([&] { return server_->NumHandedOff() == 0; });
  }

  size_t max_connections_ = 10000;
  Duration timer_tick_ = milliseconds(20);
  Mutex mu_;
  std::condition_variable handed_cv_;
  std::vector<int> fds_ GUARDED_BY(mu_);  // handed over, not yet closed
  size_t handed_total_ GUARDED_BY(mu_) = 0;
  Latch handed_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HandoffTest, Http2PrefaceIsHandedOverUnread) {
  RawConnection c(server_->port());
  std::string bytes = std::string(kHttp2Preface) + "SETTINGS";
  c.Send(bytes);
  ASSERT_TRUE(handed_.Wait());
  EXPECT_EQ(ReadHanded(bytes.size()), bytes);
  EXPECT_EQ(server_->NumConnections(), 0u);
}

TEST_F(HandoffTest, PrefaceInPiecesIsHandedOver) {
  RawConnection c(server_->port());
  c.Send("PR");  // not enough to tell from POST or PUT
  c.Send(std::string(kHttp2Preface).substr(2));
  ASSERT_TRUE(handed_.Wait());
  EXPECT_EQ(ReadHanded(kHttp2Preface.size()), std::string(kHttp2Preface));
}

TEST_F(HandoffTest, Http1IsServed) {
  RawConnection c(server_->port());
  c.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(c.ReadUntilContains("http1"));
  // A second request on the same connection is not sniffed again.
  c.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(c.ReadUntil(
      [](std::string_view b) { return b.find("http1") != b.rfind("http1"); }));
  EXPECT_FALSE(handed_.Done());
}

class HandoffCapTest : public HandoffTest {
 protected:
  void SetUp() override {
    max_connections_ = 1;
    HandoffTest::SetUp();
  }
};

// The handed-off connection is still open (in the other server): it keeps
// its slot, and the next connection is over the cap; once the other server
// closes it, the slot comes back.
TEST_F(HandoffCapTest, HandedOffConnectionCountsUntilClosed) {
  RawConnection grpc(server_->port());
  grpc.Send(kHttp2Preface);
  int fd = WaitHanded(1);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(server_->NumHandedOff(), 1u);

  RawConnection over(server_->port());
  auto r = over.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 503);

  CloseHanded(fd);
  ASSERT_TRUE(AwaitNoneHandedOff()) << server_->NumHandedOff();
  RawConnection served(server_->port());
  served.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(served.ReadUntilContains("http1"));
}

// More handed-off connections than the cap, one after another, each closed
// by the other server: every one is handed over (none answered 503).
TEST_F(HandoffCapTest, SlotComesBackAfterEachHandedOffConnection) {
  constexpr size_t kRounds = 4;
  for (size_t i = 1; i <= kRounds; ++i) {
    RawConnection grpc(server_->port());
    grpc.Send(kHttp2Preface);
    int fd = WaitHanded(i);
    ASSERT_GE(fd, 0) << "round " << i;
    CloseHanded(fd);
    ASSERT_TRUE(AwaitNoneHandedOff()) << "round " << i;
  }
  RawConnection served(server_->port());
  served.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(served.ReadUntilContains("http1"));
}

class HandoffCapNoSweepTest : public HandoffTest {
 protected:
  void SetUp() override {
    max_connections_ = 1;
    timer_tick_ = hours(1);  // no sweep runs during the test
    HandoffTest::SetUp();
  }
};

// A handed-off connection the other server closed gives its slot back at
// the accept that needs it, not a sweep later: with no sweep at all, the
// next client on a cap of one is served.
TEST_F(HandoffCapNoSweepTest, AcceptAtTheCapReclaimsAClosedHandedOffSlot) {
  RawConnection grpc(server_->port());
  grpc.Send(kHttp2Preface);
  int fd = WaitHanded(1);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(server_->NumHandedOff(), 1u);
  CloseHanded(fd);
  RawConnection served(server_->port());
  served.Send("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(served.ReadUntilContains("http1"));
  EXPECT_EQ(server_->NumHandedOff(), 0u);
}

// More handed-off connections than one sweep checks (256) all give their
// slots back, over a few sweeps.
TEST_F(HandoffTest, ManyClosedHandedOffConnectionsAreAllReleased) {
  constexpr size_t kConnections = 300;
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (size_t i = 1; i <= kConnections; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server_->port()));
    conns.back()->Send(kHttp2Preface);
  }
  ASSERT_GE(WaitHanded(kConnections), 0);
  EXPECT_EQ(server_->NumHandedOff(), kConnections);
  CloseAllHanded();
  EXPECT_TRUE(AwaitNoneHandedOff())
      << server_->NumHandedOff() << " of " << kConnections << " still held";
}

}  // namespace
}  // namespace kplane::net
