// Store::Txn against etcd's rules (apply.go, v3rpc/key.go).
#include <gtest/gtest.h>

#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;
using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;
using testing::ValueAt;

Compare Cmp(const std::string& key, Compare::CompareTarget target,
            Compare::CompareResult result) {
  Compare c;
  c.set_key(key);
  c.set_target(target);
  c.set_result(result);
  return c;
}

Compare CmpValue(const std::string& key, Compare::CompareResult result,
                 const std::string& value) {
  Compare c = Cmp(key, Compare::VALUE, result);
  c.set_value(value);
  return c;
}

Compare CmpVersion(const std::string& key, Compare::CompareResult result,
                   int64_t v) {
  Compare c = Cmp(key, Compare::VERSION, result);
  c.set_version(v);
  return c;
}

RequestOp OpPut(const std::string& k, const std::string& v) {
  RequestOp op;
  *op.mutable_request_put() = MakePut(k, v);
  return op;
}

RequestOp OpRange(const std::string& k, const std::string& end = "",
                  int64_t rev = 0) {
  RequestOp op;
  *op.mutable_request_range() = MakeRange(k, end, rev);
  return op;
}

RequestOp OpDelete(const std::string& k, const std::string& end = "") {
  RequestOp op;
  *op.mutable_request_delete_range() = MakeDelete(k, end);
  return op;
}

RequestOp OpTxn(const TxnRequest& t) {
  RequestOp op;
  *op.mutable_request_txn() = t;
  return op;
}

class MvccTxnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenOrDie(dir_.path());
    ASSERT_NE(store_, nullptr);
  }
  void Put(const std::string& k, const std::string& v) {
    ASSERT_TRUE(store_->Put(MakePut(k, v)).ok());
  }
  // Runs a txn with one compare and a success put to "ok", failure put to
  // "ko"; returns whether the compare held.
  bool Holds(const Compare& c) {
    TxnRequest t;
    *t.add_compare() = c;
    auto r = store_->Txn(t);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->succeeded();
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(MvccTxnTest, ValueCompareOnMissingKeyAlwaysFails) {
  EXPECT_FALSE(Holds(CmpValue("missing", Compare::NOT_EQUAL, "x")));
  EXPECT_FALSE(Holds(CmpValue("missing", Compare::EQUAL, "")));
  EXPECT_FALSE(Holds(CmpValue("missing", Compare::LESS, "zzz")));
  Put("k", "b");
  EXPECT_TRUE(Holds(CmpValue("k", Compare::EQUAL, "b")));
  EXPECT_TRUE(Holds(CmpValue("k", Compare::NOT_EQUAL, "a")));
  EXPECT_TRUE(Holds(CmpValue("k", Compare::GREATER, "a")));
  EXPECT_TRUE(Holds(CmpValue("k", Compare::LESS, "c")));
  EXPECT_FALSE(Holds(CmpValue("k", Compare::GREATER, "b")));
}

TEST_F(MvccTxnTest, MissingKeyComparesAsZero) {
  EXPECT_TRUE(Holds(CmpVersion("missing", Compare::EQUAL, 0)));
  Compare create = Cmp("missing", Compare::CREATE, Compare::EQUAL);
  create.set_create_revision(0);
  EXPECT_TRUE(Holds(create));
  Compare mod = Cmp("missing", Compare::MOD, Compare::LESS);
  mod.set_mod_revision(1);
  EXPECT_TRUE(Holds(mod));
  Compare lease = Cmp("missing", Compare::LEASE, Compare::EQUAL);
  lease.set_lease(0);
  EXPECT_TRUE(Holds(lease));
  Put("k", "v");  // revision 2
  EXPECT_TRUE(Holds(CmpVersion("k", Compare::EQUAL, 1)));
  Compare k_mod = Cmp("k", Compare::MOD, Compare::EQUAL);
  k_mod.set_mod_revision(2);
  EXPECT_TRUE(Holds(k_mod));
  // A target without its value set compares against zero.
  EXPECT_TRUE(Holds(Cmp("k", Compare::VERSION, Compare::GREATER)));
}

TEST_F(MvccTxnTest, RangeCompareNeedsEveryKey) {
  Put("p/a", "1");
  Put("p/b", "2");
  Compare c = CmpVersion("p/", Compare::EQUAL, 1);
  c.set_range_end("p0");
  EXPECT_TRUE(Holds(c));
  Put("p/b", "3");
  EXPECT_FALSE(Holds(c));
  Compare gone = CmpVersion("q/", Compare::EQUAL, 0);
  gone.set_range_end("q0");
  EXPECT_TRUE(Holds(gone));  // an empty range compares as zero
}

TEST_F(MvccTxnTest, BranchesAndHeaderRevisions) {
  Put("x", "1");  // revision 2
  TxnRequest t;
  *t.add_compare() = CmpValue("x", Compare::EQUAL, "1");
  *t.add_success() = OpRange("x");      // before the write: revision 2
  *t.add_success() = OpPut("x", "2");   // revision 3
  *t.add_success() = OpRange("x");      // sees its own write
  *t.add_success() = OpDelete("nope");  // deletes nothing, inside a write
  *t.add_failure() = OpPut("failed", "1");
  auto r = store_->Txn(t);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->succeeded());
  EXPECT_EQ(r->header().revision(), 3);
  ASSERT_EQ(r->responses_size(), 4);
  EXPECT_EQ(r->responses(0).response_range().header().revision(), 2);
  EXPECT_EQ(r->responses(0).response_range().kvs(0).value(), "1");
  EXPECT_EQ(r->responses(1).response_put().header().revision(), 3);
  const auto& after = r->responses(2).response_range();
  EXPECT_EQ(after.header().revision(), 3);
  EXPECT_EQ(after.kvs(0).value(), "2");
  EXPECT_EQ(after.kvs(0).mod_revision(), 3);
  EXPECT_EQ(after.kvs(0).version(), 2);
  EXPECT_EQ(r->responses(3).response_delete_range().header().revision(), 3);
  EXPECT_EQ(ValueAt(store_.get(), "failed"), "<none>");

  // Failure branch.
  auto f = store_->Txn(t);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->succeeded());
  EXPECT_EQ(f->header().revision(), 4);
  EXPECT_EQ(ValueAt(store_.get(), "failed"), "1");
}

TEST_F(MvccTxnTest, AllWritesShareOneRevision) {
  TxnRequest t;
  *t.add_success() = OpPut("a", "1");
  *t.add_success() = OpPut("b", "1");
  *t.add_success() = OpPut("c", "1");
  auto r = store_->Txn(t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header().revision(), 2);
  auto all = store_->Range(MakeRange("a", "z"));
  ASSERT_EQ(all->kvs_size(), 3);
  for (const auto& kv : all->kvs()) EXPECT_EQ(kv.mod_revision(), 2);
  TxnRequest del;
  *del.add_success() = OpDelete("a", "z");
  *del.add_success() = OpPut("z", "after");
  auto d = store_->Txn(del);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->header().revision(), 3);
  EXPECT_EQ(d->responses(0).response_delete_range().deleted(), 3);
}

TEST_F(MvccTxnTest, ReadOnlyTxnKeepsRevision) {
  Put("a", "1");
  TxnRequest t;
  *t.add_success() = OpRange("a");
  auto r = store_->Txn(t, /*consistent_index=*/7);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header().revision(), 2);
  EXPECT_EQ(r->responses(0).response_range().header().revision(), 2);
  EXPECT_EQ(store_->CurrentRevision(), 2);
  EXPECT_EQ(store_->ConsistentIndex(), 7u);
  TxnRequest empty;
  auto e = store_->Txn(empty);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->succeeded());
  EXPECT_EQ(e->responses_size(), 0);
}

TEST_F(MvccTxnTest, NestedTxnComparesSeeTheStateBeforeTheTxn) {
  Put("k", "old");
  TxnRequest inner;
  *inner.add_compare() = CmpValue("k", Compare::EQUAL, "old");
  *inner.add_success() = OpPut("inner", "saw-old");
  *inner.add_failure() = OpPut("inner", "saw-new");
  TxnRequest outer;
  *outer.add_success() = OpPut("k", "new");
  *outer.add_success() = OpTxn(inner);
  auto r = store_->Txn(outer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ValueAt(store_.get(), "inner"), "saw-old");
  const auto& nested = r->responses(1).response_txn();
  EXPECT_TRUE(nested.succeeded());
  EXPECT_TRUE(nested.has_header());
  EXPECT_EQ(nested.header().revision(), 0);  // etcd sends "header":{}
  EXPECT_EQ(nested.responses(0).response_put().header().revision(), 3);
}

TEST_F(MvccTxnTest, DuplicateKeys) {
  auto dup = [&](const TxnRequest& t) {
    auto r = store_->Txn(t);
    return r.status().message() ==
           "etcdserver: duplicate key given in txn request";
  };
  TxnRequest puts;
  *puts.add_success() = OpPut("a", "1");
  *puts.add_success() = OpPut("a", "2");
  EXPECT_TRUE(dup(puts));

  TxnRequest put_del;
  *put_del.add_success() = OpDelete("a", "c");
  *put_del.add_success() = OpPut("b", "1");
  EXPECT_TRUE(dup(put_del));

  TxnRequest put_del_all;  // "\0": every key from "a" on
  *put_del_all.add_success() = OpDelete("a", std::string("\0", 1));
  *put_del_all.add_success() = OpPut("zz", "1");
  EXPECT_TRUE(dup(put_del_all));

  TxnRequest nested_then;
  *nested_then.add_success() = OpPut("n", "1");
  TxnRequest outer;
  *outer.add_success() = OpPut("n", "0");
  *outer.add_success() = OpTxn(nested_then);
  EXPECT_TRUE(dup(outer));

  // The same key in then and else of a nested txn is fine (only one runs),
  // as is the same key in the outer success and failure branches.
  TxnRequest both;
  *both.add_success() = OpPut("m", "then");
  *both.add_failure() = OpPut("m", "else");
  TxnRequest ok;
  *ok.add_success() = OpTxn(both);
  *ok.add_failure() = OpPut("m", "outer-else");
  EXPECT_TRUE(store_->Txn(ok).ok());
  EXPECT_EQ(ValueAt(store_.get(), "m"), "then");

  // Two overlapping deletes are allowed.
  TxnRequest dels;
  *dels.add_success() = OpDelete("a", "z");
  *dels.add_success() = OpDelete("m");
  EXPECT_TRUE(store_->Txn(dels).ok());
  EXPECT_EQ(store_->CurrentRevision(), 3);
}

TEST_F(MvccTxnTest, RequestValidation) {
  TxnRequest many;
  for (int i = 0; i < 129; ++i) {
    *many.add_success() = OpPut("k" + std::to_string(i), "v");
  }
  EXPECT_EQ(store_->Txn(many).status().message(),
            "etcdserver: too many operations in txn request");
  TxnRequest empty_key;
  *empty_key.add_compare() = CmpVersion("", Compare::EQUAL, 0);
  EXPECT_EQ(store_->Txn(empty_key).status().message(),
            "etcdserver: key is not provided");
  TxnRequest empty_op;
  empty_op.add_success();
  EXPECT_EQ(store_->Txn(empty_op).status().message(),
            "etcdserver: key not found");
  TxnRequest bad_put;
  *bad_put.add_failure() = OpPut("", "v");
  EXPECT_EQ(store_->Txn(bad_put).status().message(),
            "etcdserver: key is not provided");
}

TEST_F(MvccTxnTest, FailedChecksWriteNothing) {
  Put("a", "1");
  TxnRequest lease;
  *lease.add_success() = OpPut("b", "1");
  RequestOp leased = OpPut("c", "1");
  leased.mutable_request_put()->set_lease(777);
  *lease.add_success() = leased;
  auto r = store_->Txn(lease);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ValueAt(store_.get(), "b"), "<none>");
  EXPECT_EQ(store_->CurrentRevision(), 2);

  TxnRequest ignore;
  RequestOp op;
  op.mutable_request_put()->set_key("missing");
  op.mutable_request_put()->set_ignore_value(true);
  *ignore.add_success() = OpPut("b", "1");
  *ignore.add_success() = op;
  EXPECT_EQ(store_->Txn(ignore).status().message(),
            "etcdserver: key not found");
  EXPECT_EQ(store_->CurrentRevision(), 2);

  TxnRequest future;
  *future.add_success() = OpPut("b", "1");
  *future.add_success() = OpRange("a", "", 3);  // 3 is the txn's own revision
  EXPECT_EQ(store_->Txn(future).status().code(), StatusCode::kFutureRevision);
  EXPECT_EQ(store_->CurrentRevision(), 2);

  // A check only applies to the branch that runs.
  TxnRequest other_branch;
  *other_branch.add_compare() = CmpValue("a", Compare::EQUAL, "1");
  *other_branch.add_success() = OpPut("b", "1");
  *other_branch.add_failure() = leased;
  EXPECT_TRUE(store_->Txn(other_branch).ok());
}

TEST_F(MvccTxnTest, RangeInsideTxnAtRevisionAndCompaction) {
  Put("a", "1");  // 2
  Put("a", "2");  // 3
  Put("a", "3");  // 4
  TxnRequest t;
  *t.add_success() = OpRange("a", "", 2);
  *t.add_success() = OpPut("b", "x");
  auto r = store_->Txn(t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->responses(0).response_range().kvs(0).value(), "1");
  ASSERT_TRUE(store_->Compact(3).ok());
  TxnRequest old;
  *old.add_success() = OpRange("a", "", 2);
  EXPECT_EQ(store_->Txn(old).status().code(), StatusCode::kCompacted);
  TxnRequest at;
  *at.add_success() = OpRange("a", "", 3);
  auto ok = store_->Txn(at);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->responses(0).response_range().kvs(0).value(), "2");
}

TEST_F(MvccTxnTest, LaterOpsSeeEarlierOnes) {
  Put("k", "v");
  // Put then range-delete of other keys, then read: everything at one
  // revision and visible to the later range.
  TxnRequest t;
  *t.add_success() = OpPut("new", "1");
  *t.add_success() = OpDelete("k");
  *t.add_success() = OpRange("a", "z");
  auto r = store_->Txn(t);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& range = r->responses(2).response_range();
  ASSERT_EQ(range.kvs_size(), 1);
  EXPECT_EQ(range.kvs(0).key(), "new");
  EXPECT_EQ(range.count(), 1);
}

}  // namespace
}  // namespace kplane::mvcc
