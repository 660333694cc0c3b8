// Test helpers for the raft core (not part of kplane_raft): fresh nodes over
// MemoryStorage, and a synchronous in-memory network that delivers messages
// breadth-first with optional drops, cuts and ignored message types (the
// harness etcd-io/raft's tests use, rewritten).
//
// Not thread-safe. Failures are gtest failures or crashes.
#ifndef KPLANE_STORAGE_RAFT_RAFT_TEST_UTIL_H_
#define KPLANE_STORAGE_RAFT_RAFT_TEST_UTIL_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "storage/raft/raft.h"
#include "storage/raft/raw_node.h"
#include "storage/raft/storage.h"

namespace kplane::raft::testing {

using ConfigFn = std::function<void(Config&)>;

raftpb::ConfState Voters(std::vector<uint64_t> ids,
                         std::vector<uint64_t> learners = {});
std::unique_ptr<MemoryStorage> NewStorage(std::vector<uint64_t> voters,
                                          std::vector<uint64_t> learners = {});
Config NewConfig(uint64_t id, int election, int heartbeat);
// The Raft keeps a pointer to storage, which must outlive it.
std::unique_ptr<Raft> NewRaft(uint64_t id, int election, int heartbeat,
                              MemoryStorage* storage,
                              const ConfigFn& fn = nullptr);

raftpb::Message Msg(uint64_t from, uint64_t to, raftpb::MessageType type,
                    uint64_t term = 0);
raftpb::Entry Ent(uint64_t term, uint64_t index, std::string data = "");
raftpb::Message Prop(uint64_t to, std::string data = "somedata");

// Moves r's unstable entries into storage and returns (and marks applied)
// its committed-but-unapplied entries: the Ready loop, minus messages.
EntryVec PersistAndApply(Raft* r, MemoryStorage* s);

// A peer slot: a real node or a black hole that swallows messages.
class Network {
 public:
  // ids 1..n, all fresh voters. Peers listed in black_holes swallow.
  explicit Network(int n, const ConfigFn& fn = nullptr,
                   std::set<uint64_t> black_holes = {});
  // Takes over prepared rafts (index i gets id i+1; a null entry is a fresh
  // node, unless its id is in black_holes). Each prepared raft must have
  // been built over the storage passed in `storages` at the same index.
  Network(std::vector<std::unique_ptr<Raft>> rafts,
          std::vector<std::unique_ptr<MemoryStorage>> storages,
          const ConfigFn& fn = nullptr, std::set<uint64_t> black_holes = {});

  // Delivers msgs and everything they cause until no message is left.
  void Send(std::vector<raftpb::Message> msgs);
  void Send(raftpb::Message m) { Send(std::vector<raftpb::Message>{m}); }
  // Drops messages from->to with probability perc (deterministic PRNG).
  void Drop(uint64_t from, uint64_t to, double perc);
  void Cut(uint64_t a, uint64_t b);
  void Isolate(uint64_t id);
  void Ignore(raftpb::MessageType t) { ignored_.insert(t); }
  void Recover();

  Raft* peer(uint64_t id) { return peers_.at(id).get(); }
  MemoryStorage* storage(uint64_t id) { return storages_.at(id).get(); }
  bool is_black_hole(uint64_t id) const { return peers_.at(id) == nullptr; }
  std::vector<uint64_t> ids() const;
  // Lets tests intercept every delivered message (e.g. to record them).
  std::function<void(const raftpb::Message&)> on_deliver;

 private:
  std::vector<raftpb::Message> Filter(std::vector<raftpb::Message> msgs);

  std::map<uint64_t, std::unique_ptr<Raft>> peers_;
  std::map<uint64_t, std::unique_ptr<MemoryStorage>> storages_;
  std::map<std::pair<uint64_t, uint64_t>, double> drops_;
  std::set<raftpb::MessageType> ignored_;
  Prng prng_{42};
};

}  // namespace kplane::raft::testing

#endif  // KPLANE_STORAGE_RAFT_RAFT_TEST_UTIL_H_
