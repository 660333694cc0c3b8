// RaftNode: the node loop of a store member (model: etcd's raftNode.start).
//
// One thread owns the raft core (storage/raft RawNode) and the durable log
// (RaftLog). Each turn of the loop it:
//   1. ticks the core when a tick is due (every `tick_interval`);
//   2. steps every message, proposal and request queued since the last turn
//      (many concurrent client proposals thus share one Ready, one WAL write
//      and one fsync: group commit);
//   3. for each Ready: as leader, sends messages first, so followers write
//      while we write; persists entries, hard state and snapshot (fsync when
//      the Ready says so); as follower, sends only after persisting;
//      applies committed conf changes to the core; hands snapshot and
//      committed entries to the apply thread (Applier); Advance().
//      An Applier that DecidesConfChanges validates each conf change first
//      (etcd's ValidateConfigurationChange at apply time): the loop hands
//      the entries up to it over and waits for the verdict before it
//      applies it, or not, to the core (as etcd's raftNode waits for the
//      apply of a conf change); so the core's configuration and the
//      applier's membership take the same changes on every member, also
//      when the change was proposed against a stale view.
// A failed durable write halts the loop (the log's state on disk is
// unknown, and errors on disk are sticky): it steps, sends and applies
// nothing more and reports the failure once through `on_halt`; so does a
// committed conf change it cannot decode (it could not keep its
// configuration in step with the others). Proposals and reads are then
// refused (Unavailable) until Stop().
//
// A full disk is not such a failure: when RaftLog::Save fails with kNoSpace
// and the log is still writable, nothing of the Ready was kept, and the
// loop is "blocked on a full disk" until the same Save succeeds. Meanwhile
// it holds that Ready un-advanced and takes no new work: it does not tick
// (no election, no heartbeat), steps no message (dropped; raft resends),
// sends nothing it has not persisted (a leader's messages of that Ready
// went out before its write, as always; a follower's acknowledgements wait
// for the write), applies nothing, refuses proposals with etcd's NOSPACE
// error (kNoSpace, "etcdserver: mvcc: database space exceeded") and
// linearizable reads (Unavailable), and keeps other requests (leader
// transfer, snapshot markers, ...) for later. It retries the Save on the
// clock, after nospace_retry_min, doubling to nospace_retry_max; once it
// succeeds the Ready is finished (sent, applied, advanced) and the loop goes
// on. `on_persist_blocked` tells the owner (the member's NOSPACE alarm). The
// raft core itself never sees the fault.
//
// Thread-safety: every public method may be called from any thread; they
// queue work for the loop. Callbacks run on the loop thread and must be
// quick and must not call back into RaftNode synchronously... except the
// queueing methods, which are safe.
#ifndef KPLANE_STORAGE_SERVER_RAFT_NODE_H_
#define KPLANE_STORAGE_SERVER_RAFT_NODE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "base/status.h"
#include "schemas/raft.pb.h"
#include "storage/raft/raw_node.h"
#include "storage/server/raft_log.h"

namespace kplane::storage {

// Sends raft messages to peers. Never blocks the loop: a message that cannot
// be sent is dropped (raft retransmits) and the peer reported unreachable.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void Send(std::vector<raftpb::Message> msgs) = 0;
};

// One unit of work for the apply thread, in log order.
struct ApplyTask {
  raftpb::Snapshot snapshot;  // IsEmptySnapshot when none
  raft::EntryVec entries;
  // The configuration after every conf change in `entries` (and the
  // snapshot) was applied to the core; valid when has_conf_state.
  raftpb::ConfState conf_state;
  bool has_conf_state = false;
  uint64_t term = 0;  // the raft term at hand-off (response headers)
  // Work to run on the apply thread between two batches (e.g. a consistent
  // checkpoint of the state machine); set only on tasks with no entries.
  std::function<void()> barrier;
  // Nonzero (an Applier that DecidesConfChanges): the index of the conf
  // change ending `entries`, which the core has not applied yet; the
  // applier answers RaftNode::ResolveConfChange(index, ...). conf_state is
  // then not set: the next task carries the configuration after it.
  uint64_t conf_change_to_decide = 0;
};

// What the applier decided for a committed conf change.
enum class ConfChangeVerdict {
  kApply,   // valid: the core applies it
  kRefuse,  // invalid (etcd's ValidateConfigurationChange): a no-op
  kHalt,    // the applier stopped before deciding: the loop halts
};

class Applier {
 public:
  virtual ~Applier() = default;
  // Called on the loop thread; must not block for long.
  virtual void Enqueue(ApplyTask task) = 0;
  // Whether the applier validates each committed conf change (ConfChange,
  // not V2) when it applies it, as etcd does on every member: the loop then
  // hands it over with ApplyTask::conf_change_to_decide and waits for
  // ResolveConfChange before it applies it to the core -- or not: a refused
  // change leaves the core's configuration as it is (etcd applies it with
  // NodeID raft.None, which changes nothing). Otherwise every committed
  // conf change is applied to the core.
  virtual bool DecidesConfChanges() const { return false; }
};

struct RaftNodeOptions {
  raft::Config raft;
  Duration tick_interval = milliseconds(100);
  // Called once, on the loop thread, when the loop halts (above): kIOError
  // for a failed log write, kCorruption for an undecodable conf change.
  std::function<void(const Status&)> on_halt;
  // Called on the loop thread when a Save first fails on a full disk (the
  // loop blocks, above); persist_blocked() turns false when a retry
  // succeeds.
  std::function<void(const Status&)> on_persist_blocked;
  // Waits before retrying a Save that met a full disk: the first, doubled
  // after each failed attempt up to the max.
  Duration nospace_retry_min = milliseconds(50);
  Duration nospace_retry_max = seconds(1);
  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
};

class RaftNode {
 public:
  using ProposeCallback = std::function<void(Status)>;
  using ReadIndexCallback = std::function<void(StatusOr<uint64_t>)>;
  using LeaderCallback = std::function<void(uint64_t leader, uint64_t term)>;

  // `log` must outlive the node; transport and applier too.
  RaftNode(RaftNodeOptions options, RaftLog* log, Transport* transport,
           Applier* applier);
  ~RaftNode();

  // Creates the raft core over the log and starts the loop thread.
  Status Start();
  // Stops the loop. Reads still waiting, and reads asked for afterwards, are
  // answered Unavailable; queued proposals not yet handed to raft get
  // `on_dropped(Unavailable)`.
  void Stop();

  // Queues a proposal. `on_dropped` runs (on the loop thread) only if the
  // core refused it (no leader, transfer in flight, uncommitted quota full):
  // then it was certainly not committed. Success is learned when the entry
  // is applied, not here.
  void Propose(std::string data, ProposeCallback on_dropped);
  void ProposeConfChange(raftpb::ConfChange cc, ProposeCallback on_dropped);
  // Asks for a linearizable read point. Concurrent requests share one
  // ReadIndex round. The callback gets the commit index to wait for.
  void ReadIndex(ReadIndexCallback cb);
  void Step(raftpb::Message msg);
  // Queues several messages (one peer-stream read) with one wake-up.
  void StepMany(std::vector<raftpb::Message> msgs);
  void TransferLeader(uint64_t transferee);
  void ReportUnreachable(uint64_t id);
  void ReportSnapshot(uint64_t id, raft::SnapshotStatus status);
  void Campaign();
  // Records that the state machine is durable at `index`: a snapshot marker,
  // then memory/WAL compaction behind it.
  void CreateSnapshot(uint64_t index, raftpb::ConfState conf_state);

  // The applier's verdict on the committed conf change at `index` (see
  // Applier::DecidesConfChanges); the loop waits for it. Any thread.
  void ResolveConfChange(uint64_t index, ConfChangeVerdict verdict);

  void SetLeaderCallback(LeaderCallback cb);

  uint64_t id() const { return options_.raft.id; }
  uint64_t leader() const { return leader_.load(); }
  uint64_t term() const { return term_.load(); }
  uint64_t commit_index() const { return commit_.load(); }
  // Whether the loop halted (above).
  bool halted() const { return halted_.load(); }
  // Whether the loop is blocked on a full disk (above).
  bool persist_blocked() const { return persist_blocked_.load(); }
  bool is_leader() const { return leader_.load() == id(); }
  raft::BasicStatus BasicStatus();
  // The raft core's current configuration (voters, learners).
  raftpb::ConfState ConfState();
  // etcd's isLearnerReady, as the leader sees it: kFailedPrecondition
  // "etcdserver: can only promote a learner member which is in sync with
  // leader" when learner `id`'s match index is below 90% of the leader's
  // own; kNotLeader on a follower (only the leader tracks progress); Ok
  // for an id it does not track.
  Status LearnerReady(uint64_t id);

 private:
  struct Proposal {
    std::string data;
    bool is_conf_change = false;
    raftpb::ConfChange cc;
    ProposeCallback on_dropped;
  };
  struct Inbox {
    std::vector<raftpb::Message> messages;
    std::vector<Proposal> proposals;
    std::vector<ReadIndexCallback> reads;
    std::vector<std::function<void(raft::RawNode&)>> ops;
  };

  enum class Outcome {
    kDone,     // the Ready was persisted, sent, handed off and advanced
    kBlocked,  // the disk is full: the Ready waits in pending_
    kHalted,
  };
  void Loop();
  Outcome HandleReady(raft::Ready rd);
  // The part of HandleReady from the durable write on (retried after a
  // full disk).
  Outcome PersistAndFinish(raft::Ready rd);
  // Keeps `rd` (not persisted) for a retry and schedules it.
  void Block(raft::Ready rd, const Status& why);
  // While blocked: answers or drops what the inbox brought (above).
  void ServeWhileBlocked(Inbox& work);
  // Fails every linearizable read waiting in the loop with `why`.
  void FailReads(const Status& why);
  // Halts the loop (loop thread): logs, reports `why` through on_halt.
  void Halt(const Status& why);
  // Leader (loop thread): `m` is a proposal promoting a learner whose
  // match index is below etcd's readyPercent of the leader's.
  bool PromotesALaggingLearner(const raftpb::Message& m);
  // Waits (loop thread) for the verdict on the conf change at `index`;
  // nullopt when the node stops meanwhile.
  std::optional<ConfChangeVerdict> AwaitVerdict(uint64_t index);
  // Called with mu_ held after queueing work: true if the caller must
  // notify cv_ (after unlocking). Only the first producer after the loop
  // went to sleep wakes it; the others' work is picked up by the same turn.
  bool NeedsWakeLocked() REQUIRES(mu_);

  RaftNodeOptions options_;
  RaftLog* log_;
  Transport* transport_;
  Applier* applier_;
  std::unique_ptr<raft::RawNode> raw_;

  // Locks: mu_ (the inbox) and status_mu_ are leaves, never held together,
  // and no callback runs with either held.
  Mutex mu_;
  std::condition_variable cv_;
  Inbox inbox_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  // The loop waits on cv_.
  bool loop_sleeping_ GUARDED_BY(mu_) = false;
  // It was notified since it went to sleep.
  bool wake_sent_ GUARDED_BY(mu_) = false;
  LeaderCallback leader_cb_ GUARDED_BY(mu_);
  // Verdicts on conf changes not yet taken by the loop, by entry index, and
  // the last index taken (a later verdict at or below it is stale).
  std::map<uint64_t, ConfChangeVerdict> verdicts_ GUARDED_BY(mu_);
  uint64_t verdict_taken_ GUARDED_BY(mu_) = 0;

  // Loop-thread state.
  // A read request's context is this prefix and read_seq_: the leader
  // keeps pending reads by context alone and drops a second one with the
  // same, so it must be unique in the cluster (every member counts from
  // 1): the member's id and a number drawn at start (a restarted member
  // counts from 1 again).
  const std::string read_ctx_prefix_;
  uint64_t read_seq_ = 0;
  bool read_in_flight_ = false;
  std::string read_ctx_;
  std::vector<ReadIndexCallback> reads_waiting_;    // not yet requested
  std::vector<ReadIndexCallback> reads_in_flight_;  // the current round
  TimePoint read_started_;

  std::atomic<uint64_t> leader_{0};
  std::atomic<uint64_t> term_{0};
  std::atomic<uint64_t> commit_{0};
  std::atomic<bool> halted_{false};
  std::atomic<bool> persist_blocked_{false};
  // Loop-thread state while blocked on a full disk: the Ready to save
  // again, when, the next wait, attempts so far, requests kept for later.
  std::optional<raft::Ready> pending_;
  TimePoint retry_at_;
  Duration retry_wait_{};
  int retry_attempts_ = 0;
  std::vector<std::function<void(raft::RawNode&)>> deferred_ops_;
  Mutex status_mu_;
  raft::BasicStatus status_ GUARDED_BY(status_mu_);
  raftpb::ConfState conf_state_ GUARDED_BY(status_mu_);
  // As leader: each tracked member's match index (empty otherwise).
  std::map<uint64_t, uint64_t> match_ GUARDED_BY(status_mu_);

  std::thread thread_;

  metrics::Counter* leader_changes_;
  metrics::Gauge* has_leader_;  // etcd_server_has_leader
  metrics::Gauge* is_leader_;   // etcd_server_is_leader
  metrics::Counter* proposals_dropped_;
  metrics::Counter* save_nospace_;
  metrics::Histogram* fsync_seconds_;
  metrics::Histogram* ready_entries_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_RAFT_NODE_H_
