#include "storage/raft/interaction_env.h"

#include "base/logging.h"
#include "base/strings.h"

namespace kplane::raft {

namespace {

std::vector<uint64_t> ParseIds(const std::vector<std::string>& vals) {
  std::vector<uint64_t> out;
  for (const auto& v : vals) {
    auto n = ParseUint64(v);
    if (n) out.push_back(*n);
  }
  return out;
}

uint64_t FirstId(const datadriven::TestData& d) {
  if (d.args.empty()) return 0;
  return ParseUint64(d.args[0].key).value_or(0);
}

}  // namespace

std::vector<uint64_t> InteractionEnv::Ids(const datadriven::TestData& d) const {
  std::vector<uint64_t> out;
  for (const auto& a : d.args) {
    if (!a.vals.empty()) continue;
    if (auto n = ParseUint64(a.key)) out.push_back(*n);
  }
  if (out.empty()) {
    for (const auto& [id, n] : nodes_) out.push_back(id);
  }
  return out;
}

bool InteractionEnv::Blocked(uint64_t from, uint64_t to) const {
  for (const auto& group : partition_) {
    if (group.count(from) != group.count(to)) return true;
  }
  return false;
}

std::string InteractionEnv::Handle(const datadriven::TestData& d) {
  std::ostringstream os;
  const std::string& c = d.cmd;
  uint64_t id = FirstId(d);
  auto node = [&](uint64_t nid) -> Node* {
    auto it = nodes_.find(nid);
    if (it == nodes_.end()) {
      os << "error: no node " << nid << "\n";
      return nullptr;
    }
    return &it->second;
  };
  if (c == "add-nodes") {
    AddNodes(d, os);
  } else if (c == "campaign") {
    if (Node* n = node(id)) {
      Status s = n->raw->Campaign();
      if (!s.ok()) os << "error: " << s << "\n";
      os << "ok\n";
    }
  } else if (c == "propose") {
    if (Node* n = node(id)) {
      std::string data = d.args.size() > 1 ? d.args[1].key : "";
      Status s = n->raw->Propose(data);
      os << (s.ok() ? std::string("ok") : "error: " + s.ToString()) << "\n";
    }
  } else if (c == "read-index") {
    if (Node* n = node(id)) {
      n->raw->ReadIndex(d.args.size() > 1 ? d.args[1].key : "");
      os << "ok\n";
    }
  } else if (c == "propose-conf-change") {
    ProposeConfChange(d, os);
  } else if (c == "tick-heartbeat" || c == "tick-election") {
    if (Node* n = node(id)) {
      int ticks = c == "tick-heartbeat" ? n->config.heartbeat_tick
                                        : 2 * n->config.election_tick - 1;
      for (int i = 0; i < ticks; ++i) n->raw->Tick();
      os << "ok\n";
    }
  } else if (c == "process-ready") {
    for (uint64_t nid : Ids(d)) ProcessReady(nid, os);
  } else if (c == "deliver-msgs") {
    for (uint64_t nid : Ids(d)) DeliverMsgs(nid, os);
    if (os.str().empty()) os << "no messages\n";
  } else if (c == "stabilize") {
    Stabilize(Ids(d), os);
  } else if (c == "partition") {
    partition_.clear();
    for (const auto& a : d.args) {
      std::string k = a.key;
      if (k.size() >= 2 && k.front() == '(') k = k.substr(1, k.size() - 2);
      std::set<uint64_t> g;
      for (auto& p : StrSplit(k, ',')) {
        if (auto n = ParseUint64(std::string(StripWhitespace(p)))) g.insert(*n);
      }
      partition_.push_back(g);
    }
    os << "ok\n";
  } else if (c == "heal") {
    partition_.clear();
    os << "ok\n";
  } else if (c == "transfer-leadership") {
    if (Node* n = node(d.ArgUint("from"))) {
      n->raw->TransferLeader(d.ArgUint("to"));
      os << "ok\n";
    }
  } else if (c == "report-unreachable") {
    if (Node* n = node(id)) {
      n->raw->ReportUnreachable(ParseUint64(d.args[1].key).value_or(0));
      os << "ok\n";
    }
  } else if (c == "compact") {
    if (Node* n = node(id)) {
      uint64_t idx = ParseUint64(d.args[1].key).value_or(0);
      Status s = n->storage->Compact(idx);
      os << (s.ok() ? std::string("ok") : "error: " + s.ToString()) << "\n";
    }
  } else if (c == "snapshot") {
    if (Node* n = node(id)) {
      uint64_t applied = n->raw->GetBasicStatus().applied;
      auto s = n->storage->CreateSnapshot(applied, &n->conf, "");
      if (s.ok()) {
        os << DescribeSnapshot(*s) << "\n";
      } else {
        os << "error: " << s.status() << "\n";
      }
    }
  } else if (c == "restart") {
    if (node(id)) {
      Restart(id);
      os << "ok\n";
    }
  } else if (c == "raft-log") {
    if (Node* n = node(id)) {
      uint64_t first = *n->storage->FirstIndex();
      uint64_t last = *n->storage->LastIndex();
      if (last < first) {
        os << "log is empty: first index=" << first << ", last index=" << last
           << "\n";
      } else {
        EntryVec ents = *n->storage->Entries(first, last + 1, kNoLimit);
        for (const auto& e : ents) os << DescribeEntry(e) << "\n";
      }
    }
  } else if (c == "raft-state") {
    RaftState(os);
  } else if (c == "status") {
    if (Node* n = node(id)) {
      FullStatus st = n->raw->GetStatus();
      os << "config: " << st.config << "\n";
      for (const auto& [pid, pr] : st.progress) {
        os << pid << ": " << pr << "\n";
      }
    }
  } else if (c == "applied") {
    if (Node* n = node(id)) {
      for (const auto& e : n->applied) os << DescribeEntry(e) << "\n";
      if (n->applied.empty()) os << "nothing applied\n";
    }
  } else {
    os << "error: unknown command " << c << "\n";
  }
  return os.str();
}

void InteractionEnv::AddNodes(const datadriven::TestData& d, std::ostream& os) {
  uint64_t count = FirstId(d);
  raftpb::ConfState cs;
  for (const auto& a : d.args) {
    if (a.key == "voters") {
      for (uint64_t v : ParseIds(a.vals)) cs.add_voters(v);
    } else if (a.key == "learners") {
      for (uint64_t v : ParseIds(a.vals)) cs.add_learners(v);
    }
  }
  uint64_t index = d.ArgUint("index", 0);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t id = nodes_.size() + 1;
    Node& n = nodes_[id];
    n.config.id = id;
    n.config.election_tick = 3;
    n.config.heartbeat_tick = 1;
    n.config.max_size_per_msg = d.ArgUint("max-size", kNoLimit);
    n.config.max_inflight_msgs =
        static_cast<int>(d.ArgUint("max-inflight", 256));
    n.config.pre_vote = d.ArgValue("prevote") == "true";
    n.config.check_quorum = d.ArgValue("checkquorum") == "true";
    n.config.step_down_on_removal = true;
    n.config.random_seed = 1;
    n.storage = std::make_unique<MemoryStorage>();
    if (index > 0) {
      // Start from a snapshot at `index` carrying the configuration.
      raftpb::Snapshot snap;
      snap.mutable_metadata()->set_index(index);
      snap.mutable_metadata()->set_term(1);
      *snap.mutable_metadata()->mutable_conf_state() = cs;
      CHECK_OK(n.storage->ApplySnapshot(snap));
      raftpb::HardState hs;
      hs.set_term(1);
      hs.set_commit(index);
      n.storage->SetHardState(hs);
      n.conf = cs;
      n.config.applied = index;
    }
    auto raw = RawNode::Create(n.config, n.storage.get());
    CHECK(raw.ok()) << raw.status();
    n.raw = std::move(raw).value();
    BasicStatus st = n.raw->GetBasicStatus();
    os << id << ": term=" << st.hard_state.term()
       << " commit=" << st.hard_state.commit() << " applied=" << st.applied
       << " config=" << n.raw->raft().prs.config.DebugString() << "\n";
  }
}

void InteractionEnv::Restart(uint64_t id) {
  Node& n = nodes_.at(id);
  // Whatever was not persisted is gone; the state machine restarts from the
  // snapshot and replays the log.
  raftpb::Snapshot snap = *n.storage->Snapshot();
  n.conf = snap.metadata().conf_state();
  n.applied.clear();
  n.config.applied = snap.metadata().index();
  mailbox_.erase(id);
  auto raw = RawNode::Create(n.config, n.storage.get());
  CHECK(raw.ok()) << raw.status();
  n.raw = std::move(raw).value();
}

bool InteractionEnv::ProcessReady(uint64_t id, std::ostream& os) {
  Node& n = nodes_.at(id);
  if (!n.raw->HasReady()) return false;
  Ready rd = n.raw->GetReady();
  os << "> " << id << " handling Ready\n";
  os << "  Ready MustSync=" << (rd.must_sync ? "true" : "false") << ":\n";
  if (rd.soft_state) {
    os << "  Lead:" << rd.soft_state->lead
       << " State:" << StateTypeName(rd.soft_state->raft_state) << "\n";
  }
  if (!IsEmptyHardState(rd.hard_state)) {
    os << "  HardState " << DescribeHardState(rd.hard_state) << "\n";
  }
  if (!rd.entries.empty()) {
    os << "  Entries:\n";
    for (const auto& e : rd.entries) os << "  " << DescribeEntry(e) << "\n";
  }
  if (!IsEmptySnapshot(rd.snapshot)) {
    os << "  Snapshot " << DescribeSnapshot(rd.snapshot) << "\n";
  }
  if (!rd.committed_entries.empty()) {
    os << "  CommittedEntries:\n";
    for (const auto& e : rd.committed_entries) {
      os << "  " << DescribeEntry(e) << "\n";
    }
  }
  if (!rd.read_states.empty()) {
    os << "  ReadStates:\n";
    for (const auto& rs : rd.read_states) {
      os << "  Index:" << rs.index << " Ctx:\"" << rs.request_ctx << "\"\n";
    }
  }
  if (!rd.messages.empty()) {
    os << "  Messages:\n";
    for (const auto& m : rd.messages) os << "  " << DescribeMessage(m) << "\n";
  }
  // Persist, send, apply, advance (the classic contract).
  if (!IsEmptySnapshot(rd.snapshot)) {
    CHECK_OK(n.storage->ApplySnapshot(rd.snapshot));
    n.conf = rd.snapshot.metadata().conf_state();
  }
  if (!IsEmptyHardState(rd.hard_state)) n.storage->SetHardState(rd.hard_state);
  CHECK_OK(n.storage->Append(rd.entries));
  for (auto& m : rd.messages) mailbox_[m.to()].push_back(std::move(m));
  for (const auto& e : rd.committed_entries) {
    if (e.type() == raftpb::EntryConfChange) {
      raftpb::ConfChange cc;
      CHECK(cc.ParseFromString(e.data()));
      n.conf = n.raw->ApplyConfChange(cc);
    } else if (e.type() == raftpb::EntryConfChangeV2) {
      raftpb::ConfChangeV2 cc;
      CHECK(cc.ParseFromString(e.data()));
      n.conf = n.raw->ApplyConfChange(cc);
    }
    n.applied.push_back(e);
  }
  n.raw->Advance();
  return true;
}

bool InteractionEnv::DeliverMsgs(uint64_t id, std::ostream& os) {
  auto it = mailbox_.find(id);
  if (it == mailbox_.end() || it->second.empty()) return false;
  std::vector<raftpb::Message> msgs;
  msgs.swap(it->second);
  for (auto& m : msgs) {
    if (Blocked(m.from(), m.to())) {
      os << DescribeMessage(m) << " DROPPED\n";
      continue;
    }
    os << DescribeMessage(m) << "\n";
    auto n = nodes_.find(id);
    if (n == nodes_.end()) continue;
    Status s = n->second.raw->Step(m);
    if (!s.ok()) os << "  error: " << s << "\n";
    if (m.type() == raftpb::MsgSnap) {
      // The transport tells the sender a snapshot went through (etcd's
      // does the same), so the leader resumes probing.
      auto sender = nodes_.find(m.from());
      if (sender != nodes_.end()) {
        sender->second.raw->ReportSnapshot(id, SnapshotStatus::kFinish);
        os << "  (snapshot reported delivered to " << m.from() << ")\n";
      }
    }
  }
  return true;
}

void InteractionEnv::Stabilize(const std::vector<uint64_t>& ids,
                               std::ostream& os) {
  for (int round = 0; round < 1000; ++round) {
    bool any = false;
    for (uint64_t id : ids) any |= ProcessReady(id, os);
    for (uint64_t id : ids) {
      std::ostringstream delivered;
      if (DeliverMsgs(id, delivered)) {
        any = true;
        os << "> " << id << " receiving messages\n";
        std::istringstream lines(delivered.str());
        for (std::string l; std::getline(lines, l);) os << "  " << l << "\n";
      }
    }
    if (!any) return;
  }
  os << "error: did not stabilize\n";
}

void InteractionEnv::ProposeConfChange(const datadriven::TestData& d,
                                       std::ostream& os) {
  auto it = nodes_.find(FirstId(d));
  if (it == nodes_.end()) {
    os << "error: no such node\n";
    return;
  }
  raftpb::ConfChangeV2 cc;
  std::string t = d.ArgValue("transition", "auto");
  if (t == "implicit")
    cc.set_transition(raftpb::ConfChangeTransitionJointImplicit);
  if (t == "explicit")
    cc.set_transition(raftpb::ConfChangeTransitionJointExplicit);
  std::istringstream words(d.input);
  for (std::string w; words >> w;) {
    raftpb::ConfChangeSingle* s = cc.add_changes();
    switch (w[0]) {
      case 'v':
        s->set_type(raftpb::ConfChangeAddNode);
        break;
      case 'l':
        s->set_type(raftpb::ConfChangeAddLearnerNode);
        break;
      case 'r':
        s->set_type(raftpb::ConfChangeRemoveNode);
        break;
      case 'u':
        s->set_type(raftpb::ConfChangeUpdateNode);
        break;
      default:
        os << "error: unknown change " << w << "\n";
        return;
    }
    s->set_node_id(ParseUint64(w.substr(1)).value_or(0));
  }
  Status st;
  if (d.ArgValue("v1") == "true") {
    if (cc.changes_size() != 1) {
      os << "error: v1 takes exactly one change\n";
      return;
    }
    raftpb::ConfChange v1;
    v1.set_type(cc.changes(0).type());
    v1.set_node_id(cc.changes(0).node_id());
    st = it->second.raw->ProposeConfChange(v1);
  } else {
    st = it->second.raw->ProposeConfChange(cc);
  }
  os << (st.ok() ? std::string("ok") : "error: " + st.ToString()) << "\n";
}

void InteractionEnv::RaftState(std::ostream& os) {
  for (const auto& [id, n] : nodes_) {
    const Raft& r = n.raw->raft();
    std::string role = r.is_learner ? "Learner" : "Voter";
    if (!r.prs.progress.count(id)) role = "Removed";
    os << id << ": " << StateTypeName(r.state) << " (" << role
       << ") Term:" << r.term << " Lead:" << r.lead << "\n";
  }
}

}  // namespace kplane::raft
