#include "storage/server/store_server.h"

#include <algorithm>
#include <future>
#include <thread>

#include "base/logging.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/server/corruption_check.h"
#include "storage/server/entry_check.h"
#include "storage/server/version.h"
#include "storage/server/watch_requests.h"

namespace kplane::storage {

namespace {

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

Status KeyNotProvided() {
  return InvalidArgumentError("etcdserver: key is not provided");
}

Status ServerStopped() {
  return UnavailableError("etcdserver: server stopped");
}

Status NoStore() { return UnavailableError("etcdserver: no store"); }

using R = storagepb::InternalRaftRequest;

}  // namespace

// ---------------------------------------------------------------------------
// Opening, wiring, stopping

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
  if (config.request_timeout <= Duration(0)) {
    config.request_timeout = seconds(5) + 2 * config.election_timeout;
  }
  ASSIGN_OR_RETURN(BootstrappedMember member, BootstrapMember(&config));
  return std::unique_ptr<StoreServer>(
      new StoreServer(std::move(config), std::move(member)));
}

StoreServer::StoreServer(StoreConfig config, BootstrappedMember member)
    : config_(std::move(config)),
      clock_(config_.clock),
      lock_(std::move(member.lock)),
      member_dir_(std::move(member.member_dir)),
      log_(std::move(member.log)),
      membership_(std::move(member.membership)) {
  self_ = std::make_unique<LocalMember>(member.member_id, membership_.get(),
                                        clock_);
  ProposerOptions popts;
  popts.member_id = member.member_id;
  popts.request_timeout = config_.request_timeout;
  popts.max_request_bytes = config_.max_request_bytes;
  popts.corrupt = [this] { return applier_->corrupt(); };
  popts.nospace = [this] { return applier_->nospace(); };
  popts.clock = clock_;
  popts.metrics = config_.metrics;
  proposer_ = std::make_unique<Proposer>(std::move(popts));

  StoreApplierOptions aopts;
  aopts.member_dir = member_dir_;
  aopts.store_options = StoreOptions(config_, member_dir_);
  aopts.snapshot_count = config_.snapshot_count;
  aopts.election_timeout = config_.election_timeout;
  aopts.request_timeout = config_.request_timeout;
  aopts.clock = clock_;
  aopts.metrics = config_.metrics;
  aopts.crash_hook = config_.crash_hook;
  auth_ = std::make_unique<AuthStore>(AuthStoreOptions{
      .clock = clock_,
      .token_ttl = config_.auth_token_ttl,
      .tokens = config_.auth_tokens,
      .pbkdf2_iterations = config_.auth_pbkdf2_iterations,
      .token_index_wait = config_.auth_token_index_wait,
      .max_token_index_waiters = config_.max_auth_token_index_waiters});
  applier_ = std::make_unique<StoreApplier>(
      std::move(aopts), std::move(member.store), membership_.get(), self_.get(),
      proposer_.get(), auth_.get());

  // etcd's identity series, value 1 with the fact in a label. The
  // version is the etcd API level kplane implements (version.h), as
  // /version reports it; the cluster's is its major.minor, as etcd's.
  {
    char hex[17];
    snprintf(hex, sizeof(hex), "%llx",
             static_cast<unsigned long long>(self_->id()));
    config_.metrics
        ->NewGauge("etcd_server_id",
                   "Server or member ID in hexadecimal format. 1 for "
                   "'server_id' label with current ID.",
                   {"server_id"})
        ->With({hex})
        ->Set(1);
    config_.metrics
        ->NewGauge("etcd_server_version",
                   "Which version is running. 1 for 'server_version' label "
                   "with current version.",
                   {"server_version"})
        ->With({kEtcdServerVersion})
        ->Set(1);
    std::string cluster = kEtcdClusterVersion;
    cluster = cluster.substr(0, cluster.rfind('.'));
    config_.metrics
        ->NewGauge("etcd_cluster_version",
                   "Which version is running. 1 for 'cluster_version' label "
                   "with current cluster version",
                   {"cluster_version"})
        ->With({cluster})
        ->Set(1);
  }

  refused_messages_ = config_.metrics->NewCounter(
      "kplane_server_peer_messages_refused_total",
      "Raft messages from the peer port that were not stepped, by reason: "
      "not_member (the sender is not in the current membership), "
      "invalid (a local message type, another recipient, an invalid "
      "proposed or appended entry).",
      {"reason"});
  metrics::Family<metrics::Counter>* refused_watch_creates =
      config_.metrics->NewCounter(
          "kplane_watch_creates_refused_total",
          "Watch creates refused because their client Watch stream already "
          "held --max-watchers-per-stream watchers, by protocol: grpc (the "
          "gRPC front) or json (the JSON gateway's /v3/watch).",
          {"protocol"});
  refused_watch_creates_[static_cast<size_t>(WatchProtocol::kGrpc)] =
      refused_watch_creates->With({"grpc"});
  refused_watch_creates_[static_cast<size_t>(WatchProtocol::kJson)] =
      refused_watch_creates->With({"json"});

  admin_ = std::make_unique<ClusterAdmin>(
      ClusterAdminOptions{
          .initial_cluster_token = config_.initial_cluster_token,
          .request_timeout = config_.request_timeout,
          .clock = clock_},
      self_.get(), membership_.get(), proposer_.get(), applier_.get());
}

StoreServer::~StoreServer() { Stop(); }

Status StoreServer::CheckInitialHashKV(PeerTransport* transport) {
  const uint64_t id = self_->id();
  std::vector<storagepb::MemberRecord> members = membership_->Members();
  int64_t rev = 0;
  StatusOr<etcdserverpb::HashKVResponse> mine = NoStore();
  {
    StoreRef store = mvcc();
    if (store) {
      rev = store->CurrentRevision();
      mine = store->HashKV(rev);
    }
  }
  if (!mine.ok()) return mine.status().Annotate("initial corruption check");
  std::vector<MemberHash> others;
  for (const auto& m : members) {
    if (m.id() == id) continue;
    transport->AddPeer(m.id(), {m.peer_urls().begin(), m.peer_urls().end()});
    others.push_back({m.id(), transport->PeerHashKV(m.id(), rev)});
    if (!others.back().hash.ok()) {
      LOG(WARNING) << "initial corruption check: cannot compare with member "
                   << IdToHex(m.id()) << " at revision " << rev << ": "
                   << others.back().hash.status();
    }
  }
  HashVerdict v = JudgeHashes(id, mine->hash(), others, members.size());
  if (v.consistent) {
    LOG(INFO) << "initial corruption check passed at revision " << rev << " ("
              << v.compared << " of " << members.size() << " members compared)";
    return Status::Ok();
  }
  bool me = false;
  for (uint64_t c : v.corrupt) me |= c == id || c == 0;
  if (!me) {
    LOG(WARNING) << "initial corruption check at revision " << rev
                 << ": a quorum agrees with this member, others differ ("
                 << v.detail << "); the leader's periodic check will raise "
                 << "their alarm";
    return Status::Ok();
  }
  return CorruptionError(IdToHex(id) +
                         " found data inconsistency with peers at revision " +
                         std::to_string(rev) + " (" + v.detail + ")");
}

Status StoreServer::Start(PeerTransport* transport) {
  if (started_.exchange(true)) return FailedPreconditionError("started");
  const uint64_t id = self_->id();
  transport_ = transport ? transport : TheNullTransport();
  for (const auto& m : membership_->Members()) {
    if (m.id() != id) {
      transport_->AddPeer(m.id(), {m.peer_urls().begin(), m.peer_urls().end()});
    }
  }
  read_pool_ = std::make_shared<net::WorkerPool>(2, "store-read");
  password_pool_ = std::make_shared<net::WorkerPool>(1, "store-password");

  RaftNodeOptions nopts;
  nopts.raft.id = id;
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
      id ^ static_cast<uint64_t>(clock_->Now().time_since_epoch().count());
  nopts.tick_interval = config_.heartbeat_interval;
  StoreApplier* applier = applier_.get();
  nopts.on_halt = [applier](const Status& why) { applier->Halt(why); };
  nopts.on_persist_blocked = [applier](const Status& why) {
    applier->PersistBlocked(why);
  };
  nopts.clock = clock_;
  nopts.metrics = config_.metrics;
  node_ =
      std::make_unique<RaftNode>(nopts, log_.get(), transport_, applier_.get());

  HousekeeperOptions hopts;
  hopts.name = config_.name;
  hopts.client_urls = config_.client_urls;
  hopts.heartbeat_interval = config_.heartbeat_interval;
  hopts.election_timeout = config_.election_timeout;
  hopts.request_timeout = config_.request_timeout;
  hopts.corrupt_check_interval = config_.corrupt_check_interval;
  hopts.clock = clock_;
  hopts.leader_required_streams = &leader_required_streams_;
  housekeeper_ = std::make_unique<Housekeeper>(
      std::move(hopts), self_.get(), membership_.get(), proposer_.get(),
      applier_.get(), transport_);
  Housekeeper* hk = housekeeper_.get();
  node_->SetLeaderCallback([hk](uint64_t leader, uint64_t term) {
    hk->OnLeaderChange(leader, term);
  });

  self_->AttachNode(node_.get());
  proposer_->Start(node_.get());
  applier_->Start(log_->snapshot_metadata(), node_.get(), transport_,
                  read_pool_);
  RETURN_IF_ERROR(node_->Start());
  housekeeper_->Start();
  if (config_.auto_compaction.mode != mvcc::AutoCompactionMode::kNone) {
    // Every replica must compact at the same revision, so the leader
    // proposes compactions through the log; on followers this is a no-op.
    auto_compactor_ = std::make_unique<mvcc::AutoCompactor>(
        clock_, config_.auto_compaction,
        [this]() -> int64_t {
          StoreRef store = mvcc();
          return store ? store->CurrentRevision() : 0;
        },
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
  if (members.size() == 1 && members[0].id() == id) node_->Campaign();
  return Status::Ok();
}

void StoreServer::Stop() {
  if (!started_.load() || stopped_.exchange(true)) return;
  proposer_->Close();
  if (auto_compactor_) auto_compactor_->Stop();
  if (housekeeper_) housekeeper_->Stop();
  if (node_) node_->Stop();
  // Applies what is queued, then fails the reads still waiting.
  applier_->Stop();
  // Nothing will be applied any more: fail whoever still waits.
  proposer_->FailPending();
  if (password_pool_) password_pool_->Shutdown();
  if (read_pool_) read_pool_->Shutdown();
  if (StoreRef store = applier_->store()) store->Close();
}

Status StoreServer::CheckRunning() const {
  if (!started_.load() || stopped_.load()) return ServerStopped();
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Asynchronous core

void StoreServer::ProposeAsync(storagepb::InternalRaftRequest req,
                               ApplyCallback done) {
  proposer_->Propose(std::move(req), std::move(done));
}

void StoreServer::LinearizableReadAsync(std::function<void(Status)> ready) {
  if (Status s = CheckRunning(); !s.ok()) {
    ready(s);
    return;
  }
  applier_->LinearizableReadAsync(std::move(ready));
}

Status StoreServer::WaitLinearizable() {
  if (Status s = CheckRunning(); !s.ok()) return s;
  // The callers block read-pool threads (gRPC unary calls, election/lock
  // waiters): the completion must not queue behind them on that pool, or
  // two concurrent waits on the pool's two threads never end (found by
  // ElectionLockGrpcTest.RevokedLeaseEndsTheWait under load). Setting the
  // promise is safe on any thread.
  auto p = std::make_shared<std::promise<Status>>();
  std::future<Status> done = p->get_future();
  applier_->LinearizableReadAsync([p](Status s) { p->set_value(s); },
                                  /*on_read_pool=*/false);
  return done.get();
}

void StoreServer::Submit(std::function<void()> fn) {
  if (!read_pool_ || !read_pool_->Submit(fn)) fn();
}

bool StoreServer::SubmitPasswordWork(std::function<void()> fn) {
  if (queued_password_work_.fetch_add(1) >= kMaxQueuedPasswordWork) {
    queued_password_work_.fetch_sub(1);
    return false;
  }
  auto counted = [this, fn = std::move(fn)] {
    queued_password_work_.fetch_sub(1);
    fn();
  };
  if (!password_pool_ || !password_pool_->Submit(counted)) counted();
  return true;
}

void StoreServer::FillHeader(etcdserverpb::ResponseHeader* h) const {
  self_->FillHeader(h);
}

Status StoreServer::AdmitWatchCreate(size_t open, WatchProtocol protocol) {
  Status full =
      etcdjson::CheckWatcherLimit(open, config_.max_watchers_per_stream);
  if (!full.ok()) refused_watch_creates_[static_cast<size_t>(protocol)]->Inc();
  return full;
}

StatusOr<StoreRef> StoreServer::ReadStore() {
  if (applier_->self_corrupt()) {
    return Status(StatusCode::kCorruption, "etcdserver: corrupt cluster");
  }
  StoreRef store = applier_->store();
  if (!store) return NoStore();
  return store;
}

StoreServer::Health StoreServer::CheckHealth(
    Duration read_timeout,
    const std::vector<etcdserverpb::AlarmType>& excluded_alarms) {
  Health h;
  if (failed() || !apply_error().ok()) {
    h.reason = "MEMBER FAILED: " +
               (failed() ? failure().message() : apply_error().message());
    return h;
  }
  std::vector<etcdserverpb::AlarmMember> alarms = Alarms();
  std::erase_if(alarms, [&](const etcdserverpb::AlarmMember& a) {
    return std::find(excluded_alarms.begin(), excluded_alarms.end(),
                     a.alarm()) != excluded_alarms.end();
  });
  if (!alarms.empty()) {
    h.reason = "ALARM ACTIVE";
    for (const auto& a : alarms) {
      h.reason += " " + IdToHex(a.memberid()) + ":" +
                  etcdserverpb::AlarmType_Name(a.alarm());
    }
    return h;
  }
  if (leader_id() == 0) {
    h.reason = "RAFT NO LEADER";
    return h;
  }
  RaftNode* node = self_->node();
  const uint64_t commit = node ? node->commit_index() : 0;
  const uint64_t applied = applied_index();
  if (commit > applied + kMaxApplyGap) {
    h.reason = "APPLY STUCK: applied index " + std::to_string(applied) +
               " is more than " + std::to_string(kMaxApplyGap) +
               " entries behind commit index " + std::to_string(commit);
    return h;
  }
  if (housekeeper_ && housekeeper_->ApplyStalled()) {
    h.reason = "APPLY STUCK: applied index " + std::to_string(applied) +
               " has not moved for a request timeout behind commit index " +
               std::to_string(commit);
    return h;
  }
  auto p = std::make_shared<std::promise<Status>>();
  std::future<Status> f = p->get_future();
  LinearizableReadAsync([p](Status s) { p->set_value(s); });
  if (f.wait_for(read_timeout) != std::future_status::ready) {
    h.reason = "READ TIMEOUT: a linearizable read did not complete";
    return h;
  }
  if (Status s = f.get(); !s.ok()) {
    h.reason = "READ FAILED: " + s.message();
    return h;
  }
  h.healthy = true;
  return h;
}

bool StoreServer::WaitForLeader(Duration timeout) {
  return WaitForLeaderMatching([](uint64_t id) { return id != 0; }, timeout);
}

// ---------------------------------------------------------------------------
// KV: reads are served here, writes are proposals.

StatusOr<etcdserverpb::RangeResponse> StoreServer::Range(
    const etcdserverpb::RangeRequest& req) {
  if (req.key().empty()) return KeyNotProvided();
  if (!req.serializable()) RETURN_IF_ERROR(WaitLinearizable());
  ASSIGN_OR_RETURN(StoreRef store, ReadStore());
  ASSIGN_OR_RETURN(auto resp, store->Range(req));
  FillHeader(resp.mutable_header());
  return resp;
}

StatusOr<etcdserverpb::PutResponse> StoreServer::Put(
    const etcdserverpb::PutRequest& req) {
  if (req.key().empty()) return KeyNotProvided();
  return proposer_->ProposeAndWaitAs<etcdserverpb::PutResponse>(
      req, &R::mutable_put);
}

StatusOr<etcdserverpb::DeleteRangeResponse> StoreServer::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& req) {
  if (req.key().empty()) return KeyNotProvided();
  return proposer_->ProposeAndWaitAs<etcdserverpb::DeleteRangeResponse>(
      req, &R::mutable_delete_range);
}

StatusOr<etcdserverpb::TxnResponse> StoreServer::Txn(
    const etcdserverpb::TxnRequest& req) {
  return proposer_->ProposeAndWaitAs<etcdserverpb::TxnResponse>(
      req, &R::mutable_txn);
}

StatusOr<etcdserverpb::CompactionResponse> StoreServer::Compact(
    const etcdserverpb::CompactionRequest& req) {
  ASSIGN_OR_RETURN(
      auto resp, proposer_->ProposeAndWaitAs<etcdserverpb::CompactionResponse>(
                     req, &R::mutable_compaction));
  if (req.physical()) {
    StoreRef store = mvcc();
    if (!store) return NoStore();
    RETURN_IF_ERROR(store->WaitForCompaction(req.revision()));
  }
  return resp;
}

StatusOr<etcdserverpb::LeaseGrantResponse> StoreServer::LeaseGrant(
    const etcdserverpb::LeaseGrantRequest& req) {
  return proposer_->ProposeAndWaitAs<etcdserverpb::LeaseGrantResponse>(
      req, &R::mutable_lease_grant);
}

StatusOr<etcdserverpb::LeaseRevokeResponse> StoreServer::LeaseRevoke(
    const etcdserverpb::LeaseRevokeRequest& req) {
  return proposer_->ProposeAndWaitAs<etcdserverpb::LeaseRevokeResponse>(
      req, &R::mutable_lease_revoke);
}

StatusOr<etcdserverpb::LeaseKeepAliveResponse> StoreServer::LeaseKeepAlive(
    const etcdserverpb::LeaseKeepAliveRequest& req) {
  // The leader answers a lease its lessor does not know without a
  // proposal, as etcd's leader (lessor.Renew): a keepalive needs no token,
  // and each one cost a log entry. A follower still proposes: it may not
  // have applied yet a grant that the client saw on another member.
  if (is_leader()) {
    if (StatusOr<StoreRef> store = ReadStore(); store.ok()) {
      etcdserverpb::LeaseTimeToLiveRequest q;
      q.set_id(req.id());
      StatusOr<etcdserverpb::LeaseTimeToLiveResponse> ttl =
          (*store)->LeaseTimeToLive(q);
      if (ttl.ok() && ttl->ttl() == -1) {
        return Status(StatusCode::kNotFound,
                      "etcdserver: requested lease not found");
      }
    }
  }
  return proposer_->ProposeAndWaitAs<etcdserverpb::LeaseKeepAliveResponse>(
      req, &R::mutable_lease_keepalive);
}

template <typename Resp>
StatusOr<Resp> StoreServer::OnLeader(
    const std::function<StatusOr<Resp>()>& local,
    const std::function<StatusOr<Resp>(uint64_t, Duration)>& remote) {
  const TimePoint deadline = clock_->Now() + config_.request_timeout;
  for (;;) {
    const uint64_t leader = leader_id();
    if (leader == member_id()) return local();
    const Duration left = deadline - clock_->Now();
    if (left <= Duration(0)) {
      return Status(StatusCode::kDeadlineExceeded,
                    "etcdserver: request timed out");
    }
    if (leader != 0) {
      StatusOr<Resp> asked = remote(leader, left);
      if (asked.ok() || !(asked.status().Is(StatusCode::kUnavailable) ||
                          asked.status().Is(StatusCode::kNotLeader))) {
        return asked;
      }
    }
    // Until another leader is known (or a while, for a leader that could
    // not be reached): no busy loop.
    WaitForLeaderMatching(
        [leader](uint64_t id) { return id != 0 && id != leader; },
        std::min<Duration>(milliseconds(100), deadline - clock_->Now()));
  }
}

// Only the leader's lessor counts a lease down (a follower's is demoted:
// every lease lasts "forever" there, and would answer the granted TTL), so
// a follower asks the leader over the peer port, as etcd's follower asks
// its leader over /leases/internal.
StatusOr<etcdserverpb::LeaseTimeToLiveResponse> StoreServer::LeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req) {
  RETURN_IF_ERROR(CheckRunning());
  return OnLeader<etcdserverpb::LeaseTimeToLiveResponse>(
      [&] { return LocalLeaseTimeToLive(req, true); },
      [&](uint64_t leader, Duration left) {
        return transport_->PeerLeaseTimeToLive(leader, req, left);
      });
}

// Only the leader knows how far the learner's log has caught up (etcd's
// isLearnerReady), so a follower forwards the promotion to it, as etcd's
// follower forwards to /members/promote; the leader's answer (or its
// error: not ready, not a learner, not found) is this one.
StatusOr<etcdserverpb::MemberPromoteResponse> StoreServer::MemberPromote(
    const etcdserverpb::MemberPromoteRequest& req) {
  RETURN_IF_ERROR(CheckRunning());
  StatusOr<etcdserverpb::MemberPromoteResponse> resp =
      OnLeader<etcdserverpb::MemberPromoteResponse>(
          [&] { return admin_->MemberPromote(req); },
          [&](uint64_t leader, Duration left) {
            return transport_->PeerMemberPromote(leader, req, left);
          });
  if (resp.ok()) FillHeader(resp->mutable_header());
  return resp;
}

StatusOr<etcdserverpb::MemberPromoteResponse> StoreServer::LeaderMemberPromote(
    const etcdserverpb::MemberPromoteRequest& req) {
  RETURN_IF_ERROR(CheckRunning());
  if (!is_leader()) return NotLeaderError(leader_id());
  return admin_->MemberPromote(req);
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse>
StoreServer::LeaderLeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req) {
  RETURN_IF_ERROR(CheckRunning());
  if (!is_leader()) return NotLeaderError(leader_id());
  // Straight from the lessor, as etcd's leader answers /leases/internal:
  // a peer worker does not wait for a read index round.
  return LocalLeaseTimeToLive(req, false);
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse>
StoreServer::LocalLeaseTimeToLive(
    const etcdserverpb::LeaseTimeToLiveRequest& req, bool linearizable) {
  if (linearizable) RETURN_IF_ERROR(WaitLinearizable());
  ASSIGN_OR_RETURN(StoreRef store, ReadStore());
  ASSIGN_OR_RETURN(auto resp, store->LeaseTimeToLive(req));
  FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(store->CurrentRevision());
  return resp;
}

StatusOr<etcdserverpb::LeaseLeasesResponse> StoreServer::LeaseLeases(
    const etcdserverpb::LeaseLeasesRequest&) {
  RETURN_IF_ERROR(WaitLinearizable());
  ASSIGN_OR_RETURN(StoreRef store, ReadStore());
  ASSIGN_OR_RETURN(auto resp, store->LeaseLeases());
  FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(store->CurrentRevision());
  return resp;
}

StatusOr<etcdserverpb::StatusResponse> StoreServer::MemberStatus() {
  StoreRef store = mvcc();
  if (!store) return NoStore();
  etcdserverpb::StatusResponse resp;
  FillHeader(resp.mutable_header());
  resp.mutable_header()->set_revision(store->CurrentRevision());
  resp.set_version(kEtcdServerVersion);
  resp.set_dbsize(store->DbSize());
  resp.set_dbsizeinuse(store->DbSizeInUse());
  resp.set_leader(leader_id());
  RaftNode* node = self_->node();
  resp.set_raftindex(node ? node->commit_index() : 0);
  resp.set_raftterm(term());
  resp.set_raftappliedindex(applied_index());
  for (const auto& a : Alarms()) {
    resp.add_errors(std::string("memberID:") + std::to_string(a.memberid()) +
                    " alarm:" + etcdserverpb::AlarmType_Name(a.alarm()) + " ");
  }
  if (Status s = apply_error(); !s.ok()) {
    resp.add_errors("apply stopped: " + s.ToString());
  }
  auto me = membership_->Find(member_id());
  resp.set_islearner(me && me->is_learner());
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
        if (!r && stream_->Stopped()) {
          // The store closed (Next returns at once from now on): the
          // caller watches again.
          etcdserverpb::WatchResponse end;
          server_->FillHeader(end.mutable_header());
          end.set_watch_id(-1);
          end.set_canceled(true);
          end.set_cancel_reason(std::string(kWatchStoreClosed));
          cb_(end);
          return;
        }
        if (!r) continue;
        server_->FillHeader(r->mutable_header());
        bool last = r->canceled();
        cb_(*r);
        if (last) return;
      }
    });
  }
  void RequestProgress() override { stream_->RequestProgress(); }
  // The MVCC stream answers once every watcher of it is synced.
  bool ProgressOrdered() const override { return true; }

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
  ASSIGN_OR_RETURN(StoreRef store, ReadStore());
  auto stream = store->NewWatchStream();
  etcdserverpb::WatchResponse created;
  FillHeader(created.mutable_header());
  // One reading for the header and "from now" (WatchRequests says why).
  const int64_t now = store->CurrentRevision();
  created.mutable_header()->set_revision(now);
  store = StoreRef();  // the stream does not pin the store
  created.set_created(true);
  etcdserverpb::WatchCreateRequest from = req;
  if (from.start_revision() == 0) from.set_start_revision(now + 1);
  StatusOr<int64_t> id = stream->Watch(from);
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
// Snapshots and the rest of PeerHandler

StatusOr<raftpb::SnapshotMetadata> StoreServer::SnapshotTo(
    const std::string& dir) {
  RETURN_IF_ERROR(CheckRunning());
  return applier_->SnapshotTo(dir, /*for_peer=*/true);
}

StatusOr<raftpb::SnapshotMetadata> StoreServer::SaveSnapshot(
    const std::string& dir) {
  RETURN_IF_ERROR(CheckRunning());
  return applier_->SnapshotTo(dir, /*for_peer=*/false);
}

Status StoreServer::ReceiveSnapshot(const std::string& received_dir,
                                    raftpb::Message msg) {
  return applier_->ReceiveSnapshot(received_dir, std::move(msg));
}

std::string StoreServer::SnapshotStagingDir() const {
  return member_dir_ + "/snap";
}

void StoreServer::Process(std::vector<raftpb::Message> msgs) {
  RaftNode* node = self_->node();
  if (node == nullptr) return;
  const uint64_t self = self_->id();
  size_t kept = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const raftpb::Message& m = msgs[i];
    const char* refused = nullptr;
    Status why;
    if (m.from() == self || !membership_->Find(m.from())) {
      refused = "not_member";
    } else if (why = CheckPeerMessage(m, self, config_.max_request_bytes);
               !why.ok()) {
      refused = "invalid";
    }
    if (refused != nullptr) {
      refused_messages_->With({refused})->Inc();
      // At most one line a second: the sender may be hostile.
      if (refusal_log_.Allow(clock_->Now())) {
        LOG(WARNING) << "refused a raft " << raftpb::MessageType_Name(m.type())
                     << " from " << IdToHex(m.from()) << ": "
                     << (why.ok() ? "not a member of this cluster"
                                  : why.message())
                     << " (kplane_server_peer_messages_refused_total counts "
                        "them)";
      }
      continue;
    }
    if (kept != i) msgs[kept] = std::move(msgs[i]);
    ++kept;
  }
  msgs.resize(kept);
  node->StepMany(std::move(msgs));
}

void StoreServer::ReportUnreachable(uint64_t id) {
  if (RaftNode* node = self_->node()) node->ReportUnreachable(id);
}

void StoreServer::ReportSnapshot(uint64_t id, raft::SnapshotStatus status) {
  if (RaftNode* node = self_->node()) node->ReportSnapshot(id, status);
}

}  // namespace kplane::storage
