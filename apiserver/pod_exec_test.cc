#include "apiserver/pod_exec.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "net/http_server.h"
#include "net/http_test_util.h"
#include "net/websocket.h"

namespace kplane::apiserver {
namespace {

namespace corev1 = objects::corev1;

corev1::Pod Pod(int containers, const std::string& node = "node-0") {
  corev1::Pod p;
  p.mutable_metadata()->set_name("web");
  p.mutable_metadata()->set_namespace_("default");
  for (int i = 0; i < containers; ++i) {
    p.mutable_spec()->add_containers()->set_name(i == 0 ? "a" : "b");
  }
  p.mutable_spec()->set_nodename(node);
  return p;
}

net::HttpRequest Query(std::multimap<std::string, std::string> q) {
  net::HttpRequest r;
  r.method = "GET";
  r.query = std::move(q);
  return r;
}

std::string ErrorOf(const ApiResult<PodExecRequest>& r) {
  if (!std::holds_alternative<ApiError>(r)) return "";
  const ApiError& e = std::get<ApiError>(r);
  return std::to_string(e.code) + " " + e.message;
}

TEST(PodExecRequest, ParsesAndChecksAsKube) {
  auto ok = ParsePodExecRequest(Query({{"command", "sh"},
                                       {"command", "-c"},
                                       {"command", "echo a&b"},
                                       {"stdout", "true"},
                                       {"stdin", "1"}}),
                                Pod(1));
  ASSERT_EQ(ErrorOf(ok), "");
  const PodExecRequest& er = std::get<PodExecRequest>(ok);
  EXPECT_EQ(er.container, "a");
  EXPECT_EQ(er.command, (std::vector<std::string>{"sh", "-c", "echo a&b"}));
  EXPECT_TRUE(er.stdin);
  EXPECT_FALSE(er.stderr);
  EXPECT_EQ(er.KubeletTarget(Pod(1)),
            "/exec/default/web/a?command=sh&command=-c&command=echo+a%26b&"
            "stdin=1&stdout=1&stderr=0&tty=0");

  EXPECT_EQ(ErrorOf(ParsePodExecRequest(Query({{"stdout", "1"}}), Pod(1))),
            "400 you must specify at least one command for the container");
  EXPECT_EQ(ErrorOf(ParsePodExecRequest(
                Query({{"command", "ls"}, {"stdout", "false"}}), Pod(1))),
            "400 you must specify at least 1 of stdin, stdout, stderr");
  EXPECT_EQ(ErrorOf(ParsePodExecRequest(
                Query({{"command", "ls"}, {"stdout", "1"}}), Pod(2))),
            "400 a container name must be specified for pod web, choose one "
            "of: [a b]");
  EXPECT_EQ(ErrorOf(ParsePodExecRequest(
                Query({{"command", "ls"}, {"stdout", "1"}, {"container", "x"}}),
                Pod(2))),
            "400 container x is not valid for pod web");
  EXPECT_EQ(ErrorOf(ParsePodExecRequest(
                Query({{"command", "ls"}, {"stdout", "1"}}), Pod(1, ""))),
            "400 pod web does not have a host assigned");
}

net::HttpRequest Upgrade(std::string protocols) {
  net::HttpRequest r;
  r.method = "GET";
  r.headers.Add("Connection", "Upgrade");
  r.headers.Add("Upgrade", "websocket");
  r.headers.Add("Sec-WebSocket-Version", "13");
  r.headers.Add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
  if (!protocols.empty()) r.headers.Add("Sec-WebSocket-Protocol", protocols);
  return r;
}

TEST(ExecUpgrade, NegotiatesTheChannelProtocol) {
  auto v5 = ParseExecUpgrade(
      Upgrade("v4.channel.k8s.io, v5.channel.k8s.io, channel.k8s.io"));
  ASSERT_TRUE(std::holds_alternative<ExecUpgrade>(v5));
  EXPECT_EQ(std::get<ExecUpgrade>(v5).protocol, "v5.channel.k8s.io");
  EXPECT_EQ(std::get<ExecUpgrade>(v5).accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  auto v4 = ParseExecUpgrade(Upgrade("v4.channel.k8s.io"));
  ASSERT_TRUE(std::holds_alternative<ExecUpgrade>(v4));
  EXPECT_EQ(std::get<ExecUpgrade>(v4).protocol, "v4.channel.k8s.io");

  auto none = ParseExecUpgrade(Upgrade("base64.channel.k8s.io"));
  ASSERT_TRUE(std::holds_alternative<ApiError>(none));
  EXPECT_NE(
      std::get<ApiError>(none).message.find("unable to negotiate protocol"),
      std::string::npos);
  net::HttpRequest plain;
  plain.method = "GET";
  auto e = ParseExecUpgrade(plain);
  ASSERT_TRUE(std::holds_alternative<ApiError>(e));
  EXPECT_EQ(std::get<ApiError>(e).message, "Upgrade request required");
}

net::HttpRequest SpdyUpgrade(std::vector<std::string> versions) {
  net::HttpRequest r;
  r.method = "POST";
  r.query = {{"command", "ls"}, {"stdout", "true"}, {"tty", "true"}};
  r.headers.Add("Connection", "Upgrade");
  r.headers.Add("Upgrade", "SPDY/3.1");
  for (const std::string& v : versions) {
    r.headers.Add("X-Stream-Protocol-Version", v);
  }
  return r;
}

TEST(ExecUpgrade, NegotiatesSpdyStreamProtocols) {
  // kubectl 1.20-1.29 list v4 first; the client's order wins.
  auto v4 =
      ParseExecUpgrade(SpdyUpgrade({"v4.channel.k8s.io", "v3.channel.k8s.io",
                                    "v2.channel.k8s.io", "channel.k8s.io"}));
  ASSERT_TRUE(std::holds_alternative<ExecUpgrade>(v4));
  const ExecUpgrade& up = std::get<ExecUpgrade>(v4);
  EXPECT_EQ(up.transport, ExecUpgrade::Transport::kSpdy);
  EXPECT_EQ(up.protocol, "v4.channel.k8s.io");
  EXPECT_TRUE(up.stdout);
  EXPECT_TRUE(up.tty);
  EXPECT_FALSE(up.stdin);
  auto v2 =
      ParseExecUpgrade(SpdyUpgrade({"v5.channel.k8s.io, v2.channel.k8s.io"}));
  ASSERT_TRUE(std::holds_alternative<ExecUpgrade>(v2));
  EXPECT_EQ(std::get<ExecUpgrade>(v2).protocol, "v2.channel.k8s.io");

  // Only v1 (or nothing): not served.
  for (auto versions : {std::vector<std::string>{"channel.k8s.io"},
                        std::vector<std::string>{}}) {
    auto e = ParseExecUpgrade(SpdyUpgrade(versions));
    ASSERT_TRUE(std::holds_alternative<ApiError>(e));
    EXPECT_EQ(std::get<ApiError>(e).code, 400);
    EXPECT_NE(std::get<ApiError>(e).message.find(
                  "unable to negotiate protocol: client supports ["),
              std::string::npos);
  }
  // SPDY/3.1 without Connection: Upgrade is no upgrade.
  net::HttpRequest half = SpdyUpgrade({"v4.channel.k8s.io"});
  half.headers = {};
  half.headers.Add("Upgrade", "SPDY/3.1");
  auto e = ParseExecUpgrade(half);
  ASSERT_TRUE(std::holds_alternative<ApiError>(e));
  EXPECT_EQ(std::get<ApiError>(e).message, "Upgrade request required");
}

// A client that stops reading (it only pings) loses its session once a
// write to it has made no progress for the idle timeout, and its exec slot
// comes back. Its pings kept the session from being idle, and the reader
// thread's pong waited for the writer stuck in send(): both threads and the
// slot were held until the server stopped.
TEST(PodExecProxyTest, AClientThatStopsReadingLosesItsSession) {
  net::HttpServer kubelet(net::HttpServerOptions{.port = 0});
  kubelet.Handle(
      "POST", "/exec/default/web/a",
      [&](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->SetMaxBufferedBytes(0);
        r->StartStream(200, {{"Content-Type", "application/octet-stream"}});
        const std::string rec =
            net::EncodeChannelRecord(1, std::string(64 << 10, 'x'));
        for (int i = 0; i < 256; ++i) {  // 16 MiB: more than sockets hold
          if (!r->Write(rec)) break;
        }
        r->Finish();
      },
      {.stream_request_body = true, .body_timeout = Duration::zero()});
  ASSERT_TRUE(kubelet.Start().ok());
  PodExecProxy proxy({.idle_timeout = seconds(1)});
  net::HttpServer api(net::HttpServerOptions{.port = 0});
  api.Handle(
      "GET", "/exec",
      [&](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        ApiResult<ExecUpgrade> up = ParseExecUpgrade(req);
        ASSERT_TRUE(std::holds_alternative<ExecUpgrade>(up));
        proxy.Exec(
            {"127.0.0.1", kubelet.port()},
            "/exec/default/web/a?command=cat&output=1",
            std::get<ExecUpgrade>(up), "", r,
            [](const ApiError& e) { ADD_FAILURE() << e.message; }, [] {});
      });
  ASSERT_TRUE(api.Start().ok());

  net::testing::RawConnection c(api.port());
  const int small = 4096;
  ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  c.Send(
      "GET /exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
      "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
      "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n");
  ASSERT_TRUE(net::testing::PollUntil([&] { return proxy.Active() == 1; }));
  // Pings (masked, empty) at the pace of a client's keep-alive, never a
  // read, until the session is gone or 20 s have passed.
  const char ping[] = {'\x89', '\x80', 0, 0, 0, 0};
  const TimePoint deadline = Clock::Real()->Now() + seconds(20);
  while (proxy.Active() > 0 && Clock::Real()->Now() < deadline) {
    ::send(c.fd(), ping, sizeof ping, MSG_NOSIGNAL | MSG_DONTWAIT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(proxy.Active(), 0);
  proxy.Stop();
  api.Stop();
  kubelet.Stop();
}

}  // namespace
}  // namespace kplane::apiserver
