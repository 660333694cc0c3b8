// Store: Put / DeleteRange / Range semantics, persistence, hashing.
#include "storage/mvcc/store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "rocksdb/db.h"
#include "storage/mvcc/keys.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using etcdserverpb::RangeRequest;
using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;
using testing::ValueAt;

const std::string kAll("\0", 1);

class MvccStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  // Alternates clean (flushed) and crash-like (WAL replay) closes.
  void Reopen() {
    store_.reset();
    const bool flush = ++reopens_ % 2 == 0;
    store_ = testing::OpenOrDie(dir_.path(), nullptr, [flush](Options* o) {
      o->flush_on_close = flush;
    });
    ASSERT_NE(store_, nullptr);
  }
  int64_t Put(const std::string& k, const std::string& v, uint64_t ci = 0) {
    auto r = store_->Put(MakePut(k, v), ci);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->header().revision() : -1;
  }
  std::vector<std::string> Keys(const etcdserverpb::RangeResponse& r) {
    std::vector<std::string> out;
    for (const auto& kv : r.kvs()) out.push_back(kv.key());
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  int reopens_ = 0;
};

// A write group: each write answers at once with its revision and reads what
// the group staged before it, but readers, watchers and the meta records see
// the group only after EndWriteGroup, one revision after the other.
TEST_F(MvccStoreTest, WriteGroupIsSeenWholeAfterItEnds) {
  ASSERT_EQ(Put("/a", "0", 10), 2);  // an empty store is at 1
  auto stream = store_->NewWatchStream();
  etcdserverpb::WatchCreateRequest w;
  w.set_key("/");
  w.set_range_end("0");
  ASSERT_TRUE(stream->Watch(w).ok());

  store_->BeginWriteGroup();
  EXPECT_EQ(Put("/a", "1", 11), 3);
  // A CAS on the staged value succeeds: the txn reads the group.
  etcdserverpb::TxnRequest cas;
  auto* c = cas.add_compare();
  c->set_key("/a");
  c->set_target(etcdserverpb::Compare::VALUE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_value("1");
  *cas.add_success()->mutable_request_put() = MakePut("/b", "from-cas");
  auto range_a = cas.add_success()->mutable_request_range();
  range_a->set_key("/a");
  auto t = store_->Txn(cas, 12);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->succeeded());
  EXPECT_EQ(t->header().revision(), 4);
  ASSERT_EQ(t->responses(1).response_range().kvs_size(), 1);
  EXPECT_EQ(t->responses(1).response_range().kvs(0).value(), "1");
  // A failing write inside the group leaves the group as it was.
  auto bad = MakePut("/missing", "");
  bad.set_ignore_value(true);
  EXPECT_EQ(store_->Put(bad, 13).status().code(), StatusCode::kInvalidArgument);
  auto del = store_->DeleteRange(MakeDelete("/a", ""), 14);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->header().revision(), 5);

  // Nothing is visible yet.
  EXPECT_EQ(store_->CurrentRevision(), 2);
  EXPECT_EQ(store_->ConsistentIndex(), 10u);
  EXPECT_EQ(ValueAt(store_.get(), "/a", 0), "0");
  EXPECT_FALSE(stream->TryPop().has_value());

  store_->EndWriteGroup();
  EXPECT_EQ(store_->CurrentRevision(), 5);
  EXPECT_EQ(store_->ConsistentIndex(), 14u);
  EXPECT_EQ(ValueAt(store_.get(), "/b", 0), "from-cas");
  EXPECT_EQ(store_->Range(MakeRange("/a", "", 0))->kvs_size(), 0);
  EXPECT_EQ(ValueAt(store_.get(), "/a", 3), "1");
  std::vector<int64_t> revs;
  while (revs.size() < 3) {
    auto r = stream->Next(Clock::Real()->Now() + seconds(10));
    ASSERT_TRUE(r.has_value()) << "events after the group";
    for (const auto& e : r->events()) revs.push_back(e.kv().mod_revision());
  }
  EXPECT_EQ(revs, (std::vector<int64_t>{3, 4, 5}));

  // Written once, with its meta records: a reopen finds all of it.
  stream.reset();
  Reopen();
  EXPECT_EQ(store_->CurrentRevision(), 5);
  EXPECT_EQ(store_->ConsistentIndex(), 14u);
  EXPECT_EQ(ValueAt(store_.get(), "/b", 0), "from-cas");
}

// Writes that are not staged (leases, compaction, a raft-ordered read-only
// txn) first write out what the group staged, and see it.
TEST_F(MvccStoreTest, WriteGroupIsWrittenOutBeforeOtherWrites) {
  store_->BeginWriteGroup();
  EXPECT_EQ(Put("/a", "1", 1), 2);
  EXPECT_EQ(Put("/a", "2", 2), 3);
  etcdserverpb::TxnRequest read;
  read.add_success()->mutable_request_range()->set_key("/a");
  auto r = store_->Txn(read, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->responses(0).response_range().kvs(0).value(), "2");
  EXPECT_EQ(store_->CurrentRevision(), 3);
  EXPECT_EQ(Put("/a", "3", 4), 4);
  ASSERT_TRUE(store_->Compact(4, 5).ok());  // revision 4 exists for it
  EXPECT_EQ(store_->CurrentRevision(), 4);
  etcdserverpb::LeaseGrantRequest g;
  g.set_ttl(60);
  auto lease = store_->LeaseGrant(g, 6);
  ASSERT_TRUE(lease.ok());
  auto with_lease = MakePut("/leased", "x");
  with_lease.set_lease(lease->id());
  ASSERT_TRUE(store_->Put(with_lease, 7).ok());
  etcdserverpb::LeaseRevokeRequest rv;
  rv.set_id(lease->id());
  ASSERT_TRUE(store_->LeaseRevoke(rv, 8).ok());  // deletes /leased now
  EXPECT_EQ(store_->Range(MakeRange("/leased", "", 0))->kvs_size(), 0);
  EXPECT_EQ(store_->CurrentRevision(), 6);
  store_->EndWriteGroup();
  EXPECT_EQ(store_->ConsistentIndex(), 8u);
  EXPECT_EQ(store_->CurrentRevision(), 6);
}

// The seeds' worked example: PUT /foo v1, /bar v2, /foo v3, then time travel.
TEST_F(MvccStoreTest, SeedExampleTimeTravel) {
  // An empty store is at revision 1, as etcd's: the first write is 2.
  EXPECT_EQ(store_->CurrentRevision(), 1);
  EXPECT_EQ(Put("/foo", "v1"), 2);
  EXPECT_EQ(Put("/bar", "v2"), 3);
  EXPECT_EQ(Put("/foo", "v3"), 4);
  EXPECT_EQ(store_->CurrentRevision(), 4);

  auto at1 = store_->Range(MakeRange("/foo", "", 2));
  ASSERT_TRUE(at1.ok());
  ASSERT_EQ(at1->kvs_size(), 1);
  EXPECT_EQ(at1->kvs(0).value(), "v1");
  EXPECT_EQ(at1->kvs(0).create_revision(), 2);
  EXPECT_EQ(at1->kvs(0).mod_revision(), 2);
  EXPECT_EQ(at1->kvs(0).version(), 1);
  // The header carries the current revision even when reading the past.
  EXPECT_EQ(at1->header().revision(), 4);

  auto at3 = store_->Range(MakeRange("/foo", "", 4));
  ASSERT_TRUE(at3.ok());
  ASSERT_EQ(at3->kvs_size(), 1);
  EXPECT_EQ(at3->kvs(0).value(), "v3");
  EXPECT_EQ(at3->kvs(0).create_revision(), 2);
  EXPECT_EQ(at3->kvs(0).mod_revision(), 4);
  EXPECT_EQ(at3->kvs(0).version(), 2);

  EXPECT_EQ(ValueAt(store_.get(), "/foo", 3), "v1");
  EXPECT_EQ(ValueAt(store_.get(), "/bar", 2), "<none>");
  EXPECT_EQ(ValueAt(store_.get(), "/bar", 3), "v2");
  auto future = store_->Range(MakeRange("/foo", "", 5));
  EXPECT_EQ(future.status().code(), StatusCode::kFutureRevision);
  EXPECT_EQ(future.status().message(),
            "mvcc: required revision is a future revision");
  EXPECT_EQ(future.status().detail(), 4);
}

TEST_F(MvccStoreTest, VersionLifecycle) {
  Put("k", "a");                                    // 2
  Put("k", "b");                                    // 3
  auto del = store_->DeleteRange(MakeDelete("k"));  // 4
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->deleted(), 1);
  EXPECT_EQ(del->header().revision(), 4);
  EXPECT_EQ(ValueAt(store_.get(), "k"), "<none>");
  EXPECT_EQ(ValueAt(store_.get(), "k", 3), "b");
  Put("k", "c");  // 5: a new generation
  auto r = store_->Range(MakeRange("k"));
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_EQ(r->kvs(0).create_revision(), 5);
  EXPECT_EQ(r->kvs(0).version(), 1);
  EXPECT_EQ(r->kvs(0).mod_revision(), 5);
}

TEST_F(MvccStoreTest, DeleteOfNothingKeepsRevision) {
  Put("a", "1");
  auto del = store_->DeleteRange(MakeDelete("zzz"));
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->deleted(), 0);
  EXPECT_EQ(del->header().revision(), 2);
  EXPECT_EQ(store_->CurrentRevision(), 2);
  EXPECT_EQ(Put("b", "2"), 3);
}

TEST_F(MvccStoreTest, DeleteRangeWithPrevKv) {
  Put("a/1", "x");
  Put("a/2", "y");
  Put("b", "z");
  auto req = MakeDelete("a/", "a0");
  req.set_prev_kv(true);
  auto del = store_->DeleteRange(req);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->deleted(), 2);
  ASSERT_EQ(del->prev_kvs_size(), 2);
  EXPECT_EQ(del->prev_kvs(0).key(), "a/1");
  EXPECT_EQ(del->prev_kvs(1).value(), "y");
  // One revision for the whole delete.
  EXPECT_EQ(del->header().revision(), 5);
  EXPECT_EQ(ValueAt(store_.get(), "b"), "z");
  // Everything from a key on.
  auto all = store_->DeleteRange(MakeDelete("a", kAll));
  EXPECT_EQ(all->deleted(), 1);
  EXPECT_EQ(store_->Range(MakeRange(kAll, kAll))->count(), 0);
}

TEST_F(MvccStoreTest, RangeConventions) {
  for (const char* k : {"a", "a/1", "a/2", "b", "c"}) Put(k, k);
  EXPECT_EQ(Keys(*store_->Range(MakeRange("a/", "a0"))),
            (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(Keys(*store_->Range(MakeRange("b", kAll))),
            (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(store_->Range(MakeRange(kAll, kAll))->count(), 5);
  // range_end == key, or below it: nothing.
  EXPECT_EQ(store_->Range(MakeRange("b", "b"))->count(), 0);
  EXPECT_EQ(store_->Range(MakeRange("c", "a"))->count(), 0);
  // Single key.
  EXPECT_EQ(Keys(*store_->Range(MakeRange("a"))),
            (std::vector<std::string>{"a"}));
  auto empty = store_->Range(MakeRange(""));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status().message(), "etcdserver: key is not provided");
}

TEST_F(MvccStoreTest, BinaryKeysKeepTheirOrder) {
  const std::vector<std::string> keys = {
      std::string("x", 1),        std::string("x\0", 2),
      std::string("x\0\0", 3),    std::string("x\0\xff", 3),
      std::string("x\x01", 2),    std::string("x\xff", 2),
      std::string("x\xff\xff", 3)};
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) Put(*it, *it);
  auto r = store_->Range(MakeRange("x", "y"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Keys(*r), keys);
  for (const auto& k : keys) EXPECT_EQ(ValueAt(store_.get(), k), k);
  // A single-key read does not see longer keys sharing its bytes.
  EXPECT_EQ(store_->Range(MakeRange(std::string("x\0", 2)))->count(), 1);
}

TEST_F(MvccStoreTest, LimitCountMoreAndNegativeLimit) {
  for (int i = 0; i < 5; ++i) Put("k" + std::to_string(i), "v");
  auto req = MakeRange("k", "l");
  req.set_limit(2);
  auto r = store_->Range(req);
  EXPECT_EQ(Keys(*r), (std::vector<std::string>{"k0", "k1"}));
  EXPECT_TRUE(r->more());
  EXPECT_EQ(r->count(), 5);
  req.set_limit(5);
  r = store_->Range(req);
  EXPECT_FALSE(r->more());
  EXPECT_EQ(r->kvs_size(), 5);
  req.set_limit(-1);
  r = store_->Range(req);
  EXPECT_EQ(r->kvs_size(), 5);
  EXPECT_FALSE(r->more());
  req.set_limit(2);
  req.set_count_only(true);
  r = store_->Range(req);
  EXPECT_EQ(r->kvs_size(), 0);
  EXPECT_EQ(r->count(), 5);
  EXPECT_FALSE(r->more());
}

TEST_F(MvccStoreTest, KeysOnly) {
  Put("k", "value");
  auto req = MakeRange("k");
  req.set_keys_only(true);
  auto r = store_->Range(req);
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_EQ(r->kvs(0).key(), "k");
  EXPECT_EQ(r->kvs(0).value(), "");
  EXPECT_EQ(r->kvs(0).version(), 1);
}

TEST_F(MvccStoreTest, SortBeforeLimit) {
  Put("a", "3");  // 1
  Put("b", "1");  // 2
  Put("c", "2");  // 3
  Put("a", "4");  // 4: a has version 2, mod 4
  auto req = MakeRange("a", "z");
  req.set_sort_target(RangeRequest::VALUE);  // NONE order -> ascending
  req.set_limit(2);
  auto r = store_->Range(req);
  EXPECT_EQ(Keys(*r), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(r->more());
  EXPECT_EQ(r->count(), 3);

  req.set_sort_order(RangeRequest::DESCEND);
  req.set_sort_target(RangeRequest::MOD);
  req.set_limit(0);
  EXPECT_EQ(Keys(*store_->Range(req)),
            (std::vector<std::string>{"a", "c", "b"}));
  req.set_sort_target(RangeRequest::CREATE);
  EXPECT_EQ(Keys(*store_->Range(req)),
            (std::vector<std::string>{"c", "b", "a"}));
  req.set_sort_target(RangeRequest::KEY);
  EXPECT_EQ(Keys(*store_->Range(req)),
            (std::vector<std::string>{"c", "b", "a"}));
  req.set_sort_order(RangeRequest::ASCEND);
  req.set_sort_target(RangeRequest::VERSION);
  // Ties (version 1) keep key order.
  EXPECT_EQ(Keys(*store_->Range(req)),
            (std::vector<std::string>{"b", "c", "a"}));
}

TEST_F(MvccStoreTest, RevisionFiltersDoNotChangeCount) {
  Put("a", "1");  // 2
  Put("b", "1");  // 3
  Put("c", "1");  // 4
  Put("a", "2");  // 5
  auto req = MakeRange("a", "z");
  req.set_min_mod_revision(4);
  auto r = store_->Range(req);
  EXPECT_EQ(Keys(*r), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(r->count(), 3);
  req.set_min_mod_revision(0);
  req.set_max_create_revision(3);
  req.set_limit(1);
  r = store_->Range(req);
  EXPECT_EQ(Keys(*r), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(r->more());  // b also passes the filter
  EXPECT_EQ(r->count(), 3);
  req.set_max_create_revision(0);
  req.set_max_mod_revision(2);
  req.set_limit(0);
  EXPECT_TRUE(Keys(*store_->Range(req)).empty());  // a moved on to 5
}

TEST_F(MvccStoreTest, PutPrevKvAndIgnoreFlags) {
  auto req = MakePut("k", "v1");
  req.set_prev_kv(true);
  auto r = store_->Put(req);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_prev_kv());
  req.set_value("v2");
  r = store_->Put(req);
  ASSERT_TRUE(r->has_prev_kv());
  EXPECT_EQ(r->prev_kv().value(), "v1");
  EXPECT_EQ(r->prev_kv().mod_revision(), 2);

  etcdserverpb::PutRequest keep;
  keep.set_key("k");
  keep.set_ignore_value(true);
  ASSERT_TRUE(store_->Put(keep).ok());
  auto now = store_->Range(MakeRange("k"));
  EXPECT_EQ(now->kvs(0).value(), "v2");
  EXPECT_EQ(now->kvs(0).version(), 3);

  keep.set_key("missing");
  auto missing = store_->Put(keep);
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(), "etcdserver: key not found");
  EXPECT_EQ(store_->CurrentRevision(), 4);

  keep.set_key("k");
  keep.set_value("x");
  EXPECT_EQ(store_->Put(keep).status().message(),
            "etcdserver: value is provided");
  etcdserverpb::PutRequest lease;
  lease.set_key("k");
  lease.set_ignore_lease(true);
  lease.set_lease(5);
  EXPECT_EQ(store_->Put(lease).status().message(),
            "etcdserver: lease is provided");
  EXPECT_EQ(store_->Put(MakePut("", "v")).status().message(),
            "etcdserver: key is not provided");
}

TEST_F(MvccStoreTest, UnknownLeaseIsNotFound) {
  auto r = store_->Put(MakePut("k", "v", 12345));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "etcdserver: requested lease not found");
  EXPECT_EQ(store_->CurrentRevision(), 1);  // unchanged
}

TEST_F(MvccStoreTest, RequestTooLarge) {
  std::string big(1536 * 1024, 'x');
  auto r = store_->Put(MakePut("k", big));
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_EQ(r.status().message(), "etcdserver: request is too large");
  std::string fits(1536 * 1024 - 64, 'x');
  EXPECT_TRUE(store_->Put(MakePut("k", fits)).ok());
  EXPECT_EQ(ValueAt(store_.get(), "k").size(), fits.size());
}

TEST_F(MvccStoreTest, ReopenKeepsStateRevisionAndConsistentIndex) {
  Put("a", "1", 10);
  Put("b", "2", 11);
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("a"), 12).ok());
  // A delete of nothing still records the index it came from.
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("nothing"), 13).ok());
  EXPECT_EQ(store_->ConsistentIndex(), 13u);
  Reopen();
  EXPECT_EQ(store_->CurrentRevision(), 4);
  EXPECT_EQ(store_->ConsistentIndex(), 13u);
  EXPECT_EQ(ValueAt(store_.get(), "a"), "<none>");
  EXPECT_EQ(ValueAt(store_.get(), "a", 3), "1");
  EXPECT_EQ(ValueAt(store_.get(), "b"), "2");
  EXPECT_EQ(Put("c", "3", 14), 5);
}

TEST_F(MvccStoreTest, TimeTravelThroughLongHistory) {
  // Interleave many keys and versions; every revision reads back exactly.
  std::map<std::string, std::string> state;
  // at[rev]; an empty store is at revision 1, the first write 2.
  std::vector<std::map<std::string, std::string>> at(2);
  for (int rev = 2; rev <= 300; ++rev) {
    std::string k = "k" + std::to_string(rev % 7);
    if (rev % 11 == 0) {
      ASSERT_TRUE(store_->DeleteRange(MakeDelete(k)).ok());
      if (state.erase(k) == 0) {
        // Deleting a missing key does not create a revision.
        Put("filler", std::to_string(rev));
        state["filler"] = std::to_string(rev);
      }
    } else {
      Put(k, std::to_string(rev));
      state[k] = std::to_string(rev);
    }
    at.push_back(state);
  }
  ASSERT_EQ(store_->CurrentRevision(), 300);
  for (int rev = 1; rev <= 300; rev += 7) {  // 1: the empty store
    auto r = store_->Range(MakeRange(kAll, kAll, rev));
    ASSERT_TRUE(r.ok());
    std::map<std::string, std::string> got;
    for (const auto& kv : r->kvs()) got[kv.key()] = kv.value();
    EXPECT_EQ(got, at[rev]) << "revision " << rev;
  }
}

TEST_F(MvccStoreTest, CheckpointOpensToSameState) {
  Put("a", "1", 5);
  Put("b", "2", 6);
  testing::TempDir cp_dir;
  std::string cp = cp_dir.Sub("cp");
  ASSERT_TRUE(store_->Checkpoint(cp).ok());
  Put("c", "3", 7);  // not in the checkpoint
  auto copy = testing::OpenOrDie(cp);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->CurrentRevision(), 3);
  EXPECT_EQ(copy->ConsistentIndex(), 6u);
  EXPECT_EQ(ValueAt(copy.get(), "b"), "2");
  EXPECT_EQ(ValueAt(copy.get(), "c"), "<none>");
  EXPECT_EQ(copy->HashKV(3)->hash(), store_->HashKV(3)->hash());
}

// ExportAll: every stored version in revision order, tombstones with only
// their key, the leases and the meta values, as of one instant; after a
// compaction only what it kept.
TEST_F(MvccStoreTest, ExportAllHoldsTheWholeHistory) {
  etcdserverpb::LeaseGrantRequest g;
  g.set_id(7);
  g.set_ttl(60);
  ASSERT_TRUE(store_->LeaseGrant(g).ok());
  Put("a", "1");                                    // 2
  etcdserverpb::PutRequest lp = MakePut("b", "2");  // 3, with the lease
  lp.set_lease(7);
  ASSERT_TRUE(store_->Put(lp).ok());
  Put("a", "3");                                              // 4
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("b"), 9).ok());  // 5
  etcdserverpb::TxnRequest t;  // 6: two changes, subs 0 and 1
  t.add_success()->mutable_request_put()->CopyFrom(MakePut("c", "x"));
  t.add_success()->mutable_request_put()->CopyFrom(MakePut("a", "y"));
  ASSERT_TRUE(store_->Txn(t, 10).ok());

  auto e = store_->ExportAll();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->revision, 6);
  EXPECT_EQ(e->consistent_index, 10u);
  EXPECT_EQ(e->compact_scheduled, 0);
  EXPECT_EQ(e->leases, (std::vector<std::pair<int64_t, int64_t>>{{7, 60}}));
  std::vector<std::string> got;
  for (const auto& v : e->versions) {
    got.push_back(std::to_string(v.main) + "." + std::to_string(v.sub) +
                  (v.tombstone ? "t " : " ") + v.kv.ShortDebugString());
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "2.0 key: \"a\" create_revision: 2 mod_revision: 2 "
                     "version: 1 value: \"1\"",
                     "3.0 key: \"b\" create_revision: 3 mod_revision: 3 "
                     "version: 1 value: \"2\" lease: 7",
                     "4.0 key: \"a\" create_revision: 2 mod_revision: 4 "
                     "version: 2 value: \"3\"",
                     "5.0t key: \"b\"",
                     "6.0 key: \"c\" create_revision: 6 mod_revision: 6 "
                     "version: 1 value: \"x\"",
                     "6.1 key: \"a\" create_revision: 2 mod_revision: 6 "
                     "version: 3 value: \"y\"",
                 }));

  ASSERT_TRUE(store_->Compact(6).ok());
  ASSERT_TRUE(store_->WaitForCompaction(6).ok());
  e = store_->ExportAll();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->compact_scheduled, 6);
  EXPECT_EQ(e->compact_finished, 6);
  std::vector<int64_t> mains;
  for (const auto& v : e->versions) mains.push_back(v.main);
  EXPECT_EQ(mains, (std::vector<int64_t>{6, 6}));
}

// CreateFromExport is ExportAll's inverse: a store created from an export
// exports the same, reads every kept revision as the original did (and
// refuses the compacted ones), keeps the lease with its key attached, the
// consistent index and the size in use, and writes on at the next revision.
TEST_F(MvccStoreTest, CreateFromExportRebuildsTheStore) {
  etcdserverpb::LeaseGrantRequest g;
  g.set_id(7);
  g.set_ttl(60);
  ASSERT_TRUE(store_->LeaseGrant(g).ok());
  Put("a", "1");                                    // 2
  etcdserverpb::PutRequest lp = MakePut("b", "2");  // 3, with the lease
  lp.set_lease(7);
  ASSERT_TRUE(store_->Put(lp).ok());
  Put("a", "3");                                               // 4
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("c"), 9).ok());   // nothing
  Put("c", "x", 11);                                           // 5
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("c"), 12).ok());  // 6
  ASSERT_TRUE(store_->Compact(4).ok());
  ASSERT_TRUE(store_->WaitForCompaction(4).ok());
  auto e = store_->ExportAll();
  ASSERT_TRUE(e.ok()) << e.status();

  testing::TempDir copy_dir;
  Options o;
  o.dir = copy_dir.path() + "/db";
  ASSERT_TRUE(Store::CreateFromExport(o, *e).ok());
  auto copy = Store::Open(o);
  ASSERT_TRUE(copy.ok()) << copy.status();
  Store* c = copy->get();
  EXPECT_EQ(c->CurrentRevision(), 6);
  EXPECT_EQ(c->ConsistentIndex(), 12u);
  EXPECT_EQ(c->CompactRevision(), 4);
  EXPECT_EQ(c->FinishedCompactRevision(), 4);
  // The bytes of the records it holds (the original's count also carries
  // what its compaction estimated, so the two differ a little).
  EXPECT_GT(c->DbSizeInUse(), 100);
  auto again = c->ExportAll();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->versions.size(), e->versions.size());
  for (size_t i = 0; i < e->versions.size(); ++i) {
    EXPECT_EQ(again->versions[i].main, e->versions[i].main);
    EXPECT_EQ(again->versions[i].tombstone, e->versions[i].tombstone);
    EXPECT_EQ(again->versions[i].kv.ShortDebugString(),
              e->versions[i].kv.ShortDebugString());
  }
  EXPECT_EQ(again->leases, e->leases);
  for (int64_t rev : {4, 5, 6}) {
    EXPECT_EQ(c->HashKV(rev)->hash(), store_->HashKV(rev)->hash()) << rev;
  }
  EXPECT_EQ(ValueAt(c, "c", 5), "x");
  EXPECT_EQ(ValueAt(c, "c", 6), "<none>");
  EXPECT_EQ(c->Range(MakeRange("a", "", 3)).status().code(),
            StatusCode::kCompacted);
  etcdserverpb::LeaseTimeToLiveRequest ttl;
  ttl.set_id(7);
  ttl.set_keys(true);
  auto t = c->LeaseTimeToLive(ttl);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->grantedttl(), 60);
  ASSERT_EQ(t->keys_size(), 1);
  EXPECT_EQ(t->keys(0), "b");
  auto next = c->Put(MakePut("d", "4"));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->header().revision(), 7);

  // A second import into the same directory is refused.
  EXPECT_EQ(Store::CreateFromExport(o, *e).code(), StatusCode::kAlreadyExists);
}

// Data no store could hold is refused before anything is written.
TEST_F(MvccStoreTest, CreateFromExportRefusesBadData) {
  auto version = [](int64_t main, int64_t sub, int64_t create) {
    Store::ExportedVersion v;
    v.main = main;
    v.sub = sub;
    v.kv.set_key("k");
    v.kv.set_create_revision(create);
    v.kv.set_version(1);
    return v;
  };
  struct Case {
    std::string name;
    Store::Export data;
  };
  std::vector<Case> cases(4);
  cases[0].name = "duplicate revision";
  cases[0].data.versions = {version(2, 0, 2), version(2, 0, 2)};
  cases[1].name = "create after mod";
  cases[1].data.versions = {version(2, 0, 3)};
  cases[2].name = "revision 0";
  cases[2].data.versions = {version(0, 0, 0)};
  cases[3].name = "compaction past the revision";
  cases[3].data.versions = {version(2, 0, 2)};
  cases[3].data.compact_scheduled = 3;
  for (const Case& k : cases) {
    testing::TempDir d;
    Options o;
    o.dir = d.path() + "/db";
    Status st = Store::CreateFromExport(o, k.data);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << k.name << ": " << st;
    EXPECT_FALSE(std::filesystem::exists(o.dir)) << k.name;
  }
}

// etcd's HashByRev starts with the bucket name, so an empty etcd answers
// crc32c("key") = 1084519789 (etcdctl endpoint hashkv on etcd 3.4.23); so
// does an empty kplane store, and never 0 (which JSON leaves out).
TEST_F(MvccStoreTest, HashKVOfAnEmptyStoreIsEtcds) {
  auto h = store_->HashKV(0);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->hash(), 1084519789u);
}

TEST_F(MvccStoreTest, HashKVTracksLiveStateAtRevision) {
  Put("a", "1");
  Put("b", "2");
  auto h2 = store_->HashKV(3);
  ASSERT_TRUE(h2.ok());
  Put("a", "3");
  auto h3 = store_->HashKV(0);
  EXPECT_NE(h3->hash(), h2->hash());
  EXPECT_EQ(h3->header().revision(), 4);
  EXPECT_EQ(store_->HashKV(3)->hash(), h2->hash());  // the past is stable
  Reopen();
  EXPECT_EQ(store_->HashKV(4)->hash(), h3->hash());
  // Compaction at or below the revision does not change its hash.
  ASSERT_TRUE(store_->Compact(4).ok());
  ASSERT_TRUE(store_->WaitForCompaction(4).ok());
  EXPECT_EQ(store_->HashKV(4)->hash(), h3->hash());
  EXPECT_EQ(store_->HashKV(4)->compact_revision(), 4);
  EXPECT_EQ(store_->HashKV(3).status().code(), StatusCode::kCompacted);
  EXPECT_EQ(store_->HashKV(9).status().code(), StatusCode::kFutureRevision);

  // A replica that applied the same writes hashes alike; one that differs
  // in a single value does not.
  testing::TempDir same_dir, other_dir;
  auto same = testing::OpenOrDie(same_dir.path());
  auto other = testing::OpenOrDie(other_dir.path());
  for (auto [k, v] : {std::pair{"a", "1"}, {"b", "2"}, {"a", "3"}}) {
    ASSERT_TRUE(same->Put(MakePut(k, v)).ok());
    ASSERT_TRUE(other->Put(MakePut(k, k == std::string("a") ? "3" : "x")).ok());
  }
  EXPECT_EQ(same->HashKV(0)->hash(), h3->hash());
  EXPECT_NE(other->HashKV(0)->hash(), h3->hash());
}

// Issue 17: a new store starts at revision 1, as etcd (its first write is
// revision 2), and says so after a reopen without writes.
TEST_F(MvccStoreTest, NewStoreStartsAtRevisionOne) {
  EXPECT_EQ(store_->CurrentRevision(), 1);
  auto r = store_->Range(MakeRange("k"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header().revision(), 1);
  Reopen();
  EXPECT_EQ(store_->CurrentRevision(), 1);
  EXPECT_EQ(Put("k", "v"), 2);
}

// A store created before issue 17 (format stamped, no write yet, so no
// current revision recorded) is not renumbered: it stays at revision 0 and
// its first write is 1, as its other replicas, which applied the same log
// from the same start, number it. (A store with writes keeps its revision:
// ReopenKeepsStateRevisionAndConsistentIndex.)
TEST(MvccUpgradeTest, StoreStampedBeforeKeepsRevisionZero) {
  testing::TempDir dir;
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir.path(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(),
                        std::string(keys::kMetaFormatVersion),
                        keys::EncodeInt64(keys::kFormatVersion))
                    .ok());
    ASSERT_TRUE(db->Close().ok());
  }
  auto store = testing::OpenOrDie(dir.path());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->CurrentRevision(), 0);
  auto p = store->Put(MakePut("k", "v"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->header().revision(), 1);
  store.reset();
  store = testing::OpenOrDie(dir.path());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->CurrentRevision(), 1);
  EXPECT_EQ(ValueAt(store.get(), "k", 1), "v");
}

}  // namespace
}  // namespace kplane::mvcc
