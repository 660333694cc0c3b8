#include "tests/sim/invariants.h"

#include <sstream>

namespace kplane::sim {

uint64_t EntryHash(const raftpb::Entry& e) {
  uint64_t h = 1469598103934665603ULL ^ static_cast<uint64_t>(e.type());
  for (unsigned char c : e.data()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h ^ (e.term() * 0x9e3779b97f4a7c15ULL);
}

void InvariantChecker::Fail(const std::string& what) {
  if (failure_.empty()) failure_ = what;
}

void InvariantChecker::OnAppend(uint64_t node, const raft::EntryVec& ents,
                                const raft::Storage& log) {
  for (const auto& e : ents) {
    uint64_t prev_term = UINT64_MAX;
    auto t = log.Term(e.index() - 1);
    if (t.ok()) prev_term = *t;
    EntryFact fact{EntryHash(e), prev_term};
    auto [it, inserted] =
        entries_.emplace(std::make_pair(e.index(), e.term()), fact);
    if (inserted) continue;
    EntryFact& known = it->second;
    if (known.hash != fact.hash) {
      std::ostringstream os;
      os << "log matching: node " << node << " has a different entry at "
         << "index " << e.index() << " term " << e.term()
         << " than another node: " << raft::DescribeEntry(e);
      Fail(os.str());
    }
    if (known.prev_term == UINT64_MAX) {
      known.prev_term = prev_term;
    } else if (prev_term != UINT64_MAX && prev_term != known.prev_term) {
      std::ostringstream os;
      os << "log matching: node " << node << " has entry " << e.term() << "/"
         << e.index() << " after term " << prev_term
         << " where another node has it after term " << known.prev_term;
      Fail(os.str());
    }
  }
}

void InvariantChecker::OnCommit(uint64_t node, uint64_t old_commit,
                                uint64_t new_commit, const raft::Storage& log) {
  if (new_commit < old_commit) {
    std::ostringstream os;
    os << "monotone commit: node " << node << " commit went from " << old_commit
       << " back to " << new_commit;
    Fail(os.str());
    return;
  }
  if (committed_terms_.size() < new_commit) committed_terms_.resize(new_commit);
  for (uint64_t i = old_commit + 1; i <= new_commit; ++i) {
    auto t = log.Term(i);
    if (!t.ok()) continue;  // compacted: covered by a snapshot
    uint64_t& known = committed_terms_[i - 1];
    if (known == 0) {
      known = *t;
    } else if (known != *t) {
      std::ostringstream os;
      os << "state machine safety: node " << node << " committed term " << *t
         << " at index " << i << " where term " << known
         << " was committed before";
      Fail(os.str());
    }
  }
}

void InvariantChecker::OnLeader(uint64_t node, uint64_t term,
                                const raft::Storage& log) {
  auto [it, inserted] = leader_of_term_.emplace(term, node);
  if (!inserted && it->second != node) {
    std::ostringstream os;
    os << "election safety: nodes " << it->second << " and " << node
       << " both led term " << term;
    Fail(os.str());
    return;
  }
  if (!inserted) return;  // checked when it became leader
  uint64_t first = *log.FirstIndex();
  uint64_t last = *log.LastIndex();
  for (uint64_t i = first; i <= committed_terms_.size(); ++i) {
    uint64_t want = committed_terms_[i - 1];
    if (want == 0) continue;
    auto t = log.Term(i);
    if (i > last || !t.ok() || *t != want) {
      std::ostringstream os;
      os << "leader completeness: leader " << node << " of term " << term
         << " lacks committed entry " << want << "/" << i << " (has term "
         << (t.ok() ? *t : 0) << ", last index " << last << ")";
      Fail(os.str());
      return;
    }
  }
}

void InvariantChecker::OnApply(uint64_t node, const raftpb::Entry& e,
                               uint64_t digest) {
  uint64_t h = EntryHash(e);
  auto [it, inserted] = applied_hash_.emplace(e.index(), h);
  if (!inserted && it->second != h) {
    std::ostringstream os;
    os << "state machine safety: node " << node << " applied "
       << raft::DescribeEntry(e) << " at index " << e.index()
       << " where another node applied a different entry";
    Fail(os.str());
  }
  auto [dit, dinserted] = applied_digest_.emplace(e.index(), digest);
  if (!dinserted && dit->second != digest) {
    std::ostringstream os;
    os << "state machine safety: node " << node << " reached a different "
       << "state after applying index " << e.index();
    Fail(os.str());
  }
}

void InvariantChecker::OnSnapshot(uint64_t node, uint64_t index,
                                  uint64_t digest) {
  auto [it, inserted] = applied_digest_.emplace(index, digest);
  if (!inserted && it->second != digest) {
    std::ostringstream os;
    os << "state machine safety: node " << node << " installed a snapshot at "
       << index << " whose state differs from the state other nodes reached";
    Fail(os.str());
  }
}

}  // namespace kplane::sim
