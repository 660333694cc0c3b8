#include "storage/server/proposer.h"

#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "storage/mvcc/txn_rules.h"

namespace kplane::storage {

Proposer::Proposer(ProposerOptions options)
    : options_(std::move(options)), clock_(options_.clock) {
  auto* reg = options_.metrics;
  failed_ = reg->NewCounter("kplane_server_proposals_timed_out_total",
                            "Proposals that were not applied in time.")
                ->With({});
  pending_ = reg->NewGauge("etcd_server_proposals_pending",
                           "Proposals waiting to be applied.")
                 ->With({});
}

void Proposer::Start(RaftNode* node) {
  node_ = node;
  accepting_ = true;
}

void Proposer::Close() { accepting_ = false; }

void Proposer::FailPending() {
  std::map<uint64_t, Waiter> waiters;
  {
    MutexLock l(&mu_);
    waiters.swap(waiters_);
  }
  for (auto& [id, w] : waiters) {
    w.done(UnavailableError("etcdserver: server stopped"));
  }
}

uint64_t Proposer::NextRequestId() {
  // Unique across the cluster: 16 bits of member id, 48 bits of counter.
  // The counter is the process's, seeded from the clock (milliseconds << 8)
  // so a restarted process starts above the ids its WAL holds. It must not
  // be the Proposer's own: a member restarted within one process (tests,
  // `kplane up`) replays entries its earlier incarnation proposed, and
  // applying such an entry would answer a new proposal that reused its id
  // with the old entry's result -- a put answered by an old put, or by a
  // member-attributes entry ("unexpected apply response type"), and the
  // new entry, applied later, answered to nobody.
  static std::atomic<uint64_t> next{
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count())
      << 8};
  uint64_t n = next.fetch_add(1) + 1;
  return ((options_.member_id & 0xffff) << 48) | (n & 0xffffffffffffull);
}

void Proposer::AddWaiter(uint64_t id, ApplyCallback done) {
  MutexLock l(&mu_);
  waiters_[id] =
      Waiter{std::move(done), clock_->Now() + options_.request_timeout};
  pending_->Set(static_cast<double>(waiters_.size()));
}

ApplyCallback Proposer::Take(uint64_t id) {
  MutexLock l(&mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return nullptr;
  ApplyCallback cb = std::move(it->second.done);
  waiters_.erase(it);
  pending_->Set(static_cast<double>(waiters_.size()));
  return cb;
}

namespace {
// What a CORRUPT alarm refuses (etcd's applierV3Corrupt): the key-value and
// lease writes. Alarms (to disarm it), membership changes and member
// attributes still go through.
bool IsRefusedWhenCorrupt(const storagepb::InternalRaftRequest& req) {
  using R = storagepb::InternalRaftRequest;
  switch (req.request_case()) {
    case R::kPut:
    case R::kDeleteRange:
    case R::kTxn:
    case R::kCompaction:
    case R::kLeaseGrant:
    case R::kLeaseRevoke:
      return true;
    default:
      return false;
  }
}
// What a NOSPACE alarm refuses (etcd's applierV3Capped): what makes the
// database bigger.
bool IsRefusedWhenNoSpace(const storagepb::InternalRaftRequest& req) {
  using R = storagepb::InternalRaftRequest;
  switch (req.request_case()) {
    case R::kPut:
    case R::kLeaseGrant:
      return true;
    case R::kTxn:
      return mvcc::TxnHasPut(req.txn());
    default:
      return false;
  }
}
}  // namespace

void Proposer::Propose(storagepb::InternalRaftRequest req, ApplyCallback done) {
  if (!accepting_.load()) {
    done(UnavailableError("etcdserver: server stopped"));
    return;
  }
  if (options_.corrupt() && IsRefusedWhenCorrupt(req)) {
    done(Status(StatusCode::kCorruption, "etcdserver: corrupt cluster"));
    return;
  }
  if (options_.nospace() && IsRefusedWhenNoSpace(req)) {
    done(Status(StatusCode::kNoSpace,
                "etcdserver: mvcc: database space exceeded"));
    return;
  }
  if (req.has_txn()) {
    // Every member must be able to decode the entry (txn_rules.h): one
    // that a follower cannot parse would stop the log behind it.
    if (Status st = mvcc::CheckTxnNesting(req.txn()); !st.ok()) {
      done(std::move(st));
      return;
    }
  }
  uint64_t id = NextRequestId();
  req.set_id(id);
  req.set_proposed_at_unix_nanos(std::chrono::duration_cast<nanoseconds>(
                                     clock_->WallNow().time_since_epoch())
                                     .count());
  std::string data = req.SerializeAsString();
  if (static_cast<int64_t>(data.size()) > options_.max_request_bytes) {
    done(Status(StatusCode::kTooLarge, "etcdserver: request is too large"));
    return;
  }
  AddWaiter(id, std::move(done));
  node_->Propose(std::move(data), [this, id](Status s) {
    ApplyCallback cb = Take(id);
    if (!cb) return;
    if (s.Is(StatusCode::kNoSpace)) {
      // This member cannot write its log (a full disk): etcd's NOSPACE.
      cb(std::move(s));
      return;
    }
    std::string msg = node_->leader() == 0 ? "etcdserver: no leader"
                                           : "etcdserver: " + s.message();
    cb(Status(StatusCode::kUnavailable, msg));
  });
}

StatusOr<ApplyResponse> Proposer::ProposeAndWait(
    storagepb::InternalRaftRequest req) {
  auto p = std::make_shared<std::promise<StatusOr<ApplyResponse>>>();
  auto f = p->get_future();
  Propose(std::move(req),
          [p](StatusOr<ApplyResponse> r) { p->set_value(std::move(r)); });
  return f.get();
}

Status Proposer::ProposeConfChangeAndWait(raftpb::ConfChange cc) {
  if (!accepting_.load()) {
    return UnavailableError("etcdserver: server stopped");
  }
  uint64_t id = NextRequestId();
  cc.set_id(id);
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  AddWaiter(id, [p](StatusOr<ApplyResponse> r) { p->set_value(r.status()); });
  node_->ProposeConfChange(std::move(cc), [this, id](Status s) {
    if (ApplyCallback cb = Take(id)) {
      cb(s.Is(StatusCode::kNoSpace)
             ? s
             : UnavailableError("etcdserver: " + s.message()));
    }
  });
  return f.get();
}

void Proposer::FailExpired(TimePoint now) {
  std::vector<ApplyCallback> expired;
  {
    MutexLock l(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second.deadline <= now) {
        expired.push_back(std::move(it->second.done));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    pending_->Set(static_cast<double>(waiters_.size()));
  }
  for (auto& cb : expired) {
    failed_->Inc();
    cb(Status(StatusCode::kDeadlineExceeded, "etcdserver: request timed out"));
  }
}

}  // namespace kplane::storage
