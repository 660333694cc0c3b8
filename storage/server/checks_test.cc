// Unit tests of the member's checks: entries and peer messages
// (entry_check.h), hash verdicts (corruption_check.h) and the startup
// checks (bootstrap.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>

#include "storage/server/bootstrap.h"
#include "storage/server/corruption_check.h"
#include "storage/server/entry_check.h"
#include "storage/server/store_server.h"

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;

raftpb::Entry Normal(uint64_t index, std::string data) {
  raftpb::Entry e;
  e.set_type(raftpb::EntryNormal);
  e.set_index(index);
  e.set_term(1);
  e.set_data(std::move(data));
  return e;
}

std::string PutData(const std::string& key) {
  storagepb::InternalRaftRequest r;
  r.set_id(7);
  r.mutable_put()->set_key(key);
  r.mutable_put()->set_value("v");
  return r.SerializeAsString();
}

TEST(EntryCheckTest, NormalEntries) {
  EXPECT_TRUE(CheckEntry(Normal(1, "")).ok()) << "a leader's empty entry";
  EXPECT_TRUE(CheckEntry(Normal(2, PutData("k"))).ok());
  Status garbage = CheckEntry(Normal(3, "\xff\xff\xff\xff garbage"));
  EXPECT_TRUE(garbage.Is(StatusCode::kCorruption)) << garbage;
  // Decodes, but carries no request (what an empty or foreign message is).
  storagepb::InternalRaftRequest none;
  none.set_id(9);
  Status empty = CheckEntry(Normal(4, none.SerializeAsString()));
  EXPECT_TRUE(empty.Is(StatusCode::kCorruption)) << empty;
  EXPECT_NE(empty.message().find("no known kind"), std::string::npos);
  Status big = CheckEntry(Normal(5, PutData(std::string(2000, 'k'))), 1000);
  EXPECT_TRUE(big.Is(StatusCode::kCorruption)) << big;
}

TEST(EntryCheckTest, ConfChangeEntries) {
  raftpb::ConfChange cc;
  cc.set_type(raftpb::ConfChangeAddNode);
  cc.set_node_id(5);
  storagepb::MemberRecord m;
  m.set_id(5);
  cc.set_context(m.SerializeAsString());
  raftpb::Entry e;
  e.set_type(raftpb::EntryConfChange);
  e.set_data(cc.SerializeAsString());
  EXPECT_TRUE(CheckEntry(e).ok());
  m.set_id(6);  // a record of another member
  cc.set_context(m.SerializeAsString());
  e.set_data(cc.SerializeAsString());
  EXPECT_TRUE(CheckEntry(e).Is(StatusCode::kCorruption));
  cc.clear_context();
  cc.set_node_id(0);
  e.set_data(cc.SerializeAsString());
  EXPECT_TRUE(CheckEntry(e).Is(StatusCode::kCorruption));
  e.set_data("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f");
  EXPECT_TRUE(CheckEntry(e).Is(StatusCode::kCorruption));
  e.set_type(raftpb::EntryConfChangeV2);
  e.clear_data();
  EXPECT_TRUE(CheckEntry(e).Is(StatusCode::kCorruption))
      << "kplane never proposes ConfChangeV2";
}

TEST(EntryCheckTest, PeerMessages) {
  raftpb::Message prop;
  prop.set_type(raftpb::MsgProp);
  prop.set_from(2);
  prop.set_to(1);
  EXPECT_TRUE(CheckPeerMessage(prop, 1).Is(StatusCode::kCorruption))
      << "an empty MsgProp (the raft core CHECKs on it)";
  *prop.add_entries() = Normal(0, PutData("k"));
  EXPECT_TRUE(CheckPeerMessage(prop, 1).ok());
  EXPECT_TRUE(CheckPeerMessage(prop, 3).Is(StatusCode::kCorruption))
      << "addressed to another member";
  *prop.add_entries() = Normal(0, "undecodable \xff\xff");
  EXPECT_TRUE(CheckPeerMessage(prop, 1).Is(StatusCode::kCorruption));

  raftpb::Message app;
  app.set_type(raftpb::MsgApp);
  app.set_from(2);
  app.set_to(1);
  app.set_term(1);
  app.set_index(7);
  app.set_logterm(1);
  *app.add_entries() = Normal(8, PutData(std::string(5000, 'k')));
  EXPECT_TRUE(CheckPeerMessage(app, 1, 1000).ok())
      << "the size limit is the leader's, for proposals";
  *app.add_entries() = Normal(9, "\xff\xff\xff");
  EXPECT_TRUE(CheckPeerMessage(app, 1).Is(StatusCode::kCorruption));

  raftpb::Message hup;
  hup.set_type(raftpb::MsgHup);
  hup.set_from(2);
  hup.set_to(1);
  EXPECT_TRUE(CheckPeerMessage(hup, 1).Is(StatusCode::kCorruption));
  raftpb::Message heartbeat;
  heartbeat.set_type(raftpb::MsgHeartbeat);
  heartbeat.set_from(2);
  heartbeat.set_to(1);
  EXPECT_TRUE(CheckPeerMessage(heartbeat, 1).Is(StatusCode::kCorruption))
      << "without a term (the raft core would read it as a local message)";
  heartbeat.set_term(3);
  EXPECT_TRUE(CheckPeerMessage(heartbeat, 1).ok());
}

// A snapshot message arrives with its files (/raft/snapshot) and is
// stepped once they are in place: it must have a term (the raft core takes
// a message without one for its own, and a candidate stepped down to term
// 0 could vote twice in its term) and a membership the core can restore
// (it CHECKs on one it cannot: a remote abort).
TEST(EntryCheckTest, SnapshotMessagesTheRaftCoreCanRestore) {
  auto snap = [] {
    raftpb::Message m;
    m.set_type(raftpb::MsgSnap);
    m.set_from(2);
    m.set_to(1);
    m.set_term(5);
    raftpb::SnapshotMetadata* meta = m.mutable_snapshot()->mutable_metadata();
    meta->set_index(100);
    meta->set_term(4);
    meta->mutable_conf_state()->add_voters(1);
    meta->mutable_conf_state()->add_voters(2);
    meta->mutable_conf_state()->add_learners(3);
    return m;
  };
  EXPECT_TRUE(CheckPeerSnapshot(snap(), 1).ok());
  struct Case {
    const char* what;
    std::function<void(raftpb::Message*)> change;
  };
  const Case cases[] = {
      {"no term", [](raftpb::Message* m) { m->set_term(0); }},
      {"to another member", [](raftpb::Message* m) { m->set_to(3); }},
      {"not a snapshot",
       [](raftpb::Message* m) { m->set_type(raftpb::MsgApp); }},
      {"no index",
       [](raftpb::Message* m) {
         m->mutable_snapshot()->mutable_metadata()->set_index(0);
       }},
      {"a snapshot term past the message's",
       [](raftpb::Message* m) {
         m->mutable_snapshot()->mutable_metadata()->set_term(6);
       }},
      {"learners only",
       [](raftpb::Message* m) {
         raftpb::ConfState* cs =
             m->mutable_snapshot()->mutable_metadata()->mutable_conf_state();
         cs->clear_voters();
         cs->add_learners(1);
       }},
      {"a voter twice",
       [](raftpb::Message* m) {
         m->mutable_snapshot()
             ->mutable_metadata()
             ->mutable_conf_state()
             ->add_voters(1);
       }},
      {"a voter that learns",
       [](raftpb::Message* m) {
         m->mutable_snapshot()
             ->mutable_metadata()
             ->mutable_conf_state()
             ->add_learners(2);
       }},
  };
  for (const Case& c : cases) {
    raftpb::Message m = snap();
    c.change(&m);
    EXPECT_TRUE(CheckPeerSnapshot(m, 1).Is(StatusCode::kCorruption)) << c.what;
  }
}

// What the raft core takes from a leader's peer only in the shape a leader
// sends it (fuzz/raft_step steps what passes; these shapes tripped its
// CHECKs or stopped a member).
TEST(EntryCheckTest, PeerMessagesInALeadersShape) {
  auto msg = [](raftpb::MessageType t, uint64_t term) {
    raftpb::Message m;
    m.set_type(t);
    m.set_from(2);
    m.set_to(1);
    m.set_term(term);
    return m;
  };
  // Forwarded requests carry no term.
  raftpb::Message read = msg(raftpb::MsgReadIndex, 0);
  EXPECT_TRUE(CheckPeerMessage(read, 1).Is(StatusCode::kCorruption))
      << "a read index request without its context";
  read.add_entries()->set_data("ctx");
  EXPECT_TRUE(CheckPeerMessage(read, 1).ok());
  read.add_entries()->set_data("more");
  EXPECT_TRUE(CheckPeerMessage(read, 1).Is(StatusCode::kCorruption));
  read.mutable_entries()->RemoveLast();
  read.set_term(2);
  EXPECT_TRUE(CheckPeerMessage(read, 1).Is(StatusCode::kCorruption))
      << "a forwarded request with a term";
  raftpb::Message prop = msg(raftpb::MsgProp, 2);
  *prop.add_entries() = Normal(0, PutData("k"));
  EXPECT_TRUE(CheckPeerMessage(prop, 1).Is(StatusCode::kCorruption));
  EXPECT_TRUE(CheckPeerMessage(msg(raftpb::MsgTransferLeader, 2), 1).ok());
  EXPECT_TRUE(CheckPeerMessage(msg(raftpb::MsgTransferLeader, 0), 1)
                  .Is(StatusCode::kCorruption));
  // A snapshot comes with its files, never on the message stream.
  raftpb::Message snap = msg(raftpb::MsgSnap, 9);
  snap.mutable_snapshot()->mutable_metadata()->set_index(1ull << 62);
  EXPECT_TRUE(CheckPeerMessage(snap, 1).Is(StatusCode::kCorruption));
  // Appended entries follow the index one by one, terms never going down,
  // from logTerm up to the message's term.
  raftpb::Message app = msg(raftpb::MsgApp, 3);
  app.set_index(10);
  app.set_logterm(2);
  auto entry = [](uint64_t index, uint64_t term) {
    raftpb::Entry e = Normal(index, PutData("k"));
    e.set_term(term);
    return e;
  };
  *app.add_entries() = entry(11, 2);
  *app.add_entries() = entry(12, 3);
  EXPECT_TRUE(CheckPeerMessage(app, 1).ok());
  for (const raftpb::Entry& bad :
       {entry(14, 3), entry(12, 3), entry(13, 2), entry(13, 4)}) {
    raftpb::Message wrong = app;
    *wrong.add_entries() = bad;
    EXPECT_TRUE(CheckPeerMessage(wrong, 1).Is(StatusCode::kCorruption))
        << "entry " << bad.index() << " of term " << bad.term();
  }
  raftpb::Message below = app;
  below.set_logterm(3);
  EXPECT_TRUE(CheckPeerMessage(below, 1).Is(StatusCode::kCorruption))
      << "an entry of a term before logTerm";
  raftpb::Message wraps = msg(raftpb::MsgApp, 3);
  wraps.set_index(UINT64_MAX);
  *wraps.add_entries() = entry(0, 3);
  EXPECT_TRUE(CheckPeerMessage(wraps, 1).Is(StatusCode::kCorruption));
}

MemberHash Hash(uint64_t id, uint32_t h) {
  etcdserverpb::HashKVResponse r;
  r.set_hash(h);
  return {id, r};
}

MemberHash Silent(uint64_t id) {
  return {id, UnavailableError("connection refused")};
}

TEST(CorruptionCheckTest, TheMinorityIsCorrupt) {
  HashVerdict v = JudgeHashes(1, 7, {Hash(2, 7), Hash(3, 9)}, 3);
  EXPECT_FALSE(v.consistent);
  EXPECT_EQ(v.corrupt, std::vector<uint64_t>{3});
  EXPECT_EQ(v.compared, 3);
  // The checking member itself may be the one.
  v = JudgeHashes(1, 9, {Hash(2, 7), Hash(3, 7)}, 3);
  EXPECT_EQ(v.corrupt, std::vector<uint64_t>{1});
  // Five members, two of them corrupt alike.
  v = JudgeHashes(1, 7, {Hash(2, 7), Hash(3, 7), Hash(4, 5), Hash(5, 5)}, 5);
  EXPECT_EQ(v.corrupt, (std::vector<uint64_t>{4, 5}));
}

TEST(CorruptionCheckTest, WithoutAQuorumTheClusterIsNamed) {
  HashVerdict v = JudgeHashes(1, 7, {Hash(2, 9), Silent(3)}, 3);
  EXPECT_FALSE(v.consistent);
  EXPECT_EQ(v.corrupt, std::vector<uint64_t>{0});
  EXPECT_EQ(v.compared, 2);
}

TEST(CorruptionCheckTest, SilentAndLaggingMembersAreLeftOut) {
  HashVerdict v = JudgeHashes(
      1, 7, {Hash(2, 7), {3, Status(StatusCode::kFutureRevision, "behind")}},
      3);
  EXPECT_TRUE(v.consistent);
  EXPECT_TRUE(v.corrupt.empty());
  EXPECT_EQ(v.compared, 2);
  v = JudgeHashes(1, 7, {Silent(2), Silent(3)}, 3);
  EXPECT_TRUE(v.consistent);
  EXPECT_EQ(v.compared, 1);
}

// ---------------------------------------------------------------------------
// Startup checks on real directories: a member whose WAL, store and
// membership contradict each other refuses to open.

class StartupCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-startup-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  StoreConfig Config() {
    StoreConfig c;
    c.name = "m1";
    c.data_dir = dir_ + "/m1";
    c.peer_urls = {"http://m1:2380"};
    c.heartbeat_interval = milliseconds(10);
    c.election_timeout = milliseconds(100);
    c.corrupt_check_interval = Duration(0);
    return c;
  }
  // A single member that applied `puts` writes, then stopped cleanly.
  void RunMember(int puts) {
    auto s = StoreServer::Open(Config());
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->Start(nullptr).ok());
    ASSERT_TRUE((*s)->WaitForLeader(seconds(10)));
    for (int i = 0; i < puts; ++i) {
      etcdserverpb::PutRequest p;
      p.set_key("k" + std::to_string(i));
      p.set_value("v");
      ASSERT_TRUE((*s)->Put(p).ok());
    }
    applied_ = (*s)->mvcc()->ConsistentIndex();
    (*s)->Stop();
  }
  std::string WalDir() { return dir_ + "/m1/member/wal"; }
  // Opens the member's log as the server would (nothing else open).
  std::unique_ptr<RaftLog> OpenLog() {
    auto log = RaftLog::Open(WalDir(), {});
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? std::move(*log) : nullptr;
  }

  std::string dir_;
  uint64_t applied_ = 0;
};

TEST_F(StartupCheckTest, AHealthyMemberReopens) {
  RunMember(20);
  auto s = StoreServer::Open(Config());
  EXPECT_TRUE(s.ok()) << s.status();
}

// The case: the WAL lost its tail (a "repair" truncated it), so
// the store has applied entries the log no longer holds. Every write would
// time out; the member must refuse instead.
TEST_F(StartupCheckTest, StoreAppliedBeyondTheLogIsRefused) {
  RunMember(40);
  // Cut the WAL back: keep everything up to the records of entry ~10 by
  // rewriting it from what a fresh log holds up to there.
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  ASSERT_GT(applied_, 30u);
  raft::EntryVec keep;
  auto first = log->storage()->FirstIndex();
  ASSERT_TRUE(first.ok());
  auto ents = log->storage()->Entries(*first, 11, UINT64_MAX);
  ASSERT_TRUE(ents.ok()) << ents.status();
  storagepb::MemberIdentity id = *log->identity();
  raftpb::SnapshotMetadata snap = log->snapshot_metadata();
  raftpb::HardState hs = log->hard_state();
  log.reset();
  fs::remove_all(WalDir());
  auto fresh = OpenLog();
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->WriteIdentity(id).ok());
  ASSERT_TRUE(fresh->Bootstrap(snap.conf_state()).ok());
  hs.set_commit(10);
  ASSERT_TRUE(fresh->Save(hs, *ents, raftpb::Snapshot(), true).ok());
  fresh.reset();

  auto s = StoreServer::Open(Config());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().Is(StatusCode::kCorruption)) << s.status();
  EXPECT_NE(s.status().message().find("the MVCC store has applied raft index " +
                                      std::to_string(applied_) +
                                      " but the WAL's log ends at index 10"),
            std::string::npos)
      << s.status();
}

TEST_F(StartupCheckTest, CommitBeyondTheLogIsRefused) {
  RunMember(5);
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  const uint64_t last = log->LastIndex();
  raftpb::HardState hs = log->hard_state();
  hs.set_commit(last + 50);
  ASSERT_TRUE(log->Save(hs, {}, raftpb::Snapshot(), true).ok());
  log.reset();
  auto s = StoreServer::Open(Config());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().Is(StatusCode::kCorruption)) << s.status();
  EXPECT_NE(s.status().message().find(
                "commits index " + std::to_string(last + 50) +
                " but its log ends at index " + std::to_string(last)),
            std::string::npos)
      << s.status();
}

TEST_F(StartupCheckTest, SnapshotAheadOfTheStoreIsRefused) {
  RunMember(5);
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  const uint64_t last = log->LastIndex();
  raftpb::ConfState cs = log->snapshot_metadata().conf_state();
  // A snapshot marker vouches that the store is durable at its index; the
  // store is not (it applied only up to applied_ < last + 20).
  raftpb::HardState hs = log->hard_state();
  std::vector<raftpb::Entry> more;
  for (uint64_t i = last + 1; i <= last + 20; ++i) {
    raftpb::Entry e;
    e.set_index(i);
    e.set_term(hs.term());
    more.push_back(e);
  }
  hs.set_commit(last + 20);
  ASSERT_TRUE(log->Save(hs, more, raftpb::Snapshot(), true).ok());
  ASSERT_TRUE(log->CreateSnapshot(last + 20, cs).ok());
  log.reset();
  auto s = StoreServer::Open(Config());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("has a snapshot at index " +
                                      std::to_string(last + 20)),
            std::string::npos)
      << s.status();
}

TEST_F(StartupCheckTest, LostWalBesideAStoreIsRefused) {
  RunMember(5);
  fs::remove_all(WalDir());
  auto s = StoreServer::Open(Config());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("the WAL is empty but the MVCC store"),
            std::string::npos)
      << s.status();
}

TEST_F(StartupCheckTest, DataDirOthersCanWriteIsRefused) {
  fs::create_directories(dir_ + "/m1");
  ASSERT_EQ(::chmod((dir_ + "/m1").c_str(), 0775), 0);
  auto s = StoreServer::Open(Config());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().Is(StatusCode::kFailedPrecondition)) << s.status();
  EXPECT_NE(s.status().message().find("is writable by group or others "
                                      "(mode 0775)"),
            std::string::npos)
      << s.status();
  ASSERT_EQ(::chmod((dir_ + "/m1").c_str(), 0755), 0);
  EXPECT_TRUE(StoreServer::Open(Config()).ok());
}

TEST_F(StartupCheckTest, NewDirectoriesAndFilesArePrivate) {
  RunMember(1);
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/m1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/m1/member").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/m1/LOCK").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ + "/m1/member/cluster.pb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace kplane::storage
