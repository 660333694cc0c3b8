// StoreServer: one member of kplane's replicated store (our etcd server).
//
// It joins the pieces: the node loop (RaftNode over a RaftLog in
// <data-dir>/member/wal), the MVCC store (storage/mvcc in member/db), the
// membership (member/cluster.pb), one apply thread, and the leader's
// duties (lease expiry, corruption checks). Networking is outside: peers
// are reached through a PeerTransport (HTTP in peer_transport.h, or
// in-process in tests) and clients through the etcd v3 JSON API
// (client_api.h) or directly through the KV interface (`kplane up`).
//
// Write path: ProposeAsync -> RaftNode (group commit) -> commit -> apply
// thread (or, for a small batch while it is idle, the node loop itself)
// applies the entry to MVCC with its index as consistent_index (an
// entry at or below the store's consistent index is already applied and is
// skipped: exactly-once after a crash) -> the proposer's callback.
// Read path: linearizable reads wait for a ReadIndex round and for the
// apply thread to reach that index; serializable reads go straight to MVCC.
//
// Data directory layout (docs/store.md):
//   <data-dir>/member/wal/        raft log (storage/wal/FORMAT.md)
//   <data-dir>/member/db/         MVCC RocksDB (storage/mvcc/FORMAT.md)
//   <data-dir>/member/cluster.pb  membership (storagepb.ClusterRecord)
//   <data-dir>/member/snap/       snapshots received from a leader, waiting
//                                 to be installed
//   <data-dir>/LOCK               held while a process owns the directory
//
// Thread-safety: every public method may be called from any thread.
#ifndef KPLANE_STORAGE_SERVER_STORE_SERVER_H_
#define KPLANE_STORAGE_SERVER_STORE_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "net/worker_pool.h"
#include "schemas/storage.pb.h"
#include "storage/client/kv.h"
#include "storage/mvcc/auto_compactor.h"
#include "storage/mvcc/store.h"
#include "storage/server/cluster.h"
#include "storage/server/raft_log.h"
#include "storage/server/raft_node.h"

namespace kplane::storage {

struct StoreConfig {
  std::string name = "default";
  std::string data_dir;
  // Peer URLs this member is reached at (its --initial-advertise-peer-urls).
  std::vector<std::string> peer_urls;
  // Client URLs this member publishes (its --advertise-client-urls).
  std::vector<std::string> client_urls;
  // "name=url,..."; empty means a single-member cluster of this member.
  std::string initial_cluster;
  // "new" bootstraps a cluster; "existing" joins one (after `member add`).
  std::string initial_cluster_state = "new";
  std::string initial_cluster_token = "kplane-cluster";
  // For "existing": the cluster record fetched from a running member.
  std::optional<storagepb::ClusterRecord> existing_cluster;

  Duration heartbeat_interval = milliseconds(100);
  Duration election_timeout = milliseconds(1000);
  bool pre_vote = true;
  uint64_t snapshot_count = 100000;
  uint64_t snapshot_catch_up_entries = 5000;
  int64_t quota_backend_bytes = int64_t{2} << 30;
  int64_t max_request_bytes = 1536 * 1024;
  mvcc::AutoCompactionOptions auto_compaction;
  // A proposal not applied within this time fails with
  // "etcdserver: request timed out" (etcd: 5 s + 2 election timeouts).
  Duration request_timeout = Duration(0);  // 0: derive as etcd does
  // The leader compares members' HashKV this often (0: only at startup).
  Duration corrupt_check_interval = minutes(1);

  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
  // Test seam: called at named steps of multi-step disk updates (e.g.
  // "install-snapshot:swapped"); crash tests kill the process there. Null in
  // production.
  std::function<void(std::string_view step)> crash_hook;
};

// What applying one proposal produced.
using ApplyResponse = std::variant<
    std::monostate, etcdserverpb::PutResponse,
    etcdserverpb::DeleteRangeResponse, etcdserverpb::TxnResponse,
    etcdserverpb::CompactionResponse, etcdserverpb::LeaseGrantResponse,
    etcdserverpb::LeaseRevokeResponse, etcdserverpb::LeaseKeepAliveResponse,
    etcdserverpb::AlarmResponse>;
using ApplyCallback = std::function<void(StatusOr<ApplyResponse>)>;

// Reaches the other members. Implementations never block the caller.
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
};

class StoreServer : public KV {
 public:
  // Opens (or initializes) the data directory. Nothing runs yet.
  static StatusOr<std::unique_ptr<StoreServer>> Open(StoreConfig config);
  ~StoreServer() override;

  // Starts the node loop and the apply thread. `transport` may be null for
  // a single-member cluster; it must outlive the server.
  Status Start(PeerTransport* transport);
  // Stops everything and closes the stores. Pending requests fail with
  // Unavailable. Idempotent.
  void Stop();

  uint64_t member_id() const { return member_id_; }
  uint64_t cluster_id() const { return membership_->cluster_id(); }
  uint64_t leader_id() const { return node_ ? node_->leader() : 0; }
  bool is_leader() const { return node_ && node_->is_leader(); }
  uint64_t term() const { return node_ ? node_->term() : 0; }
  uint64_t applied_index() const { return applied_.load(); }
  // True once this member knows it was removed from the cluster: it applied
  // its own removal, or, after three election timeouts without a leader, a
  // peer's membership lists it as removed (the others no longer send it the
  // log and refuse its messages, so it may never apply the removal). It
  // serves no purpose then; `kplane store` exits (etcd stops likewise).
  bool removed() const { return removed_.load(); }
  Membership* membership() { return membership_.get(); }
  mvcc::Store* mvcc() { return store_.get(); }
  RaftNode* node() { return node_.get(); }
  const StoreConfig& config() const { return config_; }

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
  // Fills header.cluster_id/member_id/raft_term (revision is the store's).
  void FillHeader(etcdserverpb::ResponseHeader* h) const;

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

  // ---- maintenance and cluster ---------------------------------------------
  StatusOr<etcdserverpb::AlarmResponse> Alarm(
      const etcdserverpb::AlarmRequest& req);
  StatusOr<etcdserverpb::DefragmentResponse> Defragment();
  StatusOr<etcdserverpb::HashKVResponse> HashKV(int64_t revision);
  StatusOr<etcdserverpb::MemberAddResponse> MemberAdd(
      const etcdserverpb::MemberAddRequest& req);
  StatusOr<etcdserverpb::MemberRemoveResponse> MemberRemove(
      const etcdserverpb::MemberRemoveRequest& req);
  StatusOr<etcdserverpb::MemberPromoteResponse> MemberPromote(
      const etcdserverpb::MemberPromoteRequest& req);
  StatusOr<etcdserverpb::MemberListResponse> MemberList();
  StatusOr<etcdserverpb::MoveLeaderResponse> MoveLeader(
      const etcdserverpb::MoveLeaderRequest& req);
  // Writes a consistent copy of the database and membership into `dir` (for
  // `snapshot save` and for sending a snapshot to a follower), taken on the
  // apply thread between two entries. Returns the raft snapshot metadata
  // that describes exactly that state: the applied index, its term and the
  // configuration at that point (etcd rewrites an outgoing MsgSnap the same
  // way, so a member added after the last local snapshot finds itself in
  // the configuration it receives).
  StatusOr<raftpb::SnapshotMetadata> SnapshotTo(const std::string& dir);
  // A raft snapshot message (MsgSnap) whose database arrived in
  // `received_dir`: moves it to member/snap/ and steps the message in.
  Status ReceiveSnapshot(const std::string& received_dir, raftpb::Message msg);

  // Active alarms (NOSPACE from the store, CORRUPT from consistency checks).
  std::vector<etcdserverpb::AlarmMember> Alarms() const;

  // Blocks until this member has published its attributes through the log
  // (etcd's ready point: it serves clients only after). False on timeout.
  bool WaitReady(Duration timeout);
  // Blocks until a leader is known (tests, `kplane up`). False on timeout.
  bool WaitForLeader(Duration timeout);
  // Blocks until `pred(leader id)` holds (0 = no leader). False on timeout.
  bool WaitForLeaderMatching(const std::function<bool(uint64_t)>& pred,
                             Duration timeout);

 private:
  class Applier;
  struct Waiter {
    ApplyCallback done;
    TimePoint deadline;
  };

  explicit StoreServer(StoreConfig config);
  Status OpenDataDir();
  Status OpenStores();
  StatusOr<ApplyResponse> Propose(storagepb::InternalRaftRequest req);

  // Apply thread.
  void ApplyLoop();
  void ApplyTaskNow(ApplyTask& task);
  // Whether the node loop may apply `task` itself (Applier::Enqueue).
  // Needs apply_mu_ and an idle apply thread.
  bool CanApplyInline(const ApplyTask& task) const;
  // A client's answer, held until the task's write group is written.
  struct Answer {
    ApplyCallback done;
    StatusOr<ApplyResponse> result;
  };
  void ApplyEntry(const raftpb::Entry& e, uint64_t term,
                  std::vector<Answer>* answers);
  StatusOr<ApplyResponse> ApplyRequest(const storagepb::InternalRaftRequest& r,
                                       uint64_t index);
  void ApplyConfChange(const raftpb::Entry& e, std::vector<Answer>* answers);
  void MarkRemoved(const std::string& how);
  Status InstallSnapshot(const raftpb::Snapshot& snap);
  void MaybeSnapshot();
  void SetApplied(uint64_t index);

  // Leader duties and timeouts (a housekeeping thread).
  void HousekeepingLoop();
  void CheckRemovedByPeers();
  void ExpireLeases();
  void FailExpiredWaiters();
  void CheckCorruption();
  void OnLeaderChange(uint64_t leader, uint64_t term);
  void PublishAttributes();

  uint64_t NextRequestId();
  Status ProposeConfChangeAndWait(raftpb::ConfChange cc);
  ApplyCallback TakeWaiter(uint64_t id);

  StoreConfig config_;
  Clock* clock_;
  std::string member_dir_;
  int lock_fd_ = -1;
  uint64_t member_id_ = 0;
  bool joining_ = false;

  std::unique_ptr<RaftLog> log_;
  std::unique_ptr<mvcc::Store> store_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<Applier> applier_;
  std::unique_ptr<RaftNode> node_;
  PeerTransport* transport_ = nullptr;
  std::unique_ptr<mvcc::AutoCompactor> auto_compactor_;
  std::shared_ptr<net::WorkerPool> read_pool_;

  // Proposals waiting to be applied, by request id.
  std::mutex waiters_mu_;
  std::map<uint64_t, Waiter> waiters_;
  std::atomic<uint64_t> request_seq_{0};

  // Apply thread state.
  std::mutex apply_mu_;
  std::condition_variable apply_cv_;
  std::deque<ApplyTask> apply_queue_;  // guarded by apply_mu_
  bool stopping_ = false;              // guarded by apply_mu_
  // A task is being applied, by the apply thread or inline by the node
  // loop; the other waits. Guarded by apply_mu_. The "apply thread only"
  // fields below belong to whichever holds it.
  bool apply_busy_ = false;
  // Linearizable reads waiting for the applied index (min-heap by index).
  std::priority_queue<std::pair<uint64_t, uint64_t>,
                      std::vector<std::pair<uint64_t, uint64_t>>,
                      std::greater<>>
      read_heap_;  // (index, seq), guarded by apply_mu_
  struct ReadWaiter {
    std::function<void(Status)> ready;
    TimePoint deadline;
  };
  std::map<uint64_t, ReadWaiter> read_waiters_;  // guarded by apply_mu_
  uint64_t read_seq_ = 0;
  std::atomic<uint64_t> applied_{0};
  // The last entry (or snapshot) the apply thread has handled: the point
  // conf_state_ and applied_entry_term_ describe, and so the only index a
  // snapshot may claim. After a restart applied_ starts at the store's
  // consistent index, ahead of this until the replay reaches it.
  uint64_t processed_index_ = 0;      // apply thread only
  raftpb::ConfState conf_state_;      // apply thread only
  uint64_t last_snapshot_index_ = 0;  // apply thread only
  bool force_snapshot_ = false;       // apply thread only
  std::atomic<uint64_t> applied_term_{0};
  uint64_t applied_entry_term_ = 0;  // apply thread only
  std::thread apply_thread_;

  // Housekeeping.
  std::mutex hk_mu_;
  std::condition_variable hk_cv_;
  bool hk_stop_ = false;
  std::thread hk_thread_;
  std::atomic<bool> published_{false};
  TimePoint next_publish_;                          // housekeeping only
  std::map<int64_t, TimePoint> revokes_in_flight_;  // housekeeping only
  std::mutex leader_mu_;
  std::condition_variable leader_cv_;
  std::atomic<bool> corrupt_{false};
  TimePoint next_corrupt_check_;
  std::atomic<bool> removed_{false};
  TimePoint leaderless_since_;    // housekeeping only; epoch = has a leader
  TimePoint next_removed_check_;  // housekeeping only

  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};

  metrics::Counter* proposals_committed_;
  metrics::Counter* proposals_applied_;
  metrics::Counter* proposals_failed_;
  metrics::Gauge* proposals_pending_;
};

// Maps the apply result of a proposal of one kind to its response type.
template <typename T>
StatusOr<T> ResponseAs(StatusOr<ApplyResponse> r) {
  if (!r.ok()) return r.status();
  if (T* v = std::get_if<T>(&*r)) return std::move(*v);
  return InternalError("unexpected apply response type");
}

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_STORE_SERVER_H_
