// ClientApi: the etcd v3 JSON API of a store member, as etcd 3.4's
// grpc-gateway serves it (reference/etcd-json-api.md), over net::HttpServer:
//
//   POST /v3/kv/range|put|deleterange|txn|compaction
//   POST /v3/watch                  (bidirectional stream of JSON objects)
//   POST /v3/lease/grant|revoke|keepalive|timetolive|leases
//        (revoke, timetolive, leases also under /v3/kv/lease/)
//   POST
//   /v3/maintenance/status|defragment|hash|alarm|snapshot|transfer-leadership
//   POST /v3/cluster/member/list|add|remove|promote|update
//   GET  /health  /metrics  /version
// and the same under /v3beta/.
//
// Writes are proposed asynchronously and answered from the apply thread, so
// no thread waits per in-flight write; linearizable reads wait for their
// ReadIndex round off the request threads.
//
// --max-concurrent-streams (ClientApiOptions) bounds the requests in flight
// on each listener's gateway, as etcd's gateway is one gRPC connection to
// its own member: the request past the limit waits (GatewayStreams).
//
// Thread-safety: handlers run on the HTTP server's threads; RegisterHandlers
// and the destructor from one controlling thread. ClientApi must outlive
// the HttpServers it registered on (their Stop()).
#ifndef KPLANE_STORAGE_SERVER_CLIENT_API_H_
#define KPLANE_STORAGE_SERVER_CLIENT_API_H_

#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/log_throttle.h"
#include "base/metrics.h"
#include "net/http_server.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

class GatewayStreams;

struct ClientApiOptions {
  // etcd's --max-concurrent-streams as its gateway feels it: requests in
  // flight per listener (a watch or keepalive stream for its lifetime); 0:
  // no limit. A request past it waits at most `max_stream_wait`.
  uint32_t max_concurrent_streams = 0;
  Duration max_stream_wait = seconds(60);
};

class ClientApi {
 public:
  ClientApi(StoreServer* server, metrics::Registry* metrics,
            ClientApiOptions options = {});
  ~ClientApi();  // stops the stream limits' timers
  ClientApi(const ClientApi&) = delete;
  ClientApi& operator=(const ClientApi&) = delete;
  void RegisterHandlers(net::HttpServer* http);
  // Only GET /health and /metrics (etcd's --listen-metrics-urls); also part
  // of RegisterHandlers.
  void RegisterMetricsHandlers(net::HttpServer* http);

 private:
  StoreServer* server_;
  metrics::Registry* metrics_;
  const ClientApiOptions options_;
  // One per RegisterHandlers (per listener), as etcd's gateway connections.
  std::vector<std::shared_ptr<GatewayStreams>> streams_;
  // kplane_store_snapshot_unsent_bytes: /v3/maintenance/snapshot output
  // queued for clients, as each stream last saw it.
  metrics::Gauge* snapshot_unsent_;
  // /health's warning, shared by every listener that serves it.
  const std::shared_ptr<LogThrottle> health_warnings_ =
      std::make_shared<LogThrottle>(seconds(10));
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_CLIENT_API_H_
