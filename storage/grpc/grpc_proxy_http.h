// GrpcProxyHttp: the HTTP/1.1 paths of etcd 3.4's gRPC proxy, which it
// serves on its client port beside gRPC (cmux) and on --metrics-addr:
//
//   GET /health          etcd's health check through the members
//                        (GrpcProxy::CheckHealth), answered with etcd's
//                        bytes (storage/server/etcd_health.h); a failure
//                        is logged at most once per 10 s.
//   GET /metrics         a member's /metrics, as etcd's proxy forwards it
//                        (grpcproxy.HandleMetrics), with the proxy's own
//                        series in place of the member's (below).
//   GET /proxy/metrics   the proxy's own series only (etcd 3.5's path).
//
// /metrics, the member part: the member that answered last is asked
// first, then the others in order, each given member_timeout (1 s to
// connect), until one answers 200 with at most max_member_metrics_bytes or
// metrics_deadline has passed; none: 500 "Internal server error" (etcd's
// answer when its one member does not answer) and a warning at most once
// per 10 s. etcd's proxy asks one member, picked at start, and fails while
// that one is down.
// The proxy part: the families named etcd_grpc_proxy_* and
// kplane_grpc_proxy_* are taken from the proxy's registry and any of the
// member's of those names are dropped. Why not etcd's bytes: an etcd
// member's binary holds the proxy package, so etcd's proxy forwards the
// member's etcd_grpc_proxy_* series, which are always 0; ours are the
// proxy's figures. Other families of the proxy (its listeners'
// kplane_http_*) are on /proxy/metrics only, where no member's families
// of the same name collide with them.
//
// /health and /metrics wait on the members and run on the server's worker
// pool (the proxy's client port has 4 workers: two slow scrapes leave room
// for health probes); /proxy/metrics answers on the I/O thread. Every other
// method on /health gets etcd's 405 (storage/server/etcd_health.h); on the
// metrics paths, the server's 405.
//
// Ownership: borrows the proxy and the registry, which must outlive it.
// Thread-safety: the handlers may run on any threads at once.
#ifndef KPLANE_STORAGE_GRPC_GRPC_PROXY_HTTP_H_
#define KPLANE_STORAGE_GRPC_GRPC_PROXY_HTTP_H_

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/log_throttle.h"
#include "base/metrics.h"
#include "base/statusor.h"
#include "net/http_server.h"
#include "storage/client/endpoint.h"

namespace kplane::storage {

class GrpcProxy;

struct GrpcProxyHttpOptions {
  // The members (the proxy's parsed endpoints) and the client TLS context
  // for those that are https:// (null if none is).
  std::vector<Endpoint> members;
  std::shared_ptr<const net::TlsContext> member_tls;
  Duration member_timeout = seconds(2);
  Duration metrics_deadline = seconds(3);
  size_t max_member_metrics_bytes = 16 << 20;
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

class GrpcProxyHttp {
 public:
  GrpcProxyHttp(GrpcProxy* proxy, metrics::Registry* own,
                GrpcProxyHttpOptions options);

  // Routes the three paths on `server` (before its Start()).
  void AddRoutes(net::HttpServer* server);

 private:
  void ServeHealth(const net::HttpRequest& req, net::Responder& r);
  void ServeMetrics(net::Responder& r);

  GrpcProxy* const proxy_;
  metrics::Registry* const own_;
  const GrpcProxyHttpOptions options_;
  Clock* const clock_;
  // The member /metrics asks first: the last one that answered.
  std::atomic<size_t> metrics_member_{0};
  LogThrottle health_warnings_{seconds(10)};
  LogThrottle metrics_warnings_{seconds(10)};
};

// The lines of a Prometheus text exposition whose metric (or # HELP /
// # TYPE) names start with one of the proxy's prefixes, etcd_grpc_proxy_
// and kplane_grpc_proxy_ (`proxy_owned` true), or the other lines (false).
std::string ProxyOwnedMetricLines(std::string_view text, bool proxy_owned);

// Registers the proxy's series (etcd's etcd_grpc_proxy_* with etcd's
// types, and kplane's kplane_grpc_proxy_*) in `registry`, read from
// proxy->stats() when rendered.
void RegisterGrpcProxyMetrics(GrpcProxy* proxy, metrics::Registry* registry);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_GRPC_PROXY_HTTP_H_
