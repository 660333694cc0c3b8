// Proposer: puts client writes and membership changes into the raft log and
// hands each its answer when it is applied (etcd's processInternalRaftRequest
// and its wait.Wait).
//
//   proposer.Propose(req, done)
//     -> gives the request a cluster-unique id, registers `done` under it
//     -> RaftNode::Propose (group commit)
//     -> the apply thread applies the entry and calls Take(id) for `done`
//        (StoreApplier) ... or the core drops the proposal: Unavailable;
//        or the deadline passes first: DeadlineExceeded (FailExpired, run
//        by the housekeeper).
// Every `done` runs exactly once.
//
// Lifecycle: Start(node) opens it; Close() refuses new proposals
// (Unavailable) while the apply thread finishes; FailPending() then fails
// whatever still waits.
//
// Thread-safety: every method may be called from any thread.
// Errors (to `done`): kUnavailable (not started, stopped, no leader,
// dropped), kCorruption (the cluster raised a CORRUPT alarm), kNoSpace
// ("etcdserver: mvcc: database space exceeded": a NOSPACE alarm), kTooLarge
// (over max_request_bytes), kDeadlineExceeded (not applied in time), or
// the apply result's own error.
#ifndef KPLANE_STORAGE_SERVER_PROPOSER_H_
#define KPLANE_STORAGE_SERVER_PROPOSER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <variant>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "schemas/rpc.pb.h"
#include "schemas/storage.pb.h"
#include "storage/server/raft_node.h"

namespace kplane::storage {

// What applying an auth request produced: etcd's response message of its
// kind (AuthUserGetResponse, ...).
struct AuthApplied {
  std::shared_ptr<google::protobuf::Message> response;
};

// What applying one proposal produced.
using ApplyResponse = std::variant<
    std::monostate, etcdserverpb::PutResponse,
    etcdserverpb::DeleteRangeResponse, etcdserverpb::TxnResponse,
    etcdserverpb::CompactionResponse, etcdserverpb::LeaseGrantResponse,
    etcdserverpb::LeaseRevokeResponse, etcdserverpb::LeaseKeepAliveResponse,
    etcdserverpb::AlarmResponse, AuthApplied>;
using ApplyCallback = std::function<void(StatusOr<ApplyResponse>)>;

// Maps the apply result of a proposal of one kind to its response type.
template <typename T>
StatusOr<T> ResponseAs(StatusOr<ApplyResponse> r) {
  if (!r.ok()) return r.status();
  if (T* v = std::get_if<T>(&*r)) return std::move(*v);
  return InternalError("unexpected apply response type");
}

// The auth response of type T from an applied auth request.
template <typename T>
StatusOr<T> AuthResponseAs(StatusOr<ApplyResponse> r) {
  ASSIGN_OR_RETURN(AuthApplied a, ResponseAs<AuthApplied>(std::move(r)));
  if (T* v = dynamic_cast<T*>(a.response.get())) return std::move(*v);
  return InternalError("unexpected auth response type");
}

struct ProposerOptions {
  uint64_t member_id = 0;
  // A proposal not applied within this time fails.
  Duration request_timeout = seconds(7);
  int64_t max_request_bytes = 1536 * 1024;
  // True while the cluster has a CORRUPT alarm: key-value and lease writes
  // are refused (alarms, membership changes and attributes are not).
  std::function<bool()> corrupt = [] { return false; };
  // True while a NOSPACE alarm is active (a member's disk filled up): puts,
  // txns with a put and lease grants are refused, as etcd's
  // applierV3Capped (deletes, compaction, reads and alarms still go).
  std::function<bool()> nospace = [] { return false; };
  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
};

class Proposer {
 public:
  explicit Proposer(ProposerOptions options);
  Proposer(const Proposer&) = delete;
  Proposer& operator=(const Proposer&) = delete;

  // Accepts proposals from now on, for `node` (which outlives this).
  void Start(RaftNode* node);
  // Refuses new proposals. Those in flight still get their answers.
  void Close();
  // Fails every proposal still waiting with Unavailable (call once nothing
  // is applied any more). Idempotent.
  void FailPending() EXCLUDES(mu_);

  // Proposes a write; `done` runs once, on the thread that applied it (the
  // apply thread or the node loop), the node loop (dropped), the caller
  // (refused) or the housekeeping thread (timed out). Keep it short and
  // never block in it.
  void Propose(storagepb::InternalRaftRequest req, ApplyCallback done)
      EXCLUDES(mu_);
  // Propose, then wait for the answer.
  StatusOr<ApplyResponse> ProposeAndWait(storagepb::InternalRaftRequest req);
  // Proposes `request` as the `field` of an InternalRaftRequest and waits
  // for its answer as a `Response`:
  //   ProposeAndWaitAs<etcdserverpb::PutResponse>(put, &R::mutable_put)
  template <typename Response, typename Request>
  StatusOr<Response> ProposeAndWaitAs(
      const Request& request,
      Request* (storagepb::InternalRaftRequest::*field)()) {
    storagepb::InternalRaftRequest r;
    *(r.*field)() = request;
    return ResponseAs<Response>(ProposeAndWait(std::move(r)));
  }
  // Proposes a membership change and waits until it is applied.
  Status ProposeConfChangeAndWait(raftpb::ConfChange cc) EXCLUDES(mu_);

  // For the applier: removes and returns the callback waiting for request
  // `id`, or null (another member proposed it, or it timed out).
  ApplyCallback Take(uint64_t id) EXCLUDES(mu_);
  // Fails (DeadlineExceeded) the proposals whose deadline is at or before
  // `now`.
  void FailExpired(TimePoint now) EXCLUDES(mu_);

 private:
  struct Waiter {
    ApplyCallback done;
    TimePoint deadline;
  };

  uint64_t NextRequestId();
  // Registers `done` under `id` until the request timeout.
  void AddWaiter(uint64_t id, ApplyCallback done) EXCLUDES(mu_);

  const ProposerOptions options_;
  Clock* const clock_;
  // Set by Start before accepting_ turns true; never changes after.
  RaftNode* node_ = nullptr;
  std::atomic<bool> accepting_{false};

  Mutex mu_;
  std::map<uint64_t, Waiter> waiters_ GUARDED_BY(mu_);  // by request id

  metrics::Counter* failed_;
  metrics::Gauge* pending_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_PROPOSER_H_
