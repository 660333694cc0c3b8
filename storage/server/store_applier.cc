#include "storage/server/store_applier.h"

#include <pthread.h>

#include <algorithm>
#include <future>

#include "base/logging.h"
#include "storage/raft/util.h"
#include "storage/server/entry_check.h"

namespace kplane::storage {

namespace {

// Where a received snapshot waits to be installed.
std::string PendingSnapshotDir(const std::string& member_dir, uint64_t index) {
  return member_dir + "/snap/db-" + std::to_string(index);
}

}  // namespace

StoreApplier::StoreApplier(StoreApplierOptions options,
                           std::unique_ptr<mvcc::Store> store,
                           Membership* membership, LocalMember* self,
                           Proposer* proposer, AuthStore* auth)
    : options_(std::move(options)),
      fs_(options_.store_options.file_system
              ? options_.store_options.file_system
              : FileSystem::Default()),
      clock_(options_.clock),
      membership_(membership),
      self_(self),
      proposer_(proposer),
      auth_(auth),
      store_(std::move(store)) {
  auth_->Load(membership_->Record().auth());
  auto* reg = options_.metrics;
  committed_ =
      reg->NewCounter("etcd_server_proposals_committed_total",
                      "Committed proposals (entries) seen by this member.")
          ->With({});
  applied_total_ =
      reg->NewCounter("etcd_server_proposals_applied_total",
                      "Proposals (entries) applied by this member.")
          ->With({});
}

StoreApplier::~StoreApplier() { Stop(); }

Status StoreApplier::FinishInstall(FileSystem* fs,
                                   const std::string& member_dir,
                                   uint64_t snapshot_index) {
  if (fs == nullptr) fs = FileSystem::Default();
  std::string pending = PendingSnapshotDir(member_dir, snapshot_index);
  // InstallSnapshot moves pending/db into place first and the membership
  // second; the crash may have come before, between or after the two, so
  // each is finished only if it is still pending (after the first, db/ is
  // already the snapshot's and must not be deleted).
  if (snapshot_index == 0 || !fs->Exists(pending)) return Status::Ok();
  LOG(INFO) << "finishing the install of received snapshot " << pending;
  if (fs->Exists(pending + "/db")) {
    RETURN_IF_ERROR(RemoveAll(fs, member_dir + "/db"));
    RETURN_IF_ERROR(fs->Rename(pending + "/db", member_dir + "/db")
                        .Annotate("install snapshot"));
  }
  if (fs->Exists(pending + "/cluster.pb")) {
    RETURN_IF_ERROR(
        fs->Rename(pending + "/cluster.pb", member_dir + "/cluster.pb")
            .Annotate("install snapshot membership"));
  }
  // The moves must be durable (in both directories) before the pending
  // directory goes.
  RETURN_IF_ERROR(fs->SyncDir(member_dir));
  RETURN_IF_ERROR(fs->SyncDir(pending));
  RETURN_IF_ERROR(RemoveAll(fs, pending));
  return fs->SyncDir(member_dir + "/snap");
}

void StoreApplier::Start(const raftpb::SnapshotMetadata& last_snapshot,
                         RaftNode* node, PeerTransport* transport,
                         std::shared_ptr<net::WorkerPool> read_pool) {
  node_ = node;
  transport_ = transport;
  read_pool_ = std::move(read_pool);
  applied_ = db()->ConsistentIndex();
  auth_->NoteApplied(applied_.load());
  RefreshAlarms();
  last_snapshot_index_ = last_snapshot.index();
  processed_index_ = last_snapshot_index_;
  conf_state_ = last_snapshot.conf_state();
  applied_entry_term_ = last_snapshot.term();
  thread_ = std::thread([this] { Loop(); });
}

void StoreApplier::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Nothing will be applied any more: fail whoever still waits.
  std::map<uint64_t, ReadWaiter> reads;
  {
    MutexLock l(&mu_);
    reads.swap(read_waiters_);
  }
  for (auto& [seq, w] : reads) {
    w.ready(UnavailableError("etcdserver: server stopped"));
  }
}

// Runs on the node loop. A batch of plain entries (InlineApplyFits), while
// the apply thread is idle with nothing queued, is applied right here: its
// writes and answers then cost no hand-off to the apply thread (at one
// client that hand-off is one of the few thread wake-ups a put pays; under
// load, a group commit's batch of tens of entries, the loop's time applying
// it lets the next batch grow). Very large batches, snapshots and conf
// changes go to the apply thread, so the loop keeps replicating while they
// apply.
void StoreApplier::Enqueue(ApplyTask task) {
  bool inline_apply;
  {
    MutexLock l(&mu_);
    inline_apply =
        queue_.empty() && !apply_busy_ && !stopping_ && CanApplyInline(task);
    if (inline_apply) {
      apply_busy_ = true;
    } else {
      queue_.push_back(std::move(task));
    }
  }
  if (!inline_apply) {
    cv_.notify_one();
    return;
  }
  const bool retry = ApplyTaskNow(task);
  bool queued;
  {
    MutexLock l(&mu_);
    // A full disk: the apply thread waits and retries it, first.
    if (retry) queue_.push_front(std::move(task));
    apply_busy_ = false;
    queued = !queue_.empty();  // a barrier came meanwhile
  }
  if (queued) cv_.notify_one();
}

void StoreApplier::Loop() {
  pthread_setname_np(pthread_self(), "apply");
  while (true) {
    ApplyTask task;
    {
      MutexLock l(&mu_);
      cv_.wait(l.native(), [&]() REQUIRES(mu_) {
        return (stopping_ && !apply_busy_) || (!queue_.empty() && !apply_busy_);
      });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      apply_busy_ = true;
    }
    if (options_.crash_hook && !task.barrier) options_.crash_hook("apply:task");
    // A task handed back by the node loop after a full disk goes straight
    // to the wait: the store refuses writes until it is resumed.
    bool retry = !task.barrier && !apply_stopped_.load() && db() != nullptr &&
                 db()->DiskFull();
    if (!retry) retry = ApplyTaskNow(task);
    if (retry && !RetryAfterFullDisk(task)) {
      // Stopping with the disk still full: the task's entries stay in the
      // WAL for the next start. Whoever waits for a barrier is answered.
      RunQueuedBarriers();
      MutexLock l(&mu_);
      apply_busy_ = false;
      return;
    }
    MutexLock l(&mu_);
    apply_busy_ = false;
  }
}

bool StoreApplier::RetryAfterFullDisk(ApplyTask& task) {
  Duration wait = options_.nospace_retry_min;
  int attempts = 0;
  while (true) {
    if (!WaitToRetry(wait)) return false;
    wait = std::min<Duration>(wait * 2, options_.nospace_retry_max);
    ++attempts;
    Status resumed = db()->ResumeAfterFullDisk();
    if (resumed.ok()) {
      if (!ApplyTaskNow(task)) {
        if (!apply_stopped_.load()) {
          LOG(INFO) << "applied again after a full disk (" << attempts
                    << " attempts); the NOSPACE alarm stays until it is "
                       "disarmed";
        }
        return true;
      }
    } else {
      // Log the first failures, then now and then.
      if (attempts <= 3 || attempts % 20 == 0) {
        LOG(WARNING) << "the disk under the store is still full (attempt "
                     << attempts << "): " << resumed;
      }
      EnterNoSpace(resumed);
    }
  }
}

bool StoreApplier::WaitToRetry(Duration d) {
  const TimePoint deadline = clock_->Now() + d;
  while (true) {
    {
      MutexLock l(&mu_);
      clock_->WaitUntil(l.native(), cv_, deadline, [&]() REQUIRES(mu_) {
        if (stopping_) return true;
        for (const ApplyTask& t : queue_) {
          if (t.barrier) return true;
        }
        return false;
      });
      if (stopping_) return false;
    }
    RunQueuedBarriers();
    if (clock_->Now() >= deadline) return true;
  }
}

void StoreApplier::RunQueuedBarriers() {
  std::vector<ApplyTask> barriers;
  {
    MutexLock l(&mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->barrier) {
        barriers.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (ApplyTask& b : barriers) b.barrier();
}

void StoreApplier::EnterNoSpace(const Status& why) {
  if (!local_nospace_.exchange(true)) {
    LOG(ERROR) << "the disk under the MVCC store is full (" << why
               << "): NOSPACE. Nothing after raft index " << processed_index_
               << " is applied until space is freed; puts are refused until "
                  "then and the alarm is disarmed (`kpctl store alarm "
                  "disarm`).";
  }
  ProposeNoSpaceAlarm();
}

void StoreApplier::PersistBlocked(const Status& why) {
  wal_alarm_due_ = true;
  if (!local_nospace_.exchange(true)) {
    LOG(ERROR) << "the disk under the raft log is full (" << why
               << "): NOSPACE. Puts are refused until space is freed and "
                  "the alarm is disarmed (`kpctl store alarm disarm`).";
  }
}

void StoreApplier::ProposeNoSpaceAlarmIfDue() {
  if (!wal_alarm_due_.load()) return;
  if (!local_nospace_.load()) {  // disarmed meanwhile
    wal_alarm_due_ = false;
    return;
  }
  for (const auto& a : membership_->Alarms()) {
    if (a.memberid() == self_->id() && a.alarm() == etcdserverpb::NOSPACE) {
      wal_alarm_due_ = false;  // applied here: it is in the log
      return;
    }
  }
  if (node_ == nullptr || node_->persist_blocked() || self_->leader_id() == 0)
    return;
  // At most one proposal a request timeout: an error answer does not mean
  // the entry will not commit (a leader change fails the waiters of
  // entries a new leader may still commit), and a second copy committed
  // after a disarm would raise the alarm again.
  const TimePoint now = clock_->Now();
  if (now < next_wal_alarm_try_) return;
  if (wal_alarm_in_flight_->exchange(true)) return;
  next_wal_alarm_try_ = now + options_.request_timeout;
  storagepb::InternalRaftRequest req;
  auto* a = req.mutable_alarm();
  a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  a->set_memberid(self_->id());
  a->set_alarm(etcdserverpb::NOSPACE);
  // Whatever the answer, the next call looks again (above).
  proposer_->Propose(std::move(req),
                     [in_flight = wal_alarm_in_flight_](
                         StatusOr<ApplyResponse>) { *in_flight = false; });
}

void StoreApplier::ProposeQuotaAlarm() {
  // Again a request timeout later while it has not been applied: a
  // proposal can be lost without an error answer (a leader that stepped
  // down before replicating it; the waiter then just expires), and an
  // alarm that never lands would leave the quota unenforced for good. A
  // second copy is harmless: this store is still past its quota.
  const TimePoint now = clock_->Now();
  if (now < next_quota_alarm_try_) return;
  next_quota_alarm_try_ = now + options_.request_timeout;
  storagepb::InternalRaftRequest req;
  auto* a = req.mutable_alarm();
  a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  a->set_memberid(self_->id());
  a->set_alarm(etcdserverpb::NOSPACE);
  proposer_->Propose(std::move(req), [](StatusOr<ApplyResponse>) {});
}

void StoreApplier::ProposeNoSpaceAlarm() {
  // Tell the others (so that every member lists the alarm and refuses
  // puts), once per episode -- again only if the proposal was dropped (no
  // leader, or this member's raft log could not be written): this member
  // cannot apply it to see it arrive.
  if (nospace_proposed_->exchange(true)) return;
  storagepb::InternalRaftRequest req;
  auto* a = req.mutable_alarm();
  a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  a->set_memberid(self_->id());
  a->set_alarm(etcdserverpb::NOSPACE);
  // The answer may come after this applier is gone (FailPending at stop).
  proposer_->Propose(std::move(req), [proposed = nospace_proposed_](
                                         StatusOr<ApplyResponse> r) {
    if (!r.ok() && (r.status().Is(StatusCode::kUnavailable) ||
                    r.status().Is(StatusCode::kNoSpace)))
      *proposed = false;
  });
}

void StoreApplier::Deliver(std::vector<Answer>& answers) {
  for (Answer& a : answers) {
    if (ApplyCallback cb = proposer_->Take(a.id)) cb(std::move(a.result));
  }
  answers.clear();
}

bool StoreApplier::InlineApplyFits(const ApplyTask& task) {
  if (task.barrier || !raft::IsEmptySnapshot(task.snapshot) ||
      task.has_conf_state || task.entries.empty() ||
      task.entries.size() > kMaxInlineApplyEntries) {
    return false;
  }
  size_t bytes = 0;
  for (const raftpb::Entry& e : task.entries) {
    if (e.type() != raftpb::EntryNormal) return false;
    bytes += e.data().size();
  }
  return bytes <= kMaxInlineApplyBytes;
}

bool StoreApplier::CanApplyInline(const ApplyTask& task) const {
  // Apply-only state is read here with mu_ held while the apply thread is
  // idle (apply_busy_ false), so it is stable.
  // A test hook stalls the apply thread ("apply:task"): every task must
  // reach it.
  if (options_.crash_hook || !InlineApplyFits(task)) return false;
  // A snapshot (a store fsync) is due after this task: leave it to the
  // apply thread.
  return !force_snapshot_ && task.entries.back().index() <
                                 last_snapshot_index_ + options_.snapshot_count;
}

bool StoreApplier::ApplyTaskNow(ApplyTask& task) {
  const uint64_t decide = task.conf_change_to_decide;
  const bool retry = ApplyTaskEntries(task);
  // The node loop waits for a verdict on the conf change ending the task:
  // if the apply stopped before it, the loop must not wait for ever.
  if (decide != 0 && !retry && decided_index_ < decide && node_ != nullptr) {
    node_->ResolveConfChange(decide, ConfChangeVerdict::kHalt);
  }
  return retry;
}

bool StoreApplier::ApplyTaskEntries(ApplyTask& task) {
  if (task.barrier) {
    task.barrier();
    return false;
  }
  // After a stop nothing is applied any more: the entries stay in the WAL
  // (replayed, and stopped at again, after a restart) and the store stays
  // as it was for diagnosis.
  if (apply_stopped_.load()) return false;
  if (!raft::IsEmptySnapshot(task.snapshot)) {
    Status s = InstallSnapshot(task.snapshot);
    if (!s.ok()) {
      StopApply(s.Annotate("installing the snapshot at index " +
                           std::to_string(task.snapshot.metadata().index())));
      return false;
    }
    conf_state_ = task.snapshot.metadata().conf_state();
    last_snapshot_index_ = task.snapshot.metadata().index();
    processed_index_ = last_snapshot_index_;
    applied_entry_term_ = task.snapshot.metadata().term();
    SetApplied(std::max<uint64_t>(task.snapshot.metadata().index(),
                                  db()->ConsistentIndex()));
    // Installed: a retry of the task's entries must not install it again.
    task.snapshot.Clear();
  }
  // The task's entries go to the store as one write group: one RocksDB
  // write for the lot. Nothing of it may be seen before that write, so the
  // answers, the applied index (linearizable reads wait on it) and the
  // watch events all follow EndWriteGroup.
  std::vector<Answer> answers;
  Status stop;
  uint64_t last_applied = 0;
  const uint64_t processed_before = processed_index_;
  const uint64_t term_before = applied_entry_term_;
  int seen = 0, applied = 0;  // counted once the attempt is not retried
  db()->BeginWriteGroup();
  for (const raftpb::Entry& e : task.entries) {
    ++seen;
    stop = ApplyEntry(e, &answers);
    if (!stop.ok()) break;
    applied_entry_term_ = e.term();
    processed_index_ = e.index();
    last_applied = e.index();
    ++applied;
  }
  // What the group staged before a failed entry is good: written, then
  // published and answered -- unless a store write failed (a failed or
  // full disk: the store's sticky WriteStatus). The store then published
  // nothing of the failed write, so answering, or moving the applied index
  // (which linearizable reads wait on), could serve a state it does not
  // hold: stop applying instead; a restart replays from its consistent
  // index. A full disk is the exception: the task is retried once the
  // store resumes (RetryAfterFullDisk).
  db()->EndWriteGroup();
  if (Status written = db()->WriteStatus(); !written.ok()) {
    if (db()->DiskFull()) {
      // The entries the store did write (flushed ahead of an entry that
      // reads the store) are at or below its consistent index: a retry
      // skips them, so answer them now. The rest is applied again.
      const uint64_t durable = db()->ConsistentIndex();
      std::vector<Answer> done;
      for (Answer& a : answers) {
        if (a.index <= durable) done.push_back(std::move(a));
      }
      Deliver(done);
      processed_index_ = processed_before;
      applied_entry_term_ = term_before;
      EnterNoSpace(written);
      return true;
    }
    StopApply(written.Annotate("writing applied entries to the store"));
    return false;
  }
  committed_->Inc(seen);
  applied_total_->Inc(applied);
  if (last_applied > 0) SetApplied(last_applied);
  Deliver(answers);
  // Over quota: the writes were applied (as on every member), and this
  // member tells the others through the log; every member refuses new puts
  // once it applied that (etcd's quotaApplierV3).
  if (db()->OverQuota() && !nospace()) ProposeQuotaAlarm();
  if (!stop.ok()) {
    StopApply(stop);
    return false;
  }
  // A task ending with a conf change still undecided for the core: the
  // next task carries the configuration after it, and a snapshot marker
  // at its index waits for that.
  if (task.conf_change_to_decide != 0) return false;
  if (task.has_conf_state) conf_state_ = task.conf_state;
  if (Status s = MaybeSnapshot(); !s.ok()) {
    if (db()->DiskFull()) {
      // Retrying the task skips its entries (applied) and tries the
      // snapshot again.
      EnterNoSpace(s);
      return true;
    }
    StopApply(s);
  }
  return false;
}

void StoreApplier::StopApply(const Status& why) {
  std::string where = "at index " + std::to_string(processed_index_);
  if (db() != nullptr) {
    where += " (store consistent index " +
             std::to_string(db()->ConsistentIndex()) + ")";
  }
  RecordStop(why, where);
}

void StoreApplier::Halt(const Status& why) {
  RecordStop(why, "in the node loop");
}

void StoreApplier::RecordStop(const Status& why, const std::string& where) {
  {
    MutexLock l(&error_mu_);
    if (!apply_error_.ok()) return;
    apply_error_ = why;
  }
  apply_stopped_ = true;
  LOG(ERROR) << "stopped applying the raft log " << where << ": " << why
             << ". Nothing more is applied on this member; its data is kept "
                "as it is for diagnosis (`kpctl store snapshot save` still "
                "works). Replace the member: remove it, wipe its data "
                "directory, add it again.";
  if (!why.Is(StatusCode::kCorruption)) {
    // A failed write: what is on disk is unknown, as for any failed I/O.
    self_->MarkFailed(why);
    return;
  }
  // Tell the others: a CORRUPT alarm through the log makes the cluster
  // refuse writes (etcd's applierV3Corrupt) until an operator disarms it.
  // Best effort: if every member stopped at the same entry, none applies
  // it, and each shows its own alarm.
  storagepb::InternalRaftRequest req;
  auto* a = req.mutable_alarm();
  a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  a->set_memberid(self_->id());
  a->set_alarm(etcdserverpb::CORRUPT);
  proposer_->Propose(std::move(req), [](StatusOr<ApplyResponse>) {});
}

Status StoreApplier::apply_error() const {
  MutexLock l(&error_mu_);
  return apply_error_;
}

Status StoreApplier::ApplyEntry(const raftpb::Entry& e,
                                std::vector<Answer>* answers) {
  if (e.type() == raftpb::EntryConfChange) return ApplyConfChange(e, answers);
  // A ConfChangeV2 (only ever the core's own, leaving a joint
  // configuration) changed nothing but the core's configuration.
  if (e.type() == raftpb::EntryConfChangeV2) return Status::Ok();
  if (e.type() != raftpb::EntryNormal) {
    return CorruptionError("entry " + std::to_string(e.index()) +
                           " has an entry type this member does not apply (" +
                           std::to_string(e.type()) + ")");
  }
  if (e.data().empty()) return Status::Ok();  // a new leader's empty entry
  StatusOr<storagepb::InternalRaftRequest> decoded = DecodeRequest(e.data());
  if (!decoded.ok()) {
    return decoded.status().Annotate("entry " + std::to_string(e.index()));
  }
  const storagepb::InternalRaftRequest& req = *decoded;
  using R = storagepb::InternalRaftRequest;
  if (e.index() <= db()->ConsistentIndex() &&
      req.request_case() != R::kMemberAttributes &&
      req.request_case() != R::kAlarm && req.request_case() != R::kAuth) {
    // Applied before a restart (or covered by an installed snapshot). The
    // membership's parts keep their own applied index (cluster.pb).
    return Status::Ok();
  }
  if (req.request_case() != R::kPut && req.request_case() != R::kDeleteRange &&
      req.request_case() != R::kTxn) {
    // Only these share the task's write group: the others read the store's
    // current revision or state, which must include what came before.
    db()->FlushWriteGroup();
  }
  StatusOr<ApplyResponse> result = ApplyRequest(req, e.index());
  if (!result.ok() && (req.request_case() == R::kAlarm ||
                       req.request_case() == R::kMemberAttributes)) {
    // These have no client's error: a failure is the membership's write
    // (cluster.pb), which leaves what is on disk unknown.
    return result.status().Annotate("applying entry " +
                                    std::to_string(e.index()));
  }
  if (!result.ok() && (result.status().Is(StatusCode::kCorruption) ||
                       result.status().Is(StatusCode::kIOError))) {
    // Not a client's error: this member cannot apply the entry (its store
    // found corrupt data, or a write failed).
    return result.status().Annotate("applying entry " +
                                    std::to_string(e.index()));
  }
  if (Status written = db()->WriteStatus(); !written.ok()) {
    // A failed write (a full disk: NoSpace, which is also a client's error
    // over quota) -- the store's sticky error tells them apart.
    return written.Annotate("applying entry " + std::to_string(e.index()));
  }
  if (req.id() != 0) {
    answers->push_back({req.id(), e.index(), std::move(result)});
  }
  return Status::Ok();
}

StatusOr<ApplyResponse> StoreApplier::ApplyRequest(
    const storagepb::InternalRaftRequest& r, uint64_t index) {
  using R = storagepb::InternalRaftRequest;
  switch (r.request_case()) {
    case R::kPut: {
      if (auth_->enabled()) {
        RETURN_IF_ERROR(auth_->CheckAuthRevision(r.auth_revision()));
        RETURN_IF_ERROR(auth_->CheckPut(r.user(), r.put().key()));
        if (r.put().prev_kv()) {
          RETURN_IF_ERROR(auth_->CheckRange(r.user(), r.put().key(), ""));
        }
        RETURN_IF_ERROR(CheckLeaseKeys(r.user(), r.put().lease()));
      }
      ASSIGN_OR_RETURN(auto resp, db()->Put(r.put(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kDeleteRange: {
      if (auth_->enabled()) {
        const auto& d = r.delete_range();
        RETURN_IF_ERROR(auth_->CheckAuthRevision(r.auth_revision()));
        RETURN_IF_ERROR(
            auth_->CheckDeleteRange(r.user(), d.key(), d.range_end()));
        if (d.prev_kv()) {
          RETURN_IF_ERROR(auth_->CheckRange(r.user(), d.key(), d.range_end()));
        }
      }
      ASSIGN_OR_RETURN(auto resp, db()->DeleteRange(r.delete_range(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kTxn: {
      if (auth_->enabled()) {
        RETURN_IF_ERROR(auth_->CheckAuthRevision(r.auth_revision()));
        RETURN_IF_ERROR(auth_->CheckTxn(r.user(), r.txn()));
      }
      ASSIGN_OR_RETURN(auto resp, db()->Txn(r.txn(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kCompaction: {
      RETURN_IF_ERROR(db()->Compact(r.compaction().revision(), index));
      etcdserverpb::CompactionResponse resp;
      self_->FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(db()->CurrentRevision());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseGrant: {
      ASSIGN_OR_RETURN(auto resp, db()->LeaseGrant(r.lease_grant(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseRevoke: {
      if (auth_->enabled()) {
        RETURN_IF_ERROR(CheckLeaseKeys(r.user(), r.lease_revoke().id()));
      }
      ASSIGN_OR_RETURN(auto resp, db()->LeaseRevoke(r.lease_revoke(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseKeepalive: {
      // Keepalives go through the log so that a follower's client reaches
      // the leader's lessor; only the leader's lessor counts expiry.
      etcdserverpb::LeaseKeepAliveResponse resp;
      if (self_->is_leader()) {
        auto k = db()->LeaseKeepAlive(r.lease_keepalive());
        if (k.ok())
          resp = *k;
        else if (!k.status().Is(StatusCode::kNotLeader))
          return k.status();
      }
      if (resp.id() == 0) {
        etcdserverpb::LeaseTimeToLiveRequest q;
        q.set_id(r.lease_keepalive().id());
        ASSIGN_OR_RETURN(auto ttl, db()->LeaseTimeToLive(q));
        if (ttl.ttl() == -1) {
          return NotFoundError("etcdserver: requested lease not found");
        }
        resp.set_id(ttl.id());
        resp.set_ttl(ttl.grantedttl());
      }
      self_->FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(db()->CurrentRevision());
      return ApplyResponse(std::move(resp));
    }
    case R::kAlarm: {
      // The CORRUPT part is the membership's (its own applied index, so it
      // is applied once even if the store's index is past this entry);
      // NOSPACE is the store's.
      const auto& a = r.alarm();
      // Writes are refused before a new CORRUPT alarm can be listed (a
      // client that saw it in `alarm list` must not get a put through), and
      // let in again only after a disarm is applied (RefreshAlarms).
      if (a.action() == etcdserverpb::AlarmRequest::ACTIVATE &&
          a.alarm() == etcdserverpb::CORRUPT) {
        any_corrupt_alarm_ = true;
        if (a.memberid() == self_->id()) self_corrupt_alarm_ = true;
      }
      const std::vector<etcdserverpb::AlarmMember> before = Alarms();
      auto changed_or = membership_->ApplyAlarm(index, a);
      RefreshAlarms();
      ASSIGN_OR_RETURN(bool changed, std::move(changed_or));
      if (changed && a.action() == etcdserverpb::AlarmRequest::ACTIVATE &&
          a.alarm() == etcdserverpb::CORRUPT) {
        LOG(ERROR) << "CORRUPT alarm raised for member "
                   << IdToHex(a.memberid())
                   << ": the cluster refuses writes until it is disarmed";
      }
      if (changed && a.action() == etcdserverpb::AlarmRequest::ACTIVATE &&
          a.alarm() == etcdserverpb::NOSPACE) {
        LOG(ERROR) << "NOSPACE alarm raised for member "
                   << IdToHex(a.memberid())
                   << ": the cluster refuses puts until it is disarmed";
      }
      const bool disarm_nospace =
          a.action() == etcdserverpb::AlarmRequest::DEACTIVATE &&
          (a.alarm() == etcdserverpb::NOSPACE ||
           a.alarm() == etcdserverpb::NONE);
      if (disarm_nospace &&
          (a.memberid() == 0 || a.memberid() == self_->id())) {
        // This member applies entries again (it got here), so its disk
        // took writes again.
        local_nospace_ = false;
        *nospace_proposed_ = false;
        wal_alarm_due_ = false;
      }
      if (disarm_nospace && index > db()->ConsistentIndex()) {
        RETURN_IF_ERROR(db()->DisarmNoSpaceAlarm(index));
      }
      // As etcd's applier: an activate answers the alarm, a disarm the
      // alarms it removed (etcdctl alarm disarm prints them).
      etcdserverpb::AlarmResponse resp;
      self_->FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(db()->CurrentRevision());
      if (a.action() == etcdserverpb::AlarmRequest::ACTIVATE) {
        auto* am = resp.add_alarms();
        am->set_memberid(a.memberid());
        am->set_alarm(a.alarm());
      } else {
        const std::vector<etcdserverpb::AlarmMember> after = Alarms();
        for (const auto& was : before) {
          const bool kept =
              std::any_of(after.begin(), after.end(), [&](const auto& is) {
                return is.memberid() == was.memberid() &&
                       is.alarm() == was.alarm();
              });
          if (!kept) *resp.add_alarms() = was;
        }
      }
      return ApplyResponse(std::move(resp));
    }
    case R::kAuth: {
      // Replayed after a restart: the saved record holds its effect. An
      // Authenticate changes no record; like etcd, one at or below the
      // store's durable index is not replayed (its token is gone), a later
      // one hands its token out again.
      if (index <= membership_->applied_index() ||
          (r.auth().has_authenticate() && index <= db()->ConsistentIndex())) {
        return UnavailableError("etcdserver: auth request already applied");
      }
      ASSIGN_OR_RETURN(AuthStore::Applied a,
                       auth_->Apply(r.auth(), r.user(), index));
      if (a.changed) {
        // The store durably at this index first (the file comment): no
        // key write before the change is replayed and checked against it.
        RETURN_IF_ERROR(RecordAppliedIndex(index));
        RETURN_IF_ERROR(db()->Sync());
        ASSIGN_OR_RETURN(bool saved,
                         membership_->ApplyAuth(index, auth_->Record()));
        (void)saved;
      }
      return ApplyResponse(AuthApplied{std::move(a.response)});
    }
    case R::kMemberAttributes: {
      ASSIGN_OR_RETURN(bool applied, membership_->ApplyAttributes(
                                         index, r.member_attributes()));
      (void)applied;
      return ApplyResponse();
    }
    case R::REQUEST_NOT_SET:
      break;
  }
  return CorruptionError("a request of no known kind");
}

Status StoreApplier::ApplyConfChange(const raftpb::Entry& e,
                                     std::vector<Answer>* answers) {
  StatusOr<raftpb::ConfChange> decoded = DecodeConfChange(e.data());
  if (!decoded.ok()) {
    return decoded.status().Annotate("entry " + std::to_string(e.index()));
  }
  const raftpb::ConfChange& cc = *decoded;
  if (Status valid = ValidateConfChange(cc, e.index()); !valid.ok()) {
    // etcd's applyConfChange: an invalid change is a no-op everywhere --
    // the raft core is told of no change -- and its proposer gets the
    // error.
    LOG(WARNING) << "member " << IdToHex(self_->id()) << ": conf change "
                 << raftpb::ConfChangeType_Name(cc.type()) << " of "
                 << IdToHex(cc.node_id()) << " at index " << e.index()
                 << " refused when applied: " << valid;
    if (e.index() > decided_index_ && node_ != nullptr) {
      decided_index_ = e.index();
      node_->ResolveConfChange(e.index(), ConfChangeVerdict::kRefuse);
    }
    if (cc.id() != 0) answers->push_back({cc.id(), e.index(), valid});
    return Status::Ok();
  }
  if (e.index() > decided_index_ && node_ != nullptr) {
    decided_index_ = e.index();
    node_->ResolveConfChange(e.index(), ConfChangeVerdict::kApply);
  }
  StatusOr<bool> changed = false;
  switch (cc.type()) {
    case raftpb::ConfChangeAddNode:
    case raftpb::ConfChangeAddLearnerNode: {
      storagepb::MemberRecord m;
      if (!cc.context().empty() && m.ParseFromString(cc.context())) {
        auto existing = membership_->Find(cc.node_id());
        if (existing && existing->is_learner() &&
            cc.type() == raftpb::ConfChangeAddNode) {
          changed = membership_->ApplyPromote(e.index(), cc.node_id());
        } else {
          m.set_is_learner(cc.type() == raftpb::ConfChangeAddLearnerNode);
          changed = membership_->ApplyAdd(e.index(), m);
        }
        if (m.id() != self_->id() && m.peer_urls_size() > 0) {
          transport_->AddPeer(m.id(),
                              {m.peer_urls().begin(), m.peer_urls().end()});
        }
        // The new member has an empty log and must start from a snapshot
        // whose configuration includes it; the raft core will not send one
        // that predates it, so take one now.
        if (m.id() != self_->id()) force_snapshot_ = true;
      } else {
        changed = membership_->ApplyPromote(e.index(), cc.node_id());
      }
      break;
    }
    case raftpb::ConfChangeUpdateNode: {
      // MemberUpdate (etcd's applyConfChange): the member's peer URLs
      // change; the transport dials the new ones from now on.
      storagepb::MemberRecord m;
      m.ParseFromString(cc.context());  // checked by DecodeConfChange
      std::vector<std::string> urls(m.peer_urls().begin(), m.peer_urls().end());
      changed = membership_->ApplyPeerUrls(e.index(), cc.node_id(), urls);
      // The record's URLs, not the entry's: a replayed (skipped) entry
      // must not bring back URLs that a later update replaced.
      auto now = membership_->Find(cc.node_id());
      if (cc.node_id() != self_->id() && now) {
        transport_->AddPeer(now->id(),
                            {now->peer_urls().begin(), now->peer_urls().end()});
      }
      break;
    }
    case raftpb::ConfChangeRemoveNode:
      changed = membership_->ApplyRemove(e.index(), cc.node_id());
      if (cc.node_id() != self_->id()) transport_->RemovePeer(cc.node_id());
      if (cc.node_id() == self_->id()) {
        self_->MarkRemoved("applied its own removal");
      }
      break;
    default:
      break;
  }
  if (!changed.ok()) {
    return changed.status().Annotate("saving the membership of entry " +
                                     std::to_string(e.index()));
  }
  if (cc.id() != 0) {
    answers->push_back({cc.id(), e.index(), ApplyResponse()});
  }
  return Status::Ok();
}

Status StoreApplier::ValidateConfChange(const raftpb::ConfChange& cc,
                                        uint64_t index) {
  const uint64_t id = cc.node_id();
  auto has = [id](const auto& ids) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  const bool voter = has(conf_state_.voters());
  const bool learner = has(conf_state_.learners());
  storagepb::MemberRecord context;
  const bool promote =
      cc.type() == raftpb::ConfChangeAddNode &&
      (cc.context().empty() ||
       (context.ParseFromString(cc.context()) && context.is_learner()));
  const Status not_found(StatusCode::kNotFound, "etcdserver: member not found");
  if (index <= membership_->applied_index()) {
    // Replayed: the record holds its effect if it applied; the core, which
    // replays from an earlier snapshot marker, does not yet.
    switch (cc.type()) {
      case raftpb::ConfChangeAddNode:
      case raftpb::ConfChangeAddLearnerNode:
        if (promote) return learner ? Status::Ok() : not_found;
        // A valid addition is still listed, or was removed since (then
        // leaving it out of the core until its removal changes nothing
        // that lasts).
        if (voter || learner || !membership_->Find(id)) {
          return FailedPreconditionError("etcdserver: refused before");
        }
        return Status::Ok();
      case raftpb::ConfChangeRemoveNode:
      case raftpb::ConfChangeUpdateNode:
        return voter || learner ? Status::Ok() : not_found;
      default:
        return Status::Ok();
    }
  }
  RETURN_IF_ERROR(membership_->ValidateConfChange(cc));
  // The membership and the core take the same changes, so they agree; if
  // they did not, a change the core cannot make must not reach it.
  bool core_agrees = true;
  switch (cc.type()) {
    case raftpb::ConfChangeAddNode:
    case raftpb::ConfChangeAddLearnerNode:
      core_agrees = promote ? learner : !voter && !learner;
      break;
    case raftpb::ConfChangeRemoveNode:
      core_agrees = voter || learner;
      if (voter && conf_state_.voters_size() == 1) {
        return FailedPreconditionError(
            "etcdserver: re-configuration failed due to not enough started "
            "members");
      }
      break;
    case raftpb::ConfChangeUpdateNode:
      core_agrees = voter || learner;
      break;
    default:
      break;
  }
  if (!core_agrees) {
    return FailedPreconditionError(
        "etcdserver: the membership and the raft configuration disagree on "
        "member " +
        IdToHex(id));
  }
  return Status::Ok();
}

Status StoreApplier::InstallSnapshot(const raftpb::Snapshot& snap) {
  const std::string& member_dir = options_.member_dir;
  uint64_t index = snap.metadata().index();
  std::string dir = PendingSnapshotDir(member_dir, index);
  if (!fs_->Exists(dir + "/db")) {
    return NotFoundError("snapshot database " + dir + " missing");
  }
  LOG(INFO) << "installing snapshot at index " << index;
  // Every other user of the store is waited out (and waits) while the
  // database is swapped: closing it under a reader was a use-after-free.
  Status swapped;
  store_.Replace([&](std::unique_ptr<mvcc::Store>& store) {
    swapped = SwapDatabase(dir, store);
  });
  RETURN_IF_ERROR(swapped);
  std::string cluster = dir + "/cluster.pb";
  if (fs_->Exists(cluster)) {
    ASSIGN_OR_RETURN(auto m, Membership::Open(cluster, {}, fs_));
    storagepb::ClusterRecord rec = m->Record();
    RETURN_IF_ERROR(membership_->Replace(rec));
    RefreshAlarms();
    auth_->Load(rec.auth());
    for (const auto& mem : rec.members()) {
      if (mem.id() != self_->id()) {
        transport_->AddPeer(mem.id(),
                            {mem.peer_urls().begin(), mem.peer_urls().end()});
      }
    }
  }
  if (options_.crash_hook) options_.crash_hook("install-snapshot:membership");
  // The moves must be durable, in both directories, before the pending
  // directory goes (else a restart would find db/ gone from it and the
  // old database back in place).
  RETURN_IF_ERROR(fs_->SyncDir(member_dir));
  RETURN_IF_ERROR(fs_->SyncDir(dir));
  // Leftovers; a crash before they are gone leaves them for the next
  // install (or FinishInstall) to remove.
  if (Status s = RemoveAll(fs_, dir); !s.ok()) {
    LOG(WARNING) << "removing the installed snapshot's directory: " << s;
  }
  if (Status s = RemoveAll(fs_, member_dir + "/db.old"); !s.ok()) {
    LOG(WARNING) << "removing the replaced database: " << s;
  }
  if (self_->is_leader()) db()->LeasePromote(options_.election_timeout);
  return Status::Ok();
}

Status StoreApplier::SwapDatabase(const std::string& pending,
                                  std::unique_ptr<mvcc::Store>& store) {
  const std::string& member_dir = options_.member_dir;
  const std::string db = member_dir + "/db";
  const std::string old = member_dir + "/db.old";
  // Puts back an open store after a failure: ours if it opens again, else
  // none (the member has failed then; users see no store).
  auto Reopen = [&](std::unique_ptr<mvcc::Store>& s) {
    auto reopened = mvcc::Store::Open(options_.store_options);
    if (reopened.ok()) {
      s = std::move(*reopened);
    } else {
      LOG(ERROR) << "reopening the store after a failed install: "
                 << reopened.status();
      s.reset();
    }
  };
  store->Close();
  if (Status s = RemoveAll(fs_, old); !s.ok()) {
    Reopen(store);
    return s.Annotate("remove old db");
  }
  if (Status s = fs_->Rename(db, old); !s.ok()) {
    Reopen(store);
    return s.Annotate("move old db");
  }
  if (options_.crash_hook) options_.crash_hook("install-snapshot:old-moved");
  if (Status s = fs_->Rename(pending + "/db", db); !s.ok()) {
    (void)fs_->Rename(old, db);
    Reopen(store);
    return s.Annotate("move snapshot db");
  }
  if (options_.crash_hook) options_.crash_hook("install-snapshot:swapped");
  auto opened = mvcc::Store::Open(options_.store_options);
  if (!opened.ok()) {
    // The received database does not open: keep it aside for diagnosis
    // and put ours back (the WAL already names the snapshot, so a restart
    // refuses this state: bootstrap's startup checks).
    (void)fs_->Rename(db, pending + "/db");
    (void)fs_->Rename(old, db);
    Reopen(store);
    return opened.status().Annotate("opening the received snapshot");
  }
  store = std::move(*opened);
  return Status::Ok();
}

Status StoreApplier::CheckLeaseKeys(const std::string& user, int64_t lease) {
  if (lease == 0) return Status::Ok();
  etcdserverpb::LeaseTimeToLiveRequest q;
  q.set_id(lease);
  q.set_keys(true);
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> ttl =
      db()->LeaseTimeToLive(q);
  if (!ttl.ok()) return Status::Ok();  // the request fails on its own
  for (const std::string& key : ttl->keys()) {
    RETURN_IF_ERROR(auth_->CheckPut(user, key));
  }
  return Status::Ok();
}

Status StoreApplier::RecordAppliedIndex(uint64_t index) {
  if (db()->ConsistentIndex() >= index) return Status::Ok();
  // A read-only Txn with a consistent index writes just that index
  // (mvcc::Store's write groups); an empty one reads nothing.
  return db()->Txn(etcdserverpb::TxnRequest(), index).status();
}

Status StoreApplier::MaybeSnapshot() {
  // Not applied_: right after a restart it is the store's consistent index,
  // while conf_state_ still describes an earlier entry of the replay.
  uint64_t applied = processed_index_;
  if (applied <= last_snapshot_index_) return Status::Ok();
  if (!force_snapshot_ &&
      applied < last_snapshot_index_ + options_.snapshot_count) {
    return Status::Ok();
  }
  force_snapshot_ = false;
  // The marker promises the state machine holds everything up to `applied`
  // durably: record that index in the store, and flush the store's unsynced
  // writes first.
  RETURN_IF_ERROR(RecordAppliedIndex(applied));
  Status s = db()->Sync();
  if (!s.ok()) return s.Annotate("syncing the store before a snapshot");
  if (options_.crash_hook) options_.crash_hook("snapshot:store-synced");
  node_->CreateSnapshot(applied, conf_state_);
  last_snapshot_index_ = applied;
  LOG(INFO) << "snapshot at index " << applied;
  return Status::Ok();
}

void StoreApplier::Deliver(const std::function<void(Status)>& ready,
                           bool on_read_pool, Status s) {
  if (!on_read_pool) {
    ready(s);
    return;
  }
  if (!read_pool_->Submit([ready, s] { ready(s); })) {
    ready(s.ok() ? UnavailableError("etcdserver: server stopped") : s);
  }
}

void StoreApplier::SetApplied(uint64_t index) {
  std::vector<ReadWaiter> ready;
  {
    MutexLock l(&mu_);
    if (index > applied_.load()) applied_ = index;
    while (!read_heap_.empty() && read_heap_.top().first <= applied_.load()) {
      auto it = read_waiters_.find(read_heap_.top().second);
      if (it != read_waiters_.end()) {
        ready.push_back(std::move(it->second));
        read_waiters_.erase(it);
      }
      read_heap_.pop();
    }
  }
  auth_->NoteApplied(index);  // outside mu_, a leaf
  for (const ReadWaiter& w : ready) {
    Deliver(w.ready, w.on_read_pool, Status::Ok());
  }
}

void StoreApplier::LinearizableReadAsync(std::function<void(Status)> ready,
                                         bool on_read_pool) {
  RaftNode* node = self_->node();
  if (node == nullptr) {
    ready(UnavailableError("etcdserver: server stopped"));
    return;
  }
  node->ReadIndex(
      [this, ready = std::move(ready), on_read_pool](StatusOr<uint64_t> idx) {
        if (!idx.ok()) {
          Deliver(ready, on_read_pool, idx.status());
          return;
        }
        MutexLock l(&mu_);
        if (applied_.load() >= *idx) {
          l.Unlock();
          Deliver(ready, on_read_pool, Status::Ok());
          return;
        }
        uint64_t seq = ++read_seq_;
        read_heap_.push({*idx, seq});
        read_waiters_[seq] = ReadWaiter{
            ready, clock_->Now() + options_.request_timeout, on_read_pool};
      });
}

void StoreApplier::FailExpiredReads(TimePoint now) {
  std::vector<std::function<void(Status)>> reads;
  {
    MutexLock l(&mu_);
    for (auto it = read_waiters_.begin(); it != read_waiters_.end();) {
      if (it->second.deadline <= now) {
        reads.push_back(std::move(it->second.ready));
        it = read_waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& fn : reads) {
    fn(Status(StatusCode::kDeadlineExceeded, "etcdserver: request timed out"));
  }
}

bool StoreApplier::QueueBarrier(std::function<void()> fn) {
  ApplyTask t;
  t.barrier = std::move(fn);
  {
    MutexLock l(&mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(t));
  }
  cv_.notify_one();
  return true;
}

StatusOr<raftpb::SnapshotMetadata> StoreApplier::SnapshotTo(
    const std::string& dir, bool for_peer) {
  auto p = std::make_shared<std::promise<StatusOr<raftpb::SnapshotMetadata>>>();
  auto f = p->get_future();
  bool queued = QueueBarrier([this, dir, p, for_peer] {
    if (db() == nullptr) {
      p->set_value(UnavailableError("etcdserver: no store (" +
                                    apply_error().ToString() + ")"));
      return;
    }
    if (for_peer && !apply_stopped_.load() &&
        processed_index_ > db()->ConsistentIndex()) {
      // The copy's index is processed_index_: make the store say so (the
      // receiver's startup check wants its store at or past its snapshot).
      if (Status s = RecordAppliedIndex(processed_index_); !s.ok()) {
        p->set_value(s);
        return;
      }
    }
    if (for_peer &&
        (apply_stopped_.load() || processed_index_ < db()->ConsistentIndex())) {
      p->set_value(UnavailableError(
          apply_stopped_.load()
              ? "etcdserver: this member stopped applying the log"
              : "etcdserver: replaying the log up to index " +
                    std::to_string(db()->ConsistentIndex())));
      return;
    }
    if (Status s = CreateDirAll(fs_, dir, kPrivateDirMode); !s.ok()) {
      p->set_value(s);
      return;
    }
    Status s = db()->Checkpoint(dir + "/db");
    if (s.ok()) {
      auto m =
          Membership::Open(dir + "/cluster.pb", membership_->Record(), fs_);
      s = m.ok() ? (*m)->Save() : m.status();
    }
    if (!s.ok()) {
      p->set_value(s);
      return;
    }
    raftpb::SnapshotMetadata meta;
    // The index conf_state_ and the term describe (for a peer, also the
    // copy's consistent index: it was refused above while the replay was
    // behind the store).
    meta.set_index(processed_index_);
    meta.set_term(applied_entry_term_);
    *meta.mutable_conf_state() = conf_state_;
    p->set_value(meta);
  });
  if (!queued) return UnavailableError("etcdserver: server stopped");
  return f.get();
}

Status StoreApplier::ReceiveSnapshot(const std::string& received_dir,
                                     raftpb::Message msg) {
  RaftNode* node = self_->node();
  if (node == nullptr) return UnavailableError("etcdserver: not started");
  if (apply_stopped_.load()) {
    // Installing it would overwrite the data kept for diagnosis.
    return FailedPreconditionError(
        "etcdserver: this member stopped applying the log; it takes no "
        "snapshot");
  }
  std::string dir = PendingSnapshotDir(options_.member_dir,
                                       msg.snapshot().metadata().index());
  // The sender synced the files; their names (in db/ and in the received
  // directory) and the move to `dir` must be durable too before the WAL
  // may name the snapshot (stepping the message leads there).
  const std::string snap = options_.member_dir + "/snap";
  Status s = RemoveAll(fs_, dir);
  if (s.ok() && fs_->Exists(received_dir + "/db")) {
    s = fs_->SyncDir(received_dir + "/db");
  }
  if (s.ok()) s = fs_->SyncDir(received_dir);
  if (s.ok()) s = fs_->Rename(received_dir, dir);
  if (s.ok()) s = fs_->SyncDir(snap);
  if (s.ok() && DirName(received_dir) != snap) {
    s = fs_->SyncDir(DirName(received_dir));
  }
  if (!s.ok()) return s.Annotate("keep received snapshot");
  node->Step(std::move(msg));
  return Status::Ok();
}

std::vector<etcdserverpb::AlarmMember> StoreApplier::Alarms() {
  std::vector<etcdserverpb::AlarmMember> out = membership_->Alarms();
  auto add = [&](etcdserverpb::AlarmType type) {
    for (const auto& a : out) {
      if (a.memberid() == self_->id() && a.alarm() == type) return;
    }
    etcdserverpb::AlarmMember a;
    a.set_memberid(self_->id());
    a.set_alarm(type);
    out.push_back(a);
  };
  {
    StoreRef store = store_.Use();
    if (store && store->QuotaAlarm()) add(etcdserverpb::NOSPACE);
  }
  // A full disk: listed from when puts are refused for it (nospace()).
  if (local_nospace_.load()) add(etcdserverpb::NOSPACE);
  Status stopped = apply_error();
  if (stopped.Is(StatusCode::kCorruption)) add(etcdserverpb::CORRUPT);
  return out;
}

bool StoreApplier::nospace() const {
  if (local_nospace_.load()) return true;
  // Read from the membership, not cached: it lists an alarm as soon as it
  // is applied (before cluster.pb is saved), and a member that lists
  // NOSPACE must refuse puts from then on.
  for (const auto& a : membership_->Alarms()) {
    if (a.alarm() == etcdserverpb::NOSPACE) return true;
  }
  return false;
}

bool StoreApplier::corrupt() const {
  return any_corrupt_alarm_.load() ||
         (apply_stopped_.load() && apply_error().Is(StatusCode::kCorruption));
}

bool StoreApplier::self_corrupt() const {
  return apply_stopped_.load() || self_corrupt_alarm_.load();
}

void StoreApplier::RefreshAlarms() {
  bool any = false, self = false;
  for (const auto& a : membership_->Alarms()) {
    if (a.alarm() != etcdserverpb::CORRUPT) continue;
    any = true;
    self |= a.memberid() == self_->id();
  }
  any_corrupt_alarm_ = any;
  self_corrupt_alarm_ = self;
}

}  // namespace kplane::storage
