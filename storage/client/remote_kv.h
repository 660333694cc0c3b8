// RemoteKV: storage::KV over etcd's v3 JSON API, against a list of
// endpoints that are members of one cluster (`kplane store` members or a
// real etcd 3.4).
//
//   RemoteKVOptions o;
//   o.endpoints = {"127.0.0.1:2379", "127.0.0.1:22379", "127.0.0.1:32379"};
//   ASSIGN_OR_RETURN(std::unique_ptr<RemoteKV> kv, RemoteKV::Create(o));
//   etcdserverpb::PutRequest put;  put.set_key("a");  put.set_value("1");
//   ASSIGN_OR_RETURN(auto resp, kv->Put(put));
//
// Failover and retries: storage/client/failover.h (calls move round-robin
// over the endpoints; a read is retried after a transport failure or a
// no-leader answer, a write only when it certainly was not applied). A Txn
// counts as a read when none of its branches (nested ones included) holds a put
// or delete.
//
// Concurrency: each endpoint has a pool of keep-alive connections; a call
// borrows one for its exchange, so concurrent callers never queue behind
// one connection.
//
// Watches: StartWatch opens a /v3/watch stream of its own (a dedicated
// connection and thread per watch) and survives member failures: see
// storage/kv.h for the guarantees and failover.h (WatchResumer) for how
// the resume revision is tracked. A Watch must be destroyed before the
// RemoteKV that started it.
//
// RequestProgress: on a server that reads requests while streaming (kplane
// store) the progress request goes on the watch stream. etcd 3.4's HTTP
// gateway is half-duplex (it answers only after the request body ended), so
// there the request goes on a short side stream, and the answer has etcd
// 3.4's own meaning: the member's current revision, which etcd 3.4 reports
// without waiting for the watcher to catch up (as over gRPC).
//
// Thread-safety: all methods may be called concurrently.
// Errors: Status with the domain codes of base/status.h, recovered from
// etcd's error texts by etcdjson::ErrorToStatus (kCompacted,
// kFutureRevision, kNotFound for a missing lease, kNoSpace, kTooLarge,
// kNotLeader, ...); kUnavailable when no endpoint answered; kDeadlineExceeded
// when the overall deadline passed.
#ifndef KPLANE_STORAGE_CLIENT_REMOTE_KV_H_
#define KPLANE_STORAGE_CLIENT_REMOTE_KV_H_

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "storage/client/endpoint.h"
#include "storage/client/failover.h"
#include "storage/kv.h"

namespace kplane::storage {

struct RemoteKVOptions {
  // "host:port", "http://host:port" or "https://host:port"; entries may be
  // comma-separated.
  std::vector<std::string> endpoints;
  // TLS (NewStoreClientTls): used for https:// endpoints, and for bare
  // "host:port" ones when set (endpoint.h). Null with an https:// endpoint:
  // the system's roots, no client certificate.
  std::shared_ptr<const net::TlsContext> tls;
  // The files `tls` was made from. Only the gRPC transport reads them
  // (grpc_kv.h: gRPC takes PEM, not an OpenSSL context); the JSON client
  // ignores them.
  StoreClientTlsFiles tls_files;
  // Connecting to one endpoint.
  Duration dial_timeout = seconds(2);
  // One request to one endpoint (sending it and reading the answer).
  Duration request_timeout = seconds(5);
  // A whole call, all retries and endpoints included.
  Duration call_timeout = seconds(15);
  Duration retry_backoff = milliseconds(50);
  Duration max_retry_backoff = seconds(1);
  // Idle keep-alive connections kept per endpoint. As many as the calls a
  // busy caller makes at once (the apiserver: up to its in-flight limits),
  // so that a burst does not end in closing connections it must open again
  // at the next one: over TLS each new connection is a handshake (~1 ms of
  // CPU on each side). An idle connection costs a socket and its buffers on
  // both sides.
  size_t max_idle_connections = 256;
  // How long the first watch stream to an endpoint waits for `created`
  // with its request body still open before concluding the server is
  // half-duplex (etcd 3.4's gateway; see remote_kv.cc).
  Duration duplex_probe = milliseconds(300);
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

// Whether an endpoint's /v3/watch reads requests while it streams answers.
enum class WatchDuplex : int { kUnknown = 0, kFull = 1, kHalf = 2 };

class RemoteKV : public KV {
 public:
  static StatusOr<std::unique_ptr<RemoteKV>> Create(RemoteKVOptions options);
  ~RemoteKV() override;

  StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req) override;
  StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& req) override;
  StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& req) override;
  StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& req) override;
  StatusOr<etcdserverpb::CompactionResponse> Compact(
      const etcdserverpb::CompactionRequest& req) override;

  StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      const etcdserverpb::LeaseGrantRequest& req) override;
  StatusOr<etcdserverpb::LeaseRevokeResponse> LeaseRevoke(
      const etcdserverpb::LeaseRevokeRequest& req) override;
  // Returns kNotFound ("etcdserver: requested lease not found") when the
  // lease has expired or was revoked (etcd answers TTL 0 then).
  StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req) override;
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) override;
  StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases(
      const etcdserverpb::LeaseLeasesRequest& req) override;

  // Status of the preferred endpoint's member.
  StatusOr<etcdserverpb::StatusResponse> MemberStatus() override;

  // Blocks until the store has created the watch and the `created`
  // response has been handed to the callback (so every write made after
  // StartWatch returns is seen), or fails with kUnavailable/kDeadlineExceeded
  // if no endpoint accepted it within call_timeout, or with the server's
  // error (e.g. kInvalidArgument).
  StatusOr<std::unique_ptr<Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req,
      WatchCallback callback) override;

  // Any unary call of the JSON API, with the failover rules above (used for
  // the cluster calls kpctl needs: member list/add/remove, ...).
  Status Call(std::string_view path, const google::protobuf::Message& req,
              google::protobuf::Message* resp, CallKind kind);

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  // Index in endpoints() of the endpoint calls go to first.
  size_t preferred_endpoint() const { return preferred_.load(); }
  const RemoteKVOptions& options() const { return options_; }
  WatchDuplex watch_duplex(size_t i) const {
    return static_cast<WatchDuplex>(duplex_[i].load());
  }
  void set_watch_duplex(size_t i, WatchDuplex d) {
    duplex_[i].store(static_cast<int>(d));
  }
  Clock* clock() const { return clock_; }
  ConnectionPool* pool(size_t i) const { return pools_[i].get(); }

 private:
  RemoteKV(RemoteKVOptions options, std::vector<Endpoint> endpoints);

  template <typename Resp>
  StatusOr<Resp> Unary(std::string_view path,
                       const google::protobuf::Message& req, CallKind kind) {
    Resp resp;
    Status s = Call(path, req, &resp, kind);
    if (!s.ok()) return s;
    return resp;
  }

  const RemoteKVOptions options_;
  Clock* const clock_;
  const std::vector<Endpoint> endpoints_;
  std::vector<std::unique_ptr<ConnectionPool>> pools_;
  std::atomic<size_t> preferred_{0};
  std::unique_ptr<std::atomic<int>[]> duplex_;
};

// True if the txn (nested txns included) contains no put or delete.
bool IsReadOnlyTxn(const etcdserverpb::TxnRequest& req);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_REMOTE_KV_H_
