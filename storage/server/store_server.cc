#include "storage/server/store_server.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
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

constexpr char kVersion[] = "3.4.0-kplane";

// Sends nothing: a single-member cluster has nobody to talk to.
class NullTransport : public PeerTransport {
 public:
  void Send(std::vector<raftpb::Message>) override {}
  void AddPeer(uint64_t, const std::vector<std::string>&) override {}
  void RemovePeer(uint64_t) override {}
};
NullTransport* TheNullTransport() {
  static NullTransport* t = new NullTransport();
  return t;
}

// Makes renames and deletions inside `dir` durable.
Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IOError("open " + dir + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return IOError("fsync " + dir + ": " + std::strerror(errno));
  return Status::Ok();
}

Status KeyNotProvided() {
  return InvalidArgumentError("etcdserver: key is not provided");
}

}  // namespace

class StoreServer::Applier : public storage::Applier {
 public:
  explicit Applier(StoreServer* s) : s_(s) {}
  // Runs on the node loop. A small batch of plain entries, while the apply
  // thread is idle with nothing queued, is applied right here: its writes
  // and answers then cost no hand-off to the apply thread (at one client
  // that hand-off is one of the few thread wake-ups a put pays). Bigger
  // batches, snapshots and conf changes go to the apply thread, so the loop
  // keeps replicating while they apply.
  void Enqueue(ApplyTask task) override {
    bool inline_apply;
    {
      std::lock_guard<std::mutex> l(s_->apply_mu_);
      inline_apply = s_->apply_queue_.empty() && !s_->apply_busy_ &&
                     !s_->stopping_ && s_->CanApplyInline(task);
      if (inline_apply) {
        s_->apply_busy_ = true;
      } else {
        s_->apply_queue_.push_back(std::move(task));
      }
    }
    if (!inline_apply) {
      s_->apply_cv_.notify_one();
      return;
    }
    s_->ApplyTaskNow(task);
    bool queued;
    {
      std::lock_guard<std::mutex> l(s_->apply_mu_);
      s_->apply_busy_ = false;
      queued = !s_->apply_queue_.empty();  // a barrier came meanwhile
    }
    if (queued) s_->apply_cv_.notify_one();
  }

 private:
  StoreServer* s_;
};

StoreServer::StoreServer(StoreConfig config)
    : config_(std::move(config)), clock_(config_.clock) {
  if (config_.request_timeout <= Duration(0)) {
    config_.request_timeout = seconds(5) + 2 * config_.election_timeout;
  }
  auto* reg = config_.metrics;
  proposals_committed_ =
      reg->NewCounter("etcd_server_proposals_committed_total",
                      "Committed proposals (entries) seen by this member.")
          ->With({});
  proposals_applied_ =
      reg->NewCounter("etcd_server_proposals_applied_total",
                      "Proposals (entries) applied by this member.")
          ->With({});
  proposals_failed_ =
      reg->NewCounter("kplane_server_proposals_timed_out_total",
                      "Proposals that were not applied in time.")
          ->With({});
  proposals_pending_ = reg->NewGauge("etcd_server_proposals_pending",
                                     "Proposals waiting to be applied.")
                           ->With({});
}

StoreServer::~StoreServer() {
  Stop();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

StatusOr<std::unique_ptr<StoreServer>> StoreServer::Open(StoreConfig config) {
  if (config.data_dir.empty()) {
    return InvalidArgumentError("--data-dir is required");
  }
  if (config.heartbeat_interval <= Duration(0) ||
      config.election_timeout < 5 * config.heartbeat_interval) {
    return InvalidArgumentError(
        "--election-timeout must be at least 5 times --heartbeat-interval");
  }
  if (config.snapshot_count == 0) {
    return InvalidArgumentError("--snapshot-count must be positive");
  }
  std::unique_ptr<StoreServer> s(new StoreServer(std::move(config)));
  RETURN_IF_ERROR(s->OpenDataDir());
  RETURN_IF_ERROR(s->OpenStores());
  return s;
}

Status StoreServer::OpenDataDir() {
  std::error_code ec;
  member_dir_ = config_.data_dir + "/member";
  fs::create_directories(member_dir_ + "/snap", ec);
  if (ec) {
    return IOError("create " + member_dir_ + ": " + ec.message());
  }
  std::string lock_path = config_.data_dir + "/LOCK";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    return IOError("open " + lock_path + ": " + std::strerror(errno));
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return FailedPreconditionError("data directory " + config_.data_dir +
                                   " is in use by another process");
  }
  return Status::Ok();
}

Status StoreServer::OpenStores() {
  RaftLogOptions log_opts;
  log_opts.catch_up_entries = config_.snapshot_catch_up_entries;
  ASSIGN_OR_RETURN(log_, RaftLog::Open(member_dir_ + "/wal", log_opts));

  // A snapshot received from a leader is durable in member/snap/ before its
  // marker reaches the WAL; if we crashed before swapping it in, do it now.
  uint64_t snap_index = log_->snapshot_metadata().index();
  std::string pending = member_dir_ + "/snap/db-" + std::to_string(snap_index);
  // InstallSnapshot moves pending/db into place first and the membership
  // second; the crash may have come before, between or after the two, so
  // each is finished only if it is still pending (after the first, db/ is
  // already the snapshot's and must not be deleted).
  if (snap_index > 0 && fs::exists(pending)) {
    LOG(INFO) << "finishing the install of received snapshot " << pending;
    std::error_code ec;
    if (fs::exists(pending + "/db")) {
      fs::remove_all(member_dir_ + "/db", ec);
      fs::rename(pending + "/db", member_dir_ + "/db", ec);
      if (ec) return IOError("install snapshot: " + ec.message());
    }
    if (fs::exists(pending + "/cluster.pb")) {
      fs::rename(pending + "/cluster.pb", member_dir_ + "/cluster.pb", ec);
      if (ec) return IOError("install snapshot membership: " + ec.message());
    }
    RETURN_IF_ERROR(FsyncDir(member_dir_));
    fs::remove_all(pending, ec);
  }

  mvcc::Options mopts;
  mopts.dir = member_dir_ + "/db";
  mopts.clock = clock_;
  mopts.quota_bytes = config_.quota_backend_bytes;
  mopts.max_request_bytes = config_.max_request_bytes;
  // Auto-compaction is the server's (through raft), never the replica's.
  ASSIGN_OR_RETURN(store_, mvcc::Store::Open(mopts));

  std::string cluster_path = member_dir_ + "/cluster.pb";
  if (log_->empty()) {
    // A brand-new member.
    storagepb::ClusterRecord initial;
    if (config_.initial_cluster_state == "existing") {
      if (!config_.existing_cluster) {
        return InvalidArgumentError(
            "--initial-cluster-state=existing needs the current membership "
            "from a running member");
      }
      initial = *config_.existing_cluster;
      joining_ = true;
    } else if (config_.initial_cluster_state == "new") {
      std::string ic = config_.initial_cluster;
      if (ic.empty()) {
        if (config_.peer_urls.empty()) {
          config_.peer_urls = {"http://127.0.0.1:2380"};
        }
        ic = config_.name + "=" + config_.peer_urls.front();
      }
      ASSIGN_OR_RETURN(auto members, ParseInitialCluster(ic));
      initial = NewClusterRecord(members, config_.initial_cluster_token);
    } else {
      return InvalidArgumentError(
          "--initial-cluster-state must be \"new\" or \"existing\", got \"" +
          config_.initial_cluster_state + "\"");
    }
    // Find ourselves: by name in a new cluster, by peer URLs when joining.
    for (const auto& m : initial.members()) {
      bool match = false;
      if (joining_) {
        for (const auto& u : m.peer_urls()) {
          for (const auto& mine : config_.peer_urls) match |= (u == mine);
        }
      } else {
        match = m.name() == config_.name;
      }
      if (match) member_id_ = m.id();
    }
    if (member_id_ == 0) {
      return InvalidArgumentError(
          joining_ ? "this member's peer URLs are not in the cluster's "
                     "membership (run `member add` first)"
                   : "member name \"" + config_.name +
                         "\" is not in --initial-cluster");
    }
    ASSIGN_OR_RETURN(membership_, Membership::Open(cluster_path, initial));
    RETURN_IF_ERROR(membership_->Replace(initial));
    storagepb::MemberIdentity id;
    id.set_member_id(member_id_);
    id.set_cluster_id(initial.cluster_id());
    id.set_name(config_.name);
    RETURN_IF_ERROR(log_->WriteIdentity(id));
    if (!joining_) {
      raftpb::ConfState cs;
      for (const auto& m : initial.members()) {
        if (m.is_learner()) {
          cs.add_learners(m.id());
        } else {
          cs.add_voters(m.id());
        }
      }
      RETURN_IF_ERROR(log_->Bootstrap(cs));
    }
    LOG(INFO) << "member " << IdToHex(member_id_) << " (" << config_.name
              << ") " << (joining_ ? "joining" : "bootstrapping") << " cluster "
              << IdToHex(initial.cluster_id());
  } else {
    if (!log_->identity()) {
      return CorruptionError("WAL has no member identity record");
    }
    member_id_ = log_->identity()->member_id();
    ASSIGN_OR_RETURN(membership_, Membership::Open(cluster_path, {}));
    if (membership_->cluster_id() != log_->identity()->cluster_id()) {
      return CorruptionError("membership file belongs to cluster " +
                             IdToHex(membership_->cluster_id()) + ", WAL to " +
                             IdToHex(log_->identity()->cluster_id()));
    }
    LOG(INFO) << "member " << IdToHex(member_id_) << " restarting: applied "
              << store_->ConsistentIndex() << ", revision "
              << store_->CurrentRevision() << ", snapshot " << snap_index;
  }
  if (membership_->IsRemoved(member_id_)) {
    return FailedPreconditionError(
        "this member was removed from the cluster; start a new member with "
        "a fresh data directory");
  }
  return Status::Ok();
}

Status StoreServer::Start(PeerTransport* transport) {
  if (started_.exchange(true)) return FailedPreconditionError("started");
  transport_ = transport ? transport : TheNullTransport();
  for (const auto& m : membership_->Members()) {
    if (m.id() != member_id_) {
      transport_->AddPeer(m.id(), {m.peer_urls().begin(), m.peer_urls().end()});
    }
  }
  read_pool_ = std::make_shared<net::WorkerPool>(2, "store-read");
  applier_ = std::make_unique<Applier>(this);

  RaftNodeOptions nopts;
  nopts.raft.id = member_id_;
  nopts.raft.heartbeat_tick = 1;
  nopts.raft.election_tick =
      static_cast<int>(config_.election_timeout / config_.heartbeat_interval);
  // Restart from the newest snapshot so every committed entry after it is
  // handed out again: conf changes reach the core again, and the apply
  // thread skips what the MVCC store already has (its consistent index).
  nopts.raft.applied = log_->snapshot_metadata().index();
  nopts.raft.check_quorum = true;
  nopts.raft.pre_vote = config_.pre_vote;
  nopts.raft.max_size_per_msg = 1 << 20;
  nopts.raft.max_inflight_msgs = 512;
  nopts.raft.max_uncommitted_entries_size = 1 << 30;
  nopts.raft.random_seed =
      member_id_ ^
      static_cast<uint64_t>(clock_->Now().time_since_epoch().count());
  nopts.tick_interval = config_.heartbeat_interval;
  nopts.clock = clock_;
  nopts.metrics = config_.metrics;
  node_ =
      std::make_unique<RaftNode>(nopts, log_.get(), transport_, applier_.get());
  node_->SetLeaderCallback(
      [this](uint64_t leader, uint64_t term) { OnLeaderChange(leader, term); });

  applied_ = store_->ConsistentIndex();
  last_snapshot_index_ = log_->snapshot_metadata().index();
  processed_index_ = last_snapshot_index_;
  conf_state_ = log_->snapshot_metadata().conf_state();
  applied_entry_term_ = log_->snapshot_metadata().term();
  apply_thread_ = std::thread([this] { ApplyLoop(); });
  RETURN_IF_ERROR(node_->Start());
  hk_thread_ = std::thread([this] { HousekeepingLoop(); });
  if (config_.auto_compaction.mode != mvcc::AutoCompactionMode::kNone) {
    // Every replica must compact at the same revision, so the leader
    // proposes compactions through the log; on followers this is a no-op.
    auto_compactor_ = std::make_unique<mvcc::AutoCompactor>(
        clock_, config_.auto_compaction,
        [this] { return store_->CurrentRevision(); },
        [this](int64_t rev) -> Status {
          if (!is_leader()) return Status::Ok();
          etcdserverpb::CompactionRequest req;
          req.set_revision(rev);
          auto r = Compact(req);
          if (r.ok()) LOG(INFO) << "auto-compacted to revision " << rev;
          return r.status();
        });
    auto_compactor_->Start();
  }

  // A lone voter need not wait an election timeout to lead.
  auto members = membership_->Members();
  if (members.size() == 1 && members[0].id() == member_id_) {
    node_->Campaign();
  }
  return Status::Ok();
}

void StoreServer::Stop() {
  if (!started_.load() || stopped_.exchange(true)) return;
  if (auto_compactor_) auto_compactor_->Stop();
  {
    std::lock_guard<std::mutex> l(hk_mu_);
    hk_stop_ = true;
  }
  hk_cv_.notify_all();
  if (hk_thread_.joinable()) hk_thread_.join();
  if (node_) node_->Stop();
  {
    std::lock_guard<std::mutex> l(apply_mu_);
    stopping_ = true;
  }
  apply_cv_.notify_all();
  if (apply_thread_.joinable()) apply_thread_.join();
  // Nothing will be applied any more: fail whoever still waits.
  std::map<uint64_t, Waiter> waiters;
  {
    std::lock_guard<std::mutex> l(waiters_mu_);
    waiters.swap(waiters_);
  }
  for (auto& [id, w] : waiters) {
    w.done(UnavailableError("etcdserver: server stopped"));
  }
  std::map<uint64_t, ReadWaiter> reads;
  {
    std::lock_guard<std::mutex> l(apply_mu_);
    reads.swap(read_waiters_);
  }
  for (auto& [seq, w] : reads) {
    w.ready(UnavailableError("etcdserver: server stopped"));
  }
  if (read_pool_) read_pool_->Shutdown();
  if (store_) store_->Close();
}

// ---------------------------------------------------------------------------
// Proposals

uint64_t StoreServer::NextRequestId() {
  // Unique across the cluster: 16 bits of member id, 48 bits of counter
  // seeded from the clock so a restarted member does not reuse ids.
  static const uint64_t kStart =
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count())
      << 8;
  uint64_t n = kStart + request_seq_.fetch_add(1) + 1;
  return ((member_id_ & 0xffff) << 48) | (n & 0xffffffffffffull);
}

ApplyCallback StoreServer::TakeWaiter(uint64_t id) {
  std::lock_guard<std::mutex> l(waiters_mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return nullptr;
  ApplyCallback cb = std::move(it->second.done);
  waiters_.erase(it);
  proposals_pending_->Set(static_cast<double>(waiters_.size()));
  return cb;
}

void StoreServer::ProposeAsync(storagepb::InternalRaftRequest req,
                               ApplyCallback done) {
  if (!started_.load() || stopped_.load()) {
    done(UnavailableError("etcdserver: server stopped"));
    return;
  }
  if (corrupt_.load()) {
    done(Status(StatusCode::kCorruption, "etcdserver: corrupt cluster"));
    return;
  }
  uint64_t id = NextRequestId();
  req.set_id(id);
  req.set_proposed_at_unix_nanos(std::chrono::duration_cast<nanoseconds>(
                                     clock_->WallNow().time_since_epoch())
                                     .count());
  std::string data = req.SerializeAsString();
  if (static_cast<int64_t>(data.size()) > config_.max_request_bytes) {
    done(Status(StatusCode::kTooLarge, "etcdserver: request is too large"));
    return;
  }
  {
    std::lock_guard<std::mutex> l(waiters_mu_);
    waiters_[id] =
        Waiter{std::move(done), clock_->Now() + config_.request_timeout};
    proposals_pending_->Set(static_cast<double>(waiters_.size()));
  }
  node_->Propose(std::move(data), [this, id](Status s) {
    ApplyCallback cb = TakeWaiter(id);
    if (!cb) return;
    std::string msg = leader_id() == 0 ? "etcdserver: no leader"
                                       : "etcdserver: " + s.message();
    cb(Status(StatusCode::kUnavailable, msg));
  });
}

StatusOr<ApplyResponse> StoreServer::Propose(
    storagepb::InternalRaftRequest req) {
  auto p = std::make_shared<std::promise<StatusOr<ApplyResponse>>>();
  auto f = p->get_future();
  ProposeAsync(std::move(req),
               [p](StatusOr<ApplyResponse> r) { p->set_value(std::move(r)); });
  return f.get();
}

void StoreServer::LinearizableReadAsync(std::function<void(Status)> ready) {
  if (!started_.load() || stopped_.load()) {
    ready(UnavailableError("etcdserver: server stopped"));
    return;
  }
  node_->ReadIndex([this, ready = std::move(ready)](StatusOr<uint64_t> idx) {
    if (!idx.ok()) {
      Status s = idx.status();
      if (!read_pool_->Submit([ready, s] { ready(s); })) ready(s);
      return;
    }
    std::unique_lock<std::mutex> l(apply_mu_);
    if (applied_.load() >= *idx) {
      l.unlock();
      if (!read_pool_->Submit([ready] { ready(Status::Ok()); })) {
        ready(UnavailableError("etcdserver: server stopped"));
      }
      return;
    }
    uint64_t seq = ++read_seq_;
    read_heap_.push({*idx, seq});
    read_waiters_[seq] =
        ReadWaiter{ready, clock_->Now() + config_.request_timeout};
  });
}

void StoreServer::SetApplied(uint64_t index) {
  std::vector<std::function<void(Status)>> ready;
  {
    std::lock_guard<std::mutex> l(apply_mu_);
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

void StoreServer::Submit(std::function<void()> fn) {
  if (!read_pool_ || !read_pool_->Submit(fn)) fn();
}

void StoreServer::FillHeader(etcdserverpb::ResponseHeader* h) const {
  h->set_cluster_id(membership_->cluster_id());
  h->set_member_id(member_id_);
  h->set_raft_term(node_ ? node_->term() : 0);
}

// ---------------------------------------------------------------------------
// Apply thread

void StoreServer::ApplyLoop() {
  pthread_setname_np(pthread_self(), "apply");
  while (true) {
    ApplyTask task;
    {
      std::unique_lock<std::mutex> l(apply_mu_);
      apply_cv_.wait(l, [&] {
        return (stopping_ && !apply_busy_) ||
               (!apply_queue_.empty() && !apply_busy_);
      });
      if (apply_queue_.empty()) return;  // stopping, and nothing left
      task = std::move(apply_queue_.front());
      apply_queue_.pop_front();
      apply_busy_ = true;
    }
    ApplyTaskNow(task);
    std::lock_guard<std::mutex> l(apply_mu_);
    apply_busy_ = false;
  }
}

bool StoreServer::CanApplyInline(const ApplyTask& task) const {
  // Apply-thread state is read here with apply_mu_ held while the apply
  // thread is idle (apply_busy_ false), so it is stable.
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
                                 last_snapshot_index_ + config_.snapshot_count;
}

void StoreServer::ApplyTaskNow(ApplyTask& task) {
  if (task.barrier) {
    task.barrier();
    return;
  }
  applied_term_ = task.term;
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
    proposals_committed_->Inc();
    ApplyEntry(e, task.term, &answers);
    applied_entry_term_ = e.term();
    processed_index_ = e.index();
    proposals_applied_->Inc();
  }
  store_->EndWriteGroup();
  if (!task.entries.empty()) SetApplied(task.entries.back().index());
  for (Answer& a : answers) a.done(std::move(a.result));
  if (task.has_conf_state) conf_state_ = task.conf_state;
  MaybeSnapshot();
}

void StoreServer::ApplyEntry(const raftpb::Entry& e, uint64_t term,
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
    if (ApplyCallback cb = TakeWaiter(req.id())) {
      answers->push_back({std::move(cb), std::move(result)});
    }
  }
}

StatusOr<ApplyResponse> StoreServer::ApplyRequest(
    const storagepb::InternalRaftRequest& r, uint64_t index) {
  using R = storagepb::InternalRaftRequest;
  switch (r.request_case()) {
    case R::kPut: {
      ASSIGN_OR_RETURN(auto resp, store_->Put(r.put(), index));
      FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kDeleteRange: {
      ASSIGN_OR_RETURN(auto resp, store_->DeleteRange(r.delete_range(), index));
      FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kTxn: {
      ASSIGN_OR_RETURN(auto resp, store_->Txn(r.txn(), index));
      FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kCompaction: {
      RETURN_IF_ERROR(store_->Compact(r.compaction().revision(), index));
      etcdserverpb::CompactionResponse resp;
      FillHeader(resp.mutable_header());
      resp.mutable_header()->set_revision(store_->CurrentRevision());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseGrant: {
      ASSIGN_OR_RETURN(auto resp, store_->LeaseGrant(r.lease_grant(), index));
      FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseRevoke: {
      ASSIGN_OR_RETURN(auto resp, store_->LeaseRevoke(r.lease_revoke(), index));
      FillHeader(resp.mutable_header());
      return ApplyResponse(std::move(resp));
    }
    case R::kLeaseKeepalive: {
      // Keepalives go through the log so that a follower's client reaches
      // the leader's lessor; only the leader's lessor counts expiry.
      etcdserverpb::LeaseKeepAliveResponse resp;
      if (is_leader()) {
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
      FillHeader(resp.mutable_header());
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
      FillHeader(resp.mutable_header());
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

void StoreServer::ApplyConfChange(const raftpb::Entry& e,
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
        if (m.id() != member_id_ && m.peer_urls_size() > 0) {
          transport_->AddPeer(m.id(),
                              {m.peer_urls().begin(), m.peer_urls().end()});
        }
        // The new member has an empty log and must start from a snapshot
        // whose configuration includes it; the raft core will not send one
        // that predates it, so take one now.
        if (m.id() != member_id_) force_snapshot_ = true;
      } else {
        changed = membership_->ApplyPromote(e.index(), cc.node_id());
      }
      break;
    }
    case raftpb::ConfChangeRemoveNode:
      changed = membership_->ApplyRemove(e.index(), cc.node_id());
      if (cc.node_id() != member_id_) transport_->RemovePeer(cc.node_id());
      if (cc.node_id() == member_id_) MarkRemoved("applied its own removal");
      break;
    default:
      break;
  }
  CHECK(changed.ok()) << "saving membership failed: " << changed.status();
  if (cc.id() != 0) {
    if (ApplyCallback cb = TakeWaiter(cc.id())) {
      answers->push_back({std::move(cb), ApplyResponse()});
    }
  }
}

Status StoreServer::InstallSnapshot(const raftpb::Snapshot& snap) {
  uint64_t index = snap.metadata().index();
  std::string dir = member_dir_ + "/snap/db-" + std::to_string(index);
  if (!fs::exists(dir + "/db")) {
    return NotFoundError("snapshot database " + dir + " missing");
  }
  LOG(INFO) << "installing snapshot at index " << index;
  store_->Close();
  std::error_code ec;
  std::string old = member_dir_ + "/db.old";
  fs::remove_all(old, ec);
  fs::rename(member_dir_ + "/db", old, ec);
  if (ec) return IOError("move old db: " + ec.message());
  if (config_.crash_hook) config_.crash_hook("install-snapshot:old-moved");
  fs::rename(dir + "/db", member_dir_ + "/db", ec);
  if (ec) return IOError("move snapshot db: " + ec.message());
  if (config_.crash_hook) config_.crash_hook("install-snapshot:swapped");
  mvcc::Options mopts;
  mopts.dir = member_dir_ + "/db";
  mopts.clock = clock_;
  mopts.quota_bytes = config_.quota_backend_bytes;
  mopts.max_request_bytes = config_.max_request_bytes;
  // Auto-compaction is the server's (through raft), never the replica's.
  ASSIGN_OR_RETURN(store_, mvcc::Store::Open(mopts));
  std::string cluster = dir + "/cluster.pb";
  if (fs::exists(cluster)) {
    ASSIGN_OR_RETURN(auto m, Membership::Open(cluster, {}));
    storagepb::ClusterRecord rec = m->Record();
    RETURN_IF_ERROR(membership_->Replace(rec));
    for (const auto& mem : rec.members()) {
      if (mem.id() != member_id_) {
        transport_->AddPeer(mem.id(),
                            {mem.peer_urls().begin(), mem.peer_urls().end()});
      }
    }
  }
  if (config_.crash_hook) config_.crash_hook("install-snapshot:membership");
  // The renames must be durable before the pending directory goes.
  RETURN_IF_ERROR(FsyncDir(member_dir_));
  fs::remove_all(dir, ec);
  fs::remove_all(old, ec);
  if (is_leader()) store_->LeasePromote(config_.election_timeout);
  return Status::Ok();
}

void StoreServer::MaybeSnapshot() {
  // Not applied_: right after a restart it is the store's consistent index,
  // while conf_state_ still describes an earlier entry of the replay.
  uint64_t applied = processed_index_;
  if (applied <= last_snapshot_index_) return;
  if (!force_snapshot_ &&
      applied < last_snapshot_index_ + config_.snapshot_count) {
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

// ---------------------------------------------------------------------------
// Housekeeping: request timeouts, lease expiry, attributes, corruption.

void StoreServer::HousekeepingLoop() {
  pthread_setname_np(pthread_self(), "store-hk");
  next_corrupt_check_ = clock_->Now() + config_.election_timeout * 5;
  while (true) {
    {
      std::unique_lock<std::mutex> l(hk_mu_);
      if (clock_->WaitFor(l, hk_cv_, config_.heartbeat_interval,
                          [&] { return hk_stop_; })) {
        return;
      }
    }
    FailExpiredWaiters();
    if (leader_id() != 0 && !published_.load()) PublishAttributes();
    if (!removed_.load()) CheckRemovedByPeers();
    if (is_leader()) {
      ExpireLeases();
      if (config_.corrupt_check_interval > Duration(0) &&
          clock_->Now() >= next_corrupt_check_) {
        CheckCorruption();
        next_corrupt_check_ = clock_->Now() + config_.corrupt_check_interval;
      }
    }
  }
}

void StoreServer::MarkRemoved(const std::string& how) {
  if (removed_.exchange(true)) return;
  LOG(WARNING) << "member " << IdToHex(member_id_) << " (" << how
               << "): the member has been permanently removed from the "
                  "cluster; its data directory must be removed before the "
                  "host can join again as a new member";
}

void StoreServer::CheckRemovedByPeers() {
  const TimePoint now = clock_->Now();
  if (leader_id() != 0) {
    leaderless_since_ = TimePoint();
    return;
  }
  if (leaderless_since_ == TimePoint()) leaderless_since_ = now;
  const Duration wait = config_.election_timeout * 3;
  if (now - leaderless_since_ < wait || now < next_removed_check_) return;
  next_removed_check_ = now + wait;
  for (const storagepb::MemberRecord& m : membership_->Members()) {
    if (m.id() == member_id_) continue;
    StatusOr<storagepb::ClusterRecord> rec = transport_->PeerMembership(m.id());
    if (!rec.ok() || rec->cluster_id() != cluster_id()) continue;
    for (uint64_t id : rec->removed()) {
      if (id == member_id_) {
        MarkRemoved("member " + IdToHex(m.id()) + " lists it as removed");
        return;
      }
    }
  }
}

void StoreServer::FailExpiredWaiters() {
  TimePoint now = clock_->Now();
  std::vector<ApplyCallback> expired;
  {
    std::lock_guard<std::mutex> l(waiters_mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second.deadline <= now) {
        expired.push_back(std::move(it->second.done));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    proposals_pending_->Set(static_cast<double>(waiters_.size()));
  }
  for (auto& cb : expired) {
    proposals_failed_->Inc();
    cb(Status(StatusCode::kDeadlineExceeded, "etcdserver: request timed out"));
  }
  // Reads waiting for an applied index this member does not reach in time
  // (it is cut off from the leader, or catching up).
  std::vector<std::function<void(Status)>> reads;
  {
    std::lock_guard<std::mutex> l(apply_mu_);
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

void StoreServer::ExpireLeases() {
  // At most one revoke per lease in flight; the lessor keeps reporting an
  // expired lease until its revoke is applied.
  auto& in_flight = revokes_in_flight_;
  TimePoint now = clock_->Now();
  for (auto it = in_flight.begin(); it != in_flight.end();) {
    it = it->second <= now ? in_flight.erase(it) : std::next(it);
  }
  for (int64_t id : store_->ExpiredLeases(500)) {
    if (in_flight.count(id)) continue;
    in_flight[id] = now + config_.request_timeout;
    storagepb::InternalRaftRequest req;
    req.mutable_lease_revoke()->set_id(id);
    ProposeAsync(std::move(req), [id](StatusOr<ApplyResponse> r) {
      if (!r.ok() && !r.status().Is(StatusCode::kNotFound)) {
        LOG(WARNING) << "revoking expired lease " << id << ": " << r.status();
      }
    });
  }
}

void StoreServer::PublishAttributes() {
  if (clock_->Now() < next_publish_) return;
  next_publish_ = clock_->Now() + config_.request_timeout;
  storagepb::InternalRaftRequest req;
  auto* a = req.mutable_member_attributes();
  a->set_member_id(member_id_);
  a->set_name(config_.name);
  for (const auto& u : config_.client_urls) a->add_client_urls(u);
  ProposeAsync(std::move(req), [this](StatusOr<ApplyResponse> r) {
    if (!r.ok()) return;
    published_ = true;
    std::lock_guard<std::mutex> l(leader_mu_);
    leader_cv_.notify_all();
  });
}

void StoreServer::CheckCorruption() {
  // Compare the hash of every live key-value at one revision with each
  // peer's. The hash covers only what is live at the revision, so members
  // that compacted differently still agree. A peer that has not reached the
  // revision yet answers FutureRevision and is checked next time.
  int64_t rev = store_->CurrentRevision();
  if (rev == 0) return;
  auto mine = store_->HashKV(rev);
  if (!mine.ok()) return;
  for (const auto& m : membership_->Members()) {
    if (m.id() == member_id_) continue;
    StatusOr<etcdserverpb::HashKVResponse> theirs =
        transport_->PeerHashKV(m.id(), rev);
    if (!theirs.ok()) continue;
    if (theirs->hash() == mine->hash()) continue;
    LOG(ERROR) << "member " << IdToHex(m.id()) << " hash " << theirs->hash()
               << " at revision " << rev << " differs from the leader's "
               << mine->hash() << ": raising CORRUPT";
    storagepb::InternalRaftRequest req;
    auto* a = req.mutable_alarm();
    a->set_action(etcdserverpb::AlarmRequest::ACTIVATE);
    a->set_memberid(m.id());
    a->set_alarm(etcdserverpb::CORRUPT);
    ProposeAsync(std::move(req), [](StatusOr<ApplyResponse>) {});
  }
}

void StoreServer::OnLeaderChange(uint64_t leader, uint64_t term) {
  { std::lock_guard<std::mutex> l(leader_mu_); }
  leader_cv_.notify_all();
  if (leader == member_id_) {
    // A new leader restarts every lease's countdown, extended by an election
    // timeout, so a failover does not expire leases whose keepalives went to
    // the old leader (etcd's lessor Promote).
    store_->LeasePromote(config_.election_timeout);
  } else {
    store_->LeaseDemote();
  }
}

bool StoreServer::WaitReady(Duration timeout) {
  std::unique_lock<std::mutex> l(leader_mu_);
  return clock_->WaitFor(l, leader_cv_, timeout,
                         [&] { return published_.load(); });
}

bool StoreServer::WaitForLeader(Duration timeout) {
  return WaitForLeaderMatching([](uint64_t id) { return id != 0; }, timeout);
}

bool StoreServer::WaitForLeaderMatching(
    const std::function<bool(uint64_t)>& pred, Duration timeout) {
  std::unique_lock<std::mutex> l(leader_mu_);
  return clock_->WaitFor(l, leader_cv_, timeout,
                         [&] { return pred(leader_id()); });
}

std::vector<etcdserverpb::AlarmMember> StoreServer::Alarms() const {
  std::vector<etcdserverpb::AlarmMember> out;
  if (store_ && store_->NoSpaceAlarm()) {
    etcdserverpb::AlarmMember a;
    a.set_memberid(member_id_);
    a.set_alarm(etcdserverpb::NOSPACE);
    out.push_back(a);
  }
  if (corrupt_.load()) {
    etcdserverpb::AlarmMember a;
    a.set_memberid(member_id_);
    a.set_alarm(etcdserverpb::CORRUPT);
    out.push_back(a);
  }
  return out;
}

// ---------------------------------------------------------------------------
// KV

StatusOr<etcdserverpb::RangeResponse> StoreServer::Range(
    const etcdserverpb::RangeRequest& req) {
  if (req.key().empty()) return KeyNotProvided();
  if (!req.serializable()) {
    std::promise<Status> p;
    LinearizableReadAsync([&](Status s) { p.set_value(s); });
    RETURN_IF_ERROR(p.get_future().get());
  }
  ASSIGN_OR_RETURN(auto resp, store_->Range(req));
  FillHeader(resp.mutable_header());
  return resp;
}

StatusOr<etcdserverpb::PutResponse> StoreServer::Put(
    const etcdserverpb::PutRequest& req) {
  if (req.key().empty()) return KeyNotProvided();
  storagepb::InternalRaftRequest r;
  *r.mutable_put() = req;
  return ResponseAs<etcdserverpb::PutResponse>(Propose(std::move(r)));
}

StatusOr<etcdserverpb::DeleteRangeResponse> StoreServer::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& req) {
  if (req.key().empty()) return KeyNotProvided();
  storagepb::InternalRaftRequest r;
  *r.mutable_delete_range() = req;
  return ResponseAs<etcdserverpb::DeleteRangeResponse>(Propose(std::move(r)));
}

StatusOr<etcdserverpb::TxnResponse> StoreServer::Txn(
    const etcdserverpb::TxnRequest& req) {
  storagepb::InternalRaftRequest r;
  *r.mutable_txn() = req;
  return ResponseAs<etcdserverpb::TxnResponse>(Propose(std::move(r)));
}

StatusOr<etcdserverpb::CompactionResponse> StoreServer::Compact(
    const etcdserverpb::CompactionRequest& req) {
  storagepb::InternalRaftRequest r;
  *r.mutable_compaction() = req;
  ASSIGN_OR_RETURN(auto resp, ResponseAs<etcdserverpb::CompactionResponse>(
                                  Propose(std::move(r))));
  if (req.physical())
    RETURN_IF_ERROR(store_->WaitForCompaction(req.revision()));
  return resp;
}

StatusOr<etcdserverpb::LeaseGrantResponse> StoreServer::LeaseGrant(
    const etcdserverpb::LeaseGrantRequest& req) {
  storagepb::InternalRaftRequest r;
  *r.mutable_lease_grant() = req;
  return ResponseAs<etcdserverpb::LeaseGrantResponse>(Propose(std::move(r)));
}

StatusOr<etcdserverpb::LeaseRevokeResponse> StoreServer::LeaseRevoke(
    const etcdserverpb::LeaseRevokeRequest& req) {
  storagepb::InternalRaftRequest r;
  *r.mutable_lease_revoke() = req;
  return ResponseAs<etcdserverpb::LeaseRevokeResponse>(Propose(std::move(r)));
}

StatusOr<etcdserverpb::LeaseKeepAliveResponse> StoreServer::LeaseKeepAlive(
    const etcdserverpb::LeaseKeepAliveRequest& req) {
  storagepb::InternalRaftRequest r;
  *r.mutable_lease_keepalive() = req;
  return ResponseAs<etcdserverpb::LeaseKeepAliveResponse>(
      Propose(std::move(r)));
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse> StoreServer::LeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req) {
  std::promise<Status> p;
  LinearizableReadAsync([&](Status s) { p.set_value(s); });
  RETURN_IF_ERROR(p.get_future().get());
  ASSIGN_OR_RETURN(auto resp, store_->LeaseTimeToLive(req));
  FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(store_->CurrentRevision());
  return resp;
}

StatusOr<etcdserverpb::LeaseLeasesResponse> StoreServer::LeaseLeases(
    const etcdserverpb::LeaseLeasesRequest&) {
  std::promise<Status> p;
  LinearizableReadAsync([&](Status s) { p.set_value(s); });
  RETURN_IF_ERROR(p.get_future().get());
  ASSIGN_OR_RETURN(auto resp, store_->LeaseLeases());
  FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(store_->CurrentRevision());
  return resp;
}

StatusOr<etcdserverpb::StatusResponse> StoreServer::MemberStatus() {
  etcdserverpb::StatusResponse resp;
  FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(store_->CurrentRevision());
  resp.set_version(kVersion);
  resp.set_dbsize(store_->DbSize());
  resp.set_dbsizeinuse(store_->DbSizeInUse());
  resp.set_leader(leader_id());
  resp.set_raftindex(node_ ? node_->commit_index() : 0);
  resp.set_raftterm(term());
  resp.set_raftappliedindex(applied_.load());
  for (const auto& a : Alarms()) {
    resp.add_errors(std::string("memberID:") + std::to_string(a.memberid()) +
                    " alarm:" + etcdserverpb::AlarmType_Name(a.alarm()) + " ");
  }
  auto self = membership_->Find(member_id_);
  resp.set_islearner(self && self->is_learner());
  return resp;
}

namespace {

// Drains one MVCC watch stream on its own thread into the callback.
class EmbeddedWatch : public Watch {
 public:
  EmbeddedWatch(StoreServer* server, std::unique_ptr<mvcc::WatchStream> s,
                WatchCallback cb, Clock* clock)
      : server_(server),
        stream_(std::move(s)),
        cb_(std::move(cb)),
        clock_(clock) {}
  ~EmbeddedWatch() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void Run(etcdserverpb::WatchResponse first) {
    cb_(first);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        auto r = stream_->Next(clock_->Now() + milliseconds(100));
        if (!r) continue;
        server_->FillHeader(r->mutable_header());
        bool last = r->canceled();
        cb_(*r);
        if (last) return;
      }
    });
  }
  void RequestProgress() override { stream_->RequestProgress(); }

 private:
  StoreServer* server_;
  std::unique_ptr<mvcc::WatchStream> stream_;
  WatchCallback cb_;
  Clock* clock_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

StatusOr<std::unique_ptr<Watch>> StoreServer::StartWatch(
    const etcdserverpb::WatchCreateRequest& req, WatchCallback callback) {
  auto stream = store_->NewWatchStream();
  etcdserverpb::WatchResponse created;
  FillHeader(created.mutable_header());
  created.mutable_header()->set_revision(store_->CurrentRevision());
  created.set_created(true);
  StatusOr<int64_t> id = stream->Watch(req);
  auto w = std::make_unique<EmbeddedWatch>(this, std::move(stream), callback,
                                           clock_);
  if (!id.ok()) {
    if (!id.status().Is(StatusCode::kCompacted)) return id.status();
    // As etcd: the watch is created, then canceled with the compacted
    // revision.
    created.set_watch_id(req.watch_id());
    callback(created);
    etcdserverpb::WatchResponse canceled;
    canceled.set_watch_id(req.watch_id());
    canceled.set_canceled(true);
    canceled.set_compact_revision(id.status().detail());
    canceled.set_cancel_reason("mvcc: required revision has been compacted");
    callback(canceled);
    return std::unique_ptr<Watch>(std::move(w));
  }
  created.set_watch_id(*id);
  w->Run(created);
  return std::unique_ptr<Watch>(std::move(w));
}

// ---------------------------------------------------------------------------
// Maintenance and cluster

StatusOr<etcdserverpb::AlarmResponse> StoreServer::Alarm(
    const etcdserverpb::AlarmRequest& req) {
  if (req.action() == etcdserverpb::AlarmRequest::GET) {
    etcdserverpb::AlarmResponse resp;
    FillHeader(resp.mutable_header());
    resp.mutable_header()->set_revision(store_->CurrentRevision());
    for (const auto& a : Alarms()) {
      if (req.alarm() == etcdserverpb::NONE || req.alarm() == a.alarm()) {
        *resp.add_alarms() = a;
      }
    }
    return resp;
  }
  storagepb::InternalRaftRequest r;
  *r.mutable_alarm() = req;
  return ResponseAs<etcdserverpb::AlarmResponse>(Propose(std::move(r)));
}

StatusOr<etcdserverpb::DefragmentResponse> StoreServer::Defragment() {
  RETURN_IF_ERROR(store_->Defrag());
  return etcdserverpb::DefragmentResponse();
}

StatusOr<etcdserverpb::HashKVResponse> StoreServer::HashKV(int64_t revision) {
  ASSIGN_OR_RETURN(auto resp, store_->HashKV(revision));
  FillHeader(resp.mutable_header());
  return resp;
}

Status StoreServer::ProposeConfChangeAndWait(raftpb::ConfChange cc) {
  if (!started_.load() || stopped_.load()) {
    return UnavailableError("etcdserver: server stopped");
  }
  uint64_t id = NextRequestId();
  cc.set_id(id);
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  {
    std::lock_guard<std::mutex> l(waiters_mu_);
    waiters_[id] =
        Waiter{[p](StatusOr<ApplyResponse> r) { p->set_value(r.status()); },
               clock_->Now() + config_.request_timeout};
  }
  node_->ProposeConfChange(std::move(cc), [this, id](Status s) {
    if (ApplyCallback cb = TakeWaiter(id)) {
      cb(UnavailableError("etcdserver: " + s.message()));
    }
  });
  return f.get();
}

StatusOr<etcdserverpb::MemberAddResponse> StoreServer::MemberAdd(
    const etcdserverpb::MemberAddRequest& req) {
  if (req.peerurls_size() == 0) {
    return InvalidArgumentError("etcdserver: member peer URLs not provided");
  }
  for (const auto& m : membership_->Members()) {
    for (const auto& u : m.peer_urls()) {
      for (const auto& nu : req.peerurls()) {
        if (u == nu) {
          return FailedPreconditionError(
              "etcdserver: Peer URLs already exists");
        }
      }
    }
  }
  storagepb::MemberRecord m;
  m.set_id(ComputeMemberId({req.peerurls().begin(), req.peerurls().end()},
                           config_.initial_cluster_token,
                           std::chrono::duration_cast<nanoseconds>(
                               clock_->WallNow().time_since_epoch())
                               .count()));
  for (const auto& u : req.peerurls()) m.add_peer_urls(u);
  m.set_is_learner(req.islearner());
  raftpb::ConfChange cc;
  cc.set_type(req.islearner() ? raftpb::ConfChangeAddLearnerNode
                              : raftpb::ConfChangeAddNode);
  cc.set_node_id(m.id());
  cc.set_context(m.SerializeAsString());
  RETURN_IF_ERROR(ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberAddResponse resp;
  FillHeader(resp.mutable_header());
  auto* added = resp.mutable_member();
  added->set_id(m.id());
  for (const auto& u : m.peer_urls()) added->add_peerurls(u);
  added->set_islearner(m.is_learner());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberRemoveResponse> StoreServer::MemberRemove(
    const etcdserverpb::MemberRemoveRequest& req) {
  if (!membership_->Find(req.id())) {
    return NotFoundError("etcdserver: member not found");
  }
  raftpb::ConfChange cc;
  cc.set_type(raftpb::ConfChangeRemoveNode);
  cc.set_node_id(req.id());
  RETURN_IF_ERROR(ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberRemoveResponse resp;
  FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberPromoteResponse> StoreServer::MemberPromote(
    const etcdserverpb::MemberPromoteRequest& req) {
  auto m = membership_->Find(req.id());
  if (!m) return NotFoundError("etcdserver: member not found");
  if (!m->is_learner()) {
    return FailedPreconditionError(
        "etcdserver: can only promote a learner member");
  }
  raftpb::ConfChange cc;
  cc.set_type(raftpb::ConfChangeAddNode);
  cc.set_node_id(req.id());
  cc.set_context(m->SerializeAsString());
  RETURN_IF_ERROR(ProposeConfChangeAndWait(std::move(cc)));
  etcdserverpb::MemberPromoteResponse resp;
  FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MemberListResponse> StoreServer::MemberList() {
  etcdserverpb::MemberListResponse resp;
  FillHeader(resp.mutable_header());
  membership_->FillMembers(resp.mutable_members());
  return resp;
}

StatusOr<etcdserverpb::MoveLeaderResponse> StoreServer::MoveLeader(
    const etcdserverpb::MoveLeaderRequest& req) {
  if (!is_leader()) {
    return Status(StatusCode::kNotLeader, "etcdserver: not leader",
                  static_cast<int64_t>(leader_id()));
  }
  auto target = membership_->Find(req.targetid());
  if (!target) return NotFoundError("etcdserver: bad leader transferee");
  if (target->is_learner()) {
    return FailedPreconditionError("etcdserver: bad leader transferee");
  }
  node_->TransferLeader(req.targetid());
  std::unique_lock<std::mutex> l(leader_mu_);
  if (!clock_->WaitFor(l, leader_cv_, config_.request_timeout,
                       [&] { return leader_id() == req.targetid(); })) {
    return Status(StatusCode::kDeadlineExceeded,
                  "etcdserver: leadership transfer timed out");
  }
  etcdserverpb::MoveLeaderResponse resp;
  FillHeader(resp.mutable_header());
  return resp;
}

StatusOr<raftpb::SnapshotMetadata> StoreServer::SnapshotTo(
    const std::string& dir) {
  if (!started_.load() || stopped_.load()) {
    return UnavailableError("etcdserver: server stopped");
  }
  auto p = std::make_shared<std::promise<StatusOr<raftpb::SnapshotMetadata>>>();
  auto f = p->get_future();
  ApplyTask t;
  t.barrier = [this, dir, p] {
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
  };
  {
    std::lock_guard<std::mutex> l(apply_mu_);
    if (stopping_) return UnavailableError("etcdserver: server stopped");
    apply_queue_.push_back(std::move(t));
  }
  apply_cv_.notify_one();
  return f.get();
}

Status StoreServer::ReceiveSnapshot(const std::string& received_dir,
                                    raftpb::Message msg) {
  std::string dir = member_dir_ + "/snap/db-" +
                    std::to_string(msg.snapshot().metadata().index());
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::rename(received_dir, dir, ec);
  if (ec) return IOError("keep received snapshot: " + ec.message());
  int dfd = ::open((member_dir_ + "/snap").c_str(),
                   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  node_->Step(std::move(msg));
  return Status::Ok();
}

}  // namespace kplane::storage
