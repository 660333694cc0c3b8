#include "cmd/kplane/apiserver_command.h"

#include <signal.h>

#include <iostream>
#include <limits>
#include <memory>

#include "apiserver/api_server.h"
#include "apiserver/encryption/transformer.h"
#include "apiserver/storage/compactor.h"
#include "base/command.h"
#include "base/file_system.h"
#include "base/flags.h"
#include "base/logging.h"
#include "cmd/kplane/serving_tls_flags.h"
#include "storage/client/grpc_kv.h"
#include "storage/client/remote_kv.h"
#include "storage/server/store_server.h"

namespace kplane::cmd {

using apiserver::ApiServer;
using apiserver::ApiServerOptions;

namespace {

// Bounds of flags kube-apiserver does not have, or does not bound
// (docs/api.md, the flag table).
constexpr int64_t kMaxMinRequestTimeout = 1'000'000'000;  // seconds
constexpr int64_t kMaxRequestBytes = int64_t{1} << 30;
constexpr int64_t kMaxWatchCacheSize = 1'000'000;
constexpr int kMaxWorkerThreads = 4096;

}  // namespace

StatusOr<std::shared_ptr<const net::TlsContext>> ServingTlsContext(
    const std::string& cert_file, const std::string& key_file,
    const std::string& client_ca_file, bool insecure_http) {
  if (cert_file.empty() && key_file.empty() && client_ca_file.empty() &&
      !insecure_http) {
    return InvalidArgumentError(
        "no serving certificate: pass --tls-cert-file and "
        "--tls-private-key-file, or --insecure-http to serve plain HTTP "
        "(development only)");
  }
  return ServingTlsFromFlags(cert_file, key_file, client_ca_file,
                             net::ClientAuth::kRequest);
}

// The client context for the kubelets (pods/log) from kube's
// --kubelet-client-certificate, --kubelet-client-key and
// --kubelet-certificate-authority: none of them, plain HTTP (kplane's
// kubeletsim may serve HTTP); without the CA the kubelets' serving
// certificates are not checked, as kube-apiserver does not check them.
StatusOr<std::shared_ptr<const net::TlsContext>> KubeletClientContext(
    const std::string& cert_file, const std::string& key_file,
    const std::string& ca_file) {
  if (cert_file.empty() && key_file.empty() && ca_file.empty()) {
    return std::shared_ptr<const net::TlsContext>();
  }
  if (cert_file.empty() != key_file.empty()) {
    return InvalidArgumentError(
        "--kubelet-client-certificate and --kubelet-client-key go together");
  }
  net::TlsClientConfig c{.ca_file = ca_file,
                         .cert_file = cert_file,
                         .key_file = key_file,
                         .insecure_skip_verify = ca_file.empty(),
                         .alpn = {"http/1.1"}};
  auto ctx = net::TlsContext::NewClient(c);
  if (!ctx.ok()) return ctx.status().Annotate("--kubelet-client-*");
  return std::shared_ptr<const net::TlsContext>(*ctx);
}

int RunApiServerCommand(const std::vector<std::string>& args) {
  FlagSet flags("kplane apiserver",
                "Runs kplane's Kubernetes API server over HTTPS (or, with "
                "--insecure-http, plain HTTP).");
  std::string backend = "embedded";
  std::vector<std::string> etcd_servers;
  std::string data_dir = "kplane-apiserver.data";
  std::string bind_address = "127.0.0.1";
  std::string advertise_address;
  int port = 6443;
  Duration event_ttl = hours(1);
  int max_inflight = 400;
  int max_mutating = 200;
  int max_watches = 10000;
  int64_t max_watch_buffer = 256 * 1024;
  int64_t max_watch_pending = 10000;
  int64_t max_watch_pending_bytes = 16 * 1024 * 1024;
  int64_t max_watch_buffer_total = 256 * 1024 * 1024;
  int64_t min_request_timeout = 1800;
  int64_t max_body = 3 * 1024 * 1024;
  int64_t watch_cache_size = 10000;
  Duration watch_cache_history = apiserver::CacherOptions{}.window_max_age;
  int worker_threads = 64;
  std::string etcd_prefix = "/registry";
  Duration compaction_interval = minutes(5);
  std::string log_level = "info";
  std::string encryption_config;
  std::string kubelet_cert_file, kubelet_key_file, kubelet_ca_file;
  std::vector<std::string> kubelet_address_types =
      ApiServerOptions().kubelet_preferred_address_types;
  int max_exec_streams = ApiServerOptions().max_exec_streams;
  int max_log_streams = ApiServerOptions().max_log_streams;
  int max_streams_per_user = ApiServerOptions().max_kubelet_streams_per_user;
  Duration exec_idle_timeout = ApiServerOptions().exec_idle_timeout;
  ServingTlsFlags serving(flags, {.served = "the API",
                                  .origin = "kube-apiserver's",
                                  .client_auth = net::ClientAuth::kRequest});
  bool insecure_http = false;
  flags.Bool("insecure-http", &insecure_http,
             "Serve plain HTTP without TLS when no --tls-cert-file is given "
             "(development only: anyone who can reach the port can read "
             "and write everything).");
  flags.String("storage-backend", &backend,
               "\"embedded\" (a single-member store in this process) or "
               "\"remote\" (etcd's v3 API at --etcd-servers).");
  std::string etcd_protocol = "json";
  flags.String("etcd-protocol", &etcd_protocol,
               "API the store client speaks to --etcd-servers: \"json\" "
               "(etcd's v3 JSON gateway) or \"grpc\" (etcd's gRPC API, "
               "as kube-apiserver always does). kplane-only flag.");
  flags.StringList("etcd-servers", &etcd_servers,
                   "Store endpoints for --storage-backend=remote "
                   "(http://host:port or https://host:port, "
                   "comma-separated).");
  flags.String("data-dir", &data_dir, "Data directory of the embedded store.");
  flags.String("etcd-prefix", &etcd_prefix,
               "Prefix of every key the apiserver writes.");
  // kube-apiserver's TLS flags for its etcd client (https:// servers).
  storage::StoreClientTlsFiles etcd_tls;
  flags.String("etcd-cafile", &etcd_tls.ca_file,
               "SSL Certificate Authority file used to secure etcd "
               "communication (verifies https:// --etcd-servers).");
  flags.String("etcd-certfile", &etcd_tls.cert_file,
               "SSL certification file used to secure etcd communication "
               "(the client certificate, with --etcd-keyfile).");
  flags.String("etcd-keyfile", &etcd_tls.key_file,
               "SSL key file used to secure etcd communication.");
  flags.Duration("etcd-compaction-interval", &compaction_interval,
                 "Compact the store's history this often, keeping at least "
                 "one interval of it (0: never). Remote backend: the "
                 "apiserver compacts etcd itself, as kube-apiserver does "
                 "(the compact_rev_key key coordinates several apiservers); "
                 "embedded: the store's periodic auto-compaction.");
  flags.String("bind-address", &bind_address, "Address to listen on.");
  flags.String("advertise-address", &advertise_address,
               "host:port published in /api (default: bind address and "
               "port).");
  flags.Int("secure-port", &port, "Port to serve HTTPS on.");
  flags.Int("port", &port, "Same as --secure-port.");
  flags.Duration("event-ttl", &event_ttl, "How long events are kept.");
  flags.Int("max-requests-inflight", &max_inflight,
            "Read-only requests served at once; more get 429 (0: no "
            "limit).");
  flags.Int("max-mutating-requests-inflight", &max_mutating,
            "Mutating requests served at once; more get 429 (0: no "
            "limit).");
  flags.Int("max-watches", &max_watches,
            "Watches open at once, at least 1; more get 429.");
  flags.Int64("max-watch-buffer-bytes", &max_watch_buffer,
              "Unsent bytes one watch may hold in its connection buffer "
              "(plus one event); later events wait in the watch cache.");
  flags.Int64("max-watch-pending-events", &max_watch_pending,
              "Events a watch that does not read may fall behind before it "
              "is closed (0: no bound).");
  flags.Int64("max-watch-pending-bytes", &max_watch_pending_bytes,
              "Bytes of queued events (their objects' stored size) a watch "
              "that does not read may fall behind before it is closed (0: "
              "no bound).");
  flags.Int64("max-watch-buffer-total-bytes", &max_watch_buffer_total,
              "Unsent bytes of all watches together; past it the watches "
              "holding the most are closed (0: no ceiling).");
  flags.Int64("min-request-timeout", &min_request_timeout,
              "Seconds: a watch without timeoutSeconds ends after a random "
              "time between this and twice this (0: never; at most "
              "1000000000).");
  flags.Int64("max-request-bytes", &max_body,
              "Largest request body accepted (413 beyond); 1 .. 1 GiB.");
  flags.Int64("default-watch-cache-size", &watch_cache_size,
              "Events each watch cache keeps at most for resuming watches "
              "(1..1000000).");
  flags.Duration("watch-cache-history-window", &watch_cache_history,
                 "Each watch cache lets go of events older than this, "
                 "keeping at least 100 (0: keep --default-watch-cache-size "
                 "events).");
  bool watch_cache_json = apiserver::CacherOptions{}.keep_json;
  flags.Bool("watch-cache-json", &watch_cache_json,
             "Each watch cache keeps every current object's JSON, so JSON "
             "LISTs and watch events copy it instead of encoding again "
             "(faster LISTs for ~1 KiB more memory per pod; false: encode "
             "on every read).");
  int64_t watch_cache_json_max_bytes = int64_t{512} << 20;
  flags.Int64("watch-cache-json-max-bytes", &watch_cache_json_max_bytes,
              "Bound on the bytes of JSON all watch caches keep together "
              "(--watch-cache-json); an object version whose JSON would pass "
              "it keeps none and is encoded on each read.");
  int watch_send_threads = apiserver::CacherOptions{}.send_threads;
  flags.Int("watch-send-threads", &watch_send_threads,
            "Threads that write one change to its watchers in each watch "
            "cache, when 64 or more take it at once (0: one per CPU, at "
            "most 4; 1: the cache's dispatch thread alone).");
  flags.Int("worker-threads", &worker_threads,
            "Threads running request handlers (they block on storage; "
            "1..4096).");
  int64_t max_connections =
      static_cast<int64_t>(ApiServerOptions{}.max_connections);
  flags.Int64("max-connections", &max_connections,
              "Connections open at once; more are answered 503 and closed "
              "(0: no cap).");
  Duration body_timeout = ApiServerOptions{}.request_body_timeout;
  flags.Duration("request-body-timeout", &body_timeout,
                 "A request's body must arrive within this time of its "
                 "head, or 408 (0: none).");
  Duration request_timeout = ApiServerOptions{}.request_timeout;
  flags.Duration("request-timeout", &request_timeout,
                 "A streamed LIST response must be sent within this time, "
                 "or its connection closes (kube-apiserver's request "
                 "timeout; 0: none).");
  flags.String("encryption-provider-config", &encryption_config,
               "The EncryptionConfiguration file: which resources are "
               "encrypted at rest, with which providers and keys "
               "(docs/security.md). Empty: values are stored plain.");
  apiserver::ApiServerAuthOptions auth;
  auth.enabled = true;
  flags.StringListLastWins(
      "authorization-mode", &auth.authorization_modes,
      "Ordered list of authorizers for requests: Node, RBAC, AlwaysAllow, "
      "AlwaysDeny (system:masters is always allowed). AlwaysAllow lets every "
      "authenticated or anonymous request through, as before issue 18.");
  flags.Bool("anonymous-auth", &auth.anonymous,
             "Serve requests without credentials as system:anonymous (group "
             "system:unauthenticated); RBAC lets them reach only /healthz, "
             "/livez, /readyz and /version. false: answer them 401.");
  flags.String("token-auth-file", &auth.token_auth_file,
               "A CSV file of static bearer tokens: token,user,uid,"
               "\"group1,group2\" (docs/security.md).");
  std::string sa_signing_key_file;
  std::vector<std::string> sa_key_files;
  std::vector<std::string> sa_issuers;
  flags.String("service-account-signing-key-file", &sa_signing_key_file,
               "PEM file of the RSA private key that signs ServiceAccount "
               "tokens (serviceaccounts/<name>/token). Empty: no tokens are "
               "issued.");
  flags.StringList("service-account-key-file", &sa_key_files,
                   "PEM files of keys (public or private RSA keys, "
                   "certificates) that verify ServiceAccount tokens, besides "
                   "the signing key's; repeatable (e.g. the previous signing "
                   "key while rotating).");
  flags.StringList("service-account-issuer", &sa_issuers,
                   "The issuer (\"iss\") of ServiceAccount tokens; "
                   "repeatable: the first is written into new tokens, all are "
                   "accepted. Default: "
                   "https://kubernetes.default.svc.cluster.local.");
  std::string service_cluster_ip_range =
      ApiServerOptions{}.service_cluster_ip_range;
  std::string service_node_port_range =
      ApiServerOptions{}.service_node_port_range;
  flags.String("service-cluster-ip-range", &service_cluster_ip_range,
               "IPv4 CIDR (a /12 .. /30) Services' ClusterIPs come from; the "
               "first address is the kubernetes Service's. Allocations are "
               "kept in the store (/registry/ranges/serviceips): keep the "
               "range once chosen.");
  flags.String("service-node-port-range", &service_node_port_range,
               "Ports NodePort Services' nodePorts come from (kept in the "
               "store at /registry/ranges/servicenodeports).");
  flags.String("kubelet-client-certificate", &kubelet_cert_file,
               "Client certificate shown to the kubelets (pods/log, "
               "pods/exec).");
  flags.String("kubelet-client-key", &kubelet_key_file,
               "Key of --kubelet-client-certificate.");
  flags.String("kubelet-certificate-authority", &kubelet_ca_file,
               "CA file the kubelets' serving certificates are checked "
               "against; unset: not checked. Without any --kubelet-* TLS "
               "flag the kubelets are reached over plain HTTP.");
  flags.StringListLastWins(
      "kubelet-preferred-address-types", &kubelet_address_types,
      "Node address types tried in order to reach a kubelet (kube's default "
      "starts with Hostname; simulated nodes are reached at their "
      "ExternalIP).");
  flags.Int("max-exec-streams", &max_exec_streams,
            "pods/exec sessions open at once; more get 429.");
  flags.Int("max-log-streams", &max_log_streams,
            "pods/log streams open at once; more get 429.");
  flags.Int("max-streams-per-user", &max_streams_per_user,
            "pods/exec sessions, and pods/log streams, one user may have "
            "open at once; more get 429 (one user cannot take every slot).");
  flags.Duration("exec-idle-timeout", &exec_idle_timeout,
                 "A pods/exec session with no byte either way for this long "
                 "is closed (more than 0; kube's kubelet "
                 "--streaming-connection-idle-timeout is 4h).");
  flags.String("log-level", &log_level, "debug, info, warning or error.");
  if (auto code = ParseCommandFlags(flags, args, "kplane apiserver"))
    return *code;
  auto fail = [](const Status& st) {
    return CommandFailed("kplane apiserver", st);
  };
  SetMinLogLevelByName(log_level);
  if (port < 0 || port > 65535) {
    return fail(InvalidArgumentError("--port must be in 0..65535"));
  }
  if (watch_cache_history < Duration(0)) {
    return fail(InvalidArgumentError(
        "--watch-cache-history-window must not be negative (0: no age "
        "bound)"));
  }
  if (compaction_interval < Duration(0)) {
    return fail(InvalidArgumentError(
        "--etcd-compaction-interval must not be negative (0: never compact)"));
  }
  if (max_connections < 0) {
    return fail(InvalidArgumentError("--max-connections must not be negative"));
  }
  if (body_timeout < Duration::zero()) {
    return fail(
        InvalidArgumentError("--request-body-timeout must not be negative"));
  }
  if (max_exec_streams < 1 || max_log_streams < 1 || max_streams_per_user < 1) {
    return fail(InvalidArgumentError(
        "--max-exec-streams, --max-log-streams and --max-streams-per-user "
        "must be at least 1"));
  }
  if (watch_cache_json_max_bytes < 1) {
    return fail(InvalidArgumentError(
        "--watch-cache-json-max-bytes must be at least 1 (--watch-cache-json="
        "false keeps no JSON)"));
  }
  if (watch_send_threads < 0 || watch_send_threads > 64) {
    return fail(InvalidArgumentError(
        "--watch-send-threads must be in 0..64 (0: one per CPU, at most 4)"));
  }
  if (request_timeout < Duration::zero()) {
    return fail(InvalidArgumentError("--request-timeout must not be negative"));
  }
  if (max_watch_buffer < 0 || max_watch_pending < 0 ||
      max_watch_pending_bytes < 0 || max_watch_buffer_total < 0) {
    return fail(InvalidArgumentError(
        "--max-watch-buffer-bytes, --max-watch-pending-events, "
        "--max-watch-pending-bytes and --max-watch-buffer-total-bytes must "
        "not be negative"));
  }
  // kube-apiserver's checks and texts (ServerRunOptions.Validate); 0
  // in-flight requests is no limit there (without priority and fairness,
  // which kplane does not have) and here.
  if (max_inflight < 0) {
    return fail(InvalidArgumentError(
        "--max-requests-inflight can not be negative value"));
  }
  if (max_mutating < 0) {
    return fail(InvalidArgumentError(
        "--max-mutating-requests-inflight can not be negative value"));
  }
  if (min_request_timeout < 0) {
    return fail(InvalidArgumentError(
        "--min-request-timeout can not be negative value"));
  }
  // Twice it, in nanoseconds, plus the clock's time must fit a deadline.
  if (min_request_timeout > kMaxMinRequestTimeout) {
    return fail(InvalidArgumentError(
        "--min-request-timeout must be at most 1000000000 (seconds)"));
  }
  // kplane's own bounds: past them the server answers everything 413 or
  // 429, allocates without end, or overflows.
  if (max_body < 1 || max_body > kMaxRequestBytes) {
    return fail(InvalidArgumentError(
        "--max-request-bytes must be in 1..1073741824 (1 GiB)"));
  }
  if (max_watches < 1) {
    return fail(InvalidArgumentError(
        "--max-watches must be at least 1 (0 would refuse every watch)"));
  }
  if (watch_cache_size < 1 || watch_cache_size > kMaxWatchCacheSize) {
    return fail(InvalidArgumentError(
        "--default-watch-cache-size must be in 1..1000000 (each watch cache "
        "allocates its window up front; kplane cannot disable the cache as "
        "kube's 0 does)"));
  }
  if (worker_threads < 1 || worker_threads > kMaxWorkerThreads) {
    return fail(InvalidArgumentError("--worker-threads must be in 1..4096"));
  }
  if (exec_idle_timeout <= Duration::zero()) {
    return fail(InvalidArgumentError(
        "--exec-idle-timeout must be positive (0 would close every pods/exec "
        "session at once)"));
  }

  auto tls = ServingTlsContext(serving.cert_file(), serving.key_file(),
                               serving.client_ca_file(), insecure_http);
  if (!tls.ok()) return fail(tls.status());
  if (*tls == nullptr) {
    std::cerr << "kplane apiserver: WARNING: --insecure-http: serving plain "
                 "HTTP without TLS; anyone who can reach the port can read "
                 "and write every object.\n";
  }

  auto kubelet_tls = KubeletClientContext(kubelet_cert_file, kubelet_key_file,
                                          kubelet_ca_file);
  if (!kubelet_tls.ok()) return fail(kubelet_tls.status());

  std::shared_ptr<const apiserver::encryption::TransformerSet> encryption;
  if (!encryption_config.empty()) {
    auto config =
        apiserver::encryption::LoadEncryptionConfiguration(encryption_config);
    if (!config.ok()) return fail(config.status());
    encryption =
        std::make_shared<const apiserver::encryption::TransformerSet>(*config);
  }

  std::string sa_signing_key;
  std::vector<std::string> sa_keys;
  {
    FileSystem* fs = FileSystem::Default();
    if (!sa_signing_key_file.empty()) {
      StatusOr<std::string> pem = ReadFile(fs, sa_signing_key_file);
      if (!pem.ok()) {
        return fail(
            pem.status().Annotate("--service-account-signing-key-file"));
      }
      sa_signing_key = std::move(*pem);
    }
    for (const std::string& path : sa_key_files) {
      StatusOr<std::string> pem = ReadFile(fs, path);
      if (!pem.ok()) {
        return fail(pem.status().Annotate("--service-account-key-file"));
      }
      sa_keys.push_back(std::move(*pem));
    }
  }

  sigset_t stop_signals = BlockStopSignals();
  std::unique_ptr<storage::StoreServer> embedded;
  std::unique_ptr<storage::KV> remote;
  std::unique_ptr<apiserver::Compactor> compactor;  // remote backend only
  storage::KV* kv = nullptr;
  if (backend == "embedded") {
    storage::StoreConfig cfg;
    cfg.name = "apiserver";
    cfg.data_dir = data_dir;
    cfg.peer_urls = {"http://127.0.0.1:2380"};
    cfg.corrupt_check_interval = Duration(0);
    if (compaction_interval > Duration(0)) {
      cfg.auto_compaction.mode = mvcc::AutoCompactionMode::kPeriodic;
      cfg.auto_compaction.retention_period = compaction_interval;
    }
    auto server = storage::StoreServer::Open(cfg);
    if (!server.ok()) return fail(server.status());
    embedded = std::move(*server);
    if (Status st = embedded->Start(nullptr); !st.ok()) return fail(st);
    if (!embedded->WaitForLeader(seconds(30))) {
      return fail(UnavailableError("the embedded store elected no leader"));
    }
    kv = embedded.get();
  } else if (backend == "remote") {
    if (etcd_servers.empty()) {
      return fail(InvalidArgumentError(
          "--storage-backend=remote needs --etcd-servers"));
    }
    auto protocol = storage::ParseStoreProtocol(etcd_protocol);
    if (!protocol.ok()) {
      return fail(protocol.status().Annotate("--etcd-protocol"));
    }
    storage::RemoteKVOptions ro;
    ro.endpoints = etcd_servers;
    if (!etcd_tls.empty()) {
      auto tls = storage::NewStoreClientTls(etcd_tls);
      if (!tls.ok()) {
        return fail(tls.status().Annotate("--etcd-cafile/certfile/keyfile"));
      }
      ro.tls = *tls;
      ro.tls_files = etcd_tls;
    }
    auto client = storage::NewStoreClient(ro, *protocol);
    if (!client.ok()) return fail(client.status());
    remote = std::move(*client);
    kv = remote.get();
    // etcd keeps every revision until a client compacts it; kube-apiserver
    // is that client, and so are we.
    compactor = std::make_unique<apiserver::Compactor>(
        kv, apiserver::CompactorOptions{.interval = compaction_interval});
  } else {
    return fail(InvalidArgumentError(
        "--storage-backend must be \"embedded\" or \"remote\""));
  }

  ApiServerOptions o;
  o.kv = kv;
  o.bind_address = bind_address;
  o.port = static_cast<uint16_t>(port);
  o.advertise_address = advertise_address;
  o.storage_prefix = etcd_prefix;
  o.encryption = encryption;
  o.tls = *tls;
  o.event_ttl = event_ttl;
  // 0: no limit, as kube-apiserver's flags (ApiServerOptions' 0 admits
  // none at once).
  constexpr int kNoLimit = std::numeric_limits<int>::max();
  o.max_requests_inflight = max_inflight == 0 ? kNoLimit : max_inflight;
  o.max_mutating_requests_inflight =
      max_mutating == 0 ? kNoLimit : max_mutating;
  o.max_watches = max_watches;
  o.max_watch_buffer_bytes = static_cast<size_t>(max_watch_buffer);
  o.max_watch_pending_events = static_cast<size_t>(max_watch_pending);
  o.max_watch_pending_bytes = static_cast<size_t>(max_watch_pending_bytes);
  o.max_watch_buffer_total_bytes = static_cast<size_t>(max_watch_buffer_total);
  o.min_request_timeout = seconds(min_request_timeout);
  o.max_request_body_bytes = static_cast<size_t>(max_body);
  o.max_connections = static_cast<size_t>(max_connections);
  o.request_body_timeout = body_timeout;
  o.request_timeout = request_timeout;
  o.worker_threads = worker_threads;
  o.cacher.window_events = static_cast<size_t>(watch_cache_size);
  o.cacher.window_max_age = watch_cache_history;
  o.cacher.keep_json = watch_cache_json;
  o.cacher.json_budget =
      std::make_shared<apiserver::KeptJsonBudget>(watch_cache_json_max_bytes);
  o.cacher.send_threads = watch_send_threads;
  o.auth = auth;
  o.service_account_signing_key_pem = std::move(sa_signing_key);
  o.service_account_key_pems = std::move(sa_keys);
  if (!sa_issuers.empty()) o.service_account_issuers = sa_issuers;
  o.service_cluster_ip_range = service_cluster_ip_range;
  o.service_node_port_range = service_node_port_range;
  o.kubelet_tls = *kubelet_tls;
  o.kubelet_preferred_address_types = kubelet_address_types;
  o.max_exec_streams = max_exec_streams;
  o.max_log_streams = max_log_streams;
  o.max_kubelet_streams_per_user = max_streams_per_user;
  o.exec_idle_timeout = exec_idle_timeout;
  ApiServer server(o);
  if (Status st = server.Start(); !st.ok()) return fail(st);
  if (!server.WaitReady(seconds(60))) {
    LOG(WARNING) << "watch caches not ready after 60s; serving anyway";
  }
  // A line tests and scripts wait for.
  std::cout << "kplane apiserver serving on "
            << (o.tls != nullptr ? "https://" : "http://") << bind_address
            << ":" << server.port() << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  LOG(INFO) << "received signal " << sig << ", shutting down";
  server.Stop();
  compactor.reset();  // before the client it uses
  remote.reset();
  if (embedded) embedded->Stop();
  return 0;
}

}  // namespace kplane::cmd
