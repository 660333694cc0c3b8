#include "cmd/kplane/gateway_command.h"

#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>

#include <iostream>
#include <set>

#include "base/command.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/strings.h"
#include "net/socket.h"
#include "net/tls.h"
#include "net/url.h"

namespace kplane::cmd {

namespace {

constexpr char kCommand[] = "kplane store gateway start";

// etcd's stripSchema then SplitHostPort: "http://h:p" and "h:p" both name
// h:p; the gateway only moves TCP bytes, so the scheme does not matter.
StatusOr<net::GatewayEndpoint> ParseEndpoint(const std::string& ep) {
  std::string s = ep;
  if (const size_t i = s.find("://"); i != std::string::npos) {
    s = s.substr(i + 3);
    if (const size_t slash = s.find('/'); slash != std::string::npos) {
      s = s.substr(0, slash);
    }
  }
  net::GatewayEndpoint out;
  Status st = net::SplitHostPort(s, /*allow_zero=*/false, &out.host, &out.port);
  if (!st.ok() || out.host.empty()) {
    return InvalidArgumentError(
        "--endpoints: cannot parse endpoint \"" + ep + "\" (want host:port" +
        (st.ok() ? ": empty host" : ": " + st.message()) + ")");
  }
  return out;
}

// Every address `host` resolves to, as text ("127.0.0.1", "::1").
StatusOr<std::set<std::string>> LookupHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return UnavailableError(gai_strerror(rc));
  std::set<std::string> out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    char buf[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, buf, sizeof(buf), nullptr, 0,
                    NI_NUMERICHOST) == 0) {
      out.insert(buf);
    }
  }
  freeaddrinfo(res);
  return out;
}

struct GatewayFlagValues {
  std::string listen_addr = "127.0.0.1:23790";
  std::vector<std::string> endpoints = {"127.0.0.1:2379"};
  GatewayOptions o;
  int64_t max_connections = 1024;
};

void DeclareFlags(FlagSet& f, GatewayFlagValues& v) {
  f.String("listen-addr", &v.listen_addr,
           "Address to accept client connections on, host:port (port 0 "
           "picks a free one).");
  f.StringList("endpoints", &v.endpoints,
               "Comma-separated store client endpoints to proxy to "
               "(host:port; a scheme such as http:// is ignored).");
  f.Duration("retry-delay", &v.o.retry_delay,
             "How long an endpoint that failed to dial is skipped before it "
             "is tried again (0: 5m, as etcd).");
  f.String("discovery-srv", &v.o.discovery_srv,
           "DNS domain whose SRV records (_etcd-client-ssl._tcp, "
           "_etcd-client._tcp) list the endpoints.");
  f.String("discovery-srv-name", &v.o.discovery_srv_name,
           "Suffix of the SRV service name (_etcd-client-<name>._tcp).");
  f.Bool("insecure-discovery", &v.o.insecure_discovery,
         "Accept http:// SRV records and https:// ones that were not "
         "verified.");
  f.Bool("insecure-skip-tls-verify", &v.o.insecure_skip_tls_verify,
         "Accept discovered https:// endpoints whose certificate does not "
         "verify (testing only).");
  f.String("trusted-ca-file", &v.o.trusted_ca_file,
           "CA file that verifies discovered https:// endpoints (default: "
           "the system's).");
  f.Int64("max-connections", &v.max_connections,
          "Client connections served at once; more are closed as they come "
          "(kplane's).");
  f.Duration("dial-timeout", &v.o.dial_timeout,
             "Time allowed to connect to an endpoint before failing over to "
             "the next (kplane's).");
  f.Duration("idle-timeout", &v.o.idle_timeout,
             "Close a connection on which nothing moved for this long; 0: "
             "never (kplane's).");
}

}  // namespace

std::string GatewayUsage() {
  FlagSet f(kCommand,
            "An L4 TCP proxy to a store cluster (etcd's `gateway start`): "
            "each client connection is joined to an endpoint chosen round "
            "robin; endpoints that fail to dial are skipped for "
            "--retry-delay.");
  GatewayFlagValues v;
  DeclareFlags(f, v);
  return f.Usage();
}

StatusOr<GatewayOptions> ParseGatewayArgs(const std::vector<std::string>& args,
                                          bool* help) {
  *help = false;
  FlagSet f(kCommand, "");
  GatewayFlagValues v;
  DeclareFlags(f, v);
  Status parsed = f.Parse(args);
  if (f.help_requested()) {
    *help = true;
    return v.o;
  }
  RETURN_IF_ERROR(parsed);
  RETURN_IF_ERROR(CheckStartSubcommand(f.args(), "kplane store gateway"));
  GatewayOptions& o = v.o;
  if (Status s = net::SplitHostPort(v.listen_addr, /*allow_zero=*/true,
                                    &o.listen_host, &o.listen_port);
      !s.ok()) {
    // etcd: "failed to validate listen address: <addr>".
    return InvalidArgumentError(
        "--listen-addr: failed to validate listen "
        "address \"" +
        v.listen_addr + "\": " + s.message());
  }
  if (v.endpoints.empty() && o.discovery_srv.empty()) {
    return InvalidArgumentError("--endpoints: no endpoint given");
  }
  for (const std::string& ep : v.endpoints) {
    ASSIGN_OR_RETURN(net::GatewayEndpoint e, ParseEndpoint(ep));
    o.endpoints.push_back(std::move(e));
  }
  if (o.retry_delay.count() < 0) {
    return InvalidArgumentError("--retry-delay must not be negative");
  }
  // etcd's tcpproxy replaces a zero monitor interval with 5 minutes.
  if (o.retry_delay.count() == 0) o.retry_delay = minutes(5);
  if (v.max_connections < 1) {
    return InvalidArgumentError("--max-connections must be at least 1, got " +
                                std::to_string(v.max_connections));
  }
  o.max_connections = static_cast<size_t>(v.max_connections);
  if (o.dial_timeout.count() <= 0) {
    return InvalidArgumentError("--dial-timeout must be positive");
  }
  if (o.idle_timeout.count() < 0) {
    return InvalidArgumentError(
        "--idle-timeout must not be negative (0: no idle timeout)");
  }
  if (!o.discovery_srv_name.empty() && o.discovery_srv.empty()) {
    return InvalidArgumentError(
        "--discovery-srv-name needs --discovery-srv (the domain)");
  }
  return o;
}

EndpointValidator TlsEndpointValidator(const GatewayOptions& o) {
  net::TlsClientConfig cc;
  cc.ca_file = o.trusted_ca_file;
  // etcd verifies discovered endpoints' certificates against the
  // discovery domain (TLSInfo.ServerName = the --discovery-srv domain).
  cc.server_name = o.discovery_srv;
  cc.insecure_skip_verify = o.insecure_skip_tls_verify;
  auto ctx = net::TlsContext::NewClient(cc);
  const Duration timeout = o.dial_timeout;
  return [ctx, timeout](const net::DiscoveredEndpoint& ep) -> Status {
    if (!ctx.ok()) return ctx.status().Annotate("--trusted-ca-file");
    ASSIGN_OR_RETURN(net::ScopedFd fd,
                     net::ConnectTcp(ep.srv.target, ep.srv.port, timeout));
    const int fl = fcntl(fd.get(), F_GETFL);
    fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK);
    ASSIGN_OR_RETURN(auto session,
                     net::TlsSession::NewClient(*ctx, fd.get(), ep.srv.target));
    for (;;) {
      const auto r = session->Handshake();
      if (r == net::TlsSession::Result::kOk) return Status::Ok();
      if (r != net::TlsSession::Result::kWantRead &&
          r != net::TlsSession::Result::kWantWrite) {
        return session->error();
      }
      RETURN_IF_ERROR(net::WaitFd(
          fd.get(), r == net::TlsSession::Result::kWantWrite, timeout));
    }
  };
}

StatusOr<std::vector<net::GatewayEndpoint>> ResolveGatewayEndpoints(
    const GatewayOptions& o, net::SrvResolver& resolver,
    const EndpointValidator& validate, std::vector<std::string>* notes) {
  std::vector<net::GatewayEndpoint> eps;
  if (!o.discovery_srv.empty()) {
    auto found = net::DiscoverClientEndpoints(resolver, o.discovery_srv,
                                              o.discovery_srv_name);
    if (!found.ok()) return found.status().Annotate("--discovery-srv");
    std::vector<std::string> urls, dropped;
    for (const net::DiscoveredEndpoint& d : *found) {
      urls.push_back(d.url);
      if (!o.insecure_discovery) {
        if (!d.https) {
          dropped.push_back("\"" + d.url + "\" is insecure");
          continue;
        }
        if (Status s = validate(d); !s.ok()) {
          dropped.push_back("\"" + d.url + "\" failed to dial (" + s.message() +
                            ")");
          continue;
        }
      }
      eps.push_back(net::GatewayEndpoint{d.srv.target, d.srv.port,
                                         d.srv.priority, d.srv.weight});
    }
    notes->push_back("discovered cluster from SRV " + o.discovery_srv + ": " +
                     StrJoin(urls, ","));
    if (!dropped.empty()) {
      notes->push_back(
          "dropped discovered endpoints (--insecure-discovery "
          "keeps them): " +
          StrJoin(dropped, ", "));
    }
    if (eps.empty()) {
      notes->push_back(
          "no usable endpoint discovered; using --endpoints instead");
    }
  }
  if (eps.empty()) eps = o.endpoints;
  if (eps.empty()) return InvalidArgumentError("no endpoints found");

  // A gateway that proxies to itself would loop each connection into a
  // new one until it runs out of descriptors; etcd refuses it too.
  std::set<std::string> listen_addrs;
  if (o.listen_port != 0) {
    auto la = LookupHost(o.listen_host);
    if (!la.ok()) {
      return InvalidArgumentError(
          "--listen-addr: failed to resolve listen "
          "host \"" +
          o.listen_host + "\": " + la.status().message());
    }
    listen_addrs = std::move(*la);
  }
  for (const net::GatewayEndpoint& e : eps) {
    auto addrs = LookupHost(e.host);
    if (!addrs.ok()) {
      return InvalidArgumentError("failed to resolve endpoint host \"" +
                                  e.host + "\": " + addrs.status().message());
    }
    if (e.port != o.listen_port) continue;
    for (const std::string& a : *addrs) {
      if (listen_addrs.count(a) > 0) {
        return InvalidArgumentError(
            "SRV or endpoint " + e.HostPort() + " (" + a +
            ") should not resolve to the gateway listen address " +
            net::GatewayEndpoint{o.listen_host, o.listen_port}.HostPort());
      }
    }
  }
  return eps;
}

int RunGatewayCommand(const std::vector<std::string>& args) {
  bool help = false;
  auto parsed = ParseGatewayArgs(args, &help);
  if (help) {
    std::cout << GatewayUsage();
    return 0;
  }
  // "kplane store gateway": the errors include a missing subcommand.
  auto fail = [](const Status& st) {
    return CommandFailed("kplane store gateway", st);
  };
  if (!parsed.ok()) return fail(parsed.status());
  const GatewayOptions& o = *parsed;
  SetLogTag("gateway");

  std::vector<std::string> notes;
  auto eps = ResolveGatewayEndpoints(o, *net::SrvResolver::System(),
                                     TlsEndpointValidator(o), &notes);
  for (const std::string& n : notes) LOG(INFO) << n;
  if (!eps.ok()) return fail(eps.status());

  // Descriptors: each connection holds two.
  if (auto lim = net::RaiseFileDescriptorLimit();
      lim.ok() && *lim < 2 * o.max_connections + 64) {
    LOG(WARNING) << "the open-file limit (" << *lim
                 << ") is low for --max-connections=" << o.max_connections;
  }
  auto listener = net::ListenTcp(o.listen_host, o.listen_port, 4096);
  if (!listener.ok()) {
    return fail(listener.status().Annotate(
        "--listen-addr " +
        net::GatewayEndpoint{o.listen_host, o.listen_port}.HostPort()));
  }
  auto port = net::LocalPort(listener->get());
  if (!port.ok()) return fail(port.status());

  sigset_t stop = BlockStopSignals();  // before the gateway's threads
  net::TcpGatewayOptions go;
  go.endpoints = *eps;
  go.retry_delay = o.retry_delay;
  go.max_connections = o.max_connections;
  go.dial_timeout = o.dial_timeout;
  go.idle_timeout = o.idle_timeout;
  auto gw = net::TcpGateway::Start(std::move(*listener), go);
  if (!gw.ok()) return fail(gw.status());
  std::vector<std::string> names;
  for (const auto& e : *eps) names.push_back(e.HostPort());
  // The words etcd logs here: tools (etcd's e2e suite) wait for them.
  LOG(INFO) << "ready to proxy client requests to [" << StrJoin(names, ",")
            << "] on " << net::GatewayEndpoint{o.listen_host, *port}.HostPort();
  int sig = 0;
  sigwait(&stop, &sig);
  LOG(INFO) << "received signal " << sig << ", shutting down";
  (*gw)->Stop();
  return 0;
}

}  // namespace kplane::cmd
