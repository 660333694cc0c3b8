// ClusterAdmin: the operator's calls on a store member: membership changes
// (member add / remove / promote / list), leadership transfer, alarms,
// defragmentation and HashKV (etcd's Cluster and Maintenance services).
//
// Membership changes go through the log as raft conf changes
// (Proposer::ProposeConfChangeAndWait) and are answered once this member
// applied them; the member list is this member's view.
//
// Ownership: borrows everything it is given; all must outlive it.
// Thread-safety: every method may be called from any thread; the blocking
// ones (membership changes, MoveLeader, Alarm changes) wait up to the
// request timeout.
// Errors: etcd's: kInvalidArgument / kFailedPrecondition / kNotFound for a
// bad request ("etcdserver: ..."), kNotLeader for MoveLeader on a follower,
// kDeadlineExceeded when the change did not apply in time, kUnavailable
// while stopped.
#ifndef KPLANE_STORAGE_SERVER_CLUSTER_ADMIN_H_
#define KPLANE_STORAGE_SERVER_CLUSTER_ADMIN_H_

#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "schemas/rpc.pb.h"
#include "storage/server/cluster.h"
#include "storage/server/local_member.h"
#include "storage/server/proposer.h"
#include "storage/server/store_applier.h"

namespace kplane::storage {

struct ClusterAdminOptions {
  // Salts the ids of members added at runtime (with the time).
  std::string initial_cluster_token;
  // How long MoveLeader waits for the new leader.
  Duration request_timeout = seconds(7);
  Clock* clock = Clock::Real();
};

class ClusterAdmin {
 public:
  ClusterAdmin(ClusterAdminOptions options, LocalMember* self,
               Membership* membership, Proposer* proposer,
               StoreApplier* applier);
  ClusterAdmin(const ClusterAdmin&) = delete;
  ClusterAdmin& operator=(const ClusterAdmin&) = delete;

  StatusOr<etcdserverpb::MemberAddResponse> MemberAdd(
      const etcdserverpb::MemberAddRequest& req);
  StatusOr<etcdserverpb::MemberRemoveResponse> MemberRemove(
      const etcdserverpb::MemberRemoveRequest& req);
  StatusOr<etcdserverpb::MemberPromoteResponse> MemberPromote(
      const etcdserverpb::MemberPromoteRequest& req);
  // Changes a member's peer URLs through the log (a ConfChangeUpdateNode,
  // as etcd's UpdateMember); its learner flag stays.
  StatusOr<etcdserverpb::MemberUpdateResponse> MemberUpdate(
      const etcdserverpb::MemberUpdateRequest& req);
  StatusOr<etcdserverpb::MemberListResponse> MemberList();
  StatusOr<etcdserverpb::MoveLeaderResponse> MoveLeader(
      const etcdserverpb::MoveLeaderRequest& req);

  // GET lists this member's active alarms; ACTIVATE / DEACTIVATE go
  // through the log.
  StatusOr<etcdserverpb::AlarmResponse> Alarm(
      const etcdserverpb::AlarmRequest& req);
  StatusOr<etcdserverpb::DefragmentResponse> Defragment();
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int64_t revision);
  // etcd's Maintenance.Hash answer: {header, hash}. etcd hashes its whole
  // backend (every bucket); kplane's hash is HashKV's at the current
  // revision (never 0: it covers the bucket name first, as etcd's does).
  StatusOr<etcdserverpb::HashResponse> Hash();

 private:
  // Whether a member other than `except` has one of these (normalised)
  // peer URLs.
  bool PeerUrlsTaken(const std::vector<std::string>& urls,
                     uint64_t except) const;

  const ClusterAdminOptions options_;
  Clock* const clock_;
  LocalMember* const self_;
  Membership* const membership_;
  Proposer* const proposer_;
  StoreApplier* const applier_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_CLUSTER_ADMIN_H_
