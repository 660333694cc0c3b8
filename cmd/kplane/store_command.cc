#include "cmd/kplane/store_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "base/command.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/strings.h"
#include "cmd/kplane/gateway_command.h"
#include "cmd/kplane/grpc_proxy_command.h"
#include "cmd/kplane/store_flags.h"
#include "net/http_server.h"
#include "net/socket.h"
#include "net/url.h"
#include "storage/grpc/grpc_front.h"
#include "storage/server/client_api.h"
#include "storage/server/peer_transport.h"
#include "storage/server/store_server.h"

namespace kplane::cmd {

using storage::ClientApi;
using storage::HttpPeerTransport;
using storage::ParseInitialCluster;
using storage::StoreConfig;
using storage::StoreServer;

namespace {

// Waits up to `timeout` for SIGINT/SIGTERM (blocked by BlockStopSignals),
// for the member to learn it was removed from the cluster, or for it to
// fail (a durable write failed). Returns whether any happened, after
// logging which.
bool StopRequested(const sigset_t& stop_signals, const StoreServer& server,
                   Duration timeout) {
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  while (true) {
    if (server.failed()) {
      LOG(ERROR) << "stopping: " << server.failure();
      return true;
    }
    if (server.removed()) {
      // etcd stops a removed member too, after ten heartbeats: a leader
      // that removed itself sends the commit of its removal to the others
      // meanwhile. The exit status is 0: the data dir would be refused at
      // the next start, so a supervisor that restarts failed processes must
      // not try.
      LOG(WARNING) << "stopping: this member was removed from the cluster";
      Clock::Real()->SleepFor(server.config().heartbeat_interval * 10);
      return true;
    }
    // A pending signal is taken even when no time is left (timeout 0: the
    // not-ready loop polls this way, and a member that never finds a
    // leader must still stop on SIGTERM).
    const Duration left = deadline - Clock::Real()->Now();
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::clamp<Duration>(left, Duration(0), milliseconds(200)))
            .count();
    timespec poll{static_cast<time_t>(ns / 1000000000), ns % 1000000000};
    const int sig = sigtimedwait(&stop_signals, nullptr, &poll);
    if (sig > 0) {
      LOG(INFO) << "received signal " << sig << ", shutting down";
      return true;
    }
    if (left <= Duration(0)) return false;
  }
}

// A bound, listening socket per URL (port 0: an ephemeral one), opened
// before the member starts so that the URLs it advertises name the ports.
struct Listener {
  net::Url url;
  net::ScopedFd fd;
  uint16_t port = 0;
};

// unix:// and unixs:// (TLS) URLs name a unix socket (store_flags.h).
bool IsUnix(const net::Url& u) {
  return u.scheme == "unix" || u.scheme == "unixs";
}
// Speaks TLS: https:// and unixs://.
bool IsTls(const net::Url& u) {
  return u.scheme == "https" || u.scheme == "unixs";
}
// How a listen URL is named in messages: its socket URL or host:port.
std::string Where(const net::Url& u) {
  return IsUnix(u) ? u.scheme + "://" + u.host : u.HostPort();
}

StatusOr<std::vector<Listener>> BindAll(const std::vector<net::Url>& urls,
                                        const char* flag) {
  std::vector<Listener> out;
  for (const net::Url& u : urls) {
    auto fd = IsUnix(u) ? net::ListenUnix(u.host, 4096)
                        : net::ListenTcp(u.host, u.port, 4096);
    if (!fd.ok()) {
      return fd.status().Annotate(std::string("--") + flag + " " + Where(u));
    }
    auto port = net::LocalPort(fd->get());
    if (!port.ok()) return port.status();
    out.push_back(Listener{u, std::move(*fd), *port});
  }
  return out;
}

// The listen URLs with the ports the listeners got: what a member
// advertises when its --advertise-client-urls / --initial-advertise-peer-urls
// are not given.
std::vector<std::string> BoundUrls(const std::vector<Listener>& ls) {
  std::vector<std::string> urls;
  for (const Listener& l : ls) {
    net::Url u = l.url;
    if (IsUnix(u)) {
      urls.push_back(Where(u));
      continue;
    }
    u.port = l.port;
    urls.push_back(u.scheme + "://" + u.HostPort());
  }
  std::sort(urls.begin(), urls.end());  // as etcd's types.NewURLs
  return urls;
}

}  // namespace

int RunStoreCommand(const std::vector<std::string>& args) {
  // etcd's own subcommands, which it recognises only as its first
  // argument (etcdmain.Main): `etcd gateway start ...`, `etcd grpc-proxy
  // start ...`.
  if (!args.empty() && args[0] == "gateway") {
    return RunGatewayCommand(
        std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args[0] == "grpc-proxy") {
    return RunGrpcProxyCommand(
        std::vector<std::string>(args.begin() + 1, args.end()));
  }
  StoreFlags flags;
  auto parsed = flags.Parse(args, ProcessEnvironment());
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  auto fail = [](const Status& st) {
    return CommandFailed("kplane store", st);
  };
  if (!parsed.ok()) return fail(parsed.status());
  StoreOptions& opts = *parsed;
  StoreConfig& cfg = opts.cfg;
  SetMinLogLevelByName(opts.log_level);
  SetLogTag(cfg.name);
  if (!opts.config_file.empty()) {
    LOG(INFO) << "loaded server configuration from " << opts.config_file
              << "; other command line flags and environment variables are "
                 "ignored";
  }
  for (const std::string& w : opts.warnings) LOG(WARNING) << w;

  // etcd's client and peer TLS (member_tls.h): built before anything
  // listens, so that a bad file fails the start.
  for (const storage::MemberTlsFiles* side :
       {&opts.client_tls, &opts.peer_tls}) {
    if (Status s = storage::EnsureSelfSignedPair(*side); !s.ok()) {
      return fail(s);
    }
  }
  auto tls = storage::NewMemberTls(opts.client_tls, opts.peer_tls);
  if (!tls.ok()) return fail(tls.status());

  if (cfg.initial_cluster_state == "existing") {
    // Learn the membership (and so our own id) from a running member.
    auto members = ParseInitialCluster(cfg.initial_cluster);
    if (!members.ok()) return fail(members.status());
    Status last = UnavailableError("no other member listed");
    for (const auto& m : *members) {
      if (m.name == cfg.name) continue;
      for (const auto& u : m.peer_urls) {
        auto rec = HttpPeerTransport::FetchMembership(u, seconds(60),
                                                      tls->peer_client);
        if (rec.ok()) {
          cfg.existing_cluster = *rec;
          break;
        }
        last = rec.status();
      }
      if (cfg.existing_cluster) break;
    }
    if (!cfg.existing_cluster) {
      return fail(last.Annotate("cannot reach the existing cluster"));
    }
  }

  // Bind every listener first: with port 0 the advertised URLs and the
  // initial cluster's own entry must name the ports picked.
  auto peer_ls = BindAll(opts.listen_peer, "listen-peer-urls");
  if (!peer_ls.ok()) return fail(peer_ls.status());
  auto client_ls = BindAll(opts.listen_client, "listen-client-urls");
  if (!client_ls.ok()) return fail(client_ls.status());
  auto metrics_ls = BindAll(opts.listen_metrics, "listen-metrics-urls");
  if (!metrics_ls.ok()) return fail(metrics_ls.status());
  if (!opts.advertise_peer_given) cfg.peer_urls = BoundUrls(*peer_ls);
  if (!opts.advertise_client_given) cfg.client_urls = BoundUrls(*client_ls);

  // Everything this process creates is its own (etcd's 0700 directories
  // and 0600 files), RocksDB's and the received snapshots' files included.
  ::umask(077);
  sigset_t stop_signals = BlockStopSignals();
  auto server = StoreServer::Open(cfg);
  if (!server.ok()) return fail(server.status());

  storage::PeerTransportOptions transport_opts;
  transport_opts.client_tls = tls->peer_client;
  HttpPeerTransport transport(server->get(), transport_opts);
  std::vector<std::unique_ptr<net::HttpServer>> peer_https;
  for (Listener& l : *peer_ls) {
    net::HttpServerOptions o;
    // https:// and unixs:// peer URLs: the peer CA's members only
    // (--peer-trusted-ca-file or --peer-client-cert-auth), as etcd's peer
    // listener.
    if (IsTls(l.url)) o.tls = tls->peer_server;
    o.listen_fd = l.fd.Release();
    o.name = "peer";
    o.worker_threads = 4;
    // Raft messages and snapshots stream (their frames are bounded:
    // kMaxPeerFrameBytes); the one body buffered whole is a lease's time
    // to live request (/raft/leasettl), a few bytes. Anything larger is
    // refused before it is read, whoever sends it.
    o.max_body_bytes = 64 << 10;
    peer_https.push_back(std::make_unique<net::HttpServer>(o));
    transport.RegisterHandlers(peer_https.back().get());
  }

  // gRPC on the same ports: connections opening with the HTTP/2 preface go
  // to the gRPC front, the others to the JSON gateway (etcd's cmux).
  storage::GrpcFrontOptions grpc_opts;
  grpc_opts.max_concurrent_streams = opts.max_concurrent_streams;
  grpc_opts.keepalive_min_time = opts.grpc_keepalive_min_time;
  grpc_opts.keepalive_interval = opts.grpc_keepalive_interval;
  grpc_opts.keepalive_timeout = opts.grpc_keepalive_timeout;
  storage::GrpcFront grpc_front(server->get(), grpc_opts);
  if (Status st = grpc_front.Start(); !st.ok()) return fail(st);
  // The gateway feels --max-concurrent-streams as etcd's does (its one
  // gRPC connection per listener).
  ClientApi api(server->get(), metrics::Registry::Default(),
                {.max_concurrent_streams = opts.max_concurrent_streams});
  std::vector<std::unique_ptr<net::HttpServer>> client_https;
  for (Listener& l : *client_ls) {
    net::HttpServerOptions o;
    o.listen_fd = l.fd.Release();
    o.name = "client";
    o.worker_threads = 8;
    // JSON (base64) is larger than the protobuf size etcd limits; let
    // bodies up to 4x through so the API answers with etcd's own errors.
    o.max_body_bytes =
        4 * (static_cast<size_t>(cfg.max_request_bytes) + (1 << 20));
    o.max_connections = opts.max_connections;
    o.body_timeout = opts.body_timeout;
    // Over https the server terminates TLS and hands connections that
    // negotiated h2 to the gRPC front decrypted (net/http_server.h).
    if (IsTls(l.url)) o.tls = tls->client_server;
    grpc_front.InstallHandoff(&o);
    client_https.push_back(std::make_unique<net::HttpServer>(o));
    api.RegisterHandlers(client_https.back().get());
  }
  std::vector<std::unique_ptr<net::HttpServer>> metrics_https;
  for (Listener& l : *metrics_ls) {
    net::HttpServerOptions o;
    o.listen_fd = l.fd.Release();
    o.name = "metrics";
    if (l.url.scheme == "https") o.tls = tls->client_server;
    o.worker_threads = 2;
    o.max_connections = 1024;
    metrics_https.push_back(std::make_unique<net::HttpServer>(o));
    api.RegisterMetricsHandlers(metrics_https.back().get());
  }

  for (size_t i = 0; i < peer_https.size(); ++i) {
    if (Status st = peer_https[i]->Start(); !st.ok()) {
      return fail(st.Annotate("listen " + Where(opts.listen_peer[i])));
    }
  }
  auto stop_peers = [&] {
    for (auto& h : peer_https) h->Stop();
    for (const net::Url& u : opts.listen_peer) {
      if (IsUnix(u)) ::unlink(u.host.c_str());
    }
  };
  if (opts.initial_corrupt_check) {
    // Before raft starts (etcd: before the server starts): a member whose
    // data disagrees with a quorum of its peers' must not serve it.
    if (Status st = (*server)->CheckInitialHashKV(&transport); !st.ok()) {
      transport.Stop();
      stop_peers();
      return fail(st);
    }
  }
  if (Status st = (*server)->Start(&transport); !st.ok()) return fail(st);
  // The exit status: an error if the member failed, 0 otherwise.
  auto finish = [&]() -> int {
    (*server)->Stop();
    transport.Stop();
    stop_peers();
    if ((*server)->failed()) return fail((*server)->failure());
    return 0;
  };
  // As etcd, serve clients only once this member has published its name
  // and client URLs through the log (so `member list` shows them).
  while (!(*server)->WaitReady(seconds(5))) {
    LOG(WARNING) << "not ready yet: waiting for a leader to publish this "
                    "member's attributes";
    if (StopRequested(stop_signals, **server, Duration(0))) return finish();
  }
  // etcd's start-up lines, which tools that start etcd wait for (its e2e
  // suite: "enabled capabilities for version", "published").
  LOG(INFO) << "enabled capabilities for version 3.4";
  LOG(INFO) << "published {Name:" << cfg.name << " ClientURLs:["
            << StrJoin(cfg.client_urls, " ") << "]} to cluster";
  std::vector<net::HttpServer*> started;
  auto stop_clients = [&] {
    for (net::HttpServer* h : started) h->Stop();
    grpc_front.Stop();
    // As Go's unix listeners (etcd's), remove the socket files on the way
    // out.
    for (const net::Url& u : opts.listen_client) {
      if (IsUnix(u)) ::unlink(u.host.c_str());
    }
  };
  for (size_t i = 0; i < client_https.size(); ++i) {
    if (Status st = client_https[i]->Start(); !st.ok()) {
      stop_clients();
      finish();
      const net::Url& u = opts.listen_client[i];
      return fail(st.Annotate("listen " + Where(u)));
    }
    started.push_back(client_https[i].get());
  }
  for (size_t i = 0; i < metrics_https.size(); ++i) {
    if (Status st = metrics_https[i]->Start(); !st.ok()) {
      stop_clients();
      finish();
      return fail(st.Annotate("listen " + opts.listen_metrics[i].HostPort()));
    }
    started.push_back(metrics_https[i].get());
  }
  LOG(INFO) << "ready to serve client requests: kplane store " << cfg.name
            << " serving clients on " << StrJoin(BoundUrls(*client_ls), ",")
            << ", peers on " << StrJoin(BoundUrls(*peer_ls), ",")
            << ", data in " << cfg.data_dir;

  while (!StopRequested(stop_signals, **server, hours(1))) {
  }
  stop_clients();
  return finish();
}

}  // namespace kplane::cmd
