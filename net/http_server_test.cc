#include "net/http_server.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <future>
#include <set>
#include <thread>

#include "base/mutex.h"
#include "net/http_client.h"
#include "net/http_test_util.h"

namespace kplane::net {
namespace {

using testing::Latch;
using testing::RawConnection;

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions opts = {}) {
    opts.metrics = &registry_;
    server_ = std::make_unique<HttpServer>(std::move(opts));
    for (auto& [method, path, handler, options, prefix] : routes_) {
      if (prefix) {
        server_->HandlePrefix(method, path, handler, options);
      } else {
        server_->Handle(method, path, handler, options);
      }
    }
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_NE(server_->port(), 0);
  }
  void Route(std::string method, std::string path, HttpHandler h,
             RouteOptions o = {}, bool prefix = false) {
    routes_.push_back(
        {std::move(method), std::move(path), std::move(h), o, prefix});
  }
  double Metric(const std::string& name,
                const std::vector<std::string>& labels) {
    return registry_.NewCounter(name, "")->With(labels)->Value();
  }
  HttpClient Client(HttpClientOptions o = {}) {
    return HttpClient("127.0.0.1", server_->port(), std::move(o));
  }
  // Stops the server when it goes out of scope. A test declares one after
  // the locals its handlers and OnClose callbacks capture, so that on every
  // return path (a failed ASSERT too) the server is stopped, and every
  // callback has returned, before those locals are destroyed.
  class [[nodiscard]] ServerStopper {
   public:
    explicit ServerStopper(std::unique_ptr<HttpServer>* server)
        : server_(server) {}
    ServerStopper(const ServerStopper&) = delete;
    ServerStopper& operator=(const ServerStopper&) = delete;
    ~ServerStopper() {
      if (*server_ != nullptr) (*server_)->Stop();
    }

   private:
    std::unique_ptr<HttpServer>* server_;
  };
  ServerStopper StopServerAtScopeExit() { return ServerStopper(&server_); }

  struct RouteSpec {
    std::string method, path;
    HttpHandler handler;
    RouteOptions options;
    bool prefix;
  };
  std::vector<RouteSpec> routes_;
  metrics::Registry registry_;
  FakeClock clock_;  // outlives server_, whose timer thread uses it
  std::unique_ptr<HttpServer> server_;
};

HttpHandler Echo() {
  return [](const HttpRequest& req, std::shared_ptr<Responder> r) {
    r->Respond(200, {{"Content-Type", "text/plain"}},
               req.method + " " + req.path + " " + req.body);
  };
}

TEST_F(HttpServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  Route("POST", "/echo", Echo());
  Start();
  HttpClient c = Client();
  for (int i = 0; i < 5; ++i) {
    auto r = c.Request("POST", "/echo", {}, "n" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "POST /echo n" + std::to_string(i));
    EXPECT_EQ(r->headers.Get("content-type"), "text/plain");
  }
  EXPECT_EQ(Metric("kplane_http_connections_accepted_total", {"http"}), 1);
  EXPECT_EQ(Metric("kplane_http_requests_total", {"http", "200"}), 5);
}

TEST_F(HttpServerTest, PipelinedRequestsAreHandledInOrder) {
  Mutex mu;
  std::vector<std::string> log;
  std::vector<std::thread> threads;
  Route(
      "GET", "/",
      [&](const HttpRequest& req, std::shared_ptr<Responder> r) {
        MutexLock l(&mu);
        log.push_back("handle " + req.path);
        // Answer later from another thread: the next pipelined request must
        // not be handled before this response is done.
        threads.emplace_back([&, r, path = req.path] {
          MutexLock l2(&mu);
          log.push_back("respond " + path);
          r->Respond(200, {}, path);
        });
      },
      {}, /*prefix=*/true);
  Start();
  RawConnection conn(server_->port());
  conn.Send(
      "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n");
  for (const char* want : {"/1", "/2", "/3"}) {
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, want);
  }
  MutexLock l(&mu);
  EXPECT_EQ(
      log, (std::vector<std::string>{"handle /1", "respond /1", "handle /2",
                                     "respond /2", "handle /3", "respond /3"}));
  for (auto& t : threads) t.join();
}

TEST_F(HttpServerTest, PipelinedMixSentOneByteAtATime) {
  Route("", "/", Echo(), {}, /*prefix=*/true);
  Start();
  RawConnection conn(server_->port());
  const std::string wire =
      "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
      "PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\nde\r\n1\r\nf\r\n0\r\n\r\n"
      "GET /c%20d?q=1 HTTP/1.1\r\nHost: x\r\n\r\n";
  for (char c : wire) conn.Send(std::string_view(&c, 1));
  for (const char* want : {"POST /a abc", "PUT /b def", "GET /c d "}) {
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, want);
  }
}

TEST_F(HttpServerTest, ChunkedRequestBodyIsDecoded) {
  Route("PUT", "/data", Echo());
  Start();
  RawConnection conn(server_->port());
  conn.Send(
      "PUT /data HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n");
  conn.Send("1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: t\r\n\r\n");
  auto r = conn.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "PUT /data hello world");
  // The connection stays usable afterwards.
  conn.Send("PUT /data HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
  r = conn.ReadResponse();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "PUT /data ok");
}

TEST_F(HttpServerTest, StreamedResponseChunksArriveBeforeFinish) {
  std::promise<std::shared_ptr<Responder>> got;
  Route("GET", "/stream",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          ASSERT_TRUE(
              r->StartStream(200, {{"Content-Type", "application/json"}}));
          got.set_value(r);
        });
  Start();
  auto stream = Client().OpenStream("GET", "/stream");
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE((*stream)->CloseSend().ok());
  std::shared_ptr<Responder> r = got.get_future().get();
  auto head = (*stream)->ReadHead(testing::kTestDeadline);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->headers.Get("Transfer-Encoding"), "chunked");
  for (int i = 0; i < 3; ++i) {
    std::string event = "{\"n\":" + std::to_string(i) + "}\n";
    ASSERT_TRUE(r->Write(event));
    std::string got_data;
    while (got_data.size() < event.size()) {
      auto more = (*stream)->Read(&got_data, testing::kTestDeadline);
      ASSERT_TRUE(more.ok() && *more) << more.status();
    }
    EXPECT_EQ(got_data, event);  // delivered while the stream is still open
  }
  EXPECT_TRUE(r->Write(""));  // empty writes do not end the stream
  ASSERT_TRUE(r->Finish());
  EXPECT_FALSE(r->Write("late"));
  std::string rest;
  auto more = (*stream)->Read(&rest, testing::kTestDeadline);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_EQ(rest, "");
}

TEST_F(HttpServerTest, StreamingRequestBodyWhileStreamingResponse) {
  // An etcd-watch-like exchange: each request piece is answered on the
  // response stream while the request body is still open.
  Route("POST", "/v3/watch",
        [](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->StartStream(200, {});
          r->OnBodyData([r](std::string_view data, bool eof) {
            std::string upper(data);
            for (char& c : upper) c = static_cast<char>(std::toupper(c));
            r->Write(upper);
            if (eof) r->Finish();
          });
        },
        {.stream_request_body = true});
  Start();
  auto s = Client().OpenStream("POST", "/v3/watch");
  ASSERT_TRUE(s.ok());
  HttpStream& stream = **s;
  ASSERT_TRUE(stream.Send("hello").ok());
  auto head = stream.ReadHead(testing::kTestDeadline);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 200);
  std::string data;
  while (data.size() < 5)
    ASSERT_TRUE(*stream.Read(&data, testing::kTestDeadline));
  EXPECT_EQ(data, "HELLO");
  ASSERT_TRUE(stream.Send("world").ok());
  data.clear();
  while (data.size() < 5)
    ASSERT_TRUE(*stream.Read(&data, testing::kTestDeadline));
  EXPECT_EQ(data, "WORLD");
  ASSERT_TRUE(stream.CloseSend().ok());
  data.clear();
  auto more = stream.Read(&data, testing::kTestDeadline);
  while (more.ok() && *more) more = stream.Read(&data, testing::kTestDeadline);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(data, "");
}

TEST_F(HttpServerTest, StreamingBodyBufferedUntilHandlerRegisters) {
  Latch registered_late;
  Route("POST", "/late",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          // The whole body is already here; registration still gets it, in
          // order.
          std::thread([r, &registered_late] {
            auto body = std::make_shared<std::string>();
            r->OnBodyData([r, body](std::string_view d, bool eof) {
              body->append(d);
              if (eof) r->Respond(200, {}, *body);
            });
            registered_late.CountDown();
          }).detach();
        },
        {.stream_request_body = true});
  Start();
  RawConnection conn(server_->port());
  conn.Send(
      "POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabcdef");
  auto r = conn.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "abcdef");
  EXPECT_TRUE(registered_late.Wait());
}

TEST_F(HttpServerTest, StreamingRouteWithoutBodyGetsEof) {
  Route("GET", "/nobody",
        [](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->OnBodyData([r](std::string_view d, bool eof) {
            r->Respond(200, {}, std::string(d) + (eof ? "eof" : "more"));
          });
        },
        {.stream_request_body = true});
  Start();
  auto r = Client().Request("GET", "/nobody");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "eof");
}

// A streaming handler that answers without reading the body (an early 403
// on a large create): the rest of the body is read and dropped, and the
// connection serves the next request -- also when reading had paused for
// that handler (more than max_pending_body_bytes queued) before it
// answered. (The pause outlived the answer: a client sending the rest
// blocked until the body timeout closed the connection.)
TEST_F(HttpServerTest, ABodyLeftUnreadByAnEarlyAnswerIsDrained) {
  Latch entered, answer;
  Route("POST", "/early",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          entered.CountDown();
          EXPECT_TRUE(answer.Wait());
          r->Respond(403, {}, "no");
        },
        {.stream_request_body = true});
  Route("GET", "/next", [](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(200, {}, "next");
  });
  HttpServerOptions o;
  o.max_pending_body_bytes = 64 * 1024;
  Start(o);
  auto stop = StopServerAtScopeExit();
  constexpr size_t kBody = 32 << 20;
  RawConnection conn(server_->port());
  conn.Send("POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: " +
            std::to_string(kBody) + "\r\n\r\n");
  ASSERT_TRUE(entered.Wait());
  // The body, from a thread: while reading is paused the socket buffers
  // fill and it blocks. The guard ends it on any return (a failed ASSERT).
  Latch sent;
  struct Sender {
    int fd;
    std::thread thread;
    ~Sender() {
      ::shutdown(fd, SHUT_RDWR);
      thread.join();
    }
  } sender{conn.fd(), std::thread([&sent, fd = conn.fd()] {
             const std::string piece(256 * 1024, 'b');
             for (size_t n = 0; n < kBody; n += piece.size()) {
               std::string_view left = piece;
               while (!left.empty()) {
                 ssize_t w = ::send(fd, left.data(), left.size(), MSG_NOSIGNAL);
                 if (w <= 0) return;  // shut down by the guard
                 left.remove_prefix(static_cast<size_t>(w));
               }
             }
             sent.CountDown();
           })};
  // Reading paused with the handler still holding the response.
  ASSERT_TRUE(testing::PollUntil([&] {
    return Metric("kplane_http_request_bodies_paused_total", {"http"}) >= 1;
  }));
  answer.CountDown();
  auto r = conn.ReadResponse("POST");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 403);
  // (Not reading it would leave the sender, and the next request's send,
  // blocked on full socket buffers.)
  ASSERT_TRUE(sent.Wait()) << "the server stopped reading the body";
  conn.Send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n");
  auto next = conn.ReadResponse();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->body, "next");
}

TEST_F(HttpServerTest, StreamingBodyPausesForSlowConsumerAndResumes) {
  // The consumer blocks on its first piece; the server must stop reading
  // (bounded memory) and pick up again when the consumer catches up.
  Latch release;
  std::atomic<size_t> total{0};
  Route("POST", "/upload",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->OnBodyData([&, r](std::string_view d, bool eof) {
            if (total == 0) {
              EXPECT_TRUE(release.Wait());
            }
            total += d.size();
            if (eof) r->Respond(200, {}, std::to_string(total.load()));
          });
        },
        {.stream_request_body = true});
  HttpServerOptions o;
  o.max_pending_body_bytes = 64 * 1024;
  Start(o);
  constexpr size_t kBody = 16 << 20;
  auto s = Client().OpenStream("POST", "/upload");
  ASSERT_TRUE(s.ok());
  // (With the consumer stuck the sender cannot get even 4 MiB out: the
  // server stops reading at 64 KiB pending and the socket buffers fill.)
  Latch flowing;
  std::thread sender([&] {
    std::string piece(256 * 1024, 'p');
    for (size_t sent = 0; sent < kBody; sent += piece.size()) {
      EXPECT_TRUE((*s)->Send(piece).ok());
      flowing.CountDown();
    }
    EXPECT_TRUE((*s)->CloseSend().ok());
  });
  EXPECT_TRUE(flowing.Wait());
  release.CountDown();
  std::string body;
  auto more = (*s)->Read(&body, testing::kTestDeadline);
  while (more.ok() && *more) more = (*s)->Read(&body, testing::kTestDeadline);
  sender.join();
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(body, std::to_string(kBody));
}

TEST_F(HttpServerTest, ExpectContinueIsAnswered) {
  Route("POST", "/upload", Echo());
  HttpServerOptions o;
  o.max_body_bytes = 100;
  Start(o);
  RawConnection conn(server_->port());
  conn.Send(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
      "Expect: 100-continue\r\n\r\n");
  ASSERT_TRUE(conn.ReadUntilContains("\r\n\r\n"));
  EXPECT_EQ(conn.buffer(), "HTTP/1.1 100 Continue\r\n\r\n");
  conn.buffer().clear();
  conn.Send("data");
  auto r = conn.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /upload data");

  // Over the limit: 413 instead of 100, and the connection closes.
  RawConnection big(server_->port());
  big.Send(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
      "Expect: 100-continue\r\n\r\n");
  auto r2 = big.ReadResponse();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->status, 413);
  EXPECT_TRUE(big.WaitForClose());
}

TEST_F(HttpServerTest, UnknownExpectationGets417) {
  Route("POST", "/upload", Echo());
  Start();
  RawConnection conn(server_->port());
  conn.Send(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
      "Expect: something\r\n\r\nx");
  auto r = conn.ReadResponse();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 417);
}

TEST_F(HttpServerTest, BodyOverLimitGets413) {
  Route("POST", "/p", Echo());
  HttpServerOptions o;
  o.max_body_bytes = 10;
  Start(o);
  {
    RawConnection conn(server_->port());
    conn.Send(
        "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n"
        "01234567890");
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(r->headers.Get("Connection"), "close");
    EXPECT_TRUE(conn.WaitForClose());
  }
  {
    // A chunked body is cut off as soon as it passes the limit.
    RawConnection conn(server_->port());
    conn.Send(
        "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "6\r\nabcdef\r\n6\r\nghijkl\r\n");
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(conn.WaitForClose());
  }
  // At the limit is fine.
  auto ok = Client().Request("POST", "/p", {}, "0123456789");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
}

TEST_F(HttpServerTest, HeaderLimits) {
  Route("GET", "/", Echo(), {}, true);
  HttpServerOptions o;
  o.max_header_count = 5;
  o.max_header_bytes = 1024;
  o.max_request_line_bytes = 256;
  Start(o);
  auto status_of = [&](const std::string& request) {
    RawConnection conn(server_->port());
    conn.Send(request);
    auto r = conn.ReadResponse();
    EXPECT_TRUE(conn.WaitForClose());
    return r.ok() ? r->status : -1;
  };
  std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 6; ++i) many += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(status_of(many + "\r\n"), 431);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nBig: " +
                      std::string(2000, 'a') + "\r\n\r\n"),
            431);
  // Too large even before the head ends.
  EXPECT_EQ(
      status_of("GET / HTTP/1.1\r\nHost: x\r\nBig: " + std::string(2000, 'a')),
      431);
  EXPECT_EQ(status_of("GET /" + std::string(300, 'a') + " HTTP/1.1\r\n\r\n"),
            414);
  // Within limits works.
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            200);
}

TEST_F(HttpServerTest, MalformedRequestsGet400AndClose) {
  Route("POST", "/", Echo(), {}, true);
  Start();
  for (const std::string& bad :
       {std::string("garbage\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
                    "\r\n\r\nxyz\r\n"),
        std::string("POST / HTTP/1.1\r\n\r\n"),
        std::string("POST /%zz HTTP/1.1\r\nHost: x\r\n\r\n")}) {
    RawConnection conn(server_->port());
    conn.Send(bad);
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status() << " for " << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_EQ(r->headers.Get("Content-Type"), "text/plain");
    EXPECT_TRUE(conn.WaitForClose()) << bad;
  }
  RawConnection v2(server_->port());
  v2.Send("POST / HTTP/2.0\r\nHost: x\r\n\r\n");
  auto r = v2.ReadResponse();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 505);
  EXPECT_GE(Metric("kplane_http_requests_total", {"http", "400"}), 6);
}

TEST_F(HttpServerTest, RespondLaterFromAnotherThread) {
  std::vector<std::thread> threads;
  Mutex mu;
  Route("POST", "/commit",
        [&](const HttpRequest& req, std::shared_ptr<Responder> r) {
          MutexLock l(&mu);
          threads.emplace_back([r, body = req.body] {
            r->Respond(201, {{"X-Committed", "yes"}}, "committed " + body);
          });
        });
  Start();
  HttpClient c = Client();
  for (int i = 0; i < 3; ++i) {
    auto r = c.Request("POST", "/commit", {}, std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 201);
    EXPECT_EQ(r->headers.Get("x-committed"), "yes");
    EXPECT_EQ(r->body, "committed " + std::to_string(i));
  }
  MutexLock l(&mu);
  for (auto& t : threads) t.join();
}

TEST_F(HttpServerTest, RespondTwiceIsRefused) {
  std::promise<bool> second;
  Route("GET", "/twice", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    EXPECT_TRUE(r->Respond(200, {}, "first"));
    second.set_value(r->Respond(500, {}, "second"));
    EXPECT_FALSE(r->StartStream(200, {}));
  });
  Start();
  auto r = Client().Request("GET", "/twice");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "first");
  EXPECT_FALSE(second.get_future().get());
}

TEST_F(HttpServerTest, OnCloseFiresOnceWhenClientDisconnects) {
  std::promise<std::shared_ptr<Responder>> got;
  std::atomic<int> closes{0};
  Latch closed;
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->OnClose([&] {
      closes++;
      closed.CountDown();
    });
    got.set_value(r);
  });
  Start();
  auto conn = std::make_unique<RawConnection>(server_->port());
  conn->Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  std::shared_ptr<Responder> r = got.get_future().get();
  ASSERT_TRUE(conn->ReadUntilContains("\r\n\r\n"));
  EXPECT_FALSE(r->IsClosed());
  conn->Close();
  ASSERT_TRUE(closed.Wait());
  EXPECT_TRUE(r->IsClosed());
  EXPECT_FALSE(r->Write("x"));
  EXPECT_FALSE(r->Finish());
  server_->Stop();
  EXPECT_EQ(closes.load(), 1);
  EXPECT_EQ(server_->NumConnections(), 0u);
}

TEST_F(HttpServerTest, OnCloseFiresOnceAfterNormalCompletion) {
  std::atomic<int> closes{0};
  Latch fired;
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/x", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->OnClose([&] {
      closes++;
      fired.CountDown();
    });
    r->Respond(200, {}, "ok");
  });
  Start();
  HttpClient c = Client();
  ASSERT_TRUE(c.Request("GET", "/x").ok());
  ASSERT_TRUE(fired.Wait());
  c.CloseConnection();
  server_->Stop();
  EXPECT_EQ(closes.load(), 1);
}

TEST_F(HttpServerTest, OnCloseMayTakeTheProducersLock) {
  // The producer holds its lock while writing; OnClose (which takes the
  // same lock) must not run inside Write/Close on that thread.
  Mutex producer_mu;
  Latch fired;
  std::promise<std::shared_ptr<Responder>> got;
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/w", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->OnClose([&] {
      { MutexLock l(&producer_mu); }
      // Last: once it runs the test may end and destroy producer_mu, so
      // the callback must not still hold (and later unlock) it.
      fired.CountDown();
    });
    got.set_value(r);
  });
  Start();
  RawConnection conn(server_->port());
  conn.Send("GET /w HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = got.get_future().get();
  {
    MutexLock l(&producer_mu);
    r->Close();
    EXPECT_FALSE(r->Write("x"));
  }
  EXPECT_TRUE(fired.Wait());
  EXPECT_TRUE(conn.WaitForClose());
}

TEST_F(HttpServerTest, SlowClientExceedingBufferCapIsClosed) {
  std::promise<std::shared_ptr<Responder>> got;
  Latch closed;
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->OnClose([&] { closed.CountDown(); });
    got.set_value(r);
  });
  HttpServerOptions o;
  o.max_output_buffer_bytes = 1 << 20;
  Start(o);
  RawConnection conn(server_->port());  // never reads
  conn.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = got.get_future().get();
  const std::string chunk(64 * 1024, 'e');
  size_t written = 0;
  size_t max_buffered = 0;
  while (r->Write(chunk)) {
    written += chunk.size();
    max_buffered = std::max(max_buffered, r->BufferedBytes());
    ASSERT_LT(written, size_t{256} << 20) << "cap never enforced";
  }
  EXPECT_GT(max_buffered, 0u);  // the producer could see it falling behind
  EXPECT_LE(max_buffered, size_t{1} << 20);
  EXPECT_TRUE(r->IsClosed());
  EXPECT_TRUE(closed.Wait());
}

TEST_F(HttpServerTest, PerExchangeBufferCapOverridesServerDefault) {
  std::promise<std::shared_ptr<Responder>> got;
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->SetMaxBufferedBytes(4096);
    r->StartStream(200, {});
    got.set_value(r);
  });
  Start();
  RawConnection conn(server_->port());
  conn.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = got.get_future().get();
  size_t written = 0;
  while (r->Write(std::string(1024, 'x'))) {
    written += 1024;
    ASSERT_LT(written, size_t{64} << 20);
  }
  EXPECT_TRUE(r->IsClosed());
}

TEST_F(HttpServerTest, OnDrainedFiresOnceTheClientReadsTheBuffer) {
  std::promise<std::shared_ptr<Responder>> got;
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    got.set_value(r);
  });
  Start();
  RawConnection conn(server_->port());
  conn.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = got.get_future().get();
  // Fill the socket until the server has to buffer output.
  const std::string chunk(64 * 1024, 'd');
  size_t written = 0;
  while (r->BufferedBytes() == 0) {
    ASSERT_TRUE(r->Write(chunk));
    written += chunk.size() + 16;
    ASSERT_LT(written, size_t{256} << 20) << "the client socket never filled";
  }
  Latch drained;
  r->OnDrained(0, [&] { drained.CountDown(); });
  // Nothing was read: the buffer cannot have drained.
  EXPECT_FALSE(drained.Done());
  EXPECT_GT(r->BufferedBytes(), 0u);
  ASSERT_TRUE(r->Write("END-OF-BURST"));
  ASSERT_TRUE(conn.ReadUntilContains("END-OF-BURST"));
  EXPECT_TRUE(drained.Wait());
  EXPECT_EQ(r->BufferedBytes(), 0u);
  // Registered while already drained: runs at once.
  Latch at_once;
  r->OnDrained(0, [&] { at_once.CountDown(); });
  EXPECT_TRUE(at_once.Wait());
}

TEST_F(HttpServerTest, StopClosesOpenStreams) {
  constexpr int kStreams = 20;
  std::atomic<int> closes{0};
  Latch started(kStreams);
  Mutex mu;
  std::vector<std::shared_ptr<Responder>> responders;
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->OnClose([&] { closes++; });
    MutexLock l(&mu);
    responders.push_back(r);
    started.CountDown();
  });
  Start();
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < kStreams; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server_->port()));
    conns.back()->Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  ASSERT_TRUE(started.Wait());
  server_->Stop();
  EXPECT_EQ(closes.load(), kStreams);
  for (auto& c : conns) EXPECT_TRUE(c->WaitForClose());
  MutexLock l(&mu);
  for (auto& r : responders) {
    EXPECT_TRUE(r->IsClosed());
    EXPECT_FALSE(r->Write("after stop"));
  }
  // Responders outlive the server harmlessly; late OnClose runs inline.
  server_.reset();
  bool ran = false;
  responders[0]->OnClose([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST_F(HttpServerTest, StopWithSeveralLoopsAndStreams) {
  constexpr int kStreams = 12;
  std::atomic<int> closes{0};
  Latch started(kStreams);
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->OnClose([&] { closes++; });
    r->Write("hello\n");
    started.CountDown();
  });
  HttpServerOptions o;
  o.io_threads = 3;
  Start(o);
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < kStreams; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server_->port()));
    conns.back()->Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  ASSERT_TRUE(started.Wait());
  for (auto& c : conns) ASSERT_TRUE(c->ReadUntilContains("hello\n"));
  server_->Stop();
  EXPECT_EQ(closes.load(), kStreams);
  for (auto& c : conns) EXPECT_TRUE(c->WaitForClose());
}

TEST_F(HttpServerTest, Http10CloseSemantics) {
  std::promise<std::shared_ptr<Responder>> got;
  Route("GET", "/plain", Echo());
  Route("GET", "/stream",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->StartStream(200, {});
          got.set_value(r);
        });
  Start();
  {
    RawConnection conn(server_->port());
    conn.Send("GET /plain HTTP/1.0\r\n\r\n");
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, "GET /plain ");
    EXPECT_EQ(r->headers.Get("Connection"), "close");
    EXPECT_TRUE(conn.WaitForClose());
  }
  {
    // HTTP/1.0 with keep-alive keeps the connection.
    RawConnection conn(server_->port());
    conn.Send("GET /plain HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->headers.Get("Connection"), "keep-alive");
    conn.Send("GET /plain HTTP/1.0\r\n\r\n");
    r = conn.ReadResponse();
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(conn.WaitForClose());
  }
  {
    // A stream to an HTTP/1.0 client is unframed and ends with the close.
    RawConnection conn(server_->port());
    conn.Send("GET /stream HTTP/1.0\r\n\r\n");
    auto r = got.get_future().get();
    ASSERT_TRUE(r->Write("abc"));
    ASSERT_TRUE(r->Write("def"));
    ASSERT_TRUE(r->Finish());
    EXPECT_TRUE(conn.WaitForClose());
    std::string all = conn.buffer();
    EXPECT_EQ(all.find("Transfer-Encoding"), std::string::npos) << all;
    EXPECT_EQ(all.substr(all.size() - 6), "abcdef");
  }
}

// WriteChunks: each piece its own chunk (empty ones skipped), in order; to
// an HTTP/1.0 client the pieces unframed, back to back.
TEST_F(HttpServerTest, WriteChunksFramesEachPiece) {
  std::promise<std::shared_ptr<Responder>> got11, got10;
  std::atomic<int> requests{0};
  Route("GET", "/stream",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->StartStream(200, {});
          (requests.fetch_add(1) == 0 ? got11 : got10).set_value(r);
        });
  Start();
  const std::vector<std::string_view> pieces = {"ab\n", "", "cde\n", "f"};
  {
    RawConnection conn(server_->port());
    conn.Send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    auto r = got11.get_future().get();
    ASSERT_TRUE(r->WriteChunks(pieces));
    ASSERT_TRUE(r->Finish());
    ASSERT_TRUE(conn.ReadUntilContains("0\r\n\r\n"));
    const std::string& all = conn.buffer();
    const size_t body = all.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    EXPECT_EQ(all.substr(body + 4),
              "3\r\nab\n\r\n4\r\ncde\n\r\n1\r\nf\r\n0\r\n\r\n");
  }
  {
    RawConnection conn(server_->port());
    conn.Send("GET /stream HTTP/1.0\r\n\r\n");
    auto r = got10.get_future().get();
    ASSERT_TRUE(r->WriteChunks(pieces));
    ASSERT_TRUE(r->Finish());
    EXPECT_TRUE(conn.WaitForClose());
    const std::string& all = conn.buffer();
    EXPECT_EQ(all.find("Transfer-Encoding"), std::string::npos) << all;
    const std::string want = "ab\ncde\nf";
    ASSERT_GE(all.size(), want.size());
    EXPECT_EQ(all.substr(all.size() - want.size()), want);
  }
}

TEST_F(HttpServerTest, HeadRequestGetsHeadOnly) {
  Route("GET", "/doc", [](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(200, {}, "twelve bytes");
  });
  Start();
  RawConnection conn(server_->port());
  conn.Send(
      "HEAD /doc HTTP/1.1\r\nHost: x\r\n\r\nGET /doc HTTP/1.1\r\nHost: "
      "x\r\n\r\n");
  auto h = conn.ReadResponse("HEAD");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->headers.Get("Content-Length"), "12");
  EXPECT_EQ(h->body, "");
  auto g = conn.ReadResponse();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->body, "twelve bytes");
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionTimesOut) {
  FakeClock& clock = clock_;
  HttpServerOptions o;
  o.clock = &clock;
  o.idle_timeout = seconds(30);
  o.timer_tick = seconds(1);
  std::promise<std::shared_ptr<Responder>> got;
  Route("GET", "/x", Echo());
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    got.set_value(r);
  });
  Start(o);
  RawConnection idle(server_->port());
  idle.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(idle.ReadResponse().ok());
  RawConnection stream(server_->port());
  stream.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = got.get_future().get();

  clock.WaitForWaiters(1);  // the timer thread sleeps
  clock.Advance(seconds(29));
  // Still open: a request on it works.
  idle.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(idle.ReadResponse().ok());
  clock.Advance(seconds(31));
  EXPECT_TRUE(idle.WaitForClose());
  // A stream in progress is not idle.
  ASSERT_TRUE(r->Write("still here"));
  EXPECT_TRUE(stream.ReadUntilContains("still here"));
  EXPECT_FALSE(r->IsClosed());
}

// A producer may bound how long its response takes (a streamed LIST whose
// client stops reading): past the deadline the connection closes, with the
// response unfinished; a response finished in time is not affected.
TEST_F(HttpServerTest, ResponseDeadlineClosesAnUnfinishedStream) {
  FakeClock& clock = clock_;
  HttpServerOptions o;
  o.clock = &clock;
  o.idle_timeout = seconds(1000);
  o.timer_tick = seconds(1);
  std::promise<std::shared_ptr<Responder>> late_got;
  std::promise<std::shared_ptr<Responder>> done_got;
  Route("GET", "/late", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->SetResponseDeadline(seconds(60));
    r->StartStream(200, {});
    late_got.set_value(r);
  });
  Route("GET", "/done", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->SetResponseDeadline(seconds(60));
    r->StartStream(200, {});
    r->Write("all of it");
    r->Finish();
    done_got.set_value(r);
  });
  Start(o);
  RawConnection late(server_->port());
  late.Send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = late_got.get_future().get();
  RawConnection done(server_->port());
  done.Send("GET /done HTTP/1.1\r\nHost: x\r\n\r\n");
  done_got.get_future().get();
  ASSERT_TRUE(done.ReadUntilContains("all of it"));

  clock.WaitForWaiters(1);  // the timer thread sleeps
  clock.Advance(seconds(59));
  ASSERT_TRUE(r->Write("in time"));
  EXPECT_TRUE(late.ReadUntilContains("in time"));
  clock.Advance(seconds(2));
  EXPECT_TRUE(late.WaitForClose());
  EXPECT_TRUE(r->IsClosed());
  EXPECT_FALSE(r->Write("too late"));
  // The finished exchange's connection stays open for its next request.
  done.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(done.ReadUntilContains("404"));
}

TEST_F(HttpServerTest, SlowHeaderTimesOut) {
  FakeClock& clock = clock_;
  HttpServerOptions o;
  o.clock = &clock;
  o.header_timeout = seconds(10);
  o.idle_timeout = seconds(1000);
  o.timer_tick = seconds(1);
  Route("GET", "/x", Echo());
  Start(o);
  RawConnection slow(server_->port());
  slow.Send("GET /x HTTP/1.1\r\nHo");
  RawConnection silent(server_->port());  // never sends a byte
  // Make sure both connections are accepted before time moves.
  while (server_->NumConnections() < 2) std::this_thread::yield();
  clock.WaitForWaiters(1);
  clock.Advance(seconds(11));
  EXPECT_TRUE(slow.WaitForClose());
  EXPECT_TRUE(silent.WaitForClose());
}

// Issue 15, "no cheap lock-out": a body that does not arrive in time is
// answered 408 and closed; each route may set its own deadline or none.
TEST_F(HttpServerTest, SlowBodyTimesOutWith408) {
  FakeClock& clock = clock_;
  HttpServerOptions o;
  o.clock = &clock;
  o.body_timeout = seconds(60);
  o.header_timeout = seconds(1000);
  o.idle_timeout = seconds(1000);
  o.timer_tick = seconds(1);
  Route("POST", "/echo", Echo());
  Route("POST", "/short", Echo(), {.body_timeout = seconds(5)});
  // Streaming bodies: the default deadline, and none (an open-ended stream).
  Latch upload_started;
  Route("POST", "/upload",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->OnBodyData([r](std::string_view, bool eof) {
            if (eof) r->Respond(200, {}, "done");
          });
          upload_started.CountDown();
        },
        {.stream_request_body = true});
  Latch stream_got_data;
  Route("POST", "/stream",
        [&](const HttpRequest&, std::shared_ptr<Responder> r) {
          auto body = std::make_shared<std::string>();
          r->OnBodyData(
              [r, body, &stream_got_data](std::string_view d, bool eof) {
                body->append(d);
                if (!d.empty()) stream_got_data.CountDown();
                if (eof) r->Respond(200, {}, *body);
              });
        },
        {.stream_request_body = true, .body_timeout = Duration::zero()});
  Start(o);

  // `100 Continue` tells us the head was parsed (and the deadline set).
  auto partial = [&](RawConnection& c, std::string_view path) {
    c.Send("POST " + std::string(path) +
           " HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
           "Content-Length: 10\r\n\r\n");
    ASSERT_TRUE(c.ReadUntilContains("100 Continue\r\n\r\n"));
    c.buffer().clear();
    c.Send("0");
  };
  RawConnection echo(server_->port());
  partial(echo, "/echo");
  RawConnection short_route(server_->port());
  partial(short_route, "/short");
  RawConnection stream(server_->port());
  stream.Send(
      "POST /stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "1\r\na\r\n");
  ASSERT_TRUE(stream_got_data.Wait());

  clock.WaitForWaiters(1);  // the timer thread sleeps
  clock.Advance(seconds(6));
  auto r = short_route.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 408);
  EXPECT_EQ(r->headers.Get("Connection"), "close");
  EXPECT_TRUE(short_route.WaitForClose());
  // That sweep also saw /echo, whose deadline (60 s) has not passed.
  echo.Send("123456789");
  r = echo.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /echo 0123456789");

  RawConnection echo2(server_->port());
  partial(echo2, "/echo");
  RawConnection upload(server_->port());
  upload.Send(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
  ASSERT_TRUE(upload_started.Wait());
  clock.Advance(seconds(61));
  for (RawConnection* c : {&echo2, &upload}) {
    r = c->ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c->WaitForClose());
  }
  // The stream without a deadline is still open 67 s later.
  stream.Send("2\r\nbc\r\n0\r\n\r\n");
  r = stream.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "abc");
  EXPECT_EQ(Metric("kplane_http_requests_total", {"http", "408"}), 3);
}

TEST_F(HttpServerTest, ConnectionsOverTheCapGet503AndClose) {
  Route("GET", "/x", Echo());
  HttpServerOptions o;
  o.max_connections = 2;
  Start(o);
  auto a = std::make_unique<RawConnection>(server_->port());
  RawConnection b(server_->port());
  // Both accepted (and counted) before the third arrives.
  while (server_->NumConnections() < 2) std::this_thread::yield();
  RawConnection over(server_->port());
  auto r = over.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers.Get("Retry-After"), "1");
  EXPECT_TRUE(over.WaitForClose());
  EXPECT_EQ(Metric("kplane_http_connections_rejected_total", {"http"}), 1);
  EXPECT_EQ(server_->NumConnections(), 2u);
  // The ones inside are served; once one leaves, a newcomer is too.
  b.Send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
  r = b.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  a.reset();
  while (server_->NumConnections() > 1) std::this_thread::yield();
  auto c = Client().Request("GET", "/x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->status, 200);
}

// A client that pipelines requests and never reads makes the server hold
// one response, not one per request: the next request is parsed only once
// the output before it has drained to 64 KiB. A whole response larger than
// the output cap is not cut.
TEST_F(HttpServerTest, PipelinedRequestWaitsForOutputToDrain) {
  constexpr size_t kBig = 8 << 20;  // more than the kernel buffers hold
  Mutex mu;
  std::vector<size_t> backlog_at_entry;
  Latch first_answered;
  ServerStopper stop = StopServerAtScopeExit();
  Route("GET", "/big", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    {
      MutexLock l(&mu);
      backlog_at_entry.push_back(r->BufferedBytes());
    }
    r->Respond(200, {}, std::string(kBig, 'b'));
    first_answered.CountDown();
  });
  Route("GET", "/ping", Echo(), {.run_on_io_thread = true});
  HttpServerOptions o;
  o.max_output_buffer_bytes = 1 << 20;  // less than one response
  Start(o);
  RawConnection conn(server_->port());
  int small = 64 * 1024;  // and no receive-buffer autotuning
  ASSERT_EQ(setsockopt(conn.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)),
            0);
  conn.Send(
      "GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /big HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(first_answered.Wait());
  // The first Respond() has handed the loop its "parse the next request"
  // task; once the loop answers a later connection, it has run it.
  RawConnection ping(server_->port());
  ping.Send("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(ping.ReadResponse().ok());
  for (int i = 0; i < 3; ++i) {
    auto r = conn.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body.size(), kBig);
  }
  MutexLock l(&mu);
  ASSERT_EQ(backlog_at_entry.size(), 3u);
  for (size_t b : backlog_at_entry) EXPECT_LE(b, size_t{64} << 10);
}

TEST_F(HttpServerTest, StreamsHaveAnOutputCapByDefault) {
  std::promise<std::shared_ptr<Responder>> got;
  Route("GET", "/watch", [&](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    got.set_value(r);
  });
  Start();                              // default options
  RawConnection conn(server_->port());  // never reads
  conn.Send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
  auto r = got.get_future().get();
  const std::string chunk(64 * 1024, 'e');
  size_t written = 0;
  while (r->Write(chunk)) {
    written += chunk.size();
    ASSERT_LT(written, size_t{256} << 20) << "no default cap";
  }
  EXPECT_TRUE(r->IsClosed());
}

// Response fields are never a way to inject another field: one whose name
// or value has CR, LF or NUL is dropped (and logged); the response goes out.
TEST_F(HttpServerTest, HeaderFieldsWithCrLfAreDropped) {
  Route("GET", "/x", [](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(200,
               {{"Warning", "299 - \"a\r\nX-Injected: yes\""},
                {"X-Lf", "a\nX-Injected: yes"},
                {"X-Nul", std::string("a\0b", 3)},
                {"X-Bad\r\nX-Injected", "yes"},
                {"Bad Name", "v"},
                {"X-Good", "fine"}},
               "body");
  });
  Route("GET", "/s", [](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->StartStream(200, {{"X-Bad", "a\r\n\r\ninjected body"}, {"X-Ok", "1"}});
    r->Write("s");
    r->Finish();
  });
  Start();
  RawConnection conn(server_->port());
  conn.Send(
      "GET /x HTTP/1.1\r\nHost: x\r\n\r\nGET /s HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(conn.ReadUntilContains("0\r\n\r\n"));
  const std::string wire = conn.buffer();
  EXPECT_EQ(wire.find("X-Injected"), std::string::npos) << wire;
  EXPECT_EQ(wire.find("injected body"), std::string::npos) << wire;
  auto r = conn.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "body");
  EXPECT_EQ(r->headers.Get("X-Good"), "fine");
  EXPECT_FALSE(r->headers.Has("Warning"));
  EXPECT_FALSE(r->headers.Has("X-Lf"));
  EXPECT_FALSE(r->headers.Has("X-Nul"));
  auto s = conn.ReadResponse();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->body, "s");
  EXPECT_EQ(s->headers.Get("X-Ok"), "1");
  EXPECT_FALSE(s->headers.Has("X-Bad"));
}

TEST_F(HttpServerTest, PathAndQueryAreDecoded) {
  std::promise<HttpRequest> got;
  Route(
      "GET", "/a b/",
      [&](const HttpRequest& req, std::shared_ptr<Responder> r) {
        got.set_value(req);
        r->Respond(204, {}, "ignored");
      },
      {}, /*prefix=*/true);
  Start();
  auto r = Client().Request("GET", "/a%20b/c%2Fd?x=1&x=2&y=a+b%26&flag",
                            {{"X-Custom-Header", "V"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->body, "");
  HttpRequest req = got.get_future().get();
  EXPECT_EQ(req.path, "/a b/c/d");
  EXPECT_EQ(req.raw_path, "/a%20b/c%2Fd");
  EXPECT_EQ(req.raw_query, "x=1&x=2&y=a+b%26&flag");
  EXPECT_EQ(req.query.count("x"), 2u);
  EXPECT_EQ(req.QueryParam("y"), "a b&");
  EXPECT_TRUE(req.HasQueryParam("flag"));
  EXPECT_EQ(req.headers.Get("x-custom-header"), "V");
  EXPECT_EQ(req.remote_address.rfind("127.0.0.1:", 0), 0u);
}

TEST_F(HttpServerTest, DefaultNotFoundAndMethodNotAllowed) {
  Route("POST", "/v3/kv/range", Echo());
  Start();
  HttpClient c = Client();
  auto nf = c.Request("POST", "/v3/nope");
  ASSERT_TRUE(nf.ok());
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(nf->body, "Not Found");
  EXPECT_EQ(nf->headers.Get("Content-Type"), "text/plain");
  auto na = c.Request("GET", "/v3/kv/range");
  ASSERT_TRUE(na.ok());
  EXPECT_EQ(na->status, 405);
  EXPECT_EQ(na->body, "Method Not Allowed");
  EXPECT_EQ(na->headers.Get("Allow"), "POST");
  // A 404 with a body leaves the connection usable.
  auto nf2 = c.Request("POST", "/v3/nope", {}, "some body");
  ASSERT_TRUE(nf2.ok());
  EXPECT_EQ(nf2->status, 404);
  EXPECT_EQ(Metric("kplane_http_connections_accepted_total", {"http"}), 1);
}

std::string ThreadName() {
  char name[32] = {0};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

TEST_F(HttpServerTest, HandlersRunOnWorkersOrTheIoThread) {
  Route("GET", "/healthz",
        [](const HttpRequest&, std::shared_ptr<Responder> r) {
          r->Respond(200, {}, ThreadName());
        },
        {.run_on_io_thread = true});
  Route("GET", "/work", [](const HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(200, {}, ThreadName());
  });
  HttpServerOptions o;
  o.name = "tsrv";
  Start(o);
  HttpClient c = Client();
  EXPECT_EQ(c.Request("GET", "/healthz")->body, "tsrv-io0");
  EXPECT_EQ(c.Request("GET", "/work")->body.rfind("tsrv-w", 0), 0u);
}

TEST_F(HttpServerTest, IoThreadStreamingRouteGetsBodyOnTheIoThread) {
  // The raft peer stream's route: handler and every body piece on the I/O
  // thread, in order, so no piece costs a hop to a worker.
  Route("POST", "/stream",
        [](const HttpRequest&, std::shared_ptr<Responder> r) {
          auto seen = std::make_shared<std::string>();
          auto threads = std::make_shared<std::set<std::string>>();
          threads->insert(ThreadName());
          r->OnBodyData([r, seen, threads](std::string_view d, bool eof) {
            threads->insert(ThreadName());
            seen->append(d);
            if (!eof) return;
            std::string names;
            for (const std::string& t : *threads) names += t + ";";
            r->Respond(200, {}, *seen + "|" + names);
          });
        },
        {.stream_request_body = true, .run_on_io_thread = true});
  HttpServerOptions o;
  o.name = "tsrv";
  Start(o);
  auto s = Client().OpenStream("POST", "/stream");
  ASSERT_TRUE(s.ok());
  for (const char* piece : {"one,", "two,", "three"}) {
    ASSERT_TRUE((*s)->Send(piece).ok());
  }
  ASSERT_TRUE((*s)->CloseSend().ok());
  std::string body;
  auto more = (*s)->Read(&body, testing::kTestDeadline);
  while (more.ok() && *more) more = (*s)->Read(&body, testing::kTestDeadline);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(body, "one,two,three|tsrv-io0;");
}

TEST_F(HttpServerTest, HandlerExceptionBecomes500) {
  Route("GET", "/throw", [](const HttpRequest&, std::shared_ptr<Responder>) {
    throw std::runtime_error("boom");
  });
  Start();
  auto r = Client().Request("GET", "/throw");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
}

// A body callback that throws (a parser's std::bad_alloc, say) answers 500
// and leaves the server serving, as a throwing handler does; on a stream
// already answering, the connection is dropped. On the I/O thread too.
TEST_F(HttpServerTest, BodyCallbackExceptionBecomes500) {
  for (const bool io_thread : {false, true}) {
    SCOPED_TRACE(io_thread ? "io thread" : "worker");
    const std::string path = io_thread ? "/throw-io" : "/throw";
    Route("POST", path,
          [](const HttpRequest&, std::shared_ptr<Responder> r) {
            r->OnBodyData([](std::string_view, bool eof) {
              if (eof) throw std::runtime_error("boom");
            });
          },
          {.stream_request_body = true, .run_on_io_thread = io_thread});
    Route("POST", path + "-streaming",
          [](const HttpRequest&, std::shared_ptr<Responder> r) {
            r->StartStream(200, {});
            r->OnBodyData([](std::string_view, bool) {
              throw std::runtime_error("boom");
            });
          },
          {.stream_request_body = true, .run_on_io_thread = io_thread});
  }
  Route("POST", "/echo", Echo());
  Start();
  for (const std::string path : {"/throw", "/throw-io"}) {
    auto r = Client().Request("POST", path, {}, "body");
    ASSERT_TRUE(r.ok()) << path << ": " << r.status();
    EXPECT_EQ(r->status, 500) << path;
    auto s = Client().OpenStream("POST", path + "-streaming");
    ASSERT_TRUE(s.ok()) << path;
    ASSERT_TRUE((*s)->Send("x").ok());
    auto head = (*s)->ReadHead(testing::kTestDeadline);
    ASSERT_TRUE(head.ok()) << head.status();
    EXPECT_EQ(head->status, 200);
    std::string data;
    auto more = (*s)->Read(&data, testing::kTestDeadline);
    while (more.ok() && *more) more = (*s)->Read(&data, testing::kTestDeadline);
    EXPECT_FALSE(more.ok()) << path << ": the stream must end in an error";
  }
  auto ok = Client().Request("POST", "/echo", {}, "still here");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "POST /echo still here");
}

TEST_F(HttpServerTest, SeveralIoLoopsServeConcurrentClients) {
  Route("POST", "/echo", Echo());
  HttpServerOptions o;
  o.io_threads = 3;
  o.worker_threads = 2;
  Start(o);
  constexpr int kClients = 12, kRequests = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      HttpClient c = Client();
      for (int i = 0; i < kRequests; ++i) {
        std::string body = std::to_string(t) + "/" + std::to_string(i);
        auto r = c.Request("POST", "/echo", {}, body);
        if (r.ok() && r->body == "POST /echo " + body) ok++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  EXPECT_EQ(Metric("kplane_http_connections_accepted_total", {"http"}),
            kClients);
}

TEST_F(HttpServerTest, StartFailsWhenPortIsTaken) {
  Start();
  HttpServerOptions o;
  o.port = server_->port();
  o.metrics = &registry_;
  HttpServer second(o);
  Status s = second.Start();
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace kplane::net
