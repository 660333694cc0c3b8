#include "tests/sim/linearizability.h"

#include "gtest/gtest.h"

namespace kplane::sim {
namespace {

KvOp Put(uint64_t client, std::string key, int64_t v, uint64_t call,
         uint64_t ret) {
  KvOp op;
  op.client = client;
  op.kind = OpKind::kPut;
  op.key = key;
  op.a = v;
  op.call = call;
  op.ret = ret;
  return op;
}

KvOp Get(uint64_t client, std::string key, int64_t got, uint64_t call,
         uint64_t ret) {
  KvOp op;
  op.client = client;
  op.kind = OpKind::kGet;
  op.key = key;
  op.value = got;
  op.call = call;
  op.ret = ret;
  return op;
}

KvOp Cas(uint64_t client, std::string key, int64_t expect, int64_t to, bool ok,
         int64_t saw, uint64_t call, uint64_t ret) {
  KvOp op;
  op.client = client;
  op.kind = OpKind::kCas;
  op.key = key;
  op.a = expect;
  op.b = to;
  op.ok = ok;
  op.value = saw;
  op.call = call;
  op.ret = ret;
  return op;
}

KvOp Unknown(KvOp op) {
  op.unknown = true;
  op.ret = 0;
  return op;
}

TEST(LinearizabilityTest, EmptyHistoryIsLinearizable) {
  EXPECT_TRUE(CheckLinearizable({}).ok);
}

TEST(LinearizabilityTest, SequentialHistory) {
  EXPECT_TRUE(CheckLinearizable({Put(1, "x", 1, 1, 2), Get(1, "x", 1, 3, 4),
                                 Cas(1, "x", 1, 2, true, 1, 5, 6),
                                 Get(2, "x", 2, 7, 8)})
                  .ok);
}

TEST(LinearizabilityTest, StaleReadAfterWriteReturnedIsNot) {
  // put(1) returned before the get started; the get must see 1.
  auto r = CheckLinearizable({Put(1, "x", 1, 1, 2), Get(2, "x", 0, 3, 4)});
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.inconclusive);
  EXPECT_EQ(r.key, "x");
}

TEST(LinearizabilityTest, ConcurrentReadMaySeeEitherValue) {
  EXPECT_TRUE(
      CheckLinearizable({Put(1, "x", 1, 1, 4), Get(2, "x", 0, 2, 3)}).ok);
  EXPECT_TRUE(
      CheckLinearizable({Put(1, "x", 1, 1, 4), Get(2, "x", 1, 2, 3)}).ok);
}

TEST(LinearizabilityTest, ReadsMustNotGoBackInTime) {
  // Two reads during a write: once one saw the new value, a later read
  // (started after it returned) may not see the old one.
  auto r = CheckLinearizable(
      {Put(1, "x", 1, 1, 10), Get(2, "x", 1, 2, 3), Get(3, "x", 0, 4, 5)});
  EXPECT_FALSE(r.ok);
}

TEST(LinearizabilityTest, FailedCasMustSeeADifferentValue) {
  EXPECT_FALSE(CheckLinearizable(
                   {Put(1, "x", 1, 1, 2), Cas(2, "x", 1, 5, false, 1, 3, 4)})
                   .ok);
  EXPECT_TRUE(CheckLinearizable(
                  {Put(1, "x", 1, 1, 2), Cas(2, "x", 7, 5, false, 1, 3, 4)})
                  .ok);
}

TEST(LinearizabilityTest, UnknownWriteMayTakeEffectLate) {
  // A timed-out put is seen by a read long after it was issued.
  EXPECT_TRUE(CheckLinearizable({Unknown(Put(1, "x", 1, 1, 0)),
                                 Get(2, "x", 0, 5, 6), Get(2, "x", 1, 7, 8)})
                  .ok);
  // ... but not before it was issued.
  EXPECT_FALSE(
      CheckLinearizable({Get(2, "x", 1, 1, 2), Unknown(Put(1, "x", 1, 3, 0))})
          .ok);
}

TEST(LinearizabilityTest, UnknownWriteTakesEffectAtMostOnce) {
  // put(1) unknown, then put(2) returns, then reads see 2, then 1, then 2:
  // the unknown put can explain one switch to 1 but not going back to 2.
  auto r =
      CheckLinearizable({Unknown(Put(1, "x", 1, 1, 0)), Put(2, "x", 2, 2, 3),
                         Get(3, "x", 1, 4, 5), Get(3, "x", 2, 6, 7)});
  EXPECT_FALSE(r.ok);
}

TEST(LinearizabilityTest, KeysAreIndependent) {
  EXPECT_TRUE(CheckLinearizable({Put(1, "x", 1, 1, 2), Put(1, "y", 2, 3, 4),
                                 Get(2, "x", 1, 5, 6), Get(2, "y", 2, 7, 8)})
                  .ok);
  auto r = CheckLinearizable({Put(1, "x", 1, 1, 2), Put(1, "y", 2, 3, 4),
                              Get(2, "x", 1, 5, 6), Get(2, "y", 0, 7, 8)});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.key, "y");
}

TEST(LinearizabilityTest, ManyConcurrentOpsStayTractable) {
  // 6 clients, 600 ops with overlapping windows on one key.
  std::vector<KvOp> h;
  uint64_t t = 0;
  int64_t v = 0;
  for (int round = 0; round < 100; ++round) {
    uint64_t start = t;
    for (int c = 0; c < 6; ++c) {
      if (c % 2 == 0) {
        h.push_back(Put(c, "x", ++v, start + c, start + 20 + c));
      } else {
        // Reads overlap all the writes of the round: the value of the
        // previous round's last write or any of this round's is fine.
        h.push_back(Get(c, "x", v, start + c, start + 21 + c));
      }
    }
    t += 30;
  }
  EXPECT_TRUE(CheckLinearizable(h).ok);
}

TEST(HistoryRecorderTest, OutcomesAreRecorded) {
  HistoryRecorder rec;
  size_t a = rec.Invoke(1, OpKind::kPut, "x", 1, 0);
  size_t b = rec.Invoke(2, OpKind::kGet, "x", 0, 0);
  size_t c = rec.Invoke(3, OpKind::kPut, "x", 2, 0);
  size_t d = rec.Invoke(4, OpKind::kPut, "x", 3, 0);
  rec.Complete(a, 0, true);
  rec.Complete(b, 1, true);
  rec.MarkUnknown(c);
  rec.Discard(d);
  rec.Complete(c, 0, true);  // too late: stays unknown
  auto ops = rec.Ops();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_FALSE(ops[0].unknown);
  EXPECT_LT(ops[0].call, ops[0].ret);
  EXPECT_EQ(ops[1].value, 1);
  EXPECT_TRUE(ops[2].unknown);
  EXPECT_EQ(rec.completed(), 2u);
  EXPECT_EQ(rec.unknown(), 1u);
}

TEST(KvStateMachineTest, ApplyDedupesAndSnapshots) {
  KvStateMachine sm;
  KvResult r;
  KvCommand put{1, 1, OpKind::kPut, "x", 5, 0};
  EXPECT_TRUE(sm.Apply(put, &r));
  EXPECT_FALSE(sm.Apply(put, &r));  // duplicate
  KvCommand cas{1, 2, OpKind::kCas, "x", 5, 6};
  EXPECT_TRUE(sm.Apply(cas, &r));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(sm.Get("x"), 6);
  KvCommand decoded;
  ASSERT_TRUE(DecodeCommand(EncodeCommand(cas), &decoded));
  EXPECT_EQ(decoded.b, 6);
  KvStateMachine copy;
  ASSERT_TRUE(copy.Restore(sm.Serialize()));
  EXPECT_EQ(copy.Digest(), sm.Digest());
  EXPECT_EQ(copy.Get("x"), 6);
}

}  // namespace
}  // namespace kplane::sim
