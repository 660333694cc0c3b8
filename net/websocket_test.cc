// net/websocket.h (frames, handshake key, channel records) and
// net/http_upgrade.h (a 101 hands the connection to its owner).
#include "net/websocket.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/http_upgrade.h"

namespace kplane::net {
namespace {

using testing::Latch;
using testing::RawConnection;

TEST(WebSocketTest, AcceptKeyIsRfc6455s) {
  // RFC 6455 1.3's example.
  EXPECT_EQ(WebSocketAcceptKey("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocketTest, ReadsMaskedFramesOfEverySize) {
  for (size_t n : {size_t{0}, size_t{5}, size_t{125}, size_t{126},
                   size_t{65535}, size_t{65536}, size_t{70000}}) {
    std::string payload(n, 'x');
    for (size_t i = 0; i < n; ++i) payload[i] = static_cast<char>(i * 7);
    WebSocketReader r;
    std::string frame = EncodeWebSocketClientFrame(WebSocketOpcode::kBinary,
                                                   payload, 0x12345678);
    // Byte by byte for the small ones: every split point.
    if (n < 200) {
      for (size_t i = 0; i + 1 < frame.size(); ++i) {
        r.Feed(frame.substr(i, 1));
        auto m = r.Next();
        ASSERT_TRUE(m.ok());
        ASSERT_FALSE(m->has_value()) << "n=" << n << " i=" << i;
      }
      r.Feed(frame.substr(frame.size() - 1));
    } else {
      r.Feed(frame);
    }
    auto m = r.Next();
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE(m->has_value()) << n;
    EXPECT_EQ((*m)->opcode, WebSocketOpcode::kBinary);
    EXPECT_EQ((*m)->payload, payload);
  }
}

TEST(WebSocketTest, JoinsFragmentsWithControlFramesBetween) {
  WebSocketReader r;
  r.Feed(EncodeWebSocketClientFrame(WebSocketOpcode::kText, "he", 1, false));
  r.Feed(EncodeWebSocketClientFrame(WebSocketOpcode::kPing, "p", 2));
  r.Feed(EncodeWebSocketClientFrame(WebSocketOpcode::kContinuation, "ll", 3,
                                    false));
  r.Feed(EncodeWebSocketClientFrame(WebSocketOpcode::kContinuation, "o", 4));
  auto ping = r.Next();
  ASSERT_TRUE(ping.ok() && ping->has_value());
  EXPECT_EQ((*ping)->opcode, WebSocketOpcode::kPing);
  auto m = r.Next();
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->opcode, WebSocketOpcode::kText);
  EXPECT_EQ((*m)->payload, "hello");
  auto none = r.Next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// Each malformed input fails with its close code, and stays failed.
TEST(WebSocketTest, MalformedFramesFailWithCloseCodes) {
  struct Case {
    const char* what;
    std::string bytes;
    uint16_t code;
  };
  std::string unmasked =
      EncodeWebSocketFrame(WebSocketOpcode::kBinary, "abc");  // server frame
  std::string rsv =
      EncodeWebSocketClientFrame(WebSocketOpcode::kBinary, "a", 1);
  rsv[0] = static_cast<char>(rsv[0] | 0x40);
  std::string opcode =
      EncodeWebSocketClientFrame(WebSocketOpcode::kBinary, "a", 1);
  opcode[0] = static_cast<char>((opcode[0] & 0xF0) | 0x3);
  std::string long_ping(126, 'p');
  std::string top_bit("\x82\xFF\x80\x00\x00\x00\x00\x00\x00\x01", 10);
  std::string huge = "\x82\xFF";
  huge += std::string("\x00\x00\x00\x01\x00\x00\x00\x00", 8);  // 4 GiB
  std::vector<Case> cases = {
      {"unmasked", unmasked, 1002},
      {"reserved bits", rsv, 1002},
      {"unknown opcode", opcode, 1002},
      {"fragmented ping",
       EncodeWebSocketClientFrame(WebSocketOpcode::kPing, "p", 1, false), 1002},
      {"long ping",
       EncodeWebSocketClientFrame(WebSocketOpcode::kPing, long_ping, 1), 1002},
      {"continuation first",
       EncodeWebSocketClientFrame(WebSocketOpcode::kContinuation, "x", 1),
       1002},
      {"message in message",
       EncodeWebSocketClientFrame(WebSocketOpcode::kBinary, "x", 1, false) +
           EncodeWebSocketClientFrame(WebSocketOpcode::kBinary, "y", 1),
       1002},
      {"length top bit", top_bit, 1002},
      {"over the cap", huge, 1009},
  };
  for (const Case& c : cases) {
    WebSocketReader r({.max_message_bytes = 1024});
    r.Feed(c.bytes);
    StatusOr<std::optional<WebSocketMessage>> m = r.Next();
    if (m.ok() && m->has_value()) m = r.Next();  // the first was fine
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(r.close_code(), c.code) << c.what;
    r.Feed(EncodeWebSocketClientFrame(WebSocketOpcode::kBinary, "ok", 1));
    EXPECT_FALSE(r.Next().ok()) << c.what << ": not failed for good";
  }
}

TEST(WebSocketTest, FragmentsOverTheCapFail) {
  WebSocketReader r({.max_message_bytes = 10});
  r.Feed(
      EncodeWebSocketClientFrame(WebSocketOpcode::kBinary, "123456", 1, false));
  auto first = r.Next();
  ASSERT_TRUE(first.ok());
  r.Feed(
      EncodeWebSocketClientFrame(WebSocketOpcode::kContinuation, "789012", 1));
  EXPECT_FALSE(r.Next().ok());
  EXPECT_EQ(r.close_code(), 1009);
}

TEST(WebSocketTest, ServerFramesReadBackAndCloseCode) {
  WebSocketReader r({.require_mask = false});
  r.Feed(EncodeWebSocketFrame(WebSocketOpcode::kBinary, std::string(300, 'a')));
  r.Feed(EncodeWebSocketClose(1009, "too big"));
  auto m = r.Next();
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->payload.size(), 300u);
  auto c = r.Next();
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->opcode, WebSocketOpcode::kClose);
  EXPECT_EQ(WebSocketCloseCode((*c)->payload), 1009);
  EXPECT_EQ((*c)->payload.substr(2), "too big");
  EXPECT_EQ(WebSocketCloseCode(""), 1005);
}

// A client's close is answered with a code an endpoint may send: 1005
// (no code given) was echoed, which gorilla/websocket reports as a bad
// close code.
TEST(WebSocketTest, CloseRepliesWithASendableCode) {
  auto code = [](uint16_t c) {
    return std::string{static_cast<char>(c >> 8), static_cast<char>(c & 255)};
  };
  EXPECT_EQ(WebSocketCloseReply(""), 1000);
  EXPECT_EQ(WebSocketCloseReply("x"), 1002);
  EXPECT_EQ(WebSocketCloseReply(code(1000)), 1000);
  EXPECT_EQ(WebSocketCloseReply(code(1001) + "bye"), 1001);
  EXPECT_EQ(WebSocketCloseReply(code(1011)), 1011);
  EXPECT_EQ(WebSocketCloseReply(code(4000)), 4000);
  for (uint16_t bad : {999, 1004, 1005, 1006, 1015, 2999, 5000, 65535}) {
    EXPECT_EQ(WebSocketCloseReply(code(bad)), 1002) << bad;
  }
}

TEST(ChannelRecordTest, RoundTripsAndBoundsRecords) {
  ChannelRecordReader r(100);
  std::string bytes = EncodeChannelRecord(1, "out") +
                      EncodeChannelRecord(2, "") + EncodeChannelRecord(3, "{}");
  for (char ch : bytes) r.Feed(std::string_view(&ch, 1));
  std::vector<std::pair<int, std::string>> got;
  for (;;) {
    auto rec = r.Next();
    ASSERT_TRUE(rec.ok());
    if (!rec->has_value()) break;
    got.emplace_back((*rec)->channel, (*rec)->payload);
  }
  EXPECT_EQ(got, (std::vector<std::pair<int, std::string>>{
                     {1, "out"}, {2, ""}, {3, "{}"}}));
  EXPECT_EQ(r.BufferedBytes(), 0u);
  ChannelRecordReader small(2);
  small.Feed(EncodeChannelRecord(1, "abc"));
  EXPECT_FALSE(small.Next().ok());
}

// ---------------------------------------------------------------------------
// UpgradeConnection over a real server.

class UpgradeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.timer_tick = milliseconds(20);
    o.idle_timeout = milliseconds(100);  // must not touch upgraded ones
    server_ = std::make_unique<HttpServer>(o);
    server_->Handle("GET", "/echo",
                    [this](const HttpRequest&, std::shared_ptr<Responder> r) {
                      bool ok = UpgradeConnection(
                          r, {{"Upgrade", "test"}, {"X-A", "b"}},
                          [this](int fd) { StartEcho(fd); });
                      EXPECT_TRUE(ok);
                    });
    server_->Handle("GET", "/late",
                    [](const HttpRequest&, std::shared_ptr<Responder> r) {
                      r->Respond(200, {}, "plain");
                      EXPECT_FALSE(UpgradeConnection(r, {}, [](int fd) {
                        ADD_FAILURE() << "upgraded after a response";
                        if (fd >= 0) ::close(fd);
                      }));
                    });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_->Stop();
    if (echo_.joinable()) echo_.join();
  }

  // Echoes upper-cased until "BYE" or the end, then closes its end.
  void StartEcho(int fd) {
    ASSERT_GE(fd, 0);
    echo_ = std::thread([fd] {
      char buf[256];
      for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 10000) <= 0) break;
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        std::string s(buf, static_cast<size_t>(n));
        for (char& c : s) c = static_cast<char>(std::toupper(c));
        ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
        if (s.find("BYE") != std::string::npos) break;
      }
      ::close(fd);
    });
  }

  std::unique_ptr<HttpServer> server_;
  std::thread echo_;
};

TEST_F(UpgradeTest, SwitchesAndPumpsBothWays) {
  RawConnection c(server_->port());
  // Bytes right after the head (a client that does not wait for the 101)
  // reach the new owner too.
  c.Send("GET /echo HTTP/1.1\r\nHost: x\r\n\r\nearly ");
  ASSERT_TRUE(c.ReadUntilContains("\r\n\r\n"));
  std::string head = c.buffer().substr(0, c.buffer().find("\r\n\r\n") + 4);
  EXPECT_TRUE(head.starts_with("HTTP/1.1 101 Switching Protocols\r\n")) << head;
  EXPECT_NE(head.find("Connection: Upgrade\r\n"), std::string::npos);
  EXPECT_NE(head.find("X-A: b\r\n"), std::string::npos);
  EXPECT_EQ(head.find("Content-Length"), std::string::npos);
  ASSERT_TRUE(c.ReadUntilContains("EARLY "));
  // Past the server's idle timeout: an upgraded connection is the owner's.
  std::this_thread::sleep_for(milliseconds(300));
  c.Send("more GET / HTTP/1.1\r\n\r\n");  // not parsed as HTTP any more
  ASSERT_TRUE(c.ReadUntilContains("MORE GET / HTTP/1.1"));
  c.Send("bye");
  // The owner closed its end: the server closes the client's connection.
  EXPECT_FALSE(c.ReadUntil([](std::string_view) { return false; }));
  EXPECT_TRUE(c.closed());
  EXPECT_NE(c.buffer().find("BYE"), std::string::npos);
}

TEST_F(UpgradeTest, NoUpgradeAfterAResponse) {
  RawConnection c(server_->port());
  c.Send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n");
  StatusOr<HttpResponse> r = c.ReadResponse();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace kplane::net
