// HttpServerOptions::handoff: a connection opening with the HTTP/2 preface
// leaves the server unread; every other connection is served as HTTP/1.1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

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
    o.handoff_preface = std::string(kHttp2Preface);
    o.handoff = [this](int fd) {
      {
        MutexLock l(&mu_);
        fds_.push_back(fd);
      }
      handed_.CountDown();
    };
    o.timer_tick = milliseconds(20);
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

  Mutex mu_;
  std::vector<int> fds_ GUARDED_BY(mu_);
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

}  // namespace
}  // namespace kplane::net
