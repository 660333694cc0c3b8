// Unit tests of the raft core's parts (storage, log, flow control, quorums,
// conf changes) and of the features beyond the paper's basic algorithm
// (pre-vote, check-quorum, ReadIndex, leadership transfer, snapshots,
// learners, proposal limits) and of RawNode's Ready contract.
#include <memory>

#include "gtest/gtest.h"
#include "storage/raft/confchange.h"
#include "storage/raft/raft.h"
#include "storage/raft/raft_log.h"
#include "storage/raft/raft_test_util.h"
#include "storage/raft/raw_node.h"
#include "storage/raft/tracker.h"

namespace kplane::raft {
namespace {

using testing::Ent;
using testing::Msg;
using testing::Network;
using testing::NewRaft;
using testing::NewStorage;
using testing::Prop;

// ---------------------------------------------------------------- storage

TEST(MemoryStorageTest, TermEntriesAndCompaction) {
  MemoryStorage s;
  raftpb::Snapshot snap;
  snap.mutable_metadata()->set_index(3);
  snap.mutable_metadata()->set_term(3);
  ASSERT_TRUE(s.ApplySnapshot(snap).ok());
  ASSERT_TRUE(s.Append({Ent(4, 4), Ent(5, 5), Ent(5, 6)}).ok());
  EXPECT_EQ(*s.FirstIndex(), 4u);
  EXPECT_EQ(*s.LastIndex(), 6u);
  EXPECT_EQ(*s.Term(3), 3u);  // the dummy entry keeps the snapshot's term
  EXPECT_TRUE(s.Term(2).status().Is(StatusCode::kCompacted));
  EXPECT_TRUE(s.Term(7).status().Is(StatusCode::kUnavailable));
  EXPECT_TRUE(s.Entries(3, 5, kNoLimit).status().Is(StatusCode::kCompacted));
  EXPECT_EQ(s.Entries(4, 7, kNoLimit)->size(), 3u);
  // A size limit still returns at least one entry.
  EXPECT_EQ(s.Entries(4, 7, 0)->size(), 1u);
  ASSERT_TRUE(s.Compact(5).ok());
  EXPECT_EQ(*s.FirstIndex(), 6u);
  EXPECT_EQ(*s.Term(5), 5u);
  EXPECT_TRUE(s.Compact(4).Is(StatusCode::kCompacted));
  // Appending over a conflict truncates the suffix.
  ASSERT_TRUE(s.Append({Ent(6, 6), Ent(6, 7)}).ok());
  EXPECT_EQ(*s.LastIndex(), 7u);
  EXPECT_EQ(*s.Term(6), 6u);
  // Entries below the compaction point are skipped.
  ASSERT_TRUE(s.Append({Ent(5, 5), Ent(6, 6)}).ok());
  EXPECT_EQ(*s.LastIndex(), 6u);
}

TEST(MemoryStorageTest, SnapshotsMustMoveForward) {
  MemoryStorage s;
  ASSERT_TRUE(s.Append({Ent(1, 1), Ent(1, 2), Ent(2, 3)}).ok());
  raftpb::ConfState cs = testing::Voters({1, 2});
  auto snap = s.CreateSnapshot(2, &cs, "state");
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->metadata().term(), 1u);
  EXPECT_EQ(snap->data(), "state");
  EXPECT_FALSE(s.CreateSnapshot(2, &cs, "").ok());
  raftpb::Snapshot old;
  old.mutable_metadata()->set_index(1);
  EXPECT_FALSE(s.ApplySnapshot(old).ok());
  EXPECT_EQ(s.InitialState()->conf_state.voters_size(), 2);
}

// ---------------------------------------------------------------- log

TEST(RaftLogTest, MaybeAppendTruncatesConflictsAndCommits) {
  auto s = NewStorage({1});
  ASSERT_TRUE(s->Append({Ent(1, 1), Ent(2, 2), Ent(3, 3)}).ok());
  RaftLog log(s.get(), kNoLimit);
  log.CommitTo(1);
  // Mismatching prev term: refused.
  EntryVec ents = {Ent(4, 4)};
  EXPECT_FALSE(log.MaybeAppend(3, 2, 3, ents.data(), ents.data() + 1));
  // Conflict at 3: replaced, commit follows min(leader commit, last new).
  ents = {Ent(4, 3), Ent(4, 4)};
  auto last = log.MaybeAppend(2, 2, 10, ents.data(), ents.data() + 2);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(*last, 4u);
  EXPECT_EQ(log.committed(), 4u);
  EXPECT_EQ(log.TermOrZero(3), 4u);
  EXPECT_EQ(DescribeEntries(log.UnstableEntries()),
            "[4/3 EntryNormal, 4/4 EntryNormal]");
}

TEST(RaftLogTest, FindConflictByTermSkipsDivergentTail) {
  auto s = NewStorage({1});
  ASSERT_TRUE(
      s->Append({Ent(1, 1), Ent(1, 2), Ent(4, 3), Ent(4, 4), Ent(5, 5)}).ok());
  RaftLog log(s.get(), kNoLimit);
  EXPECT_EQ(log.FindConflictByTerm(5, 3), std::make_pair(2ul, 1ul));
  EXPECT_EQ(log.FindConflictByTerm(5, 4), std::make_pair(4ul, 4ul));
  EXPECT_EQ(log.FindConflictByTerm(5, 9), std::make_pair(5ul, 5ul));
  EXPECT_EQ(log.FindConflictByTerm(5, 0), std::make_pair(0ul, 0ul));
}

TEST(RaftLogTest, StableToIgnoresOverwrittenEntries) {
  auto s = NewStorage({1});
  RaftLog log(s.get(), kNoLimit);
  EntryVec a = {Ent(1, 1), Ent(1, 2)};
  log.Append(a.data(), a.data() + 2);
  // While (1/1, 1/2) are being persisted, a new leader overwrites index 2.
  EntryVec b = {Ent(2, 2)};
  log.Append(b.data(), b.data() + 1);
  log.StableTo(2, 1);
  EXPECT_EQ(DescribeEntries(log.UnstableEntries()),
            "[1/1 EntryNormal, 2/2 EntryNormal]");
  log.StableTo(2, 2);
  EXPECT_TRUE(log.UnstableEntries().empty());
}

TEST(RaftLogTest, NextCommittedEntriesRespectsSizeLimit) {
  auto s = NewStorage({1});
  EntryVec ents;
  for (uint64_t i = 1; i <= 10; ++i) ents.push_back(Ent(1, i, "0123456789"));
  ASSERT_TRUE(s->Append(ents).ok());
  RaftLog log(s.get(), 3 * EntrySize(ents[0]));
  log.CommitTo(10);
  EXPECT_EQ(log.NextCommittedEntries().size(), 3u);
  log.AppliedTo(3);
  EXPECT_EQ(log.NextCommittedEntries().front().index(), 4u);
  log.AppliedTo(10);
  EXPECT_FALSE(log.HasNextCommittedEntries());
}

// ---------------------------------------------------------------- tracker

TEST(InflightsTest, CountAndByteLimits) {
  Inflights in(3, 100);
  in.Add(5, 40);
  in.Add(8, 40);
  EXPECT_FALSE(in.Full());
  in.Add(9, 30);  // 110 bytes >= 100
  EXPECT_TRUE(in.Full());
  in.FreeLE(8);
  EXPECT_EQ(in.Count(), 1u);
  EXPECT_EQ(in.Bytes(), 30u);
  EXPECT_FALSE(in.Full());
  // Wraps around the ring.
  in.Add(10, 1);
  in.Add(11, 1);
  EXPECT_TRUE(in.Full());
  in.FreeLE(100);
  EXPECT_EQ(in.Count(), 0u);
}

TEST(ProgressTest, ProbeAndReplicateDecrements) {
  Progress p(10, 0);
  p.match = 5;
  p.next = 10;
  // Probe: only a rejection of next-1 counts; the hint jumps back.
  EXPECT_FALSE(p.MaybeDecrTo(7, 6));
  EXPECT_TRUE(p.MaybeDecrTo(9, 6));
  EXPECT_EQ(p.next, 7u);
  // Never below match+1.
  p.next = 10;
  EXPECT_TRUE(p.MaybeDecrTo(9, 1));
  EXPECT_EQ(p.next, 6u);
  p.BecomeReplicate();
  EXPECT_EQ(p.next, 6u);
  EXPECT_FALSE(p.MaybeDecrTo(5, 5));  // stale: already matched
  EXPECT_TRUE(p.MaybeDecrTo(8, 2));
  EXPECT_EQ(p.next, 6u);
  // After a snapshot, probing resumes past it.
  p.BecomeSnapshot(20);
  EXPECT_TRUE(p.IsPaused());
  p.BecomeProbe();
  EXPECT_EQ(p.next, 21u);
}

TEST(QuorumTest, MajorityAndJointCommittedIndex) {
  std::map<uint64_t, uint64_t> acked = {{1, 7}, {2, 5}, {3, 9}, {4, 1}};
  auto fn = [&](uint64_t id, bool* found) -> uint64_t {
    auto it = acked.find(id);
    *found = it != acked.end();
    return *found ? it->second : 0;
  };
  EXPECT_EQ(MajorityConfig({1, 2, 3}).CommittedIndex(fn), 7u);
  EXPECT_EQ(MajorityConfig({1, 2, 3, 4}).CommittedIndex(fn), 5u);
  EXPECT_EQ(MajorityConfig({1, 2, 3, 5}).CommittedIndex(fn), 5u);
  EXPECT_EQ(MajorityConfig().CommittedIndex(fn), UINT64_MAX);
  JointConfig j{MajorityConfig({1, 3}), MajorityConfig({2, 4})};
  EXPECT_EQ(j.CommittedIndex(fn), 1u);  // min(7, 1)
}

TEST(QuorumTest, VoteResults) {
  MajorityConfig c({1, 2, 3});
  EXPECT_EQ(c.Vote({{1, true}}), VoteResult::kPending);
  EXPECT_EQ(c.Vote({{1, true}, {2, true}}), VoteResult::kWon);
  EXPECT_EQ(c.Vote({{1, false}, {2, false}}), VoteResult::kLost);
  JointConfig j{MajorityConfig({1, 2, 3}), MajorityConfig({3, 4, 5})};
  EXPECT_EQ(j.Vote({{1, true}, {2, true}}), VoteResult::kPending);
  EXPECT_EQ(j.Vote({{1, true}, {2, true}, {4, true}, {5, true}}),
            VoteResult::kWon);
  EXPECT_EQ(j.Vote({{4, false}, {5, false}, {1, true}, {2, true}}),
            VoteResult::kLost);
}

// ---------------------------------------------------------------- confchange

raftpb::ConfChangeSingle CC(raftpb::ConfChangeType t, uint64_t id) {
  raftpb::ConfChangeSingle c;
  c.set_type(t);
  c.set_node_id(id);
  return c;
}

TEST(ConfChangeTest, SimpleAllowsOneVoterChange) {
  ProgressTracker trk(10, 0);
  auto r = Changer(trk, 10).Simple({CC(raftpb::ConfChangeAddNode, 1)});
  ASSERT_TRUE(r.ok());
  trk.config = r->config;
  trk.progress = r->progress;
  r = Changer(trk, 10).Simple(
      {CC(raftpb::ConfChangeAddNode, 2), CC(raftpb::ConfChangeAddNode, 3)});
  EXPECT_FALSE(r.ok());
  r = Changer(trk, 10).Simple({CC(raftpb::ConfChangeAddNode, 2),
                               CC(raftpb::ConfChangeAddLearnerNode, 3)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->config.DebugString(), "voters=(1 2) learners=(3)");
  EXPECT_TRUE(r->progress.at(3).is_learner);
  EXPECT_FALSE(Changer(trk, 10)
                   .Simple({CC(raftpb::ConfChangeRemoveNode, 1)})
                   .ok());  // removed all voters
}

TEST(ConfChangeTest, JointConsensusAndLearnersNext) {
  ProgressTracker trk(10, 0);
  auto cp = RestoreConfig(trk, 5, testing::Voters({1, 2, 3}));
  ASSERT_TRUE(cp.ok());
  trk.config = cp->config;
  trk.progress = cp->progress;
  // Demote 3 to learner and add 4 as a voter, jointly.
  auto r =
      Changer(trk, 5).EnterJoint(true, {CC(raftpb::ConfChangeAddLearnerNode, 3),
                                        CC(raftpb::ConfChangeAddNode, 4)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->config.DebugString(),
            "voters=(1 2 4)&&(1 2 3) learners_next=(3) autoleave");
  trk.config = r->config;
  trk.progress = r->progress;
  EXPECT_FALSE(Changer(trk, 5).EnterJoint(false, {}).ok());  // already joint
  // The ConfState round-trips through RestoreConfig.
  auto restored = RestoreConfig(ProgressTracker(10, 0), 5, trk.ConfState());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->config.DebugString(), trk.config.DebugString());
  r = Changer(trk, 5).LeaveJoint();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->config.DebugString(), "voters=(1 2 4) learners=(3)");
  EXPECT_TRUE(r->progress.at(3).is_learner);
}

// ---------------------------------------------------------------- features

void Elect(Network& n, uint64_t id) {
  n.Send(Msg(id, id, raftpb::MsgHup));
  ASSERT_EQ(n.peer(id)->state, StateType::kLeader);
}

TEST(RaftFeatureTest, PreVoteKeepsTermOfPartitionedNode) {
  auto pv = [](Config& c) { c.pre_vote = true; };
  Network n(3, pv);
  Elect(n, 1);
  n.Isolate(3);
  for (int i = 0; i < 5; ++i) n.Send(Msg(3, 3, raftpb::MsgHup));
  EXPECT_EQ(n.peer(3)->term, 1u);
  EXPECT_EQ(n.peer(3)->state, StateType::kPreCandidate);
  n.Recover();
  n.Send(Prop(1));
  EXPECT_EQ(n.peer(1)->state, StateType::kLeader);
  EXPECT_EQ(n.peer(1)->term, 1u);
  EXPECT_EQ(n.peer(3)->state, StateType::kFollower);
}

TEST(RaftFeatureTest, WithoutPreVoteARejoiningNodeDisruptsTheLeader) {
  Network n(3);
  Elect(n, 1);
  n.Isolate(3);
  n.Send(Msg(3, 3, raftpb::MsgHup));
  n.Send(Msg(3, 3, raftpb::MsgHup));
  EXPECT_EQ(n.peer(3)->term, 3u);
  n.Recover();
  // 3's higher term makes everyone step down when it campaigns again.
  n.Send(Msg(3, 3, raftpb::MsgHup));
  EXPECT_NE(n.peer(1)->state, StateType::kLeader);
  EXPECT_GE(n.peer(1)->term, 4u);
}

TEST(RaftFeatureTest, CheckQuorumStepsDownIsolatedLeader) {
  auto cq = [](Config& c) { c.check_quorum = true; };
  Network n(3, cq);
  Elect(n, 1);
  n.Isolate(1);
  Raft* l = n.peer(1);
  for (int i = 0; i < 2 * l->election_timeout + 1; ++i) l->Tick();
  EXPECT_EQ(l->state, StateType::kFollower);
}

TEST(RaftFeatureTest, CheckQuorumLeaseIgnoresDisruptiveVotes) {
  auto cq = [](Config& c) { c.check_quorum = true; };
  Network n(3, cq);
  Elect(n, 1);
  // Follower 2 just heard from the leader: a vote request is ignored.
  raftpb::Message v = Msg(3, 2, raftpb::MsgVote, 5);
  v.set_index(100);
  v.set_logterm(5);
  ASSERT_TRUE(n.peer(2)->Step(v).ok());
  EXPECT_EQ(n.peer(2)->term, 1u);
  EXPECT_TRUE(n.peer(2)->TakeMessages().empty());
  // ... unless it is a leadership transfer.
  v.set_context("CampaignTransfer");
  ASSERT_TRUE(n.peer(2)->Step(v).ok());
  EXPECT_EQ(n.peer(2)->term, 5u);
  EXPECT_EQ(n.peer(2)->vote, 3u);
}

TEST(RaftFeatureTest, ReadIndexWaitsForCurrentTermCommit) {
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get());
  r->BecomeCandidate();
  r->BecomeLeader();
  r->TakeMessages();
  raftpb::Message read = Msg(1, 1, raftpb::MsgReadIndex);
  read.add_entries()->set_data("ctx");
  ASSERT_TRUE(r->Step(read).ok());
  // Nothing of term 1 is committed yet: the read is postponed.
  EXPECT_TRUE(r->read_states.empty());
  EXPECT_EQ(r->pending_read_index_messages.size(), 1u);
  raftpb::Message ack = Msg(2, 1, raftpb::MsgAppResp, 1);
  ack.set_index(1);
  ASSERT_TRUE(r->Step(ack).ok());
  // Committed: the read now goes out with a heartbeat carrying its ctx.
  bool heartbeat = false;
  for (const auto& m : r->TakeMessages()) {
    heartbeat |= m.type() == raftpb::MsgHeartbeat && m.context() == "ctx";
  }
  EXPECT_TRUE(heartbeat);
  raftpb::Message hb = Msg(3, 1, raftpb::MsgHeartbeatResp, 1);
  hb.set_context("ctx");
  ASSERT_TRUE(r->Step(hb).ok());
  ASSERT_EQ(r->read_states.size(), 1u);
  EXPECT_EQ(r->read_states[0].index, 1u);
  EXPECT_EQ(r->read_states[0].request_ctx, "ctx");
}

TEST(RaftFeatureTest, ReadIndexOnFollowerIsForwarded) {
  Network n(3);
  Elect(n, 1);
  raftpb::Message read = Msg(2, 2, raftpb::MsgReadIndex);
  read.add_entries()->set_data("f");
  n.Send(read);
  ASSERT_EQ(n.peer(2)->read_states.size(), 1u);
  EXPECT_EQ(n.peer(2)->read_states[0].index, n.peer(1)->raft_log.committed());
}

TEST(RaftFeatureTest, LeaderTransferToUpToDateFollower) {
  Network n(3);
  Elect(n, 1);
  n.Send(Msg(3, 1, raftpb::MsgTransferLeader));
  EXPECT_EQ(n.peer(3)->state, StateType::kLeader);
  EXPECT_EQ(n.peer(1)->state, StateType::kFollower);
  EXPECT_EQ(n.peer(1)->lead, 3u);
}

// What no leader sends, from a buggy or forged peer, leaves a member
// running: a heartbeat committing past the follower's log commits nothing
// (it aborted the member), and a transfer request forwarded to a member
// that does not lead is dropped (forwarding it on aborted).
TEST(RaftFeatureTest, MessagesNoLeaderSendsLeaveTheMemberRunning) {
  Network n(3);
  Elect(n, 1);
  Raft* follower = n.peer(2);
  const uint64_t last = follower->raft_log.LastIndex();
  const uint64_t committed = follower->raft_log.committed();
  raftpb::Message beat = Msg(1, 2, raftpb::MsgHeartbeat, follower->term);
  beat.set_commit(last + 1000);
  follower->msgs.clear();
  ASSERT_TRUE(follower->Step(beat).ok());
  EXPECT_EQ(follower->raft_log.committed(), committed);
  ASSERT_EQ(follower->msgs.size(), 1u);
  EXPECT_EQ(follower->msgs[0].type(), raftpb::MsgHeartbeatResp);

  follower->msgs.clear();
  ASSERT_TRUE(
      follower->Step(Msg(3, 2, raftpb::MsgTransferLeader, follower->term))
          .ok());
  EXPECT_TRUE(follower->msgs.empty());
  EXPECT_EQ(n.peer(1)->state, StateType::kLeader);
}

TEST(RaftFeatureTest, LeaderTransferToLaggingFollowerCatchesItUpFirst) {
  Network n(3);
  Elect(n, 1);
  n.Isolate(3);
  n.Send(Prop(1));
  n.Recover();
  EXPECT_LT(n.peer(3)->raft_log.LastIndex(), n.peer(1)->raft_log.LastIndex());
  n.Send(Msg(3, 1, raftpb::MsgTransferLeader));
  EXPECT_EQ(n.peer(3)->state, StateType::kLeader);
  // 1's empty entry, the proposal, 3's empty entry of term 2.
  EXPECT_EQ(n.peer(3)->raft_log.LastIndex(), 3u);
  EXPECT_EQ(n.peer(3)->raft_log.LastTerm(), 2u);
}

TEST(RaftFeatureTest, LeaderTransferTimesOutAndProposalsResume) {
  Network n(3);
  Elect(n, 1);
  n.Isolate(3);
  n.Send(Msg(3, 1, raftpb::MsgTransferLeader));
  Raft* l = n.peer(1);
  EXPECT_EQ(l->lead_transferee, 3u);
  EXPECT_TRUE(IsProposalDropped(l->Step(Prop(1))));
  for (int i = 0; i < l->election_timeout; ++i) l->Tick();
  EXPECT_EQ(l->lead_transferee, kNone);
  EXPECT_TRUE(l->Step(Prop(1)).ok());
}

TEST(RaftFeatureTest, LaggingFollowerGetsSnapshot) {
  Network n(3);
  Elect(n, 1);
  n.Isolate(3);
  for (int i = 0; i < 5; ++i) n.Send(Prop(1));
  Raft* l = n.peer(1);
  MemoryStorage* ls = n.storage(1);
  testing::PersistAndApply(l, ls);
  uint64_t applied = l->raft_log.applied();
  raftpb::ConfState cs = l->prs.ConfState();
  ASSERT_TRUE(ls->CreateSnapshot(applied, &cs, "snap").ok());
  ASSERT_TRUE(ls->Compact(applied).ok());
  n.Recover();
  std::vector<raftpb::MessageType> seen;
  n.on_deliver = [&](const raftpb::Message& m) { seen.push_back(m.type()); };
  n.Send(Msg(1, 1, raftpb::MsgBeat));
  EXPECT_NE(std::find(seen.begin(), seen.end(), raftpb::MsgSnap), seen.end());
  ASSERT_TRUE(n.peer(3)->raft_log.HasPendingSnapshot());
  EXPECT_EQ(n.peer(3)->raft_log.committed(), applied);
  EXPECT_EQ(n.peer(3)->raft_log.PendingSnapshot()->data(), "snap");
  EXPECT_EQ(l->prs.progress.at(3).match, applied);
}

TEST(RaftFeatureTest, FlowControlBoundsInflightMessages) {
  auto fc = [](Config& c) {
    c.max_inflight_msgs = 3;
    c.max_size_per_msg = 1;  // one entry per message
  };
  auto s = NewStorage({1, 2});
  auto r = NewRaft(1, 10, 1, s.get(), fc);
  r->BecomeCandidate();
  r->BecomeLeader();
  r->TakeMessages();
  raftpb::Message ack = Msg(2, 1, raftpb::MsgAppResp, 1);
  ack.set_index(1);
  ASSERT_TRUE(r->Step(ack).ok());  // 2 moves to replicate
  r->TakeMessages();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(r->Step(Prop(1)).ok());
  size_t apps = 0;
  for (const auto& m : r->TakeMessages()) {
    apps += m.type() == raftpb::MsgApp && m.entries_size() > 0;
  }
  EXPECT_EQ(apps, 3u);
  EXPECT_TRUE(r->prs.progress.at(2).IsPaused());
  // A heartbeat response with a full window sends one empty MsgApp.
  ASSERT_TRUE(r->Step(Msg(2, 1, raftpb::MsgHeartbeatResp, 1)).ok());
  auto msgs = r->TakeMessages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].type(), raftpb::MsgApp);
  EXPECT_EQ(msgs[0].entries_size(), 0);
  // Acking frees the window and the pipeline refills.
  raftpb::Message ack2 = Msg(2, 1, raftpb::MsgAppResp, 1);
  ack2.set_index(4);
  ASSERT_TRUE(r->Step(ack2).ok());
  apps = 0;
  for (const auto& m : r->TakeMessages()) {
    apps += m.type() == raftpb::MsgApp && m.entries_size() > 0;
  }
  EXPECT_EQ(apps, 3u);
}

TEST(RaftFeatureTest, UncommittedSizeLimitDropsProposals) {
  auto lim = [](Config& c) { c.max_uncommitted_entries_size = 10; };
  auto s = NewStorage({1, 2, 3});
  auto r = NewRaft(1, 10, 1, s.get(), lim);
  r->BecomeCandidate();
  r->BecomeLeader();
  EXPECT_TRUE(r->Step(Prop(1, "12345678")).ok());
  EXPECT_TRUE(IsProposalDropped(r->Step(Prop(1, "12345678"))));
  // Applying frees the quota.
  r->AdvanceApplied(0, 8);
  EXPECT_TRUE(r->Step(Prop(1, "12345678")).ok());
}

TEST(RaftFeatureTest, LearnersNeitherVoteInQuorumNorCampaign) {
  auto s1 = NewStorage({1, 2}, {3});
  auto s3 = NewStorage({1, 2}, {3});
  auto r3 = NewRaft(3, 10, 1, s3.get());
  EXPECT_FALSE(r3->Promotable());
  for (int i = 0; i < 30; ++i) r3->Tick();
  EXPECT_EQ(r3->state, StateType::kFollower);
  EXPECT_TRUE(r3->TakeMessages().empty());
  auto r1 = NewRaft(1, 10, 1, s1.get());
  ASSERT_TRUE(r1->Step(Msg(1, 1, raftpb::MsgHup)).ok());
  // The learner's vote does not count.
  ASSERT_TRUE(r1->Step(Msg(3, 1, raftpb::MsgVoteResp, 1)).ok());
  EXPECT_EQ(r1->state, StateType::kCandidate);
  ASSERT_TRUE(r1->Step(Msg(2, 1, raftpb::MsgVoteResp, 1)).ok());
  EXPECT_EQ(r1->state, StateType::kLeader);
}

TEST(RaftFeatureTest, ProposalForwardingCanBeDisabled) {
  Network n(3);
  Elect(n, 1);
  n.Send(Prop(2, "fwd"));
  EXPECT_EQ(n.peer(1)->raft_log.LastIndex(), 2u);
  n.peer(2)->disable_proposal_forwarding = true;
  EXPECT_TRUE(IsProposalDropped(n.peer(2)->Step(Prop(2))));
}

TEST(RaftFeatureTest, OnlyOneConfChangePendingAtATime) {
  auto s = NewStorage({1});
  auto r = NewRaft(1, 10, 1, s.get());
  r->BecomeCandidate();
  r->BecomeLeader();
  testing::PersistAndApply(r.get(), s.get());
  auto conf_prop = [](uint64_t node) {
    raftpb::ConfChange cc;
    cc.set_type(raftpb::ConfChangeAddNode);
    cc.set_node_id(node);
    raftpb::Message m = Prop(1);
    m.mutable_entries(0)->set_type(raftpb::EntryConfChange);
    m.mutable_entries(0)->set_data(cc.SerializeAsString());
    return m;
  };
  ASSERT_TRUE(r->Step(conf_prop(2)).ok());
  ASSERT_TRUE(r->Step(conf_prop(3)).ok());
  EntryVec ents = r->raft_log.UnstableEntries();
  ASSERT_EQ(ents.size(), 2u);
  EXPECT_EQ(ents[0].type(), raftpb::EntryConfChange);
  // The second became an empty normal entry.
  EXPECT_EQ(ents[1].type(), raftpb::EntryNormal);
  EXPECT_TRUE(ents[1].data().empty());
}

TEST(RaftFeatureTest, RemovedLeaderHandsOverLeadership) {
  Network n(3, [](Config& c) { c.step_down_on_removal = true; });
  Elect(n, 1);
  raftpb::ConfChangeV2 cc;
  auto* c = cc.add_changes();
  c->set_type(raftpb::ConfChangeRemoveNode);
  c->set_node_id(1);
  // Apply the removal on every node (as the application would).
  n.peer(2)->ApplyConfChange(cc);
  n.peer(3)->ApplyConfChange(cc);
  n.peer(1)->ApplyConfChange(cc);
  // The leader sends MsgTimeoutNow to an up-to-date voter and steps down.
  std::vector<raftpb::Message> msgs = n.peer(1)->TakeMessages();
  n.Send(msgs);
  EXPECT_NE(n.peer(1)->state, StateType::kLeader);
  EXPECT_TRUE(n.peer(2)->state == StateType::kLeader ||
              n.peer(3)->state == StateType::kLeader);
}

TEST(RaftFeatureTest, RemovedNodeCampaignsOnlyWhenStrictlyAhead) {
  // Node 3 applied its own removal: config (1 2). Nodes 1 and 2 have not
  // (they still have (1 2 3)) and lack 3's last entry.
  auto s1 = NewStorage({1, 2, 3});
  auto s2 = NewStorage({1, 2, 3});
  auto s3 = NewStorage({1, 2});
  ASSERT_TRUE(s1->Append({Ent(1, 1)}).ok());
  ASSERT_TRUE(s2->Append({Ent(1, 1)}).ok());
  ASSERT_TRUE(s3->Append({Ent(1, 1), Ent(1, 2)}).ok());
  std::vector<std::unique_ptr<Raft>> rafts;
  rafts.push_back(NewRaft(1, 10, 1, s1.get()));
  rafts.push_back(NewRaft(2, 10, 1, s2.get()));
  rafts.push_back(NewRaft(3, 10, 1, s3.get()));
  std::vector<std::unique_ptr<MemoryStorage>> storages;
  storages.push_back(std::move(s1));
  storages.push_back(std::move(s2));
  storages.push_back(std::move(s3));
  Network n(std::move(rafts), std::move(storages));
  EXPECT_FALSE(n.peer(3)->Promotable());
  EXPECT_TRUE(n.peer(3)->RemovedButMayCampaign());
  // 3's log is strictly ahead: it wins (a majority of its config (1 2)) and
  // replicates its entry, which 1 and 2 would otherwise never get.
  n.Send(Msg(3, 3, raftpb::MsgHup));
  EXPECT_EQ(n.peer(3)->state, StateType::kLeader);
  EXPECT_EQ(n.peer(1)->raft_log.LastIndex(), 3u);
  // With equal logs, the strict pre-vote refuses a removed node: it cannot
  // disturb a cluster that has caught up.
  Raft* r1 = n.peer(1);
  r1->BecomeFollower(r1->term + 1, kNone);
  raftpb::Message pv = Msg(3, 1, raftpb::MsgPreVote, r1->term + 1);
  pv.set_index(r1->raft_log.LastIndex());
  pv.set_logterm(r1->raft_log.LastTerm());
  pv.set_context("CampaignRemoved");
  ASSERT_TRUE(r1->Step(pv).ok());
  auto msgs = r1->TakeMessages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_TRUE(msgs[0].reject());
  // A plain pre-vote with the same log would be granted.
  pv.set_context("");
  ASSERT_TRUE(r1->Step(pv).ok());
  msgs = r1->TakeMessages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_FALSE(msgs[0].reject());
}

TEST(RaftFeatureTest, NodeWithEmptyConfigNeverCampaigns) {
  MemoryStorage s;
  auto r = NewRaft(4, 10, 1, &s);
  EXPECT_FALSE(r->Promotable());
  EXPECT_FALSE(r->RemovedButMayCampaign());
  for (int i = 0; i < 50; ++i) r->Tick();
  EXPECT_TRUE(r->TakeMessages().empty());
}

// ---------------------------------------------------------------- RawNode

class RawNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage_ = NewStorage({1});
    Config c = testing::NewConfig(1, 10, 1);
    auto raw = RawNode::Create(c, storage_.get());
    ASSERT_TRUE(raw.ok());
    node_ = std::move(raw).value();
  }

  // Handles one Ready by the classic contract; returns it.
  Ready Handle() {
    Ready rd = node_->GetReady();
    if (!IsEmptySnapshot(rd.snapshot)) {
      EXPECT_TRUE(storage_->ApplySnapshot(rd.snapshot).ok());
    }
    if (!IsEmptyHardState(rd.hard_state)) storage_->SetHardState(rd.hard_state);
    EXPECT_TRUE(storage_->Append(rd.entries).ok());
    node_->Advance();
    return rd;
  }

  std::unique_ptr<MemoryStorage> storage_;
  std::unique_ptr<RawNode> node_;
};

TEST_F(RawNodeTest, ReadyContractSingleNode) {
  EXPECT_FALSE(node_->HasReady());
  ASSERT_TRUE(node_->Campaign().ok());
  ASSERT_TRUE(node_->HasReady());
  Ready rd = Handle();
  // Single voter: leader at once; its empty entry commits in the same Ready.
  ASSERT_TRUE(rd.soft_state.has_value());
  EXPECT_EQ(rd.soft_state->raft_state, StateType::kLeader);
  EXPECT_EQ(rd.hard_state.term(), 1u);
  EXPECT_EQ(rd.hard_state.vote(), 1u);
  EXPECT_TRUE(rd.must_sync);
  EXPECT_EQ(rd.entries.size(), 1u);
  EXPECT_EQ(rd.committed_entries.size(), 1u);
  EXPECT_FALSE(node_->HasReady());
  ASSERT_TRUE(node_->Propose("hello").ok());
  rd = Handle();
  EXPECT_EQ(DescribeEntries(rd.entries), "[1/2 EntryNormal \"hello\"]");
  EXPECT_EQ(DescribeEntries(rd.committed_entries),
            "[1/2 EntryNormal \"hello\"]");
  EXPECT_EQ(node_->GetBasicStatus().applied, 2u);
  // Read index on a singleton is answered at once.
  node_->ReadIndex("r1");
  rd = Handle();
  ASSERT_EQ(rd.read_states.size(), 1u);
  EXPECT_EQ(rd.read_states[0].index, 2u);
  EXPECT_FALSE(rd.must_sync);
}

TEST_F(RawNodeTest, StepRejectsLocalMessagesAndUnknownPeers) {
  EXPECT_TRUE(
      node_->Step(Msg(1, 1, raftpb::MsgHup)).Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      node_->Step(Msg(9, 1, raftpb::MsgAppResp, 1)).Is(StatusCode::kNotFound));
}

TEST_F(RawNodeTest, GetReadyTwiceWithoutAdvanceCrashes) {
  ASSERT_TRUE(node_->Campaign().ok());
  (void)node_->GetReady();
  EXPECT_FALSE(node_->HasReady());
  EXPECT_DEATH((void)node_->GetReady(), "before Advance");
}

TEST_F(RawNodeTest, RestartRecoversFromStorage) {
  ASSERT_TRUE(node_->Campaign().ok());
  Handle();
  ASSERT_TRUE(node_->Propose("a").ok());
  Handle();
  Config c = testing::NewConfig(1, 10, 1);
  c.applied = 2;
  auto restarted = RawNode::Restart(c, storage_.get());
  ASSERT_TRUE(restarted.ok());
  BasicStatus st = (*restarted)->GetBasicStatus();
  EXPECT_EQ(st.hard_state.term(), 1u);
  EXPECT_EQ(st.hard_state.commit(), 2u);
  EXPECT_EQ(st.applied, 2u);
  EXPECT_EQ(st.soft_state.raft_state, StateType::kFollower);
  // Applied beyond the persisted commit (a commit-only hard state was lost):
  // the commit index catches up.
  raftpb::HardState hs = storage_->hard_state();
  hs.set_commit(1);
  storage_->SetHardState(hs);
  auto again = RawNode::Restart(c, storage_.get());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->GetBasicStatus().hard_state.commit(), 2u);
  MemoryStorage empty;
  EXPECT_FALSE(RawNode::Restart(c, &empty).ok());
}

TEST(ConfigTest, ValidateRejectsBadValues) {
  Config c = testing::NewConfig(1, 10, 1);
  EXPECT_TRUE(c.Validate().ok());
  c.id = 0;
  EXPECT_FALSE(c.Validate().ok());
  c = testing::NewConfig(1, 1, 1);
  EXPECT_FALSE(c.Validate().ok());
  c = testing::NewConfig(1, 10, 1);
  c.read_only_option = ReadOnlyOption::kLeaseBased;
  EXPECT_FALSE(c.Validate().ok());
}

}  // namespace
}  // namespace kplane::raft
