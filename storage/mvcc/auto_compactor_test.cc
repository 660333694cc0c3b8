#include "storage/mvcc/auto_compactor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

class Recorder {
 public:
  Status Compact(int64_t rev) {
    MutexLock l(&mu_);
    calls_.push_back(rev);
    return answer_;
  }
  std::vector<int64_t> calls() {
    MutexLock l(&mu_);
    return calls_;
  }
  void set_answer(Status s) {
    MutexLock l(&mu_);
    answer_ = std::move(s);
  }

 private:
  Mutex mu_;
  std::vector<int64_t> calls_;
  Status answer_;
};

// Once the compactor waits, runs `between` (e.g. a revision change it must
// sample next), advances the clock by `d` and waits for the tick it wakes.
void Step(FakeClock* clock, AutoCompactor* ac, Duration d,
          const std::function<void()>& between = nullptr) {
  clock->WaitForWaiters(1);
  if (between) between();
  int64_t before = ac->ticks();
  clock->Advance(d);
  ac->WaitForTicks(before + 1);
}

TEST(MvccAutoCompactorTest, RevisionModeKeepsLastN) {
  FakeClock clock;
  Recorder rec;
  std::atomic<int64_t> rev{5};
  AutoCompactionOptions o;
  o.mode = AutoCompactionMode::kRevision;
  o.retention_revisions = 10;
  AutoCompactor ac(
      &clock, o, [&] { return rev.load(); },
      [&](int64_t r) { return rec.Compact(r); });
  ac.Start();
  Step(&clock, &ac, minutes(5));
  EXPECT_TRUE(rec.calls().empty());  // 5 - 10 <= 0
  rev = 100;
  Step(&clock, &ac, minutes(5));
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{90}));
  Step(&clock, &ac, minutes(5));  // nothing new: no second call
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{90}));
  rev = 150;
  rec.set_answer(CompactedError(200));  // counted as done
  Step(&clock, &ac, minutes(5));
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{90, 140}));
  Step(&clock, &ac, minutes(5));
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{90, 140}));
  ac.Stop();
}

TEST(MvccAutoCompactorTest, PeriodicModeCompactsToRevisionOnePeriodAgo) {
  FakeClock clock;
  Recorder rec;
  std::atomic<int64_t> rev{1};
  AutoCompactionOptions o;
  o.mode = AutoCompactionMode::kPeriodic;
  o.retention_period = minutes(10);  // samples every minute
  AutoCompactor ac(
      &clock, o, [&] { return rev.load(); },
      [&](int64_t r) { return rec.Compact(r); });
  ac.Start();
  // The sample taken at minute m is m + 1.
  auto set = [&](int64_t v) { return [&rev, v] { rev = v; }; };
  for (int minute = 1; minute <= 9; ++minute) {
    Step(&clock, &ac, minutes(1), set(minute + 1));
    EXPECT_TRUE(rec.calls().empty()) << "minute " << minute;
  }
  // t = 10 min: compact to the t = 0 sample.
  Step(&clock, &ac, minutes(1), set(11));
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{1}));
  for (int minute = 11; minute <= 19; ++minute) {
    Step(&clock, &ac, minutes(1), set(minute + 1));
  }
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{1}));
  Step(&clock, &ac, minutes(1), set(21));  // t = 20 min: the t = 10 sample
  EXPECT_EQ(rec.calls(), (std::vector<int64_t>{1, 11}));
  ac.Stop();
}

TEST(MvccAutoCompactorTest, PeriodicModeRetriesAfterFailure) {
  FakeClock clock;
  Recorder rec;
  AutoCompactionOptions o;
  o.mode = AutoCompactionMode::kPeriodic;
  o.retention_period = minutes(10);
  AutoCompactor ac(
      &clock, o, [] { return int64_t{42}; },
      [&](int64_t r) { return rec.Compact(r); });
  rec.set_answer(IOError("busy"));
  ac.Start();
  for (int i = 0; i < 10; ++i) Step(&clock, &ac, minutes(1));
  EXPECT_EQ(rec.calls().size(), 1u);
  rec.set_answer(Status::Ok());
  Step(&clock, &ac, minutes(1));  // retried one sample interval later
  EXPECT_EQ(rec.calls().size(), 2u);
  Step(&clock, &ac, minutes(1));  // succeeded: wait a whole interval again
  EXPECT_EQ(rec.calls().size(), 2u);
  ac.Stop();
}

TEST(MvccAutoCompactorTest, StoreCompactsItselfInRevisionMode) {
  testing::TempDir dir;
  FakeClock clock;
  auto store = testing::OpenOrDie(dir.path(), &clock, [](Options* o) {
    o->auto_compaction.mode = AutoCompactionMode::kRevision;
    o->auto_compaction.retention_revisions = 5;
  });
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 20; ++i) {  // revisions 2..21
    ASSERT_TRUE(store->Put(testing::MakePut("k", std::to_string(i))).ok());
  }
  // Two waiters: the auto-compactor and the watch thread.
  clock.WaitForWaiters(2);
  clock.Advance(minutes(5));
  ASSERT_TRUE(store->WaitForCompaction(16).ok());
  EXPECT_EQ(store->CompactRevision(), 16);
  EXPECT_EQ(store->Range(testing::MakeRange("k", "", 15)).status().code(),
            StatusCode::kCompacted);
  EXPECT_EQ(testing::ValueAt(store.get(), "k", 16), "14");
}

}  // namespace
}  // namespace kplane::mvcc
