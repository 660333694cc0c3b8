// GrpcProxy: etcd 3.4's L7 gRPC proxy (`etcd grpc-proxy start`, served as
// `kplane store grpc-proxy start`): one gRPC server in front of a store
// cluster (kplane store members or etcd) that forwards etcd's v3 services
// to the members and coalesces identical watches.
//
//   GrpcProxyOptions o;
//   o.endpoints = {"127.0.0.1:2379", "127.0.0.1:22379"};
//   o.listen_addr = "127.0.0.1:0";
//   ASSIGN_OR_RETURN(auto proxy, GrpcProxy::Start(o));
//   ... clients dial 127.0.0.1:<proxy->port()> ...
//   proxy->Stop();
//
// The client port also answers HTTP/1.1, as etcd's proxy does (cmux):
// GET /health, /metrics and /proxy/metrics (storage/grpc/grpc_proxy_http.h);
// other paths 404. A connection that opens with the HTTP/2 preface is
// gRPC's. With TLS both are served over TLS (ALPN "h2" or "http/1.1").
//
// What it serves over gRPC:
//  - Watch: its own service. A watch that starts "now" (start_revision 0)
//    joins an upstream watch of the same key range, filters, prev_kv and
//    progress_notify if one is open (etcd's watch broadcasts), so N such
//    clients cost the members one watch; a joiner is created at the
//    store's revision (its permission check's answer; the shared watch's
//    if newer) and gets the events after it. Other watches get an upstream
//    watch of their own. Upstream watches resume on another member after a
//    failure (GrpcKV's guarantees: no gap, no duplicate). A client stream
//    whose responses queued behind the one being written pass
//    max_queued_watch_bytes is ended with RESOURCE_EXHAUSTED (one response
//    larger than that still goes); the others are not slowed by it. Every
//    watcher's permission is checked first (Auth, below). An empty key is
//    "\0", as the members take it. A cancel's answer carries the last
//    header. Progress requests are not answered (etcd's proxy answers none
//    either).
//  - Cluster.MemberList: answered by the proxy with one member whose client
//    URL is advertise_client_url when that is set (etcd's default), else
//    forwarded.
//  - KV (Range, Put, DeleteRange, Txn, Compact): forwarded as unary
//    calls, seen whole by the serializable-range cache (etcd's kvProxy):
//    a serializable Range is answered from the cache when the same request
//    (same caller token) was answered before; every answered Range,
//    linearizable ones too, is cached. Put, DeleteRange and Txn (its
//    compares and the writes of both branches) through the proxy drop the
//    cached answers of overlapping key ranges; Compact through the proxy
//    makes reads of older revisions fail as compacted. LeaseRevoke, Auth
//    changes (AuthEnable, user and role changes), Lock, Unlock and
//    Election's Campaign, Proclaim and Resign through the proxy drop the
//    whole cache (their keys, or who may read them, are not known here;
//    etcd's proxy drops nothing for them). Linearizable Ranges always go
//    to a member. Writes that do not go through this proxy (a lease
//    expiring too) are not seen by cached serializable reads until the
//    entry is evicted (etcd accepts the same staleness). Semantics and the
//    differences from etcd: storage/grpc/proxy_range_cache.h.
//  - Every other method (Lease with its keep-alive stream, Cluster,
//    Maintenance with the snapshot stream, Auth, Election, Lock):
//    forwarded message by message on one call to one member, with the
//    caller's "token"/"authorization" metadata and deadline. A call goes to
//    the first member, in the preferred order, whose connection is READY
//    (else one that is connecting); a member that drops is left for the
//    next until it is back (failover at call boundaries: a call in flight
//    on a dying member fails UNAVAILABLE and clientv3 retries it).
//  - namespace: every key and range of KV, Txn (compares and ops, nested)
//    and Watch is prefixed and the prefix is stripped from the answers, as
//    etcd's clientv3/namespace; an empty key is refused. LeaseTimeToLive's
//    keys are stripped too, and those outside the namespace left out (a
//    lease may hold other namespaces' keys), as etcd's.
//
// Bounds: requests larger than max_send_bytes are refused by the server
// (RESOURCE_EXHAUSTED); answers from members up to max_recv_bytes;
// max_watchers_per_stream watchers per client Watch stream (a create past
// it is refused, created and canceled, with the members' text:
// etcdjson::CheckWatcherLimit).
//
// Auth: forwarded calls carry the caller's token. Before a client watcher
// joins or opens an upstream watch, a member is asked, with that client's
// token, for a serializable count-only Range of the watched range (etcd's
// checkPermissionForWatch); if it refuses, the watcher is refused as
// etcd's proxy does (created and canceled, watch id -1, the member's
// error text as cancel_reason) and gets no events. A check that reaches
// no member (UNAVAILABLE, DEADLINE_EXCEEDED) is asked again with backoff,
// the create waiting, until a member answers or the stream or the proxy
// ends (etcd's proxy waits too). An upstream watch is
// opened with the token of the watcher that created it (etcd's proxy does
// the same) and shared with later watchers that passed their own check.
// Every create costs that one extra call, with auth disabled too.
//
// Thread-safety: Start/Stop from one controlling thread; stats() from any.
// Ownership: owns its gRPC server, channels and upstream watches.
// Errors: Start() returns kInvalidArgument for bad options (naming the
// option), or the listener's error.
#ifndef KPLANE_STORAGE_GRPC_GRPC_PROXY_H_
#define KPLANE_STORAGE_GRPC_GRPC_PROXY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "base/statusor.h"
#include "net/http_server.h"
#include "storage/client/endpoint.h"
#include "storage/etcdjson/etcd_json.h"

namespace kplane::storage {

struct GrpcProxyOptions {
  // Members: host:port, http://host:port or https://host:port.
  std::vector<std::string> endpoints;
  // TLS to the members (--cacert, --cert, --key). Set: bare host:port
  // endpoints speak TLS too. insecure_skip_verify is refused (gRPC C++
  // has no such switch).
  StoreClientTlsFiles client_tls;
  // Where clients connect; port 0 picks one (port()).
  std::string listen_addr = "127.0.0.1:23790";
  // Serving TLS (--cert-file, --key-file, --trusted-ca-file); empty cert:
  // plaintext. With a trusted CA file, clients must present a certificate
  // it signed (etcd's TLSInfo.ServerConfig; before 2026-12-05 kplane's
  // proxy asked for none). cipher_suites: --listen-cipher-suites, the TLS
  // 1.2 suites by Go's names (empty: OpenSSL's defaults; an unknown name is
  // refused at Start).
  std::string cert_file;
  std::string key_file;
  std::string trusted_ca_file;
  std::vector<std::string> cipher_suites;
  // Open client connections, gRPC and HTTP/1.1 (kplane's; etcd's proxy
  // has no bound): one past it is answered 503 and closed
  // (net::HttpServerOptions::max_connections). 0: none.
  size_t max_connections = 10000;
  // MemberList's answer; empty: forward MemberList.
  std::string advertise_client_url = "127.0.0.1:23790";
  // Key prefix (--namespace); empty: none.
  std::string key_prefix;
  // etcd's --max-send-bytes (requests to members; also the largest request
  // the proxy accepts) and --max-recv-bytes (answers from members).
  int max_send_bytes = 3 * 512 * 1024;
  int max_recv_bytes = 2147483647;
  // Per client Watch stream; the members' bound and default (a store's
  // --max-watchers-per-stream); 0: none.
  size_t max_watchers_per_stream = etcdjson::kDefaultMaxWatchersPerStream;
  // Bytes of responses queued behind the one being written, per client
  // Watch stream; past it the stream is ended as too slow.
  size_t max_queued_watch_bytes = 64 << 20;
  // --max-concurrent-streams; 0: gRPC's default.
  uint32_t max_concurrent_streams = 0;
  // The serializable-range cache (kplane's flags; etcd's is fixed at 2048
  // entries with no byte bound). range_cache_entries 0: no cache.
  size_t range_cache_entries = 2048;
  size_t range_cache_bytes = 64 << 20;
};

struct GrpcProxyStats {
  int64_t upstream_watches = 0;     // open now, to the members
  int64_t watchers = 0;             // client watchers open now
  int64_t slow_streams_ended = 0;   // client streams ended as too slow
  int64_t forwarded_calls = 0;      // calls sent to the members
  int64_t range_cache_hits = 0;     // serializable Ranges answered here
  int64_t range_cache_misses = 0;   // serializable Ranges forwarded
  int64_t range_cache_entries = 0;  // cached answers now
  // Watch creates refused because their client stream already held
  // max_watchers_per_stream watchers.
  int64_t watch_creates_refused = 0;
  // etcd's etcd_grpc_proxy_events_coalescing_total: for each response of
  // an upstream watch, the client watchers it went to beyond the first
  // (what sharing the watch saved).
  int64_t events_coalescing = 0;
  // Permission checks of watch creates asked again because the member could
  // not be reached (UNAVAILABLE or DEADLINE_EXCEEDED): the create waits for
  // the member instead of being refused.
  int64_t watch_checks_retried = 0;
};

class GrpcProxy {
 public:
  static StatusOr<std::unique_ptr<GrpcProxy>> Start(GrpcProxyOptions options);
  ~GrpcProxy();  // Stop()s
  GrpcProxy(const GrpcProxy&) = delete;
  GrpcProxy& operator=(const GrpcProxy&) = delete;

  int port() const;
  GrpcProxyStats stats() const;
  // The proxy's own series: etcd's etcd_grpc_proxy_*, kplane's
  // kplane_grpc_proxy_*, and its listeners' kplane_http_*.
  metrics::Registry* metrics();
  // Serves the client port's HTTP/1.1 paths (/health, /metrics,
  // /proxy/metrics) on another server too, before its Start()
  // (--metrics-addr).
  void AddHttpRoutes(net::HttpServer* server);
  // etcd's proxy health check (its /health): a linearizable Range of the
  // key "a" (under the namespace, as etcd's namespaced client asks) through
  // the members, without a token, within one second (as
  // etcd's). Ok when it is answered or refused with PermissionDenied; else
  // the error. With auth enabled the members refuse a Range without a token
  // ("etcdserver: user name is empty", InvalidArgument), so the proxy
  // reports unhealthy, as etcd 3.4's does.
  Status CheckHealth();
  // Cancels every call and upstream watch. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit GrpcProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The interval etcd's clientv3/namespace puts under `prefix`: key and
// range_end of a request. range_end "\0" (to the end of the keyspace)
// becomes the end of the prefix; an empty range_end stays empty.
void PrefixInterval(const std::string& prefix, std::string* key,
                    std::string* range_end);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_GRPC_PROXY_H_
