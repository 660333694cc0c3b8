#include "cmd/kplane/grpc_proxy_command.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <climits>
#include <iostream>

#include "base/clock.h"
#include "base/command.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/strings.h"
#include "cmd/kplane/store_flags.h"
#include "cmd/kplane/watch_limit_flag.h"
#include "net/socket.h"
#include "net/tls.h"
#include "net/url.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/server/member_tls.h"

namespace kplane::cmd {

namespace {

constexpr char kCommand[] = "kplane store grpc-proxy start";

struct FlagValues {
  GrpcProxyCommandOptions o;
  std::vector<std::string> endpoints = {"127.0.0.1:2379"};
  std::vector<std::string> cipher_suites;
  int64_t max_send_bytes = 3 * 512 * 1024;
  int64_t max_recv_bytes = INT_MAX;
  int64_t max_concurrent_streams = 0;
  int64_t max_watchers_per_stream =
      static_cast<int64_t>(etcdjson::kDefaultMaxWatchersPerStream);
  int64_t range_cache_entries = 2048;
  int64_t range_cache_bytes = 64 << 20;
  int64_t max_connections = 10000;
  std::string data_dir = "default.proxy";
  // etcd's flags that kplane does not serve: refused when given a value.
  std::string metrics_addr;
  std::string discovery_srv, discovery_srv_name, resolver_prefix,
      client_crl_file, leasing_prefix;
  int64_t resolver_ttl = 0;
  bool insecure_discovery = false, auto_tls = false, ordering = false;
};

void DeclareFlags(FlagSet& f, FlagValues& v) {
  storage::GrpcProxyOptions& p = v.o.proxy;
  f.String("listen-addr", &p.listen_addr,
           "Address to serve clients on, host:port (port 0 picks one).");
  f.StringList("endpoints", &v.endpoints,
               "Comma-separated store client endpoints to proxy to "
               "(host:port, http:// or https://).");
  f.String("advertise-client-url", &p.advertise_client_url,
           "The URL MemberList answers with (the proxy's own); empty: "
           "forward MemberList to the members.");
  f.String("namespace", &p.key_prefix,
           "Prefix put before every key of the proxied requests.");
  f.String("cert", &p.client_tls.cert_file,
           "Client certificate to the members (its Common Name must be "
           "empty).");
  f.String("key", &p.client_tls.key_file, "Key of --cert.");
  f.String("cacert", &p.client_tls.ca_file,
           "CA bundle that verifies the members' certificates.");
  f.Bool("insecure-skip-tls-verify", &p.client_tls.insecure_skip_verify,
         "Skip verifying the members' certificates (refused: not "
         "supported by kplane's proxy).");
  f.String("cert-file", &p.cert_file,
           "Serving certificate (clients connect over TLS).");
  f.String("key-file", &p.key_file, "Key of --cert-file.");
  f.String("trusted-ca-file", &p.trusted_ca_file,
           "CA that must sign the clients' certificates (as etcd: given, a "
           "client certificate is required).");
  f.StringList("listen-cipher-suites", &v.cipher_suites,
               "TLS 1.2 cipher suites served to clients, Go's names; empty: "
               "the defaults.");
  f.Int64("max-send-bytes", &v.max_send_bytes,
          "Largest request sent to a member (and accepted from a client).");
  f.Int64("max-recv-bytes", &v.max_recv_bytes,
          "Largest answer taken from a member.");
  f.Int64("max-concurrent-streams", &v.max_concurrent_streams,
          "Streams per client connection; 0: gRPC's default.");
  f.Int64("max-watchers-per-stream", &v.max_watchers_per_stream,
          kMaxWatchersPerStreamHelp);
  f.Int64("range-cache-max-entries", &v.range_cache_entries,
          "Serializable Range answers cached (kplane's flag; etcd's cache "
          "is fixed at 2048); 0: no cache.");
  f.Int64("range-cache-max-bytes", &v.range_cache_bytes,
          "Bytes of cached Range answers (kplane's flag; etcd has no such "
          "bound).");
  f.Int64("max-connections", &v.max_connections,
          "Open client connections, gRPC and HTTP (kplane's flag; etcd's "
          "proxy has no bound); one more is closed, after a 503 when the "
          "port is plaintext; 0: no cap.");
  f.Bool("enable-pprof", &v.o.enable_pprof,
         "Accepted for etcd's command line; kplane serves no pprof.");
  f.Bool("debug", &v.o.debug, "Log at debug level.");
  f.String("data-dir", &v.data_dir,
           "Accepted for etcd's command line (etcd keeps auto-TLS files "
           "there; kplane has no auto-TLS).");
  f.String("discovery-srv", &v.discovery_srv, "Not served: refused.");
  f.String("discovery-srv-name", &v.discovery_srv_name, "Not served: refused.");
  f.Bool("insecure-discovery", &v.insecure_discovery, "Not served: refused.");
  f.String("metrics-addr", &v.metrics_addr,
           "An http:// or https:// URL (host:port, port 0: any) that "
           "serves /metrics and /health; https uses --cert-file/--key-file.");
  f.String("resolver-prefix", &v.resolver_prefix, "Not served: refused.");
  f.Int64("resolver-ttl", &v.resolver_ttl, "Not served: refused.");
  f.Bool("auto-tls", &v.auto_tls, "Not served: refused.");
  f.String("client-crl-file", &v.client_crl_file, "Not served: refused.");
  f.Bool("experimental-serializable-ordering", &v.ordering,
         "Not served: refused.");
  f.String("experimental-leasing-prefix", &v.leasing_prefix,
           "Not served: refused.");
}

Status NotServed(const std::string& flag) {
  return InvalidArgumentError("--" + flag +
                              " is not supported by kplane's grpc-proxy "
                              "(docs/store.md, \"The gRPC proxy\")");
}

}  // namespace

StatusOr<std::string> CertificateCommonName(const std::string& path) {
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) {
    return InvalidArgumentError("cannot read certificate \"" + path + "\"");
  }
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  fclose(f);
  if (cert == nullptr) {
    return InvalidArgumentError("no PEM certificate in \"" + path + "\"");
  }
  std::string cn;
  X509_NAME* name = X509_get_subject_name(cert);
  const int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (i >= 0) {
    const ASN1_STRING* s =
        X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    cn.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
              static_cast<size_t>(ASN1_STRING_length(s)));
  }
  X509_free(cert);
  return cn;
}

StatusOr<std::unique_ptr<net::HttpServer>> StartProxyMetricsServer(
    const net::Url& url, const storage::GrpcProxyOptions& proxy_options,
    storage::GrpcProxy* proxy) {
  net::HttpServerOptions ho;
  ho.name = "metrics";
  ho.metrics = proxy->metrics();  // its kplane_http_* series too
  ho.worker_threads = 4;  // /health and /metrics may wait on the members
  ho.max_connections = 1024;
  if (url.scheme == "https") {
    // The client port's TLS settings, as etcd's proxy gives its metrics
    // listener the same TLSInfo (a trusted CA requires client
    // certificates here too).
    ASSIGN_OR_RETURN(ho.tls,
                     storage::NewMemberServerTls(
                         {.cert_file = proxy_options.cert_file,
                          .key_file = proxy_options.key_file,
                          .trusted_ca_file = proxy_options.trusted_ca_file,
                          .cipher_suites = proxy_options.cipher_suites},
                         {"http/1.1"}));
  }
  ASSIGN_OR_RETURN(net::ScopedFd fd, net::ListenTcp(url.host, url.port, 128));
  ho.listen_fd = fd.Release();

  auto server = std::make_unique<net::HttpServer>(ho);
  proxy->AddHttpRoutes(server.get());
  RETURN_IF_ERROR(server->Start());
  return server;
}

std::string GrpcProxyUsage() {
  FlagSet f(kCommand,
            "etcd's L7 gRPC proxy: serves etcd's v3 gRPC API and forwards "
            "it to the store members, sharing one member watch between "
            "identical client watches.");
  FlagValues v;
  DeclareFlags(f, v);
  return f.Usage();
}

StatusOr<GrpcProxyCommandOptions> ParseGrpcProxyArgs(
    const std::vector<std::string>& args, bool* help) {
  *help = false;
  FlagSet f(kCommand, "");
  FlagValues v;
  DeclareFlags(f, v);
  Status parsed = f.Parse(args);
  if (f.help_requested()) {
    *help = true;
    return v.o;
  }
  RETURN_IF_ERROR(parsed);
  RETURN_IF_ERROR(CheckStartSubcommand(f.args(), "kplane store grpc-proxy"));
  for (const char* flag :
       {"discovery-srv", "discovery-srv-name", "resolver-prefix",
        "client-crl-file", "experimental-leasing-prefix"}) {
    // An empty value is etcd's default: harmless.
    std::string* val = nullptr;
    const std::string name = flag;
    if (name == "discovery-srv") val = &v.discovery_srv;
    if (name == "discovery-srv-name") val = &v.discovery_srv_name;
    if (name == "resolver-prefix") val = &v.resolver_prefix;
    if (name == "client-crl-file") val = &v.client_crl_file;
    if (name == "experimental-leasing-prefix") val = &v.leasing_prefix;
    if (!val->empty()) return NotServed(name);
  }
  if (v.resolver_ttl != 0) return NotServed("resolver-ttl");
  if (v.insecure_discovery) return NotServed("insecure-discovery");
  if (v.auto_tls) return NotServed("auto-tls");
  if (v.ordering) return NotServed("experimental-serializable-ordering");

  GrpcProxyCommandOptions& o = v.o;
  storage::GrpcProxyOptions& p = o.proxy;
  {
    std::string host;
    uint16_t port = 0;
    if (Status st = net::SplitHostPort(p.listen_addr, /*allow_zero=*/true,
                                       &host, &port);
        !st.ok()) {
      return InvalidArgumentError("--listen-addr: \"" + p.listen_addr +
                                  "\": " + st.message());
    }
  }
  if (v.endpoints.empty()) {
    return InvalidArgumentError("--endpoints: no endpoint given");
  }
  p.endpoints = v.endpoints;
  if (v.max_send_bytes < 1 || v.max_send_bytes > INT_MAX) {
    return InvalidArgumentError("--max-send-bytes must be in 1.." +
                                std::to_string(INT_MAX));
  }
  if (v.max_recv_bytes < 1 || v.max_recv_bytes > INT_MAX) {
    return InvalidArgumentError("--max-recv-bytes must be in 1.." +
                                std::to_string(INT_MAX));
  }
  p.max_send_bytes = static_cast<int>(v.max_send_bytes);
  p.max_recv_bytes = static_cast<int>(v.max_recv_bytes);
  if (v.max_concurrent_streams < 0 || v.max_concurrent_streams > UINT32_MAX) {
    return InvalidArgumentError(
        "--max-concurrent-streams must be in 0..4294967295");
  }
  p.max_concurrent_streams = static_cast<uint32_t>(v.max_concurrent_streams);
  ASSIGN_OR_RETURN(p.max_watchers_per_stream,
                   MaxWatchersPerStreamFromFlag(v.max_watchers_per_stream));
  if (v.range_cache_entries < 0 || v.range_cache_entries > (1 << 24)) {
    return InvalidArgumentError(
        "--range-cache-max-entries must be in 0..16777216");
  }
  if (v.range_cache_bytes < 1) {
    return InvalidArgumentError("--range-cache-max-bytes must be at least 1");
  }
  p.range_cache_entries = static_cast<size_t>(v.range_cache_entries);
  p.range_cache_bytes = static_cast<size_t>(v.range_cache_bytes);
  if (p.client_tls.cert_file.empty() != p.client_tls.key_file.empty()) {
    return InvalidArgumentError("--cert and --key must be given together");
  }
  if (p.client_tls.insecure_skip_verify) {
    return InvalidArgumentError(
        "--insecure-skip-tls-verify is not supported by kplane's grpc-proxy "
        "(gRPC C++ always verifies the members' certificates; give "
        "--cacert)");
  }
  if (p.cert_file.empty() != p.key_file.empty()) {
    return InvalidArgumentError(
        "--cert-file and --key-file must be given together");
  }
  // etcd's TLSInfo.EmptyCN: a member with --client-cert-auth takes a
  // certificate's Common Name as the user of every call without a token,
  // so a proxy certificate with a CN would lend that user to every client
  // of the proxy.
  if (!p.client_tls.cert_file.empty()) {
    ASSIGN_OR_RETURN(std::string cn,
                     CertificateCommonName(p.client_tls.cert_file));
    if (!cn.empty()) {
      return InvalidArgumentError("cert has non empty Common Name (" + cn +
                                  ")");
    }
  }
  if (!v.metrics_addr.empty()) {
    ASSIGN_OR_RETURN(o.metrics_url, ListenUrl(v.metrics_addr, "metrics-addr",
                                              /*unix_ok=*/false));
    if (o.metrics_url->scheme == "https" && p.cert_file.empty()) {
      return InvalidArgumentError(
          "--metrics-addr: an https:// URL needs --cert-file and --key-file "
          "(the proxy's serving certificate)");
    }
  }
  if (!v.cipher_suites.empty()) {
    // Checked here for the command's error; the proxy builds its TLS
    // context from the names (NewMemberServerTls).
    auto list = storage::OpenSslCipherList(v.cipher_suites);
    if (!list.ok()) return list.status().Annotate("--listen-cipher-suites");
    p.cipher_suites = v.cipher_suites;
  }
  if (v.max_connections < 0) {
    return InvalidArgumentError(
        "--max-connections must not be negative (0: no cap)");
  }
  p.max_connections = static_cast<size_t>(v.max_connections);
  return o;
}

int RunGrpcProxyCommand(const std::vector<std::string>& args) {
  bool help = false;
  auto parsed = ParseGrpcProxyArgs(args, &help);
  if (help) {
    std::cout << GrpcProxyUsage();
    return 0;
  }
  auto fail = [](const Status& st) {
    return CommandFailed("kplane store grpc-proxy", st);
  };
  if (!parsed.ok()) return fail(parsed.status());
  const GrpcProxyCommandOptions& o = *parsed;
  SetLogTag("grpc-proxy");
  if (o.debug) SetMinLogLevelByName("debug");
  if (o.enable_pprof) {
    LOG(INFO) << "--enable-pprof: kplane serves no pprof; ignored";
  }
  sigset_t stop = BlockStopSignals();  // before gRPC's threads
  auto proxy = storage::GrpcProxy::Start(o.proxy);
  if (!proxy.ok()) return fail(proxy.status());
  std::unique_ptr<net::HttpServer> metrics_http;
  if (o.metrics_url) {
    auto m = StartProxyMetricsServer(*o.metrics_url, o.proxy, proxy->get());
    if (!m.ok()) return fail(m.status().Annotate("--metrics-addr"));
    metrics_http = std::move(*m);
    LOG(INFO) << "serving /metrics and /health on " << o.metrics_url->scheme
              << "://" << o.metrics_url->host << ":" << metrics_http->port();
  }
  // etcd's words, once every listener is up (etcd binds its metrics
  // listener first too); tools wait for them.
  LOG(INFO) << "started gRPC proxy on " << o.proxy.listen_addr << " (port "
            << (*proxy)->port() << "), proxying to ["
            << StrJoin(o.proxy.endpoints, ",") << "]"
            << (o.proxy.key_prefix.empty()
                    ? ""
                    : ", namespace \"" + o.proxy.key_prefix + "\"");
  int sig = 0;
  sigwait(&stop, &sig);
  LOG(INFO) << "received signal " << sig << ", shutting down";
  if (metrics_http) metrics_http->Stop();
  (*proxy)->Stop();
  return 0;
}

}  // namespace kplane::cmd
