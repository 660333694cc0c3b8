// One test per claim of the Raft paper ("In Search of an Understandable
// Consensus Algorithm", Ongaro & Ousterhout), each citing its section. The
// selection follows etcd-io/raft's raft_paper_test.go; the code is ours.
#include <algorithm>
#include <memory>

#include "gtest/gtest.h"
#include "storage/raft/raft.h"
#include "storage/raft/raft_test_util.h"

namespace kplane::raft {
namespace {

using testing::Ent;
using testing::Msg;
using testing::Network;
using testing::NewRaft;
using testing::NewStorage;
using testing::PersistAndApply;

std::vector<raftpb::Message> SortedMsgs(std::vector<raftpb::Message> msgs) {
  std::sort(msgs.begin(), msgs.end(), [](const auto& a, const auto& b) {
    return DescribeMessage(a) < DescribeMessage(b);
  });
  return msgs;
}

std::vector<std::string> Describe(const std::vector<raftpb::Message>& msgs) {
  std::vector<std::string> out;
  for (const auto& m : SortedMsgs(msgs)) out.push_back(DescribeMessage(m));
  return out;
}

void CommitNoopEntry(Raft* r, MemoryStorage* s) {
  ASSERT_EQ(r->state, StateType::kLeader);
  r->TakeMessages();
  // Simulate the followers acking the leader's empty entry.
  for (uint64_t id : r->prs.VoterNodes()) {
    if (id == r->id) continue;
    raftpb::Message m = Msg(id, r->id, raftpb::MsgAppResp, r->term);
    m.set_index(r->raft_log.LastIndex());
    ASSERT_TRUE(r->Step(m).ok());
  }
  r->TakeMessages();
  PersistAndApply(r, s);
}

raftpb::Message AcceptAndReply(const raftpb::Message& m) {
  EXPECT_EQ(m.type(), raftpb::MsgApp);
  raftpb::Message r = Msg(m.to(), m.from(), raftpb::MsgAppResp, m.term());
  r.set_index(m.index() + m.entries_size());
  return r;
}

// §5.1: "If one server's current term is smaller than the other's, then it
// updates its current term to the larger value. If a candidate or leader
// discovers that its term is out of date, it immediately reverts to
// follower state."
void CheckUpdateTermFromMessage(StateType from_state) {
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get());
  if (from_state == StateType::kCandidate) r->BecomeCandidate();
  if (from_state == StateType::kLeader) {
    r->BecomeCandidate();
    r->BecomeLeader();
  }
  ASSERT_TRUE(r->Step(Msg(2, 1, raftpb::MsgApp, 2)).ok());
  EXPECT_EQ(r->term, 2u);
  EXPECT_EQ(r->state, StateType::kFollower);
}

TEST(RaftPaperTest, FollowerUpdateTermFromMessage_5_1) {
  CheckUpdateTermFromMessage(StateType::kFollower);
}
TEST(RaftPaperTest, CandidateUpdateTermFromMessage_5_1) {
  CheckUpdateTermFromMessage(StateType::kCandidate);
}
TEST(RaftPaperTest, LeaderUpdateTermFromMessage_5_1) {
  CheckUpdateTermFromMessage(StateType::kLeader);
}

// §5.1: "If a server receives a request with a stale term number, it
// rejects the request." Our implementation ignores it.
TEST(RaftPaperTest, RejectStaleTermMessage_5_1) {
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get());
  raftpb::HardState hs;
  hs.set_term(2);
  r->term = 2;
  uint64_t commit_before = r->raft_log.committed();
  raftpb::Message m = Msg(2, 1, raftpb::MsgApp, 1);
  m.set_commit(5);
  ASSERT_TRUE(r->Step(m).ok());
  EXPECT_EQ(r->term, 2u);
  EXPECT_EQ(r->raft_log.committed(), commit_before);
  EXPECT_TRUE(r->TakeMessages().empty());
}

// §5.2: "When servers start up, they begin as followers."
TEST(RaftPaperTest, StartAsFollower_5_2) {
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get());
  EXPECT_EQ(r->state, StateType::kFollower);
}

// §5.2: "Leaders send periodic heartbeats (AppendEntries RPCs that carry no
// log entries) to all followers in order to maintain their authority."
TEST(RaftPaperTest, LeaderBcastBeat_5_2) {
  int hi = 1;
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, hi, s.get());
  r->BecomeCandidate();
  r->BecomeLeader();
  for (int i = 0; i < 10; ++i) {
    raftpb::Message p = testing::Prop(1, "");
    (void)r->Step(p);
  }
  r->TakeMessages();
  for (int i = 0; i < hi; ++i) r->Tick();
  EXPECT_EQ(Describe(r->TakeMessages()),
            (std::vector<std::string>{"1->2 MsgHeartbeat Term:1 Log:0/0",
                                      "1->3 MsgHeartbeat Term:1 Log:0/0"}));
}

// §5.2: "If a follower receives no communication over a period of time
// called the election timeout, then it assumes there is no viable leader and
// begins an election to choose a new leader. To begin an election, a
// follower increments its current term and transitions to candidate state.
// It then votes for itself and issues RequestVote RPCs in parallel to each
// of the other servers in the cluster." Also: "if many followers become
// candidates at the same time, votes could be split so that no candidate
// obtains a majority. When this happens, each candidate will time out and
// start a new election by incrementing its term and initiating another round
// of RequestVote RPCs."
void CheckNonleaderStartElection(StateType st) {
  int et = 10;
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, et, 1, s.get());
  if (st == StateType::kFollower) r->BecomeFollower(1, 2);
  if (st == StateType::kCandidate) r->BecomeCandidate();
  for (int i = 1; i < 2 * et; ++i) r->Tick();
  EXPECT_EQ(r->term, 2u);
  EXPECT_EQ(r->state, StateType::kCandidate);
  EXPECT_TRUE(r->prs.votes.at(r->id));
  EXPECT_EQ(Describe(r->TakeMessages()),
            (std::vector<std::string>{"1->2 MsgVote Term:2 Log:0/0",
                                      "1->3 MsgVote Term:2 Log:0/0"}));
}

TEST(RaftPaperTest, FollowerStartElection_5_2) {
  CheckNonleaderStartElection(StateType::kFollower);
}
TEST(RaftPaperTest, CandidateStartNewElection_5_2) {
  CheckNonleaderStartElection(StateType::kCandidate);
}

// §5.2: "A candidate wins an election if it receives votes from a majority
// of the servers in the full cluster for the same term." ... "If the
// election timeout elapses without a winner, the candidate remains a
// candidate (in our case until the next timeout)."
TEST(RaftPaperTest, LeaderElectionInOneRoundRPC_5_2) {
  struct Case {
    size_t size;
    std::map<uint64_t, bool> votes;
    StateType want;
  } cases[] = {
      // win the election when receiving votes from a majority of the servers
      {1, {}, StateType::kLeader},
      {3, {{2, true}, {3, true}}, StateType::kLeader},
      {3, {{2, true}}, StateType::kLeader},
      {5, {{2, true}, {3, true}, {4, true}, {5, true}}, StateType::kLeader},
      {5, {{2, true}, {3, true}, {4, true}}, StateType::kLeader},
      {5, {{2, true}, {3, true}}, StateType::kLeader},
      // return to follower state if it receives a majority of rejections
      {3, {{2, false}, {3, false}}, StateType::kFollower},
      {5,
       {{2, false}, {3, false}, {4, false}, {5, false}},
       StateType::kFollower},
      {5,
       {{2, true}, {3, false}, {4, false}, {5, false}},
       StateType::kFollower},
      // stay in candidate if it does not obtain the majority
      {3, {}, StateType::kCandidate},
      {5, {{2, true}}, StateType::kCandidate},
      {5, {{2, false}, {3, false}}, StateType::kCandidate},
      {5, {}, StateType::kCandidate},
  };
  for (const auto& tc : cases) {
    std::vector<uint64_t> ids;
    for (size_t i = 1; i <= tc.size; ++i) ids.push_back(i);
    auto s = NewStorage(ids);
    auto r = NewRaft(1, 10, 1, s.get());
    ASSERT_TRUE(r->Step(Msg(1, 1, raftpb::MsgHup)).ok());
    for (const auto& [id, granted] : tc.votes) {
      raftpb::Message m = Msg(id, 1, raftpb::MsgVoteResp, r->term);
      m.set_reject(!granted);
      ASSERT_TRUE(r->Step(m).ok());
    }
    EXPECT_EQ(r->state, tc.want) << "size " << tc.size;
    EXPECT_EQ(r->term, 1u);
  }
}

// §5.2: "Each server will vote for at most one candidate in a given term, on
// a first-come-first-served basis."
TEST(RaftPaperTest, FollowerVote_5_2) {
  struct Case {
    uint64_t vote, nvote;
    bool reject;
  } cases[] = {
      {kNone, 2, false}, {kNone, 3, false}, {2, 2, false},
      {3, 3, false},     {2, 3, true},      {3, 2, true},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2, 3});
    auto r = NewRaft(1, 10, 1, s.get());
    r->term = 1;
    r->vote = tc.vote;
    ASSERT_TRUE(r->Step(Msg(tc.nvote, 1, raftpb::MsgVote, 1)).ok());
    auto msgs = r->TakeMessages();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].type(), raftpb::MsgVoteResp);
    EXPECT_EQ(msgs[0].to(), tc.nvote);
    EXPECT_EQ(msgs[0].reject(), tc.reject)
        << "vote " << tc.vote << " nvote " << tc.nvote;
  }
}

// §5.2: "While waiting for votes, a candidate may receive an AppendEntries
// RPC from another server claiming to be leader. If the leader's term is at
// least as large as the candidate's current term, then the candidate
// recognizes the leader as legitimate and returns to follower state."
TEST(RaftPaperTest, CandidateFallback_5_2) {
  for (uint64_t term : {1u, 2u}) {
    auto s = NewStorage({1, 2, 3});
    auto r = NewRaft(1, 10, 1, s.get());
    ASSERT_TRUE(r->Step(Msg(1, 1, raftpb::MsgHup)).ok());
    ASSERT_EQ(r->state, StateType::kCandidate);
    ASSERT_TRUE(r->Step(Msg(2, 1, raftpb::MsgApp, term)).ok());
    EXPECT_EQ(r->state, StateType::kFollower);
    EXPECT_EQ(r->term, term);
    EXPECT_EQ(r->lead, 2u);
  }
}

// §5.2: "Raft uses randomized election timeouts ... election timeouts are
// chosen randomly from a fixed interval."
void CheckElectionTimeoutRandomized(StateType st) {
  int et = 10;
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, et, 1, s.get());
  std::set<int> timeouts;
  for (int round = 0; round < 50 * et; ++round) {
    if (st == StateType::kFollower) r->BecomeFollower(r->term + 1, 2);
    if (st == StateType::kCandidate) r->BecomeCandidate();
    r->TakeMessages();
    int time = 0;
    while (r->TakeMessages().empty()) {
      r->Tick();
      ++time;
    }
    timeouts.insert(time);
  }
  for (int d = et; d < 2 * et; ++d) {
    EXPECT_TRUE(timeouts.count(d)) << "timeout " << d << " never drawn";
  }
  EXPECT_EQ(*timeouts.begin(), et);
  EXPECT_EQ(*timeouts.rbegin(), 2 * et - 1);
}

TEST(RaftPaperTest, FollowerElectionTimeoutRandomized_5_2) {
  CheckElectionTimeoutRandomized(StateType::kFollower);
}
TEST(RaftPaperTest, CandidateElectionTimeoutRandomized_5_2) {
  CheckElectionTimeoutRandomized(StateType::kCandidate);
}

// §5.2: "in most cases only a single server (follower or candidate) will
// time out."
void CheckElectionTimeoutNonconflict(StateType st) {
  int et = 10;
  size_t size = 5;
  int conflicts = 0;
  const int rounds = 1000;
  std::vector<std::unique_ptr<MemoryStorage>> storages;
  std::vector<std::unique_ptr<Raft>> rs;
  for (uint64_t i = 1; i <= size; ++i) {
    storages.push_back(NewStorage({1, 2, 3, 4, 5}));
    rs.push_back(NewRaft(i, et, 1, storages.back().get(),
                         [](Config& c) { c.random_seed = 7; }));
  }
  for (int round = 0; round < rounds; ++round) {
    for (auto& r : rs) {
      if (st == StateType::kFollower) r->BecomeFollower(r->term + 1, kNone);
      if (st == StateType::kCandidate) r->BecomeCandidate();
      r->TakeMessages();
    }
    int timeout_num = 0;
    while (timeout_num == 0) {
      for (auto& r : rs) {
        r->Tick();
        if (!r->TakeMessages().empty()) ++timeout_num;
      }
    }
    if (timeout_num > 1) ++conflicts;
  }
  double p = static_cast<double>(conflicts) / rounds;
  EXPECT_LE(p, 0.3) << "probability of conflicts";
}

TEST(RaftPaperTest, FollowersElectionTimeoutNonconflict_5_2) {
  CheckElectionTimeoutNonconflict(StateType::kFollower);
}
TEST(RaftPaperTest, CandidatesElectionTimeoutNonconflict_5_2) {
  CheckElectionTimeoutNonconflict(StateType::kCandidate);
}

// §5.3: "The leader appends the command to its log as a new entry, then
// issues AppendEntries RPCs in parallel to each of the other servers to
// replicate the entry." Also: "When sending an AppendEntries RPC, the leader
// includes the index and term of the entry in its log that immediately
// precedes the new entries."
TEST(RaftPaperTest, LeaderStartReplication_5_3) {
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get());
  r->BecomeCandidate();
  r->BecomeLeader();
  CommitNoopEntry(r.get(), s.get());
  uint64_t li = r->raft_log.LastIndex();
  ASSERT_TRUE(r->Step(testing::Prop(1, "some data")).ok());
  EXPECT_EQ(r->raft_log.LastIndex(), li + 1);
  EXPECT_EQ(r->raft_log.committed(), li);
  EXPECT_EQ(Describe(r->TakeMessages()),
            (std::vector<std::string>{
                "1->2 MsgApp Term:1 Log:1/1 Commit:1 Entries:[1/2 "
                "EntryNormal \"some data\"]",
                "1->3 MsgApp Term:1 Log:1/1 Commit:1 Entries:[1/2 "
                "EntryNormal \"some data\"]"}));
  EXPECT_EQ(DescribeEntries(r->raft_log.UnstableEntries()),
            "[1/2 EntryNormal \"some data\"]");
}

// §5.3: "A log entry is committed once the leader that created the entry has
// replicated it on a majority of the servers." and "The leader keeps track
// of the highest index it knows to be committed, and it includes that index
// in future AppendEntries RPCs (including heartbeats) so that the other
// servers eventually find out."
TEST(RaftPaperTest, LeaderCommitEntry_5_3) {
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get());
  r->BecomeCandidate();
  r->BecomeLeader();
  CommitNoopEntry(r.get(), s.get());
  uint64_t li = r->raft_log.LastIndex();
  ASSERT_TRUE(r->Step(testing::Prop(1, "some data")).ok());
  for (const auto& m : r->TakeMessages()) {
    ASSERT_TRUE(r->Step(AcceptAndReply(m)).ok());
  }
  EXPECT_EQ(r->raft_log.committed(), li + 1);
  EXPECT_EQ(DescribeEntries(PersistAndApply(r.get(), s.get())),
            "[1/2 EntryNormal \"some data\"]");
  auto msgs = SortedMsgs(r->TakeMessages());
  ASSERT_EQ(msgs.size(), 2u);
  for (size_t i = 0; i < msgs.size(); ++i) {
    EXPECT_EQ(msgs[i].to(), i + 2);
    EXPECT_EQ(msgs[i].type(), raftpb::MsgApp);
    EXPECT_EQ(msgs[i].commit(), li + 1);
  }
}

// §5.3: "A log entry is committed once the leader that created the entry has
// replicated it on a majority of the servers."
TEST(RaftPaperTest, LeaderAcknowledgeCommit_5_3) {
  struct Case {
    size_t size;
    std::set<uint64_t> acceptors;
    bool want_ack;
  } cases[] = {
      {1, {}, true},     {3, {}, false},       {3, {2}, true},
      {3, {2, 3}, true}, {5, {}, false},       {5, {2}, false},
      {5, {2, 3}, true}, {5, {2, 3, 4}, true}, {5, {2, 3, 4, 5}, true},
  };
  for (const auto& tc : cases) {
    std::vector<uint64_t> ids;
    for (size_t i = 1; i <= tc.size; ++i) ids.push_back(i);
    auto s = NewStorage(ids);
    auto r = NewRaft(1, 10, 1, s.get());
    r->BecomeCandidate();
    r->BecomeLeader();
    CommitNoopEntry(r.get(), s.get());
    uint64_t li = r->raft_log.LastIndex();
    ASSERT_TRUE(r->Step(testing::Prop(1, "some data")).ok());
    for (const auto& m : r->TakeMessages()) {
      if (tc.acceptors.count(m.to())) {
        ASSERT_TRUE(r->Step(AcceptAndReply(m)).ok());
      }
    }
    EXPECT_EQ(r->raft_log.committed() > li, tc.want_ack)
        << "size " << tc.size << " acceptors " << tc.acceptors.size();
  }
}

// §5.3: "When the leader commits an entry, it also commits all preceding
// entries in the leader's log, including entries created by previous
// leaders." Also: the leader commits an entry of its term first (§5.4.2).
TEST(RaftPaperTest, LeaderCommitPrecedingEntries_5_3) {
  std::vector<EntryVec> cases = {
      {},
      {Ent(2, 1)},
      {Ent(1, 1), Ent(2, 2)},
      {Ent(1, 1)},
  };
  for (const auto& tt : cases) {
    auto s = NewStorage({1, 2, 3});
    ASSERT_TRUE(s->Append(tt).ok());
    auto r = NewRaft(1, 10, 1, s.get());
    r->term = 2;
    r->BecomeCandidate();
    r->BecomeLeader();
    ASSERT_TRUE(r->Step(testing::Prop(1, "some data")).ok());
    for (const auto& m : r->TakeMessages()) {
      ASSERT_TRUE(r->Step(AcceptAndReply(m)).ok());
    }
    uint64_t li = tt.size();
    EntryVec want = tt;
    want.push_back(Ent(3, li + 1));
    want.push_back(Ent(3, li + 2, "some data"));
    EXPECT_EQ(DescribeEntries(PersistAndApply(r.get(), s.get())),
              DescribeEntries(want));
  }
}

// §5.3: "Once a follower learns that a log entry is committed, it applies
// the entry to its local state machine (in log order)."
TEST(RaftPaperTest, FollowerCommitEntry_5_3) {
  struct Case {
    EntryVec ents;
    uint64_t commit;
  } cases[] = {
      {{Ent(1, 1, "some data")}, 1},
      {{Ent(1, 1, "some data"), Ent(1, 2, "some data2")}, 2},
      {{Ent(1, 1, "some data2"), Ent(1, 2, "some data")}, 2},
      {{Ent(1, 1, "some data"), Ent(1, 2, "some data2")}, 1},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2, 3});
    auto r = NewRaft(1, 10, 1, s.get());
    r->BecomeFollower(1, 2);
    raftpb::Message m = Msg(2, 1, raftpb::MsgApp, 1);
    m.set_commit(tc.commit);
    for (const auto& e : tc.ents) *m.add_entries() = e;
    ASSERT_TRUE(r->Step(m).ok());
    EXPECT_EQ(r->raft_log.committed(), tc.commit);
    EntryVec want(tc.ents.begin(), tc.ents.begin() + tc.commit);
    EXPECT_EQ(DescribeEntries(PersistAndApply(r.get(), s.get())),
              DescribeEntries(want));
  }
}

// §5.3: "When sending an AppendEntries RPC, the leader includes the index
// and term of the entry in its log that immediately precedes the new
// entries. If the follower does not find an entry in its log with the same
// index and term, then it refuses the new entries."
TEST(RaftPaperTest, FollowerCheckMsgApp_5_3) {
  EntryVec ents = {Ent(1, 1), Ent(2, 2)};
  struct Case {
    uint64_t term, index, windex;
    bool wreject;
    uint64_t wreject_hint, wlogterm;
  } cases[] = {
      // match with committed entries
      {0, 0, 1, false, 0, 0},
      {ents[0].term(), ents[0].index(), 1, false, 0, 0},
      // match with uncommitted entries
      {ents[1].term(), ents[1].index(), 2, false, 0, 0},
      // unmatch with existing entry
      {ents[0].term(), ents[1].index(), ents[1].index(), true, 1, 1},
      // unexisting entry
      {ents[1].term() + 1, ents[1].index() + 1, ents[1].index() + 1, true, 2,
       2},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2, 3});
    ASSERT_TRUE(s->Append(ents).ok());
    auto r = NewRaft(1, 10, 1, s.get());
    raftpb::HardState hs;
    r->raft_log.CommitTo(1);
    r->BecomeFollower(2, 2);
    raftpb::Message m = Msg(2, 1, raftpb::MsgApp, 2);
    m.set_logterm(tc.term);
    m.set_index(tc.index);
    ASSERT_TRUE(r->Step(m).ok());
    auto msgs = r->TakeMessages();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].type(), raftpb::MsgAppResp);
    EXPECT_EQ(msgs[0].index(), tc.windex);
    EXPECT_EQ(msgs[0].reject(), tc.wreject);
    EXPECT_EQ(msgs[0].rejecthint(), tc.wreject_hint);
    EXPECT_EQ(msgs[0].logterm(), tc.wlogterm);
  }
}

// §5.3: "If an existing entry conflicts with a new one (same index but
// different terms), delete the existing entry and all that follow it; append
// any new entries not already in the log."
TEST(RaftPaperTest, FollowerAppendEntries_5_3) {
  struct Case {
    uint64_t index, term;
    EntryVec ents, wents, wunstable;
  } cases[] = {
      {2, 2, {Ent(3, 3)}, {Ent(1, 1), Ent(2, 2), Ent(3, 3)}, {Ent(3, 3)}},
      {1,
       1,
       {Ent(3, 2), Ent(4, 3)},
       {Ent(1, 1), Ent(3, 2), Ent(4, 3)},
       {Ent(3, 2), Ent(4, 3)}},
      {0, 0, {Ent(1, 1)}, {Ent(1, 1), Ent(2, 2)}, {}},
      {0, 0, {Ent(3, 1)}, {Ent(3, 1)}, {Ent(3, 1)}},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2, 3});
    ASSERT_TRUE(s->Append({Ent(1, 1), Ent(2, 2)}).ok());
    auto r = NewRaft(1, 10, 1, s.get());
    r->BecomeFollower(2, 2);
    raftpb::Message m = Msg(2, 1, raftpb::MsgApp, 2);
    m.set_logterm(tc.term);
    m.set_index(tc.index);
    for (const auto& e : tc.ents) *m.add_entries() = e;
    ASSERT_TRUE(r->Step(m).ok());
    EXPECT_EQ(DescribeEntries(r->raft_log.AllEntries()),
              DescribeEntries(tc.wents));
    EXPECT_EQ(DescribeEntries(r->raft_log.UnstableEntries()),
              DescribeEntries(tc.wunstable));
  }
}

// §5.3, Figure 7: "the leader handles inconsistencies by forcing the
// followers' logs to duplicate its own." Any of the follower logs (a)-(f) of
// Figure 7 is brought in line with the leader's.
TEST(RaftPaperTest, LeaderSyncFollowerLog_5_3_Figure7) {
  auto terms_to_ents = [](std::vector<uint64_t> terms) {
    EntryVec out;
    for (size_t i = 0; i < terms.size(); ++i) {
      out.push_back(Ent(terms[i], i + 1));
    }
    return out;
  };
  EntryVec leader_ents = terms_to_ents({1, 1, 1, 4, 4, 5, 5, 6, 6, 6});
  uint64_t term = 8;
  std::vector<EntryVec> followers = {
      terms_to_ents({1, 1, 1, 4, 4, 5, 5, 6, 6}),
      terms_to_ents({1, 1, 1, 4}),
      terms_to_ents({1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6}),
      terms_to_ents({1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7}),
      terms_to_ents({1, 1, 1, 4, 4, 4, 4}),
      terms_to_ents({1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3}),
  };
  for (const auto& fents : followers) {
    std::vector<std::unique_ptr<MemoryStorage>> storages;
    std::vector<std::unique_ptr<Raft>> rafts;
    // Leader 1.
    storages.push_back(NewStorage({1, 2, 3}));
    ASSERT_TRUE(storages[0]->Append(leader_ents).ok());
    raftpb::HardState lhs;
    lhs.set_commit(leader_ents.size());
    lhs.set_term(term);
    storages[0]->SetHardState(lhs);
    rafts.push_back(NewRaft(1, 10, 1, storages[0].get()));
    // Follower 2.
    storages.push_back(NewStorage({1, 2, 3}));
    ASSERT_TRUE(storages[1]->Append(fents).ok());
    raftpb::HardState fhs;
    fhs.set_term(term - 1);
    storages[1]->SetHardState(fhs);
    rafts.push_back(NewRaft(2, 10, 1, storages[1].get()));
    rafts.push_back(nullptr);  // 3: black hole
    Network n(std::move(rafts), std::move(storages), nullptr, {3});
    // It is necessary to have a three-node cluster: the second vote may come
    // from the black hole's absence, i.e. the leader needs follower 2.
    n.Send(Msg(1, 1, raftpb::MsgHup));
    // The election may need the follower's vote, granted since the leader's
    // log is more up-to-date.
    raftpb::Message resp = Msg(3, 1, raftpb::MsgVoteResp, term + 1);
    n.Send(resp);
    ASSERT_EQ(n.peer(1)->state, StateType::kLeader);
    n.Send(testing::Prop(1, ""));
    EXPECT_EQ(DescribeEntries(n.peer(1)->raft_log.AllEntries()),
              DescribeEntries(n.peer(2)->raft_log.AllEntries()));
  }
}

// §5.4.1: "The RequestVote RPC implements this restriction: the RPC includes
// information about the candidate's log, and the voter denies its vote if
// its own log is more up-to-date than that of the candidate."
TEST(RaftPaperTest, VoteRequest_5_4_1) {
  struct Case {
    EntryVec ents;
    uint64_t wterm;
  } cases[] = {
      {{Ent(1, 1)}, 2},
      {{Ent(1, 1), Ent(2, 2)}, 3},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2, 3});
    auto r = NewRaft(1, 10, 1, s.get());
    raftpb::Message m = Msg(2, 1, raftpb::MsgApp, tc.wterm - 1);
    m.set_logterm(0);
    m.set_index(0);
    for (const auto& e : tc.ents) *m.add_entries() = e;
    ASSERT_TRUE(r->Step(m).ok());
    r->TakeMessages();
    for (int i = 1; i < r->election_timeout * 2; ++i) r->Tick();
    auto msgs = SortedMsgs(r->TakeMessages());
    ASSERT_EQ(msgs.size(), 2u);
    for (size_t i = 0; i < msgs.size(); ++i) {
      EXPECT_EQ(msgs[i].type(), raftpb::MsgVote);
      EXPECT_EQ(msgs[i].to(), i + 2);
      EXPECT_EQ(msgs[i].term(), tc.wterm);
      EXPECT_EQ(msgs[i].index(), tc.ents.back().index());
      EXPECT_EQ(msgs[i].logterm(), tc.ents.back().term());
    }
  }
}

// §5.4.1: "If the logs have last entries with different terms, then the log
// with the later term is more up-to-date. If the logs end with the same
// term, then whichever log is longer is more up-to-date."
TEST(RaftPaperTest, Voter_5_4_1) {
  struct Case {
    EntryVec ents;
    uint64_t logterm, index;
    bool wreject;
  } cases[] = {
      // same logterm
      {{Ent(1, 1)}, 1, 1, false},
      {{Ent(1, 1)}, 1, 2, false},
      {{Ent(1, 1), Ent(1, 2)}, 1, 1, true},
      // candidate higher logterm
      {{Ent(1, 1)}, 2, 1, false},
      {{Ent(1, 1)}, 2, 2, false},
      {{Ent(1, 1), Ent(1, 2)}, 2, 1, false},
      // voter higher logterm
      {{Ent(2, 1)}, 1, 1, true},
      {{Ent(2, 1)}, 1, 2, true},
      {{Ent(2, 1), Ent(1, 2)}, 1, 1, true},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2});
    ASSERT_TRUE(s->Append(tc.ents).ok());
    auto r = NewRaft(1, 10, 1, s.get());
    raftpb::Message m = Msg(2, 1, raftpb::MsgVote, 3);
    m.set_logterm(tc.logterm);
    m.set_index(tc.index);
    ASSERT_TRUE(r->Step(m).ok());
    auto msgs = r->TakeMessages();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].type(), raftpb::MsgVoteResp);
    EXPECT_EQ(msgs[0].reject(), tc.wreject);
  }
}

// §5.4.2: "Raft never commits log entries from previous terms by counting
// replicas. Only log entries from the leader's current term are committed by
// counting replicas; once an entry from the current term has been committed
// in this way, then all prior entries are committed indirectly because of
// the Log Matching Property."
TEST(RaftPaperTest, LeaderOnlyCommitsLogFromCurrentTerm_5_4_2) {
  EntryVec ents = {Ent(1, 1), Ent(2, 2)};
  struct Case {
    uint64_t index, wcommit;
  } cases[] = {
      // do not commit log entries in previous terms
      {1, 0},
      {2, 0},
      // commit log in current term
      {3, 3},
  };
  for (const auto& tc : cases) {
    auto s = NewStorage({1, 2});
    ASSERT_TRUE(s->Append(ents).ok());
    raftpb::HardState hs;
    hs.set_term(2);
    s->SetHardState(hs);
    auto r = NewRaft(1, 10, 1, s.get());
    // Become leader at term 3.
    r->BecomeCandidate();
    r->BecomeLeader();
    r->TakeMessages();
    // Propose an entry to the current term.
    ASSERT_TRUE(r->Step(testing::Prop(1, "")).ok());
    raftpb::Message m = Msg(2, 1, raftpb::MsgAppResp, r->term);
    m.set_index(tc.index);
    ASSERT_TRUE(r->Step(m).ok());
    EXPECT_EQ(r->raft_log.committed(), tc.wcommit) << "index " << tc.index;
  }
}

}  // namespace
}  // namespace kplane::raft
