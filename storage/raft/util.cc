#include "storage/raft/util.h"

#include <sstream>

#include "base/strings.h"

namespace kplane::raft {

bool IsEmptyHardState(const raftpb::HardState& hs) {
  return hs.term() == 0 && hs.vote() == 0 && hs.commit() == 0;
}

bool HardStateEqual(const raftpb::HardState& a, const raftpb::HardState& b) {
  return a.term() == b.term() && a.vote() == b.vote() &&
         a.commit() == b.commit();
}

bool IsEmptySnapshot(const raftpb::Snapshot& s) {
  return s.metadata().index() == 0;
}

bool IsLocalMessage(raftpb::MessageType t) {
  return t == raftpb::MsgHup || t == raftpb::MsgBeat ||
         t == raftpb::MsgUnreachable || t == raftpb::MsgSnapStatus ||
         t == raftpb::MsgCheckQuorum;
}

bool IsResponseMessage(raftpb::MessageType t) {
  return t == raftpb::MsgAppResp || t == raftpb::MsgVoteResp ||
         t == raftpb::MsgHeartbeatResp || t == raftpb::MsgUnreachable ||
         t == raftpb::MsgPreVoteResp;
}

raftpb::MessageType VoteResponseType(raftpb::MessageType vote) {
  return vote == raftpb::MsgPreVote ? raftpb::MsgPreVoteResp
                                    : raftpb::MsgVoteResp;
}

uint64_t EntrySize(const raftpb::Entry& e) { return e.ByteSizeLong(); }

uint64_t PayloadSize(const raftpb::Entry& e) { return e.data().size(); }

uint64_t PayloadsSize(const EntryVec& ents) {
  uint64_t s = 0;
  for (const auto& e : ents) s += PayloadSize(e);
  return s;
}

void LimitSize(EntryVec& ents, uint64_t max_size) {
  if (ents.empty() || max_size == kNoLimit) return;
  uint64_t size = EntrySize(ents[0]);
  size_t limit = 1;
  for (; limit < ents.size(); ++limit) {
    size += EntrySize(ents[limit]);
    if (size > max_size) break;
  }
  ents.resize(limit);
}

raftpb::ConfChangeV2 ConfChangeAsV2(const raftpb::ConfChange& cc) {
  raftpb::ConfChangeV2 v2;
  auto* c = v2.add_changes();
  c->set_type(cc.type());
  c->set_node_id(cc.node_id());
  v2.set_context(cc.context());
  return v2;
}

bool ConfChangeLeavesJoint(const raftpb::ConfChangeV2& cc) {
  return cc.transition() == raftpb::ConfChangeTransitionAuto &&
         cc.changes_size() == 0;
}

bool ConfChangeEntersJoint(const raftpb::ConfChangeV2& cc, bool* auto_leave) {
  // More changes could in principle be applied "simply" (one voter change),
  // but that depends on the config they apply to; joint consensus is always
  // safe, so any batch uses it.
  if (cc.transition() == raftpb::ConfChangeTransitionAuto &&
      cc.changes_size() <= 1) {
    return false;
  }
  *auto_leave = cc.transition() != raftpb::ConfChangeTransitionJointExplicit;
  return true;
}

uint64_t Prng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Prng::Uniform(uint64_t n) { return Next() % n; }

bool Prng::Chance(double p) {
  if (p <= 0) return false;
  // 53 random bits as a double in [0, 1).
  double u = static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0);
  return u < p;
}

namespace {

template <typename Ids>
std::string IdList(const Ids& ids) {
  std::string out = "(";
  bool first = true;
  for (uint64_t id : ids) {
    if (!first) out += ' ';
    first = false;
    out += std::to_string(id);
  }
  return out + ")";
}

}  // namespace

std::string DescribeEntry(const raftpb::Entry& e) {
  std::ostringstream os;
  os << e.term() << "/" << e.index() << " " << raftpb::EntryType_Name(e.type());
  switch (e.type()) {
    case raftpb::EntryNormal:
      if (!e.data().empty()) os << " " << GoQuote(e.data());
      break;
    case raftpb::EntryConfChange: {
      raftpb::ConfChange cc;
      if (cc.ParseFromString(e.data())) {
        os << " " << DescribeConfChange(ConfChangeAsV2(cc));
      }
      break;
    }
    case raftpb::EntryConfChangeV2: {
      raftpb::ConfChangeV2 cc;
      if (cc.ParseFromString(e.data())) os << " " << DescribeConfChange(cc);
      break;
    }
    default:
      break;
  }
  return os.str();
}

std::string DescribeEntries(const EntryVec& ents) {
  std::string out = "[";
  for (size_t i = 0; i < ents.size(); ++i) {
    if (i) out += ", ";
    out += DescribeEntry(ents[i]);
  }
  return out + "]";
}

std::string DescribeMessage(const raftpb::Message& m) {
  std::ostringstream os;
  os << m.from() << "->" << m.to() << " " << raftpb::MessageType_Name(m.type())
     << " Term:" << m.term() << " Log:" << m.logterm() << "/" << m.index();
  if (m.reject()) os << " Rejected (Hint: " << m.rejecthint() << ")";
  if (m.commit() != 0) os << " Commit:" << m.commit();
  if (m.vote() != 0) os << " Vote:" << m.vote();
  if (m.entries_size() > 0) {
    os << " Entries:[";
    for (int i = 0; i < m.entries_size(); ++i) {
      if (i) os << ", ";
      os << DescribeEntry(m.entries(i));
    }
    os << "]";
  }
  if (!m.context().empty()) os << " Context:" << GoQuote(m.context());
  if (m.has_snapshot() && !IsEmptySnapshot(m.snapshot())) {
    os << " Snapshot: " << DescribeSnapshot(m.snapshot());
  }
  return os.str();
}

std::string DescribeHardState(const raftpb::HardState& hs) {
  std::ostringstream os;
  os << "Term:" << hs.term();
  if (hs.vote() != 0) os << " Vote:" << hs.vote();
  os << " Commit:" << hs.commit();
  return os.str();
}

std::string DescribeConfState(const raftpb::ConfState& cs) {
  std::string out = "Voters:" + IdList(cs.voters());
  if (cs.voters_outgoing_size() > 0) {
    out += "&&" + IdList(cs.voters_outgoing());
  }
  if (cs.learners_size() > 0) out += " Learners:" + IdList(cs.learners());
  if (cs.learners_next_size() > 0) {
    out += " LearnersNext:" + IdList(cs.learners_next());
  }
  if (cs.auto_leave()) out += " AutoLeave:true";
  return out;
}

std::string DescribeSnapshot(const raftpb::Snapshot& s) {
  std::ostringstream os;
  os << "Index:" << s.metadata().index() << " Term:" << s.metadata().term()
     << " ConfState:" << DescribeConfState(s.metadata().conf_state());
  return os.str();
}

std::string DescribeConfChange(const raftpb::ConfChangeV2& cc) {
  std::string out;
  if (cc.transition() == raftpb::ConfChangeTransitionJointImplicit) {
    out += "joint-implicit ";
  } else if (cc.transition() == raftpb::ConfChangeTransitionJointExplicit) {
    out += "joint-explicit ";
  }
  if (cc.changes_size() == 0) return out + "leave-joint";
  for (int i = 0; i < cc.changes_size(); ++i) {
    if (i) out += ' ';
    const auto& c = cc.changes(i);
    switch (c.type()) {
      case raftpb::ConfChangeAddNode:
        out += "v";
        break;
      case raftpb::ConfChangeRemoveNode:
        out += "r";
        break;
      case raftpb::ConfChangeUpdateNode:
        out += "u";
        break;
      case raftpb::ConfChangeAddLearnerNode:
        out += "l";
        break;
      default:
        out += "?";
    }
    out += std::to_string(c.node_id());
  }
  return out;
}

}  // namespace kplane::raft
