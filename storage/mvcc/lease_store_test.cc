// Leases through the store: attachment, revocation in one revision,
// persistence, expiry driven from outside.
#include <gtest/gtest.h>

#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;
using testing::ValueAt;

class MvccLeaseStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    store_ = testing::OpenOrDie(dir_.path(), &clock_);
    ASSERT_NE(store_, nullptr);
  }
  int64_t Grant(int64_t id, int64_t ttl) {
    etcdserverpb::LeaseGrantRequest r;
    r.set_id(id);
    r.set_ttl(ttl);
    auto resp = store_->LeaseGrant(r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->id() : 0;
  }
  Status Revoke(int64_t id) {
    etcdserverpb::LeaseRevokeRequest r;
    r.set_id(id);
    return store_->LeaseRevoke(r).status();
  }
  etcdserverpb::LeaseTimeToLiveResponse TimeToLive(int64_t id) {
    etcdserverpb::LeaseTimeToLiveRequest r;
    r.set_id(id);
    r.set_keys(true);
    return *store_->LeaseTimeToLive(r);
  }

  FakeClock clock_;
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(MvccLeaseStoreTest, RevokeDeletesKeysInOneRevision) {
  Grant(100, 30);
  for (const char* k : {"c", "a", "b"}) {
    ASSERT_TRUE(store_->Put(MakePut(k, "v", 100)).ok());
  }
  ASSERT_TRUE(store_->Put(MakePut("unleased", "v")).ok());
  ASSERT_EQ(store_->CurrentRevision(), 5);  // an empty store is at 1

  auto stream = store_->NewWatchStream();
  etcdserverpb::WatchCreateRequest w;
  w.set_key("a");
  w.set_range_end("z");
  ASSERT_TRUE(stream->Watch(w).ok());

  ASSERT_TRUE(Revoke(100).ok());
  EXPECT_EQ(store_->CurrentRevision(), 6);
  EXPECT_EQ(store_->Range(MakeRange("a", "d"))->count(), 0);
  EXPECT_EQ(ValueAt(store_.get(), "unleased"), "v");
  EXPECT_EQ(TimeToLive(100).ttl(), -1);

  // Watchers see one message of DELETE events, in key order.
  auto resp = stream->Next(clock_.Now());
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->header().revision(), 6);
  ASSERT_EQ(resp->events_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(resp->events(i).type(), mvccpb::Event::DELETE);
    EXPECT_EQ(resp->events(i).kv().key(), std::string(1, 'a' + i));
    EXPECT_EQ(resp->events(i).kv().mod_revision(), 6);
  }
  Status again = Revoke(100);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "etcdserver: requested lease not found");
}

TEST_F(MvccLeaseStoreTest, RevokeWithoutKeysKeepsRevision) {
  Grant(1, 10);
  ASSERT_TRUE(store_->Put(MakePut("x", "v")).ok());
  ASSERT_TRUE(Revoke(1).ok());
  EXPECT_EQ(store_->CurrentRevision(), 2);
  EXPECT_TRUE(store_->LeaseLeases()->leases().empty());
}

TEST_F(MvccLeaseStoreTest, GrantRules) {
  etcdserverpb::LeaseGrantRequest r;
  r.set_id(5);
  r.set_ttl(0);
  auto g = store_->LeaseGrant(r);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->ttl(), 2);
  EXPECT_EQ(g->id(), 5);
  EXPECT_EQ(store_->LeaseGrant(r).status().message(),
            "etcdserver: lease already exists");
  r.set_id(6);
  r.set_ttl(9'000'000'001);
  EXPECT_EQ(store_->LeaseGrant(r).status().message(),
            "etcdserver: too large lease TTL");
  // ID 0: the store picks distinct non-zero IDs.
  std::set<int64_t> ids;
  for (int i = 0; i < 20; ++i) ids.insert(Grant(0, 60));
  EXPECT_EQ(ids.size(), 20u);
  EXPECT_EQ(ids.count(0), 0u);
  EXPECT_EQ(store_->LeaseLeases()->leases_size(), 21);
  // Granting does not change the revision.
  EXPECT_EQ(store_->CurrentRevision(), Store::kInitialRevision);
}

TEST_F(MvccLeaseStoreTest, TimeToLiveAndKeepAlive) {
  Grant(1, 30);
  ASSERT_TRUE(store_->Put(MakePut("k2", "v", 1)).ok());
  ASSERT_TRUE(store_->Put(MakePut("k1", "v", 1)).ok());
  store_->LeasePromote(seconds(0));
  clock_.Advance(milliseconds(100));
  auto ttl = TimeToLive(1);
  EXPECT_EQ(ttl.ttl(), 29);  // rounded down, as etcd
  EXPECT_EQ(ttl.grantedttl(), 30);
  ASSERT_EQ(ttl.keys_size(), 2);
  EXPECT_EQ(ttl.keys(0), "k1");
  auto unknown = TimeToLive(99);
  EXPECT_EQ(unknown.ttl(), -1);
  EXPECT_EQ(unknown.id(), 99);

  clock_.Advance(seconds(20));
  etcdserverpb::LeaseKeepAliveRequest ka;
  ka.set_id(1);
  auto resp = store_->LeaseKeepAlive(ka);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->ttl(), 30);
  EXPECT_EQ(TimeToLive(1).ttl(), 30);
  store_->LeaseDemote();
  EXPECT_EQ(store_->LeaseKeepAlive(ka).status().code(), StatusCode::kNotLeader);
}

TEST_F(MvccLeaseStoreTest, ExpiryIsReportedAndRevokedFromOutside) {
  Grant(1, 10);
  Grant(2, 60);
  ASSERT_TRUE(store_->Put(MakePut("a", "v", 1)).ok());
  ASSERT_TRUE(store_->Put(MakePut("b", "v", 2)).ok());
  clock_.Advance(seconds(30));
  EXPECT_TRUE(store_->ExpiredLeases().empty());  // not primary yet
  store_->LeasePromote(seconds(0));
  clock_.Advance(seconds(10));
  auto due = store_->ExpiredLeases();
  ASSERT_EQ(due, (std::vector<int64_t>{1}));
  EXPECT_EQ(ValueAt(store_.get(), "a"), "v");  // nothing deleted by itself
  ASSERT_TRUE(Revoke(due[0]).ok());
  EXPECT_EQ(ValueAt(store_.get(), "a"), "<none>");
  EXPECT_EQ(ValueAt(store_.get(), "b"), "v");
}

TEST_F(MvccLeaseStoreTest, AttachmentsFollowTheKey) {
  Grant(1, 60);
  Grant(2, 60);
  ASSERT_TRUE(store_->Put(MakePut("moved", "v", 1)).ok());
  ASSERT_TRUE(store_->Put(MakePut("moved", "v", 2)).ok());  // now on lease 2
  ASSERT_TRUE(store_->Put(MakePut("dropped", "v", 1)).ok());
  ASSERT_TRUE(store_->Put(MakePut("dropped", "v")).ok());  // no lease now
  ASSERT_TRUE(store_->Put(MakePut("deleted", "v", 1)).ok());
  ASSERT_TRUE(store_->DeleteRange(MakeDelete("deleted")).ok());
  etcdserverpb::PutRequest keep;
  keep.set_key("moved");
  keep.set_value("v2");
  keep.set_ignore_lease(true);
  ASSERT_TRUE(store_->Put(keep).ok());
  EXPECT_TRUE(TimeToLive(1).keys().empty());
  ASSERT_EQ(TimeToLive(2).keys_size(), 1);
  const int64_t rev = store_->CurrentRevision();
  ASSERT_TRUE(Revoke(1).ok());
  EXPECT_EQ(store_->CurrentRevision(), rev);  // lease 1 had no keys left
  EXPECT_EQ(ValueAt(store_.get(), "dropped"), "v");
  ASSERT_TRUE(Revoke(2).ok());
  EXPECT_EQ(ValueAt(store_.get(), "moved"), "<none>");
}

TEST_F(MvccLeaseStoreTest, LeasesAndAttachmentsSurviveReopen) {
  Grant(7, 45);
  ASSERT_TRUE(store_->Put(MakePut("a", "v", 7)).ok());
  ASSERT_TRUE(store_->Put(MakePut("b", "v", 7)).ok());
  Reopen();
  auto ttl = TimeToLive(7);
  EXPECT_EQ(ttl.grantedttl(), 45);
  EXPECT_EQ(ttl.keys_size(), 2);
  // The grant counter is persisted too: new IDs do not repeat old ones.
  int64_t fresh = Grant(0, 10);
  EXPECT_NE(fresh, 7);
  ASSERT_TRUE(Revoke(7).ok());
  EXPECT_EQ(store_->Range(MakeRange("a", "c"))->count(), 0);
  Reopen();
  EXPECT_EQ(TimeToLive(7).ttl(), -1);
  EXPECT_EQ(store_->LeaseLeases()->leases_size(), 1);
}

TEST_F(MvccLeaseStoreTest, TxnPutWithLease) {
  Grant(3, 60);
  etcdserverpb::TxnRequest t;
  auto* op = t.add_success()->mutable_request_put();
  op->set_key("t");
  op->set_value("v");
  op->set_lease(3);
  ASSERT_TRUE(store_->Txn(t).ok());
  EXPECT_EQ(TimeToLive(3).keys_size(), 1);
  auto r = store_->Range(MakeRange("t"));
  EXPECT_EQ(r->kvs(0).lease(), 3);
}

}  // namespace
}  // namespace kplane::mvcc
