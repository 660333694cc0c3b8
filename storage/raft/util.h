// Small helpers shared by the raft core: entry sizes, emptiness tests, the
// deterministic random source, and one-line text renderings of raft records
// used by logs, datadriven tests and the simulation's traces.
//
// Everything here is a pure function of its arguments (the PRNG of its own
// state); safe to call from any thread on distinct objects. No errors.
#ifndef KPLANE_STORAGE_RAFT_UTIL_H_
#define KPLANE_STORAGE_RAFT_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "schemas/raft.pb.h"

namespace kplane::raft {

using EntryVec = std::vector<raftpb::Entry>;

// No node: the zero id (no leader, no vote).
inline constexpr uint64_t kNone = 0;
// "No limit" for size arguments.
inline constexpr uint64_t kNoLimit = UINT64_MAX;

bool IsEmptyHardState(const raftpb::HardState& hs);
bool HardStateEqual(const raftpb::HardState& a, const raftpb::HardState& b);
bool IsEmptySnapshot(const raftpb::Snapshot& s);

// Messages that are generated and handled inside one node (never on a wire).
bool IsLocalMessage(raftpb::MessageType t);
// Responses that only make sense from a peer the node tracks.
bool IsResponseMessage(raftpb::MessageType t);
raftpb::MessageType VoteResponseType(raftpb::MessageType vote);

// The encoded size of an entry, used for message and Ready size limits.
uint64_t EntrySize(const raftpb::Entry& e);
// The payload (data) size, used for the uncommitted-log quota.
uint64_t PayloadSize(const raftpb::Entry& e);
uint64_t PayloadsSize(const EntryVec& ents);
// Drops entries from the back of `ents` so that their summed EntrySize stays
// within max_size, keeping at least one entry.
void LimitSize(EntryVec& ents, uint64_t max_size);

// Converts a ConfChange (v1) into the equivalent single-change ConfChangeV2.
raftpb::ConfChangeV2 ConfChangeAsV2(const raftpb::ConfChange& cc);
// A ConfChangeV2 with no changes and the Auto transition leaves a joint
// config (its context is ignored).
bool ConfChangeLeavesJoint(const raftpb::ConfChangeV2& cc);
// Whether the change uses joint consensus, and if so whether the joint
// configuration is left automatically.
bool ConfChangeEntersJoint(const raftpb::ConfChangeV2& cc, bool* auto_leave);

// Deterministic pseudo-random numbers (splitmix64). The raft core draws its
// randomized election timeouts from one of these, seeded by Config, so a
// simulation replays exactly under the same seed on any platform.
class Prng {
 public:
  explicit Prng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, n); n > 0.
  uint64_t Uniform(uint64_t n);
  // True with probability p in [0, 1].
  bool Chance(double p);

 private:
  uint64_t state_;
};

// One-line renderings, e.g. "1/5 EntryNormal \"put x\"" and
// "1->2 MsgApp Term:3 Log:2/5 Commit:4 Entries:[3/6 EntryNormal \"a\"]".
std::string DescribeEntry(const raftpb::Entry& e);
std::string DescribeEntries(const EntryVec& ents);
std::string DescribeMessage(const raftpb::Message& m);
std::string DescribeHardState(const raftpb::HardState& hs);
std::string DescribeConfState(const raftpb::ConfState& cs);
std::string DescribeSnapshot(const raftpb::Snapshot& s);
std::string DescribeConfChange(const raftpb::ConfChangeV2& cc);

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_UTIL_H_
