// The rules both store clients follow when members fail: RemoteKV (etcd's
// v3 JSON API, remote_kv.h) and GrpcKV (etcd's gRPC API, grpc_kv.h). They
// know nothing of the transport: a client turns one attempt on one endpoint
// into an Attempt, and hands each watch response to a WatchResumer.
//
// Endpoint choice and failover (WithFailover). A call goes to a preferred
// endpoint (the last one that answered). When it fails, the call moves on
// to the next endpoint, round-robin; after a full round of failures it
// backs off (retry_backoff, doubling up to max_retry_backoff) and starts
// another round, until the call's overall deadline (call_timeout) has
// passed.
//
// What is retried on another endpoint (ClassifyFailure):
//   - reads (Range, a Txn without writes, lease time-to-live/list,
//     keepalive, status, member list): any transport failure (no complete
//     answer, a per-request timeout, HTTP 5xx) and the answers whose code
//     is kUnavailable, kNotLeader or kDeadlineExceeded ("no leader", "not
//     leader", "leader changed", "request timed out");
//   - writes (Put, DeleteRange, Txn with a write, Compact, LeaseGrant,
//     LeaseRevoke, member changes): only when the write certainly was not
//     applied: the request never left (connecting failed, Attempt::unsent),
//     or the member answered that it refused the proposal before it entered
//     the raft log ("etcdserver: no leader", "etcdserver: not leader", "raft
//     proposal dropped"), or refused the call outright as a learner
//     (kLearnerRefusal: etcd 3.4's interceptors answer before the handler
//     runs; clientv3 retries it too). Any other failure of a write is
//     returned: kUnavailable / kDeadlineExceeded saying "the write may have
//     been applied", or the server's error. A write is never silently
//     applied twice.
//
// Watches (WatchResumer). A watch keeps `next_rev`, the lowest revision
// whose events have not been delivered yet:
//   - after the first `created`: start_revision, or created.header.revision
//     + 1 when the watch started "now" (start_revision 0);
//   - after a response with events: the last event's mod_revision + 1 (not
//     the header revision: a catching-up watcher's header may run ahead of
//     events still to come).
// Progress notifications do not move it: etcd 3.4 answers a progress
// request with its current revision without waiting for the watcher to
// catch up, so resuming after such a revision could skip events.
// A broken stream is re-created, on the next endpoint, with start_revision
// = next_rev and the original filters; its `created` is swallowed and any
// event below next_rev is dropped, so the callback sees each revision once
// and in order. A cancel carrying compact_revision (the resume point was
// compacted) is delivered and ends the watch; any other cancel (the member
// lost its leader, ...) abandons the stream and resumes on another member,
// except a refusal of the caller's identity (an expired token, ...) by
// every member in turn, which ends the watch canceled
// (WatchState::RunStreams). A stream that ends with an error (kUnavailable:
// the member died, or is a learner, which refuses every stream at its start
// with kLearnerRefusal) is abandoned the same way, also before the watch's
// first `created`: StartWatch moves on from a learner too.
//
// A progress request (Watch::RequestProgress) goes only to a stream whose
// `created` has arrived (WatchStreamProgress). One asked for while no
// stream takes requests (a stream is being opened or re-created, or a
// send failed because the stream was breaking) is remembered and sent on
// the next stream once its `created` arrived and the stream has moved the
// watch on (Step::progressed), so the answer cannot precede the resumed
// stream's catch-up.
//
// Example: watch "a" from now at revision 7 (next_rev 8); puts at 8, 9 are
// delivered (next_rev 10); member A dies; member B is still at 8 when the
// watch is re-created there from 10: nothing is re-sent for 8 or 9, and 10,
// 11, ... arrive as B applies them.
//
// failover_rules_test.cc pins each rule.
#ifndef KPLANE_STORAGE_CLIENT_FAILOVER_H_
#define KPLANE_STORAGE_CLIENT_FAILOVER_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "schemas/rpc.pb.h"
#include "storage/client/endpoint.h"
#include "storage/kv.h"

namespace kplane::storage {

// Whether a call may be retried on another endpoint after the request may
// have reached a server.
enum class CallKind { kRead, kWrite };

// The outcome of one attempt on one endpoint.
struct Attempt {
  Status status;
  // No complete answer arrived (as opposed to an error answer from the
  // server).
  bool transport = false;
  // With `transport`: nothing of the request left this process
  // (connecting failed), so a write may go elsewhere too.
  bool unsent = false;
};

// What a call does after a failed attempt.
enum class FailureAction {
  kTryNext,         // move on to the next endpoint
  kMayHaveApplied,  // a write that may have reached a member: return it
  kAnswer,          // the server's answer: it is the call's result
};

// The rules above. `a.status` must not be OK.
FailureAction ClassifyFailure(CallKind kind, const Attempt& a);

// Answers after which a read may be retried on another member (kUnavailable,
// kNotLeader, kDeadlineExceeded).
bool IsRetriableServerError(const Status& s);

// etcd 3.4's answer to every client call a learner does not serve (all
// but Status and a serializable Range; every stream at its start): gRPC
// UNAVAILABLE with this text, which the JSON gateway's 503 body carries as
// its message. Given before the request reaches raft.
inline constexpr std::string_view kLearnerRefusal =
    "etcdserver: rpc not supported for learner";

// The member refused a write before it entered the raft log (or, a
// learner, refused the call: kLearnerRefusal).
bool IsRefusedBeforeProposal(const Status& s);

// kUnavailable (or kDeadlineExceeded when `s` is) "<what> to <endpoint>
// failed: ... (the write may have been applied)".
Status MayHaveAppliedError(std::string_view what, const Endpoint& endpoint,
                           const Status& s);

// A call's result once its deadline passed: the last answer as is, or
// after a transport failure kUnavailable / kDeadlineExceeded "<what>: no
// endpoint answered (last: ...)".
Status NoEndpointAnswered(std::string_view what, const Status& last,
                          bool last_transport);

struct FailoverTiming {
  Clock* clock = nullptr;  // not null
  Duration call_timeout;
  Duration retry_backoff;
  Duration max_retry_backoff;
};

// Runs a unary call with the rules above. `attempt(ep, deadline)` runs it
// once on endpoints[ep] and must not run past `deadline` (the call's);
// `*preferred` is where the call starts, and becomes the endpoint that
// answered. The first attempt always runs, even with no time left.
template <typename AttemptFn>
Status WithFailover(const FailoverTiming& t,
                    const std::vector<Endpoint>& endpoints,
                    std::atomic<size_t>* preferred, std::string_view what,
                    CallKind kind, const AttemptFn& attempt) {
  Clock* clock = t.clock;
  const size_t n = endpoints.size();
  const TimePoint deadline = clock->Now() + t.call_timeout;
  Duration backoff = t.retry_backoff;
  Status last;
  bool last_transport = false;
  size_t start = preferred->load();
  for (int round = 0;; ++round) {
    for (size_t i = 0; i < n; ++i) {
      if (clock->Now() >= deadline && !(round == 0 && i == 0)) break;
      const size_t ep = (start + i) % n;
      Attempt a = attempt(ep, deadline);
      if (a.status.ok()) {
        preferred->store(ep);
        return a.status;
      }
      last = a.status;
      last_transport = a.transport;
      switch (ClassifyFailure(kind, a)) {
        case FailureAction::kTryNext:
          continue;
        case FailureAction::kMayHaveApplied:
          return MayHaveAppliedError(what, endpoints[ep], a.status);
        case FailureAction::kAnswer:
          preferred->store(ep);
          return a.status;
      }
    }
    TimePoint now = clock->Now();
    if (now >= deadline) break;
    clock->SleepFor(std::min<Duration>(backoff, deadline - now));
    backoff = std::min<Duration>(backoff * 2, t.max_retry_backoff);
    start = preferred->load();
  }
  return NoEndpointAnswered(what, last, last_transport);
}

// A watch create's cancel_reason that refuses the caller's identity (etcd's
// "permission denied", "user name is empty", "invalid auth token").
bool IsIdentityRefusal(std::string_view cancel_reason);

// One watch's resume point across its streams (the rules above). Owned by
// the thread that reads the streams; not thread-safe.
class WatchResumer {
 public:
  explicit WatchResumer(etcdserverpb::WatchCreateRequest req)
      : req_(std::move(req)) {}

  // The create request for the next stream: the original one until the
  // watch was created, then the same filters from next_rev().
  etcdserverpb::WatchCreateRequest NextCreateRequest() const;

  // What to do with one response.
  struct Step {
    // Not OK: abandon this stream and resume on another member (the
    // response is not delivered). kPermissionDenied, with the member's
    // cancel_reason as its message, when the re-creation was refused for
    // the caller's identity (IsIdentityRefusal).
    Status resume;
    // Hand the response (events below next_rev already removed) to the
    // callback.
    bool deliver = false;
    // The watch's first `created`: StartWatch may return once it has been
    // delivered.
    bool first_created = false;
    // A `created` on this stream: it now takes progress requests.
    bool stream_created = false;
    // The stream moved the watch on (a reason to reset the backoff, and to
    // send a progress request asked for while no stream was ready).
    bool progressed = false;
  };
  Step OnResponse(etcdserverpb::WatchResponse* resp);

  // The first `created` was seen.
  bool created() const { return created_; }
  // The watch has ended (a compacted resume point, or the server canceled
  // it at creation): open no further stream.
  bool finished() const { return finished_; }
  int64_t next_rev() const { return next_rev_; }

 private:
  const etcdserverpb::WatchCreateRequest req_;
  int64_t next_rev_ = 0;
  // A revision whose events came in fragments (the create request's
  // `fragment`: etcd splits a large revision over responses marked
  // fragment=true, the last one not) and whose last fragment has not come
  // yet: next_rev_ is that revision, and `open_delivered_` of its events
  // were delivered. A stream re-created from it sends them again; the
  // first `skip_open_` events of `open_rev_` are then dropped.
  int64_t open_rev_ = 0;
  int open_delivered_ = 0;
  int skip_open_ = 0;
  bool created_ = false;
  bool finished_ = false;
};

// Whether a watch's current stream takes progress requests, and whether
// one waits for the next stream (the rules above). Not thread-safe: a
// client keeps it under the lock that guards its current stream, so that
// RequestProgress (any thread) and the stream's reader agree.
class WatchStreamProgress {
 public:
  // A stream is being opened, or has ended: requests wait for its
  // `created`.
  void StreamChanged() { ready_ = false; }

  // RequestProgress: true when the request may be sent on the current
  // stream now; false when it was remembered for the next stream instead.
  bool SendNow() {
    if (!ready_) pending_ = true;
    return ready_;
  }

  // Sending on the current stream failed (it is breaking): send the
  // request on the next stream instead.
  void SendFailed() { pending_ = true; }

  // The current stream's `created` arrived: it takes requests from now
  // on. Returns whether a request was waiting (and forgets it): the caller
  // sends it once the stream has progressed (WatchResumer::Step).
  bool StreamCreated() {
    ready_ = true;
    return std::exchange(pending_, false);
  }

 private:
  bool ready_ = false;    // `created` arrived on the current stream
  bool pending_ = false;  // a request waits for the next ready stream
};

// What a client watch keeps whatever its transport (RemoteKV's JSON
// stream, GrpcKV's gRPC stream), and the steps both take with it: the
// caller's callback, run for one response at a time and never given a
// progress revision below one already delivered; StartWatch's wait for the
// first `created`; the resume rules and the progress requests' state. Each
// transport's watch state derives from it and adds its current stream.
struct WatchState {
  explicit WatchState(etcdserverpb::WatchCreateRequest req)
      : resumer(std::move(req)) {}

  WatchCallback callback;

  // Lock order: deliver_mu, then mu (Deliver checks `stop`).
  //
  // Callbacks run one at a time under this mutex.
  Mutex deliver_mu;
  int64_t max_delivered_rev GUARDED_BY(deliver_mu) = 0;

  Mutex mu ACQUIRED_AFTER(deliver_mu);
  std::condition_variable cv;
  bool stop GUARDED_BY(mu) = false;
  bool start_done GUARDED_BY(mu) = false;
  Status start_status GUARDED_BY(mu);
  WatchStreamProgress progress GUARDED_BY(mu);

  // Owned by the watch thread.
  WatchResumer resumer;

  // The watch is being destroyed.
  bool Stopping() EXCLUDES(mu);
  // Ends StartWatch's wait with `s` (only the first call counts).
  void FinishStart(Status s) EXCLUDES(mu);
  // Blocks until FinishStart; returns its status.
  Status WaitStarted() EXCLUDES(mu);
  // Calls the callback unless the watch is being destroyed (then false). A
  // progress notification never reports less than what was delivered
  // before it: its header revision is raised to that.
  bool Deliver(etcdserverpb::WatchResponse& resp) EXCLUDES(deliver_mu, mu);
  // One response read from the current stream: the resumer's verdict (not
  // OK: abandon the stream and resume elsewhere), delivery, the end of
  // StartWatch's wait at the first `created`, and a progress request that
  // waited for this stream, sent with `ask_progress` (no lock held) once
  // the stream has moved the watch on. Sets `*progressed` then.
  Status HandleResponse(etcdserverpb::WatchResponse& resp, bool* progressed,
                        const std::function<void()>& ask_progress)
      EXCLUDES(deliver_mu, mu);

  // The watch thread's loop, both transports': `run_stream(ep,
  // &progressed)` runs one stream on endpoints[ep] until it breaks
  // (calling HandleResponse for each response) and returns why it ended.
  // Starts at endpoints[first]; after each break moves to the next
  // endpoint, and after a round of n breaks without progress waits
  // `timing`'s backoff (doubling up to its maximum; reset by progress).
  //   - Before the first `created`: a failure `retriable_at_start` rejects
  //     is StartWatch's answer; so is kUnavailable once call_timeout has
  //     passed.
  //   - After it: a refusal of the caller's identity (kPermissionDenied,
  //     e.g. a re-creation canceled with IsIdentityRefusal, or a stream
  //     ended kUnauthenticated / kPermissionDenied) by every endpoint since
  //     the watch last moved on ends the watch: the callback gets a
  //     canceled response whose cancel_reason is the last refusal's text,
  //     as clientv3 ends a watch whose re-creation is canceled. Any other
  //     failure is retried for as long as the watch lives.
  // Returns when the watch is finished or stopping.
  void RunStreams(
      const FailoverTiming& timing, const std::vector<Endpoint>& endpoints,
      size_t first,
      const std::function<bool(const Status&)>& retriable_at_start,
      const std::function<Status(size_t ep, bool* progressed)>& run_stream)
      EXCLUDES(deliver_mu, mu);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_FAILOVER_H_
