// txn_rules.h: the duplicate-key check against a direct reading of etcd's
// rule (every put against every delete range, one by one) on random txns,
// and the nesting bound.
#include "storage/mvcc/txn_rules.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

namespace kplane::mvcc {
namespace {

using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;
using Ops = google::protobuf::RepeatedPtrField<RequestOp>;

// The reference: the deleted ranges in a list, each put checked against
// all of them (what txn_rules.cc did before it merged them).
struct Range {
  std::string begin, end;  // end "": the point; "\0": to infinity
  bool Contains(const std::string& k) const {
    if (end.empty()) return k == begin;
    if (end == std::string(1, '\0')) return k >= begin;
    return k >= begin && k < end;
  }
};

bool ReferenceIntervals(const Ops& reqs, std::set<std::string>* puts_out,
                        std::vector<Range>* dels_out) {
  std::vector<Range> dels;
  for (const RequestOp& r : reqs) {
    if (r.has_request_delete_range()) {
      dels.push_back({r.request_delete_range().key(),
                      r.request_delete_range().range_end()});
    }
  }
  auto deleted = [&](const std::string& k) {
    for (const Range& d : dels) {
      if (d.Contains(k)) return true;
    }
    return false;
  };
  std::set<std::string> puts;
  for (const RequestOp& r : reqs) {
    if (!r.has_request_txn()) continue;
    std::set<std::string> then_puts, else_puts;
    std::vector<Range> then_dels, else_dels;
    if (!ReferenceIntervals(r.request_txn().success(), &then_puts,
                            &then_dels) ||
        !ReferenceIntervals(r.request_txn().failure(), &else_puts,
                            &else_dels)) {
      return false;
    }
    for (const std::string& k : then_puts) {
      if (puts.count(k) || deleted(k)) return false;
      puts.insert(k);
    }
    for (const std::string& k : else_puts) {
      if ((puts.count(k) && !then_puts.count(k)) || deleted(k)) return false;
      puts.insert(k);
    }
    dels.insert(dels.end(), then_dels.begin(), then_dels.end());
    dels.insert(dels.end(), else_dels.begin(), else_dels.end());
  }
  for (const RequestOp& r : reqs) {
    if (!r.has_request_put()) continue;
    const std::string& k = r.request_put().key();
    if (puts.count(k) || deleted(k)) return false;
    puts.insert(k);
  }
  if (puts_out) *puts_out = std::move(puts);
  if (dels_out) *dels_out = std::move(dels);
  return true;
}

class RandomTxns {
 public:
  explicit RandomTxns(uint32_t seed) : rng_(seed) {}

  TxnRequest Txn(int depth) {
    TxnRequest t;
    Fill(t.mutable_success(), depth);
    Fill(t.mutable_failure(), depth);
    return t;
  }

 private:
  // Keys of one or two letters from a small alphabet, so that puts and
  // deletes meet often; "a\0" is the key right after "a".
  std::string Key() {
    static const std::vector<std::string> keys = {
        "a", std::string("a\0", 2), "ab", "b", "ba", "c", "cc", "d", "e"};
    return keys[rng_() % keys.size()];
  }
  void Fill(Ops* ops, int depth) {
    const int n = static_cast<int>(rng_() % 4);
    for (int i = 0; i < n; ++i) {
      RequestOp* op = ops->Add();
      switch (rng_() % (depth > 0 ? 4 : 3)) {
        case 0: {
          auto* p = op->mutable_request_put();
          p->set_key(Key());
          break;
        }
        case 1: {
          auto* d = op->mutable_request_delete_range();
          d->set_key(Key());
          switch (rng_() % 3) {
            case 0:
              break;  // one key
            case 1:
              d->set_range_end(std::string(1, '\0'));  // to the end
              break;
            default:
              d->set_range_end(Key());  // may be at or before the key
          }
          break;
        }
        case 2:
          op->mutable_request_range()->set_key(Key());
          break;
        default:
          *op->mutable_request_txn() = Txn(depth - 1);
      }
    }
  }

  std::mt19937 rng_;
};

TEST(TxnRulesTest, DuplicateKeysAsTheReferenceFindsThem) {
  RandomTxns gen(20261206);
  int duplicates = 0;
  for (int i = 0; i < 20000; ++i) {
    const TxnRequest t = gen.Txn(3);
    const bool reference = ReferenceIntervals(t.success(), nullptr, nullptr) &&
                           ReferenceIntervals(t.failure(), nullptr, nullptr);
    const Status got = CheckTxnRequest(t, 128);
    ASSERT_EQ(got.ok(), reference) << got << "\n" << t.DebugString();
    if (!got.ok()) {
      EXPECT_EQ(got.message(), "etcdserver: duplicate key given in txn request");
      ++duplicates;
    }
  }
  // Both verdicts were met often.
  EXPECT_GT(duplicates, 2000);
  EXPECT_LT(duplicates, 18000);
}

TEST(TxnRulesTest, NestingIsBoundedAt32Txns) {
  auto nested = [](int depth) {
    TxnRequest top;
    TxnRequest* t = &top;
    for (int i = 1; i < depth; ++i) {
      t = t->add_failure()->mutable_request_txn();
    }
    t->add_success()->mutable_request_put()->set_key("k");
    return top;
  };
  EXPECT_TRUE(CheckTxnNesting(nested(kMaxTxnNesting)).ok());
  const Status deep = CheckTxnNesting(nested(kMaxTxnNesting + 1));
  EXPECT_EQ(deep.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deep.message(), "etcdserver: txn request nests more than 32 txns");
}

}  // namespace
}  // namespace kplane::mvcc
