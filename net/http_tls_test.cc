// HttpServer and HttpClient over TLS (HttpServerOptions::tls,
// HttpClientOptions::tls): round trips, streams both ways, the client's
// verified identity in the handler, every refusal with its message, the
// handshake deadline, plaintext HTTP on a TLS port, and the server's
// limits still holding over TLS. All on 127.0.0.1, ephemeral ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <thread>

#include "base/metrics.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/pki.h"
#include "net/socket.h"
#include "net/tls.h"
#include "net/try_send_test_util.h"

namespace kplane::net {
namespace {

using ::testing::HasSubstr;
using testing::RawConnection;

class HttpTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const WallTime now = Clock::Real()->WallNow();
    ca_ = *GenerateCa("test-ca", now);
    server_cert_ = *IssueCertificate(ca_,
                                     {.common_name = "server",
                                      .dns_names = {"localhost"},
                                      .ip_addresses = {"127.0.0.1"},
                                      .server_auth = true},
                                     now);
    alice_ = *IssueCertificate(ca_,
                               {.common_name = "alice",
                                .organizations = {"devs", "ops"},
                                .client_auth = true},
                               now);
    other_ca_ = *GenerateCa("other-ca", now);
  }

  std::shared_ptr<const TlsContext> ServerTls(
      ClientAuth auth = ClientAuth::kRequireAndVerify) {
    TlsServerConfig c{.cert_pem = server_cert_.cert_pem,
                      .key_pem = server_cert_.key_pem,
                      .client_auth = auth,
                      .alpn = {"http/1.1"}};
    if (auth != ClientAuth::kNone) c.client_ca_pem = ca_.cert_pem;
    return *TlsContext::NewServer(c);
  }
  std::shared_ptr<const TlsContext> ClientTls(const KeyPair* cert,
                                              const KeyPair* ca = nullptr,
                                              std::string server_name = "") {
    TlsClientConfig c{.ca_pem = (ca ? ca : &ca_)->cert_pem,
                      .server_name = std::move(server_name),
                      .alpn = {"http/1.1"}};
    if (cert) {
      c.cert_pem = cert->cert_pem;
      c.key_pem = cert->key_pem;
    }
    return *TlsContext::NewClient(c);
  }

  void Start(HttpServerOptions o) {
    o.metrics = &registry_;
    if (!o.tls) o.tls = ServerTls();
    server_ = std::make_unique<HttpServer>(std::move(o));
    // Who the client is, as the handler sees it.
    server_->Handle("GET", "/whoami",
                    [](const HttpRequest& req, std::shared_ptr<Responder> r) {
                      std::string who = "anonymous";
                      if (req.tls && req.tls->peer_verified) {
                        who = req.tls->peer.common_name;
                        for (const auto& g : req.tls->peer.organizations) {
                          who += "," + g;
                        }
                      }
                      if (!req.tls) who = "plaintext";
                      r->Respond(200, {},
                                 who + " " + (req.tls ? req.tls->alpn : ""));
                    });
    server_->Handle("POST", "/echo",
                    [](const HttpRequest& req, std::shared_ptr<Responder> r) {
                      r->Respond(200, {}, req.body);
                    });
    // n chunks of `size` bytes, each filled with its index's letter.
    server_->Handle(
        "GET", "/stream",
        [](const HttpRequest& req, std::shared_ptr<Responder> r) {
          const int n = std::stoi(std::string(req.QueryParam("n")));
          const size_t size = std::stoul(std::string(req.QueryParam("size")));
          r->SetMaxBufferedBytes(0);  // the writer outruns the socket
          r->StartStream(200, {});
          for (int i = 0; i < n; ++i) {
            r->Write(std::string(size, static_cast<char>('a' + i % 26)));
          }
          r->Finish();
        });
    // Echoes a streamed request body, piece by piece, as a stream.
    server_->Handle(
        "POST", "/duplex",
        [](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->StartStream(200, {});
          r->OnBodyData([r](std::string_view data, bool eof) {
            if (!data.empty()) r->Write(data);
            if (eof) r->Finish();
          });
        },
        {.stream_request_body = true, .body_timeout = Duration::zero()});
    if (routes_hook_) routes_hook_(server_.get());
    ASSERT_TRUE(server_->Start().ok());
  }

  HttpClient Client(std::shared_ptr<const TlsContext> tls,
                    std::string host = "127.0.0.1") {
    return HttpClient(host, server_->port(), {.tls = std::move(tls)});
  }

  // The failure is counted just after OpenSSL sent its alert, so a client
  // may see the refusal first: wait for the count (bounded).
  double AwaitFailures(const std::string& reason, double want) {
    const TimePoint deadline = Clock::Real()->Now() + testing::kTestDeadline;
    while (Failures(reason) < want && Clock::Real()->Now() < deadline) {
      std::this_thread::yield();
    }
    return Failures(reason);
  }

  double Failures(const std::string& reason) {
    return registry_
        .NewCounter("kplane_http_tls_handshake_failures_total", "",
                    {"server", "reason"})
        ->With({"http", reason})
        ->Value();
  }

  KeyPair ca_, server_cert_, alice_, other_ca_;
  std::function<void(HttpServer*)> routes_hook_;  // more routes for Start()
  metrics::Registry registry_;
  FakeClock clock_;  // outlives server_
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpTlsTest, RequestsCarryTheVerifiedClientIdentity) {
  Start({});
  HttpClient c = Client(ClientTls(&alice_));
  StatusOr<HttpResponse> r = c.Request("GET", "/whoami");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "alice,devs,ops http/1.1");
  // Keep-alive: a second request and a POST on the same client.
  const std::string big(300 * 1024, 'x');
  r = c.Request("POST", "/echo", {}, big);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, big);
  r = c.Request("GET", "/whoami");
  ASSERT_TRUE(r.ok()) << r.status();
  // One connection for all three.
  EXPECT_EQ(registry_.NewCounter("kplane_http_connections_accepted_total", "")
                ->With({"http"})
                ->Value(),
            1);
}

TEST_F(HttpTlsTest, ChunkedAndLongStreams) {
  Start({});
  HttpClient c = Client(ClientTls(&alice_));
  // Short chunks, then a long stream (32 MiB) whose writer outruns the
  // socket: partial TLS writes, EPOLLOUT, a moving output buffer.
  for (auto [n, size] : {std::pair{100, 10}, std::pair{512, 64 * 1024}}) {
    std::string got;
    StatusOr<HttpResponse> r = c.Stream(
        "GET",
        "/stream?n=" + std::to_string(n) + "&size=" + std::to_string(size), {},
        "", [&](std::string_view d) {
          got.append(d);
          return true;
        });
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(got.size(), static_cast<size_t>(n) * size);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(got[static_cast<size_t>(i) * size + size - 1],
                static_cast<char>('a' + i % 26))
          << i;
    }
  }
}

// The resident memory of this process, from /proc/self/statm.
size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// What a TLS connection sent leaves its output buffer. It stayed there as
// long as every write went out whole (only a full socket, and the EPOLLOUT
// that followed, emptied the buffer), so a long-lived HTTPS connection
// whose client kept up -- a watch -- held everything it ever sent: here
// 96 MiB, in 12,000 responses of 8 KiB on one connection.
TEST_F(HttpTlsTest, SentBytesLeaveTheOutputBuffer) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in its quarantine "
                  "(256 MiB): resident memory says nothing here";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in its quarantine "
                  "(256 MiB): resident memory says nothing here";
#endif
#endif
  Start({});
  HttpClient c = Client(ClientTls(&alice_));
  const size_t before = ResidentBytes();
  for (int i = 0; i < 12000; ++i) {
    size_t got = 0;
    StatusOr<HttpResponse> r = c.Stream("GET", "/stream?n=1&size=8192", {}, "",
                                        [&](std::string_view d) {
                                          got += d.size();
                                          return true;
                                        });
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(got, 8192u);
  }
  const size_t after = ResidentBytes();
  EXPECT_LT(after, before + (32 << 20))
      << "resident " << before << " -> " << after << " bytes";
}

TEST_F(HttpTlsTest, DuplexStream) {
  Start({});
  HttpClient c = Client(ClientTls(&alice_));
  StatusOr<std::unique_ptr<HttpStream>> s = c.OpenStream("POST", "/duplex");
  ASSERT_TRUE(s.ok()) << s.status();
  std::string got;
  for (int i = 0; i < 50; ++i) {
    const std::string msg = "message-" + std::to_string(i) + "\n";
    ASSERT_TRUE((*s)->Send(msg).ok());
    // Each message comes back before the next is sent.
    while (got.find(msg) == std::string::npos) {
      StatusOr<bool> more = (*s)->Read(&got, testing::kTestDeadline);
      ASSERT_TRUE(more.ok()) << more.status();
      ASSERT_TRUE(*more);
    }
  }
  ASSERT_TRUE((*s)->CloseSend().ok());
  for (;;) {
    StatusOr<bool> more = (*s)->Read(&got, testing::kTestDeadline);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
  }
  EXPECT_THAT(got, HasSubstr("message-49\n"));
}

// Waits on `fd` as OpenSSL asked (kWantRead / kWantWrite); false when the
// call failed instead or the wait timed out.
bool WaitAsAsked(int fd, TlsSession::Result r) {
  return (r == TlsSession::Result::kWantRead ||
          r == TlsSession::Result::kWantWrite) &&
         WaitFd(fd, r == TlsSession::Result::kWantWrite, testing::kTestDeadline)
             .ok();
}

// Accepts one connection on `listener` into *fd and completes the server
// side of its handshake; null when either fails.
std::unique_ptr<TlsSession> AcceptTls(
    int listener, const std::shared_ptr<const TlsContext>& server_tls,
    ScopedFd* fd) {
  if (!WaitFd(listener, false, testing::kTestDeadline).ok()) return nullptr;
  *fd = ScopedFd(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK));
  StatusOr<std::unique_ptr<TlsSession>> tls =
      TlsSession::NewServer(server_tls, fd->get());
  if (!tls.ok()) return nullptr;
  TlsSession::Result r;
  while ((r = (*tls)->Handshake()) != TlsSession::Result::kOk) {
    if (!WaitAsAsked(fd->get(), r)) return nullptr;
  }
  return *std::move(tls);
}

// TrySend over TLS: when the socket refuses a record OpenSSL has begun,
// the rest of the chunk is owed (OpenSSL needs the same bytes again), so it
// stays in the stream as a plaintext remainder does, and the next Send
// starts with it (net/try_send_test_util.h has the checks). Chunks of
// `chunk_bytes`.
void ExpectTrySendOverTlsLeavesTheRest(
    const std::shared_ptr<const TlsContext>& server_tls,
    const std::shared_ptr<const TlsContext>& client_tls, size_t chunk_bytes) {
  StatusOr<ScopedFd> listener = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const uint16_t port = *LocalPort(listener->get());
  testing::Latch read(1), drained(1);
  std::promise<std::string> got;
  std::thread server([&] {
    std::string all;
    ScopedFd fd;
    std::unique_ptr<TlsSession> tls =
        AcceptTls(listener->get(), server_tls, &fd);
    read.Wait();  // not a byte until the client's socket is full
    if (tls != nullptr) {
      all = testing::ReadUntilLastChunk(
          [&](char* buf, size_t n) -> ssize_t {
            for (;;) {
              size_t took = 0;
              const TlsSession::Result rr = tls->Read(buf, n, &took);
              if (rr == TlsSession::Result::kOk) {
                return static_cast<ssize_t>(took);
              }
              if (!WaitAsAsked(fd.get(), rr)) return -1;
            }
          },
          &drained);
    }
    got.set_value(all);
  });
  HttpClient c("127.0.0.1", port, {.tls = client_tls});
  StatusOr<std::unique_ptr<HttpStream>> s = c.OpenStream("POST", "/raft");
  EXPECT_TRUE(s.ok()) << s.status();
  if (s.ok()) {
    // Over TLS a full socket never refuses a chunk outright: the first
    // record is begun, so the test never skips.
    EXPECT_TRUE(testing::TrySendUntilPartialThenFinish(
        s->get(), &read, &drained, got.get_future(), chunk_bytes));
  } else {
    read.CountDown();
  }
  server.join();
}

// 64 KiB chunks span five records: the socket refuses one mid-chunk.
TEST_F(HttpTlsTest, TrySendLeavesTheRestForTheNextSend) {
  ExpectTrySendOverTlsLeavesTheRest(ServerTls(), ClientTls(&alice_), 64 << 10);
}

// A chunk of 16,376 bytes is exactly one record ("3ff8\r\n", the data,
// "\r\n": 16 KiB), so the socket refusing it leaves nothing taken, and the
// whole chunk is owed all the same.
TEST_F(HttpTlsTest, TrySendOwesARecordTheSocketRefusedWhole) {
  ExpectTrySendOverTlsLeavesTheRest(ServerTls(), ClientTls(&alice_), 16376);
}

// TrySend over TLS to a peer that reset the connection: OpenSSL's write
// fails, TrySend does not report it as sent, and the error is left for the
// next Send, which reports it and breaks the stream as any failed write
// does (the peer transport then counts the messages dropped). Plaintext:
// HttpClientTest.AFailedWriteBreaksTheStream.
TEST_F(HttpTlsTest, TrySendToAResetPeerLeavesTheErrorForTheNextSend) {
  StatusOr<ScopedFd> listener = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const uint16_t port = *LocalPort(listener->get());
  std::shared_ptr<const TlsContext> server_tls = ServerTls();
  std::thread server([&] {
    ScopedFd fd;
    std::unique_ptr<TlsSession> tls =
        AcceptTls(listener->get(), server_tls, &fd);
    if (tls == nullptr) return;
    TlsSession::Result r;
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      size_t n = 0;
      r = tls->Read(buf, sizeof(buf), &n);
      if (r == TlsSession::Result::kOk) {
        head.append(buf, n);
      } else if (!WaitAsAsked(fd.get(), r)) {
        return;
      }
    }
    linger l{1, 0};  // the close resets the connection
    ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  });
  HttpClient c("127.0.0.1", port, {.tls = ClientTls(&alice_)});
  StatusOr<std::unique_ptr<HttpStream>> s = c.OpenStream("POST", "/raft");
  ASSERT_TRUE(s.ok()) << s.status();
  // The reset has arrived once a read meets it.
  std::string body;
  StatusOr<bool> read = (*s)->Read(&body, testing::kTestDeadline);
  server.join();
  ASSERT_FALSE(read.ok()) << "the server's reset never reached the reader";

  EXPECT_NE((*s)->TrySend("message"), HttpStream::TrySendResult::kSent);
  Status st = (*s)->Send("next");
  EXPECT_FALSE(st.ok());
  Status again = (*s)->Send("more");
  EXPECT_EQ(again.code(), StatusCode::kUnavailable) << again;
  EXPECT_THAT(std::string(again.message()),
              HasSubstr("broken by a failed write"));
  EXPECT_EQ((*s)->TrySend("more"), HttpStream::TrySendResult::kNotSent);
  EXPECT_THAT(std::string((*s)->CloseSend().message()), HasSubstr("broken"));
}

TEST_F(HttpTlsTest, MissingClientCertificateIsRefused) {
  Start({});
  HttpClient c = Client(ClientTls(nullptr));
  StatusOr<HttpResponse> r = c.Request("GET", "/whoami");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("certificate required"));
  EXPECT_EQ(AwaitFailures("error", 1), 1);
}

TEST_F(HttpTlsTest, RequestModeServesAnonymousClients) {
  Start({.tls = ServerTls(ClientAuth::kRequest)});
  StatusOr<HttpResponse> anon =
      Client(ClientTls(nullptr)).Request("GET", "/whoami");
  ASSERT_TRUE(anon.ok()) << anon.status();
  EXPECT_EQ(anon->body, "anonymous http/1.1");
  KeyPair mallory = *IssueCertificate(other_ca_,
                                      {.common_name = "admin",
                                       .organizations = {"system:masters"},
                                       .client_auth = true},
                                      Clock::Real()->WallNow());
  StatusOr<HttpResponse> forged =
      Client(ClientTls(&mallory)).Request("GET", "/whoami");
  ASSERT_TRUE(forged.ok()) << forged.status();
  EXPECT_EQ(forged->body, "anonymous http/1.1");
  StatusOr<HttpResponse> alice =
      Client(ClientTls(&alice_)).Request("GET", "/whoami");
  ASSERT_TRUE(alice.ok());
  EXPECT_EQ(alice->body, "alice,devs,ops http/1.1");
}

TEST_F(HttpTlsTest, ServerFromAnotherCaIsRefused) {
  Start({});
  HttpClient c = Client(ClientTls(&alice_, &other_ca_));
  StatusOr<HttpResponse> r = c.Request("GET", "/whoami");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("signed by an unknown authority"));
}

TEST_F(HttpTlsTest, HostnameMismatchIsRefused) {
  Start({});
  // The certificate names 127.0.0.1 and localhost.
  StatusOr<HttpResponse> ok =
      Client(ClientTls(&alice_), "localhost").Request("GET", "/whoami");
  ASSERT_TRUE(ok.ok()) << ok.status();
  StatusOr<HttpResponse> r =
      Client(ClientTls(&alice_, nullptr, "api.example.com"))
          .Request("GET", "/whoami");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("not valid for api.example.com"));
}

TEST_F(HttpTlsTest, UnfinishedHandshakeIsClosedAtTheDeadline) {
  Start({.header_timeout = seconds(1000),
         .timer_tick = seconds(1),
         .clock = &clock_,
         .tls_handshake_timeout = seconds(10)});
  RawConnection silent(server_->port());  // never sends a byte
  RawConnection partial(server_->port());
  partial.Send(
      std::string("\x16\x03\x01\x02\x00\x01", 6));  // a ClientHello's start
  while (server_->NumConnections() < 2) std::this_thread::yield();
  clock_.WaitForWaiters(1);  // the timer thread sleeps
  // Past the handshake deadline, far from the header timeout.
  clock_.Advance(seconds(11));
  EXPECT_TRUE(silent.WaitForClose());
  EXPECT_TRUE(partial.WaitForClose());
  EXPECT_TRUE(silent.buffer().empty());
  EXPECT_EQ(Failures("timeout"), 2);
}

TEST_F(HttpTlsTest, PlaintextHttpGetsGosAnswer) {
  Start({});
  RawConnection raw(server_->port());
  raw.Send("GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(raw.WaitForClose());
  EXPECT_EQ(raw.buffer(), kPlainHttpToTlsResponse);
  EXPECT_EQ(Failures("plaintext_http"), 1);
  // Our plaintext client reads it as an HTTP 400, as Go's client does.
  HttpClient plain("127.0.0.1", server_->port());
  StatusOr<HttpResponse> r = plain.Request("POST", "/echo", {}, "hi");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->body, "Client sent an HTTP request to an HTTPS server.\n");
}

TEST_F(HttpTlsTest, OutputCapClosesAStreamNobodyReads) {
  std::promise<std::shared_ptr<Responder>> got;
  HttpServerOptions o{.max_output_buffer_bytes = 1024 * 1024};
  o.metrics = &registry_;
  o.tls = ServerTls();
  server_ = std::make_unique<HttpServer>(std::move(o));
  server_->Handle("GET", "/watch",
                  [&](const HttpRequest&, std::shared_ptr<Responder> r) {
                    r->StartStream(200, {});
                    got.set_value(r);
                  });
  ASSERT_TRUE(server_->Start().ok());
  HttpClient c = Client(ClientTls(&alice_));
  StatusOr<std::unique_ptr<HttpStream>> s = c.OpenStream("GET", "/watch");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->CloseSend().ok());  // the handler runs once the body ends
  std::shared_ptr<Responder> r = got.get_future().get();
  // The client never reads: the kernel buffers fill, then ours, then the
  // cap closes the connection. 256 MiB is far more than both.
  const std::string chunk(64 * 1024, 'w');
  bool refused = false;
  for (int i = 0; i < 4096 && !refused; ++i) refused = !r->Write(chunk);
  EXPECT_TRUE(refused);
  EXPECT_TRUE(r->IsClosed());
}

TEST_F(HttpTlsTest, BodyTimeoutHoldsOverTls) {
  std::promise<void> head_parsed;
  routes_hook_ = [&](HttpServer* srv) {
    // Streams its body, so the handler runs (and tells us) once the head
    // is parsed and the body deadline set.
    srv->Handle("POST", "/upload",
                [&](const HttpRequest&, std::shared_ptr<Responder> r) {
                  r->OnBodyData([](std::string_view, bool) {});
                  head_parsed.set_value();
                },
                {.stream_request_body = true});
  };
  Start(
      {.body_timeout = seconds(5), .timer_tick = seconds(1), .clock = &clock_});
  HttpClient c = Client(ClientTls(&alice_));
  // A chunked body that never ends.
  StatusOr<std::unique_ptr<HttpStream>> s = c.OpenStream("POST", "/upload");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->Send("part of a body").ok());
  head_parsed.get_future().wait();
  clock_.WaitForWaiters(1);  // the timer thread sleeps
  clock_.Advance(seconds(6));
  StatusOr<HttpResponse> head = (*s)->ReadHead(testing::kTestDeadline);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 408);
}

TEST_F(HttpTlsTest, ConnectionCapHoldsOverTls) {
  Start({.max_connections = 1});
  HttpClient first = Client(ClientTls(&alice_));
  ASSERT_TRUE(first.Request("GET", "/whoami").ok());
  HttpClient second = Client(ClientTls(&alice_));
  StatusOr<HttpResponse> r = second.Request("GET", "/whoami");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  first.CloseConnection();
  while (server_->NumConnections() > 0) std::this_thread::yield();
  EXPECT_TRUE(second.Request("GET", "/whoami").ok());
}

TEST_F(HttpTlsTest, ForUrlTakesHttpsOnlyWithTls) {
  Start({});
  StatusOr<std::unique_ptr<HttpClient>> c = HttpClient::ForUrl(
      "https://127.0.0.1:" + std::to_string(server_->port()) + "/x",
      {.tls = ClientTls(&alice_)});
  ASSERT_TRUE(c.ok()) << c.status();
  StatusOr<HttpResponse> r = (*c)->Request("GET", "/whoami");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "alice,devs,ops http/1.1");
  EXPECT_EQ(HttpClient::ForUrl("https://127.0.0.1:1").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      HttpClient::ForUrl("http://127.0.0.1:1", {.tls = ClientTls(&alice_)})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kplane::net
