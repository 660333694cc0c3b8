// HttpServerOptions::handoff with TLS: a connection that negotiates "h2"
// (or no ALPN) and opens with the HTTP/2 preface is handed over decrypted,
// through a socket pair the I/O loop pumps; HTTP/1.1 clients are served
// as before. Checked: the bytes both ways and the verified identity given
// to the handoff, back-pressure in each direction, ends propagating both
// ways (close_notify included), an h2 client that never sends, and the
// connection cap while a pump lives. All on 127.0.0.1, ephemeral ports.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <string>
#include <thread>
#include <vector>

#include "base/metrics.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/pki.h"
#include "net/socket.h"
#include "net/tls.h"

namespace kplane::net {
namespace {

using testing::kTestDeadline;
using testing::PollUntil;

constexpr size_t kBig = 16 * 1024 * 1024;

// Byte i of the test streams, so that a lost or reordered byte shows.
char PatternByte(size_t i) { return static_cast<char>('a' + (i * 7) % 26); }
std::string Pattern(size_t from, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = PatternByte(from + i);
  return s;
}

// A TLS client on a non-blocking socket, driven with poll from the test's
// thread. It uses OpenSSL directly (with the client context TlsContext
// builds) so that it can tell a close_notify (kClosed) from a bare TCP
// close (kError), which TlsSession deliberately does not.
class TlsTestClient {
 public:
  using Result = TlsSession::Result;

  TlsTestClient(uint16_t port, std::shared_ptr<const TlsContext> ctx)
      : ctx_(std::move(ctx)) {
    // OpenSSL's socket BIO writes with write(2): a refused client's
    // ClientHello to a closed socket must be EPIPE, not the end of the
    // test process.
    ::signal(SIGPIPE, SIG_IGN);
    StatusOr<ScopedFd> fd = ConnectTcp("127.0.0.1", port, seconds(5));
    CHECK(fd.ok()) << fd.status();
    fd_ = std::move(*fd);
    CHECK_EQ(fcntl(fd_.get(), F_SETFL, O_NONBLOCK), 0);
    ssl_ = SSL_new(ctx_->native());
    CHECK(ssl_ != nullptr);
    SSL_clear_options(ssl_, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_set_fd(ssl_, fd_.get());
    SSL_set_connect_state(ssl_);
  }
  ~TlsTestClient() { Close(); }

  // kOk, kError, or kWantRead/kWantWrite on timeout.
  Result Handshake() {
    for (;;) {
      Result r = Map(SSL_do_handshake(ssl_));
      if (r == Result::kOk) return r;
      if (!Wait(r)) return r;
    }
  }
  std::string Alpn() const {
    const unsigned char* p = nullptr;
    unsigned int n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return p ? std::string(reinterpret_cast<const char*>(p), n) : "";
  }
  // Writes all of `data`; false if the connection failed.
  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      int rc =
          SSL_write(ssl_, data.data(),
                    static_cast<int>(std::min<size_t>(data.size(), 1 << 20)));
      if (rc > 0) {
        data.remove_prefix(static_cast<size_t>(rc));
      } else if (!Wait(Map(rc))) {
        return false;
      }
    }
    return true;
  }
  // Writes as much of `data` as goes before the socket stays full for
  // `quiet`; returns the count.
  size_t WriteUntilBlocked(std::string_view data, Duration quiet) {
    size_t total = 0;
    while (total < data.size()) {
      int rc = SSL_write(
          ssl_, data.data() + total,
          static_cast<int>(std::min<size_t>(data.size() - total, 1 << 20)));
      if (rc > 0) {
        total += static_cast<size_t>(rc);
        continue;
      }
      if (Map(rc) != Result::kWantWrite ||
          !WaitFd(fd_.get(), true, quiet).ok()) {
        break;
      }
    }
    return total;
  }
  // Reads until `n` bytes arrived (kOk) or the stream ended: kClosed after
  // a close_notify, kError after a bare close or an error, kWantRead on
  // timeout.
  Result Read(size_t n, std::string* out) {
    char buf[64 * 1024];
    while (out->size() < n) {
      int rc = SSL_read(
          ssl_, buf, static_cast<int>(std::min(sizeof(buf), n - out->size())));
      if (rc > 0) {
        out->append(buf, static_cast<size_t>(rc));
        continue;
      }
      Result r = Map(rc);
      if (!Wait(r)) return r;
    }
    return Result::kOk;
  }
  Result ReadToEnd() {
    std::string sink;
    return Read(SIZE_MAX, &sink);
  }
  void SendCloseNotify() { SSL_shutdown(ssl_); }
  // Closes the TCP connection without a close_notify.
  void Close() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ssl_ = nullptr;
    fd_.Reset();
  }

 private:
  Result Map(int rc) {
    switch (SSL_get_error(ssl_, rc)) {
      case SSL_ERROR_NONE:
        return Result::kOk;
      case SSL_ERROR_WANT_READ:
        return Result::kWantRead;
      case SSL_ERROR_WANT_WRITE:
        return Result::kWantWrite;
      case SSL_ERROR_ZERO_RETURN:
        return Result::kClosed;
      default:
        ERR_clear_error();
        return Result::kError;
    }
  }
  // Waits for what `r` asks; false if `r` is final or the wait timed out.
  bool Wait(Result r) {
    if (r != Result::kWantRead && r != Result::kWantWrite) return false;
    return WaitFd(fd_.get(), r == Result::kWantWrite, kTestDeadline).ok();
  }

  std::shared_ptr<const TlsContext> ctx_;
  ScopedFd fd_;
  SSL* ssl_ = nullptr;
};

// What the server handed over.
struct Handed {
  ScopedFd fd;
  std::shared_ptr<const TlsConnectionInfo> tls;
};

class HttpTlsHandoffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const WallTime now = Clock::Real()->WallNow();
    ca_ = *GenerateCa("test-ca", now);
    server_cert_ = *IssueCertificate(ca_,
                                     {.common_name = "server",
                                      .ip_addresses = {"127.0.0.1"},
                                      .server_auth = true},
                                     now);
    alice_ = *IssueCertificate(ca_,
                               {.common_name = "alice",
                                .organizations = {"devs"},
                                .client_auth = true},
                               now);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  void Start(HttpServerOptions o) {
    o.metrics = &registry_;
    o.tls =
        *TlsContext::NewServer({.cert_pem = server_cert_.cert_pem,
                                .key_pem = server_cert_.key_pem,
                                .client_ca_pem = ca_.cert_pem,
                                .client_auth = ClientAuth::kRequireAndVerify,
                                .alpn = {"h2", "http/1.1"}});
    o.handoff_preface = std::string(kHttp2Preface);
    o.handoff = [this](int fd, std::shared_ptr<const TlsConnectionInfo> tls) {
      {
        MutexLock l(&mu_);
        handed_.push_back({ScopedFd(fd), std::move(tls)});
      }
      cv_.notify_all();
    };
    server_ = std::make_unique<HttpServer>(std::move(o));
    server_->Handle("GET", "/x",
                    [](const HttpRequest& req, std::shared_ptr<Responder> r) {
                      r->Respond(200, {}, "http1 " + req.tls->alpn);
                    });
    ASSERT_TRUE(server_->Start().ok());
  }

  std::shared_ptr<const TlsContext> ClientTls(std::vector<std::string> alpn) {
    return *TlsContext::NewClient({.ca_pem = ca_.cert_pem,
                                   .cert_pem = alice_.cert_pem,
                                   .key_pem = alice_.key_pem,
                                   .alpn = std::move(alpn)});
  }

  // Waits for the n-th handed-over connection (0-based); -1 on timeout.
  int AwaitHanded(size_t n) {
    MutexLock l(&mu_);
    if (!cv_.wait_for(l.native(), kTestDeadline,
                      [&]() REQUIRES(mu_) { return handed_.size() > n; })) {
      return -1;
    }
    return handed_[n].fd.get();
  }
  std::shared_ptr<const TlsConnectionInfo> HandedTls(size_t n) {
    MutexLock l(&mu_);
    return handed_.at(n).tls;
  }
  size_t NumHanded() {
    MutexLock l(&mu_);
    return handed_.size();
  }
  // As the owner does when done.
  void CloseHanded(size_t n) {
    MutexLock l(&mu_);
    handed_.at(n).fd.Reset();
  }

  // Reads exactly `n` bytes from the handed-over `fd` (non-blocking).
  static std::string ReadPair(int fd, size_t n) {
    std::string got;
    std::vector<char> buf(256 * 1024);
    while (got.size() < n) {
      ssize_t k = ::recv(fd, buf.data(), std::min(buf.size(), n - got.size()),
                         MSG_DONTWAIT);
      if (k > 0) {
        got.append(buf.data(), static_cast<size_t>(k));
      } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
                 !WaitFd(fd, false, kTestDeadline).ok()) {
        break;
      }
    }
    return got;
  }
  // True if `fd` reads EOF (after discarding data) in time.
  static bool PairSeesEof(int fd) {
    char buf[4096];
    for (;;) {
      if (!WaitFd(fd, false, kTestDeadline).ok()) return false;
      ssize_t k = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (k == 0) return true;
      if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return true;
    }
  }
  void AwaitNoConnections() {
    PollUntil([&] {
      return server_->NumConnections() == 0 && server_->NumHandedOff() == 0;
    });
  }

  KeyPair ca_, server_cert_, alice_;
  metrics::Registry registry_;
  FakeClock clock_;  // outlives server_
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<Handed> handed_ GUARDED_BY(mu_);
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpTlsHandoffTest, H2IsPumpedDecryptedBothWays) {
  Start({});
  TlsTestClient c(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(c.Handshake(), TlsSession::Result::kOk);
  EXPECT_EQ(c.Alpn(), "h2");
  const std::string hello = std::string(kHttp2Preface) + "hello";
  ASSERT_TRUE(c.WriteAll(hello));
  int fd = AwaitHanded(0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ReadPair(fd, hello.size()), hello);
  // The handoff learns who the client is.
  std::shared_ptr<const TlsConnectionInfo> tls = HandedTls(0);
  ASSERT_NE(tls, nullptr);
  EXPECT_EQ(tls->alpn, "h2");
  EXPECT_TRUE(tls->peer_verified);
  EXPECT_EQ(tls->peer.common_name, "alice");
  ASSERT_EQ(::send(fd, "world", 5, MSG_NOSIGNAL), 5);
  std::string got;
  ASSERT_EQ(c.Read(5, &got), TlsSession::Result::kOk);
  EXPECT_EQ(got, "world");
  EXPECT_EQ(server_->NumConnections(), 1u);
  EXPECT_EQ(server_->NumHandedOff(), 1u);
}

TEST_F(HttpTlsHandoffTest, NoAlpnDecidesByThePreface) {
  Start({});
  // No ALPN, HTTP/2 preface: handed over.
  TlsTestClient h2(server_->port(), ClientTls({}));
  ASSERT_EQ(h2.Handshake(), TlsSession::Result::kOk);
  EXPECT_EQ(h2.Alpn(), "");
  // In pieces: the server waits for the whole preface.
  ASSERT_TRUE(h2.WriteAll(kHttp2Preface.substr(0, 3)));
  ASSERT_TRUE(h2.WriteAll(kHttp2Preface.substr(3)));
  int fd = AwaitHanded(0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ReadPair(fd, kHttp2Preface.size()), kHttp2Preface);
  // No ALPN, HTTP/1.1: served here.
  TlsTestClient h1(server_->port(), ClientTls({}));
  ASSERT_EQ(h1.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(h1.WriteAll("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"));
  std::string got;
  h1.Read(40, &got);
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_EQ(NumHanded(), 1u);
}

TEST_F(HttpTlsHandoffTest, Http11AlpnIsServedHere) {
  Start({});
  HttpClient client("127.0.0.1", server_->port(),
                    {.tls = ClientTls({"http/1.1"})});
  StatusOr<HttpResponse> r = client.Request("GET", "/x");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "http1 http/1.1");
  EXPECT_EQ(NumHanded(), 0u);
}

TEST_F(HttpTlsHandoffTest, H2WithoutThePrefaceIsClosed) {
  Start({});
  TlsTestClient c(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(c.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(c.WriteAll("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"));
  TlsSession::Result end = c.ReadToEnd();
  EXPECT_TRUE(end == TlsSession::Result::kClosed ||
              end == TlsSession::Result::kError);
  EXPECT_EQ(NumHanded(), 0u);
}

// A client that negotiates h2 and never sends holds its slot until the
// header timeout, and is never handed over.
TEST_F(HttpTlsHandoffTest, SilentH2ClientIsClosedAtTheHeaderTimeout) {
  Start({.max_connections = 1,
         .header_timeout = seconds(30),
         .timer_tick = seconds(1),
         .clock = &clock_});
  TlsTestClient silent(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(silent.Handshake(), TlsSession::Result::kOk);
  // It counts: a second client is refused.
  TlsTestClient second(server_->port(), ClientTls({"h2"}));
  TlsSession::Result r = second.Handshake();
  if (r == TlsSession::Result::kOk) r = second.ReadToEnd();
  EXPECT_NE(r, TlsSession::Result::kWantRead);  // refused, not left hanging
  clock_.WaitForWaiters(1);
  clock_.Advance(seconds(31));
  EXPECT_EQ(silent.ReadToEnd(), TlsSession::Result::kError);  // closed
  EXPECT_EQ(NumHanded(), 0u);
  AwaitNoConnections();
  EXPECT_EQ(server_->NumConnections(), 0u);
}

// Neither direction buffers without bound when its reader stops reading;
// everything arrives, in order, once it reads again.
TEST_F(HttpTlsHandoffTest, BackPressureBothWays) {
  Start({});
  TlsTestClient c(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(c.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(c.WriteAll(kHttp2Preface));
  int fd = AwaitHanded(0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ReadPair(fd, kHttp2Preface.size()), kHttp2Preface);

  // Client to owner: the owner does not read.
  const std::string up = Pattern(0, kBig);
  size_t sent = c.WriteUntilBlocked(up, milliseconds(300));
  // Kernel buffers (loopback TCP both ends, the socket pair) plus the
  // pump's own bounded buffer; far below 16 MiB.
  EXPECT_LT(sent, 8u * 1024 * 1024);
  std::thread writer([&] { EXPECT_TRUE(c.WriteAll(up.substr(sent))); });
  EXPECT_TRUE(ReadPair(fd, kBig) == up);
  writer.join();

  // Owner to client: the client does not read.
  const std::string down = Pattern(3, kBig);
  size_t written = 0;
  while (written < down.size()) {
    ssize_t k = ::send(fd, down.data() + written, down.size() - written,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      written += static_cast<size_t>(k);
      continue;
    }
    ASSERT_TRUE(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    if (!WaitFd(fd, true, milliseconds(300)).ok()) break;
  }
  EXPECT_LT(written, 8u * 1024 * 1024);
  std::thread owner([&] {
    size_t off = written;
    while (off < down.size()) {
      ssize_t k = ::send(fd, down.data() + off, down.size() - off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) {
        off += static_cast<size_t>(k);
      } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
                 !WaitFd(fd, true, kTestDeadline).ok()) {
        break;
      }
    }
    EXPECT_EQ(off, down.size());
  });
  std::string got;
  EXPECT_EQ(c.Read(kBig, &got), TlsSession::Result::kOk);
  owner.join();
  EXPECT_TRUE(got == down);
}

// The owner closing its end: the client gets what was written, then
// close_notify (kClosed, not an error), and the slot comes back.
TEST_F(HttpTlsHandoffTest, OwnerCloseReachesTheClientWithCloseNotify) {
  Start({});
  TlsTestClient c(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(c.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(c.WriteAll(kHttp2Preface));
  int fd = AwaitHanded(0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, "bye", 3, MSG_NOSIGNAL), 3);
  CloseHanded(0);
  std::string got;
  EXPECT_EQ(c.Read(SIZE_MAX, &got), TlsSession::Result::kClosed);
  EXPECT_EQ(got, "bye");
  c.Close();  // else the server lingers for our EOF (linger_timeout)
  AwaitNoConnections();
  EXPECT_EQ(server_->NumConnections(), 0u);
  EXPECT_EQ(server_->NumHandedOff(), 0u);
}

// The client's close_notify reaches the owner as EOF after the data before
// it; the owner can still answer until it closes.
TEST_F(HttpTlsHandoffTest, ClientCloseNotifyReachesTheOwnerAsEof) {
  Start({});
  TlsTestClient c(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(c.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(c.WriteAll(std::string(kHttp2Preface) + "last"));
  c.SendCloseNotify();
  int fd = AwaitHanded(0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ReadPair(fd, kHttp2Preface.size() + 4),
            std::string(kHttp2Preface) + "last");
  EXPECT_TRUE(PairSeesEof(fd));
  ASSERT_EQ(::send(fd, "ack", 3, MSG_NOSIGNAL), 3);
  CloseHanded(0);
  std::string got;
  EXPECT_EQ(c.Read(SIZE_MAX, &got), TlsSession::Result::kClosed);
  EXPECT_EQ(got, "ack");
  c.Close();
  AwaitNoConnections();
  EXPECT_EQ(server_->NumConnections(), 0u);
}

// A client that vanishes (TCP close without close_notify) closes the pair.
TEST_F(HttpTlsHandoffTest, ClientDisconnectClosesThePair) {
  Start({});
  TlsTestClient c(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(c.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(c.WriteAll(kHttp2Preface));
  int fd = AwaitHanded(0);
  ASSERT_GE(fd, 0);
  c.Close();
  EXPECT_TRUE(PairSeesEof(fd));
  CloseHanded(0);
  AwaitNoConnections();
  EXPECT_EQ(server_->NumConnections(), 0u);
}

// A pumped connection holds its max_connections slot while the pump lives.
TEST_F(HttpTlsHandoffTest, PumpedConnectionCountsAgainstTheCap) {
  Start({.max_connections = 1});
  TlsTestClient first(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(first.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(first.WriteAll(kHttp2Preface));
  ASSERT_GE(AwaitHanded(0), 0);
  {
    TlsTestClient refused(server_->port(), ClientTls({"h2"}));
    TlsSession::Result r = refused.Handshake();
    if (r == TlsSession::Result::kOk) r = refused.ReadToEnd();
    EXPECT_TRUE(r == TlsSession::Result::kClosed ||
                r == TlsSession::Result::kError);
  }
  CloseHanded(0);
  EXPECT_EQ(first.ReadToEnd(), TlsSession::Result::kClosed);
  first.Close();
  AwaitNoConnections();
  TlsTestClient next(server_->port(), ClientTls({"h2"}));
  ASSERT_EQ(next.Handshake(), TlsSession::Result::kOk);
  ASSERT_TRUE(next.WriteAll(kHttp2Preface));
  EXPECT_GE(AwaitHanded(1), 0);
}

}  // namespace
}  // namespace kplane::net
