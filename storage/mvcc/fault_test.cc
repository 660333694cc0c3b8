// The store on a failing disk (FaultInjectionFileSystem under RocksDB):
// power cuts keep every acknowledged write, a full disk is NOSPACE with
// reads still served, failed writes are sticky errors, never a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "base/testing/fault_injection_file_system.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;
using testing::ValueAt;
using Op = FaultInjectionFileSystem::Op;

class MvccFaultTest : public ::testing::Test {
 protected:
  // A directory the store creates itself (so its creation is tracked).
  std::string Dir() const { return tmp_.Sub("db"); }

  std::unique_ptr<Store> Open(bool sync_writes) {
    return testing::OpenOrDie(Dir(), nullptr, [&](Options* o) {
      o->file_system = &fault_;
      o->sync_writes = sync_writes;
    });
  }

  // The machine dies now; the store is shut down (its close-time writes
  // are lost with the rest), then the power comes back.
  void PowerCut(std::unique_ptr<Store>* store, bool torn = false,
                uint64_t seed = 1) {
    fault_.SetActive(false);
    store->reset();
    FaultInjectionFileSystem::PowerCutOptions o;
    o.torn_tails = torn;
    o.seed = seed;
    ASSERT_TRUE(fault_.PowerCut(o).ok());
  }

  testing::TempDir tmp_;
  FaultInjectionFileSystem fault_{FileSystem::Default()};
};

TEST_F(MvccFaultTest, RocksDbFilesGoThroughTheSeamAndArePrivate) {
  auto store = Open(/*sync_writes=*/true);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put(MakePut("k", "v")).ok());
  bool log = false, manifest = false, current = false;
  for (const std::string& p : fault_.WrittenPaths()) {
    const std::string name = std::filesystem::path(p).filename();
    log |= name.ends_with(".log");
    manifest |= name.starts_with("MANIFEST-");
    // CURRENT is written as <number>.dbtmp, synced, then renamed.
    current |= name.ends_with(".dbtmp");
  }
  EXPECT_TRUE(log && manifest && current);

  auto mode = [](const std::filesystem::path& p) {
    struct stat st;
    EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
  };
  EXPECT_EQ(mode(Dir()), 0700u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(Dir())) {
    EXPECT_EQ(mode(e.path()), 0600u) << e.path();
    ++files;
  }
  EXPECT_GT(files, 4);  // LOCK, LOG, CURRENT, MANIFEST, a .log, OPTIONS...
}

// With sync_writes, a Put that returned is on disk: a power cut right after
// it keeps it. (Drop the `wo.sync` in Store::WriteLocked and this fails:
// the writes sit unsynced in RocksDB's WAL and the power cut drops them.)
TEST_F(MvccFaultTest, AcknowledgedWritesSurviveAPowerCut) {
  auto store = Open(/*sync_writes=*/true);
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 50; ++i) {
    auto r = store->Put(MakePut("k" + std::to_string(i), "v"));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->header().revision(), i + 1);  // an empty store is at 1
  }
  PowerCut(&store);
  store = Open(true);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->CurrentRevision(), 51);
  for (int i = 1; i <= 50; ++i) {
    EXPECT_EQ(ValueAt(store.get(), "k" + std::to_string(i)), "v") << i;
  }
}

// Without sync_writes, Sync() is the line: what was written before it
// survives a power cut, what came after may not, and what survives is a
// prefix of the history. (Drop the FlushWAL in Store::Sync and this fails.)
TEST_F(MvccFaultTest, SyncMakesEarlierWritesDurable) {
  auto store = Open(/*sync_writes=*/false);
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 30; ++i) {
    ASSERT_TRUE(store->Put(MakePut("k" + std::to_string(i), "v")).ok());
    if (i == 20) {
      ASSERT_TRUE(store->Sync().ok());
    }
  }
  PowerCut(&store);
  store = Open(false);
  ASSERT_NE(store, nullptr);
  const int64_t rev = store->CurrentRevision();  // k<i> made revision i + 1
  EXPECT_GE(rev, 21);
  EXPECT_LE(rev, 31);
  for (int i = 1; i <= 30; ++i) {
    EXPECT_EQ(ValueAt(store.get(), "k" + std::to_string(i)),
              i + 1 <= rev ? "v" : "<none>")
        << i;
  }
}

// Seeded rounds of puts, deletes and compactions with a power cut at a
// random point, half of them leaving torn tails: the store always opens,
// holds every acknowledged revision, and its state at the recovered
// revision is exactly the history replayed that far.
TEST_F(MvccFaultTest, PowerCutsAtRandomPointsKeepEveryAcknowledgedWrite) {
  std::mt19937 rng(42);
  // history[r] = the operation that made revision r: key and value ("" =
  // delete); an empty store is at revision 1.
  std::vector<std::pair<std::string, std::string>> history(2);
  int64_t acked = 0;
  for (int round = 0; round < 8; ++round) {
    auto store = Open(/*sync_writes=*/true);
    ASSERT_NE(store, nullptr) << "round " << round;
    const int64_t rev = store->CurrentRevision();
    ASSERT_GE(rev, acked) << "round " << round;
    ASSERT_LT(rev, static_cast<int64_t>(history.size()));
    history.resize(rev + 1);  // writes never acknowledged are gone
    std::map<std::string, std::string> want;
    for (int64_t r = 1; r <= rev; ++r) {
      if (history[r].second.empty()) {
        want.erase(history[r].first);
      } else {
        want[history[r].first] = history[r].second;
      }
    }
    auto all = store->Range(MakeRange("k", "l"));
    ASSERT_TRUE(all.ok()) << all.status();
    std::map<std::string, std::string> got;
    for (const auto& kv : all->kvs()) got[kv.key()] = kv.value();
    ASSERT_EQ(got, want) << "round " << round << " at revision " << rev;

    const int ops = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < ops; ++i) {
      const std::string key = "k" + std::to_string(rng() % 10);
      if (rng() % 4 == 0 && want.count(key) != 0) {
        auto r = store->DeleteRange(MakeDelete(key));
        ASSERT_TRUE(r.ok()) << r.status();
        history.push_back({key, ""});
        want.erase(key);
      } else {
        const std::string value =
            "r" + std::to_string(round) + "." + std::to_string(i);
        ASSERT_TRUE(store->Put(MakePut(key, value)).ok());
        history.push_back({key, value});
        want[key] = value;
      }
      acked = static_cast<int64_t>(history.size()) - 1;
      if (rng() % 10 == 0 && acked > 2) {
        ASSERT_TRUE(store->Compact(acked - 1).ok());
      }
    }
    PowerCut(&store, /*torn=*/round % 2 == 1, /*seed=*/round + 1);
  }
}

// A store closed without a flush is reopened by first replaying its WAL
// (an open without memtable hints that flushes what it replays, store.cc
// OpenDb). With the disk full that flush fails: the open says so, and the
// next open, with room again, finds every write.
TEST_F(MvccFaultTest, FullDiskWhileReplayingTheWalFailsTheOpenAndLosesNothing) {
  auto store = Open(/*sync_writes=*/true);
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 20; ++i) {
    ASSERT_TRUE(store->Put(MakePut("k" + std::to_string(i), "v")).ok());
  }
  store.reset();  // flush_on_close is off: the writes are in the WAL only
  fault_.SetNoSpace(true);
  Options o;
  o.dir = Dir();
  o.file_system = &fault_;
  StatusOr<std::unique_ptr<Store>> failed = Store::Open(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("mvcc: replay the WAL of"),
            std::string::npos)
      << failed.status();
  fault_.SetNoSpace(false);
  store = Open(true);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->CurrentRevision(), 21);
  for (int i = 1; i <= 20; ++i) {
    EXPECT_EQ(ValueAt(store.get(), "k" + std::to_string(i)), "v") << i;
  }
}

TEST_F(MvccFaultTest, FullDiskIsNoSpaceAndReadsGoOn) {
  auto store = Open(/*sync_writes=*/false);
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 10; ++i) {
    ASSERT_TRUE(store->Put(MakePut("k" + std::to_string(i), "v1")).ok());
  }
  fault_.SetNoSpace(true);
  auto put = store->Put(MakePut("k1", "v2"));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), StatusCode::kNoSpace) << put.status();
  EXPECT_NE(put.status().message().find("database space exceeded"),
            std::string::npos)
      << put.status();
  EXPECT_TRUE(store->NoSpaceAlarm());
  EXPECT_EQ(store->WriteStatus().code(), StatusCode::kNoSpace);
  EXPECT_EQ(store->CurrentRevision(), 11);  // the failed put left no trace

  // Reads, watches from history and hashes are served; writes are refused.
  EXPECT_EQ(ValueAt(store.get(), "k1"), "v1");
  EXPECT_EQ(ValueAt(store.get(), "k5", 6), "v1");
  EXPECT_TRUE(store->HashKV(0).ok());
  auto stream = store->NewWatchStream();
  etcdserverpb::WatchCreateRequest w;
  w.set_key("k");
  w.set_range_end("l");
  w.set_start_revision(1);
  ASSERT_TRUE(stream->Watch(w).ok());
  EXPECT_EQ(store->DeleteRange(MakeDelete("k2")).status().code(),
            StatusCode::kNoSpace);
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(10);
  EXPECT_EQ(store->LeaseGrant(grant).status().code(), StatusCode::kNoSpace);

  // Disarming while the disk is still full fails and keeps the alarm.
  EXPECT_EQ(store->DisarmNoSpaceAlarm().code(), StatusCode::kNoSpace);
  EXPECT_TRUE(store->NoSpaceAlarm());

  // Space freed: disarm, and writes continue where they stopped.
  fault_.SetNoSpace(false);
  Status disarm = store->DisarmNoSpaceAlarm();
  ASSERT_TRUE(disarm.ok()) << disarm;
  EXPECT_FALSE(store->NoSpaceAlarm());
  EXPECT_TRUE(store->WriteStatus().ok());
  put = store->Put(MakePut("k1", "v3"));
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->header().revision(), 12);
  ASSERT_TRUE(store->Sync().ok());
  store.reset();
  store = Open(false);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->CurrentRevision(), 12);
  EXPECT_EQ(ValueAt(store.get(), "k1"), "v3");
  EXPECT_EQ(ValueAt(store.get(), "k1", 11), "v1");
  EXPECT_FALSE(store->NoSpaceAlarm());
}

// What the replicated server does after a full disk: resume (refused while
// the disk is still full, with no checkpoint taken meanwhile: its flush
// would leave RocksDB unable to resume), then retry the same write, which
// goes through at the revision it would have had. A resume is not a
// disarm: the quota alarm is untouched, and the full disk's alarm ends.
TEST_F(MvccFaultTest, ResumeAfterFullDiskTakesTheFailedWriteAgain) {
  auto store = Open(/*sync_writes=*/false);
  ASSERT_NE(store, nullptr);
  auto first = store->Put(MakePut("k", "v1"), 1);
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t first_rev = first->header().revision();
  fault_.SetNoSpace(true);
  EXPECT_EQ(store->Put(MakePut("k", "v2"), 2).status().code(),
            StatusCode::kNoSpace);
  EXPECT_TRUE(store->DiskFull());
  EXPECT_FALSE(store->QuotaAlarm());
  EXPECT_EQ(store->Checkpoint(Dir() + "-copy").code(), StatusCode::kNoSpace);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(store->ResumeAfterFullDisk().code(), StatusCode::kNoSpace);
  }
  EXPECT_EQ(store->ConsistentIndex(), 1u);

  fault_.SetNoSpace(false);
  Status resumed = store->ResumeAfterFullDisk();
  ASSERT_TRUE(resumed.ok()) << resumed;
  EXPECT_FALSE(store->DiskFull());
  EXPECT_FALSE(store->NoSpaceAlarm());
  auto retried = store->Put(MakePut("k", "v2"), 2);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->header().revision(), first_rev + 1);
  EXPECT_EQ(store->ConsistentIndex(), 2u);
  EXPECT_EQ(ValueAt(store.get(), "k"), "v2");
  Status copied = store->Checkpoint(Dir() + "-copy");
  EXPECT_TRUE(copied.ok()) << copied;
}

// A write group whose write fails publishes nothing: not the revisions its
// puts answered with, not their watch events.
TEST_F(MvccFaultTest, FailedWriteGroupPublishesNothing) {
  auto store = Open(/*sync_writes=*/false);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put(MakePut("a", "1")).ok());
  store->BeginWriteGroup();
  auto p2 = store->Put(MakePut("a", "2"), 7);
  auto p3 = store->Put(MakePut("b", "3"), 8);
  ASSERT_TRUE(p2.ok() && p3.ok());
  EXPECT_EQ(p3->header().revision(), 4);
  fault_.SetNoSpace(true);
  store->EndWriteGroup();
  EXPECT_EQ(store->WriteStatus().code(), StatusCode::kNoSpace);
  EXPECT_EQ(store->CurrentRevision(), 2);
  EXPECT_EQ(store->ConsistentIndex(), 0u);
  EXPECT_EQ(ValueAt(store.get(), "a"), "1");
  EXPECT_EQ(ValueAt(store.get(), "b"), "<none>");
  fault_.SetNoSpace(false);
  ASSERT_TRUE(store->DisarmNoSpaceAlarm().ok());
  auto again = store->Put(MakePut("b", "3"), 8);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->header().revision(), 3);
}

// A failed fsync of RocksDB's WAL is an I/O error the store never recovers
// from in place: every later write fails the same way (even though the
// fault was one-shot), reads go on, nothing crashes; reopening recovers.
TEST_F(MvccFaultTest, FailedSyncIsAStickyIOError) {
  auto store = Open(/*sync_writes=*/true);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put(MakePut("a", "1")).ok());
  fault_.InjectError(
      {.op = Op::kSync, .error = EIO, .path_contains = ".log", .once = true});
  auto put = store->Put(MakePut("a", "2"));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), StatusCode::kIOError) << put.status();
  EXPECT_EQ(fault_.injected_failures(), 1);
  EXPECT_EQ(store->Put(MakePut("b", "1")).status().code(),
            StatusCode::kIOError);
  EXPECT_EQ(store->DeleteRange(MakeDelete("a")).status().code(),
            StatusCode::kIOError);
  EXPECT_EQ(store->Compact(1).code(), StatusCode::kIOError);
  EXPECT_EQ(store->Sync().code(), StatusCode::kIOError);
  EXPECT_EQ(store->DisarmNoSpaceAlarm().code(), StatusCode::kIOError);
  EXPECT_EQ(store->CurrentRevision(), 2);
  EXPECT_EQ(ValueAt(store.get(), "a"), "1");

  store.reset();
  store = Open(true);
  ASSERT_NE(store, nullptr);
  // The failed write may or may not have reached the disk; either way the
  // store is whole and writable again.
  const int64_t rev = store->CurrentRevision();
  EXPECT_TRUE(rev == 2 || rev == 3) << rev;
  EXPECT_EQ(ValueAt(store.get(), "a"), rev == 2 ? "1" : "2");
  auto r = store->Put(MakePut("b", "1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->header().revision(), rev + 1);
}

// Compaction writes from its own thread; a failure there stops compaction
// and becomes the sticky error instead of aborting the process.
TEST_F(MvccFaultTest, FailedCompactionWriteStopsCompactionWithoutCrashing) {
  auto store = testing::OpenOrDie(Dir(), nullptr, [&](Options* o) {
    o->file_system = &fault_;
    o->compaction_batch_records = 5;
  });
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 100; ++i) {
    ASSERT_TRUE(store->Put(MakePut("k" + std::to_string(i % 7), "v")).ok());
  }
  // The scheduling write may pass; a compaction batch after it fails.
  fault_.InjectError(
      {.op = Op::kWrite, .error = EIO, .path_contains = ".log", .skip = 1});
  Status s = store->Compact(90);
  if (s.ok()) s = store->WaitForCompaction(90);
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s;
  EXPECT_EQ(store->WriteStatus().code(), StatusCode::kIOError);
  EXPECT_EQ(ValueAt(store.get(), "k1"), "v");
  EXPECT_EQ(store->Put(MakePut("x", "y")).status().code(),
            StatusCode::kIOError);
  fault_.ClearErrors();
  store.reset();  // the compaction thread stops cleanly
  store = testing::OpenOrDie(Dir(), nullptr,
                             [&](Options* o) { o->file_system = &fault_; });
  ASSERT_NE(store, nullptr);
  // A scheduled compaction resumes after the restart.
  if (store->CompactRevision() == 90) {
    EXPECT_TRUE(store->WaitForCompaction(90).ok());
  }
  EXPECT_TRUE(store->Put(MakePut("x", "y")).ok());
}

}  // namespace
}  // namespace kplane::mvcc
