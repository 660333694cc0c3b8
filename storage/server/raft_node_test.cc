#include "storage/server/raft_node.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "base/logging.h"
#include "base/testing/fault_injection_file_system.h"
#include "storage/raft/util.h"

namespace kplane::storage {
namespace {

// Delivers messages directly to the peer nodes' inboxes (no network), and
// drops everything to or from a member marked down. Like the HTTP
// transport's receiver, it hands each node its share of one Send at once
// (StepMany).
class LocalTransport : public Transport {
 public:
  void Send(std::vector<raftpb::Message> msgs) override {
    std::lock_guard<std::mutex> l(mu);
    std::map<uint64_t, std::vector<raftpb::Message>> by_node;
    for (auto& m : msgs) {
      auto it = nodes.find(m.to());
      if (it == nodes.end() || down.count(m.to()) || down.count(m.from())) {
        continue;
      }
      if (hold && hold(m)) {
        held.push_back(std::move(m));
        held_cv.notify_all();
        continue;
      }
      by_node[m.to()].push_back(std::move(m));
    }
    for (auto& [id, batch] : by_node) nodes[id]->StepMany(std::move(batch));
  }
  // Waits until `n` messages are held, then stops holding and delivers
  // them, each node's share in one StepMany.
  bool ReleaseHeld(size_t n) {
    std::vector<raftpb::Message> msgs;
    {
      std::unique_lock<std::mutex> l(mu);
      if (!held_cv.wait_for(l, std::chrono::seconds(20),
                            [&] { return held.size() >= n; })) {
        return false;
      }
      hold = nullptr;
      msgs.swap(held);
    }
    Send(std::move(msgs));
    return true;
  }
  std::mutex mu;
  std::map<uint64_t, RaftNode*> nodes;
  std::set<uint64_t> down;
  // Messages for which `hold` is true wait in `held` (ReleaseHeld).
  std::function<bool(const raftpb::Message&)> hold;
  std::vector<raftpb::Message> held;
  std::condition_variable held_cv;
};

// Records applied entries; tests wait on it.
class RecordingApplier : public Applier {
 public:
  void Enqueue(ApplyTask task) override {
    std::lock_guard<std::mutex> l(mu);
    for (auto& e : task.entries) {
      applied_index = e.index();
      if (e.type() == raftpb::EntryNormal && !e.data().empty()) {
        data.push_back(e.data());
      }
    }
    cv.notify_all();
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(20),
                       [&] { return data.size() >= n; });
  }
  bool WaitApplied(uint64_t index) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(20),
                       [&] { return applied_index >= index; });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> data;
  uint64_t applied_index = 0;
};

struct Member {
  std::unique_ptr<RaftLog> log;
  RecordingApplier applier;
  std::unique_ptr<RaftNode> node;
};

class RaftNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-raftnode-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    for (auto& [id, m] : members_) m->node->Stop();
    members_.clear();
    std::filesystem::remove_all(dir_);
  }

  void StartCluster(int n) {
    raftpb::ConfState cs;
    for (int i = 1; i <= n; ++i) cs.add_voters(i);
    for (uint64_t id = 1; id <= static_cast<uint64_t>(n); ++id) {
      auto m = std::make_unique<Member>();
      RaftLogOptions log_opts;
      log_opts.wal.file_system = file_system_;
      auto log = RaftLog::Open(dir_ + "/m" + std::to_string(id), log_opts);
      ASSERT_TRUE(log.ok()) << log.status();
      m->log = std::move(*log);
      ASSERT_TRUE(m->log->Bootstrap(cs).ok());
      RaftNodeOptions opts;
      opts.raft.id = id;
      // 500 ms: long enough that a loaded machine (two cores, sanitizers)
      // does not miss heartbeats and change leader mid-test, which would
      // drop in-flight proposals that these tests expect to apply.
      opts.raft.election_tick = 100;
      opts.raft.heartbeat_tick = 1;
      opts.raft.pre_vote = true;
      opts.raft.check_quorum = true;
      opts.raft.random_seed = id;
      // Real time, short ticks: tests wait for events (elections, applies)
      // with condition variables, never for fixed durations.
      opts.tick_interval = milliseconds(5);
      if (tweak_) tweak_(opts);
      m->node = std::make_unique<RaftNode>(opts, m->log.get(), &transport_,
                                           &m->applier);
      transport_.nodes[id] = m->node.get();
      WatchLeader(m->node.get());
      members_[id] = std::move(m);
    }
    for (auto& [id, m] : members_) ASSERT_TRUE(m->node->Start().ok());
  }

  // Waits (on leader-change callbacks, not a timer) until a member that is
  // not marked down leads and every member that is up follows it.
  uint64_t WaitLeader() {
    std::unique_lock<std::mutex> l(leader_mu_);
    uint64_t found = 0;
    // Every member that is up must see the same leader: a proposal through
    // a follower that has not yet heard from the leader is dropped.
    leader_cv_.wait_for(l, std::chrono::seconds(30), [&] {
      found = 0;
      for (auto& [id, m] : members_) {
        std::lock_guard<std::mutex> tl(transport_.mu);
        if (!transport_.down.count(id) && m->node->is_leader()) found = id;
      }
      if (found == 0) return false;
      for (auto& [id, m] : members_) {
        std::lock_guard<std::mutex> tl(transport_.mu);
        if (!transport_.down.count(id) && m->node->leader() != found) {
          return false;
        }
      }
      return true;
    });
    return found;
  }
  void WatchLeader(RaftNode* node) {
    node->SetLeaderCallback([this](uint64_t, uint64_t) {
      std::lock_guard<std::mutex> l(leader_mu_);
      leader_cv_.notify_all();
    });
  }

  std::mutex leader_mu_;
  std::condition_variable leader_cv_;

  std::string dir_;
  // Set before StartCluster: the members' WAL file system (null: the
  // default), and a change to their options.
  FileSystem* file_system_ = nullptr;
  std::function<void(RaftNodeOptions&)> tweak_;
  // Outlive the members (declared before them).
  std::unique_ptr<FaultInjectionFileSystem> fault_disk_;
  std::promise<Status> blocked_;
  LocalTransport transport_;
  std::map<uint64_t, std::unique_ptr<Member>> members_;
};

TEST_F(RaftNodeTest, SingleMemberElectsItselfAndApplies) {
  StartCluster(1);
  ASSERT_EQ(WaitLeader(), 1u);
  for (int i = 0; i < 50; ++i) {
    members_[1]->node->Propose("p" + std::to_string(i),
                               [](Status s) { FAIL() << s; });
  }
  ASSERT_TRUE(members_[1]->applier.WaitFor(50));
  EXPECT_EQ(members_[1]->applier.data.front(), "p0");
  EXPECT_EQ(members_[1]->applier.data.back(), "p49");
}

// A full disk under the log blocks the loop instead of halting it: the
// Ready it could not save is neither applied nor lost; proposals are
// refused with etcd's NOSPACE error and reads with Unavailable meanwhile;
// once there is space the same Ready is saved and everything goes on.
// (Halting instead fails this at the first refused proposal's error.)
TEST_F(RaftNodeTest, FullDiskBlocksTheLoopUntilTheSameSaveSucceeds) {
  fault_disk_ =
      std::make_unique<FaultInjectionFileSystem>(FileSystem::Default());
  FaultInjectionFileSystem& disk = *fault_disk_;
  file_system_ = &disk;
  tweak_ = [this](RaftNodeOptions& o) {
    o.nospace_retry_min = milliseconds(5);
    o.nospace_retry_max = milliseconds(20);
    o.on_persist_blocked = [this](const Status& s) { blocked_.set_value(s); };
  };
  StartCluster(1);
  ASSERT_EQ(WaitLeader(), 1u);
  RaftNode* node = members_[1]->node.get();
  node->Propose("a", [](Status s) { FAIL() << s; });
  ASSERT_TRUE(members_[1]->applier.WaitFor(1));

  disk.SetNoSpace(true);
  node->Propose("b", [](Status s) { FAIL() << "b dropped: " << s; });
  std::future<Status> blocked = blocked_.get_future();
  ASSERT_EQ(blocked.wait_for(std::chrono::seconds(20)),
            std::future_status::ready)
      << "the loop never blocked on the full disk";
  Status why = blocked.get();
  EXPECT_EQ(why.code(), StatusCode::kNoSpace) << why;
  // persist_blocked() turns true just after the callback (the owner's
  // alarm comes first, raft_node.cc Block).
  for (int i = 0; i < 20000 && !node->persist_blocked(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(node->persist_blocked());
  EXPECT_FALSE(node->halted());

  std::promise<Status> dropped;
  node->Propose("c", [&](Status s) { dropped.set_value(s); });
  Status c = dropped.get_future().get();
  EXPECT_EQ(c.code(), StatusCode::kNoSpace) << c;
  EXPECT_EQ(c.message(), "etcdserver: mvcc: database space exceeded");
  std::promise<StatusOr<uint64_t>> read;
  node->ReadIndex([&](StatusOr<uint64_t> r) { read.set_value(r); });
  EXPECT_EQ(read.get_future().get().status().code(), StatusCode::kUnavailable);
  // It keeps trying, and applies nothing meanwhile.
  const int64_t failures = disk.injected_failures();
  while (disk.injected_failures() < failures + 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard<std::mutex> l(members_[1]->applier.mu);
    EXPECT_EQ(members_[1]->applier.data.size(), 1u);
  }

  disk.SetNoSpace(false);
  ASSERT_TRUE(members_[1]->applier.WaitFor(2));
  while (node->persist_blocked()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  node->Propose("d", [](Status s) { FAIL() << s; });
  ASSERT_TRUE(members_[1]->applier.WaitFor(3));
  std::lock_guard<std::mutex> l(members_[1]->applier.mu);
  EXPECT_EQ(members_[1]->applier.data,
            (std::vector<std::string>{"a", "b", "d"}));
}

TEST_F(RaftNodeTest, ThreeMembersApplyTheSameSequence) {
  StartCluster(3);
  uint64_t leader = WaitLeader();
  ASSERT_NE(leader, 0u);
  uint64_t follower = leader % 3 + 1;
  // Proposals through a follower are forwarded to the leader.
  for (int i = 0; i < 100; ++i) {
    members_[i % 2 ? follower : leader]->node->Propose(
        "v" + std::to_string(i), [](Status s) { FAIL() << s; });
  }
  for (auto& [id, m] : members_) ASSERT_TRUE(m->applier.WaitFor(100)) << id;
  EXPECT_EQ(members_[1]->applier.data, members_[2]->applier.data);
  EXPECT_EQ(members_[2]->applier.data, members_[3]->applier.data);
}

TEST_F(RaftNodeTest, ReadIndexOnFollowerCoversEarlierWrites) {
  StartCluster(3);
  uint64_t leader = WaitLeader();
  ASSERT_NE(leader, 0u);
  members_[leader]->node->Propose("w", [](Status s) { FAIL() << s; });
  ASSERT_TRUE(members_[leader]->applier.WaitFor(1));
  uint64_t written = members_[leader]->applier.applied_index;
  uint64_t follower = leader % 3 + 1;
  std::promise<StatusOr<uint64_t>> p;
  members_[follower]->node->ReadIndex(
      [&](StatusOr<uint64_t> idx) { p.set_value(idx); });
  auto idx = p.get_future().get();
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_GE(*idx, written);
  EXPECT_TRUE(members_[follower]->applier.WaitApplied(*idx));
}

// Reads asked on two members at once reach the leader together, each with
// a context of its own: the leader keeps pending reads by context and
// dropped the second of two alike, whose member then waited for the read
// timeout ("etcdserver: request timed out") -- every member counted its
// contexts from 1, so the first reads of any two collided.
TEST_F(RaftNodeTest, ReadsAskedOnTwoMembersAtOnceAreBothAnswered) {
  StartCluster(3);
  uint64_t leader = WaitLeader();
  ASSERT_NE(leader, 0u);
  const uint64_t a = leader % 3 + 1, b = a % 3 + 1;
  {
    std::lock_guard<std::mutex> l(transport_.mu);
    transport_.hold = [](const raftpb::Message& m) {
      return m.type() == raftpb::MsgReadIndex;
    };
  }
  std::promise<StatusOr<uint64_t>> read_a, read_b;
  members_[a]->node->ReadIndex(
      [&](StatusOr<uint64_t> idx) { read_a.set_value(idx); });
  members_[b]->node->ReadIndex(
      [&](StatusOr<uint64_t> idx) { read_b.set_value(idx); });
  ASSERT_TRUE(transport_.ReleaseHeld(2));
  StatusOr<uint64_t> got_a = read_a.get_future().get();
  StatusOr<uint64_t> got_b = read_b.get_future().get();
  EXPECT_TRUE(got_a.ok()) << got_a.status();
  EXPECT_TRUE(got_b.ok()) << got_b.status();
}

TEST_F(RaftNodeTest, NewLeaderAfterLeaderIsolated) {
  StartCluster(3);
  uint64_t old_leader = WaitLeader();
  ASSERT_NE(old_leader, 0u);
  {
    std::lock_guard<std::mutex> l(transport_.mu);
    transport_.down.insert(old_leader);
  }
  uint64_t next = WaitLeader();
  ASSERT_NE(next, 0u);
  ASSERT_NE(next, old_leader);
  members_[next]->node->Propose("after", [](Status s) { FAIL() << s; });
  ASSERT_TRUE(members_[next]->applier.WaitFor(1));
  EXPECT_EQ(members_[next]->applier.data.back(), "after");
}

TEST_F(RaftNodeTest, RestartKeepsLogAndMembership) {
  StartCluster(1);
  ASSERT_EQ(WaitLeader(), 1u);
  members_[1]->node->Propose("before", [](Status s) { FAIL() << s; });
  ASSERT_TRUE(members_[1]->applier.WaitFor(1));
  members_[1]->node->Stop();
  members_.clear();
  transport_.nodes.clear();

  auto m = std::make_unique<Member>();
  auto log = RaftLog::Open(dir_ + "/m1", {});
  ASSERT_TRUE(log.ok());
  m->log = std::move(*log);
  EXPECT_FALSE(m->log->empty());
  RaftNodeOptions opts;
  opts.raft.id = 1;
  opts.tick_interval = milliseconds(5);
  m->node =
      std::make_unique<RaftNode>(opts, m->log.get(), &transport_, &m->applier);
  transport_.nodes[1] = m->node.get();
  WatchLeader(m->node.get());
  members_[1] = std::move(m);
  ASSERT_TRUE(members_[1]->node->Start().ok());
  // The committed entry is handed out again (applied index starts at the
  // snapshot, 0) and the member can lead again.
  ASSERT_TRUE(members_[1]->applier.WaitFor(1));
  EXPECT_EQ(members_[1]->applier.data.front(), "before");
  ASSERT_EQ(WaitLeader(), 1u);
  members_[1]->node->Propose("after", [](Status s) { FAIL() << s; });
  ASSERT_TRUE(members_[1]->applier.WaitFor(2));
}

// Every ReadIndex callback runs exactly once, also when the node stops
// first: a reader blocked on it (StoreServer::Range) would otherwise hang.
TEST_F(RaftNodeTest, StopAnswersPendingAndLaterReads) {
  StartCluster(3);
  uint64_t leader = WaitLeader();
  ASSERT_NE(leader, 0u);
  {
    // The leader's read round cannot complete.
    std::lock_guard<std::mutex> l(transport_.mu);
    transport_.down.insert(leader);
  }
  RaftNode* node = members_[leader]->node.get();
  auto pending = std::make_shared<std::promise<StatusOr<uint64_t>>>();
  auto pending_done = pending->get_future();
  node->ReadIndex([pending](StatusOr<uint64_t> i) { pending->set_value(i); });
  node->Stop();
  auto later = std::make_shared<std::promise<StatusOr<uint64_t>>>();
  auto later_done = later->get_future();
  node->ReadIndex([later](StatusOr<uint64_t> i) { later->set_value(i); });
  ASSERT_EQ(pending_done.wait_for(std::chrono::seconds(10)),
            std::future_status::ready)
      << "a read pending at Stop was never answered";
  EXPECT_FALSE(pending_done.get().ok());
  ASSERT_EQ(later_done.wait_for(std::chrono::seconds(10)),
            std::future_status::ready)
      << "a read after Stop was never answered";
  EXPECT_EQ(later_done.get().status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kplane::storage
