#include "storage/server/housekeeper.h"

#include <pthread.h>

#include "base/logging.h"

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
    {
      MutexLock l(&mu_);
      if (clock_->WaitFor(l.native(), cv_, options_.heartbeat_interval,
                          [&]() REQUIRES(mu_) { return stop_; })) {
        return;
      }
    }
    FailExpiredRequests();
    if (self_->leader_id() != 0 && !self_->published()) PublishAttributes();
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

void Housekeeper::CheckRemovedByPeers() {
  const TimePoint now = clock_->Now();
  if (self_->leader_id() != 0) {
    leaderless_since_ = TimePoint();
    return;
  }
  if (leaderless_since_ == TimePoint()) leaderless_since_ = now;
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
  for (int64_t id : applier_->store()->ExpiredLeases(500)) {
    if (in_flight.count(id)) continue;
    in_flight[id] = now + options_.request_timeout;
    storagepb::InternalRaftRequest req;
    req.mutable_lease_revoke()->set_id(id);
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
  // peer's. The hash covers only what is live at the revision, so members
  // that compacted differently still agree. A peer that has not reached the
  // revision yet answers FutureRevision and is checked next time.
  mvcc::Store* store = applier_->store();
  int64_t rev = store->CurrentRevision();
  if (rev == 0) return;
  auto mine = store->HashKV(rev);
  if (!mine.ok()) return;
  for (const auto& m : membership_->Members()) {
    if (m.id() == self_->id()) continue;
    StatusOr<etcdserverpb::HashKVResponse> theirs =
        transport_->PeerHashKV(m.id(), rev);
    if (!theirs.ok()) continue;
    if (theirs->hash() == mine->hash()) continue;
    LOG(ERROR) << "member " << IdToHex(m.id()) << " hash " << theirs->hash()
               << " at revision " << rev << " differs from the leader's "
               << mine->hash() << ": raising CORRUPT";
    storagepb::InternalRaftRequest req;
    auto* a = req.mutable_alarm();
    a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
    a->set_memberid(m.id());
    a->set_alarm(etcdserverpb::CORRUPT);
    proposer_->Propose(std::move(req), [](StatusOr<ApplyResponse>) {});
  }
}

void Housekeeper::OnLeaderChange(uint64_t leader, uint64_t term) {
  self_->NotifyLeaderChange();
  if (leader == self_->id()) {
    // A new leader restarts every lease's countdown, extended by an election
    // timeout, so a failover does not expire leases whose keepalives went to
    // the old leader (etcd's lessor Promote).
    applier_->store()->LeasePromote(options_.election_timeout);
  } else {
    applier_->store()->LeaseDemote();
  }
}

}  // namespace kplane::storage
