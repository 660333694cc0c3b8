#include "tests/sim/cluster.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "base/logging.h"
#include "storage/raft/raw_node.h"
#include "tests/sim/fault_network.h"
#include "tests/sim/invariants.h"
#include "tests/sim/kv_model.h"
#include "tests/sim/linearizability.h"

namespace kplane::sim {

std::string ReplayCommand(const SimOptions& o) {
  std::ostringstream os;
  os << "build/tests/sim/raft_sim --seed=" << o.seed << " --nodes=" << o.nodes
     << " --steps=" << o.steps;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const SimStats& s) {
  return os << "ops_ok=" << s.ops_ok << " ops_unknown=" << s.ops_unknown
            << " reads_via_index=" << s.reads_via_index
            << " leaders=" << s.leaders << " max_commit=" << s.max_commit
            << " crashes=" << s.crashes
            << " conf_changes=" << s.conf_changes_applied
            << " snapshots_sent=" << s.snapshots_sent
            << " transfers=" << s.transfers << " partitions=" << s.partitions
            << " messages=" << s.messages;
}

namespace {

using raft::Prng;
using raft::RawNode;
using raft::Ready;
using raft::StateType;

struct PendingRead {
  size_t op;
  std::string key;
  uint64_t client;
};

struct Node {
  uint64_t id = 0;
  bool up = false;
  bool retired = false;
  uint64_t incarnation = 0;
  uint64_t created_at = 0;
  std::unique_ptr<raft::MemoryStorage> storage;
  // A hard state written without fsync: lost if the node crashes first.
  raftpb::HardState volatile_hs;
  bool hs_dirty = false;
  std::unique_ptr<RawNode> raw;
  KvStateMachine kv;
  uint64_t applied = 0;
  raftpb::ConfState conf;
  uint64_t last_snapshot = 0;
  uint64_t commit = 0;
  bool crash_mid_ready = false;
  // Snapshot after this Ready: a config change was applied, and a node that
  // was just added can only start from a snapshot that includes it.
  bool snapshot_soon = false;
  std::map<std::pair<uint64_t, uint64_t>, size_t> pending_writes;
  std::map<std::string, PendingRead> pending_reads;
  std::vector<std::pair<uint64_t, PendingRead>> waiting_reads;
};

struct Client {
  uint64_t id = 0;
  uint64_t seq = 0;
  bool busy = false;
  size_t op = 0;
  uint64_t deadline = 0;
  std::map<std::string, int64_t> seen;
};

bool InConf(const raftpb::ConfState& cs, uint64_t id) {
  for (uint64_t v : cs.voters())
    if (v == id) return true;
  for (uint64_t v : cs.learners())
    if (v == id) return true;
  for (uint64_t v : cs.voters_outgoing())
    if (v == id) return true;
  return false;
}

class Sim {
 public:
  explicit Sim(const SimOptions& o)
      : o_(o),
        prng_(o.seed * 0x2545f4914f6cdd1dULL + 1),
        net_(o.seed ^ 0x5bd1e995ULL,
             FaultConfig{o.drop, o.duplicate, 1, o.max_delay}) {}

  SimResult Run();

 private:
  template <typename... Args>
  void Log(const Args&... args) {
    if (!o_.verbose) return;
    std::ostringstream os;
    os << "[" << now_ << "] ";
    (os << ... << args);
    std::cout << os.str() << "\n";
  }

  void Bootstrap();
  bool Step(bool faults, bool clients);
  void StartNode(Node& n);
  void Crash(Node& n, const char* why);
  void Retire(Node& n);
  void Deliver(raftpb::Message m);
  void SendAll(Node& n, std::vector<raftpb::Message>& msgs);
  void ProcessReadies(Node& n);
  void ApplyEntry(Node& n, const raftpb::Entry& e);
  void OnConfApplied(Node& n);
  void ServeReads(Node& n);
  void MaybeSnapshot(Node& n);
  void Faults();
  void Partition();
  void ConfChange();
  void ClientOps();
  void IssueOp(Client& c, Node& n);
  void CompleteOp(uint64_t client, size_t op, const std::string& key,
                  int64_t value, bool ok, OpKind kind, int64_t written);
  Node* Leader();
  std::vector<Node*> UpNodes();

  SimOptions o_;
  Prng prng_;
  FaultNetwork net_;
  InvariantChecker checker_;
  HistoryRecorder history_;
  SimStats stats_;
  std::map<uint64_t, Node> nodes_;
  std::vector<Client> clients_;
  std::set<uint64_t> ever_member_;
  std::map<uint64_t, uint64_t> retire_at_;
  uint64_t now_ = 0;
  uint64_t next_id_ = 0;
  int64_t next_value_ = 0;
  uint64_t next_ctx_ = 0;
  // The liveness probe of the quiesce phase.
  bool probe_done_ = false;
};

void Sim::Bootstrap() {
  raftpb::Snapshot snap;
  snap.mutable_metadata()->set_index(1);
  snap.mutable_metadata()->set_term(1);
  for (int i = 1; i <= o_.nodes; ++i) {
    snap.mutable_metadata()->mutable_conf_state()->add_voters(i);
  }
  snap.set_data(KvStateMachine().Serialize());
  for (int i = 1; i <= o_.nodes; ++i) {
    Node& n = nodes_[i];
    n.id = i;
    n.storage = std::make_unique<raft::MemoryStorage>();
    CHECK_OK(n.storage->ApplySnapshot(snap));
    raftpb::HardState hs;
    hs.set_term(1);
    hs.set_commit(1);
    n.storage->SetHardState(hs);
    ever_member_.insert(i);
    StartNode(n);
  }
  next_id_ = o_.nodes + 1;
  for (int i = 1; i <= o_.clients; ++i) {
    Client c;
    c.id = i;
    clients_.push_back(c);
  }
}

void Sim::StartNode(Node& n) {
  ++n.incarnation;
  raft::Config c;
  c.id = n.id;
  c.election_tick = o_.election_tick;
  c.heartbeat_tick = o_.heartbeat_tick;
  // Some seeds run without pre-vote and/or check-quorum, so both settings
  // of each are covered.
  c.pre_vote = o_.pre_vote && o_.seed % 3 != 0;
  c.check_quorum = o_.check_quorum && o_.seed % 4 != 0;
  c.step_down_on_removal = true;
  // Small limits so batching, pipelining and flow control are exercised.
  c.max_size_per_msg = 256;
  c.max_committed_size_per_ready = 512;
  c.max_inflight_msgs = 4;
  c.max_inflight_bytes = 2048;
  c.max_uncommitted_entries_size = 8192;
  c.random_seed = o_.seed * 1000003 + n.incarnation;
  raftpb::Snapshot snap = *n.storage->Snapshot();
  CHECK(n.kv.Restore(snap.data())) << "bad snapshot data";
  n.applied = snap.metadata().index();
  n.conf = snap.metadata().conf_state();
  n.last_snapshot = n.applied;
  c.applied = n.applied;
  n.commit = std::max(n.storage->hard_state().commit(), n.applied);
  auto raw = RawNode::Create(c, n.storage.get());
  CHECK(raw.ok()) << raw.status().ToString();
  n.raw = std::move(raw).value();
  n.up = true;
  n.hs_dirty = false;
  n.crash_mid_ready = false;
  Log("node ", n.id, " started (incarnation ", n.incarnation, ", applied ",
      n.applied, ")");
}

void Sim::Crash(Node& n, const char* why) {
  Log("node ", n.id, " crashed (", why, ")");
  n.up = false;
  n.raw.reset();
  n.hs_dirty = false;  // the unsynced hard state is lost
  n.kv = KvStateMachine();
  n.pending_writes.clear();
  n.pending_reads.clear();
  n.waiting_reads.clear();
  n.crash_mid_ready = false;
  ++stats_.crashes;
}

void Sim::Retire(Node& n) {
  Log("node ", n.id, " retired");
  if (n.up) Crash(n, "retired");
  n.retired = true;
}

std::vector<Node*> Sim::UpNodes() {
  std::vector<Node*> out;
  for (auto& [id, n] : nodes_) {
    if (n.up) out.push_back(&n);
  }
  return out;
}

Node* Sim::Leader() {
  Node* best = nullptr;
  for (auto& [id, n] : nodes_) {
    if (!n.up || n.raw->raft().state != StateType::kLeader) continue;
    if (!best || n.raw->raft().term > best->raw->raft().term) best = &n;
  }
  return best;
}

void Sim::SendAll(Node& n, std::vector<raftpb::Message>& msgs) {
  for (auto& m : msgs) {
    uint64_t to = m.to();
    bool snap = m.type() == raftpb::MsgSnap;
    if (snap) ++stats_.snapshots_sent;
    auto r = net_.Send(std::move(m), now_);
    if (r == FaultNetwork::SendResult::kQueued) continue;
    // The transport notices what it could not deliver, as etcd's does.
    if (snap) n.raw->ReportSnapshot(to, raft::SnapshotStatus::kFailure);
    if (r == FaultNetwork::SendResult::kBlocked && prng_.Chance(0.5)) {
      n.raw->ReportUnreachable(to);
    }
  }
  msgs.clear();
}

void Sim::Deliver(raftpb::Message m) {
  auto it = nodes_.find(m.to());
  bool snap = m.type() == raftpb::MsgSnap;
  uint64_t from = m.from(), to = m.to();
  if (it == nodes_.end() || !it->second.up) {
    if (snap) {
      auto f = nodes_.find(from);
      if (f != nodes_.end() && f->second.up) {
        f->second.raw->ReportSnapshot(to, raft::SnapshotStatus::kFailure);
      }
    }
    return;
  }
  ++stats_.messages;
  (void)it->second.raw->Step(std::move(m));
  if (snap) {
    auto f = nodes_.find(from);
    if (f != nodes_.end() && f->second.up) {
      f->second.raw->ReportSnapshot(to, raft::SnapshotStatus::kFinish);
    }
  }
}

void Sim::ProcessReadies(Node& n) {
  while (n.up && n.raw->HasReady()) {
    Ready rd = n.raw->GetReady();
    bool leader = n.raw->raft().state == StateType::kLeader;
    // A leader may send before its own write is durable.
    if (leader) SendAll(n, rd.messages);
    if (n.crash_mid_ready && leader && !rd.entries.empty()) {
      Crash(n, "leader sent, before persisting");
      return;
    }
    // 1. Persist.
    if (!raft::IsEmptySnapshot(rd.snapshot)) {
      CHECK_OK(n.storage->ApplySnapshot(rd.snapshot));
    }
    if (!rd.entries.empty()) {
      CHECK_OK(n.storage->Append(rd.entries.data(),
                                 rd.entries.data() + rd.entries.size()));
      checker_.OnAppend(n.id, rd.entries, *n.storage);
    }
    if (!raft::IsEmptyHardState(rd.hard_state)) {
      n.volatile_hs = rd.hard_state;
      n.hs_dirty = true;
    }
    if (rd.must_sync && n.hs_dirty) {
      n.storage->SetHardState(n.volatile_hs);
      n.hs_dirty = false;
    }
    if (!raft::IsEmptyHardState(rd.hard_state)) {
      checker_.OnCommit(n.id, n.commit, rd.hard_state.commit(), *n.storage);
      n.commit = std::max(n.commit, rd.hard_state.commit());
      stats_.max_commit = std::max(stats_.max_commit, n.commit);
    }
    if (rd.soft_state && rd.soft_state->raft_state == StateType::kLeader) {
      ++stats_.leaders;
      Log("node ", n.id, " became leader at term ", n.raw->raft().term);
      checker_.OnLeader(n.id, n.raw->raft().term, *n.storage);
    }
    // 2. Followers send only after persisting.
    if (!leader) SendAll(n, rd.messages);
    // 3. Apply.
    if (!raft::IsEmptySnapshot(rd.snapshot)) {
      CHECK(n.kv.Restore(rd.snapshot.data()));
      n.applied = rd.snapshot.metadata().index();
      n.conf = rd.snapshot.metadata().conf_state();
      n.last_snapshot = n.applied;
      checker_.OnSnapshot(n.id, n.applied, n.kv.Digest());
      Log("node ", n.id, " installed snapshot at ", n.applied);
    }
    for (const auto& e : rd.committed_entries) ApplyEntry(n, e);
    for (auto& rs : rd.read_states) {
      auto it = n.pending_reads.find(rs.request_ctx);
      if (it == n.pending_reads.end()) continue;
      n.waiting_reads.emplace_back(rs.index, it->second);
      n.pending_reads.erase(it);
    }
    // 4. Advance.
    n.raw->Advance();
    ServeReads(n);
    MaybeSnapshot(n);
  }
}

void Sim::ApplyEntry(Node& n, const raftpb::Entry& e) {
  CHECK_EQ(e.index(), n.applied + 1)
      << "node " << n.id << " applies out of order";
  switch (e.type()) {
    case raftpb::EntryNormal: {
      if (e.data().empty()) break;
      KvCommand cmd;
      CHECK(DecodeCommand(e.data(), &cmd)) << "bad command " << e.data();
      KvResult r;
      bool fresh = n.kv.Apply(cmd, &r);
      auto it = n.pending_writes.find({cmd.client, cmd.seq});
      if (it != n.pending_writes.end()) {
        if (fresh) {
          int64_t written = cmd.kind == OpKind::kPut   ? cmd.a
                            : cmd.kind == OpKind::kCas ? cmd.b
                                                       : 0;
          CompleteOp(cmd.client, it->second, cmd.key, r.value, r.ok, cmd.kind,
                     written);
        }
        n.pending_writes.erase(it);
      }
      break;
    }
    case raftpb::EntryConfChange: {
      raftpb::ConfChange cc;
      CHECK(cc.ParseFromString(e.data()));
      n.conf = n.raw->ApplyConfChange(cc);
      OnConfApplied(n);
      n.snapshot_soon = true;
      break;
    }
    case raftpb::EntryConfChangeV2: {
      raftpb::ConfChangeV2 cc;
      CHECK(cc.ParseFromString(e.data()));
      n.conf = n.raw->ApplyConfChange(cc);
      OnConfApplied(n);
      n.snapshot_soon = true;
      break;
    }
    default:
      break;
  }
  n.applied = e.index();
  checker_.OnApply(n.id, e, n.kv.Digest());
}

void Sim::OnConfApplied(Node& n) {
  if (n.raw->raft().state != StateType::kLeader) return;
  ++stats_.conf_changes_applied;
  Log("leader ", n.id, " applied config ", raft::DescribeConfState(n.conf));
  for (uint64_t id : n.conf.voters()) ever_member_.insert(id);
  for (uint64_t id : n.conf.learners()) ever_member_.insert(id);
  for (auto& [id, node] : nodes_) {
    if (node.retired || !ever_member_.count(id)) continue;
    if (!InConf(n.conf, id) && !retire_at_.count(id)) {
      retire_at_[id] = now_ + 50;
    }
  }
}

void Sim::ServeReads(Node& n) {
  auto& w = n.waiting_reads;
  for (size_t i = 0; i < w.size();) {
    if (w[i].first <= n.applied) {
      const PendingRead& r = w[i].second;
      ++stats_.reads_via_index;
      CompleteOp(r.client, r.op, r.key, n.kv.Get(r.key), true, OpKind::kGet, 0);
      w.erase(w.begin() + i);
    } else {
      ++i;
    }
  }
}

void Sim::MaybeSnapshot(Node& n) {
  if (n.applied <= n.last_snapshot) return;
  if (!n.snapshot_soon && n.applied < n.last_snapshot + o_.snapshot_every) {
    return;
  }
  n.snapshot_soon = false;
  // Writing a snapshot syncs the log, so the hard state becomes durable too
  // (and with it a commit index >= the snapshot index).
  if (n.hs_dirty) {
    n.storage->SetHardState(n.volatile_hs);
    n.hs_dirty = false;
  }
  auto snap = n.storage->CreateSnapshot(n.applied, &n.conf, n.kv.Serialize());
  CHECK(snap.ok()) << snap.status().ToString();
  n.last_snapshot = n.applied;
  // Keep a few entries so slightly lagging followers need no snapshot.
  uint64_t keep = prng_.Uniform(10);
  if (n.applied > keep + 1) {
    auto s = n.storage->Compact(n.applied - keep);
    (void)s;  // kCompacted when already compacted further: fine
  }
}

void Sim::CompleteOp(uint64_t client, size_t op, const std::string& key,
                     int64_t value, bool ok, OpKind kind, int64_t written) {
  history_.Complete(op, value, ok);
  for (auto& c : clients_) {
    if (c.id != client || !c.busy || c.op != op) continue;
    c.busy = false;
    if (kind == OpKind::kPut || (kind == OpKind::kCas && ok)) {
      c.seen[key] = written;
    } else {
      c.seen[key] = value;
    }
  }
  if (client == 0) probe_done_ = true;
}

void Sim::IssueOp(Client& c, Node& n) {
  std::string key = "k" + std::to_string(prng_.Uniform(o_.keys));
  uint64_t roll = prng_.Uniform(100);
  OpKind kind = roll < 35   ? OpKind::kPut
                : roll < 75 ? OpKind::kGet
                            : OpKind::kCas;
  if (c.id == 0) kind = OpKind::kPut;
  if (kind == OpKind::kGet && c.id != 0 && prng_.Chance(o_.p_read_index)) {
    size_t op = history_.Invoke(c.id, kind, key, 0, 0);
    std::string ctx = "ri-" + std::to_string(++next_ctx_);
    n.raw->ReadIndex(ctx);
    n.pending_reads[ctx] = PendingRead{op, key, c.id};
    c.busy = true;
    c.op = op;
    c.deadline = now_ + o_.client_timeout;
    return;
  }
  KvCommand cmd;
  cmd.client = c.id;
  cmd.seq = ++c.seq;
  cmd.kind = kind;
  cmd.key = key;
  if (kind == OpKind::kPut) cmd.a = ++next_value_;
  if (kind == OpKind::kCas) {
    auto it = c.seen.find(key);
    cmd.a = (it != c.seen.end() && prng_.Chance(0.8)) ? it->second : 0;
    cmd.b = ++next_value_;
  }
  size_t op = history_.Invoke(c.id, kind, key, cmd.a, cmd.b);
  Status s = n.raw->Propose(EncodeCommand(cmd));
  if (!s.ok()) {
    // Never reached the log: certainly no effect.
    history_.Discard(op);
    return;
  }
  n.pending_writes[{cmd.client, cmd.seq}] = op;
  c.busy = true;
  c.op = op;
  c.deadline = now_ + o_.client_timeout;
}

void Sim::ClientOps() {
  std::vector<Node*> up = UpNodes();
  if (up.empty()) return;
  for (auto& c : clients_) {
    if (c.busy || !prng_.Chance(o_.p_client_op)) continue;
    Node* n = up[prng_.Uniform(up.size())];
    IssueOp(c, *n);
  }
}

void Sim::Partition() {
  std::vector<uint64_t> ids;
  for (auto& [id, n] : nodes_) {
    if (!n.retired) ids.push_back(id);
  }
  std::set<uint64_t> all(ids.begin(), ids.end());
  ++stats_.partitions;
  switch (prng_.Uniform(3)) {
    case 0: {
      // Random split into two groups.
      for (size_t i = ids.size(); i > 1; --i) {
        std::swap(ids[i - 1], ids[prng_.Uniform(i)]);
      }
      size_t cut = 1 + prng_.Uniform(ids.size() - 1);
      std::set<uint64_t> a(ids.begin(), ids.begin() + cut);
      std::set<uint64_t> b(ids.begin() + cut, ids.end());
      net_.Partition({a, b});
      Log("partition: ", a.size(), " | ", b.size(), " nodes");
      break;
    }
    case 1: {
      Node* l = Leader();
      if (!l) return;
      net_.Isolate(l->id, all);
      Log("partition: isolated leader ", l->id);
      break;
    }
    default: {
      // One-way link failures.
      int links = 1 + static_cast<int>(prng_.Uniform(3));
      for (int i = 0; i < links; ++i) {
        uint64_t from = ids[prng_.Uniform(ids.size())];
        uint64_t to = ids[prng_.Uniform(ids.size())];
        if (from != to) net_.Block(from, to);
        Log("partition: blocked ", from, " -> ", to);
      }
    }
  }
}

void Sim::ConfChange() {
  Node* l = Leader();
  if (!l) return;
  raftpb::ConfState cs = l->raw->raft().prs.ConfState();
  std::vector<uint64_t> voters(cs.voters().begin(), cs.voters().end());
  std::vector<uint64_t> learners(cs.learners().begin(), cs.learners().end());
  bool joint = cs.voters_outgoing_size() > 0;
  size_t min_voters = std::max(2, o_.nodes - 1);
  size_t max_voters = o_.nodes + 1;
  // Nodes whose addition never committed stay up (it may still commit) but
  // do not count, so they cannot block further additions.
  size_t live = 0;
  for (auto& [id, n] : nodes_) {
    live += (!n.retired && ever_member_.count(id)) ? 1 : 0;
  }
  Status s;
  if (joint) {
    if (cs.auto_leave()) return;
    raftpb::ConfChangeV2 leave;
    s = l->raw->ProposeConfChange(leave);
    Log("leader ", l->id, " proposes leaving the joint config: ", s);
    return;
  }
  auto single = [](raftpb::ConfChangeType t, uint64_t id) {
    raftpb::ConfChangeSingle c;
    c.set_type(t);
    c.set_node_id(id);
    return c;
  };
  switch (prng_.Uniform(4)) {
    case 0: {
      if (live >= static_cast<size_t>(o_.nodes) + 2) return;
      Node& j = nodes_[next_id_];
      j.id = next_id_++;
      j.created_at = now_;
      j.storage = std::make_unique<raft::MemoryStorage>();
      StartNode(j);
      raftpb::ConfChange cc;
      cc.set_type(raftpb::ConfChangeAddLearnerNode);
      cc.set_node_id(j.id);
      s = l->raw->ProposeConfChange(cc);
      Log("leader ", l->id, " proposes add learner ", j.id, ": ", s);
      break;
    }
    case 1: {
      if (learners.empty() || voters.size() >= max_voters) return;
      uint64_t id = learners[prng_.Uniform(learners.size())];
      raftpb::ConfChangeV2 cc;
      *cc.add_changes() = single(raftpb::ConfChangeAddNode, id);
      s = l->raw->ProposeConfChange(cc);
      Log("leader ", l->id, " proposes promote ", id, ": ", s);
      break;
    }
    case 2: {
      if (voters.size() <= min_voters) return;
      uint64_t id = voters[prng_.Uniform(voters.size())];
      raftpb::ConfChange cc;
      cc.set_type(raftpb::ConfChangeRemoveNode);
      cc.set_node_id(id);
      s = l->raw->ProposeConfChange(cc);
      Log("leader ", l->id, " proposes remove ", id, ": ", s);
      break;
    }
    default: {
      // Replace a voter by a learner in one joint-consensus step.
      if (learners.empty() || voters.size() < 2) return;
      uint64_t in = learners[prng_.Uniform(learners.size())];
      uint64_t out = voters[prng_.Uniform(voters.size())];
      raftpb::ConfChangeV2 cc;
      *cc.add_changes() = single(raftpb::ConfChangeAddNode, in);
      *cc.add_changes() = single(raftpb::ConfChangeRemoveNode, out);
      uint64_t t = prng_.Uniform(3);
      cc.set_transition(t == 0   ? raftpb::ConfChangeTransitionAuto
                        : t == 1 ? raftpb::ConfChangeTransitionJointImplicit
                                 : raftpb::ConfChangeTransitionJointExplicit);
      s = l->raw->ProposeConfChange(cc);
      Log("leader ", l->id, " proposes joint ", raft::DescribeConfChange(cc),
          ": ", s);
    }
  }
}

void Sim::Faults() {
  if (prng_.Chance(o_.p_partition)) Partition();
  if (!net_.Healed() && prng_.Chance(o_.p_heal)) {
    net_.Heal();
    Log("network healed");
  }
  if (prng_.Chance(o_.p_crash)) {
    std::vector<Node*> up = UpNodes();
    size_t down = 0;
    for (auto& [id, n] : nodes_) down += (!n.up && !n.retired) ? 1 : 0;
    if (!up.empty() && down < static_cast<size_t>((o_.nodes - 1) / 2)) {
      Node* n = up[prng_.Uniform(up.size())];
      if (n->raw->raft().state == StateType::kLeader &&
          prng_.Chance(o_.p_mid_ready_crash)) {
        n->crash_mid_ready = true;
        Log("node ", n->id, " will crash in its next Ready");
      } else {
        Crash(*n, "fault");
      }
    }
  }
  if (prng_.Chance(o_.p_restart)) {
    for (auto& [id, n] : nodes_) {
      if (!n.up && !n.retired) {
        StartNode(n);
        break;
      }
    }
  }
  if (prng_.Chance(o_.p_conf_change)) ConfChange();
  if (prng_.Chance(o_.p_transfer)) {
    if (Node* l = Leader()) {
      std::vector<uint64_t> voters = l->raw->raft().prs.VoterNodes();
      uint64_t to = voters[prng_.Uniform(voters.size())];
      if (to != l->id) {
        ++stats_.transfers;
        Log("leader ", l->id, " transfers leadership to ", to);
        l->raw->TransferLeader(to);
      }
    }
  }
}

bool Sim::Step(bool faults, bool clients) {
  ++now_;
  if (faults) Faults();
  // A removed node is shut down (as an operator would) only once every
  // other member has applied its removal: until then, a member still in a
  // joint configuration may need its vote.
  for (auto it = retire_at_.begin(); it != retire_at_.end();) {
    bool everyone_applied = true;
    for (auto& [id, n] : nodes_) {
      if (id == it->first || n.retired || !ever_member_.count(id)) continue;
      if (!n.up || InConf(n.conf, it->first)) {
        // A member that still lists it (or is down and may) holds it back,
        // unless that member was itself removed (it will be retired too).
        everyone_applied = everyone_applied && retire_at_.count(id) > 0;
      }
    }
    if (it->second <= now_ && everyone_applied) {
      Retire(nodes_[it->first]);
      it = retire_at_.erase(it);
    } else {
      ++it;
    }
  }
  if (clients) ClientOps();
  for (auto& [id, n] : nodes_) {
    if (n.up) n.raw->Tick();
  }
  for (auto& m : net_.TakeDue(now_)) Deliver(std::move(m));
  for (auto& [id, n] : nodes_) ProcessReadies(n);
  // Election safety for every current leader (not only new ones).
  for (auto& [id, n] : nodes_) {
    if (n.up && n.raw->raft().state == StateType::kLeader) {
      checker_.OnLeader(id, n.raw->raft().term, *n.storage);
    }
  }
  for (auto& c : clients_) {
    if (c.busy && now_ >= c.deadline) {
      history_.MarkUnknown(c.op);
      c.busy = false;
    }
  }
  return checker_.ok();
}

SimResult Sim::Run() {
  Bootstrap();
  SimResult result;
  for (int i = 0; i < o_.steps && checker_.ok(); ++i) Step(true, true);
  if (checker_.ok()) {
    // Quiesce: no more faults; heal, restart, and require progress.
    net_.Heal();
    net_.set_config(FaultConfig{0, 0, 1, o_.max_delay});
    for (auto& [id, n] : nodes_) {
      n.crash_mid_ready = false;
      if (!n.up && !n.retired) StartNode(n);
    }
    Client probe;
    probe.id = 0;
    clients_.push_back(probe);
    for (int i = 0; i < o_.quiesce_steps && checker_.ok(); ++i) {
      Client& p = clients_.back();
      if (!probe_done_ && !p.busy) {
        if (Node* l = Leader()) IssueOp(p, *l);
      }
      Step(false, false);
    }
    if (checker_.ok() && !probe_done_) {
      result.ok = false;
      result.failure =
          "liveness: no write committed in the quiesce phase (faults healed, "
          "all nodes up)";
    }
  }
  for (auto& [id, n] : nodes_) {
    if (!n.up) continue;
    const raft::Raft& r = n.raw->raft();
    Log("final: node ", id, " ", raft::StateTypeName(r.state), " term ", r.term,
        " lead ", r.lead, " commit ", r.raft_log.committed(), " applied ",
        r.raft_log.applied(), " last ", r.raft_log.LastIndex(), "/t",
        r.raft_log.LastTerm(), " vote ", r.vote, " config ",
        r.prs.config.DebugString(), " promotable ", r.Promotable());
  }
  for (auto& c : clients_) {
    if (c.busy) history_.MarkUnknown(c.op);
  }
  stats_.ops_ok = history_.completed();
  stats_.ops_unknown = history_.unknown();
  result.stats = stats_;
  if (!checker_.ok()) {
    result.ok = false;
    result.failure = "invariant violated at step " + std::to_string(now_) +
                     ": " + checker_.failure();
    return result;
  }
  LinearizabilityResult lin = CheckLinearizable(history_.Ops());
  if (!lin.ok) {
    result.ok = false;
    result.failure =
        std::string(lin.inconclusive ? "linearizability check inconclusive"
                                     : "history not linearizable") +
        " for key " + lin.key + ":\n" + lin.detail;
  }
  return result;
}

}  // namespace

SimResult RunSimulation(const SimOptions& options) {
  Sim sim(options);
  return sim.Run();
}

}  // namespace kplane::sim
