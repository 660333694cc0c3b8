// The NOSPACE alarm: over quota, writes are refused while reads, deletes
// and compaction still work; the alarm is persisted until disarmed.
#include <gtest/gtest.h>

#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;
using testing::ValueAt;

constexpr int64_t kQuota = 4 << 20;

std::unique_ptr<Store> OpenSmall(const std::string& dir) {
  return testing::OpenOrDie(dir, nullptr,
                            [](Options* o) { o->quota_bytes = kQuota; });
}

// In a write group, the entries staged before the one that raises the alarm
// are written out first: the alarm is persisted at once, and a crash must
// not leave it without them (their replay would then be refused).
TEST(MvccQuotaTest, AlarmInAWriteGroupWritesOutWhatWasStagedFirst) {
  testing::TempDir dir;
  auto store = OpenSmall(dir.path());
  ASSERT_NE(store, nullptr);
  const std::string value(64 * 1024, 'x');
  store->BeginWriteGroup();
  Status st;
  uint64_t index = 0, last_ok = 0;
  int64_t last_rev = 0;
  while (st.ok() && index < 1000) {
    ++index;
    auto r =
        store->Put(MakePut("k" + std::to_string(index % 20), value), index);
    st = r.status();
    if (r.ok()) {
      last_ok = index;
      last_rev = r->header().revision();
    }
  }
  ASSERT_EQ(st.code(), StatusCode::kNoSpace);
  // Still inside the group, yet everything before the refused put is out.
  EXPECT_EQ(store->ConsistentIndex(), last_ok);
  EXPECT_EQ(store->CurrentRevision(), last_rev);
  store->EndWriteGroup();
  store.reset();  // as after a crash: reopen and find both
  store = OpenSmall(dir.path());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->NoSpaceAlarm());
  EXPECT_EQ(store->ConsistentIndex(), last_ok);
  EXPECT_EQ(store->CurrentRevision(), last_rev);
}

TEST(MvccQuotaTest, NoSpaceAlarmRefusesWritesButServesTheRest) {
  testing::TempDir dir;
  auto store = OpenSmall(dir.path());
  ASSERT_NE(store, nullptr);
  const std::string value(64 * 1024, 'x');
  Status st;
  int written = 0;
  for (int i = 0; i < 1000 && st.ok(); ++i) {
    st = store->Put(MakePut("k" + std::to_string(i % 20), value)).status();
    if (st.ok()) ++written;
  }
  ASSERT_EQ(st.code(), StatusCode::kNoSpace);
  EXPECT_EQ(st.message(), "etcdserver: mvcc: database space exceeded");
  EXPECT_TRUE(store->NoSpaceAlarm());
  EXPECT_GT(written, 40);  // about quota / value size
  const int64_t rev = store->CurrentRevision();

  // Writes that add data are refused.
  EXPECT_EQ(store->Put(MakePut("small", "v")).status().code(),
            StatusCode::kNoSpace);
  etcdserverpb::TxnRequest put_txn;
  *put_txn.add_success()->mutable_request_put() = MakePut("t", "v");
  EXPECT_EQ(store->Txn(put_txn).status().code(), StatusCode::kNoSpace);
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_id(1);
  grant.set_ttl(10);
  EXPECT_EQ(store->LeaseGrant(grant).status().code(), StatusCode::kNoSpace);
  EXPECT_EQ(store->CurrentRevision(), rev);

  // Reads, deletes (also in a txn) and compaction still work.
  EXPECT_EQ(ValueAt(store.get(), "k0"), value);
  ASSERT_TRUE(store->DeleteRange(MakeDelete("k1", "k2")).ok());
  etcdserverpb::TxnRequest del_txn;
  *del_txn.add_success()->mutable_request_delete_range() = MakeDelete("k2");
  ASSERT_TRUE(store->Txn(del_txn).ok());
  ASSERT_TRUE(store->Compact(store->CurrentRevision()).ok());
  ASSERT_TRUE(store->WaitForCompaction(store->CurrentRevision()).ok());
  ASSERT_TRUE(store->Defrag().ok());
  EXPECT_LT(store->DbSize(), kQuota / 2);

  // The alarm outlives a restart until disarmed.
  store.reset();
  store = OpenSmall(dir.path());
  EXPECT_TRUE(store->NoSpaceAlarm());
  EXPECT_EQ(store->Put(MakePut("small", "v")).status().code(),
            StatusCode::kNoSpace);
  ASSERT_TRUE(store->DisarmNoSpaceAlarm().ok());
  EXPECT_FALSE(store->NoSpaceAlarm());
  EXPECT_TRUE(store->Put(MakePut("small", "v")).ok());
  EXPECT_TRUE(store->LeaseGrant(grant).ok());
}

}  // namespace
}  // namespace kplane::mvcc
