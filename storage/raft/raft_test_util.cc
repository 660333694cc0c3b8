#include "storage/raft/raft_test_util.h"

#include <deque>

#include "base/logging.h"

namespace kplane::raft::testing {

raftpb::ConfState Voters(std::vector<uint64_t> ids,
                         std::vector<uint64_t> learners) {
  raftpb::ConfState cs;
  for (uint64_t id : ids) cs.add_voters(id);
  for (uint64_t id : learners) cs.add_learners(id);
  return cs;
}

std::unique_ptr<MemoryStorage> NewStorage(std::vector<uint64_t> voters,
                                          std::vector<uint64_t> learners) {
  auto s = std::make_unique<MemoryStorage>();
  s->SetInitialConfState(Voters(voters, learners));
  return s;
}

Config NewConfig(uint64_t id, int election, int heartbeat) {
  Config c;
  c.id = id;
  c.election_tick = election;
  c.heartbeat_tick = heartbeat;
  c.max_size_per_msg = kNoLimit;
  c.max_inflight_msgs = 256;
  return c;
}

std::unique_ptr<Raft> NewRaft(uint64_t id, int election, int heartbeat,
                              MemoryStorage* storage, const ConfigFn& fn) {
  Config c = NewConfig(id, election, heartbeat);
  if (fn) fn(c);
  return std::make_unique<Raft>(c, storage);
}

raftpb::Message Msg(uint64_t from, uint64_t to, raftpb::MessageType type,
                    uint64_t term) {
  raftpb::Message m;
  m.set_from(from);
  m.set_to(to);
  m.set_type(type);
  m.set_term(term);
  return m;
}

raftpb::Entry Ent(uint64_t term, uint64_t index, std::string data) {
  raftpb::Entry e;
  e.set_term(term);
  e.set_index(index);
  e.set_data(std::move(data));
  return e;
}

raftpb::Message Prop(uint64_t to, std::string data) {
  raftpb::Message m = Msg(to, to, raftpb::MsgProp);
  m.add_entries()->set_data(std::move(data));
  return m;
}

EntryVec PersistAndApply(Raft* r, MemoryStorage* s) {
  const EntryVec& unstable = r->raft_log.UnstableEntries();
  if (!unstable.empty()) {
    uint64_t li = unstable.back().index(), lt = unstable.back().term();
    CHECK_OK(s->Append(unstable));
    r->raft_log.StableTo(li, lt);
  }
  EntryVec ents = r->raft_log.NextCommittedEntries();
  if (!ents.empty()) r->AdvanceApplied(ents.back().index(), 0);
  return ents;
}

Network::Network(int n, const ConfigFn& fn, std::set<uint64_t> black_holes)
    : Network(std::vector<std::unique_ptr<Raft>>(n),
              std::vector<std::unique_ptr<MemoryStorage>>(n), fn,
              std::move(black_holes)) {}

Network::Network(std::vector<std::unique_ptr<Raft>> rafts,
                 std::vector<std::unique_ptr<MemoryStorage>> storages,
                 const ConfigFn& fn, std::set<uint64_t> black_holes) {
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < rafts.size(); ++i) ids.push_back(i + 1);
  storages.resize(rafts.size());
  for (size_t i = 0; i < rafts.size(); ++i) {
    uint64_t id = ids[i];
    if (black_holes.count(id)) {
      peers_[id] = nullptr;
      continue;
    }
    if (rafts[i]) {
      CHECK(storages[i] != nullptr) << "prepared raft needs its storage";
      storages_[id] = std::move(storages[i]);
      peers_[id] = std::move(rafts[i]);
    } else {
      storages_[id] = NewStorage(ids);
      peers_[id] = NewRaft(id, 10, 1, storages_[id].get(), fn);
    }
  }
}

std::vector<uint64_t> Network::ids() const {
  std::vector<uint64_t> out;
  for (const auto& [id, p] : peers_) out.push_back(id);
  return out;
}

void Network::Send(std::vector<raftpb::Message> msgs) {
  std::deque<raftpb::Message> queue(msgs.begin(), msgs.end());
  while (!queue.empty()) {
    raftpb::Message m = std::move(queue.front());
    queue.pop_front();
    auto it = peers_.find(m.to());
    if (it == peers_.end() || it->second == nullptr) continue;
    if (on_deliver) on_deliver(m);
    Raft* p = it->second.get();
    (void)p->Step(m);
    for (auto& out : Filter(p->TakeMessages())) queue.push_back(std::move(out));
  }
}

void Network::Drop(uint64_t from, uint64_t to, double perc) {
  drops_[{from, to}] = perc;
}

void Network::Cut(uint64_t a, uint64_t b) {
  Drop(a, b, 2.0);
  Drop(b, a, 2.0);
}

void Network::Isolate(uint64_t id) {
  for (const auto& [other, p] : peers_) {
    if (other != id) Cut(id, other);
  }
}

void Network::Recover() {
  drops_.clear();
  ignored_.clear();
}

std::vector<raftpb::Message> Network::Filter(
    std::vector<raftpb::Message> msgs) {
  std::vector<raftpb::Message> out;
  for (auto& m : msgs) {
    if (ignored_.count(m.type())) continue;
    CHECK(m.type() != raftpb::MsgHup) << "unexpected MsgHup on the network";
    auto it = drops_.find({m.from(), m.to()});
    if (it != drops_.end() && prng_.Chance(it->second)) continue;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace kplane::raft::testing
