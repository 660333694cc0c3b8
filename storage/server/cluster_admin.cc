#include "storage/server/cluster_admin.h"

#include <algorithm>
#include <chrono>

namespace kplane::storage {

ClusterAdmin::ClusterAdmin(ClusterAdminOptions options, LocalMember* self,
                           Membership* membership, Proposer* proposer,
                           StoreApplier* applier)
    : options_(std::move(options)),
      clock_(options_.clock),
      self_(self),
      membership_(membership),
      proposer_(proposer),
      applier_(applier) {}

bool ClusterAdmin::PeerUrlsTaken(const std::vector<std::string>& urls,
                                 uint64_t except) const {
  for (const auto& m : membership_->Members()) {
    if (m.id() == except) continue;
    for (const auto& u : m.peer_urls()) {
      StatusOr<std::string> n = NormalizeMemberUrl(u);
      const std::string& have = n.ok() ? *n : u;
      if (std::find(urls.begin(), urls.end(), have) != urls.end()) return true;
    }
  }
  return false;
}

StatusOr<etcdserverpb::MemberAddResponse> ClusterAdmin::MemberAdd(
    const etcdserverpb::MemberAddRequest& req) {
  // etcd's types.NewURLs: parsed, normalised, sorted.
  ASSIGN_OR_RETURN(std::vector<std::string> urls,
                   NormalizeMemberUrls(req.peerurls()));
  std::sort(urls.begin(), urls.end());
  if (PeerUrlsTaken(urls, 0)) {
    return FailedPreconditionError("etcdserver: Peer URLs already exists");
  }
  // etcd's mayAddMember (--strict-reconfig-check, IsReadyToAddVotingMember):
  // a new voter must leave a quorum of started voters (started: published
  // its name), or the cluster would stop at the next failure -- or at
  // once, when the new member never starts. A second member for a
  // one-member cluster is let in (how a cluster is restored from one).
  if (!req.islearner()) {
    int voters = 1, started = 0;
    for (const auto& member : membership_->Members()) {
      if (member.is_learner()) continue;
      ++voters;
      if (!member.name().empty()) ++started;
    }
    if (!(started == 1 && voters == 2) && started < voters / 2 + 1) {
      return FailedPreconditionError(
          "etcdserver: re-configuration failed due to not enough started "
          "members");
    }
  }
  storagepb::MemberRecord m;
  m.set_id(ComputeMemberId(urls, options_.initial_cluster_token,
                           std::chrono::duration_cast<nanoseconds>(
                               clock_->WallNow().time_since_epoch())
                               .count()));
  for (const auto& u : urls) m.add_peer_urls(u);
  m.set_is_learner(req.islearner());
  raftpb::ConfChange cc;
  cc.set_type(req.islearner() ? raftpb::ConfChangeAddLearnerNode
                              : raftpb::ConfChangeAddNode);
  cc.set_node_id(m.id());
  cc.set_context(m.SerializeAsString());
  RETURN_IF_ERROR(proposer_->ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberAddResponse resp;
  self_->FillHeader(resp.mutable_header());
  auto* added = resp.mutable_member();
  added->set_id(m.id());
  for (const auto& u : m.peer_urls()) added->add_peerurls(u);
  added->set_islearner(m.is_learner());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberRemoveResponse> ClusterAdmin::MemberRemove(
    const etcdserverpb::MemberRemoveRequest& req) {
  auto target = membership_->Find(req.id());
  if (!target) return NotFoundError("etcdserver: member not found");
  // etcd's mayRemoveMember (IsReadyToRemoveVotingMember): the voters left
  // must hold a quorum of started members (a started member has published
  // its name). Removing the only voter is thus refused at once; the raft
  // core would refuse that change anyway and the request would wait for
  // nothing.
  if (!target->is_learner()) {
    int left = 0, started = 0;
    for (const auto& m : membership_->Members()) {
      if (m.is_learner() || m.id() == req.id()) continue;
      ++left;
      if (!m.name().empty()) ++started;
    }
    if (started < left / 2 + 1) {
      return FailedPreconditionError(
          "etcdserver: re-configuration failed due to not enough started "
          "members");
    }
  }
  raftpb::ConfChange cc;
  cc.set_type(raftpb::ConfChangeRemoveNode);
  cc.set_node_id(req.id());
  RETURN_IF_ERROR(proposer_->ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberRemoveResponse resp;
  self_->FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberPromoteResponse> ClusterAdmin::MemberPromote(
    const etcdserverpb::MemberPromoteRequest& req) {
  auto m = membership_->Find(req.id());
  if (!m) return NotFoundError("etcdserver: member not found");
  if (!m->is_learner()) {
    return FailedPreconditionError(
        "etcdserver: can only promote a learner member");
  }
  // etcd's isLearnerReady: only the leader knows the learner's progress
  // (StoreServer::MemberPromote forwards a follower's request to it). A
  // promote proposed while leadership moves is checked again by the new
  // leader's node loop, which drops it if the learner lags
  // (RaftNode::PromotesALaggingLearner).
  if (RaftNode* node = self_->node(); node != nullptr && self_->is_leader()) {
    Status ready = node->LearnerReady(req.id());
    if (ready.Is(StatusCode::kFailedPrecondition)) return ready;
  }
  raftpb::ConfChange cc;
  cc.set_type(raftpb::ConfChangeAddNode);
  cc.set_node_id(req.id());
  cc.set_context(m->SerializeAsString());
  RETURN_IF_ERROR(proposer_->ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberPromoteResponse resp;
  self_->FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberUpdateResponse> ClusterAdmin::MemberUpdate(
    const etcdserverpb::MemberUpdateRequest& req) {
  auto m = membership_->Find(req.id());
  if (!m) return NotFoundError("etcdserver: member not found");
  // Checked as etcd's types.NewURLs does (etcd takes any list here; an
  // empty or unparsable one would cut the member off for good), kept in
  // the order given as etcd keeps it.
  ASSIGN_OR_RETURN(std::vector<std::string> urls,
                   NormalizeMemberUrls(req.peerurls()));
  // etcd's ValidateConfigurationChange: no other member may have them.
  if (PeerUrlsTaken(urls, req.id())) {
    return FailedPreconditionError("etcdserver: Peer URLs already exists");
  }
  m->clear_peer_urls();
  for (const auto& u : urls) m->add_peer_urls(u);
  raftpb::ConfChange cc;
  cc.set_type(raftpb::ConfChangeUpdateNode);
  cc.set_node_id(req.id());
  cc.set_context(m->SerializeAsString());
  RETURN_IF_ERROR(proposer_->ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberUpdateResponse resp;
  self_->FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberListResponse> ClusterAdmin::MemberList() {
  etcdserverpb::MemberListResponse resp;
  self_->FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MoveLeaderResponse> ClusterAdmin::MoveLeader(
    const etcdserverpb::MoveLeaderRequest& req) {
  RaftNode* node = self_->node();
  if (node == nullptr || !self_->is_leader()) {
    return Status(StatusCode::kNotLeader, "etcdserver: not leader",
                  static_cast<int64_t>(self_->leader_id()));
  }
  auto target = membership_->Find(req.targetid());
  if (!target) return NotFoundError("etcdserver: bad leader transferee");
  if (target->is_learner()) {
    return FailedPreconditionError("etcdserver: bad leader transferee");
  }
  node->TransferLeader(req.targetid());
  if (!self_->WaitForLeaderMatching(
          [&](uint64_t leader) { return leader == req.targetid(); },
          options_.request_timeout)) {
    return Status(StatusCode::kDeadlineExceeded,
                  "etcdserver: leadership transfer timed out");
  }
  etcdserverpb::MoveLeaderResponse resp;
  self_->FillHeader(resp.mutable_header());
  return resp;
}

StatusOr<etcdserverpb::AlarmResponse> ClusterAdmin::Alarm(
    const etcdserverpb::AlarmRequest& req) {
  // No header, as etcd's (its applier answers an empty AlarmResponse and
  // v3rpc returns it as is, over gRPC and JSON alike).
  if (req.action() == etcdserverpb::AlarmRequest::GET) {
    etcdserverpb::AlarmResponse resp;
    for (const auto& a : applier_->Alarms()) {
      if (req.alarm() == etcdserverpb::NONE || req.alarm() == a.alarm()) {
        *resp.add_alarms() = a;
      }
    }
    return resp;
  }
  StatusOr<etcdserverpb::AlarmResponse> resp =
      proposer_->ProposeAndWaitAs<etcdserverpb::AlarmResponse>(
          req, &storagepb::InternalRaftRequest::mutable_alarm);
  if (resp.ok()) resp->clear_header();
  return resp;
}

StatusOr<etcdserverpb::DefragmentResponse> ClusterAdmin::Defragment() {
  StoreRef store = applier_->store();
  if (!store) return UnavailableError("etcdserver: no store");
  RETURN_IF_ERROR(store->Defrag());
  return etcdserverpb::DefragmentResponse();
}

StatusOr<etcdserverpb::HashKVResponse> ClusterAdmin::HashKV(int64_t revision) {
  StoreRef store = applier_->store();
  if (!store) return UnavailableError("etcdserver: no store");
  ASSIGN_OR_RETURN(auto resp, store->HashKV(revision));
  self_->FillHeader(resp.mutable_header());
  return resp;
}

StatusOr<etcdserverpb::HashResponse> ClusterAdmin::Hash() {
  ASSIGN_OR_RETURN(etcdserverpb::HashKVResponse kv, HashKV(0));
  etcdserverpb::HashResponse resp;
  *resp.mutable_header() = kv.header();
  resp.set_hash(kv.hash());
  return resp;
}

}  // namespace kplane::storage
