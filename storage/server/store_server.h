// StoreServer: one member of kplane's replicated store (our etcd server).
//
// A thin facade: it opens the data directory (bootstrap.h), wires the rooms
// below, and serves the KV interface (embedded use, `kplane up`) and the
// calls of the client API (client_api.h) and the peer transport
// (PeerHandler, peer.h) by handing each to the room that does it:
//
//   RaftNode       the node loop: raft core + durable log (raft_node.h)
//   Proposer       writes and conf changes into the log, answers back
//   StoreApplier   the apply thread: committed entries -> MVCC store and
//                  membership; linearizable reads; consistent snapshots
//   Housekeeper    timeouts, attribute publishing, removal detection, and
//                  the leader's duties: lease expiry, corruption checks
//   ClusterAdmin   member add/remove/promote/list, move leader, alarms,
//                  defragment, HashKV
//   LocalMember    who this member is and what it knows of the leader;
//                  shared by all of the above
// Networking is outside: peers are reached through a PeerTransport (HTTP in
// peer_transport.h, or in-process in tests), which reaches back through
// PeerHandler only.
//
// Write path: ProposeAsync -> Proposer -> RaftNode (group commit) -> commit
// -> StoreApplier (the apply thread, or the node loop for a small batch
// while it is idle) applies the entry to MVCC with its index as
// consistent_index (an entry at or below the store's consistent index is
// already applied and is skipped: exactly-once after a crash) -> the
// proposer's callback.
// Read path: linearizable reads wait for a ReadIndex round and for the
// apply thread to reach that index; serializable reads go straight to MVCC.
//
// Lock order: the rooms' mutexes are leaves: none is held while another
// room is called, and callbacks (proposal answers, read continuations) run
// after their lock is released. Within a room there is one mutex each
// (Proposer::mu_, StoreApplier::mu_, Housekeeper::mu_, LocalMember::mu_);
// RaftNode's and Membership's mutexes are taken inside their own calls
// only. So no two server mutexes are ever held together.
//
// Thread-safety: every public method may be called from any thread.
#ifndef KPLANE_STORAGE_SERVER_STORE_SERVER_H_
#define KPLANE_STORAGE_SERVER_STORE_SERVER_H_

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/log_throttle.h"
#include "net/worker_pool.h"
#include "schemas/storage.pb.h"
#include "storage/kv.h"
#include "storage/mvcc/auto_compactor.h"
#include "storage/mvcc/store.h"
#include "storage/server/bootstrap.h"
#include "storage/server/cluster.h"
#include "storage/server/cluster_admin.h"
#include "storage/server/housekeeper.h"
#include "storage/server/leader_required_streams.h"
#include "storage/server/local_member.h"
#include "storage/server/peer.h"
#include "storage/server/proposer.h"
#include "storage/server/raft_log.h"
#include "storage/server/raft_node.h"
#include "storage/server/store_applier.h"
#include "storage/server/store_config.h"

namespace kplane::storage {

// etcd's rpctypes.ErrGPRCNotSupportedForLearner (gRPC code Unavailable).
inline constexpr std::string_view kNotSupportedForLearner =
    "etcdserver: rpc not supported for learner";

class StoreServer : public KV, public PeerHandler {
 public:
  // Opens (or initializes) the data directory. Nothing runs yet.
  static StatusOr<std::unique_ptr<StoreServer>> Open(StoreConfig config);
  ~StoreServer() override;

  // etcd's --experimental-initial-corrupt-check (CheckInitialHashKV), run
  // before Start: compares this member's HashKV at its current revision
  // with every peer's through `transport` (corruption_check.h) and fails
  // with kCorruption "<id> found data inconsistency with peers" unless a
  // quorum of the membership agrees with it. Peers that are down, behind
  // that revision or compacted past it are left out; with nobody to
  // compare with it passes.
  Status CheckInitialHashKV(PeerTransport* transport);
  // Starts the node loop and the apply thread. `transport` may be null for
  // a single-member cluster; it must outlive the server.
  Status Start(PeerTransport* transport);
  // Stops everything and closes the stores. Pending requests fail with
  // Unavailable. Idempotent.
  void Stop();

  uint64_t member_id() const override { return self_->id(); }
  uint64_t cluster_id() const override { return self_->cluster_id(); }
  uint64_t leader_id() const { return self_->leader_id(); }
  bool is_leader() const { return self_->is_leader(); }
  uint64_t term() const { return self_->term(); }
  uint64_t applied_index() const { return applier_->applied_index(); }
  // Whether this member is a learner now (LocalMember::is_learner).
  bool is_learner() const { return self_->is_learner(); }
  // etcd 3.4's learner rule (v3rpc's unary and stream interceptors): while
  // this member is a learner, its client API -- every gRPC service and the
  // JSON gateway, which etcd runs through the same gRPC server -- refuses
  // every call but Status and a serializable Range, and every stream
  // (Watch, LeaseKeepAlive, Snapshot, Observe), with Unavailable
  // kNotSupportedForLearner: clients go to another endpoint. The fronts ask
  // first, before auth (the JSON gateway after decoding the body, as
  // etcd's gateway decodes before its gRPC call). /health is not gRPC and
  // answers as usual. One atomic load on a voter.
  Status RefuseIfLearner() const {
    return is_learner() ? UnavailableError(kNotSupportedForLearner)
                        : Status::Ok();
  }
  // True once this member knows it was removed from the cluster: it applied
  // its own removal, or, after three election timeouts without a leader, a
  // peer's membership lists it as removed (the others no longer send it the
  // log and refuse its messages, so it may never apply the removal). It
  // serves no purpose then; `kplane store` exits (etcd stops likewise).
  bool removed() const { return self_->removed(); }
  // Non-OK once this member failed (a durable write failed: the WAL's, the
  // store's, the membership's); it serves nothing more and `kplane store`
  // exits with this error.
  Status failure() const { return self_->failure(); }
  bool failed() const { return self_->failed(); }
  // OK while this member applies the log; else why it stopped (an entry it
  // could not decode or apply: kCorruption, with the CORRUPT alarm).
  Status apply_error() const { return applier_->apply_error(); }
  Membership* membership() { return membership_.get(); }
  // Users, roles, permissions and tokens (auth_store.h).
  AuthStore* auth() { return auth_.get(); }
  // The MVCC store, pinned while the ref lives (a snapshot install waits):
  // for status, hashes, maintenance and tests. Null only after a failed
  // snapshot install left no store (the member failed then).
  StoreRef mvcc() { return applier_->store(); }
  // The store's current revision, for response headers (0 without a store).
  int64_t CurrentRevision() {
    StoreRef store = mvcc();
    return store ? store->CurrentRevision() : 0;
  }
  // The store for serving a client's read from this member: refused with
  // kCorruption "etcdserver: corrupt cluster" while this member's data is
  // suspect (a CORRUPT alarm names it, or its apply stopped), Unavailable
  // without a store.
  StatusOr<StoreRef> ReadStore();
  RaftNode* node() { return self_->node(); }
  // The watch streams opened with etcd's "hasleader" metadata: refused
  // while leader_id() is 0, ended after three election timeouts without a
  // leader (leader_required_streams.h).
  LeaderRequiredStreams* leader_required_streams() {
    return &leader_required_streams_;
  }
  const StoreConfig& config() const { return config_; }
  // Admits or refuses one more watcher on a client Watch stream that holds
  // `open` (the gRPC front's Watch call, the JSON gateway's /v3/watch):
  // Ok below config().max_watchers_per_stream (0: no bound), else
  // etcdjson::CheckWatcherLimit's ResourceExhausted, which is counted in
  // kplane_watch_creates_refused_total{protocol="grpc"|"json"}.
  enum class WatchProtocol { kGrpc, kJson };
  Status AdmitWatchCreate(size_t open, WatchProtocol protocol);

  // ---- asynchronous core (used by the HTTP API) ---------------------------
  // Proposes a write; `done` runs once, on the thread that applied it (the
  // apply thread or the node loop) or the node loop (dropped) or a timer
  // thread (timeout). Keep it short and never block in it.
  void ProposeAsync(storagepb::InternalRaftRequest req, ApplyCallback done);
  // Runs `ready` (on a read worker) once a linearizable read may be served
  // from the local store, or with the error that prevents it.
  void LinearizableReadAsync(std::function<void(Status)> ready);
  // Runs `fn` on one of the server's worker threads (work that must not run
  // on the apply thread or a caller's thread). Runs it inline once stopped.
  void Submit(std::function<void()> fn);
  // Runs `fn` on the server's password thread: the slow hashes of
  // Authenticate, UserAdd and UserChangePassword (PBKDF2, ~100 ms each), so
  // that a flood of them, which anyone may send, delays only each other,
  // never the reads, watch deliveries and lease renewals of the worker
  // threads above. Runs it inline once stopped. At most
  // kMaxQueuedPasswordWork wait at once (anyone may send Authenticate for
  // root, and each costs ~100 ms): beyond, `fn` is not run and false is
  // returned (the caller answers etcd's "etcdserver: too many requests").
  static constexpr int kMaxQueuedPasswordWork = 64;
  bool SubmitPasswordWork(std::function<void()> fn);
  // Fills header.cluster_id/member_id/raft_term (revision is the store's).
  void FillHeader(etcdserverpb::ResponseHeader* h) const;

  // What GET /health answers (etcd's checkHealth, with one more check):
  // unhealthy, with etcd's reason text, when
  //   - a durable write failed or the apply stopped ("MEMBER FAILED"),
  //   - any alarm is active ("ALARM ACTIVE" and the alarms), but for the
  //     types in `excluded_alarms` (etcd's /health?exclude=NOSPACE, as
  //     kubeadm's liveness probe asks),
  //   - no leader is known ("RAFT NO LEADER"),
  //   - the apply is stuck behind the commit index ("APPLY STUCK"): it is
  //     more than kMaxApplyGap entries behind (etcd's
  //     maxGapBetweenApplyAndCommitIndex), or it stayed behind without
  //     applying anything for a whole request timeout (a client would
  //     have timed out meanwhile);
  //   - a linearizable read does not complete within `read_timeout`
  //     (etcd's QGET: a follower cut off from the leader still names it).
  // Blocks up to `read_timeout`; call from a worker thread.
  struct Health {
    bool healthy = false;
    std::string reason;  // empty when healthy
  };
  static constexpr uint64_t kMaxApplyGap = 5000;
  Health CheckHealth(
      Duration read_timeout = seconds(1),
      const std::vector<etcdserverpb::AlarmType>& excluded_alarms = {});

  // ---- KV (embedded use, blocking) -----------------------------------------
  StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req) override;
  StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& req) override;
  StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& req) override;
  StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& req) override;
  StatusOr<etcdserverpb::CompactionResponse> Compact(
      const etcdserverpb::CompactionRequest& req) override;
  StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      const etcdserverpb::LeaseGrantRequest& req) override;
  StatusOr<etcdserverpb::LeaseRevokeResponse> LeaseRevoke(
      const etcdserverpb::LeaseRevokeRequest& req) override;
  StatusOr<etcdserverpb::LeaseKeepAliveResponse> LeaseKeepAlive(
      const etcdserverpb::LeaseKeepAliveRequest& req) override;
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) override;
  StatusOr<etcdserverpb::LeaseLeasesResponse> LeaseLeases(
      const etcdserverpb::LeaseLeasesRequest& req) override;
  StatusOr<etcdserverpb::StatusResponse> MemberStatus() override;
  StatusOr<std::unique_ptr<Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest& req,
      WatchCallback callback) override;

  // ---- maintenance and cluster (ClusterAdmin) ------------------------------
  StatusOr<etcdserverpb::AlarmResponse> Alarm(
      const etcdserverpb::AlarmRequest& req) {
    return admin_->Alarm(req);
  }
  StatusOr<etcdserverpb::DefragmentResponse> Defragment() {
    return admin_->Defragment();
  }
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int64_t revision) override {
    return admin_->HashKV(revision);
  }
  StatusOr<etcdserverpb::HashResponse> Hash() { return admin_->Hash(); }
  StatusOr<etcdserverpb::MemberAddResponse> MemberAdd(
      const etcdserverpb::MemberAddRequest& req) {
    return admin_->MemberAdd(req);
  }
  StatusOr<etcdserverpb::MemberRemoveResponse> MemberRemove(
      const etcdserverpb::MemberRemoveRequest& req) {
    return admin_->MemberRemove(req);
  }
  // On the leader, with its checks; a follower forwards it to the leader
  // (as etcd's), whose answer it returns with its own header.
  StatusOr<etcdserverpb::MemberPromoteResponse> MemberPromote(
      const etcdserverpb::MemberPromoteRequest& req);
  StatusOr<etcdserverpb::MemberUpdateResponse> MemberUpdate(
      const etcdserverpb::MemberUpdateRequest& req) {
    return admin_->MemberUpdate(req);
  }
  StatusOr<etcdserverpb::MemberListResponse> MemberList() {
    return admin_->MemberList();
  }
  StatusOr<etcdserverpb::MoveLeaderResponse> MoveLeader(
      const etcdserverpb::MoveLeaderRequest& req) {
    return admin_->MoveLeader(req);
  }
  // Active alarms (NOSPACE from the store, CORRUPT from consistency checks).
  std::vector<etcdserverpb::AlarmMember> Alarms() const {
    return applier_->Alarms();
  }

  // Writes a consistent copy of the database and membership into `dir` (for
  // `snapshot save` and for sending a snapshot to a follower), taken on the
  // apply thread between two entries. Returns the raft snapshot metadata
  // that describes exactly that state: the applied index, its term and the
  // configuration at that point (etcd rewrites an outgoing MsgSnap the same
  // way, so a member added after the last local snapshot finds itself in
  // the configuration it receives).
  StatusOr<raftpb::SnapshotMetadata> SnapshotTo(
      const std::string& dir) override;
  // The same copy for `snapshot save` (/v3/maintenance/snapshot): taken also
  // while this member replays its log or after its apply stopped (for
  // diagnosis); its metadata is not for raft.
  StatusOr<raftpb::SnapshotMetadata> SaveSnapshot(const std::string& dir);
  // A raft snapshot message (MsgSnap) whose database arrived in
  // `received_dir`: moves it to member/snap/ and steps the message in.
  Status ReceiveSnapshot(const std::string& received_dir,
                         raftpb::Message msg) override;

  // ---- PeerHandler (the rest) ----------------------------------------------
  bool IsRemovedMember(uint64_t id) const override {
    return membership_->IsRemoved(id);
  }
  bool IsMember(uint64_t id) const override {
    return membership_->Find(id).has_value();
  }
  storagepb::ClusterRecord RecordForJoiners() const override {
    return membership_->RecordForJoiners();
  }
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LeaderLeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req) override;
  StatusOr<etcdserverpb::MemberPromoteResponse> LeaderMemberPromote(
      const etcdserverpb::MemberPromoteRequest& req) override;
  // Steps the messages that pass CheckPeerMessage (entry_check.h) from a
  // current member other than this one; the others are dropped and counted
  // (kplane_server_peer_messages_refused_total, by reason).
  void Process(std::vector<raftpb::Message> msgs) override;
  void ReportUnreachable(uint64_t id) override;
  void ReportSnapshot(uint64_t id, raft::SnapshotStatus status) override;
  std::string SnapshotStagingDir() const override;

  // Blocks until this member has published its attributes through the log
  // (etcd's ready point: it serves clients only after). False on timeout.
  bool WaitReady(Duration timeout) { return self_->WaitPublished(timeout); }
  // Blocks until a leader is known (tests, `kplane up`). False on timeout.
  bool WaitForLeader(Duration timeout);
  // Blocks until `pred(leader id)` holds (0 = no leader). False on timeout.
  bool WaitForLeaderMatching(const std::function<bool(uint64_t)>& pred,
                             Duration timeout) {
    return self_->WaitForLeaderMatching(pred, timeout);
  }

 private:
  StoreServer(StoreConfig config, BootstrappedMember member);
  // OK while started and not stopping; Unavailable otherwise.
  Status CheckRunning() const;
  // Blocks until a linearizable read may be served.
  Status WaitLinearizable();
  // LeaseTimeToLive from this member's own lessor (right on the leader
  // only: a follower's lessor does not count down), after a linearizable
  // wait if asked.
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> LocalLeaseTimeToLive(
      const etcdserverpb::LeaseTimeToLiveRequest& req, bool linearizable);
  // Runs `local()` while this member leads; otherwise asks the leader
  // through `remote(leader, time left)`, again (the new leader once known)
  // while the leader changes or cannot be reached, until the request
  // timeout (etcd's "etcdserver: request timed out").
  template <typename Resp>
  StatusOr<Resp> OnLeader(
      const std::function<StatusOr<Resp>()>& local,
      const std::function<StatusOr<Resp>(uint64_t, Duration)>& remote);

  StoreConfig config_;
  Clock* clock_;
  // Declared first: released last, after every store is closed.
  DataDirLock lock_;
  std::string member_dir_;

  std::unique_ptr<RaftLog> log_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<LocalMember> self_;
  std::unique_ptr<Proposer> proposer_;
  std::unique_ptr<AuthStore> auth_;
  std::unique_ptr<StoreApplier> applier_;  // owns the MVCC store
  std::unique_ptr<ClusterAdmin> admin_;
  // Created by Start.
  PeerTransport* transport_ = nullptr;
  std::unique_ptr<RaftNode> node_;
  // Before housekeeper_, which ends them.
  LeaderRequiredStreams leader_required_streams_;
  std::unique_ptr<Housekeeper> housekeeper_;
  std::unique_ptr<mvcc::AutoCompactor> auto_compactor_;
  std::shared_ptr<net::WorkerPool> read_pool_;
  std::shared_ptr<net::WorkerPool> password_pool_;
  std::atomic<int> queued_password_work_{0};

  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};

  metrics::Family<metrics::Counter>* refused_messages_;
  // kplane_watch_creates_refused_total, by WatchProtocol (both series are
  // made at construction, so they read 0 before the first refusal).
  std::array<metrics::Counter*, 2> refused_watch_creates_;
  LogThrottle refusal_log_{seconds(1)};  // refused peer messages
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_STORE_SERVER_H_
