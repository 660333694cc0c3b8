// Compaction: what it deletes, what it refuses, space accounting, defrag,
// resumption, and writers running alongside it.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/mvcc/keys.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/store_internal.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;
using testing::ValueAt;
using Versions = std::vector<std::pair<int64_t, bool>>;

class MvccCompactionTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(int batch = 1000) {
    store_.reset();
    store_ = testing::OpenOrDie(dir_.path(), nullptr, [batch](Options* o) {
      o->compaction_batch_records = batch;
    });
    ASSERT_NE(store_, nullptr);
  }
  void Put(const std::string& k, const std::string& v) {
    ASSERT_TRUE(store_->Put(MakePut(k, v)).ok());
  }
  void CompactAndWait(int64_t rev) {
    ASSERT_TRUE(store_->Compact(rev).ok());
    ASSERT_TRUE(store_->WaitForCompaction(rev).ok());
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

// The seeds' example: /foo written at revisions 2, 4, 6 and again later
// (an empty store is at 1); compacting to 5000 drops revisions 2, 4 and 6.
TEST_F(MvccCompactionTest, SeedExampleDropsSupersededRevisions) {
  Put("/foo", "v1");  // 2
  Put("/bar", "v2");  // 3
  Put("/foo", "v3");  // 4
  Put("/baz", "x");   // 5
  Put("/foo", "v5");  // 6
  for (int rev = 7; rev < 5000; ++rev) Put("/other/" + std::to_string(rev), "");
  Put("/foo", "v5000");  // 5000
  Put("/foo", "v5001");  // 5001
  ASSERT_EQ(store_->CurrentRevision(), 5001);
  EXPECT_EQ(
      store_->RawVersions("/foo"),
      (Versions{
          {5001, false}, {5000, false}, {6, false}, {4, false}, {2, false}}));
  CompactAndWait(5000);
  EXPECT_EQ(store_->RawVersions("/foo"),
            (Versions{{5001, false}, {5000, false}}));
  EXPECT_EQ(store_->RawVersions("/bar"), (Versions{{3, false}}));  // live
  // The events below 5000 are gone; revision 5000 itself stays whole.
  EXPECT_EQ(store_->RawEventCount(4999), 0);
  EXPECT_EQ(store_->RawEventCount(5001), 2);

  for (int64_t rev : {2, 4, 6, 4999}) {
    auto r = store_->Range(MakeRange("/foo", "", rev));
    EXPECT_EQ(r.status().code(), StatusCode::kCompacted) << rev;
    EXPECT_EQ(r.status().message(),
              "mvcc: required revision has been compacted");
    EXPECT_EQ(r.status().detail(), 5000);
  }
  EXPECT_EQ(ValueAt(store_.get(), "/foo", 5000), "v5000");
  EXPECT_EQ(ValueAt(store_.get(), "/bar", 5000), "v2");
  EXPECT_EQ(ValueAt(store_.get(), "/foo"), "v5001");

  // A watch from a compacted revision gets ErrCompacted.
  auto stream = store_->NewWatchStream();
  etcdserverpb::WatchCreateRequest w;
  w.set_key("/foo");
  w.set_start_revision(4);
  auto id = stream->Watch(w);
  EXPECT_EQ(id.status().code(), StatusCode::kCompacted);
  EXPECT_EQ(id.status().detail(), 5000);
  w.set_start_revision(4999);
  EXPECT_EQ(stream->Watch(w).status().code(), StatusCode::kCompacted);
  // As etcd, the compaction revision itself can still be watched.
  w.set_start_revision(5000);
  ASSERT_TRUE(stream->Watch(w).ok());
  auto r = stream->Next(Clock::Real()->Now() + seconds(10));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->events_size(), 2);
  EXPECT_EQ(r->events(0).kv().value(), "v5000");
  EXPECT_EQ(r->events(1).kv().value(), "v5001");
}

TEST_F(MvccCompactionTest, TombstonesGoWithTheirHistory) {
  Put("a", "1");                                           // 2
  Put("a", "2");                                           // 3
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("a")).ok());  // 4
  Put("b", "1");                                           // 5
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("b")).ok());  // 6
  CompactAndWait(5);
  // a's tombstone (4) is <= 5: the key is gone entirely.
  EXPECT_TRUE(store_->RawVersions("a").empty());
  // b's tombstone (6) is after 5: b@5 is still readable at 5.
  EXPECT_EQ(store_->RawVersions("b"), (Versions{{6, true}, {5, false}}));
  EXPECT_EQ(ValueAt(store_.get(), "b", 5), "1");
  EXPECT_EQ(ValueAt(store_.get(), "a", 5), "<none>");
  // A tombstone at exactly the compaction revision stays (watching from 6
  // must still see the delete); what it hides goes.
  CompactAndWait(6);
  EXPECT_EQ(store_->RawVersions("b"), (Versions{{6, true}}));
  EXPECT_EQ(ValueAt(store_.get(), "b", 6), "<none>");
  Put("c", "1");  // 7
  CompactAndWait(7);
  EXPECT_TRUE(store_->RawVersions("b").empty());
}

TEST_F(MvccCompactionTest, RefusesOldAndFutureRevisions) {
  Put("a", "1");  // 2
  Put("a", "2");  // 3
  Put("a", "3");  // 4
  EXPECT_EQ(store_->Compact(5).code(), StatusCode::kFutureRevision);
  CompactAndWait(3);
  EXPECT_EQ(store_->CompactRevision(), 3);
  Status again = store_->Compact(3);
  EXPECT_EQ(again.code(), StatusCode::kCompacted);
  EXPECT_EQ(again.detail(), 3);
  EXPECT_EQ(store_->Compact(2).code(), StatusCode::kCompacted);
  // Reading at exactly the compacted revision is allowed.
  EXPECT_EQ(ValueAt(store_.get(), "a", 3), "2");
}

TEST_F(MvccCompactionTest, SurvivesReopen) {
  Put("a", "1");
  Put("a", "2");
  CompactAndWait(2);
  Reopen();
  EXPECT_EQ(store_->CompactRevision(), 2);
  EXPECT_EQ(store_->FinishedCompactRevision(), 2);
  EXPECT_EQ(store_->Range(MakeRange("a", "", 1)).status().code(),
            StatusCode::kCompacted);
  EXPECT_EQ(ValueAt(store_.get(), "a"), "2");
}

TEST_F(MvccCompactionTest, CompactDoesNotShrinkTheFileDefragDoes) {
  // 50 keys x 60 versions x 1 KiB of incompressible bytes.
  std::mt19937_64 rng(1);
  std::string value(1024, ' ');
  for (int round = 0; round < 60; ++round) {
    for (int k = 0; k < 50; ++k) {
      for (char& c : value) c = static_cast<char>(rng());
      Put("key" + std::to_string(k), value);
    }
  }
  ASSERT_TRUE(store_->Defrag().ok());  // settle into SST files
  const int64_t size_before = store_->DbSize();
  const int64_t in_use_before = store_->DbSizeInUse();
  EXPECT_GT(size_before, 50 * 60 * 1024);
  EXPECT_GT(in_use_before, 50 * 60 * 1024);
  CompactAndWait(store_->CurrentRevision());
  const int64_t size_compacted = store_->DbSize();
  const int64_t in_use_compacted = store_->DbSizeInUse();
  EXPECT_GE(size_compacted, size_before * 9 / 10);
  EXPECT_LT(in_use_compacted, in_use_before / 30);
  ASSERT_TRUE(store_->Defrag().ok());
  EXPECT_LT(store_->DbSize(), size_before / 20);
  EXPECT_EQ(store_->DbSizeInUse(), in_use_compacted);
  EXPECT_EQ(ValueAt(store_.get(), "key49"), value);  // the last write
  // The in-use size is persisted.
  Reopen();
  EXPECT_EQ(store_->DbSizeInUse(), in_use_compacted);
}

TEST_F(MvccCompactionTest, SmallBatchesAndHotKeys) {
  Reopen(/*batch=*/7);
  for (int i = 0; i < 500; ++i) Put("hot", std::to_string(i));
  for (int i = 0; i < 50; ++i) Put("cold" + std::to_string(i), "x");
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("cold1", "cold3")).ok());
  Put("end", "x");
  const int64_t rev = store_->CurrentRevision();
  CompactAndWait(rev);
  EXPECT_EQ(store_->RawVersions("hot"), (Versions{{501, false}}));
  EXPECT_TRUE(store_->RawVersions("cold1").empty());
  EXPECT_TRUE(store_->RawVersions("cold25").empty());
  EXPECT_EQ(store_->RawVersions("cold0").size(), 1u);
  EXPECT_EQ(store_->RawEventCount(rev - 1), 0);
  EXPECT_EQ(store_->RawEventCount(rev), 1);
  EXPECT_EQ(store_->Range(MakeRange("cold", "cole"))->count(), 50 - 22);
}

// Rounds of writes and compactions in one memtable: every round's range
// deletions (each key's superseded versions, the event log below the
// target) are followed by puts into the event log and meta regions, whose
// inserts start from the memtable's hints (store_internal.h,
// DeleteRangeOutsideHints). With a range deletion starting inside a hinted
// region, RocksDB 7.8 hands the range-tombstone skiplist's position to the
// next put: its debug checks abort here, a release build corrupts the
// memtable. Every read afterwards must still see what was written.
TEST_F(MvccCompactionTest, WritesAfterRangeDeletionsInOneMemtable) {
  Reopen(/*batch=*/3);
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 30; ++i) {
      Put("key" + std::to_string(i % 6), std::to_string(round));
    }
    const int64_t now = store_->CurrentRevision();
    CompactAndWait(now);
    ASSERT_EQ(store_->RawEventCount(now - 1), 0) << round;
    ASSERT_EQ(ValueAt(store_.get(), "key0"), std::to_string(round));
  }
  const int64_t rev = store_->CurrentRevision();
  EXPECT_EQ(rev, 1 + 40 * 30);
  EXPECT_EQ(store_->RawEventCount(rev - 1), 0);
  EXPECT_EQ(store_->RawEventCount(rev), 1);
  for (int k = 0; k < 6; ++k) {
    const std::string key = "key" + std::to_string(k);
    EXPECT_EQ(ValueAt(store_.get(), key), "39") << key;
    EXPECT_EQ(store_->RawVersions(key).size(), 1u) << key;
  }
  EXPECT_EQ(store_->Range(MakeRange("key", "kez"))->count(), 6);
}

// A WAL written by a binary from before DeleteRangeOutsideHints (the log's
// range deletions began at an event key, inside a hinted region), left by a
// close without a flush, is replayed at the next open without hints, then
// the store opens with them; the store works and reads what it holds.
// Replayed with hints, RocksDB 7.8's debug checks abort here (a release
// build would corrupt the memtable).
TEST_F(MvccCompactionTest, ReplaysAWalWithRangeDeletionsStartingAtEventKeys) {
  Put("a", "1");
  Put("b", "2");
  store_.reset();
  {
    rocksdb::Options o;
    o.avoid_flush_during_shutdown = true;  // the records stay in the WAL
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.path(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    // What the old compaction wrote, round after round: events, then one
    // range deletion of them from the first event's key.
    const std::string record(
        "\x01"
        "a",
        2);
    for (int round = 0; round < 40; ++round) {
      const int64_t first = 1000 + 10 * round;
      rocksdb::WriteBatch events;
      for (int j = 0; j < 10; ++j) {
        ASSERT_TRUE(events.Put(keys::EventKey(first + j, 0), record).ok());
      }
      ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &events).ok());
      rocksdb::WriteBatch range;
      ASSERT_TRUE(range
                      .DeleteRange(keys::EventKey(first, 0),
                                   keys::EventKey(first + 10, 0))
                      .ok());
      ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &range).ok());
    }
    ASSERT_TRUE(db->Close().ok());
  }
  Reopen();
  EXPECT_EQ(store_->CurrentRevision(), 3);
  EXPECT_EQ(store_->RawEventCount(1 << 20), 2);  // the raw events are gone
  for (int i = 0; i < 200; ++i) Put("c" + std::to_string(i % 7), "x");
  EXPECT_EQ(ValueAt(store_.get(), "a"), "1");
  EXPECT_EQ(ValueAt(store_.get(), "c3"), "x");
  EXPECT_EQ(store_->RawEventCount(1 << 20), 202);
}

// The guard itself: a range deletion may not start in a hinted region.
TEST(MvccDeleteRangeOutsideHintsTest, RefusesARangeStartingInAHintedRegion) {
  rocksdb::WriteBatch wb;
  internal::DeleteRangeOutsideHints(&wb, keys::EventRangeStart(5),
                                    keys::EventKey(9, 0));
  internal::DeleteRangeOutsideHints(&wb, "k/a", "k/b");
  EXPECT_EQ(wb.Count(), 2u);
  EXPECT_DEATH(internal::DeleteRangeOutsideHints(&wb, keys::EventKey(5, 0),
                                                 keys::EventKey(9, 0)),
               "memtable hint region");
  EXPECT_DEATH(
      internal::DeleteRangeOutsideHints(&wb, "mcurrent_revision", "mz"),
      "memtable hint region");
}

TEST_F(MvccCompactionTest, ResumesAfterCloseMidway) {
  Reopen(/*batch=*/5);
  for (int i = 0; i < 3000; ++i) Put("k" + std::to_string(i % 10), "v");
  // Revisions 2..3001: after 2991 each key is written once more.
  ASSERT_TRUE(store_->Compact(2991).ok());
  store_.reset();  // most likely mid-compaction
  Reopen();
  EXPECT_EQ(store_->CompactRevision(), 2991);
  ASSERT_TRUE(store_->WaitForCompaction(2991).ok());
  for (int k = 0; k < 10; ++k) {
    EXPECT_LE(store_->RawVersions("k" + std::to_string(k)).size(), 2u);
  }
  EXPECT_EQ(store_->RawEventCount(2990), 0);
}

TEST_F(MvccCompactionTest, WritersRunAlongside) {
  for (int i = 0; i < 2000; ++i) Put("k" + std::to_string(i % 50), "old");
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(
          store_->Put(MakePut("k" + std::to_string(i % 50), std::to_string(i)))
              .ok());
    }
    done = true;
  });
  ASSERT_TRUE(store_->Compact(2001).ok());  // the last "old" write
  ASSERT_TRUE(store_->WaitForCompaction(2001).ok());
  writer.join();
  ASSERT_TRUE(done);
  EXPECT_EQ(store_->CurrentRevision(), 3001);
  for (int k = 0; k < 50; ++k) {
    // The last write of k was i = 950 + k.
    EXPECT_EQ(ValueAt(store_.get(), "k" + std::to_string(k)),
              std::to_string(950 + k));
    EXPECT_EQ(ValueAt(store_.get(), "k" + std::to_string(k), 2001), "old");
  }
}

// Many versions per key, compacted in steps with small and large batches
// (and a reopen in the middle of a compaction): exactly the right versions
// survive, every read at or above the target is what it was before the
// compaction, below it is Compacted, and the in-use size does not depend on
// how the work was split. The keys include prefixes of each other and NUL
// bytes, so a range deletion spilling into a neighbouring key would show.
struct HistoryCase {
  int batch;
  bool reopen_midway;
};
void PrintTo(const HistoryCase& c, std::ostream* os) {
  *os << "batch " << c.batch << (c.reopen_midway ? ", reopen midway" : "");
}

class MvccCompactionHistoryTest : public ::testing::TestWithParam<HistoryCase> {
};

// Writes the same deterministic history into `s`: 3,000 writes over 12
// keys (hot ones, deletes and re-creates, two-put txns), returning every
// revision's full range (serialized kvs) before any compaction.
std::vector<std::string> WriteHistory(Store* s,
                                      const std::vector<std::string>& keys) {
  std::mt19937_64 rng(42);
  std::set<std::string> live;
  // states[rev]; an empty store is at kInitialRevision.
  std::vector<std::string> states(Store::kInitialRevision + 1);
  auto snapshot = [&] {
    auto r = s->Range(MakeRange(std::string(1, '\0'), std::string(1, '\0')));
    EXPECT_TRUE(r.ok()) << r.status();
    std::string out;
    for (const auto& kv : r->kvs()) out += kv.SerializeAsString() + "|";
    return out;
  };
  for (int i = 1; i <= 3000; ++i) {
    // Skewed: the first keys get most of the writes.
    const std::string& k =
        keys[std::min<size_t>(rng() % keys.size(), rng() % keys.size())];
    const int op = static_cast<int>(rng() % 10);
    if (op < 2 && live.count(k)) {
      EXPECT_TRUE(s->DeleteRange(MakeDelete(k)).ok());
      live.erase(k);
    } else if (op == 2) {
      const std::string& k2 =
          keys[(rng() % (keys.size() - 1) + 1 + (&k - keys.data())) %
               keys.size()];
      etcdserverpb::TxnRequest t;
      *t.add_success()->mutable_request_put() = MakePut(k, std::to_string(i));
      *t.add_success()->mutable_request_put() = MakePut(k2, std::to_string(-i));
      EXPECT_TRUE(s->Txn(t).ok());
      live.insert(k);
      live.insert(k2);
    } else {
      EXPECT_TRUE(s->Put(MakePut(k, std::to_string(i))).ok());
      live.insert(k);
    }
    EXPECT_EQ(s->CurrentRevision(), i + Store::kInitialRevision);
    states.push_back(snapshot());
  }
  return states;
}

TEST_P(MvccCompactionHistoryTest, KeepsExactlyTheRightVersions) {
  const std::vector<std::string> keys = {"a",
                                         std::string("a\0", 2),
                                         std::string("a\0\0", 3),
                                         "a\x01",
                                         "ab",
                                         "b",
                                         "hot",
                                         "hot0",
                                         "k/1",
                                         "k/10",
                                         "k/2",
                                         std::string("z\0z", 3)};
  testing::TempDir dir;
  auto open = [&] {
    return testing::OpenOrDie(dir.path(), nullptr, [](Options* o) {
      o->compaction_batch_records = GetParam().batch;
    });
  };
  auto store = open();
  ASSERT_NE(store, nullptr);
  // Versions of each key before compaction: (mod revision, tombstone).
  const std::vector<std::string> states = WriteHistory(store.get(), keys);
  std::map<std::string, Versions> history;
  for (const auto& k : keys) history[k] = store->RawVersions(k);

  for (int64_t target : {1000, 1001, 2400, 3000}) {
    SCOPED_TRACE("target " + std::to_string(target));
    ASSERT_TRUE(store->Compact(target).ok());
    if (GetParam().reopen_midway) {
      store.reset();  // likely mid-compaction; resumes on open
      store = open();
      ASSERT_NE(store, nullptr);
      EXPECT_EQ(store->CompactRevision(), target);
    }
    ASSERT_TRUE(store->WaitForCompaction(target).ok());
    for (const auto& k : keys) {
      // Kept: every version above the target, and the newest one <= target
      // unless it is a tombstone below the target.
      Versions want;
      for (const auto& [rev, tomb] : history[k]) {
        if (rev > target) {
          want.emplace_back(rev, tomb);
        } else {
          if (!tomb || rev == target) want.emplace_back(rev, tomb);
          break;
        }
      }
      EXPECT_EQ(store->RawVersions(k), want) << "key " << k;
    }
    EXPECT_EQ(store->RawEventCount(target - 1), 0);
    EXPECT_GE(store->RawEventCount(target), 1);
    EXPECT_LE(store->RawEventCount(target), 2);
    EXPECT_EQ(store
                  ->Range(MakeRange(std::string(1, '\0'), std::string(1, '\0'),
                                    target - 1))
                  .status()
                  .code(),
              StatusCode::kCompacted);
    for (int64_t rev = target; rev <= 3000; ++rev) {
      auto r = store->Range(
          MakeRange(std::string(1, '\0'), std::string(1, '\0'), rev));
      ASSERT_TRUE(r.ok()) << r.status();
      std::string got;
      for (const auto& kv : r->kvs()) got += kv.SerializeAsString() + "|";
      ASSERT_EQ(got, states[rev]) << "revision " << rev;
    }
  }

  // The in-use size is exact: the same history compacted to 3000 in one
  // large-batch pass, without reopening, ends with the same figure.
  testing::TempDir ref_dir;
  auto ref = testing::OpenOrDie(ref_dir.path());
  ASSERT_NE(ref, nullptr);
  WriteHistory(ref.get(), keys);
  ASSERT_TRUE(ref->Compact(3000).ok());
  ASSERT_TRUE(ref->WaitForCompaction(3000).ok());
  EXPECT_GT(ref->DbSizeInUse(), 0);
  EXPECT_EQ(store->DbSizeInUse(), ref->DbSizeInUse());
}

INSTANTIATE_TEST_SUITE_P(Batches, MvccCompactionHistoryTest,
                         ::testing::Values(HistoryCase{1, false},
                                           HistoryCase{7, false},
                                           HistoryCase{1000, false},
                                           HistoryCase{3, true},
                                           HistoryCase{50, true}),
                         [](const ::testing::TestParamInfo<HistoryCase>& info) {
                           return "Batch" + std::to_string(info.param.batch) +
                                  (info.param.reopen_midway ? "Reopen" : "");
                         });

}  // namespace
}  // namespace kplane::mvcc
