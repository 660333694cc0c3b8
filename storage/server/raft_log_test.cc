#include "storage/server/raft_log.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "base/testing/fault_injection_file_system.h"
#include "storage/raft/util.h"

namespace kplane::storage {
namespace {

raftpb::Entry E(uint64_t term, uint64_t index, std::string data = "") {
  raftpb::Entry e;
  e.set_term(term);
  e.set_index(index);
  e.set_data(data.empty() ? "d" + std::to_string(index) : data);
  return e;
}

raftpb::HardState HS(uint64_t term, uint64_t vote, uint64_t commit) {
  raftpb::HardState hs;
  hs.set_term(term);
  hs.set_vote(vote);
  hs.set_commit(commit);
  return hs;
}

class RaftLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-raftlog-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<RaftLog> Open(RaftLogOptions opts = {}) {
    auto log = RaftLog::Open(dir_, opts);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? std::move(*log) : nullptr;
  }
  std::string dir_;
};

// The raft log on a file system that loses power: a Save with sync (what a
// follower does before it acknowledges) survives; an unsynced one may not.
// (Drop the wal_->Sync() from RaftLog::Save and this fails.)
TEST_F(RaftLogTest, SyncedSaveSurvivesAPowerCut) {
  FaultInjectionFileSystem fault(FileSystem::Default());
  RaftLogOptions opts;
  opts.wal.file_system = &fault;
  {
    auto log = Open(opts);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Save(HS(1, 1, 1), {E(1, 1), E(1, 2)}, {}, true).ok());
    ASSERT_TRUE(log->Save(HS(1, 1, 2), {E(1, 3)}, {}, false).ok());
  }
  ASSERT_TRUE(fault.PowerCut().ok());
  auto log = Open(opts);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(*log->storage()->LastIndex(), 2u);
  auto st = log->storage()->InitialState();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->hard_state.commit(), 1u);
}

// A full disk under the WAL comes back from Save as kNoSpace, and stays
// (the node loop must not go on writing after a failed write).
// A full disk fails a Save without keeping anything of it, in memory or
// in the WAL, so the node loop can retry the same Save.
TEST_F(RaftLogTest, FullDiskIsNoSpaceFromSaveAndTheSameSaveMayBeRetried) {
  FaultInjectionFileSystem fault(FileSystem::Default());
  RaftLogOptions opts;
  opts.wal.file_system = &fault;
  auto log = Open(opts);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Save(HS(1, 1, 0), {E(1, 1)}, {}, true).ok());
  fault.SetNoSpace(true);
  Status s = log->Save(HS(1, 1, 1), {E(1, 2)}, {}, true);
  EXPECT_EQ(s.code(), StatusCode::kNoSpace) << s;
  EXPECT_FALSE(log->wal_failed());
  EXPECT_EQ(*log->storage()->LastIndex(), 1u);
  EXPECT_EQ(log->hard_state().commit(), 0u);
  fault.SetNoSpace(false);
  ASSERT_TRUE(log->Save(HS(1, 1, 1), {E(1, 2)}, {}, true).ok());
  EXPECT_EQ(*log->storage()->LastIndex(), 2u);
  log.reset();
  ASSERT_TRUE(fault.PowerCut().ok());
  log = Open(opts);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(*log->storage()->LastIndex(), 2u);
  EXPECT_EQ(log->hard_state().commit(), 1u);
}

// A failed fsync is the end, also when it says ENOSPC.
TEST_F(RaftLogTest, FailedSyncOnAFullDiskFailsTheLog) {
  FaultInjectionFileSystem fault(FileSystem::Default());
  RaftLogOptions opts;
  opts.wal.file_system = &fault;
  auto log = Open(opts);
  ASSERT_NE(log, nullptr);
  fault.InjectError({.op = FaultInjectionFileSystem::Op::kSync,
                     .error = ENOSPC,
                     .path_contains = ".wal",
                     .once = true});
  EXPECT_EQ(log->Save(HS(1, 1, 0), {E(1, 1)}, {}, true).code(),
            StatusCode::kNoSpace);
  EXPECT_TRUE(log->wal_failed());
}

TEST_F(RaftLogTest, FreshLogIsEmpty) {
  auto log = Open();
  EXPECT_TRUE(log->empty());
  EXPECT_EQ(*log->storage()->LastIndex(), 0u);
}

TEST_F(RaftLogTest, RestartRestoresEntriesHardStateAndIdentity) {
  {
    auto log = Open();
    storagepb::MemberIdentity id;
    id.set_member_id(7);
    id.set_cluster_id(9);
    ASSERT_TRUE(log->WriteIdentity(id).ok());
    ASSERT_TRUE(
        log->Save(HS(1, 1, 0), {E(1, 1), E(1, 2), E(1, 3)}, {}, true).ok());
    ASSERT_TRUE(log->Save(HS(1, 1, 2), {}, {}, true).ok());
  }
  auto log = Open();
  EXPECT_FALSE(log->empty());
  ASSERT_TRUE(log->identity().has_value());
  EXPECT_EQ(log->identity()->member_id(), 7u);
  EXPECT_EQ(*log->storage()->LastIndex(), 3u);
  auto st = log->storage()->InitialState();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->hard_state.commit(), 2u);
  EXPECT_EQ(st->hard_state.term(), 1u);
}

// A WAL whose first entry is not at 1 and that has no snapshot marker (a
// hostile or damaged data directory, checksums intact) is corruption. It
// used to CHECK-fail in MemoryStorage::Append (found by fuzz/wal_fuzz.cc).
TEST_F(RaftLogTest, EntriesNotStartingAtOneWithoutSnapshotAreCorruption) {
  {
    auto wal = wal::Wal::Open(dir_, {}, [](const wal::Record&) {});
    ASSERT_TRUE(wal.ok()) << wal.status();
    ASSERT_TRUE((*wal)
                    ->Append(wal::Record{RaftLog::kEntry, 3,
                                         E(1, 3).SerializeAsString()})
                    .ok());
    ASSERT_TRUE((*wal)->Sync().ok());
  }
  auto log = RaftLog::Open(dir_, {});
  ASSERT_FALSE(log.ok());
  EXPECT_TRUE(log.status().Is(StatusCode::kCorruption)) << log.status();
  EXPECT_NE(log.status().message().find("entries start at 3 after snapshot 0"),
            std::string::npos)
      << log.status();
}

TEST_F(RaftLogTest, OverwrittenSuffixIsReplacedOnReplay) {
  {
    auto log = Open();
    ASSERT_TRUE(
        log->Save(HS(1, 1, 1), {E(1, 1), E(1, 2), E(1, 3)}, {}, true).ok());
    // A new leader at term 2 overwrote entries 2..3 and added 4.
    ASSERT_TRUE(log->Save(HS(2, 2, 1),
                          {E(2, 2, "x2"), E(2, 3, "x3"), E(2, 4, "x4")}, {},
                          true)
                    .ok());
  }
  auto log = Open();
  auto ents = log->storage()->Entries(1, 5, UINT64_MAX);
  ASSERT_TRUE(ents.ok());
  ASSERT_EQ(ents->size(), 4u);
  EXPECT_EQ((*ents)[0].data(), "d1");
  EXPECT_EQ((*ents)[1].data(), "x2");
  EXPECT_EQ((*ents)[3].data(), "x4");
  EXPECT_EQ((*ents)[3].term(), 2u);
}

TEST_F(RaftLogTest, SnapshotCompactsMemoryAndWalAndSurvivesRestart) {
  RaftLogOptions opts;
  opts.wal.segment_bytes = 512;
  opts.catch_up_entries = 10;
  raftpb::ConfState cs;
  cs.add_voters(1);
  {
    auto log = Open(opts);
    for (uint64_t i = 1; i <= 100; ++i) {
      ASSERT_TRUE(log->Save(HS(1, 1, i), {E(1, i)}, {}, true).ok());
    }
    size_t segments_before = log->WalBytes();
    ASSERT_TRUE(log->CreateSnapshot(80, cs).ok());
    EXPECT_LT(log->WalBytes(), segments_before);
    EXPECT_EQ(*log->storage()->FirstIndex(), 71u);
    EXPECT_EQ(log->snapshot_metadata().index(), 80u);
  }
  auto log = Open(opts);
  EXPECT_EQ(log->snapshot_metadata().index(), 80u);
  EXPECT_EQ(log->snapshot_metadata().conf_state().voters_size(), 1);
  // After a restart the log resumes right after the snapshot.
  EXPECT_EQ(*log->storage()->FirstIndex(), 81u);
  EXPECT_EQ(*log->storage()->LastIndex(), 100u);
  EXPECT_EQ(*log->storage()->Term(80), 1u);
  auto st = log->storage()->InitialState();
  EXPECT_EQ(st->hard_state.commit(), 100u);
}

TEST_F(RaftLogTest, ReceivedSnapshotReplacesLog) {
  {
    auto log = Open();
    ASSERT_TRUE(log->Save(HS(1, 0, 2), {E(1, 1), E(1, 2)}, {}, true).ok());
    raftpb::Snapshot snap;
    snap.mutable_metadata()->set_index(50);
    snap.mutable_metadata()->set_term(3);
    snap.mutable_metadata()->mutable_conf_state()->add_voters(1);
    ASSERT_TRUE(log->Save(HS(3, 0, 50), {}, snap, true).ok());
    ASSERT_TRUE(log->Save(HS(3, 0, 51), {E(3, 51)}, {}, true).ok());
  }
  auto log = Open();
  EXPECT_EQ(*log->storage()->FirstIndex(), 51u);
  EXPECT_EQ(*log->storage()->LastIndex(), 51u);
  EXPECT_EQ(*log->storage()->Term(50), 3u);
}

}  // namespace
}  // namespace kplane::storage
