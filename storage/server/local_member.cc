#include "storage/server/local_member.h"

#include <optional>

#include "base/logging.h"

namespace kplane::storage {

LocalMember::LocalMember(uint64_t id, const Membership* membership,
                         Clock* clock)
    : id_(id), membership_(membership), clock_(clock) {}

void LocalMember::AttachNode(RaftNode* node) {
  node_.store(node, std::memory_order_release);
}

uint64_t LocalMember::leader_id() const {
  RaftNode* n = node();
  return n ? n->leader() : 0;
}

bool LocalMember::is_leader() const {
  RaftNode* n = node();
  return n && n->is_leader();
}

uint64_t LocalMember::term() const {
  RaftNode* n = node();
  return n ? n->term() : 0;
}

void LocalMember::FillHeader(etcdserverpb::ResponseHeader* h) const {
  h->set_cluster_id(membership_->cluster_id());
  h->set_member_id(id_);
  h->set_raft_term(term());
}

bool LocalMember::is_learner() const {
  if (known_voter_.load(std::memory_order_relaxed)) return false;
  std::optional<storagepb::MemberRecord> me = membership_->Find(id_);
  if (!me) return false;  // etcd: only a member of the cluster is refused
  if (!me->is_learner()) {
    known_voter_.store(true, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void LocalMember::NotifyLeaderChange() {
  { MutexLock l(&mu_); }
  cv_.notify_all();
}

bool LocalMember::WaitForLeaderMatching(
    const std::function<bool(uint64_t)>& pred, Duration timeout) {
  MutexLock l(&mu_);
  return clock_->WaitFor(l.native(), cv_, timeout,
                         [&] { return pred(leader_id()); });
}

void LocalMember::MarkPublished() {
  published_ = true;
  { MutexLock l(&mu_); }
  cv_.notify_all();
}

bool LocalMember::WaitPublished(Duration timeout) {
  MutexLock l(&mu_);
  return clock_->WaitFor(l.native(), cv_, timeout,
                         [&] { return published_.load(); });
}

void LocalMember::MarkRemoved(const std::string& how) {
  if (removed_.exchange(true)) return;
  LOG(WARNING) << "member " << IdToHex(id_) << " (" << how
               << "): the member has been permanently removed from the "
                  "cluster; its data directory must be removed before the "
                  "host can join again as a new member";
}

void LocalMember::MarkFailed(const Status& why) {
  {
    MutexLock l(&mu_);
    if (!failure_.ok()) return;
    failure_ = why;
  }
  failed_ = true;
  LOG(ERROR) << "member " << IdToHex(id_) << " failed: " << why
             << ". It stops: what reached the disk is unknown after a failed "
                "write, so it must not go on as if it had written it";
  cv_.notify_all();
}

Status LocalMember::failure() const {
  MutexLock l(&mu_);
  return failure_;
}

}  // namespace kplane::storage
