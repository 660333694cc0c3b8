// The seam between a store member and its peer network, in both directions
// (etcd's rafthttp: the Transporter a server drives, and the Raft interface
// the transport drives in turn):
//
//   PeerTransport  member -> network: send raft messages, track peers, ask
//                  a peer for its HashKV, its membership or (the leader)
//                  a lease's time to live or a learner's promotion.
//   PeerHandler    network -> member: what arrived (raft messages, a
//                  snapshot), what failed (unreachable peer, snapshot
//                  outcome), and the few questions the peer port answers
//                  (identity, removed members, HashKV, membership, a
//                  lease's time to live and a promotion when leader).
//
// StoreServer implements PeerHandler and drives a PeerTransport;
// HttpPeerTransport (peer_transport.h) implements PeerTransport and knows
// the member only through PeerHandler. Tests put an in-process transport
// (store_server_test.cc) or a fake handler (peer_transport_test.cc) on
// either side.
//
// Thread-safety: every method of both interfaces may be called from any
// thread, concurrently.
#ifndef KPLANE_STORAGE_SERVER_PEER_H_
#define KPLANE_STORAGE_SERVER_PEER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "schemas/rpc.pb.h"
#include "schemas/storage.pb.h"
#include "storage/raft/raw_node.h"
#include "storage/server/raft_node.h"

namespace kplane::storage {

// Reaches the other members. Implementations never block the caller of
// Send (a message that cannot go is dropped: raft retransmits).
class PeerTransport : public Transport {
 public:
  virtual void AddPeer(uint64_t id, const std::vector<std::string>& urls) = 0;
  virtual void RemovePeer(uint64_t id) = 0;
  // Asks a peer for its HashKV at `revision` (consistency checks). May block
  // for up to a request timeout; called from the housekeeping thread.
  virtual StatusOr<etcdserverpb::HashKVResponse> PeerHashKV(uint64_t id,
                                                            int64_t revision) {
    return UnimplementedError("transport cannot reach peers");
  }
  // Asks a peer for its membership record (a removed member that never
  // applied its own removal learns of it this way). May block for up to a
  // few seconds; called from the housekeeping thread.
  virtual StatusOr<storagepb::ClusterRecord> PeerMembership(uint64_t id) {
    return UnimplementedError("transport cannot reach peers");
  }
  // Asks peer `id`, the leader as far as the caller knows, for a lease's
  // time to live (only the leader's lessor counts down; etcd's followers
  // ask it over /leases/internal the same way). The peer's answer or its
  // error (NotLeader when it is not); Unavailable
  // when it cannot be reached. Blocks for up to `timeout`; called from a
  // client request's worker.
  virtual StatusOr<etcdserverpb::LeaseTimeToLiveResponse> PeerLeaseTimeToLive(
      uint64_t id, const etcdserverpb::LeaseTimeToLiveRequest& req,
      Duration timeout) {
    return UnimplementedError("transport cannot reach peers");
  }
  // Asks peer `id`, the leader as far as the caller knows, to promote a
  // learner (only the leader knows whether the learner has caught up;
  // etcd's follower forwards a promote to /members/promote the same way).
  // Errors as PeerLeaseTimeToLive's.
  virtual StatusOr<etcdserverpb::MemberPromoteResponse> PeerMemberPromote(
      uint64_t id, const etcdserverpb::MemberPromoteRequest& req,
      Duration timeout) {
    return UnimplementedError("transport cannot reach peers");
  }
};

// The member as its peer transport sees it. The transport may call any
// method before the member has started its node loop (messages are then
// dropped and reports ignored) and after it stopped.
class PeerHandler {
 public:
  virtual ~PeerHandler() = default;

  // Identity: stamped on outgoing requests, checked on incoming ones.
  virtual uint64_t cluster_id() const = 0;
  virtual uint64_t member_id() const = 0;
  // Whether member `id` was removed from the cluster (its traffic is
  // refused: a removed member must not disturb the others).
  virtual bool IsRemovedMember(uint64_t id) const = 0;
  // Whether `id` is in the current membership (voter or learner). Raft
  // traffic from anyone else is refused: only members talk raft.
  virtual bool IsMember(uint64_t id) const = 0;
  // The current membership record as a joining or cut-off member may learn
  // it: without the users and roles (Membership::RecordForJoiners).
  virtual storagepb::ClusterRecord RecordForJoiners() const = 0;

  // Raft messages that arrived from peers, in arrival order. Runs on a
  // network I/O thread: it queues them and never blocks.
  virtual void Process(std::vector<raftpb::Message> msgs) = 0;
  // The transport could not deliver to `id`: raft probes instead of
  // streaming to it.
  virtual void ReportUnreachable(uint64_t id) = 0;
  // The outcome of sending a MsgSnap to `id`.
  virtual void ReportSnapshot(uint64_t id, raft::SnapshotStatus status) = 0;

  // Snapshots. A directory where the transport may stage snapshot copies,
  // outgoing and incoming; on the file system of the member's data, so a
  // received snapshot can be renamed into place.
  virtual std::string SnapshotStagingDir() const = 0;
  // Writes a consistent copy of the member's state into `dir` (created)
  // and returns the raft metadata that describes exactly that copy; the
  // transport sends it in place of the MsgSnap's own metadata.
  virtual StatusOr<raftpb::SnapshotMetadata> SnapshotTo(
      const std::string& dir) = 0;
  // A MsgSnap whose files arrived, complete and durable, in `received_dir`
  // (inside SnapshotStagingDir()): the member takes the directory over and
  // steps the message in.
  virtual Status ReceiveSnapshot(const std::string& received_dir,
                                 raftpb::Message msg) = 0;

  // The hash of the member's key space at `revision` (GET /raft/hashkv).
  virtual StatusOr<etcdserverpb::HashKVResponse> HashKV(int64_t revision) = 0;
  // A lease's time to live from this member's lessor, if it is the leader
  // (POST /raft/leasettl), straight from its lessor; NotLeader otherwise.
  virtual StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaderLeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) = 0;
  // Promotes a learner if this member is the leader (POST /raft/promote),
  // with the leader's checks (the learner has caught up); NotLeader
  // otherwise. Blocks until the promotion applies or the request timeout.
  virtual StatusOr<etcdserverpb::MemberPromoteResponse> LeaderMemberPromote(
      const etcdserverpb::MemberPromoteRequest& req) = 0;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_PEER_H_
