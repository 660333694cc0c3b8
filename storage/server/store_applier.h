// StoreApplier: applies the committed raft log to this member's state
// machine (the MVCC store and the membership), strictly in log order, and
// serves what must wait for that order: linearizable reads and consistent
// snapshots.
//
// It owns the MVCC store; every write to it happens here.
//
//   node loop --Enqueue(ApplyTask)--> queue --> apply thread
//                 \__ a batch of plain entries (up to 64 entries, 1 MiB)
//                     while the apply thread is idle: applied inline on
//                     the node loop
//   apply: entries -> mvcc (one write group, index = consistent index) ->
//          SetApplied(index) (wakes reads) -> answers (Proposer::Take) ->
//          MaybeSnapshot (store sync + RaftNode::CreateSnapshot)
//
// An entry at or below the store's consistent index was applied before a
// restart and is skipped: exactly-once apply. A snapshot from the leader is
// installed on the apply thread: the received database replaces member/db
// and its membership replaces member/cluster.pb (see FinishInstall for a
// crash in between).
//
// An entry this member cannot apply (undecodable, a request of no known
// kind, an apply that reports corruption) stops the apply here, as etcd's
// CORRUPT alarm stops a member, instead of crashing on it at every restart:
// the entries before it are applied and answered, nothing after it is, this
// member reports a CORRUPT alarm for itself (and proposes one, so the
// others refuse writes too), and the data stays as it is for diagnosis and
// `snapshot save` (barriers still run). A failed durable write (the store's
// or the membership's) stops the apply the same way and marks the member
// failed (LocalMember::MarkFailed): `kplane store` then exits.
//
// A full disk under the raft log is NOSPACE too: the node loop blocks and
// retries its write (raft_node.h) and calls PersistBlocked: this member
// lists NOSPACE for itself at once and refuses puts; the alarm is proposed
// through the log once the log takes writes again (a blocked member can
// propose nothing), by ProposeNoSpaceAlarmIfDue.
//
// A full disk under the store is not a failure but NOSPACE (etcd's alarm):
// the store published nothing of the write it could not make, so the task
// is kept and retried -- the apply thread waits (backing off on the clock,
// from nospace_retry_min to nospace_retry_max), resumes the store
// (Store::ResumeAfterFullDisk) and applies the task again; what an earlier
// attempt did write is at or below the store's consistent index and is
// skipped, so every entry is still applied once. Meanwhile this member
// shows NOSPACE for itself at once and proposes the alarm through the log
// (every member then lists it and refuses puts), answers nothing it has not
// written, and runs barriers (snapshot copies) between the attempts. Its
// applied index stands still, so its linearizable reads wait (and time out)
// until a retry succeeds; serializable reads are served.
//
// Auth: users, roles and the enabled flag are kept with the membership too
// (cluster.pb's `auth`, the same applied index); before an auth change is
// saved there the store records that index and is synced, so after a crash
// no entry before the change is applied again (and checked against the
// newer state); every write after it is checked against it again. With
// auth enabled, a write entry's permissions are checked here, for the user
// it names, against the auth state of its place in the log.
//
// Alarms: CORRUPT and NOSPACE alarms raised through the log are kept with
// the membership (cluster.pb, applied exactly once with its applied index);
// a stopped apply adds a local CORRUPT, a full disk a local NOSPACE (until
// a disarm is applied).
//
// The quota (--quota-backend-bytes) never refuses an entry while applying:
// file sizes differ between members, so a refusal on one would make its
// data differ. A member whose store is past its quota after a task
// proposes its NOSPACE alarm through the log (again each request timeout
// until it is applied: a proposal can be lost without an answer), and
// every member refuses new puts from when it applies that entry (the
// proposer's nospace check; puts already proposed are applied), as etcd's
// quotaApplierV3. (A store alarm persisted by an older version is still
// listed until disarmed, but refuses nothing.)
//
// The store is reached through a StoreGate (store_gate.h): a snapshot
// install waits for the threads that use the store, and they for it.
//
// Linearizable reads: LinearizableReadAsync asks the node for a ReadIndex,
// then waits until the applied index reaches it; the continuation runs on
// the read pool. Snapshots: SnapshotTo queues a barrier that checkpoints
// the store between two tasks, so the copy matches one applied index.
//
// Ownership: owns the store; membership, local member, proposer, node and
// transport are borrowed and must outlive it.
// Thread-safety: Enqueue runs on the node loop; every other public method
// may be called from any thread. Lock: mu_ is a leaf (nothing else is
// locked while it is held; callbacks run after it is released).
#ifndef KPLANE_STORAGE_SERVER_STORE_APPLIER_H_
#define KPLANE_STORAGE_SERVER_STORE_APPLIER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "net/worker_pool.h"
#include "schemas/raft.pb.h"
#include "storage/mvcc/store.h"
#include "storage/server/auth_store.h"
#include "storage/server/cluster.h"
#include "storage/server/local_member.h"
#include "storage/server/peer.h"
#include "storage/server/proposer.h"
#include "storage/server/raft_node.h"
#include "storage/server/store_gate.h"

namespace kplane::storage {

struct StoreApplierOptions {
  // <data-dir>/member: db/, cluster.pb and snap/ live here.
  std::string member_dir;
  // How the store is reopened after a snapshot replaced it.
  mvcc::Options store_options;
  // Entries between two snapshot markers.
  uint64_t snapshot_count = 100000;
  // A new leader's (or a freshly installed store's) lease extension.
  Duration election_timeout = seconds(1);
  // How long a linearizable read waits for the applied index.
  Duration request_timeout = seconds(7);
  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
  // See StoreConfig::crash_hook.
  std::function<void(std::string_view step)> crash_hook;
  // After the disk filled up: the first wait before the store is resumed
  // and the task retried, doubled after each failed attempt up to the max.
  Duration nospace_retry_min = milliseconds(50);
  Duration nospace_retry_max = seconds(1);
};

class StoreApplier : public Applier {
 public:
  // `store` is the member's opened MVCC store. Nothing runs yet.
  StoreApplier(StoreApplierOptions options, std::unique_ptr<mvcc::Store> store,
               Membership* membership, LocalMember* self, Proposer* proposer,
               AuthStore* auth);
  ~StoreApplier() override;
  StoreApplier(const StoreApplier&) = delete;
  StoreApplier& operator=(const StoreApplier&) = delete;

  // A received snapshot is durable in member/snap/db-<index> before its
  // marker reaches the WAL. If the process died before the snapshot was
  // swapped in, or half-way, this finishes the install (call before the
  // store is opened; `snapshot_index` is the WAL's newest snapshot).
  // Its files go through `fs` (null = FileSystem::Default()).
  static Status FinishInstall(FileSystem* fs, const std::string& member_dir,
                              uint64_t snapshot_index);

  // Starts the apply thread. The replay starts after `last_snapshot` (the
  // WAL's newest snapshot); `node` takes snapshot markers and read-index
  // requests, `transport` learns of added and removed members, `read_pool`
  // runs the continuations of linearizable reads.
  void Start(const raftpb::SnapshotMetadata& last_snapshot, RaftNode* node,
             PeerTransport* transport,
             std::shared_ptr<net::WorkerPool> read_pool) EXCLUDES(mu_);
  // Applies what is queued, stops the apply thread and fails the reads
  // still waiting (Unavailable). Call after the node loop stopped.
  void Stop() EXCLUDES(mu_);

  // Applier (the node loop's hand-off).
  void Enqueue(ApplyTask task) override EXCLUDES(mu_);
  // Every committed membership change is validated against this member's
  // membership when it applies (ApplyConfChange), as etcd does on every
  // member: an invalid one changes neither the membership nor the raft
  // core's configuration, and its proposer gets etcd's error.
  bool DecidesConfChanges() const override { return true; }

  // Whether Enqueue may apply `task` on the node loop itself (when the
  // apply thread is idle and no snapshot is due): plain entries only, at
  // most kMaxInlineApplyEntries of them and kMaxInlineApplyBytes of data.
  // The bounds take a group commit's batch at 64 concurrent clients (18
  // entries per fsync) and keep the loop's pause (ticks, heartbeats) short;
  // at 64 clients this halved fsyncs and cut context switches per put by a
  // third against the earlier bound of 8 entries (docs/performance.md,
  // "Fewer wake-ups per put"). Larger batches (hundreds of clients) still
  // go to the apply thread, so the loop keeps replicating meanwhile.
  static constexpr size_t kMaxInlineApplyEntries = 64;
  static constexpr size_t kMaxInlineApplyBytes = 1 << 20;
  static bool InlineApplyFits(const ApplyTask& task);

  // Runs `ready` (on the read pool) once a linearizable read may be served
  // from the local store, or with the error that prevents it.
  // `on_read_pool` false: `ready` runs on whichever thread completes the
  // read (the node loop, the apply thread), so it must be tiny and never
  // block -- it is for a caller that blocks a read-pool thread until the
  // read completes (StoreServer::WaitLinearizable): routing its completion
  // through the same pool would deadlock once every pool thread waits.
  void LinearizableReadAsync(std::function<void(Status)> ready,
                             bool on_read_pool = true);
  // Fails (DeadlineExceeded) the reads whose deadline (the request timeout
  // after they were asked) is at or before `now`: this member did not reach
  // their index in time (cut off from the leader, or catching up).
  void FailExpiredReads(TimePoint now) EXCLUDES(mu_);

  // Writes a consistent copy of the store and membership into `dir`, taken
  // on the apply thread between two tasks, and returns the raft metadata
  // of exactly that state (PeerHandler::SnapshotTo). With `for_peer`, it
  // fails (Unavailable) while a restart's replay has not yet reached the
  // store's consistent index: the copy would hold entries beyond the index
  // it claims, and a follower that installed it could not tell that state
  // from a log that lost entries (bootstrap.h's startup checks). A copy for
  // `snapshot save` is taken anyway (its index is not used).
  StatusOr<raftpb::SnapshotMetadata> SnapshotTo(const std::string& dir,
                                                bool for_peer = true)
      EXCLUDES(mu_);
  // Takes over a received snapshot directory (PeerHandler::ReceiveSnapshot)
  // as member/snap/db-<index>, durably (its files must be synced already;
  // the names in it and the move are synced here), and steps `msg` into the
  // node.
  Status ReceiveSnapshot(const std::string& received_dir, raftpb::Message msg);

  // The MVCC store, pinned against a snapshot install while the returned
  // ref lives (store_gate.h). Null after a failed install left no store.
  StoreRef store() { return store_.Use(); }
  uint64_t applied_index() const { return applied_.load(); }
  // Whether any CORRUPT alarm is active (writes are refused cluster-wide).
  bool corrupt() const;
  // Whether this member's own data is suspect: a CORRUPT alarm names it, or
  // its apply stopped. It then refuses reads too.
  bool self_corrupt() const;
  // Whether a NOSPACE alarm is active: one raised through the log (any
  // member), or this member's disk filled up and no disarm was applied
  // since. Puts, txns with a put and lease grants are refused then.
  bool nospace() const;
  // OK while applying; else why the apply stopped (kCorruption for an
  // entry it could not apply, kIOError for a failed write).
  Status apply_error() const EXCLUDES(error_mu_);
  // The node loop met something it cannot go on with (an undecodable
  // committed conf change: kCorruption; a failed WAL write: kIOError):
  // nothing more is applied, as after StopApply. Any thread.
  void Halt(const Status& why) EXCLUDES(error_mu_);
  // The node loop cannot write the raft log (a full disk; RaftNode blocks
  // and retries): this member shows NOSPACE for itself from now on, and
  // refuses puts, until a disarm is applied; the alarm is due to be
  // proposed through the log. Node loop thread.
  void PersistBlocked(const Status& why);
  // Called periodically (the housekeeper, every heartbeat): once the raft
  // log takes writes again and a leader is known, proposes the alarm due
  // since PersistBlocked, so that every member lists it (as for a full
  // store) -- again after a proposal that failed or got lost (a leader
  // blocked on its disk was replaced meanwhile: what it proposes on waking
  // is overwritten) -- at most once a request timeout, until this member
  // applied it or a disarm. One thread (the housekeeper's).
  void ProposeNoSpaceAlarmIfDue();
  // Active alarms: CORRUPT and NOSPACE from the log, NOSPACE from the store
  // (quota, full disk) or from this member's full disk until disarmed, and
  // this member's CORRUPT when its apply stopped.
  std::vector<etcdserverpb::AlarmMember> Alarms();

 private:
  // A client's answer, held until the task's write group is written; the
  // callback is taken from the proposer only then (Deliver), so that a
  // task retried after a full disk still answers its clients.
  struct Answer {
    uint64_t id;     // the proposal's id
    uint64_t index;  // the entry's
    StatusOr<ApplyResponse> result;
  };
  struct ReadWaiter {
    std::function<void(Status)> ready;
    TimePoint deadline;
    bool on_read_pool = true;
  };
  // Runs `ready(s)` on the read pool, or here when `on_read_pool` is false
  // (or the pool is stopped: then with `stopped` instead).
  void Deliver(const std::function<void(Status)>& ready, bool on_read_pool,
               Status s);

  void Loop() EXCLUDES(mu_);
  // Whether the node loop may apply `task` itself.
  bool CanApplyInline(const ApplyTask& task) const REQUIRES(mu_);
  // The "apply thread only" state below belongs to the caller of these: the
  // apply thread, or the node loop while it applies inline (apply_busy_).
  // True when the task must be retried (the disk is full): nothing of it
  // that the store did not write was published or answered.
  bool ApplyTaskNow(ApplyTask& task) EXCLUDES(mu_);
  bool ApplyTaskEntries(ApplyTask& task) EXCLUDES(mu_);
  // The apply thread after a full disk: waits (running barriers that come
  // meanwhile), resumes the store and applies `task` again, until it goes
  // through or the applier stops (false).
  bool RetryAfterFullDisk(ApplyTask& task) EXCLUDES(mu_);
  // Waits `d` on the clock, running queued barriers; false once stopping.
  bool WaitToRetry(Duration d) EXCLUDES(mu_);
  // Runs and removes the queued barriers.
  void RunQueuedBarriers() EXCLUDES(mu_);
  // Hands answers to their waiting clients.
  void Deliver(std::vector<Answer>& answers);
  // Notes a full disk met while applying: local NOSPACE, once proposed
  // through the log per episode.
  void EnterNoSpace(const Status& why);
  // Proposes this member's NOSPACE alarm through the log, unless it was
  // proposed in this episode already (and not dropped).
  void ProposeNoSpaceAlarm();
  // Proposes this member's NOSPACE alarm for its quota (apply thread), at
  // most once a request timeout.
  void ProposeQuotaAlarm();
  // Applies one entry; a non-OK status stops the apply (StopApply).
  Status ApplyEntry(const raftpb::Entry& e, std::vector<Answer>* answers);
  StatusOr<ApplyResponse> ApplyRequest(const storagepb::InternalRaftRequest& r,
                                       uint64_t index);
  Status ApplyConfChange(const raftpb::Entry& e, std::vector<Answer>* answers);
  // Whether the committed conf change at `index` may apply: etcd's
  // ValidateConfigurationChange on the membership, and the raft core's
  // configuration before it (conf_state_) must agree. An entry the
  // membership already holds (replayed after a restart: the record is
  // saved ahead of the snapshot marker the core restarts from) gets the
  // decision it had, which the record and conf_state_ tell.
  Status ValidateConfChange(const raftpb::ConfChange& cc, uint64_t index);
  Status InstallSnapshot(const raftpb::Snapshot& snap);
  // Closes the store, swaps member/db for `pending`/db and opens it; on a
  // failure puts the old database back if it can.
  Status SwapDatabase(const std::string& pending,
                      std::unique_ptr<mvcc::Store>& store);
  Status MaybeSnapshot();
  // Raises the store's consistent index to `index` if it is behind:
  // entries that write nothing to the store (conf changes, attributes, a
  // leader's empty entry) do not move it, but a snapshot at `index` must
  // find the store there (bootstrap.h's startup checks).
  Status RecordAppliedIndex(uint64_t index);
  // etcd's checkLeasePuts: `user` may write every key attached to `lease`
  // (a revoke deletes them; a put attaches to the lease's set).
  Status CheckLeaseKeys(const std::string& user, int64_t lease);
  // Stops applying for good (see the file comment); logs `why` once.
  // StopApply runs on the apply thread; RecordStop is the part any thread
  // may run.
  void StopApply(const Status& why) EXCLUDES(error_mu_);
  void RecordStop(const Status& why, const std::string& where)
      EXCLUDES(error_mu_);
  // Recomputes the cached CORRUPT flags from the membership's alarms
  // (after an alarm entry or a snapshot changed them).
  void RefreshAlarms();
  // The store as the apply thread uses it (it alone replaces it).
  mvcc::Store* db() const { return store_.owned(); }
  // Raises the applied index and releases the reads it satisfies.
  void SetApplied(uint64_t index) EXCLUDES(mu_);
  // Queues a barrier task (SnapshotTo); false once stopping.
  bool QueueBarrier(std::function<void()> fn) EXCLUDES(mu_);

  const StoreApplierOptions options_;
  // The store's file system (store_options.file_system, or the default):
  // the snapshot directories and cluster.pb go through it too.
  FileSystem* const fs_;
  Clock* const clock_;
  Membership* const membership_;
  LocalMember* const self_;
  Proposer* const proposer_;
  AuthStore* const auth_;
  // Set by Start, before the apply thread runs and before the node loop
  // may call Enqueue.
  RaftNode* node_ = nullptr;
  PeerTransport* transport_ = nullptr;
  std::shared_ptr<net::WorkerPool> read_pool_;

  // Replaced only on the apply thread (InstallSnapshot), through the gate.
  StoreGate store_;
  std::atomic<uint64_t> applied_{0};
  // Cached from the membership's alarms (RefreshAlarms): the proposer asks
  // for every write.
  std::atomic<bool> any_corrupt_alarm_{false};
  std::atomic<bool> self_corrupt_alarm_{false};
  // This member's disk filled up under the store and no NOSPACE disarm was
  // applied since.
  std::atomic<bool> local_nospace_{false};
  // A full raft-log disk: this member's NOSPACE alarm is still to reach
  // the log (ProposeNoSpaceAlarmIfDue), and a proposal of it is in flight
  // (shared with its callback, which may outlive the applier).
  std::atomic<bool> wal_alarm_due_{false};
  // Not before then (ProposeNoSpaceAlarmIfDue's one caller's).
  TimePoint next_wal_alarm_try_;
  // ProposeQuotaAlarm's next chance (apply thread).
  TimePoint next_quota_alarm_try_;
  const std::shared_ptr<std::atomic<bool>> wal_alarm_in_flight_ =
      std::make_shared<std::atomic<bool>>(false);
  // The NOSPACE alarm of this episode was proposed (and not dropped).
  // Shared with the proposal's callback, which may outlive the applier.
  const std::shared_ptr<std::atomic<bool>> nospace_proposed_ =
      std::make_shared<std::atomic<bool>>(false);
  // Set once, when the apply stops; apply_error_ says why.
  std::atomic<bool> apply_stopped_{false};
  mutable Mutex error_mu_;  // a leaf
  Status apply_error_ GUARDED_BY(error_mu_);

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<ApplyTask> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // A task is being applied, by the apply thread or inline by the node
  // loop; the other waits. Whoever set it owns the apply-only state below.
  bool apply_busy_ GUARDED_BY(mu_) = false;
  // Linearizable reads waiting for the applied index: a min-heap of
  // (index, seq) over the waiters by seq.
  std::priority_queue<std::pair<uint64_t, uint64_t>,
                      std::vector<std::pair<uint64_t, uint64_t>>,
                      std::greater<>>
      read_heap_ GUARDED_BY(mu_);
  std::map<uint64_t, ReadWaiter> read_waiters_ GUARDED_BY(mu_);
  uint64_t read_seq_ GUARDED_BY(mu_) = 0;

  // Apply-only state (see apply_busy_). CanApplyInline reads it under mu_
  // while apply_busy_ is false, when it is stable.
  //
  // The last entry (or snapshot) handled: the point conf_state_ and
  // applied_entry_term_ describe, and so the only index a snapshot may
  // claim. After a restart applied_ starts at the store's consistent index,
  // ahead of this until the replay reaches it.
  uint64_t processed_index_ = 0;
  raftpb::ConfState conf_state_;
  uint64_t applied_entry_term_ = 0;
  uint64_t last_snapshot_index_ = 0;
  bool force_snapshot_ = false;
  // The last conf change decided for the node loop (ResolveConfChange).
  uint64_t decided_index_ = 0;

  std::thread thread_;

  metrics::Counter* committed_;
  metrics::Counter* applied_total_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_STORE_APPLIER_H_
