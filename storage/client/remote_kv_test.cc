// The store clients (RemoteKV over the JSON API, GrpcKV over gRPC) and
// Maintenance against a real single-member store started by the test:
// Debian's etcd 3.4, and `kplane store` when this build tree has it. Every
// test runs for both transports.
#include "storage/client/remote_kv.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <thread>
#include <tuple>

#include "base/mutex.h"
#include "storage/client/grpc_kv.h"
#include "storage/client/lease_keepalive.h"
#include "storage/client/local_cluster.h"
#include "storage/client/maintenance.h"

namespace kplane::storage {
namespace {

class RemoteKVEtcdTest
    : public ::testing::TestWithParam<std::tuple<StoreKind, StoreProtocol>> {
 protected:
  StoreKind kind() const { return std::get<0>(GetParam()); }
  StoreProtocol protocol() const { return std::get<1>(GetParam()); }

  void SetUp() override {
    if (kind() == StoreKind::kKplane && FindKplaneBinary().empty()) {
      GTEST_SKIP() << "no kplane binary in this build tree";
    }
    auto c = LocalCluster::Start({.kind = kind(), .members = 1});
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    RemoteKVOptions o;
    o.endpoints = cluster_->client_urls();
    auto kv = NewStoreClient(o, protocol());
    ASSERT_TRUE(kv.ok()) << kv.status();
    kv_ = std::move(*kv);
  }

  int64_t Put(const std::string& k, const std::string& v, int64_t lease = 0) {
    etcdserverpb::PutRequest p;
    p.set_key(k);
    p.set_value(v);
    p.set_lease(lease);
    auto r = kv_->Put(p);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->header().revision() : -1;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<KV> kv_;
};

TEST_P(RemoteKVEtcdTest, RangeAtRevisionsAndErrors) {
  // (etcd starts at revision 1, kplane store at 0: use what puts return.)
  const int64_t r1 = Put("/foo", "v1");
  const int64_t r2 = Put("/bar", "v2");
  const int64_t r3 = Put("/foo", "v3");
  EXPECT_EQ(r2, r1 + 1);
  EXPECT_EQ(r3, r1 + 2);
  etcdserverpb::RangeRequest r;
  r.set_key("/foo");
  r.set_revision(r1);
  auto old = kv_->Range(r);
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_EQ(old->kvs_size(), 1);
  EXPECT_EQ(old->kvs(0).value(), "v1");
  EXPECT_EQ(old->header().revision(), r3);

  r.set_revision(r3 + 100);
  auto future = kv_->Range(r);
  EXPECT_EQ(future.status().code(), StatusCode::kFutureRevision);
  EXPECT_EQ(future.status().message(),
            "etcdserver: mvcc: required revision is a future revision");

  etcdserverpb::CompactionRequest c;
  c.set_revision(r2);
  c.set_physical(true);
  ASSERT_TRUE(kv_->Compact(c).ok());
  auto again = kv_->Compact(c);
  EXPECT_EQ(again.status().code(), StatusCode::kCompacted);
  r.set_revision(r1);
  EXPECT_EQ(kv_->Range(r).status().code(), StatusCode::kCompacted);

  // Prefix range, keys only.
  etcdserverpb::RangeRequest all;
  all.set_key("/");
  all.set_range_end("0");
  all.set_keys_only(true);
  auto a = kv_->Range(all);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->kvs_size(), 2);
  EXPECT_EQ(a->kvs(0).key(), "/bar");
  EXPECT_EQ(a->kvs(0).value(), "");
}

TEST_P(RemoteKVEtcdTest, TxnAndDeleteWithPrevKv) {
  Put("k", "1");
  etcdserverpb::TxnRequest t;
  auto* cmp = t.add_compare();
  cmp->set_key("k");
  cmp->set_target(etcdserverpb::Compare::VALUE);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_value("1");
  auto* put = t.add_success()->mutable_request_put();
  put->set_key("k");
  put->set_value("2");
  put->set_prev_kv(true);
  t.add_failure()->mutable_request_range()->set_key("k");
  auto r = kv_->Txn(t);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->succeeded());
  EXPECT_EQ(r->responses(0).response_put().prev_kv().value(), "1");
  r = kv_->Txn(t);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->succeeded());
  EXPECT_EQ(r->responses(0).response_range().kvs(0).value(), "2");

  etcdserverpb::DeleteRangeRequest d;
  d.set_key("k");
  d.set_prev_kv(true);
  auto del = kv_->DeleteRange(d);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->deleted(), 1);
  EXPECT_EQ(del->prev_kvs(0).value(), "2");

  // A duplicate key in one txn is the server's InvalidArgument.
  etcdserverpb::TxnRequest dup;
  dup.add_success()->mutable_request_put()->set_key("x");
  dup.add_success()->mutable_request_put()->set_key("x");
  auto e = kv_->Txn(dup);
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message(),
            "etcdserver: duplicate key given in txn request");
}

TEST_P(RemoteKVEtcdTest, Leases) {
  etcdserverpb::LeaseGrantRequest g;
  g.set_ttl(30);
  auto lease = kv_->LeaseGrant(g);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->ttl(), 30);
  Put("leased", "v", lease->id());

  etcdserverpb::LeaseKeepAliveRequest ka;
  ka.set_id(lease->id());
  auto k = kv_->LeaseKeepAlive(ka);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->id(), lease->id());
  EXPECT_EQ(k->ttl(), 30);

  etcdserverpb::LeaseTimeToLiveRequest ttl;
  ttl.set_id(lease->id());
  ttl.set_keys(true);
  auto t = kv_->LeaseTimeToLive(ttl);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->grantedttl(), 30);
  ASSERT_EQ(t->keys_size(), 1);
  EXPECT_EQ(t->keys(0), "leased");

  auto list = kv_->LeaseLeases({});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->leases_size(), 1);

  etcdserverpb::LeaseRevokeRequest rv;
  rv.set_id(lease->id());
  ASSERT_TRUE(kv_->LeaseRevoke(rv).ok());
  EXPECT_EQ(kv_->LeaseRevoke(rv).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(kv_->LeaseKeepAlive(ka).status().code(), StatusCode::kNotFound);
  etcdserverpb::RangeRequest r;
  r.set_key("leased");
  EXPECT_EQ(kv_->Range(r)->kvs_size(), 0);

  // The loop ends by itself once the lease is gone.
  KeepAliveLoop loop(kv_.get(), lease->id(), {});
  EXPECT_EQ(loop.Wait().code(), StatusCode::kNotFound);
}

// Collects watch responses.
struct Collector {
  Mutex mu;
  std::condition_variable cv;
  std::vector<etcdserverpb::WatchResponse> got;
  WatchCallback Callback() {
    return [this](const etcdserverpb::WatchResponse& r) {
      MutexLock l(&mu);
      got.push_back(r);
      cv.notify_all();
    };
  }
  std::vector<etcdserverpb::WatchResponse> WaitFor(
      const std::function<
          bool(const std::vector<etcdserverpb::WatchResponse>&)>& pred) {
    MutexLock l(&mu);
    EXPECT_TRUE(cv.wait_for(l.native(), std::chrono::seconds(20), [&] {
      return pred(got);
    })) << "watch condition not reached";
    return got;
  }
};

int CountEvents(const std::vector<etcdserverpb::WatchResponse>& rs) {
  int n = 0;
  for (const auto& r : rs) n += r.events_size();
  return n;
}

TEST_P(RemoteKVEtcdTest, WatchPastLiveProgressAndCompacted) {
  const int64_t r1 = Put("w/a", "1");
  const int64_t r2 = Put("w/b", "2");
  Collector c;
  etcdserverpb::WatchCreateRequest req;
  req.set_key("w/");
  req.set_range_end("w0");
  req.set_start_revision(r1);
  req.set_prev_kv(true);
  auto w = kv_->StartWatch(req, c.Callback());
  ASSERT_TRUE(w.ok()) << w.status();
  // Ours answers progress after the events before it; etcd 3.4.23 at once,
  // or (JSON) on a side stream.
  EXPECT_EQ((*w)->ProgressOrdered(), kind() == StoreKind::kKplane);
  const int64_t r3 = Put("w/a", "3");  // live
  auto got = c.WaitFor([](auto& g) { return CountEvents(g) >= 3; });
  EXPECT_TRUE(got[0].created());
  // The live put may land before the catch-up is sent, and then all three
  // events come in one response: look the live event up by revision.
  std::vector<int64_t> revs;
  std::string live_prev_value = "<no event at r3>";
  for (const auto& r : got) {
    for (const auto& e : r.events()) {
      revs.push_back(e.kv().mod_revision());
      if (e.kv().mod_revision() == r3) live_prev_value = e.prev_kv().value();
    }
  }
  EXPECT_EQ(revs, (std::vector<int64_t>{r1, r2, r3}));
  EXPECT_EQ(live_prev_value, "1");

  (*w)->RequestProgress();
  got = c.WaitFor([](auto& g) {
    return !g.back().created() && g.back().events_size() == 0;
  });
  EXPECT_EQ(got.back().header().revision(), r3);
  w->reset();

  // Compact, then watch from before the compaction point.
  etcdserverpb::CompactionRequest cr;
  cr.set_revision(r3);
  ASSERT_TRUE(kv_->Compact(cr).ok());
  Collector c2;
  req.set_start_revision(r1);
  auto w2 = kv_->StartWatch(req, c2.Callback());
  ASSERT_TRUE(w2.ok());
  got = c2.WaitFor([](auto& g) { return !g.empty() && g.back().canceled(); });
  EXPECT_EQ(got.back().compact_revision(), r3);
}

TEST_P(RemoteKVEtcdTest, ConcurrentCallersDoNotSerialize) {
  constexpr int kThreads = 8, kPuts = 25;
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        etcdserverpb::PutRequest p;
        p.set_key("c/" + std::to_string(t) + "/" + std::to_string(i));
        p.set_value("v");
        if (kv_->Put(p).ok()) ++ok;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), kThreads * kPuts);
  etcdserverpb::RangeRequest r;
  r.set_key("c/");
  r.set_range_end("c0");
  r.set_count_only(true);
  EXPECT_EQ(kv_->Range(r)->count(), kThreads * kPuts);
}

TEST_P(RemoteKVEtcdTest, Maintenance) {
  auto m = Maintenance::Create(cluster_->client_url(0));
  ASSERT_TRUE(m.ok());
  auto st = (*m)->Status();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->version().substr(0, 4), "3.4.");
  EXPECT_EQ(st->leader(), st->header().member_id());
  EXPECT_GT(st->dbsize(), 0);

  auto ml = (*m)->MemberList();
  ASSERT_TRUE(ml.ok());
  ASSERT_EQ(ml->members_size(), 1);
  EXPECT_EQ(ml->members(0).name(), "n1");
  EXPECT_EQ(ml->members(0).clienturls(0), cluster_->client_url(0));

  // Member list also works through RemoteKV's failover call (the JSON
  // client's, whichever transport the test's KV uses).
  RemoteKVOptions jo;
  jo.endpoints = cluster_->client_urls();
  auto json_kv = RemoteKV::Create(jo);
  ASSERT_TRUE(json_kv.ok());
  etcdserverpb::MemberListResponse via_kv;
  ASSERT_TRUE((*json_kv)
                  ->Call("/v3/cluster/member/list",
                         etcdserverpb::MemberListRequest(), &via_kv,
                         CallKind::kRead)
                  .ok());
  EXPECT_EQ(via_kv.members_size(), 1);

  EXPECT_TRUE((*m)->Defragment().ok());
  // (kplane store's hash covers live key-values only: 0 when empty.)
  Put("snap", "x");
  auto h = (*m)->Hash();
  ASSERT_TRUE(h.ok());
  EXPECT_NE(h->hash(), 0u);
  etcdserverpb::AlarmRequest al;
  auto alarms = (*m)->Alarm(al);
  ASSERT_TRUE(alarms.ok());
  EXPECT_EQ(alarms->alarms_size(), 0);

  EXPECT_EQ((*m)->MemberRemove(12345).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE((*m)->MoveLeader(st->header().member_id()).ok());

  std::string snap;
  auto n = (*m)->Snapshot([&](std::string_view b) {
    snap.append(b);
    return Status::Ok();
  });
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, snap.size());
  if (kind() == StoreKind::kEtcd) {
    // A bolt db (4 KiB pages) followed by its 32-byte sha256.
    EXPECT_EQ(snap.size() % 512, 32u);
  } else {
    EXPECT_EQ(snap.substr(0, 8), "KPSNAP1\n");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stores, RemoteKVEtcdTest,
    ::testing::Combine(::testing::Values(StoreKind::kEtcd, StoreKind::kKplane),
                       ::testing::Values(StoreProtocol::kJson,
                                         StoreProtocol::kGrpc)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == StoreKind::kEtcd
                             ? "Etcd"
                             : "Kplane") +
             (std::get<1>(info.param) == StoreProtocol::kGrpc ? "Grpc"
                                                              : "Json");
    });

}  // namespace
}  // namespace kplane::storage
