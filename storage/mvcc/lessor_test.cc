#include "storage/mvcc/lessor.h"

#include <gtest/gtest.h>

#include <map>

namespace kplane::mvcc {
namespace {

// Records what the lessor asks to persist; can be told to fail.
class FakeBackend : public LeaseBackend {
 public:
  Status SaveLease(int64_t id, int64_t ttl, uint64_t ci) override {
    if (fail) return IOError("disk on fire");
    saved[id] = ttl;
    last_ci = ci;
    return Status::Ok();
  }
  Status DeleteLeaseAndKeys(int64_t id, const std::vector<std::string>& keys,
                            uint64_t ci) override {
    if (fail) return IOError("disk on fire");
    deleted[id] = keys;
    last_ci = ci;
    // The store detaches the keys it deletes.
    for (const auto& k : keys) lessor->Detach(id, k);
    return Status::Ok();
  }
  bool fail = false;
  Lessor* lessor = nullptr;
  std::map<int64_t, int64_t> saved;
  std::map<int64_t, std::vector<std::string>> deleted;
  uint64_t last_ci = 0;
};

class MvccLessorTest : public ::testing::Test {
 protected:
  MvccLessorTest() : lessor_(&clock_, &backend_) { backend_.lessor = &lessor_; }
  FakeClock clock_;
  FakeBackend backend_;
  Lessor lessor_;
};

TEST_F(MvccLessorTest, GrantAppliesEtcdLimits) {
  auto ttl = lessor_.Grant(1, 1, 10);
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(*ttl, kMinLeaseTTL);
  EXPECT_EQ(backend_.saved[1], 2);
  EXPECT_EQ(backend_.last_ci, 10u);
  EXPECT_EQ(*lessor_.Grant(2, -5, 0), 2);
  EXPECT_EQ(*lessor_.Grant(3, kMaxLeaseTTL, 0), kMaxLeaseTTL);

  auto big = lessor_.Grant(4, kMaxLeaseTTL + 1, 0);
  EXPECT_EQ(big.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(big.status().message(), "etcdserver: too large lease TTL");

  auto dup = lessor_.Grant(1, 10, 0);
  EXPECT_EQ(dup.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(dup.status().message(), "etcdserver: lease already exists");

  EXPECT_EQ(lessor_.Grant(0, 10, 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(lessor_.Leases(), (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(MvccLessorTest, FailedPersistenceGrantsNothing) {
  backend_.fail = true;
  EXPECT_FALSE(lessor_.Grant(1, 10, 0).ok());
  EXPECT_FALSE(lessor_.Exists(1));
}

TEST_F(MvccLessorTest, RevokeDeletesSortedKeysThroughBackend) {
  ASSERT_TRUE(lessor_.Grant(7, 10, 0).ok());
  lessor_.Attach(7, "b");
  lessor_.Attach(7, "a");
  lessor_.Attach(7, "c");
  lessor_.Detach(7, "c");
  ASSERT_TRUE(lessor_.Revoke(7, 99).ok());
  EXPECT_EQ(backend_.deleted[7], (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(backend_.last_ci, 99u);
  EXPECT_FALSE(lessor_.Exists(7));
  Status again = lessor_.Revoke(7, 0);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "etcdserver: requested lease not found");
}

TEST_F(MvccLessorTest, FailedRevokeKeepsLease) {
  ASSERT_TRUE(lessor_.Grant(7, 10, 0).ok());
  backend_.fail = true;
  EXPECT_FALSE(lessor_.Revoke(7, 0).ok());
  EXPECT_TRUE(lessor_.Exists(7));
}

TEST_F(MvccLessorTest, DemotedLessorNeverExpires) {
  ASSERT_TRUE(lessor_.Grant(1, 5, 0).ok());
  clock_.Advance(hours(1));
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
  EXPECT_EQ(lessor_.KeepAlive(1).status().code(), StatusCode::kNotLeader);
  // Not counting time: the remaining TTL is the granted TTL.
  EXPECT_EQ(lessor_.Lookup(1, false)->remaining, 5);
}

TEST_F(MvccLessorTest, PrimaryExpiresAndReportsWithRetryInterval) {
  ASSERT_TRUE(lessor_.Grant(1, 5, 0).ok());
  ASSERT_TRUE(lessor_.Grant(2, 10, 0).ok());
  lessor_.Promote(seconds(0));
  EXPECT_TRUE(lessor_.IsPrimary());
  clock_.Advance(milliseconds(4500));
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
  // Remaining time is truncated to whole seconds, as etcd.
  EXPECT_EQ(lessor_.Lookup(1, false)->remaining, 0);
  EXPECT_EQ(lessor_.Lookup(2, false)->remaining, 5);
  clock_.Advance(milliseconds(500));
  EXPECT_EQ(lessor_.ExpiredLeases(10), (std::vector<int64_t>{1}));
  // Reported once; again only after the retry interval.
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
  clock_.Advance(Lessor::kExpiredRetryInterval);
  EXPECT_EQ(lessor_.ExpiredLeases(10), (std::vector<int64_t>{1}));
  // An expired lease waiting for its revoke cannot be kept alive.
  EXPECT_EQ(lessor_.KeepAlive(1).status().code(), StatusCode::kNotFound);
}

TEST_F(MvccLessorTest, KeepAliveRestartsCountdown) {
  ASSERT_TRUE(lessor_.Grant(1, 10, 0).ok());
  lessor_.Promote(seconds(0));
  clock_.Advance(seconds(8));
  auto ttl = lessor_.KeepAlive(1);
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(*ttl, 10);
  clock_.Advance(seconds(8));
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
  clock_.Advance(seconds(2));
  EXPECT_EQ(lessor_.ExpiredLeases(10), (std::vector<int64_t>{1}));
  EXPECT_EQ(lessor_.KeepAlive(99).status().code(), StatusCode::kNotFound);
}

TEST_F(MvccLessorTest, PromoteExtendsAndDemoteStops) {
  ASSERT_TRUE(lessor_.Grant(1, 5, 0).ok());
  lessor_.Promote(seconds(10));
  clock_.Advance(seconds(14));
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
  clock_.Advance(seconds(1));
  EXPECT_EQ(lessor_.ExpiredLeases(10).size(), 1u);
  lessor_.Demote();
  clock_.Advance(hours(1));
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
  // A new leader counts from the full TTL again.
  lessor_.Promote(seconds(0));
  clock_.Advance(seconds(4));
  EXPECT_TRUE(lessor_.ExpiredLeases(10).empty());
}

TEST_F(MvccLessorTest, ExpiredLeasesHonoursLimitSoonestFirst) {
  for (int64_t id = 1; id <= 5; ++id) {
    ASSERT_TRUE(lessor_.Grant(id, 10 + id, 0).ok());
  }
  lessor_.Promote(seconds(0));
  clock_.Advance(seconds(100));
  EXPECT_EQ(lessor_.ExpiredLeases(2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(lessor_.ExpiredLeases(10), (std::vector<int64_t>{3, 4, 5}));
}

TEST_F(MvccLessorTest, LookupListsKeys) {
  ASSERT_TRUE(lessor_.Grant(1, 30, 0).ok());
  lessor_.Attach(1, "z");
  lessor_.Attach(1, "y");
  auto info = lessor_.Lookup(1, true);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->ttl, 30);
  EXPECT_EQ(info->keys, (std::vector<std::string>{"y", "z"}));
  EXPECT_FALSE(lessor_.Lookup(2, true).has_value());
}

TEST_F(MvccLessorTest, RestoreRecreatesWithoutPersisting) {
  lessor_.Restore(9, 20);
  EXPECT_TRUE(lessor_.Exists(9));
  EXPECT_TRUE(backend_.saved.empty());
  lessor_.Promote(seconds(0));
  clock_.Advance(seconds(20));
  EXPECT_EQ(lessor_.ExpiredLeases(10), (std::vector<int64_t>{9}));
}

}  // namespace
}  // namespace kplane::mvcc
