#include "storage/mvcc/staged_batch.h"

#include <gtest/gtest.h>
#include <rocksdb/comparator.h>
#include <rocksdb/options.h>

#include <random>
#include <string>
#include <vector>

namespace kplane::mvcc {
namespace {

// What a StagedBatch holds must be what a WriteBatchWithIndex given the
// same calls holds (the store before staged_batch.h): the same bytes to
// write, and once indexed, the same answers to reads -- whenever the index
// is built, with save points open or not.
TEST(MvccStagedBatchTest, SameRecordsAndReadsAsAnIndexedBatch) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    StagedBatch staged;
    rocksdb::WriteBatchWithIndex want(rocksdb::BytewiseComparator(), 0,
                                      /*overwrite_key=*/true);
    int open_save_points = 0;
    const int index_at = static_cast<int>(rng() % 40);  // step to index at
    for (int step = 0; step < 40; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " +
                   std::to_string(step));
      if (step == index_at) staged.Indexed();
      const std::string key = "k" + std::to_string(rng() % 6);
      switch (rng() % 6) {
        case 0:
        case 1: {
          const std::string value = "v" + std::to_string(step);
          staged.Put(key, value);
          ASSERT_TRUE(want.Put(key, value).ok());
          break;
        }
        case 2:
          staged.Delete(key);
          ASSERT_TRUE(want.Delete(key).ok());
          break;
        case 3:
          staged.SetSavePoint();
          want.SetSavePoint();
          ++open_save_points;
          break;
        case 4:
          if (open_save_points == 0) break;
          staged.RollbackToSavePoint();
          ASSERT_TRUE(want.RollbackToSavePoint().ok());
          --open_save_points;
          break;
        case 5:
          if (open_save_points == 0) break;
          staged.PopSavePoint();
          ASSERT_TRUE(want.PopSavePoint().ok());
          --open_save_points;
          break;
      }
      ASSERT_EQ(staged.GetWriteBatch()->Data(), want.GetWriteBatch()->Data());
      ASSERT_EQ(staged.Count(), want.GetWriteBatch()->Count());
      ASSERT_EQ(staged.DataSize(), want.GetWriteBatch()->GetDataSize());
      ASSERT_EQ(staged.indexed(), step >= index_at);
    }
    // Reads of every key agree (this indexes the batch if it was not).
    for (int k = 0; k < 6; ++k) {
      const std::string key = "k" + std::to_string(k);
      std::string got, expected;
      rocksdb::Status g =
          staged.Indexed()->GetFromBatch(rocksdb::DBOptions(), key, &got);
      rocksdb::Status e =
          want.GetFromBatch(rocksdb::DBOptions(), key, &expected);
      EXPECT_EQ(g.code(), e.code()) << "seed " << seed << " " << key;
      EXPECT_EQ(got, expected) << "seed " << seed << " " << key;
    }
    // Unwinding what is still open ends at the same bytes too.
    while (open_save_points-- > 0) {
      staged.RollbackToSavePoint();
      ASSERT_TRUE(want.RollbackToSavePoint().ok());
      ASSERT_EQ(staged.GetWriteBatch()->Data(), want.GetWriteBatch()->Data())
          << "seed " << seed;
    }
  }
}

TEST(MvccStagedBatchTest, IndexedOnlyFromTheFirstReadToClear) {
  StagedBatch b;
  b.Put("a", "1");
  EXPECT_FALSE(b.indexed());
  b.SetSavePoint();
  b.Put("b", "2");
  std::string v;
  ASSERT_TRUE(b.Indexed()->GetFromBatch(rocksdb::DBOptions(), "b", &v).ok());
  EXPECT_EQ(v, "2");
  EXPECT_TRUE(b.indexed());
  // The save point set before the index was built still holds.
  b.RollbackToSavePoint();
  EXPECT_TRUE(
      b.Indexed()->GetFromBatch(rocksdb::DBOptions(), "b", &v).IsNotFound());
  EXPECT_EQ(b.Count(), 1u);
  b.Clear();
  EXPECT_FALSE(b.indexed());
  EXPECT_EQ(b.Count(), 0u);
  b.Put("c", "3");
  EXPECT_FALSE(b.indexed());
  EXPECT_EQ(b.Count(), 1u);

  StagedBatch always(/*always_indexed=*/true);
  EXPECT_TRUE(always.indexed());
  always.Put("a", "1");
  always.Clear();
  EXPECT_TRUE(always.indexed());
}

}  // namespace
}  // namespace kplane::mvcc
