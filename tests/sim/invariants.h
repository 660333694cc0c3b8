// InvariantChecker: the safety properties of Raft (Figure 3 of the paper),
// checked incrementally while a simulation runs. Feed it what each node
// persists, commits, applies and whether it leads; the first violation is
// kept and reported.
//
//   Election safety:     at most one leader per term.
//   Log matching:        two logs with an entry of the same index and term
//                        hold the same entry and agree on the term before it
//                        (by induction, identical prefixes). Checked with a
//                        global map (index, term) -> (entry hash, prev term).
//   Leader completeness: a leader's log holds every entry known committed.
//   State machine safety: every node applies the same entry at an index,
//                        and reaches the same state digest after it.
//   Monotone commit:     a node's commit index never decreases while it
//                        runs, and the set of committed entries only grows.
//
// Thread-safety: none. Errors: ok() / failure().
#ifndef KPLANE_TESTS_SIM_INVARIANTS_H_
#define KPLANE_TESTS_SIM_INVARIANTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/raft/storage.h"

namespace kplane::sim {

uint64_t EntryHash(const raftpb::Entry& e);

class InvariantChecker {
 public:
  // `ents` were just appended to `log` by node.
  void OnAppend(uint64_t node, const raft::EntryVec& ents,
                const raft::Storage& log);
  // node's commit index moved from `old_commit` to `new_commit` (same run).
  void OnCommit(uint64_t node, uint64_t old_commit, uint64_t new_commit,
                const raft::Storage& log);
  // node is leader of term with the given (fully persisted) log.
  void OnLeader(uint64_t node, uint64_t term, const raft::Storage& log);
  // node applied entry at index, reaching state digest.
  void OnApply(uint64_t node, const raftpb::Entry& e, uint64_t digest);
  // node installed a snapshot at index whose state has digest.
  void OnSnapshot(uint64_t node, uint64_t index, uint64_t digest);

  bool ok() const { return failure_.empty(); }
  const std::string& failure() const { return failure_; }
  uint64_t max_committed() const { return committed_terms_.size(); }
  size_t leaders() const { return leader_of_term_.size(); }

 private:
  void Fail(const std::string& what);

  std::string failure_;
  std::map<uint64_t, uint64_t> leader_of_term_;
  struct EntryFact {
    uint64_t hash;
    uint64_t prev_term;  // UINT64_MAX if unknown
  };
  std::map<std::pair<uint64_t, uint64_t>, EntryFact> entries_;
  // committed_terms_[i-1] is the term of committed entry i (0 = unknown,
  // e.g. only known through a snapshot).
  std::vector<uint64_t> committed_terms_;
  std::unordered_map<uint64_t, uint64_t> applied_hash_;    // index -> entry
  std::unordered_map<uint64_t, uint64_t> applied_digest_;  // index -> state
};

}  // namespace kplane::sim

#endif  // KPLANE_TESTS_SIM_INVARIANTS_H_
