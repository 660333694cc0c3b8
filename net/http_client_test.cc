#include "net/http_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/socket.h"
#include "net/try_send_test_util.h"

namespace kplane::net {
namespace {

using testing::Latch;

class HttpClientTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions o = {}) {
    o.metrics = &registry_;
    server_ = std::make_unique<HttpServer>(o);
    for (auto& [path, h] : routes_) {
      server_->HandlePrefix("", path, h, {.stream_request_body = streaming_});
    }
    ASSERT_TRUE(server_->Start().ok());
  }
  double Accepted() {
    return registry_.NewCounter("kplane_http_connections_accepted_total", "")
        ->With({"http"})
        ->Value();
  }
  std::vector<std::pair<std::string, HttpHandler>> routes_;
  bool streaming_ = false;  // routes stream their request bodies
  metrics::Registry registry_;
  FakeClock clock_;
  std::unique_ptr<HttpServer> server_;
};

// A one-connection server written by hand, for responses our own server
// never produces (close-delimited bodies, early closes).
class ScriptedServer {
 public:
  // `script` gets the accepted socket and does whatever it likes.
  explicit ScriptedServer(std::function<void(int fd)> script) {
    auto l = ListenTcp("127.0.0.1", 0, 16);
    CHECK(l.ok());
    listener_ = std::move(*l);
    port_ = *LocalPort(listener_.get());
    thread_ = std::thread([this, script] {
      CHECK_OK(WaitFd(listener_.get(), false, testing::kTestDeadline));
      ScopedFd fd(::accept(listener_.get(), nullptr, nullptr));
      script(fd.get());
    });
  }
  ~ScriptedServer() { thread_.join(); }
  uint16_t port() const { return port_; }

 private:
  ScopedFd listener_;
  uint16_t port_;
  std::thread thread_;
};

// Reads from `fd` until the request head (and nothing more) has arrived.
std::string ReadHead(int fd) {
  std::string data;
  char c;
  while (data.find("\r\n\r\n") == std::string::npos) {
    CHECK_OK(WaitFd(fd, false, testing::kTestDeadline));
    if (::recv(fd, &c, 1, 0) <= 0) break;
    data.push_back(c);
  }
  return data;
}

void SendAll(int fd, std::string_view s) {
  ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
}

TEST_F(HttpClientTest, ConnectionRefusedIsUnavailable) {
  uint16_t port;
  {
    auto l = ListenTcp("127.0.0.1", 0, 1);
    ASSERT_TRUE(l.ok());
    port = *LocalPort(l->get());
  }  // closed: nothing listens there now
  HttpClient c("127.0.0.1", port);
  auto r = c.Request("GET", "/");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status();
}

TEST_F(HttpClientTest, ConnectTimeoutIsDeadlineExceeded) {
  // A listener that never accepts: once its accept queue is full, Linux
  // drops further SYNs and a connect can only time out.
  auto listener = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(listener.ok());
  uint16_t port = *LocalPort(listener->get());
  HttpClientOptions o;
  o.connect_timeout = milliseconds(100);
  std::vector<ScopedFd> fillers;
  Status last;
  for (int i = 0; i < 16 && last.ok(); ++i) {
    auto fd = ConnectTcp("127.0.0.1", port, milliseconds(100));
    if (fd.ok()) {
      fillers.push_back(std::move(*fd));
    } else {
      HttpClient c("127.0.0.1", port, o);
      last = c.Request("GET", "/").status();
    }
  }
  EXPECT_EQ(last.code(), StatusCode::kDeadlineExceeded) << last;
}

TEST_F(HttpClientTest, ReadTimeoutIsDeadlineExceeded) {
  std::vector<std::shared_ptr<Responder>> parked;
  Mutex mu;
  routes_.push_back(
      {"/", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
         MutexLock l(&mu);
         parked.push_back(r);  // never answered
       }});
  Start();
  HttpClientOptions o;
  o.read_timeout = milliseconds(100);
  HttpClient c("127.0.0.1", server_->port(), o);
  auto r = c.Request("GET", "/hang");
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  server_->Stop();  // before `parked` goes away
}

TEST_F(HttpClientTest, ReconnectsAfterServerClosedIdleConnection) {
  routes_.push_back(
      {"/", [](const HttpRequest& req, std::shared_ptr<Responder> r) {
         r->Respond(200, {}, req.method);
       }});
  HttpServerOptions o;
  o.clock = &clock_;
  o.idle_timeout = seconds(5);
  o.timer_tick = seconds(1);
  Start(o);
  HttpClient c("127.0.0.1", server_->port());
  ASSERT_EQ(c.Request("POST", "/a")->body, "POST");
  clock_.WaitForWaiters(1);
  clock_.Advance(seconds(10));
  // The server closes the idle connection on its next sweep.
  ASSERT_TRUE(testing::PollUntil([&] {
    return server_->NumConnections() == 0;
  })) << server_->NumConnections();
  // The stale connection is noticed before sending; even a POST works.
  auto r = c.Request("POST", "/b");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "POST");
  EXPECT_EQ(Accepted(), 2);
}

TEST_F(HttpClientTest, RetriesOnlyIdempotentRequestsAfterEarlyClose) {
  // When told to, the handler drops the connection without answering: the
  // request was sent on a reused connection and no response byte came.
  std::atomic<int> calls{0};
  std::atomic<bool> drop_next{false};
  routes_.push_back(
      {"/", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
         calls++;
         if (drop_next.exchange(false)) {
           r->Close();
         } else {
           r->Respond(200, {}, "ok");
         }
       }});
  Start();
  HttpClient c("127.0.0.1", server_->port());
  ASSERT_TRUE(c.Request("GET", "/a").ok());
  EXPECT_EQ(calls.load(), 1);

  drop_next = true;
  auto get = c.Request("GET", "/a");  // dropped, then retried once
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->body, "ok");
  EXPECT_EQ(calls.load(), 3);

  drop_next = true;
  auto post = c.Request("POST", "/a");  // may have had effects: no retry
  EXPECT_EQ(post.status().code(), StatusCode::kUnavailable) << post.status();
  EXPECT_EQ(calls.load(), 4);
}

TEST_F(HttpClientTest, ConnectionCloseResponseIsHonoured) {
  routes_.push_back({"/", [](const HttpRequest&, std::shared_ptr<Responder> r) {
                       r->Respond(200, {{"Connection", "close"}}, "bye");
                     }});
  Start();
  HttpClient c("127.0.0.1", server_->port());
  for (int i = 0; i < 3; ++i) {
    auto r = c.Request("GET", "/");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, "bye");
  }
  EXPECT_EQ(Accepted(), 3);
}

// Bytes past a response's end -- here a whole forged response after a
// 204, which has no body -- are not read as the answer to the next request
// on that connection: it is not reused (as Go's transport).
TEST_F(HttpClientTest, BytesPastAResponseAreNotTheNextAnswer) {
  auto l = ListenTcp("127.0.0.1", 0, 16);
  ASSERT_TRUE(l.ok()) << l.status();
  ScopedFd listener = std::move(*l);
  const uint16_t port = *LocalPort(listener.get());
  std::thread server([&] {
    std::vector<ScopedFd> open;  // the first stays open: only reuse fails
    for (const char* answer :
         {"HTTP/1.1 204 No Content\r\n\r\n"
          "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged",
          "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nreal"}) {
      if (!WaitFd(listener.get(), false, testing::kTestDeadline).ok()) return;
      open.emplace_back(::accept(listener.get(), nullptr, nullptr));
      ReadHead(open.back().get());
      SendAll(open.back().get(), answer);
    }
  });
  HttpClient c("127.0.0.1", port);
  auto first = c.Request("GET", "/");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status, 204);
  auto second = c.Request("GET", "/");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "real");
  server.join();
}

TEST_F(HttpClientTest, ReadsChunkedAndCloseDelimitedBodies) {
  routes_.push_back({"/", [](const HttpRequest&, std::shared_ptr<Responder> r) {
                       r->StartStream(200, {});
                       r->Write("part1,");
                       r->Write("part2");
                       r->Finish();
                     }});
  Start();
  HttpClient c("127.0.0.1", server_->port());
  auto r = c.Request("GET", "/chunks");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "part1,part2");

  ScriptedServer raw([](int fd) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.0 200 OK\r\nX: y\r\n\r\nuntil the end");
  });
  HttpClient c2("127.0.0.1", raw.port());
  auto r2 = c2.Request("GET", "/");
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->body, "until the end");
  EXPECT_EQ(r2->headers.Get("x"), "y");
}

TEST_F(HttpClientTest, SkipsInterimResponsesAndRejectsGarbage) {
  ScriptedServer raw([](int fd) {
    ReadHead(fd);
    SendAll(fd,
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
            "Content-Length: 2\r\n\r\nok");
  });
  HttpClient c("127.0.0.1", raw.port());
  auto r = c.Request("POST", "/", {}, "x");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "ok");

  ScriptedServer bad([](int fd) {
    ReadHead(fd);
    SendAll(fd, "SMTP ready\r\n\r\n");
  });
  HttpClient c2("127.0.0.1", bad.port());
  EXPECT_EQ(c2.Request("GET", "/").status().code(),
            StatusCode::kInvalidArgument);

  ScriptedServer truncated([](int fd) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  });
  HttpClient c3("127.0.0.1", truncated.port());
  EXPECT_EQ(c3.Request("POST", "/").status().code(), StatusCode::kUnavailable);
}

TEST_F(HttpClientTest, BodyOverLimitIsTooLarge) {
  routes_.push_back({"/", [](const HttpRequest&, std::shared_ptr<Responder> r) {
                       r->Respond(200, {}, std::string(5000, 'x'));
                     }});
  Start();
  HttpClientOptions o;
  o.max_response_body_bytes = 1000;
  HttpClient c("127.0.0.1", server_->port(), o);
  EXPECT_EQ(c.Request("GET", "/").status().code(), StatusCode::kTooLarge);
}

TEST_F(HttpClientTest, StreamDeliversPiecesUntilCallbackStops) {
  std::promise<std::shared_ptr<Responder>> got;
  routes_.push_back(
      {"/", [&](const HttpRequest& req, std::shared_ptr<Responder> r) {
         if (req.path != "/watch") {
           r->Respond(200, {}, "");
           return;
         }
         r->StartStream(200, {{"Content-Type", "application/json"}});
         got.set_value(r);
       }});
  Start();
  auto future = got.get_future();
  std::thread producer([&] {
    auto r = future.get();
    for (int i = 0;
         i < 100 && r->Write("{\"event\":" + std::to_string(i) + "}\n"); ++i) {
    }
  });
  HttpClient c("127.0.0.1", server_->port());
  std::string seen;
  auto resp = c.Stream("GET", "/watch", {}, "", [&](std::string_view d) {
    seen.append(d);
    return seen.find("{\"event\":2}\n") == std::string::npos;
  });
  producer.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(resp->headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(seen.rfind("{\"event\":0}\n{\"event\":1}\n{\"event\":2}\n", 0), 0u);
  // The abandoned stream's connection is not reused.
  ASSERT_TRUE(c.Request("GET", "/again").ok());
  EXPECT_EQ(Accepted(), 2);
}

TEST_F(HttpClientTest, StreamEndsWhenServerFinishesAndKeepsConnection) {
  routes_.push_back(
      {"/", [](const HttpRequest& req, std::shared_ptr<Responder> r) {
         if (req.path == "/stream") {
           r->StartStream(200, {});
           r->Write("a");
           r->Write("b");
           r->Finish();
         } else {
           r->Respond(200, {}, "plain");
         }
       }});
  Start();
  HttpClient c("127.0.0.1", server_->port());
  std::string seen;
  auto resp = c.Stream("GET", "/stream", {}, "", [&](std::string_view d) {
    seen.append(d);
    return true;
  });
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(seen, "ab");
  EXPECT_EQ(c.Request("GET", "/x")->body, "plain");
  EXPECT_EQ(Accepted(), 1);
}

TEST_F(HttpClientTest, StreamCancelledFromAnotherThread) {
  Latch streaming;
  std::vector<std::shared_ptr<Responder>> parked;
  Mutex mu;
  routes_.push_back(
      {"/", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
         r->StartStream(200, {});
         r->Write("hello");
         MutexLock l(&mu);
         parked.push_back(r);
       }});
  Start();
  HttpClient c("127.0.0.1", server_->port());
  CancelToken cancel;
  std::thread canceller([&] {
    ASSERT_TRUE(streaming.Wait());
    cancel.Cancel();
  });
  auto resp = c.Stream(
      "GET", "/watch", {}, "",
      [&](std::string_view) {
        streaming.CountDown();
        return true;
      },
      &cancel);
  canceller.join();
  EXPECT_EQ(resp.status().code(), StatusCode::kCancelled) << resp.status();
  EXPECT_TRUE(cancel.IsCancelled());
  server_->Stop();  // before `parked` goes away
}

TEST_F(HttpClientTest, DuplexStreamCancelUnblocksReader) {
  routes_.push_back({"/", [](const HttpRequest&, std::shared_ptr<Responder> r) {
                       r->StartStream(200, {});
                       r->OnBodyData([](std::string_view, bool) {});
                     }});
  streaming_ = true;
  Start();
  HttpClient c("127.0.0.1", server_->port());
  auto s = c.OpenStream("POST", "/v3/lease/keepalive");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Send("{\"ID\":1}").ok());
  ASSERT_TRUE((*s)->ReadHead(testing::kTestDeadline).ok());
  std::thread t([&] { (*s)->Cancel(); });
  std::string data;
  auto more = (*s)->Read(&data);  // blocks until cancelled
  t.join();
  EXPECT_EQ(more.status().code(), StatusCode::kCancelled);
  EXPECT_EQ((*s)->Send("x").code(), StatusCode::kCancelled);
}

TEST_F(HttpClientTest, WriteTimeoutWhenServerStopsReading) {
  // The handler never consumes the streamed body, so the server stops
  // reading it (back-pressure) and the client's send eventually blocks.
  routes_.push_back(
      {"/", [](const HttpRequest&, std::shared_ptr<Responder>) {}});
  streaming_ = true;
  HttpServerOptions o;
  o.max_pending_body_bytes = 64 * 1024;
  Start(o);
  HttpClientOptions co;
  co.write_timeout = milliseconds(300);
  HttpClient c("127.0.0.1", server_->port(), co);
  auto s = c.OpenStream("POST", "/upload");
  ASSERT_TRUE(s.ok());
  const std::string piece(1 << 20, 'x');
  Status st;
  size_t sent = 0;
  while ((st = (*s)->Send(piece)).ok()) {
    sent += piece.size();
    ASSERT_LT(sent, size_t{1} << 30) << "the server never pushed back";
  }
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
}

// TrySend never waits: a chunk the socket takes only part of stays in the
// stream (nothing else is sent meanwhile), and the next Send writes the
// rest before its own chunk; CloseSend ends the body after it
// (net/try_send_test_util.h; the TLS test is in http_tls_test.cc).
TEST_F(HttpClientTest, TrySendLeavesTheRestForTheNextSend) {
  testing::Latch read(1), drained(1);
  std::promise<std::string> got;
  ScriptedServer server([&](int fd) {
    read.Wait();  // not a byte until the client's socket is full
    got.set_value(testing::ReadUntilLastChunk(
        [fd](char* buf, size_t n) -> ssize_t {
          if (!WaitFd(fd, false, testing::kTestDeadline).ok()) return -1;
          return ::recv(fd, buf, n, 0);
        },
        &drained));
  });
  HttpClient c("127.0.0.1", server.port());
  auto s = c.OpenStream("POST", "/raft/stream");
  ASSERT_TRUE(s.ok()) << s.status();
  if (!testing::TrySendUntilPartialThenFinish(s->get(), &read, &drained,
                                              got.get_future())) {
    GTEST_SKIP() << "the kernel refused a chunk outright (its buffer ended "
                    "exactly full): no remainder to test this time";
  }
}

// A failed write leaves the stream unusable: a chunk may have been cut off,
// so nothing may follow it.
TEST_F(HttpClientTest, AFailedWriteBreaksTheStream) {
  ScriptedServer server([](int fd) {
    ReadHead(fd);
    linger l{1, 0};  // close with a reset
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  });
  HttpClient c("127.0.0.1", server.port());
  auto s = c.OpenStream("POST", "/raft/stream");
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string piece(64 << 10, 'x');
  Status st;
  for (int i = 0; i < 4096 && st.ok(); ++i) st = (*s)->Send(piece);
  ASSERT_FALSE(st.ok()) << "the reset never reached the writer";
  EXPECT_EQ(st.message().find("broken"), std::string::npos) << st;
  Status again = (*s)->Send("more");
  EXPECT_EQ(again.code(), StatusCode::kUnavailable) << again;
  EXPECT_NE(again.message().find("broken by a failed write"), std::string::npos)
      << again;
  EXPECT_EQ((*s)->TrySend("more"), HttpStream::TrySendResult::kNotSent);
  EXPECT_NE((*s)->CloseSend().message().find("broken"), std::string::npos);
}

TEST_F(HttpClientTest, ForUrlAndHostHeader) {
  std::promise<std::string> host;
  routes_.push_back(
      {"/", [&](const HttpRequest& req, std::shared_ptr<Responder> r) {
         host.set_value(std::string(req.headers.Get("Host")));
         r->Respond(200, {}, std::string(req.headers.Get("User-Agent")));
       }});
  Start();
  auto c = HttpClient::ForUrl(
      "http://127.0.0.1:" + std::to_string(server_->port()) + "/ignored");
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Request("GET", "/");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "kplane-net/1");
  EXPECT_EQ(host.get_future().get(),
            "127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_FALSE(HttpClient::ForUrl("https://x").ok());
}

}  // namespace
}  // namespace kplane::net
