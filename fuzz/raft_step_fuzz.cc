// Fuzzes what a store member's raft core does with the messages its peer
// port admits: member 1 of {1, 2, 3} (a follower, candidate, pre-candidate
// or leader over a log of 8 entries, 5 committed), steps every message
// from member 2 or 3 that CheckPeerMessage (storage/server/entry_check.h)
// lets through, as StoreServer::Process does (a snapshot message: that
// CheckPeerSnapshot lets through, as the peer transport), and runs the Ready
// loop (entries and hard state to storage, Advance) after each, with ticks in
// between. A hostile or buggy peer must not be able to stop a member: the
// core's CHECKs guard its own invariants, so every message that could trip
// one must be refused before the core steps it.
//
// Input: one byte picking the role, then records of [flags byte][2-byte
// length][a raftpb.Message of that length]; flag bit 0 ticks before the
// message.
//
// Checked: no crash or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "schemas/raft.pb.h"
#include "storage/raft/raw_node.h"
#include "storage/raft/storage.h"
#include "storage/raft/util.h"
#include "storage/server/entry_check.h"

namespace {

using kplane::raft::MemoryStorage;
using kplane::raft::RawNode;

constexpr uint64_t kSelf = 1;

std::unique_ptr<RawNode> NewMember(MemoryStorage* storage, uint8_t role) {
  raftpb::Snapshot snap;
  snap.mutable_metadata()->set_index(2);
  snap.mutable_metadata()->set_term(1);
  for (uint64_t id : {1, 2, 3}) {
    snap.mutable_metadata()->mutable_conf_state()->add_voters(id);
  }
  if (!storage->ApplySnapshot(snap).ok()) return nullptr;
  kplane::raft::EntryVec entries;
  for (uint64_t i = 3; i <= 8; ++i) {
    raftpb::Entry e;
    e.set_index(i);
    e.set_term(i < 5 ? 1 : 2);
    entries.push_back(e);
  }
  if (!storage->Append(entries).ok()) return nullptr;
  raftpb::HardState hs;
  hs.set_term(2);
  hs.set_commit(5);
  storage->SetHardState(hs);
  kplane::raft::Config c;
  c.id = kSelf;
  c.election_tick = 10;
  c.heartbeat_tick = 1;
  c.applied = 2;
  c.pre_vote = true;
  c.check_quorum = true;
  auto node = RawNode::Restart(c, storage);
  if (!node.ok()) return nullptr;
  std::unique_ptr<RawNode> n = std::move(*node);
  switch (role % 4) {
    case 0:
      n->raft().BecomeFollower(2, 2);
      break;
    case 1:
      n->raft().BecomeCandidate();
      n->raft().BecomeLeader();
      break;
    case 2:
      n->raft().BecomeCandidate();
      break;
    case 3:
      n->raft().BecomePreCandidate();
      break;
  }
  return n;
}

// What the node loop does with a Ready (minus the state machine). Bounded:
// a Ready whose entries the storage refuses comes back (the real loop then
// stops on the storage error).
void RunReady(RawNode* node, MemoryStorage* storage) {
  for (int i = 0; i < 16 && node->HasReady(); ++i) {
    kplane::raft::Ready rd = node->GetReady();
    if (!kplane::raft::IsEmptySnapshot(rd.snapshot)) {
      (void)storage->ApplySnapshot(rd.snapshot);
    }
    if (!rd.entries.empty()) (void)storage->Append(rd.entries);
    if (!kplane::raft::IsEmptyHardState(rd.hard_state)) {
      storage->SetHardState(rd.hard_state);
    }
    node->Advance();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  MemoryStorage storage;
  std::unique_ptr<RawNode> node = NewMember(&storage, in.TakeByte());
  if (node == nullptr) return 0;
  RunReady(node.get(), &storage);
  while (!in.rest().empty()) {
    const uint8_t flags = in.TakeByte();
    const size_t len = size_t{in.TakeByte()} << 8 | in.TakeByte();
    const std::string_view bytes = in.TakeBytes(len);
    if ((flags & 1) != 0) node->Tick();
    raftpb::Message m;
    if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      continue;
    }
    // StoreServer::Process: members other than this one, checked messages.
    if (m.from() != 2 && m.from() != 3) continue;
    // A snapshot as HttpPeerTransport::HandleSnapshot checks it (its files
    // are not what the core looks at).
    const kplane::Status admitted =
        m.type() == raftpb::MsgSnap
            ? kplane::storage::CheckPeerSnapshot(m, kSelf)
            : kplane::storage::CheckPeerMessage(m, kSelf, 1 << 20);
    if (!admitted.ok()) continue;
    (void)node->Step(std::move(m));
    RunReady(node.get(), &storage);
  }
  return 0;
}
