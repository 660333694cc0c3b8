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
// Thread-safety: handlers run on the HTTP server's threads; ClientApi holds
// no state of its own beyond the server pointer.
#ifndef KPLANE_STORAGE_SERVER_CLIENT_API_H_
#define KPLANE_STORAGE_SERVER_CLIENT_API_H_

#include <memory>

#include "base/metrics.h"
#include "net/http_server.h"
#include "storage/server/store_server.h"

namespace kplane::storage {

class ClientApi {
 public:
  ClientApi(StoreServer* server, metrics::Registry* metrics);
  void RegisterHandlers(net::HttpServer* http);
  // Only GET /health and /metrics (etcd's --listen-metrics-urls); also part
  // of RegisterHandlers.
  void RegisterMetricsHandlers(net::HttpServer* http);

 private:
  StoreServer* server_;
  metrics::Registry* metrics_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_CLIENT_API_H_
