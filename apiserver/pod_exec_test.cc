#include "apiserver/pod_exec.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kplane::apiserver
