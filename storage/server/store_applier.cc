#include "storage/server/store_applier.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>

#include "base/logging.h"
#include "storage/raft/util.h"

namespace kplane::storage {
namespace fs = std::filesystem;

namespace {

// Makes renames and deletions inside `dir` durable.
Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IOError("open " + dir + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return IOError("fsync " + dir + ": " + std::strerror(errno));
  return Status::Ok();
}

// Where a received snapshot waits to be installed.
std::string PendingSnapshotDir(const std::string& member_dir, uint64_t index) {
  return member_dir + "/snap/db-" + std::to_string(index);
}

}  // namespace

StoreApplier::StoreApplier(StoreApplierOptions options,
                           std::unique_ptr<mvcc::Store> store,
                           Membership* membership, LocalMember* self,
                           Proposer* proposer)
    : options_(std::move(options)),
      clock_(options_.clock),
      membership_(membership),
      self_(self),
      proposer_(proposer),
      store_(std::move(store)) {
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

Status StoreApplier::FinishInstall(const std::string& member_dir,
                                   uint64_t snapshot_index) {
  std::string pending = PendingSnapshotDir(member_dir, snapshot_index);
  // InstallSnapshot moves pending/db into place first and the membership
  // second; the crash may have come before, between or after the two, so
  // each is finished only if it is still pending (after the first, db/ is
  // already the snapshot's and must not be deleted).
  if (snapshot_index == 0 || !fs::exists(pending)) return Status::Ok();
  LOG(INFO) << "finishing the install of received snapshot " << pending;
  std::error_code ec;
  if (fs::exists(pending + "/db")) {
    fs::remove_all(member_dir + "/db", ec);
    fs::rename(pending + "/db", member_dir + "/db", ec);
    if (ec) return IOError("install snapshot: " + ec.message());
  }
  if (fs::exists(pending + "/cluster.pb")) {
    fs::rename(pending + "/cluster.pb", member_dir + "/cluster.pb", ec);
    if (ec) return IOError("install snapshot membership: " + ec.message());
  }
  RETURN_IF_ERROR(FsyncDir(member_dir));
  fs::remove_all(pending, ec);
  return Status::Ok();
}

void StoreApplier::Start(const raftpb::SnapshotMetadata& last_snapshot,
                         RaftNode* node, PeerTransport* transport,
                         std::shared_ptr<net::WorkerPool> read_pool) {
  node_ = node;
  transport_ = transport;
  read_pool_ = std::move(read_pool);
  applied_ = store_->ConsistentIndex();
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

// Runs on the node loop. A small batch of plain entries, while the apply
// thread is idle with nothing queued, is applied right here: its writes and
// answers then cost no hand-off to the apply thread (at one client that
// hand-off is one of the few thread wake-ups a put pays). Bigger batches,
// snapshots and conf changes go to the apply thread, so the loop keeps
// replicating while they apply.
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
  ApplyTaskNow(task);
  bool queued;
  {
    MutexLock l(&mu_);
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
    ApplyTaskNow(task);
    MutexLock l(&mu_);
    apply_busy_ = false;
  }
}

bool StoreApplier::CanApplyInline(const ApplyTask& task) const {
  // Apply-only state is read here with mu_ held while the apply thread is
  // idle (apply_busy_ false), so it is stable.
  constexpr size_t kMaxInlineEntries = 8;
  if (task.barrier || !raft::IsEmptySnapshot(task.snapshot) ||
      task.has_conf_state || task.entries.empty() ||
      task.entries.size() > kMaxInlineEntries) {
    return false;
  }
  for (const raftpb::Entry& e : task.entries) {
    if (e.type() != raftpb::EntryNormal) return false;
  }
  // A snapshot (a store fsync) is due after this task: leave it to the
  // apply thread.
  return !force_snapshot_ && task.entries.back().index() <
                                 last_snapshot_index_ + options_.snapshot_count;
}

void StoreApplier::ApplyTaskNow(ApplyTask& task) {
  if (task.barrier) {
    task.barrier();
    return;
  }
  if (!raft::IsEmptySnapshot(task.snapshot)) {
    Status s = InstallSnapshot(task.snapshot);
    CHECK(s.ok()) << "installing snapshot failed: " << s;
    conf_state_ = task.snapshot.metadata().conf_state();
    last_snapshot_index_ = task.snapshot.metadata().index();
    processed_index_ = last_snapshot_index_;
    applied_entry_term_ = task.snapshot.metadata().term();
    SetApplied(std::max<uint64_t>(task.snapshot.metadata().index(),
                                  store_->ConsistentIndex()));
  }
  // The task's entries go to the store as one write group: one RocksDB
  // write for the lot. Nothing of it may be seen before that write, so the
  // answers, the applied index (linearizable reads wait on it) and the
  // watch events all follow EndWriteGroup.
  std::vector<Answer> answers;
  store_->BeginWriteGroup();
  for (const raftpb::Entry& e : task.entries) {
    committed_->Inc();
    ApplyEntry(e, &answers);
    applied_entry_term_ = e.term();
    processed_index_ = e.index();
    applied_total_->Inc();
  }
  store_->EndWriteGroup();
  if (!task.entries.empty()) SetApplied(task.entries.back().index());
  for (Answer& a : answers) a.done(std::move(a.result));
  if (task.has_conf_state) conf_state_ = task.conf_state;
  MaybeSnapshot();
}

void StoreApplier::ApplyEntry(const raftpb::Entry& e,
                              std::vector<Answer>* answers) {
  if (e.type() == raftpb::EntryConfChange) {
    ApplyConfChange(e, answers);
    return;
  }
  if (e.type() != raftpb::EntryNormal || e.data().empty()) return;
  storagepb::InternalRaftRequest req;
  CHECK(req.ParseFromString(e.data()))
      << "undecodable entry at index " << e.index();
  if (e.index() <= store_->ConsistentIndex() &&
      req.request_case() != storagepb::InternalRaftRequest::kMemberAttributes) {
    // Applied before a restart (or covered by an installed snapshot).
    return;
  }
  using R = storagepb::InternalRaftRequest;
  if (req.request_case() != R::kPut && req.request_case() != R::kDeleteRange &&
      req.request_case() != R::kTxn) {
    // Only these share the task's write group: the others read the store's
    // current revision or state, which must include what came before.
    store_->FlushWriteGroup();
  }
  StatusOr<ApplyResponse> result = ApplyRequest(req, e.index());
  if (req.id() != 0) {
    if (ApplyCallback cb = proposer_->Take(req.id())) {
      answers->push_back({std::move(cb), std::move(result)});
    }
  }
}

StatusOr<ApplyResponse> StoreApplier::ApplyRequest(
    const storagepb::InternalRaftRequest& r, uint64_t index) {
  using R = storagepb::InternalRaftRequest;
  switch (r.request_case()) {
    case R::kPut: {
      ASSIGN_OR_RETURN(auto resp, store_->Put(r.put(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kDeleteRange: {
      ASSIGN_OR_RETURN(auto resp, store_->DeleteRange(r.delete_range(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kTxn: {
      ASSIGN_OR_RETURN(auto resp, store_->Txn(r.txn(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kCompaction: {
      RETURN_IF_ERROR(store_->Compact(r.compaction().revision(), index));
      etcdserverpb::CompactionResponse resp;
      self_->FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(store_->CurrentRevision());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseGrant: {
      ASSIGN_OR_RETURN(auto resp, store_->LeaseGrant(r.lease_grant(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseRevoke: {
      ASSIGN_OR_RETURN(auto resp, store_->LeaseRevoke(r.lease_revoke(), index));
      self_->FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseKeepalive: {
      // Keepalives go through the log so that a follower's client reaches
      // the leader's lessor; only the leader's lessor counts expiry.
      etcdserverpb::LeaseKeepAliveResponse resp;
      if (self_->is_leader()) {
        auto k = store_->LeaseKeepAlive(r.lease_keepalive());
        if (k.ok())
          resp = *k;
        else if (!k.status().Is(StatusCode::kNotLeader))
          return k.status();
      }
      if (resp.id() == 0) {
        etcdserverpb::LeaseTimeToLiveRequest q;
        q.set_id(r.lease_keepalive().id());
        ASSIGN_OR_RETURN(auto ttl, store_->LeaseTimeToLive(q));
        if (ttl.ttl() == -1) {
          return NotFoundError("etcdserver: requested lease not found");
        }
        resp.set_id(ttl.id());
        resp.set_ttl(ttl.grantedttl());
      }
      self_->FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(store_->CurrentRevision());
      return ApplyResponse(std::move(resp));
    }
    case R::kAlarm: {
      const auto& a = r.alarm();
      if (a.action() == etcdserverpb::AlarmRequest::DEACTIVATE) {
        if (a.alarm() == etcdserverpb::NOSPACE ||
            a.alarm() == etcdserverpb::NONE) {
          RETURN_IF_ERROR(store_->DisarmNoSpaceAlarm(index));
        }
        if (a.alarm() == etcdserverpb::CORRUPT ||
            a.alarm() == etcdserverpb::NONE) {
          corrupt_ = false;
        }
      } else if (a.action() == etcdserverpb::AlarmRequest::ACTIVATE &&
                 a.alarm() == etcdserverpb::CORRUPT) {
        LOG(ERROR) << "CORRUPT alarm raised for member "
                   << IdToHex(a.memberid());
        corrupt_ = true;
      }
      etcdserverpb::AlarmResponse resp;
      self_->FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(store_->CurrentRevision());
      for (auto& am : Alarms()) *resp.add_alarms() = am;
      return ApplyResponse(std::move(resp));
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
  return InvalidArgumentError("empty request");
}

void StoreApplier::ApplyConfChange(const raftpb::Entry& e,
                                   std::vector<Answer>* answers) {
  raftpb::ConfChange cc;
  CHECK(cc.ParseFromString(e.data())) << "undecodable conf change";
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
  CHECK(changed.ok()) << "saving membership failed: " << changed.status();
  if (cc.id() != 0) {
    if (ApplyCallback cb = proposer_->Take(cc.id())) {
      answers->push_back({std::move(cb), ApplyResponse()});
    }
  }
}

Status StoreApplier::InstallSnapshot(const raftpb::Snapshot& snap) {
  const std::string& member_dir = options_.member_dir;
  uint64_t index = snap.metadata().index();
  std::string dir = PendingSnapshotDir(member_dir, index);
  if (!fs::exists(dir + "/db")) {
    return NotFoundError("snapshot database " + dir + " missing");
  }
  LOG(INFO) << "installing snapshot at index " << index;
  store_->Close();
  std::error_code ec;
  std::string old = member_dir + "/db.old";
  fs::remove_all(old, ec);
  fs::rename(member_dir + "/db", old, ec);
  if (ec) return IOError("move old db: " + ec.message());
  if (options_.crash_hook) options_.crash_hook("install-snapshot:old-moved");
  fs::rename(dir + "/db", member_dir + "/db", ec);
  if (ec) return IOError("move snapshot db: " + ec.message());
  if (options_.crash_hook) options_.crash_hook("install-snapshot:swapped");
  ASSIGN_OR_RETURN(store_, mvcc::Store::Open(options_.store_options));
  std::string cluster = dir + "/cluster.pb";
  if (fs::exists(cluster)) {
    ASSIGN_OR_RETURN(auto m, Membership::Open(cluster, {}));
    storagepb::ClusterRecord rec = m->Record();
    RETURN_IF_ERROR(membership_->Replace(rec));
    for (const auto& mem : rec.members()) {
      if (mem.id() != self_->id()) {
        transport_->AddPeer(mem.id(),
                            {mem.peer_urls().begin(), mem.peer_urls().end()});
      }
    }
  }
  if (options_.crash_hook) options_.crash_hook("install-snapshot:membership");
  // The renames must be durable before the pending directory goes.
  RETURN_IF_ERROR(FsyncDir(member_dir));
  fs::remove_all(dir, ec);
  fs::remove_all(old, ec);
  if (self_->is_leader()) store_->LeasePromote(options_.election_timeout);
  return Status::Ok();
}

void StoreApplier::MaybeSnapshot() {
  // Not applied_: right after a restart it is the store's consistent index,
  // while conf_state_ still describes an earlier entry of the replay.
  uint64_t applied = processed_index_;
  if (applied <= last_snapshot_index_) return;
  if (!force_snapshot_ &&
      applied < last_snapshot_index_ + options_.snapshot_count) {
    return;
  }
  force_snapshot_ = false;
  // The marker promises the state machine holds everything up to `applied`
  // durably: flush the MVCC store's unsynced writes first.
  Status s = store_->Sync();
  CHECK(s.ok()) << "syncing the store before a snapshot failed: " << s;
  node_->CreateSnapshot(applied, conf_state_);
  last_snapshot_index_ = applied;
  LOG(INFO) << "snapshot at index " << applied;
}

void StoreApplier::SetApplied(uint64_t index) {
  std::vector<std::function<void(Status)>> ready;
  {
    MutexLock l(&mu_);
    if (index > applied_.load()) applied_ = index;
    while (!read_heap_.empty() && read_heap_.top().first <= applied_.load()) {
      auto it = read_waiters_.find(read_heap_.top().second);
      if (it != read_waiters_.end()) {
        ready.push_back(std::move(it->second.ready));
        read_waiters_.erase(it);
      }
      read_heap_.pop();
    }
  }
  for (auto& fn : ready) {
    if (!read_pool_->Submit([fn] { fn(Status::Ok()); })) {
      fn(UnavailableError("etcdserver: server stopped"));
    }
  }
}

void StoreApplier::LinearizableReadAsync(std::function<void(Status)> ready) {
  RaftNode* node = self_->node();
  if (node == nullptr) {
    ready(UnavailableError("etcdserver: server stopped"));
    return;
  }
  node->ReadIndex([this, ready = std::move(ready)](StatusOr<uint64_t> idx) {
    if (!idx.ok()) {
      Status s = idx.status();
      if (!read_pool_->Submit([ready, s] { ready(s); })) ready(s);
      return;
    }
    MutexLock l(&mu_);
    if (applied_.load() >= *idx) {
      l.Unlock();
      if (!read_pool_->Submit([ready] { ready(Status::Ok()); })) {
        ready(UnavailableError("etcdserver: server stopped"));
      }
      return;
    }
    uint64_t seq = ++read_seq_;
    read_heap_.push({*idx, seq});
    read_waiters_[seq] =
        ReadWaiter{ready, clock_->Now() + options_.request_timeout};
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
    const std::string& dir) {
  auto p = std::make_shared<std::promise<StatusOr<raftpb::SnapshotMetadata>>>();
  auto f = p->get_future();
  bool queued = QueueBarrier([this, dir, p] {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      p->set_value(IOError("create " + dir + ": " + ec.message()));
      return;
    }
    Status s = store_->Checkpoint(dir + "/db");
    if (s.ok()) {
      auto m = Membership::Open(dir + "/cluster.pb", membership_->Record());
      s = m.ok() ? (*m)->Save() : m.status();
    }
    if (!s.ok()) {
      p->set_value(s);
      return;
    }
    raftpb::SnapshotMetadata meta;
    // The index conf_state_ and the term describe. The copy may hold more
    // (the store's consistent index, during the replay after a restart);
    // the receiver skips those entries when they reach it.
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
  std::string dir = PendingSnapshotDir(options_.member_dir,
                                       msg.snapshot().metadata().index());
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::rename(received_dir, dir, ec);
  if (ec) return IOError("keep received snapshot: " + ec.message());
  int dfd = ::open((options_.member_dir + "/snap").c_str(),
                   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  node->Step(std::move(msg));
  return Status::Ok();
}

std::vector<etcdserverpb::AlarmMember> StoreApplier::Alarms() const {
  std::vector<etcdserverpb::AlarmMember> out;
  if (store_ && store_->NoSpaceAlarm()) {
    etcdserverpb::AlarmMember a;
    a.set_memberid(self_->id());
    a.set_alarm(etcdserverpb::NOSPACE);
    out.push_back(a);
  }
  if (corrupt_.load()) {
    etcdserverpb::AlarmMember a;
    a.set_memberid(self_->id());
    a.set_alarm(etcdserverpb::CORRUPT);
    out.push_back(a);
  }
  return out;
}

}  // namespace kplane::storage
