// `kplane store grpc-proxy start`: etcd 3.4's `etcd grpc-proxy start`, the
// L7 gRPC proxy in front of a store cluster (storage/grpc/grpc_proxy.h).
//
//   kplane store grpc-proxy start --endpoints=127.0.0.1:2379,127.0.0.1:22379
//       --listen-addr=127.0.0.1:23790
//
// etcd's flags with etcd's defaults: --listen-addr, --endpoints,
// --advertise-client-url, --namespace, --cert/--key/--cacert (TLS to the
// members), --insecure-skip-tls-verify, --cert-file/--key-file/
// --trusted-ca-file (serving TLS), --listen-cipher-suites,
// --max-send-bytes, --max-recv-bytes, --max-concurrent-streams, --data-dir,
// --enable-pprof and --debug (accepted; see docs/store.md, "The gRPC
// proxy"). kplane's own: --range-cache-max-entries (2048, etcd's fixed
// size; 0: no cache) and --range-cache-max-bytes (64 MiB) bound the
// serializable-range cache; --max-watchers-per-stream (10,000, the store's
// flag and default; 0: no cap) bounds one client Watch stream's watchers.
// --max-connections (10,000; 0: no cap) bounds the client port's open
// connections. --metrics-addr (an http:// or https:// URL; https takes the
// serving certificate of --cert-file/--key-file) serves the client port's
// HTTP paths (GET /health, /metrics, /proxy/metrics) there too, as etcd's
// proxy (StartProxyMetricsServer).
// etcd's flags kplane does not serve
// (--discovery-srv, --resolver-prefix, --auto-tls,
// --client-crl-file, the experimental ones) are refused when given a
// value, naming the flag.
// As etcd, a client certificate (--cert) with a non-empty Common Name is
// refused: the members would take every un-tokened call through the proxy
// as that user.
//
// Thread-safety: single-threaded use (the command's main thread).
// Errors: InvalidArgument naming the flag.
#ifndef KPLANE_CMD_KPLANE_GRPC_PROXY_COMMAND_H_
#define KPLANE_CMD_KPLANE_GRPC_PROXY_COMMAND_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "base/statusor.h"
#include "net/http_server.h"
#include "net/url.h"
#include "storage/grpc/grpc_proxy.h"

namespace kplane::cmd {

struct GrpcProxyCommandOptions {
  storage::GrpcProxyOptions proxy;
  // --metrics-addr; unset: no metrics listener.
  std::optional<net::Url> metrics_url;
  bool debug = false;
  bool enable_pprof = false;
};

// Parses the arguments after `grpc-proxy` (`start` and the flags, in any
// order). *help is set for --help. InvalidArgument for a missing or unknown
// subcommand, an unknown or unserved flag, a bad value, or a --cert whose
// Common Name is not empty ("cert has non empty Common Name (<cn>)", etcd's
// words).
StatusOr<GrpcProxyCommandOptions> ParseGrpcProxyArgs(
    const std::vector<std::string>& args, bool* help);
std::string GrpcProxyUsage();

// The Common Name of the first certificate in the PEM file `path` ("" if
// it has none). kInvalidArgument if the file cannot be read or parsed.
StatusOr<std::string> CertificateCommonName(const std::string& path);

// The --metrics-addr server for `proxy`, started on `url` (port 0: an
// ephemeral one, server->port()); https:// serves with `proxy_options`'
// --cert-file/--key-file, --trusted-ca-file (client certificates required)
// and --listen-cipher-suites, as the client port. It serves what the client
// port serves over HTTP/1.1 (GrpcProxy::AddHttpRoutes: /health, /metrics,
// /proxy/metrics; storage/grpc/grpc_proxy_http.h), as etcd's proxy serves the
// same paths on both. `proxy` must outlive the server: Stop() it first. Errors:
// the listener's or the TLS files'.
StatusOr<std::unique_ptr<net::HttpServer>> StartProxyMetricsServer(
    const net::Url& url, const storage::GrpcProxyOptions& proxy_options,
    storage::GrpcProxy* proxy);

// Runs until SIGINT/SIGTERM; returns the exit code. `args` are those after
// `kplane store grpc-proxy`.
int RunGrpcProxyCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_GRPC_PROXY_COMMAND_H_
