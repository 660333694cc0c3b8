// GrpcKV: storage::KV over etcd's v3 gRPC API (etcdserverpb.KV, Watch,
// Lease, Maintenance), against the same endpoints RemoteKV takes: `kplane
// store` members (gRPC and the JSON gateway share the client port) or a
// real etcd 3.4. kube-apiserver always talks to etcd this way; here it is
// chosen with the apiserver's --etcd-protocol=grpc (NewStoreClient).
//
//   RemoteKVOptions o;
//   o.endpoints = {"127.0.0.1:2379", "127.0.0.1:22379"};
//   ASSIGN_OR_RETURN(std::unique_ptr<KV> kv,
//                    NewStoreClient(o, StoreProtocol::kGrpc));
//
// Why: the JSON client encodes every request as JSON with base64 bytes and
// parses every answer and watch event the same way, on both sides; over
// gRPC the messages are protobuf on one HTTP/2 connection per endpoint
// (docs/performance.md, "CPU per renewal").
//
// Every KV method is a gRPC call; nothing delegates to the JSON client.
// Calls outside storage::KV (member list/add/remove, defragment, snapshot:
// RemoteKV::Call and Maintenance) stay on the JSON API.
//
// Failover, retries and watch resumption: the rules of failover.h, which
// RemoteKV follows too. Each endpoint has one channel. Before an attempt
// the channel must be connected (within dial_timeout); if it cannot
// connect, the request never left (Attempt::unsent), so reads and writes
// alike move on to the next endpoint. gRPC's own retries are off, and its
// reconnect backoff is bounded by retry_backoff..max_retry_backoff so a
// restarted member is used again quickly.
//
// Deadlines: each attempt carries a gRPC deadline of request_timeout (never
// past the call's call_timeout), so the server abandons it too.
//
// Errors: gRPC status code + etcd's rpctypes text -> the domain codes of
// base/status.h through etcdjson::GrpcErrorToStatus, the table the JSON
// client uses (kCompacted, kFutureRevision, kNotFound for a missing lease,
// kNoSpace, kTooLarge, kNotLeader, ...), so both transports return the same
// Status for the same answer. LeaseKeepAlive of an expired lease is
// kNotFound as in RemoteKV; LeaseGrant's in-message error is kInternal.
//
// Watches: one bidirectional Watch stream and one reader thread per watch,
// with the guarantees of storage/kv.h, resumed by failover.h's
// WatchResumer. The stream carries etcd's
// "hasleader" metadata so a member without a leader ends it.
// RequestProgress writes a progress request on the stream (gRPC is always
// full-duplex).
//
// TLS: an endpoint speaks TLS as ParseEndpoints decides (https://, or bare
// host:port when options.tls is set). gRPC takes PEM files rather than
// RemoteKVOptions::tls's OpenSSL context: it reads options.tls_files (CA,
// client certificate and key); with none, the system's roots.
// insecure_skip_verify is refused (kInvalidArgument). Auth tokens are not
// supported, as in RemoteKV, except a watch's metadata given to
// StartWatchWithMetadata.
//
// Process-wide side effect: Create switches off abseil's Mutex deadlock
// detection (base/abseil_mutex_mode.h, StopAbseilDeadlockDetection: unless
// KPLANE_ABSL_DEADLOCK_DETECTION is set), which Debian's abseil runs on
// every lock gRPC takes (docs/performance.md, "The gRPC store client
// profiled").
//
// Ownership: a Watch must be destroyed before the GrpcKV that started it.
// Thread-safety: all methods may be called concurrently.
#ifndef KPLANE_STORAGE_CLIENT_GRPC_KV_H_
#define KPLANE_STORAGE_CLIENT_GRPC_KV_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/client/remote_kv.h"
#include "storage/kv.h"

namespace grpc {
class ChannelArguments;
}

namespace kplane::storage {

// How long one connection attempt to a member may take (TCP, TLS, HTTP/2
// settings) before gRPC abandons it and tries again on its backoff: gRPC's
// own minimum connect timeout. A call waits at most dial_timeout for a
// connection and moves on, while the attempt goes on in the background.
inline constexpr Duration kGrpcConnectAttempt = seconds(20);

// Sets `args`' reconnect backoff (initial_backoff, growing to max_backoff)
// and the time one connection attempt may take (kGrpcConnectAttempt). gRPC
// sets the latter with GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, which, despite its
// name, is no backoff: set to one (50 ms), every attempt was abandoned
// after 50 ms to 1 s and a member slower to finish a TLS handshake was never
// reached. Every channel to a member (GrpcKV, the gRPC proxy) goes through
// here.
void SetGrpcReconnect(grpc::ChannelArguments* args, Duration initial_backoff,
                      Duration max_backoff);

// Which API of the store a client speaks.
enum class StoreProtocol { kJson, kGrpc };

// "json" or "grpc"; anything else is kInvalidArgument naming both.
StatusOr<StoreProtocol> ParseStoreProtocol(std::string_view name);
const char* StoreProtocolName(StoreProtocol p);

// RemoteKV (kJson) or GrpcKV (kGrpc) over `options`.
StatusOr<std::unique_ptr<KV>> NewStoreClient(RemoteKVOptions options,
                                             StoreProtocol protocol);

class GrpcKV : public KV {
 public:
  static StatusOr<std::unique_ptr<GrpcKV>> Create(RemoteKVOptions options);
  ~GrpcKV() override;

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
  // kNotFound ("etcdserver: requested lease not found") when the lease has
  // expired or was revoked.
  StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req) override;
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) override;
  StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases(
      const etcdserverpb::LeaseLeasesRequest& req) override;

  // Status of the preferred endpoint's member.
  StatusOr<etcdserverpb::StatusResponse> MemberStatus() override;
  // Maintenance.HashKV of the preferred endpoint's member: the hash of the
  // key-values live at `req.revision()` (0: its current revision), which
  // later writes do not change. With several endpoints a failed attempt
  // moves on to the next (a read's failover), so the answer may be another
  // member's: give one endpoint to ask one member. etcd 3.4's JSON gateway
  // has no such call (its /v3/maintenance/hash is Hash, of the data as it
  // is when asked).
  StatusOr<etcdserverpb::HashKVResponse> HashKV(
      const etcdserverpb::HashKVRequest& req);

  // As RemoteKV::StartWatch: returns once the `created` response has been
  // handed to the callback, or fails (kUnavailable / kDeadlineExceeded, or
  // the server's refusal).
  StatusOr<std::unique_ptr<Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req,
      WatchCallback callback) override;
  // The metadata (name, value) to send on a watch's next stream.
  using WatchMetadataSource =
      std::function<std::vector<std::pair<std::string, std::string>>()>;
  // As StartWatch, with the metadata `metadata` returns, asked again for
  // every stream of the watch (the first and each resumed one; called on
  // the watch's thread, possibly while the Watch is being destroyed, so it
  // must hold what it reads, as the callback must): the grpc-proxy
  // presents the auth "token" of a client watcher sharing the watch. A
  // resumed stream refused for that identity by every member ends the watch
  // with a canceled response (failover.h, WatchState::RunStreams).
  StatusOr<std::unique_ptr<Watch>> StartWatchWithMetadata(
      const etcdserverpb::WatchCreateRequest& req, WatchCallback callback,
      WatchMetadataSource metadata);

  // The per-endpoint connections (grpc_kv.cc).
  struct Channels;

 private:
  explicit GrpcKV(std::unique_ptr<Channels> channels);

  std::unique_ptr<Channels> channels_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_GRPC_KV_H_
