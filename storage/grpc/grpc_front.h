// GrpcFront: etcd 3.4's v3 gRPC API of a store member (etcdserverpb.KV,
// Watch, Lease, Cluster, Maintenance) and its election and lock services
// (v3electionpb.Election, v3lockpb.Lock), so that etcdctl and clientv3 work
// against `kplane store`. It has no listener of its own: the client
// HttpServer hands it every connection that opens with the HTTP/2 preface
// (HttpServerOptions::handoff), so one client URL serves gRPC and the JSON
// gateway, as etcd's cmux does.
//
//   GrpcFront grpc(server);
//   CHECK_OK(grpc.Start());
//   net::HttpServerOptions o;
//   grpc.InstallHandoff(&o);            // before the HttpServer exists
//   ... Adopt(fd) is called for each gRPC connection ...
//   grpc.Stop();                        // after the HttpServer stopped
//
// Requests take the JSON gateway's paths (KvService, StoreServer), and
// errors carry etcd's texts with the gRPC codes etcd's rpctypes use
// (etcdjson::StatusToError). TLS: the HttpServer terminates it and hands
// over the connections that negotiated ALPN "h2" (or no ALPN and sent the
// HTTP/2 preface) as a decrypted stream; its TlsContext must offer
// {"h2", "http/1.1"}. With auth enabled, a call without a token acts as the
// CN of its connection's verified client certificate (etcd's
// --client-cert-auth behaviour).
//
// Ownership: borrows the StoreServer, which must outlive Stop(); owns the
// grpc::Server and the sockets handed to it. Thread-safety: Adopt() may be
// called from any thread between Start() and Stop(); Start/Stop from one
// controlling thread. Errors: Start() fails if gRPC cannot start.
#ifndef KPLANE_STORAGE_GRPC_GRPC_FRONT_H_
#define KPLANE_STORAGE_GRPC_GRPC_FRONT_H_

#include <memory>
#include <vector>

#include "base/status.h"
#include "net/http_server.h"
#include "storage/server/election_lock.h"
#include "storage/server/kv_service.h"
#include "storage/server/store_server.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace kplane::storage {

// gRPC server settings, etcd's flags; 0 leaves gRPC's (or our) default.
struct GrpcFrontOptions {
  // --max-concurrent-streams: streams per client connection.
  uint32_t max_concurrent_streams = 0;
  // --grpc-keepalive-min-time: the shortest ping interval a client may use
  // (default here 1 s: etcdctl pings a long watch every few seconds).
  Duration keepalive_min_time = Duration(0);
  // --grpc-keepalive-interval / -timeout: the server pings an idle
  // connection this often and closes it when no answer comes in time.
  Duration keepalive_interval = Duration(0);
  Duration keepalive_timeout = Duration(0);
};

class GrpcFront {
 public:
  explicit GrpcFront(StoreServer* server, GrpcFrontOptions options = {});
  ~GrpcFront();  // Stop()s
  GrpcFront(const GrpcFront&) = delete;
  GrpcFront& operator=(const GrpcFront&) = delete;

  Status Start();
  // Serves gRPC on the connected socket `fd` (takes ownership; unread: the
  // client preface is still in it). Closes it if not started. `tls`: the
  // TLS state of the client connection `fd` carries decrypted (nullptr for
  // plaintext); its verified certificate names the calls' user.
  void Adopt(int fd, const net::TlsConnectionInfo* tls = nullptr);
  // Sets `o` to hand HTTP/2 connections to Adopt().
  void InstallHandoff(net::HttpServerOptions* o);
  // Cancels every call, closes every connection. Idempotent. Releases the
  // calls waiting for their token's raft index (the member's AuthStore
  // then defers none any more: call it when the member stops).
  void Stop();

 private:
  StoreServer* const server_;
  const GrpcFrontOptions options_;
  std::unique_ptr<KvService> kv_;
  std::unique_ptr<ElectionLockService> el_;  // borrows kv_
  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::unique_ptr<grpc::Server> grpc_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_GRPC_GRPC_FRONT_H_
