#include "storage/server/raft_node.h"

#include <pthread.h>

#include <random>

#include "base/logging.h"

namespace kplane::storage {

namespace {

// "<member id>.<random>.": see read_ctx_prefix_.
std::string ReadContextPrefix(uint64_t id) {
  std::random_device random;
  const uint64_t drawn = uint64_t{random()} << 32 | random();
  return std::to_string(id) + "." + std::to_string(drawn) + ".";
}

}  // namespace

RaftNode::RaftNode(RaftNodeOptions options, RaftLog* log, Transport* transport,
                   Applier* applier)
    : options_(std::move(options)),
      log_(log),
      transport_(transport),
      applier_(applier),
      read_ctx_prefix_(ReadContextPrefix(options_.raft.id)) {
  auto* reg = options_.metrics;
  leader_changes_ = reg->NewCounter("etcd_server_leader_changes_seen_total",
                                    "Leader changes seen by this member.")
                        ->With({});
  // etcd's help texts; both 0 until this member sees a leader.
  has_leader_ =
      reg->NewGauge("etcd_server_has_leader",
                    "Whether or not a leader exists. 1 is existence, 0 is not.")
          ->With({});
  is_leader_ = reg->NewGauge("etcd_server_is_leader",
                             "Whether or not this member is a leader. 1 if "
                             "is, 0 otherwise.")
                   ->With({});
  has_leader_->Set(0);
  is_leader_->Set(0);
  proposals_dropped_ =
      reg->NewCounter("etcd_server_proposals_failed_total",
                      "Proposals the raft core refused (no leader, ...).")
          ->With({});
  save_nospace_ =
      reg->NewCounter("kplane_raft_log_save_nospace_total",
                      "Raft log writes that met a full disk (each retry "
                      "counts).")
          ->With({});
  fsync_seconds_ =
      reg->NewHistogram("etcd_disk_wal_fsync_duration_seconds",
                        "Latency of WAL writes that were fsynced.", {},
                        metrics::ExponentialBuckets(0.0001, 2, 16))
          ->With({});
  ready_entries_ =
      reg->NewHistogram("kplane_raft_ready_entries",
                        "Entries persisted per Ready (group commit size).", {},
                        metrics::ExponentialBuckets(1, 2, 12))
          ->With({});
}

RaftNode::~RaftNode() { Stop(); }

Status RaftNode::Start() {
  ASSIGN_OR_RETURN(raw_, raft::RawNode::Create(options_.raft, log_->storage()));
  {
    MutexLock l(&status_mu_);
    status_ = raw_->GetBasicStatus();
    conf_state_ = raw_->raft().prs.ConfState();
    term_ = status_.hard_state.term();
    commit_ = status_.hard_state.commit();
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void RaftNode::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whoever waits on a read or a proposal must hear back, also when the
  // loop is gone: a reader blocked in StoreServer::Range would hang.
  Inbox left;
  {
    MutexLock l(&mu_);
    std::swap(left, inbox_);
  }
  const Status stopped(StatusCode::kUnavailable, "etcdserver: server stopped");
  for (auto& cb : left.reads) cb(stopped);
  for (auto& cb : reads_waiting_) cb(stopped);
  for (auto& cb : reads_in_flight_) cb(stopped);
  reads_waiting_.clear();
  reads_in_flight_.clear();
  read_in_flight_ = false;
  for (Proposal& p : left.proposals) {
    if (p.on_dropped) p.on_dropped(stopped);
  }
}

bool RaftNode::NeedsWakeLocked() {
  if (!loop_sleeping_ || wake_sent_) return false;
  wake_sent_ = true;
  return true;
}

namespace {
Status Halted() {
  return Status(StatusCode::kUnavailable,
                "etcdserver: this member halted (see its log)");
}
// A proposal while the log cannot be written: etcd's NOSPACE error.
Status DiskFull() {
  return Status(StatusCode::kNoSpace,
                "etcdserver: mvcc: database space exceeded");
}
// A linearizable read meanwhile: another member may serve it.
Status DiskFullRead() {
  return Status(StatusCode::kUnavailable,
                "etcdserver: this member cannot write its log (disk full); "
                "serializable reads are served");
}
}  // namespace

void RaftNode::Propose(std::string data, ProposeCallback on_dropped) {
  if (halted_.load() || persist_blocked_.load()) {
    if (on_dropped) on_dropped(halted_.load() ? Halted() : DiskFull());
    return;
  }
  bool wake;
  {
    MutexLock l(&mu_);
    inbox_.proposals.push_back(
        Proposal{std::move(data), false, {}, std::move(on_dropped)});
    wake = NeedsWakeLocked();
  }
  if (wake) cv_.notify_one();
}

void RaftNode::ProposeConfChange(raftpb::ConfChange cc,
                                 ProposeCallback on_dropped) {
  if (halted_.load() || persist_blocked_.load()) {
    if (on_dropped) on_dropped(halted_.load() ? Halted() : DiskFull());
    return;
  }
  bool wake;
  {
    MutexLock l(&mu_);
    inbox_.proposals.push_back(
        Proposal{"", true, std::move(cc), std::move(on_dropped)});
    wake = NeedsWakeLocked();
  }
  if (wake) cv_.notify_one();
}

void RaftNode::ReadIndex(ReadIndexCallback cb) {
  bool wake;
  {
    MutexLock l(&mu_);
    if (stop_ || halted_.load() || persist_blocked_.load()) {
      l.Unlock();
      cb(halted_.load() ? Halted()
         : persist_blocked_.load()
             ? DiskFullRead()
             : Status(StatusCode::kUnavailable, "etcdserver: server stopped"));
      return;
    }
    inbox_.reads.push_back(std::move(cb));
    wake = NeedsWakeLocked();
  }
  if (wake) cv_.notify_one();
}

void RaftNode::Step(raftpb::Message msg) {
  bool wake;
  {
    MutexLock l(&mu_);
    inbox_.messages.push_back(std::move(msg));
    wake = NeedsWakeLocked();
  }
  if (wake) cv_.notify_one();
}

void RaftNode::StepMany(std::vector<raftpb::Message> msgs) {
  if (msgs.empty()) return;
  bool wake;
  {
    MutexLock l(&mu_);
    if (inbox_.messages.empty()) {
      inbox_.messages = std::move(msgs);
    } else {
      for (raftpb::Message& m : msgs) inbox_.messages.push_back(std::move(m));
    }
    wake = NeedsWakeLocked();
  }
  if (wake) cv_.notify_one();
}

void RaftNode::TransferLeader(uint64_t transferee) {
  MutexLock l(&mu_);
  inbox_.ops.push_back(
      [transferee](raft::RawNode& r) { r.TransferLeader(transferee); });
  cv_.notify_one();
}

void RaftNode::ReportUnreachable(uint64_t id) {
  MutexLock l(&mu_);
  inbox_.ops.push_back([id](raft::RawNode& r) { r.ReportUnreachable(id); });
  cv_.notify_one();
}

void RaftNode::ReportSnapshot(uint64_t id, raft::SnapshotStatus status) {
  MutexLock l(&mu_);
  inbox_.ops.push_back(
      [id, status](raft::RawNode& r) { r.ReportSnapshot(id, status); });
  cv_.notify_one();
}

void RaftNode::Campaign() {
  MutexLock l(&mu_);
  inbox_.ops.push_back([](raft::RawNode& r) {
    Status s = r.Campaign();
    if (!s.ok()) LOG(WARNING) << "campaign: " << s;
  });
  cv_.notify_one();
}

void RaftNode::CreateSnapshot(uint64_t index, raftpb::ConfState conf_state) {
  MutexLock l(&mu_);
  inbox_.ops.push_back(
      [this, index, cs = std::move(conf_state)](raft::RawNode&) {
        Status s = log_->CreateSnapshot(index, cs);
        if (s.Is(StatusCode::kNoSpace) && !log_->wal_failed()) {
          // Nothing was written; the next snapshot tries again (the WAL
          // just keeps its segments longer).
          LOG(WARNING) << "no snapshot marker at index " << index << ": " << s;
        } else if (!s.ok()) {
          Halt(s.Annotate("writing the snapshot marker"));
        }
      });
  cv_.notify_one();
}

void RaftNode::ResolveConfChange(uint64_t index, ConfChangeVerdict verdict) {
  {
    MutexLock l(&mu_);
    if (index <= verdict_taken_) return;  // decided again on a retry
    verdicts_[index] = verdict;
  }
  cv_.notify_all();
}

std::optional<ConfChangeVerdict> RaftNode::AwaitVerdict(uint64_t index) {
  MutexLock l(&mu_);
  cv_.wait(l.native(),
           [&]() REQUIRES(mu_) { return stop_ || verdicts_.count(index) > 0; });
  auto it = verdicts_.find(index);
  if (it == verdicts_.end()) return std::nullopt;  // stopping
  const ConfChangeVerdict v = it->second;
  verdicts_.erase(verdicts_.begin(), std::next(it));
  verdict_taken_ = index;
  return v;
}

void RaftNode::SetLeaderCallback(LeaderCallback cb) {
  MutexLock l(&mu_);
  leader_cb_ = std::move(cb);
}

raft::BasicStatus RaftNode::BasicStatus() {
  MutexLock l(&status_mu_);
  return status_;
}

raftpb::ConfState RaftNode::ConfState() {
  MutexLock l(&status_mu_);
  return conf_state_;
}

namespace {
// etcd's readyPercent.
constexpr double kLearnerReadyPercent = 0.9;

Status NotInSync() {
  return FailedPreconditionError(
      "etcdserver: can only promote a learner member which is in sync with "
      "leader");
}

// Whether `match` has `learner` in sync with `leader` (etcd's check).
bool InSync(const std::map<uint64_t, uint64_t>& match, uint64_t learner,
            uint64_t leader) {
  auto l = match.find(learner);
  if (l == match.end()) return true;
  auto it = match.find(leader);
  const uint64_t leader_match = it == match.end() ? 0 : it->second;
  return static_cast<double>(l->second) >=
         static_cast<double>(leader_match) * kLearnerReadyPercent;
}
}  // namespace

Status RaftNode::LearnerReady(uint64_t id) {
  MutexLock l(&status_mu_);
  if (match_.empty()) {
    return Status(StatusCode::kNotLeader, "etcdserver: not leader",
                  static_cast<int64_t>(leader_.load()));
  }
  return InSync(match_, id, this->id()) ? Status::Ok() : NotInSync();
}

bool RaftNode::PromotesALaggingLearner(const raftpb::Message& m) {
  if (m.type() != raftpb::MsgProp || !is_leader()) return false;
  const raft::ProgressTracker& prs = raw_->raft().prs;
  for (const raftpb::Entry& e : m.entries()) {
    if (e.type() != raftpb::EntryConfChange) continue;
    raftpb::ConfChange cc;
    if (!cc.ParseFromString(e.data()) ||
        cc.type() != raftpb::ConfChangeAddNode) {
      continue;
    }
    auto learner = prs.progress.find(cc.node_id());
    auto self = prs.progress.find(id());
    if (learner == prs.progress.end() || !learner->second.is_learner ||
        self == prs.progress.end()) {
      continue;
    }
    if (static_cast<double>(learner->second.match) <
        static_cast<double>(self->second.match) * kLearnerReadyPercent) {
      return true;
    }
  }
  return false;
}

void RaftNode::Loop() {
  pthread_setname_np(pthread_self(), "raft-loop");
  Clock* clock = options_.clock;
  const Duration tick = options_.tick_interval;
  // A ReadIndex round that gets no answer (the leader changed underneath it)
  // is abandoned after two election timeouts and its readers retried by
  // their callers.
  const Duration read_timeout = tick * options_.raft.election_tick * 2;
  TimePoint next_tick = clock->Now() + tick;
  while (true) {
    Inbox work;
    {
      MutexLock l(&mu_);
      loop_sleeping_ = true;
      wake_sent_ = false;
      const TimePoint wake_at = pending_ ? retry_at_ : next_tick;
      clock->WaitUntil(l.native(), cv_, wake_at, [&]() REQUIRES(mu_) {
        return stop_ || !inbox_.messages.empty() || !inbox_.proposals.empty() ||
               !inbox_.reads.empty() || !inbox_.ops.empty();
      });
      loop_sleeping_ = false;
      if (stop_) break;
      std::swap(work, inbox_);
    }
    if (pending_) {
      // Blocked on a full disk: no tick, no step, no new Ready.
      ServeWhileBlocked(work);
      if (clock->Now() < retry_at_) continue;
      raft::Ready rd = std::move(*pending_);
      pending_.reset();
      const Outcome o = PersistAndFinish(std::move(rd));
      if (o == Outcome::kHalted) break;
      if (o == Outcome::kBlocked) continue;
      persist_blocked_ = false;
      LOG(INFO) << "member " << std::hex << id() << std::dec
                << ": the raft log is written again (" << retry_attempts_
                << " attempts); the NOSPACE alarm stays until it is disarmed";
      // The time blocked does not count as ticks missed: ticking them all
      // now could start an election at once.
      next_tick = clock->Now() + tick;
      std::vector<std::function<void(raft::RawNode&)>> ops;
      ops.swap(deferred_ops_);
      for (auto& op : ops) op(*raw_);
      if (halted_.load()) break;
      Outcome more = Outcome::kDone;
      while (more == Outcome::kDone && raw_->HasReady()) {
        more = HandleReady(raw_->GetReady());
      }
      if (more == Outcome::kHalted) break;
      continue;
    }
    TimePoint now = clock->Now();
    for (int n = 0; now >= next_tick && n < 10; ++n) {
      raw_->Tick();
      next_tick += tick;
    }
    if (now >= next_tick) next_tick = now + tick;  // fell far behind

    for (raftpb::Message& m : work.messages) {
      if (PromotesALaggingLearner(m)) {
        // A follower forwarded a promote of a learner that has not caught
        // up (etcd checks this on the leader: isLearnerReady): dropped,
        // as the core drops a conf change it refuses.
        LOG(WARNING) << "member " << std::hex << id() << std::dec
                     << ": dropped a forwarded promote: " << NotInSync();
        proposals_dropped_->Inc();
        continue;
      }
      Status s = raw_->Step(std::move(m));
      if (!s.ok()) LOG(DEBUG) << "step: " << s;
    }
    for (Proposal& p : work.proposals) {
      Status s = p.is_conf_change ? raw_->ProposeConfChange(p.cc)
                                  : raw_->Propose(std::move(p.data));
      if (!s.ok()) {
        proposals_dropped_->Inc();
        if (p.on_dropped) p.on_dropped(s);
      }
    }
    for (auto& op : work.ops) op(*raw_);
    if (halted_.load()) break;

    for (auto& r : work.reads) reads_waiting_.push_back(std::move(r));
    if (read_in_flight_ && now - read_started_ > read_timeout) {
      for (auto& cb : reads_in_flight_) {
        cb(Status(StatusCode::kDeadlineExceeded,
                  "etcdserver: request timed out"));
      }
      reads_in_flight_.clear();
      read_in_flight_ = false;
    }
    if (!read_in_flight_ && !reads_waiting_.empty()) {
      if (leader_.load() == raft::kNone) {
        for (auto& cb : reads_waiting_) {
          cb(Status(StatusCode::kUnavailable, "etcdserver: no leader"));
        }
        reads_waiting_.clear();
      } else {
        read_ctx_ = read_ctx_prefix_ + std::to_string(++read_seq_);
        raw_->ReadIndex(read_ctx_);
        read_in_flight_ = true;
        read_started_ = now;
        reads_in_flight_ = std::move(reads_waiting_);
        reads_waiting_.clear();
      }
    }

    Outcome o = Outcome::kDone;
    while (o == Outcome::kDone && raw_->HasReady()) {
      o = HandleReady(raw_->GetReady());
    }
    if (o == Outcome::kHalted) break;
  }
  // Halted: fail what waits now rather than at Stop().
  if (halted_.load()) FailReads(Halted());
}

void RaftNode::Halt(const Status& why) {
  if (halted_.exchange(true)) return;
  LOG(ERROR) << "member " << std::hex << id() << std::dec
             << ": the raft node loop halts: " << why;
  if (options_.on_halt) options_.on_halt(why);
}

void RaftNode::FailReads(const Status& why) {
  for (auto& cb : reads_waiting_) cb(why);
  for (auto& cb : reads_in_flight_) cb(why);
  reads_waiting_.clear();
  reads_in_flight_.clear();
  read_in_flight_ = false;
}

void RaftNode::Block(raft::Ready rd, const Status& why) {
  save_nospace_->Inc();
  ++retry_attempts_;
  if (!persist_blocked_.load()) {
    // The owner raises its alarm before persist_blocked() turns true, so
    // whoever sees the member blocked also sees the alarm.
    retry_attempts_ = 1;
    retry_wait_ = options_.nospace_retry_min;
    LOG(ERROR) << "member " << std::hex << id() << std::dec
               << ": the disk under the raft log is full (" << why
               << "): NOSPACE. This member persists, steps, sends and "
                  "applies nothing more, and refuses proposals, until the "
                  "write succeeds (retried); serializable reads are served.";
    if (options_.on_persist_blocked) options_.on_persist_blocked(why);
    persist_blocked_ = true;
  } else if (retry_attempts_ <= 3 || retry_attempts_ % 20 == 0) {
    LOG(WARNING) << "the disk under the raft log is still full (attempt "
                 << retry_attempts_ << "): " << why;
  }
  // Reads waiting on a ReadIndex round would wait for nothing.
  FailReads(DiskFullRead());
  pending_ = std::move(rd);
  retry_at_ = options_.clock->Now() + retry_wait_;
  retry_wait_ = std::min<Duration>(retry_wait_ * 2, options_.nospace_retry_max);
}

void RaftNode::ServeWhileBlocked(Inbox& work) {
  // Messages are dropped: raft resends what matters once this member
  // takes part again (and a leader elsewhere goes on without it).
  for (Proposal& p : work.proposals) {
    proposals_dropped_->Inc();
    if (p.on_dropped) p.on_dropped(DiskFull());
  }
  for (auto& cb : work.reads) cb(DiskFullRead());
  for (auto& op : work.ops) deferred_ops_.push_back(std::move(op));
}

RaftNode::Outcome RaftNode::HandleReady(raft::Ready rd) {
  if (rd.soft_state) {
    uint64_t old = leader_.exchange(rd.soft_state->lead);
    if (old != rd.soft_state->lead) {
      leader_changes_->Inc();
      has_leader_->Set(rd.soft_state->lead != 0 ? 1 : 0);
      is_leader_->Set(rd.soft_state->lead == id() ? 1 : 0);
      LOG(INFO) << "member " << std::hex << id() << std::dec << " sees leader "
                << std::hex << rd.soft_state->lead << std::dec << " (was "
                << std::hex << old << std::dec << ")";
      LeaderCallback cb;
      {
        MutexLock l(&mu_);
        cb = leader_cb_;
      }
      uint64_t t = raft::IsEmptyHardState(rd.hard_state) ? term_.load()
                                                         : rd.hard_state.term();
      if (cb) cb(rd.soft_state->lead, t);
    }
  }
  if (!raft::IsEmptyHardState(rd.hard_state)) {
    term_ = rd.hard_state.term();
  }
  for (const raft::ReadState& rs : rd.read_states) {
    if (read_in_flight_ && rs.request_ctx == read_ctx_) {
      for (auto& cb : reads_in_flight_) cb(rs.index);
      reads_in_flight_.clear();
      read_in_flight_ = false;
    }
  }

  const bool leader = is_leader();
  if (leader && !rd.messages.empty()) {
    transport_->Send(std::move(rd.messages));
    rd.messages.clear();
  }
  return PersistAndFinish(std::move(rd));
}

RaftNode::Outcome RaftNode::PersistAndFinish(raft::Ready rd) {
  {
    bool timed = rd.must_sync && !rd.entries.empty();
    TimePoint start = options_.clock->Now();
    Status s = log_->Save(rd.hard_state, rd.entries, rd.snapshot, rd.must_sync);
    if (s.Is(StatusCode::kNoSpace) && !log_->wal_failed()) {
      // A full disk: nothing of the Ready was kept; save it again later.
      Block(std::move(rd), s);
      return Outcome::kBlocked;
    }
    if (!s.ok()) {
      // Nothing of this Ready may be acted on: a follower must not
      // acknowledge, nobody may apply what is not durable.
      Halt(s.Annotate("raft log write failed"));
      return Outcome::kHalted;
    }
    if (timed) {
      fsync_seconds_->Observe(
          std::chrono::duration<double>(options_.clock->Now() - start).count());
      ready_entries_->Observe(static_cast<double>(rd.entries.size()));
    }
  }
  if (!rd.messages.empty()) transport_->Send(std::move(rd.messages));

  ApplyTask task;
  task.term = term_.load();
  if (!raft::IsEmptySnapshot(rd.snapshot)) {
    task.conf_state = rd.snapshot.metadata().conf_state();
    task.has_conf_state = true;
    task.snapshot = std::move(rd.snapshot);
  }
  const bool decides = applier_->DecidesConfChanges();
  bool conf_changed = task.has_conf_state;
  if (!rd.committed_entries.empty()) {
    commit_ = std::max(commit_.load(), rd.committed_entries.back().index());
  }
  if (!raft::IsEmptyHardState(rd.hard_state)) {
    commit_ = std::max(commit_.load(), rd.hard_state.commit());
  }
  for (raftpb::Entry& e : rd.committed_entries) {
    bool decoded = true;
    if (e.type() == raftpb::EntryConfChange) {
      raftpb::ConfChange cc;
      decoded = cc.ParseFromString(e.data());
      if (decoded && decides) {
        // The applier validates it against its membership first (the
        // header): hand over everything up to it and wait for its verdict.
        const uint64_t index = e.index();
        if (task.has_conf_state) {
          // What comes before it with the configuration it has (a
          // snapshot's, the previous change's): the applier validates
          // against that.
          applier_->Enqueue(std::move(task));
          task = ApplyTask();
          task.term = term_.load();
        }
        task.entries.push_back(std::move(e));
        task.conf_change_to_decide = index;
        applier_->Enqueue(std::move(task));
        const std::optional<ConfChangeVerdict> verdict = AwaitVerdict(index);
        if (!verdict) return Outcome::kHalted;  // stopping
        if (*verdict == ConfChangeVerdict::kHalt) {
          Halt(
              UnavailableError("the applier stopped before deciding on the "
                               "conf change at index " +
                               std::to_string(index)));
          return Outcome::kHalted;
        }
        if (*verdict == ConfChangeVerdict::kApply) {
          raw_->ApplyConfChange(cc);
        } else {
          LOG(INFO) << "member " << std::hex << id() << std::dec
                    << ": the conf change at index " << index
                    << " was refused when applied; the configuration stays";
        }
        // The next task carries the configuration after it.
        task = ApplyTask();
        task.term = term_.load();
        task.conf_state = raw_->raft().prs.ConfState();
        task.has_conf_state = true;
        conf_changed = true;
        continue;
      }
      if (decoded) task.conf_state = raw_->ApplyConfChange(cc);
    } else if (e.type() == raftpb::EntryConfChangeV2) {
      raftpb::ConfChangeV2 cc;
      decoded = cc.ParseFromString(e.data());
      if (decoded) task.conf_state = raw_->ApplyConfChange(cc);
    } else {
      task.entries.push_back(std::move(e));
      continue;
    }
    if (!decoded) {
      // Going on with a configuration out of step with the others' could
      // count a wrong quorum: stop taking part instead.
      Halt(CorruptionError("committed conf change at index " +
                           std::to_string(e.index()) + " is undecodable"));
      return Outcome::kHalted;
    }
    task.has_conf_state = true;
    conf_changed = true;
    task.entries.push_back(std::move(e));
  }
  if (!task.entries.empty() || !raft::IsEmptySnapshot(task.snapshot) ||
      task.has_conf_state) {
    applier_->Enqueue(std::move(task));
  }
  raw_->Advance();
  MutexLock l(&status_mu_);
  status_ = raw_->GetBasicStatus();
  if (conf_changed) conf_state_ = raw_->raft().prs.ConfState();
  match_.clear();
  if (raw_->raft().state == raft::StateType::kLeader) {
    for (const auto& [peer, pr] : raw_->raft().prs.progress) {
      match_[peer] = pr.match;
    }
  }
  return Outcome::kDone;
}

}  // namespace kplane::storage
