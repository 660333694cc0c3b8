#include "storage/server/housekeeper.h"

#include <pthread.h>

#include "base/logging.h"
#include "storage/server/auth_store.h"
#include "storage/server/corruption_check.h"

namespace kplane::storage {

Housekeeper::Housekeeper(HousekeeperOptions options, LocalMember* self,
                         Membership* membership, Proposer* proposer,
                         StoreApplier* applier, PeerTransport* transport)
    : options_(std::move(options)),
      clock_(options_.clock),
      self_(self),
      membership_(membership),
      proposer_(proposer),
      applier_(applier),
      transport_(transport) {}

Housekeeper::~Housekeeper() { Stop(); }

void Housekeeper::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Housekeeper::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Housekeeper::Loop() {
  pthread_setname_np(pthread_self(), "store-hk");
  next_corrupt_check_ = clock_->Now() + options_.election_timeout * 5;
  while (true) {
    std::optional<uint64_t> leader_change;
    {
      MutexLock l(&mu_);
      clock_->WaitFor(
          l.native(), cv_, options_.heartbeat_interval,
          [&]() REQUIRES(mu_) { return stop_ || leader_change_.has_value(); });
      if (stop_) return;
      leader_change.swap(leader_change_);
    }
    if (leader_change) ApplyLeaderChange(*leader_change);
    FailExpiredRequests();
    WatchApply();
    if (self_->leader_id() != 0 && !self_->published()) PublishAttributes();
    applier_->ProposeNoSpaceAlarmIfDue();
    TrackLeader();
    EndLeaderRequiredStreams();
    if (!self_->removed()) CheckRemovedByPeers();
    if (self_->is_leader()) {
      ExpireLeases();
      if (options_.corrupt_check_interval > Duration(0) &&
          clock_->Now() >= next_corrupt_check_) {
        CheckCorruption();
        next_corrupt_check_ = clock_->Now() + options_.corrupt_check_interval;
      }
    }
  }
}

void Housekeeper::FailExpiredRequests() {
  TimePoint now = clock_->Now();
  proposer_->FailExpired(now);
  applier_->FailExpiredReads(now);
}

void Housekeeper::TrackLeader() {
  if (self_->leader_id() != 0) {
    leaderless_since_ = TimePoint();
  } else if (leaderless_since_ == TimePoint()) {
    leaderless_since_ = clock_->Now();
  }
}

void Housekeeper::EndLeaderRequiredStreams() {
  if (options_.leader_required_streams == nullptr ||
      leaderless_since_ == TimePoint()) {
    return;
  }
  const TimePoint now = clock_->Now();
  // As etcd's monitorLeader: from three election timeouts without a leader
  // on, every look ends what is registered (new ones are refused at open
  // meanwhile, so that is only what was opened before).
  if (now - leaderless_since_ < options_.election_timeout * 3) return;
  const size_t ended = options_.leader_required_streams->EndAll();
  if (ended > 0) {
    LOG(WARNING) << "no leader for "
                 << std::chrono::duration_cast<milliseconds>(now -
                                                             leaderless_since_)
                        .count()
                 << " ms: ended " << ended
                 << " streams that require one (hasleader)";
  }
}

void Housekeeper::CheckRemovedByPeers() {
  const TimePoint now = clock_->Now();
  if (leaderless_since_ == TimePoint()) return;
  const Duration wait = options_.election_timeout * 3;
  if (now - leaderless_since_ < wait || now < next_removed_check_) return;
  next_removed_check_ = now + wait;
  for (const storagepb::MemberRecord& m : membership_->Members()) {
    if (m.id() == self_->id()) continue;
    StatusOr<storagepb::ClusterRecord> rec = transport_->PeerMembership(m.id());
    if (!rec.ok() || rec->cluster_id() != self_->cluster_id()) continue;
    for (uint64_t id : rec->removed()) {
      if (id == self_->id()) {
        self_->MarkRemoved("member " + IdToHex(m.id()) +
                           " lists it as removed");
        return;
      }
    }
  }
}

void Housekeeper::ExpireLeases() {
  // At most one revoke per lease in flight; the lessor keeps reporting an
  // expired lease until its revoke is applied.
  auto& in_flight = revokes_in_flight_;
  TimePoint now = clock_->Now();
  for (auto it = in_flight.begin(); it != in_flight.end();) {
    it = it->second <= now ? in_flight.erase(it) : std::next(it);
  }
  std::vector<int64_t> expired;
  {
    StoreRef store = applier_->store();
    if (!store) return;
    expired = store->ExpiredLeases(500);
  }
  for (int64_t id : expired) {
    if (in_flight.count(id)) continue;
    in_flight[id] = now + options_.request_timeout;
    storagepb::InternalRaftRequest req;
    req.mutable_lease_revoke()->set_id(id);
    // As root (etcd's revokeExpiredLeases uses AuthStore.WithRoot): with
    // auth on, a revoke needs write permission on the lease's keys, and an
    // anonymous one was refused at apply, so the lease never expired.
    req.set_user(std::string(kRootUser));
    proposer_->Propose(std::move(req), [id](StatusOr<ApplyResponse> r) {
      if (!r.ok() && !r.status().Is(StatusCode::kNotFound)) {
        LOG(WARNING) << "revoking expired lease " << id << ": " << r.status();
      }
    });
  }
}

void Housekeeper::PublishAttributes() {
  if (clock_->Now() < next_publish_) return;
  next_publish_ = clock_->Now() + options_.request_timeout;
  storagepb::InternalRaftRequest req;
  auto* a = req.mutable_member_attributes();
  a->set_member_id(self_->id());
  a->set_name(options_.name);
  for (const auto& u : options_.client_urls) a->add_client_urls(u);
  LocalMember* self = self_;
  proposer_->Propose(std::move(req), [self](StatusOr<ApplyResponse> r) {
    if (r.ok()) self->MarkPublished();
  });
}

void Housekeeper::CheckCorruption() {
  // Compare the hash of every live key-value at one revision with each
  // peer's (corruption_check.h). A peer that has not reached the revision
  // yet answers FutureRevision and is checked next time.
  int64_t rev = 0;
  StatusOr<etcdserverpb::HashKVResponse> mine =
      UnavailableError("etcdserver: no store");
  {
    StoreRef store = applier_->store();
    if (!store) return;
    rev = store->CurrentRevision();
    if (rev == 0) return;
    mine = store->HashKV(rev);
  }
  if (!mine.ok()) return;
  std::vector<storagepb::MemberRecord> members = membership_->Members();
  std::vector<MemberHash> others;
  for (const auto& m : members) {
    if (m.id() == self_->id()) continue;
    others.push_back({m.id(), transport_->PeerHashKV(m.id(), rev)});
  }
  HashVerdict v =
      JudgeHashes(self_->id(), mine->hash(), others, members.size());
  if (v.consistent) return;
  LOG(ERROR) << "corruption check: the members' hashes at revision " << rev
             << " differ (" << v.detail << ")";
  std::vector<etcdserverpb::AlarmMember> active = membership_->Alarms();
  for (uint64_t id : v.corrupt) {
    bool raised = false;
    for (const auto& a : active) {
      raised |= a.alarm() == etcdserverpb::CORRUPT && a.memberid() == id;
    }
    if (raised) continue;
    LOG(ERROR) << "raising CORRUPT for "
               << (id == 0 ? std::string("the cluster (no quorum agrees)")
                           : "member " + IdToHex(id));
    storagepb::InternalRaftRequest req;
    auto* a = req.mutable_alarm();
    a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
    a->set_memberid(id);
    a->set_alarm(etcdserverpb::CORRUPT);
    proposer_->Propose(std::move(req), [](StatusOr<ApplyResponse>) {});
  }
}

void Housekeeper::WatchApply() {
  // Whether the apply is stuck behind the commit index: it stayed behind
  // without moving for a whole request timeout.
  RaftNode* node = self_->node();
  const uint64_t commit = node ? node->commit_index() : 0;
  const uint64_t applied = applier_->applied_index();
  const TimePoint now = clock_->Now();
  if (applied >= commit || applied != last_applied_) {
    last_applied_ = applied;
    behind_since_ = applied >= commit ? TimePoint() : now;
    apply_stalled_ = false;
    return;
  }
  if (behind_since_ == TimePoint()) behind_since_ = now;
  apply_stalled_ = now - behind_since_ >= options_.request_timeout;
}

void Housekeeper::OnLeaderChange(uint64_t leader, uint64_t term) {
  self_->NotifyLeaderChange();
  // The lessor is told on the housekeeping thread: the store may be in the
  // middle of a snapshot install, which the node loop must not wait for.
  {
    MutexLock l(&mu_);
    leader_change_ = leader;
  }
  cv_.notify_all();
}

void Housekeeper::ApplyLeaderChange(uint64_t leader) {
  StoreRef store = applier_->store();
  if (!store) return;
  if (leader == self_->id()) {
    // A new leader restarts every lease's countdown, extended by an election
    // timeout, so a failover does not expire leases whose keepalives went to
    // the old leader (etcd's lessor Promote).
    store->LeasePromote(options_.election_timeout);
  } else {
    store->LeaseDemote();
  }
}

}  // namespace kplane::storage
