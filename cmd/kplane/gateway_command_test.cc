#include "cmd/kplane/gateway_command.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cmd/kplane/store_command.h"
#include "net/pki.h"
#include "net/socket.h"
#include "net/tls.h"

namespace kplane::cmd {
namespace {

StatusOr<GatewayOptions> Parse(const std::vector<std::string>& args) {
  bool help = false;
  auto o = ParseGatewayArgs(args, &help);
  EXPECT_FALSE(help);
  return o;
}

// The error's message for `args` ("" if they parsed).
std::string ParseError(const std::vector<std::string>& args) {
  auto o = Parse(args);
  if (o.ok()) return "";
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  return o.status().message();
}

TEST(GatewayFlagsTest, EtcdsDefaults) {
  auto o = Parse({"start"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->listen_host, "127.0.0.1");
  EXPECT_EQ(o->listen_port, 23790);
  ASSERT_EQ(o->endpoints.size(), 1u);
  EXPECT_EQ(o->endpoints[0].HostPort(), "127.0.0.1:2379");
  EXPECT_EQ(o->retry_delay, minutes(1));
  EXPECT_EQ(o->max_connections, 1024u);
  EXPECT_EQ(o->dial_timeout, seconds(5));
  EXPECT_EQ(o->idle_timeout, Duration(0));
  EXPECT_FALSE(o->insecure_discovery);
}

TEST(GatewayFlagsTest, FlagsBeforeAndAfterStartAsEtcdsCommandLine) {
  // etcd's e2e suite runs `etcd gateway --endpoints=... start`.
  auto o = Parse({"--endpoints=http://127.0.0.1:2379,https://m2:22379/",
                  "start", "--listen-addr=[::1]:0", "--retry-delay=30s",
                  "--endpoints", "[::1]:32379", "--max-connections=3",
                  "--dial-timeout=250ms", "--idle-timeout=2m"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->listen_host, "::1");
  EXPECT_EQ(o->listen_port, 0);
  ASSERT_EQ(o->endpoints.size(), 3u);
  EXPECT_EQ(o->endpoints[0].HostPort(), "127.0.0.1:2379");
  EXPECT_EQ(o->endpoints[1].HostPort(), "m2:22379");
  EXPECT_EQ(o->endpoints[2].HostPort(), "[::1]:32379");
  EXPECT_EQ(o->retry_delay, seconds(30));
  EXPECT_EQ(o->max_connections, 3u);
  EXPECT_EQ(o->dial_timeout, milliseconds(250));
  EXPECT_EQ(o->idle_timeout, minutes(2));
}

TEST(GatewayFlagsTest, ZeroRetryDelayIsEtcdsFiveMinutes) {
  auto o = Parse({"start", "--retry-delay=0s"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->retry_delay, minutes(5));
}

TEST(GatewayFlagsTest, BadInputNamesTheProblem) {
  const std::map<std::vector<std::string>, std::string> cases = {
      // The whole messages of the three subcommand errors.
      {{}, "a subcommand is needed: `kplane store gateway start [flags]`"},
      {{"stop"}, "unknown subcommand \"stop\" (the gateway has one: start)"},
      {{"start", "now"}, "unexpected argument \"now\""},
      {{"start", "--bogus"}, "bogus"},
      {{"start", "--listen-addr=23790"}, "--listen-addr: failed to validate"},
      {{"start", "--listen-addr=h:x"}, "bad port"},
      {{"start", "--listen-addr=::1:80"}, "too many colons"},
      {{"start", "--endpoints=m1"}, "cannot parse endpoint \"m1\""},
      {{"start", "--endpoints=m1:0"}, "port 0 out of range"},
      {{"start", "--endpoints=m1:65536"}, "out of range"},
      {{"start", "--endpoints=:2379"}, "empty host"},
      {{"start", "--endpoints="}, "no endpoint given"},
      {{"start", "--max-connections=0"}, "--max-connections must be at least"},
      {{"start", "--dial-timeout=0s"}, "--dial-timeout must be positive"},
      {{"start", "--idle-timeout=-1s"}, "--idle-timeout must not be negative"},
      {{"start", "--retry-delay=-1s"}, "--retry-delay must not be negative"},
      {{"start", "--retry-delay=soon"}, "retry-delay"},
      {{"start", "--discovery-srv-name=x"}, "needs --discovery-srv"},
  };
  for (const auto& [args, want] : cases) {
    std::string got = ParseError(args);
    EXPECT_NE(got.find(want), std::string::npos)
        << "args: " << testing::PrintToString(args) << "\n got: " << got;
  }
}

TEST(GatewayFlagsTest, HelpListsTheFlags) {
  bool help = false;
  (void)ParseGatewayArgs({"start", "--help"}, &help);
  EXPECT_TRUE(help);
  const std::string u = GatewayUsage();
  for (const char* f :
       {"--listen-addr", "--endpoints", "--retry-delay", "--discovery-srv",
        "--discovery-srv-name", "--insecure-discovery",
        "--insecure-skip-tls-verify", "--trusted-ca-file", "--max-connections",
        "--dial-timeout", "--idle-timeout"}) {
    EXPECT_NE(u.find(f), std::string::npos) << f;
  }
}

TEST(GatewayCommandTest, ExitCodes) {
  EXPECT_EQ(RunStoreCommand({"gateway", "start", "--help"}), 0);
  EXPECT_EQ(RunStoreCommand({"gateway"}), 2);
  EXPECT_EQ(RunStoreCommand({"gateway", "start", "--max-connections=0"}), 2);
  // `grpc-proxy` is etcd's gRPC proxy now (grpc_proxy_command_test); a
  // bad flag still ends with 2, without starting it.
  EXPECT_EQ(RunStoreCommand({"grpc-proxy", "start", "--bogus"}), 2);
  // Proxying to itself is refused before anything listens.
  EXPECT_EQ(RunStoreCommand({"gateway", "start", "--listen-addr=127.0.0.1:1",
                             "--endpoints=127.0.0.1:1"}),
            2);
}

class FakeResolver : public net::SrvResolver {
 public:
  std::map<std::string, std::vector<net::SrvRecord>> answers;
  StatusOr<std::vector<net::SrvRecord>> LookupSrv(
      const std::string& name) override {
    auto it = answers.find(name);
    if (it == answers.end()) return NotFoundError("lookup " + name);
    return it->second;
  }
};

Status AcceptAll(const net::DiscoveredEndpoint&) { return Status::Ok(); }

std::vector<std::string> Names(const std::vector<net::GatewayEndpoint>& eps) {
  std::vector<std::string> out;
  for (const auto& e : eps) out.push_back(e.HostPort());
  return out;
}

TEST(GatewayEndpointsTest, EndpointsAsGiven) {
  auto o = Parse({"start", "--endpoints=127.0.0.1:2379,[::1]:22379"});
  ASSERT_TRUE(o.ok());
  FakeResolver r;
  std::vector<std::string> notes;
  auto eps = ResolveGatewayEndpoints(*o, r, AcceptAll, &notes);
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  EXPECT_EQ(Names(*eps),
            (std::vector<std::string>{"127.0.0.1:2379", "[::1]:22379"}));
}

TEST(GatewayEndpointsTest, RefusesToProxyToItself) {
  FakeResolver r;
  std::vector<std::string> notes;
  for (const char* listen :
       {"--listen-addr=127.0.0.1:2379", "--listen-addr=localhost:2379"}) {
    auto o = Parse({"start", listen});
    ASSERT_TRUE(o.ok());
    auto eps = ResolveGatewayEndpoints(*o, r, AcceptAll, &notes);
    EXPECT_EQ(eps.status().code(), StatusCode::kInvalidArgument) << listen;
    EXPECT_NE(eps.status().message().find(
                  "should not resolve to the gateway listen address"),
              std::string::npos)
        << eps.status().message();
  }
  // Another port, or port 0, is fine.
  for (const char* listen :
       {"--listen-addr=127.0.0.1:2380", "--listen-addr=127.0.0.1:0"}) {
    auto o = Parse({"start", listen});
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(ResolveGatewayEndpoints(*o, r, AcceptAll, &notes).ok());
  }
}

TEST(GatewayEndpointsTest, DiscoveryKeepsVerifiedHttpsRecords) {
  FakeResolver r;
  r.answers["_etcd-client-ssl._tcp.example.com"] = {{"127.0.0.1", 2379, 0, 0},
                                                    {"127.0.0.2", 2379, 1, 5}};
  r.answers["_etcd-client._tcp.example.com"] = {{"127.0.0.3", 2379, 0, 0}};
  auto o = Parse(
      {"start", "--discovery-srv=example.com", "--endpoints=127.0.0.9:2379"});
  ASSERT_TRUE(o.ok());
  std::vector<std::string> validated;
  auto validate = [&](const net::DiscoveredEndpoint& d) {
    validated.push_back(d.url);
    return d.srv.target == "127.0.0.1" ? Status::Ok()
                                       : UnavailableError("bad certificate");
  };
  std::vector<std::string> notes;
  auto eps = ResolveGatewayEndpoints(*o, r, validate, &notes);
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  // http:// is never dialled without --insecure-discovery.
  EXPECT_EQ(validated, (std::vector<std::string>{"https://127.0.0.1:2379",
                                                 "https://127.0.0.2:2379"}));
  EXPECT_EQ(Names(*eps), (std::vector<std::string>{"127.0.0.1:2379"}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("\"http://127.0.0.3:2379\" is insecure"),
            std::string::npos)
      << notes[1];
  EXPECT_NE(notes[1].find("bad certificate"), std::string::npos) << notes[1];
}

TEST(GatewayEndpointsTest, InsecureDiscoveryKeepsEveryRecordWithItsPriority) {
  FakeResolver r;
  r.answers["_etcd-client-ssl-prod._tcp.example.com"] = {
      {"127.0.0.2", 2379, 1, 5}};
  r.answers["_etcd-client-prod._tcp.example.com"] = {{"127.0.0.3", 2379, 0, 0}};
  auto o = Parse({"start", "--discovery-srv=example.com",
                  "--discovery-srv-name=prod", "--insecure-discovery"});
  ASSERT_TRUE(o.ok());
  auto never = [](const net::DiscoveredEndpoint&) {
    return UnavailableError("must not be asked");
  };
  std::vector<std::string> notes;
  auto eps = ResolveGatewayEndpoints(*o, r, never, &notes);
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  EXPECT_EQ(Names(*eps),
            (std::vector<std::string>{"127.0.0.2:2379", "127.0.0.3:2379"}));
  EXPECT_EQ((*eps)[0].priority, 1);
  EXPECT_EQ((*eps)[0].weight, 5);
}

TEST(GatewayEndpointsTest, NothingUsableDiscoveredFallsBackToEndpoints) {
  FakeResolver r;
  r.answers["_etcd-client._tcp.example.com"] = {{"127.0.0.3", 2379, 0, 0}};
  auto o = Parse(
      {"start", "--discovery-srv=example.com", "--endpoints=127.0.0.9:2379"});
  ASSERT_TRUE(o.ok());
  std::vector<std::string> notes;
  auto eps = ResolveGatewayEndpoints(*o, r, AcceptAll, &notes);
  ASSERT_TRUE(eps.ok());
  EXPECT_EQ(Names(*eps), (std::vector<std::string>{"127.0.0.9:2379"}));
  EXPECT_NE(notes.back().find("using --endpoints instead"), std::string::npos);
}

TEST(GatewayEndpointsTest, FailedLookupsAreAnError) {
  FakeResolver r;  // no records at all
  auto o = Parse({"start", "--discovery-srv=example.com"});
  ASSERT_TRUE(o.ok());
  std::vector<std::string> notes;
  auto eps = ResolveGatewayEndpoints(*o, r, AcceptAll, &notes);
  EXPECT_EQ(eps.status().code(), StatusCode::kNotFound);
  EXPECT_NE(eps.status().message().find("--discovery-srv: dns lookup errors"),
            std::string::npos)
      << eps.status().message();
}

// A TLS server on 127.0.0.1 that completes a handshake on each connection
// with `pair` and closes it; a failed handshake just closes.
class TlsServer {
 public:
  explicit TlsServer(const net::KeyPair& pair) {
    auto ctx = net::TlsContext::NewServer(
        {.cert_pem = pair.cert_pem, .key_pem = pair.key_pem});
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    ctx_ = *ctx;
    auto l = net::ListenTcp("127.0.0.1", 0, 16);
    listener_ = std::move(*l);
    port_ = *net::LocalPort(listener_.get());
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    stop_r_.Reset(p[0]);
    stop_w_.Reset(p[1]);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TlsServer() {
    (void)!::write(stop_w_.get(), "x", 1);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  void Serve() {
    for (;;) {
      pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_r_.get(), POLLIN, 0}};
      ::poll(p, 2, -1);
      if (p[1].revents) return;
      net::ScopedFd fd(::accept4(listener_.get(), nullptr, nullptr,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd.valid()) continue;
      auto session = net::TlsSession::NewServer(ctx_, fd.get());
      if (!session.ok()) continue;
      for (int i = 0; i < 100; ++i) {
        auto r = (*session)->Handshake();
        if (r != net::TlsSession::Result::kWantRead &&
            r != net::TlsSession::Result::kWantWrite) {
          break;
        }
        if (!net::WaitFd(fd.get(), r == net::TlsSession::Result::kWantWrite,
                         seconds(5), stop_r_.get())
                 .ok()) {
          break;
        }
      }
    }
  }

  std::shared_ptr<const net::TlsContext> ctx_;
  net::ScopedFd listener_, stop_r_, stop_w_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// etcd's ValidateSecureEndpoints: a discovered https endpoint is kept
// when its certificate verifies against --trusted-ca-file for the
// discovery domain's name.
TEST(GatewayEndpointsTest, TlsValidatorChecksTheCaAndTheDomainName) {
  const WallTime now = Clock::Real()->WallNow();
  auto ca = net::GenerateCa("gateway-test-ca", now);
  auto other_ca = net::GenerateCa("other-ca", now);
  ASSERT_TRUE(ca.ok() && other_ca.ok());
  auto cert = net::IssueCertificate(
      *ca,
      {.common_name = "m1", .dns_names = {"example.com"}, .server_auth = true},
      now);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  char tmpl[] = "/tmp/gateway_tls_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/ca.crt") << ca->cert_pem;
  std::ofstream(dir + "/other.crt") << other_ca->cert_pem;

  TlsServer server(*cert);
  net::DiscoveredEndpoint ep;
  ep.https = true;
  ep.srv = {"127.0.0.1", server.port(), 0, 0};
  ep.url = "https://127.0.0.1:" + std::to_string(server.port());

  auto check = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"start"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto o = Parse(args);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return TlsEndpointValidator(*o)(ep);
  };
  EXPECT_TRUE(check({"--discovery-srv=example.com",
                     "--trusted-ca-file=" + dir + "/ca.crt"})
                  .ok());
  // Another CA, another domain: refused, unless verification is skipped.
  Status wrong_ca = check({"--discovery-srv=example.com",
                           "--trusted-ca-file=" + dir + "/other.crt"});
  EXPECT_EQ(wrong_ca.code(), StatusCode::kUnavailable) << wrong_ca.ToString();
  Status wrong_name = check(
      {"--discovery-srv=example.org", "--trusted-ca-file=" + dir + "/ca.crt"});
  EXPECT_EQ(wrong_name.code(), StatusCode::kUnavailable)
      << wrong_name.ToString();
  EXPECT_TRUE(check({"--discovery-srv=example.org",
                     "--trusted-ca-file=" + dir + "/other.crt",
                     "--insecure-skip-tls-verify"})
                  .ok());
  // A CA file that is not there names the flag.
  Status missing = check({"--discovery-srv=example.com",
                          "--trusted-ca-file=" + dir + "/none.crt"});
  EXPECT_NE(missing.message().find("--trusted-ca-file"), std::string::npos)
      << missing.ToString();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::cmd
