// The remote backend's compactor (compactor.h) on a real single-member
// store, time driven by a FakeClock: every round is awaited, nothing sleeps.
#include "apiserver/storage/compactor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "apiserver/storage/test_store.h"
#include "storage/forwarding_kv.h"

namespace kplane::apiserver {
namespace {

constexpr Duration kInterval = minutes(5);

// The store, with Txn or Compact failing on demand (an unreachable store).
class FlakyKV : public storage::ForwardingKV {
 public:
  using ForwardingKV::ForwardingKV;
  std::atomic<bool> fail_txn{false};
  std::atomic<bool> fail_compact{false};

  StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& req) override {
    if (fail_txn) return UnavailableError("no endpoint answered");
    return ForwardingKV::Txn(req);
  }
  StatusOr<etcdserverpb::CompactionResponse> Compact(
      const etcdserverpb::CompactionRequest& req) override {
    if (fail_compact) return UnavailableError("no endpoint answered");
    return ForwardingKV::Compact(req);
  }
};

class CompactorTest : public ::testing::Test {
 protected:
  storage::KV* kv() { return store_.server(); }

  int64_t Put(const std::string& key, const std::string& value) {
    etcdserverpb::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    auto resp = kv()->Put(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->header().revision() : 0;
  }

  // Range of `key` as of `revision`.
  Status RangeAt(const std::string& key, int64_t revision) {
    etcdserverpb::RangeRequest req;
    req.set_key(key);
    req.set_revision(revision);
    return kv()->Range(req).status();
  }

  // compact_rev_key as stored (nullopt-like: version 0 if absent).
  mvccpb::KeyValue CompactRevKey() {
    etcdserverpb::RangeRequest req;
    req.set_key(std::string(kCompactRevKey));
    auto resp = kv()->Range(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok() || resp->kvs_size() == 0) return {};
    return resp->kvs(0);
  }

  // Lets every compactor (all waiting on the clock) run one round.
  void Tick(std::initializer_list<Compactor*> compactors, int64_t round) {
    clock_.WaitForWaiters(static_cast<int>(compactors.size()));
    clock_.Advance(kInterval);
    for (Compactor* c : compactors) ASSERT_TRUE(c->WaitForRounds(round));
  }

  testing::EmbeddedStore store_;
  FakeClock clock_;
};

TEST_F(CompactorTest, FirstRoundRecordsSecondRoundCompactsToIt) {
  Compactor compactor(kv(), {.interval = kInterval, .clock = &clock_});
  const int64_t first = Put("a", "1");
  Put("a", "2");

  // Round 1: records the revision, compacts nothing.
  Tick({&compactor}, 1);
  mvccpb::KeyValue k = CompactRevKey();
  EXPECT_EQ(k.version(), 1);
  EXPECT_EQ(k.value(), "0");
  const int64_t recorded = k.mod_revision();
  EXPECT_GT(recorded, first);
  EXPECT_EQ(compactor.stats().compactions, 0);
  EXPECT_TRUE(RangeAt("a", first).ok());

  // More writes; round 2 compacts to round 1's revision, not further.
  Put("a", "3");
  const int64_t latest = Put("a", "4");
  Tick({&compactor}, 2);
  Compactor::Stats stats = compactor.stats();
  EXPECT_EQ(stats.compactions, 1);
  EXPECT_EQ(stats.failures, 0);
  EXPECT_EQ(stats.compacted_revision, recorded);
  EXPECT_EQ(RangeAt("a", recorded - 1).code(), StatusCode::kCompacted);
  EXPECT_TRUE(RangeAt("a", recorded).ok());
  EXPECT_TRUE(RangeAt("a", latest).ok());  // the last interval is kept
  k = CompactRevKey();
  EXPECT_EQ(k.version(), 2);
  EXPECT_EQ(k.value(), std::to_string(recorded));
}

// Two API servers on one store: one compaction per interval between them,
// the loser of each round adopting the winner's compact_rev_key version.
TEST_F(CompactorTest, TwoCompactorsCompactOncePerInterval) {
  Compactor a(kv(), {.interval = kInterval, .clock = &clock_});
  Compactor b(kv(), {.interval = kInterval, .clock = &clock_});
  auto compactions = [&] {
    return a.stats().compactions + b.stats().compactions;
  };
  for (int64_t round = 1; round <= 4; ++round) {
    Put("k", std::to_string(round));
    Tick({&a, &b}, round);
    EXPECT_EQ(CompactRevKey().version(), round) << "round " << round;
    EXPECT_EQ(compactions(), round - 1) << "round " << round;
  }
  EXPECT_EQ(a.stats().failures + b.stats().failures, 0);
}

// A compact_rev_key written by someone else (another API server, kube's)
// before this one started: the first round adopts its version and writes
// nothing; from the next round on it compacts.
TEST_F(CompactorTest, AdoptsAnExistingKey) {
  Put(std::string(kCompactRevKey), "0");
  Put(std::string(kCompactRevKey), "0");  // version 2
  Compactor compactor(kv(), {.interval = kInterval, .clock = &clock_});
  const int64_t first = Put("a", "1");
  Tick({&compactor}, 1);
  EXPECT_EQ(CompactRevKey().version(), 2);  // adopted, nothing written
  EXPECT_EQ(compactor.stats().compactions, 0);
  EXPECT_TRUE(RangeAt("a", first).ok());
  // Round 2 wins the key and compacts to the revision round 1 saw.
  Put("a", "2");
  Tick({&compactor}, 2);
  EXPECT_EQ(CompactRevKey().version(), 3);
  EXPECT_EQ(compactor.stats().compactions, 1);
  // Round 1 saw revision `first` (its Txn wrote nothing).
  EXPECT_EQ(compactor.stats().compacted_revision, first);
  EXPECT_EQ(RangeAt("a", first - 1).code(), StatusCode::kCompacted);
}

// Someone compacted further meanwhile (etcdctl compact): kCompacted from
// our compaction is no failure.
TEST_F(CompactorTest, AlreadyCompactedFurtherIsFine) {
  Compactor compactor(kv(), {.interval = kInterval, .clock = &clock_});
  Put("a", "1");
  Tick({&compactor}, 1);
  Put("a", "2");
  store_.CompactNow();
  Tick({&compactor}, 2);
  EXPECT_EQ(compactor.stats().failures, 0);
  EXPECT_EQ(compactor.stats().compactions, 1);
}

// A failed round is counted and logged; the loop goes on and the next
// round works.
TEST_F(CompactorTest, FailedRoundsAreRetriedAtTheNextTick) {
  FlakyKV flaky(kv());
  Compactor compactor(&flaky, {.interval = kInterval, .clock = &clock_});
  Put("a", "1");
  flaky.fail_txn = true;
  Tick({&compactor}, 1);
  EXPECT_EQ(compactor.stats().failures, 1);
  EXPECT_EQ(CompactRevKey().version(), 0);

  flaky.fail_txn = false;
  Tick({&compactor}, 2);  // the real first round
  const int64_t recorded = CompactRevKey().mod_revision();
  Put("a", "2");
  flaky.fail_compact = true;
  Tick({&compactor}, 3);  // counted as a round (version 2), not compacted
  EXPECT_EQ(compactor.stats().failures, 2);
  EXPECT_EQ(compactor.stats().compactions, 0);
  EXPECT_EQ(CompactRevKey().version(), 2);

  flaky.fail_compact = false;
  Put("a", "3");
  Tick({&compactor}, 4);  // compacts further, past round 2's revision
  Compactor::Stats stats = compactor.stats();
  EXPECT_EQ(stats.failures, 2);
  EXPECT_EQ(stats.compactions, 1);
  EXPECT_GT(stats.compacted_revision, recorded);
  EXPECT_EQ(RangeAt("a", recorded).code(), StatusCode::kCompacted);
}

TEST_F(CompactorTest, IntervalZeroDoesNothing) {
  Compactor compactor(kv(), {.interval = Duration(0), .clock = &clock_});
  const int64_t first = Put("a", "1");
  Put("a", "2");
  EXPECT_EQ(clock_.NumWaiters(), 0);  // no loop at all
  clock_.Advance(kInterval * 3);
  EXPECT_EQ(CompactRevKey().version(), 0);
  EXPECT_TRUE(RangeAt("a", first).ok());
  EXPECT_EQ(compactor.stats().rounds, 0);
}

TEST_F(CompactorTest, StopEndsAWaitingLoop) {
  Compactor compactor(kv(), {.interval = kInterval, .clock = &clock_});
  clock_.WaitForWaiters(1);
  compactor.Stop();
  EXPECT_EQ(clock_.NumWaiters(), 0);
  compactor.Stop();  // idempotent
  EXPECT_EQ(compactor.stats().rounds, 0);
}

}  // namespace
}  // namespace kplane::apiserver
