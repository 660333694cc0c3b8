// KV: the etcd v3 semantics that kplane's upper layers need from a store.
//
// The apiserver, `kpctl store` and the benchmarks program against this
// interface. Two implementations:
//   - embedded: the replicated store running in the same process
//     (`kplane up`, storage/server), no HTTP in between;
//   - remote: etcd's v3 JSON API over HTTP to a list of endpoints, which may
//     be `kplane store` members or a real etcd 3.4
//     (storage/client/remote_kv.h), or etcd's gRPC API to the same
//     endpoints (storage/client/grpc_kv.h).
//
// Requests and responses are etcd's own messages (schemas/rpc.proto), so the
// semantics are etcd's, documented there. Errors come back as Status with the
// domain codes of base/status.h (kCompacted with the compact revision as
// detail, kFutureRevision, kNotFound for a missing lease, kNoSpace, kTooLarge,
// kUnavailable when no endpoint answers, kDeadlineExceeded, ...), and the
// message is etcd's text (e.g. "etcdserver: mvcc: required revision has been
// compacted").
//
// Writes are linearizable; a Range is linearizable unless
// `serializable` is set. A remote implementation retries a request on another
// endpoint only when it is safe (reads, and writes that provably did not
// reach a server); it never silently duplicates a write.
//
// Thread-safety: all methods may be called concurrently from many threads.
#ifndef KPLANE_STORAGE_KV_H_
#define KPLANE_STORAGE_KV_H_

#include <functional>
#include <memory>

#include "base/statusor.h"
#include "schemas/rpc.pb.h"

namespace kplane::storage {

// A live watch. Destroying it cancels the watch; after the destructor
// returns the callback is never called again.
class Watch {
 public:
  virtual ~Watch() = default;
  // Asks the store for a progress notification: a response with no events,
  // not `created`, carrying the store's revision in header.revision.
  virtual void RequestProgress() = 0;
  // Whether that notification comes after every event up to its revision
  // (ours always; then "progress at R" means "caught up to R"). etcd 3.4.23
  // answers at once, ahead of events its watcher has not sent yet (a
  // replay from an old revision goes out on the next sync, 100 ms later)
  // and of events queued for sending (etcd-io/etcd#15220, fixed in 3.4.31
  // and 3.5.13); etcd's JSON gateway answers on a side stream. Callers
  // must not take such an answer for "caught up" (kube-apiserver likewise
  // stops using progress requests against those versions). Known once
  // StartWatch has returned; may change when the watch moves to another
  // member.
  virtual bool ProgressOrdered() const = 0;
};

// The initial metadata of our member's gRPC Watch calls (value "1"): its
// progress answers are ordered. GrpcKV reads ProgressOrdered() from it;
// etcd sends none.
inline constexpr char kOrderedProgressMetadata[] = "kplane-progress-ordered";

// Receives watch responses, in revision order, one call at a time, on a
// thread owned by the implementation. A response with `canceled` set is the
// last one (e.g. compact_revision > 0: the start revision was compacted).
// A response with `created` set and no events opens the stream.
//
// A remote implementation resumes a broken stream on another endpoint from
// the revision after the last one delivered, so the callback sees no gap, no
// duplicate and no reordering across a store leader change. If even that is
// impossible (compacted meanwhile), it delivers a canceled response with
// compact_revision set.
using WatchCallback = std::function<void(const etcdserverpb::WatchResponse&)>;

class KV {
 public:
  virtual ~KV() = default;

  virtual StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req) = 0;
  virtual StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& req) = 0;
  virtual StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& req) = 0;
  virtual StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& req) = 0;
  virtual StatusOr<etcdserverpb::CompactionResponse> Compact(
      const etcdserverpb::CompactionRequest& req) = 0;

  virtual StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      const etcdserverpb::LeaseGrantRequest& req) = 0;
  virtual StatusOr<etcdserverpb::LeaseRevokeResponse> LeaseRevoke(
      const etcdserverpb::LeaseRevokeRequest& req) = 0;
  // One keepalive round (the streaming endpoint with a single request).
  virtual StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req) = 0;
  virtual StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) = 0;
  virtual StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases(
      const etcdserverpb::LeaseLeasesRequest& req) = 0;

  // Status of the member the implementation talks to (embedded: itself).
  virtual StatusOr<etcdserverpb::StatusResponse> MemberStatus() = 0;

  // Starts a watch. The first callback is the `created` response.
  virtual StatusOr<std::unique_ptr<Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req, WatchCallback callback) = 0;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_KV_H_
