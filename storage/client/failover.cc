#include "storage/client/failover.h"

#include <string>
#include <vector>

#include "base/logging.h"

namespace kplane::storage {

bool IsRetriableServerError(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kNotLeader:
    case StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

// kplane store: the raft core dropped the proposal for want of a leader;
// etcd: the same as "raft proposal dropped", or its leader check before
// processing; both, on a learner: the call refused before it reached raft
// (kLearnerRefusal). Matched on the text: the codes (kUnavailable,
// kNotLeader) are shared with answers that can come after the proposal was
// logged ("request timed out", "leader changed", "server stopped").
bool IsRefusedBeforeProposal(const Status& s) {
  const std::string& m = s.message();
  return m == "etcdserver: no leader" || m == "etcdserver: not leader" ||
         m == kLearnerRefusal ||
         m.find("raft proposal dropped") != std::string::npos;
}

FailureAction ClassifyFailure(CallKind kind, const Attempt& a) {
  if (a.transport) {
    if (a.unsent || kind == CallKind::kRead) return FailureAction::kTryNext;
    // The request may have reached the server: never resend a write.
    return FailureAction::kMayHaveApplied;
  }
  if (kind == CallKind::kRead && IsRetriableServerError(a.status)) {
    return FailureAction::kTryNext;
  }
  if (kind == CallKind::kWrite && IsRefusedBeforeProposal(a.status)) {
    return FailureAction::kTryNext;
  }
  return FailureAction::kAnswer;
}

Status MayHaveAppliedError(std::string_view what, const Endpoint& endpoint,
                           const Status& s) {
  return Status(
      s.code() == StatusCode::kDeadlineExceeded ? s.code()
                                                : StatusCode::kUnavailable,
      std::string(what) + " to " + endpoint.host_port +
          " failed: " + s.message() + " (the write may have been applied)");
}

Status NoEndpointAnswered(std::string_view what, const Status& last,
                          bool last_transport) {
  if (!last_transport) return last;
  StatusCode code = last.code() == StatusCode::kDeadlineExceeded
                        ? last.code()
                        : StatusCode::kUnavailable;
  return Status(code, std::string(what) + ": no endpoint answered (last: " +
                          last.message() + ")");
}

etcdserverpb::WatchCreateRequest WatchResumer::NextCreateRequest() const {
  etcdserverpb::WatchCreateRequest req = req_;
  if (created_) req.set_start_revision(next_rev_);
  return req;
}

// etcd's rpctypes texts for a caller without the right (a member's
// cancel_reason is the gRPC error's text: "rpc error: code = ... desc = "
// and one of these).
bool IsIdentityRefusal(std::string_view reason) {
  for (std::string_view t :
       {"etcdserver: permission denied", "etcdserver: user name is empty",
        "etcdserver: invalid auth token"}) {
    if (reason.find(t) != std::string_view::npos) return true;
  }
  return false;
}

WatchResumer::Step WatchResumer::OnResponse(etcdserverpb::WatchResponse* resp) {
  Step step;
  if (resp->created()) {
    step.stream_created = true;
    if (!created_) {
      next_rev_ = req_.start_revision() > 0 ? req_.start_revision()
                                            : resp->header().revision() + 1;
      created_ = true;
      step.deliver = true;
      step.first_created = true;
      // The server refused the watch (etcd answers created + canceled).
      if (resp->canceled()) finished_ = true;
    } else if (resp->canceled()) {
      // Re-creating failed. A compacted start revision is final.
      if (resp->compact_revision() > 0) {
        step.deliver = true;
        finished_ = true;
        return step;
      }
      // Refused for the caller's identity: kPermissionDenied with the
      // member's words, which WatchState::RunStreams hands on if every
      // member says so.
      step.resume =
          IsIdentityRefusal(resp->cancel_reason())
              ? Status(StatusCode::kPermissionDenied, resp->cancel_reason())
              : UnavailableError("watch re-creation canceled: " +
                                 resp->cancel_reason());
      return step;
    }
    // A re-created stream's `created` is swallowed. It starts at an open
    // fragmented revision's first event.
    skip_open_ = open_delivered_;
    step.progressed = true;
    return step;
  }
  if (resp->canceled()) {
    if (resp->compact_revision() > 0) {
      step.deliver = true;
      finished_ = true;
      return step;
    }
    // Canceled by the member for another reason (it lost its leader, ...):
    // resume elsewhere.
    step.resume = UnavailableError("watch canceled by the server: " +
                                   resp->cancel_reason());
    return step;
  }
  step.progressed = true;
  if (resp->events_size() == 0) {
    step.deliver = true;  // a progress notification
    return step;
  }
  // Drop events already delivered before a reconnect: those below the
  // resume point, and those of an open fragmented revision delivered from
  // the stream before.
  int keep_from = 0;
  while (keep_from < resp->events_size()) {
    const int64_t rev = resp->events(keep_from).kv().mod_revision();
    if (rev < next_rev_) {
      ++keep_from;
    } else if (rev == open_rev_ && skip_open_ > 0) {
      --skip_open_;
      ++keep_from;
    } else {
      break;
    }
  }
  if (keep_from == resp->events_size()) return step;
  if (keep_from > 0) resp->mutable_events()->DeleteSubrange(0, keep_from);
  skip_open_ = 0;
  const int64_t last =
      resp->events(resp->events_size() - 1).kv().mod_revision();
  if (resp->fragment()) {
    // More of `last` follows: resume from it, not after it.
    if (last != open_rev_) {
      open_rev_ = last;
      open_delivered_ = 0;
    }
    for (const mvccpb::Event& e : resp->events()) {
      if (e.kv().mod_revision() == last) ++open_delivered_;
    }
    next_rev_ = last;
  } else {
    open_rev_ = 0;
    open_delivered_ = 0;
    next_rev_ = last + 1;
  }
  step.deliver = true;
  return step;
}

bool WatchState::Stopping() {
  MutexLock l(&mu);
  return stop;
}

void WatchState::FinishStart(Status s) {
  MutexLock l(&mu);
  if (start_done) return;
  start_done = true;
  start_status = std::move(s);
  cv.notify_all();
}

Status WatchState::WaitStarted() {
  MutexLock l(&mu);
  cv.wait(l.native(), [&]() REQUIRES(mu) { return start_done; });
  return start_status;
}

bool WatchState::Deliver(etcdserverpb::WatchResponse& resp) {
  MutexLock d(&deliver_mu);
  if (Stopping()) return false;
  if (resp.events_size() > 0) {
    max_delivered_rev =
        std::max(max_delivered_rev,
                 resp.events(resp.events_size() - 1).kv().mod_revision());
  } else if (!resp.created() && !resp.canceled()) {
    int64_t rev = std::max(resp.header().revision(), max_delivered_rev);
    resp.mutable_header()->set_revision(rev);
    max_delivered_rev = rev;
  }
  callback(resp);
  return true;
}

Status WatchState::HandleResponse(etcdserverpb::WatchResponse& resp,
                                  bool* progressed,
                                  const std::function<void()>& ask_progress) {
  WatchResumer::Step step = resumer.OnResponse(&resp);
  bool ask = false;
  if (step.stream_created) {
    MutexLock l(&mu);
    ask = progress.StreamCreated();
  }
  RETURN_IF_ERROR(step.resume);
  if (step.deliver) {
    bool delivered = Deliver(resp);
    if (step.first_created) {
      // StartWatch returns once the `created` callback has run, so the
      // caller always sees it first.
      FinishStart(Status::Ok());
      if (!delivered) return CancelledError("watch stopped");
    }
  }
  if (step.progressed) {
    *progressed = true;
    if (ask) ask_progress();
  }
  return Status::Ok();
}

void WatchState::RunStreams(
    const FailoverTiming& timing, const std::vector<Endpoint>& endpoints,
    size_t first, const std::function<bool(const Status&)>& retriable_at_start,
    const std::function<Status(size_t, bool*)>& run_stream) {
  Clock* clock = timing.clock;
  const size_t n = endpoints.size();
  const TimePoint start_deadline = clock->Now() + timing.call_timeout;
  size_t ep = first;
  size_t failures_in_round = 0;
  // The endpoints that refused the caller's identity since the watch last
  // moved on.
  std::vector<bool> refused_identity(n, false);
  size_t identity_refusals = 0;
  Duration backoff = timing.retry_backoff;
  while (!Stopping()) {
    bool progressed = false;
    Status s = run_stream(ep, &progressed);
    if (resumer.finished() || Stopping()) break;
    if (!resumer.created()) {
      // Still creating the watch: a server's refusal is final.
      if (!retriable_at_start(s)) {
        FinishStart(s);
        break;
      }
      if (clock->Now() >= start_deadline) {
        FinishStart(Status(StatusCode::kUnavailable,
                           "watch: no endpoint accepted the watch (last: " +
                               s.message() + ")"));
        break;
      }
    } else {
      LOG(INFO) << "watch stream to " << endpoints[ep].host_port << " ended ("
                << s << "); resuming from revision " << resumer.next_rev();
    }
    if (progressed) {
      failures_in_round = 0;
      refused_identity.assign(n, false);
      identity_refusals = 0;
      backoff = timing.retry_backoff;
    }
    if (resumer.created() && (s.code() == StatusCode::kPermissionDenied ||
                              s.code() == StatusCode::kUnauthenticated)) {
      // The token (or certificate user) the watch presents is no longer
      // good -- expired, its user changed or deleted, the permission
      // revoked. Retrying it forever would leave the caller waiting for
      // events that never come; once every member has said so, end the
      // watch the way clientv3 ends one whose re-creation is canceled: a
      // canceled response with the member's reason.
      if (!refused_identity[ep]) {
        refused_identity[ep] = true;
        ++identity_refusals;
      }
      if (identity_refusals == n) {
        etcdserverpb::WatchResponse canceled;
        canceled.set_canceled(true);
        canceled.set_cancel_reason(s.message());
        Deliver(canceled);
        break;
      }
    }
    ep = (ep + 1) % n;
    if (++failures_in_round >= n) {
      failures_in_round = 0;
      MutexLock l(&mu);
      clock->WaitFor(l.native(), cv, backoff,
                     [&]() REQUIRES(mu) { return stop; });
      backoff = std::min<Duration>(backoff * 2, timing.max_retry_backoff);
    }
  }
  FinishStart(Status(StatusCode::kCancelled, "watch stopped"));
}

}  // namespace kplane::storage
