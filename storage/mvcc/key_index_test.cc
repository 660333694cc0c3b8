// The in-memory key index (key_index.h): its own rules, and the store with
// it against the store without it. A randomized run (fixed seeds, bounded
// steps) drives two stores -- Options::key_index on and off -- with the
// same puts (leases, prev_kv, ignore_value/ignore_lease), deletes, txns,
// lease grants and revokes, write groups, compactions and reopens, and
// compares every response, then ranges at random revisions with
// count_only, limits and filters (values, revisions, count, more). A write
// group that fails on a full disk must leave the index as it was.
#include "storage/mvcc/key_index.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <random>

#include "base/testing/fault_injection_file_system.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/test_util.h"

namespace kplane::mvcc {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;
using google::protobuf::util::MessageDifferencer;
using testing::MakeDelete;
using testing::MakePut;
using testing::MakeRange;

const std::string kZero("\0", 1);

TEST(MvccKeyIndexTest, CountsKeysLiveAtARevision) {
  KeyIndex index;
  index.Put("a", 2, 0, 2, 1, 0);
  index.Put("b", 3, 0, 3, 1, 0);
  index.Put("a", 4, 0, 2, 2, 7);
  index.Tombstone("b", 5, 0);
  index.Put("b", 6, 0, 6, 1, 0);
  EXPECT_EQ(index.Count("a", kZero, 1), 0);
  EXPECT_EQ(index.Count("a", kZero, 3), 2);
  EXPECT_EQ(index.Count("a", kZero, 5), 1);
  EXPECT_EQ(index.Count("a", kZero, 6), 2);
  EXPECT_EQ(index.Count("a", "b", 6), 1);
  EXPECT_EQ(index.Count("b", "", 5), 0);
  EXPECT_EQ(index.Count("b", "a", 6), 0);  // range_end <= key: nothing
  ASSERT_TRUE(index.Latest("a").has_value());
  EXPECT_EQ(index.Latest("a")->version, 2);
  EXPECT_EQ(index.Latest("a")->lease, 7);
  EXPECT_EQ(index.Latest("b")->create_revision, 6);
  EXPECT_FALSE(index.Latest("c").has_value());
}

TEST(MvccKeyIndexTest, CompactionKeepsTheNewestVersionAtOrBelowTarget) {
  KeyIndex index;
  index.Put("a", 2, 0, 2, 1, 0);
  index.Put("a", 4, 0, 2, 2, 0);
  index.Put("a", 6, 0, 2, 3, 0);
  index.Put("b", 3, 0, 3, 1, 0);
  index.Tombstone("b", 5, 0);
  index.Put("c", 3, 0, 3, 1, 0);
  index.Tombstone("c", 7, 0);
  index.Compact(5);
  // a keeps 4 and 6; b's tombstone is its newest version <= 5 but is not
  // below 5: it stays, as the physical compaction keeps it; c keeps both.
  EXPECT_EQ(index.VersionCount(), 5u);
  EXPECT_EQ(index.Count("a", kZero, 5), 2);
  index.Compact(6);
  // b's tombstone is below 6 now: b is gone.
  EXPECT_EQ(index.KeyCount(), 2u);
  EXPECT_EQ(index.Count("a", kZero, 6), 2);
  EXPECT_EQ(index.Count("a", kZero, 7), 1);
  EXPECT_EQ(index.VersionCount(), 3u);  // a: 6; c: 3, 7
  // b comes back with its next put, with that put as its only version.
  index.Put("b", 8, 0, 8, 1, 0);
  EXPECT_EQ(index.KeyCount(), 3u);
  EXPECT_EQ(index.VersionCount(), 4u);
  EXPECT_EQ(index.Latest("b")->create_revision, 8);
  EXPECT_EQ(index.Count("b", "", 8), 1);
  EXPECT_EQ(index.Count("b", "", 7), 0);
}

TEST(MvccKeyIndexTest, RemoveAboveUndoesStagedVersions) {
  KeyIndex index;
  index.Put("a", 2, 0, 2, 1, 0);
  index.Put("a", 3, 0, 2, 2, 0);
  index.Put("b", 3, 1, 3, 1, 0);
  index.RemoveAbove({"a", "b"}, 2);
  EXPECT_EQ(index.KeyCount(), 1u);
  EXPECT_EQ(index.Latest("a")->version, 1);
  EXPECT_FALSE(index.Latest("b").has_value());
  index.Put("b", 3, 1, 3, 1, 0);
  EXPECT_EQ(index.Latest("b")->create_revision, 3);
  EXPECT_EQ(index.KeyCount(), 2u);
}

TEST(MvccKeyIndexTest, ResetReplacesWhatPointLookupsFind) {
  KeyIndex index;
  index.Put("old", 2, 0, 2, 1, 0);
  std::map<std::string, std::vector<KeyIndex::Version>, std::less<>> keys;
  keys["a"] = {KeyIndex::Version{.main = 3, .create_revision = 3,
                                 .version = 1}};
  keys[std::string(40, 'k')] = {KeyIndex::Version{
      .main = 4, .create_revision = 4, .version = 1, .lease = 9}};
  index.Reset(std::move(keys));
  EXPECT_FALSE(index.Latest("old").has_value());
  EXPECT_EQ(index.Count("old", "", 2), 0);
  EXPECT_EQ(index.Latest("a")->main, 3);
  EXPECT_EQ(index.Latest(std::string(40, 'k'))->lease, 9);
  // A put of a key it holds appends to that key.
  index.Put("a", 5, 0, 3, 2, 0);
  EXPECT_EQ(index.KeyCount(), 2u);
  EXPECT_EQ(index.VersionCount(), 3u);
  EXPECT_EQ(index.Latest("a")->version, 2);
  // A key the rebuild dropped comes back with its next put.
  index.Put("old", 6, 0, 6, 1, 0);
  EXPECT_EQ(index.KeyCount(), 3u);
  EXPECT_EQ(index.Latest("old")->create_revision, 6);
}

// ---- the store with and without the index --------------------------------

class PairRun {
 public:
  explicit PairRun(uint64_t seed) : rng_(seed) {}

  void Run(int steps) {
    Open();
    for (step_ = 0; step_ < steps && !::testing::Test::HasFailure(); ++step_) {
      const int dice = Pick(100);
      if (!in_group_ && Coin(10)) {
        indexed_->BeginWriteGroup();
        plain_->BeginWriteGroup();
        in_group_ = true;
      } else if (in_group_ && (dice >= 60 || Coin(20))) {
        EndGroup();
      }
      if (dice < 30) {
        DoPut();
      } else if (dice < 40) {
        DoDelete();
      } else if (dice < 55) {
        DoTxn();
      } else if (dice < 60) {
        DoLease();
      } else if (dice < 90) {
        DoRanges();
      } else if (dice < 97) {
        DoCompact();
      } else {
        Reopen();
      }
    }
    EndGroup();
  }

 private:
  int Pick(int n) {
    return static_cast<int>(rng_() % static_cast<uint64_t>(n));
  }
  bool Coin(int percent = 50) { return Pick(100) < percent; }
  std::string Where() const { return "step " + std::to_string(step_); }

  // Enough keys that a range spans many, few enough that they collide.
  std::string Key() {
    static const char* const kPrefixes[] = {"/r/pods/a/", "/r/pods/b/",
                                            "/r/svc/"};
    std::string k = kPrefixes[Pick(3)];
    k += std::to_string(Pick(12));
    if (Coin(5)) k.push_back('\0');
    return k;
  }
  std::string End(const std::string& key) {
    switch (Pick(5)) {
      case 0:
        return "";
      case 1:
        return kZero;
      case 2:
        return "/r/pods0";
      case 3:
        return key + "\xff";
      default:
        return Key();
    }
  }
  int64_t Revision() {
    const int64_t current = indexed_->CurrentRevision();
    const int64_t compacted = indexed_->CompactRevision();
    switch (Pick(4)) {
      case 0:
        return 0;
      case 1:
        return compacted - 1 + Pick(3);  // around the compacted revision
      default:
        return compacted + Pick(static_cast<int>(current - compacted + 2));
    }
  }
  int64_t Lease() {
    if (leases_.empty() || Coin(60)) return 0;
    return leases_[Pick(static_cast<int>(leases_.size()))];
  }

  template <typename T>
  void Same(const StatusOr<T>& a, const StatusOr<T>& b,
            const std::string& what) {
    ASSERT_EQ(a.status().code(), b.status().code())
        << what << " at " << Where() << ": " << a.status() << " vs "
        << b.status();
    EXPECT_EQ(a.status().message(), b.status().message()) << what;
    if (!a.ok()) return;
    std::string diff;
    MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    EXPECT_TRUE(d.Compare(*a, *b))
        << what << " at " << Where() << " (indexed vs plain)\n"
        << diff;
  }

  void Open() {
    indexed_ = testing::OpenOrDie(indexed_dir_.path(), nullptr,
                                  [](Options* o) { o->key_index = true; });
    plain_ = testing::OpenOrDie(plain_dir_.path(), nullptr,
                                [](Options* o) { o->key_index = false; });
    ASSERT_NE(indexed_, nullptr);
    ASSERT_NE(plain_, nullptr);
  }
  void Reopen() {
    EndGroup();
    indexed_.reset();
    plain_.reset();
    Open();
  }
  void EndGroup() {
    if (!in_group_) return;
    indexed_->EndWriteGroup();
    plain_->EndWriteGroup();
    in_group_ = false;
  }

  etcdserverpb::PutRequest RandomPut() {
    auto req = MakePut(Key(), std::to_string(Pick(1000)));
    req.set_lease(Lease());
    req.set_prev_kv(Coin(30));
    if (Coin(10)) {
      req.set_ignore_value(true);
      req.clear_value();
    }
    if (Coin(10)) {
      req.set_ignore_lease(true);
      req.clear_lease();
    }
    return req;
  }
  etcdserverpb::DeleteRangeRequest RandomDelete() {
    std::string key = Key();
    auto req = MakeDelete(key, Coin(60) ? "" : End(key));
    req.set_prev_kv(Coin(30));
    return req;
  }

  void DoPut() {
    auto req = RandomPut();
    const uint64_t ci = ++ci_;
    Same(indexed_->Put(req, ci), plain_->Put(req, ci), "put");
  }
  void DoDelete() {
    auto req = RandomDelete();
    const uint64_t ci = ++ci_;
    Same(indexed_->DeleteRange(req, ci), plain_->DeleteRange(req, ci),
         "delete");
  }
  void DoTxn() {
    TxnRequest t;
    // The apiserver's shapes: compare on mod revision (or version), then
    // put or delete; else read.
    Compare* c = t.add_compare();
    c->set_key(Key());
    c->set_result(Coin() ? Compare::EQUAL : Compare::GREATER);
    if (Coin()) {
      c->set_target(Compare::MOD);
      c->set_mod_revision(Revision());
    } else {
      c->set_target(Compare::VERSION);
      c->set_version(Pick(3));
    }
    if (Coin()) {
      etcdserverpb::PutRequest p = RandomPut();
      p.set_key(c->key());
      *t.add_success()->mutable_request_put() = p;
    } else {
      *t.add_success()->mutable_request_delete_range() =
          MakeDelete(c->key(), "");
    }
    if (Coin(30)) {
      *t.add_success()->mutable_request_range() = MakeRange(c->key(), kZero, 0);
    }
    *t.add_failure()->mutable_request_range() = MakeRange(c->key(), "", 0);
    const uint64_t ci = ++ci_;
    Same(indexed_->Txn(t, ci), plain_->Txn(t, ci), "txn");
  }
  void DoLease() {
    EndGroup();  // lease calls write out the group anyway
    if (leases_.empty() || Coin(60)) {
      etcdserverpb::LeaseGrantRequest g;
      g.set_id(next_lease_++);
      g.set_ttl(60);
      const uint64_t ci = ++ci_;
      Same(indexed_->LeaseGrant(g, ci), plain_->LeaseGrant(g, ci), "grant");
      leases_.push_back(g.id());
      return;
    }
    const size_t i =
        static_cast<size_t>(Pick(static_cast<int>(leases_.size())));
    etcdserverpb::LeaseRevokeRequest r;
    r.set_id(leases_[i]);
    leases_.erase(leases_.begin() + static_cast<std::ptrdiff_t>(i));
    const uint64_t ci = ++ci_;
    Same(indexed_->LeaseRevoke(r, ci), plain_->LeaseRevoke(r, ci), "revoke");
  }
  void DoRanges() {
    for (int i = 0; i < 4; ++i) {
      std::string key = Key();
      RangeRequest r = MakeRange(Coin(70) ? "/r/" : key,
                                 Coin(70) ? "/r0" : End(key), Revision());
      if (Coin(60)) r.set_limit(Pick(6) - 1);
      if (Coin(15)) r.set_count_only(true);
      if (Coin(15)) r.set_keys_only(true);
      if (Coin(15)) {
        r.set_sort_order(static_cast<RangeRequest::SortOrder>(Pick(3)));
        r.set_sort_target(static_cast<RangeRequest::SortTarget>(Pick(5)));
      }
      if (Coin(10)) r.set_min_mod_revision(Revision());
      Same(indexed_->Range(r), plain_->Range(r), "range");
    }
  }
  void DoCompact() {
    EndGroup();
    const int64_t to = Revision();
    Status a = indexed_->Compact(to, ++ci_);
    Status b = plain_->Compact(to, ci_);
    ASSERT_EQ(a.code(), b.code()) << a << " vs " << b << " at " << Where();
    // Sometimes let the physical compaction finish first.
    if (a.ok() && Coin()) {
      ASSERT_TRUE(indexed_->WaitForCompaction(to).ok());
    }
  }

  std::mt19937_64 rng_;
  testing::TempDir indexed_dir_, plain_dir_;
  std::unique_ptr<Store> indexed_, plain_;
  std::vector<int64_t> leases_;
  int64_t next_lease_ = 100;
  uint64_t ci_ = 0;
  int step_ = 0;
  bool in_group_ = false;
};

TEST(MvccKeyIndexTest, IndexedStoreAnswersAsTheUnindexedStore) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    PairRun(seed).Run(3000);
    if (::testing::Test::HasFailure()) return;
  }
}

// A write group that never reaches the disk leaves no trace in the index:
// counts, the next versions and create revisions are as before it.
TEST(MvccKeyIndexTest, FailedWriteGroupLeavesTheIndexAsItWas) {
  testing::TempDir tmp;
  FaultInjectionFileSystem fault(FileSystem::Default());
  auto store = testing::OpenOrDie(tmp.Sub("db"), nullptr,
                                  [&](Options* o) { o->file_system = &fault; });
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put(MakePut("/p/a", "1")).ok());  // revision 2
  store->BeginWriteGroup();
  ASSERT_TRUE(store->Put(MakePut("/p/b", "2"), 7).ok());
  ASSERT_TRUE(store->DeleteRange(MakeDelete("/p/a", ""), 8).ok());
  fault.SetNoSpace(true);
  store->EndWriteGroup();
  EXPECT_EQ(store->WriteStatus().code(), StatusCode::kNoSpace);
  fault.SetNoSpace(false);
  ASSERT_TRUE(store->DisarmNoSpaceAlarm().ok());

  RangeRequest count = MakeRange("/p/", "/p0", 0);
  count.set_count_only(true);
  auto r = store->Range(count);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count(), 1);
  RangeRequest page = MakeRange("/p/", "/p0", 0);
  page.set_limit(1);
  r = store->Range(page);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count(), 1);
  EXPECT_FALSE(r->more());
  EXPECT_EQ(store->KeyIndexSize(), std::make_pair(size_t{1}, size_t{1}));

  // "/p/a" was never deleted: its next put is version 2 of generation 2.
  ASSERT_TRUE(store->Put(MakePut("/p/a", "3")).ok());
  r = store->Range(MakeRange("/p/a", "", 0));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_EQ(r->kvs(0).version(), 2);
  EXPECT_EQ(r->kvs(0).create_revision(), 2);
  r = store->Range(page);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count(), 1);
}

// The rebuild at open sees what the writes left, compaction included.
TEST(MvccKeyIndexTest, RebuiltAtOpen) {
  testing::TempDir tmp;
  auto store = testing::OpenOrDie(tmp.path());
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(store->Put(MakePut("/k/" + std::to_string(i % 4), "v")).ok());
  }
  ASSERT_TRUE(store->DeleteRange(MakeDelete("/k/3", "")).ok());
  const int64_t rev = store->CurrentRevision();
  ASSERT_TRUE(store->Compact(rev - 1).ok());
  const auto before = store->KeyIndexSize();
  store.reset();
  store = testing::OpenOrDie(tmp.path());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->KeyIndexSize(), before);
  EXPECT_EQ(before, std::make_pair(size_t{4}, size_t{5}));
  RangeRequest count = MakeRange("/k/", "/k0", rev - 1);
  count.set_count_only(true);
  auto r = store->Range(count);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count(), 4);
  count.set_revision(0);
  r = store->Range(count);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->count(), 3);
}

// The API server's update from a cached object (every Lease renewal): a
// txn comparing the key's mod revision whose put keeps the key's lease
// (ignore_lease). With the index, neither the txn's check that the key
// exists nor the put's lookup of its lease reads RocksDB; the lease is
// kept all the same. ignore_value still reads (the value is not indexed),
// and without the index both read, as before.
TEST(MvccKeyIndexTest, IgnoreLeaseReadsNoDatabase) {
  for (const bool indexed : {true, false}) {
    SCOPED_TRACE(indexed ? "indexed" : "no index");
    testing::TempDir tmp;
    auto store = testing::OpenOrDie(
        tmp.path(), nullptr, [&](Options* o) { o->key_index = indexed; });
    ASSERT_NE(store, nullptr);
    etcdserverpb::LeaseGrantRequest g;
    g.set_id(7);
    g.set_ttl(60);
    ASSERT_TRUE(store->LeaseGrant(g).ok());
    etcdserverpb::PutRequest first = MakePut("/leases/node-1", "v1");
    first.set_lease(7);
    auto put = store->Put(first);
    ASSERT_TRUE(put.ok()) << put.status();
    const int64_t rev = put->header().revision();

    TxnRequest t;
    Compare* c = t.add_compare();
    c->set_key("/leases/node-1");
    c->set_target(Compare::MOD);
    c->set_result(Compare::EQUAL);
    c->set_mod_revision(rev);
    etcdserverpb::PutRequest renew = MakePut("/leases/node-1", "v2");
    renew.set_ignore_lease(true);
    *t.add_success()->mutable_request_put() = renew;
    *t.add_failure()->mutable_request_range() = MakeRange("/leases/node-1");
    const int64_t reads = store->LatestReadsForTesting();
    auto r = store->Txn(t);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->succeeded());
    EXPECT_EQ(store->LatestReadsForTesting() - reads, indexed ? 0 : 2);
    auto got = store->Range(MakeRange("/leases/node-1"));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->kvs_size(), 1);
    EXPECT_EQ(got->kvs(0).value(), "v2");
    EXPECT_EQ(got->kvs(0).lease(), 7);
    EXPECT_EQ(got->kvs(0).version(), 2);

    // A missing key is still refused ("key not found").
    etcdserverpb::PutRequest missing = MakePut("/leases/none", "v");
    missing.set_ignore_lease(true);
    EXPECT_FALSE(store->Put(missing).ok());

    etcdserverpb::PutRequest keep_value = MakePut("/leases/node-1", "");
    keep_value.set_ignore_value(true);
    const int64_t before_value = store->LatestReadsForTesting();
    ASSERT_TRUE(store->Put(keep_value).ok());
    EXPECT_EQ(store->LatestReadsForTesting() - before_value, 1);
    EXPECT_EQ(testing::ValueAt(store.get(), "/leases/node-1"), "v2");
  }
}

}  // namespace
}  // namespace kplane::mvcc
