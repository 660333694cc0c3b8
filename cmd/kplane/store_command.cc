#include "cmd/kplane/store_command.h"

#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <iostream>

#include "base/command.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/strings.h"
#include "net/http_server.h"
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

StatusOr<net::Url> ListenUrl(const std::vector<std::string>& urls,
                             const char* flag) {
  if (urls.size() != 1) {
    return InvalidArgumentError(std::string("--") + flag +
                                " takes exactly one URL in kplane");
  }
  auto u = net::ParseUrl(urls.front());
  if (!u.ok()) return u.status().Annotate(std::string("--") + flag);
  return u;
}

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
    const Duration left = deadline - Clock::Real()->Now();
    if (left <= Duration(0)) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::min<Duration>(left, milliseconds(200)))
                        .count();
    timespec poll{static_cast<time_t>(ns / 1000000000), ns % 1000000000};
    const int sig = sigtimedwait(&stop_signals, nullptr, &poll);
    if (sig > 0) {
      LOG(INFO) << "received signal " << sig << ", shutting down";
      return true;
    }
  }
}

}  // namespace

int RunStoreCommand(const std::vector<std::string>& args) {
  FlagSet flags("kplane store",
                "Runs one member of kplane's replicated store (our etcd). The "
                "flags are etcd 3.4's.");
  StoreConfig cfg;
  std::string data_dir;
  std::vector<std::string> listen_client = {"http://127.0.0.1:2379"};
  std::vector<std::string> advertise_client;
  std::vector<std::string> listen_peer = {"http://127.0.0.1:2380"};
  std::vector<std::string> advertise_peer;
  std::string auto_mode;
  std::string auto_retention = "0";
  std::string log_level = "info";
  int64_t quota = cfg.quota_backend_bytes;
  int64_t max_request = cfg.max_request_bytes;
  int64_t snapshot_count = static_cast<int64_t>(cfg.snapshot_count);
  int64_t catchup_entries = static_cast<int64_t>(cfg.snapshot_catch_up_entries);
  flags.String("name", &cfg.name, "Human-readable name for this member.");
  flags.String("data-dir", &data_dir,
               "Path to the data directory (default <name>.etcd).");
  flags.StringList("listen-client-urls", &listen_client,
                   "URL to listen on for client traffic.");
  flags.StringList("advertise-client-urls", &advertise_client,
                   "Client URL to advertise to the rest of the cluster "
                   "(default: the listen URL).");
  flags.StringList("listen-peer-urls", &listen_peer,
                   "URL to listen on for peer traffic.");
  flags.StringList("initial-advertise-peer-urls", &advertise_peer,
                   "This member's peer URL to advertise to the cluster "
                   "(default: the listen URL).");
  flags.String("initial-cluster", &cfg.initial_cluster,
               "Initial cluster configuration for bootstrapping "
               "(name=peerURL,...; default <name>=<advertised peer URL>).");
  flags.String("initial-cluster-state", &cfg.initial_cluster_state,
               "\"new\" to bootstrap a cluster, \"existing\" to join one "
               "(after `member add`).");
  flags.String("initial-cluster-token", &cfg.initial_cluster_token,
               "Initial cluster token, mixed into member ids.");
  flags.Duration("heartbeat-interval", &cfg.heartbeat_interval,
                 "Time between leader heartbeats (bare number: ms).",
                 milliseconds(1));
  flags.Duration("election-timeout", &cfg.election_timeout,
                 "Time without a leader before an election (bare number: ms).",
                 milliseconds(1));
  flags.Bool("pre-vote", &cfg.pre_vote,
             "Run raft's pre-vote round before an election (etcd 3.4 "
             "default: false).");
  flags.Int64("snapshot-count", &snapshot_count,
              "Applied entries between snapshots (then the log is "
              "truncated).");
  flags.Int64("experimental-snapshot-catchup-entries", &catchup_entries,
              "Entries kept behind a snapshot for slow followers (etcd "
              "3.5's flag; fault tests lower it to force snapshot "
              "transfers).");
  flags.Int64("quota-backend-bytes", &quota,
              "Database size that raises the NOSPACE alarm.");
  flags.Int64("max-request-bytes", &max_request,
              "Largest client request accepted.");
  flags.String("auto-compaction-mode", &auto_mode,
               "\"periodic\" (keep a time window) or \"revision\" (keep the "
               "last N revisions); empty: off.");
  flags.String("auto-compaction-retention", &auto_retention,
               "periodic: a duration (\"1h\", \"30m\"; a bare number is "
               "hours); revision: a number of revisions.");
  flags.Duration("corrupt-check-time", &cfg.corrupt_check_interval,
                 "How often the leader compares members' hashes (0: off).");
  bool initial_corrupt_check = false;
  flags.Bool("experimental-initial-corrupt-check", &initial_corrupt_check,
             "Before serving, compare this member's hash with its peers' "
             "and refuse to start if a quorum disagrees with it (etcd "
             "3.4's flag; off by default, as there).");
  int64_t max_connections =
      static_cast<int64_t>(net::HttpServerOptions{}.max_connections);
  flags.Int64("max-connections", &max_connections,
              "Client connections open at once; more are answered 503 and "
              "closed (0: no cap).");
  Duration body_timeout = net::HttpServerOptions{}.body_timeout;
  flags.Duration("request-body-timeout", &body_timeout,
                 "A client request's body must arrive within this time of "
                 "its head, or 408 (0: none; watch and lease keepalive "
                 "streams have none).");
  std::string auth_token = "simple";
  flags.String("auth-token", &auth_token,
               "Auth token type: \"simple\" (etcd's simple tokens); "
               "\"jwt\" is not supported.");
  int64_t auth_token_ttl = 300;
  flags.Int64("auth-token-ttl", &auth_token_ttl,
              "Seconds a simple auth token stays valid after its last use.");
  flags.String("log-level", &log_level, "debug, info, warning or error.");
  if (auto code = ParseCommandFlags(flags, args, "kplane store")) return *code;
  auto fail = [](const Status& st) {
    return CommandFailed("kplane store", st);
  };
  SetMinLogLevelByName(log_level);
  SetLogTag(cfg.name);
  if (max_connections < 0) {
    return fail(InvalidArgumentError("--max-connections must not be negative"));
  }
  if (body_timeout < Duration::zero()) {
    return fail(
        InvalidArgumentError("--request-body-timeout must not be negative"));
  }

  // etcd's form is "simple" or "jwt,pub-key=...,priv-key=...".
  if (auth_token != "simple") {
    return fail(InvalidArgumentError(
        "--auth-token " + auth_token +
        ": only \"simple\" tokens are supported (kplane has no JWT tokens)"));
  }
  if (auth_token_ttl <= 0) {
    return fail(InvalidArgumentError("--auth-token-ttl must be positive"));
  }
  cfg.auth_token_ttl = seconds(auth_token_ttl);

  cfg.data_dir = data_dir.empty() ? cfg.name + ".etcd" : data_dir;
  cfg.quota_backend_bytes = quota;
  cfg.max_request_bytes = max_request;
  if (snapshot_count <= 0) {
    return fail(InvalidArgumentError("--snapshot-count must be positive"));
  }
  cfg.snapshot_count = static_cast<uint64_t>(snapshot_count);
  if (catchup_entries < 0) {
    return fail(InvalidArgumentError(
        "--experimental-snapshot-catchup-entries must not be negative"));
  }
  cfg.snapshot_catch_up_entries = static_cast<uint64_t>(catchup_entries);
  if (!auto_mode.empty()) {
    if (auto_mode == "revision") {
      auto n = ParseInt64(auto_retention);
      if (!n || *n <= 0) {
        return fail(InvalidArgumentError(
            "--auto-compaction-retention must be a positive number of "
            "revisions in revision mode"));
      }
      cfg.auto_compaction.mode = mvcc::AutoCompactionMode::kRevision;
      cfg.auto_compaction.retention_revisions = *n;
    } else if (auto_mode == "periodic") {
      Duration d;
      if (auto n = ParseInt64(auto_retention)) {
        d = hours(*n);
      } else if (auto g = ParseGoDuration(auto_retention)) {
        d = nanoseconds(*g);
      } else {
        return fail(InvalidArgumentError(
            "--auto-compaction-retention: not a duration: " + auto_retention));
      }
      if (d <= Duration(0)) {
        return fail(InvalidArgumentError(
            "--auto-compaction-retention must be positive"));
      }
      cfg.auto_compaction.mode = mvcc::AutoCompactionMode::kPeriodic;
      cfg.auto_compaction.retention_period = d;
    } else {
      return fail(InvalidArgumentError(
          "--auto-compaction-mode must be \"periodic\" or \"revision\""));
    }
  }

  auto client_url = ListenUrl(listen_client, "listen-client-urls");
  if (!client_url.ok()) return fail(client_url.status());
  auto peer_url = ListenUrl(listen_peer, "listen-peer-urls");
  if (!peer_url.ok()) return fail(peer_url.status());
  cfg.client_urls = advertise_client.empty() ? listen_client : advertise_client;
  cfg.peer_urls = advertise_peer.empty() ? listen_peer : advertise_peer;

  if (cfg.initial_cluster_state == "existing") {
    // Learn the membership (and so our own id) from a running member.
    auto members = ParseInitialCluster(cfg.initial_cluster);
    if (!members.ok()) return fail(members.status());
    Status last = UnavailableError("no other member listed");
    for (const auto& m : *members) {
      if (m.name == cfg.name) continue;
      for (const auto& u : m.peer_urls) {
        auto rec = HttpPeerTransport::FetchMembership(u);
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

  // Everything this process creates is its own (etcd's 0700 directories
  // and 0600 files), RocksDB's and the received snapshots' files included.
  ::umask(077);
  sigset_t stop_signals = BlockStopSignals();
  auto server = StoreServer::Open(cfg);
  if (!server.ok()) return fail(server.status());

  net::HttpServerOptions peer_opts;
  peer_opts.host = peer_url->host;
  peer_opts.port = peer_url->port;
  peer_opts.name = "peer";
  peer_opts.worker_threads = 4;
  peer_opts.max_body_bytes = 64 << 20;
  net::HttpServer peer_http(peer_opts);
  HttpPeerTransport transport(server->get(),
                              {.file_system = (*server)->config().file_system});
  transport.RegisterHandlers(&peer_http);

  net::HttpServerOptions client_opts;
  client_opts.host = client_url->host;
  client_opts.port = client_url->port;
  client_opts.name = "client";
  client_opts.worker_threads = 8;
  // JSON (base64) is larger than the protobuf size etcd limits; let bodies
  // up to 4x through so the API answers with etcd's own errors.
  client_opts.max_body_bytes =
      4 * (static_cast<size_t>(max_request) + (1 << 20));
  client_opts.max_connections = static_cast<size_t>(max_connections);
  client_opts.body_timeout = body_timeout;
  // gRPC on the same port: connections opening with the HTTP/2 preface go
  // to the gRPC front, the others to the JSON gateway (etcd's cmux).
  storage::GrpcFront grpc_front(server->get());
  if (Status st = grpc_front.Start(); !st.ok()) return fail(st);
  grpc_front.InstallHandoff(&client_opts);
  net::HttpServer client_http(client_opts);
  ClientApi api(server->get(), metrics::Registry::Default());
  api.RegisterHandlers(&client_http);

  if (Status st = peer_http.Start(); !st.ok()) {
    return fail(st.Annotate("listen " + listen_peer.front()));
  }
  if (initial_corrupt_check) {
    // Before raft starts (etcd: before the server starts): a member whose
    // data disagrees with a quorum of its peers' must not serve it.
    if (Status st = (*server)->CheckInitialHashKV(&transport); !st.ok()) {
      transport.Stop();
      peer_http.Stop();
      return fail(st);
    }
  }
  if (Status st = (*server)->Start(&transport); !st.ok()) return fail(st);
  // The exit status: an error if the member failed, 0 otherwise.
  auto finish = [&]() -> int {
    (*server)->Stop();
    transport.Stop();
    peer_http.Stop();
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
  if (Status st = client_http.Start(); !st.ok()) {
    return fail(st.Annotate("listen " + listen_client.front()));
  }
  LOG(INFO) << "kplane store " << cfg.name << " serving clients on "
            << client_url->host << ":" << client_http.port() << ", peers on "
            << peer_url->host << ":" << peer_http.port() << ", data in "
            << cfg.data_dir;

  while (!StopRequested(stop_signals, **server, hours(1))) {
  }
  client_http.Stop();
  grpc_front.Stop();
  return finish();
}

}  // namespace kplane::cmd
