// GrpcProxy (etcd's grpc-proxy) in front of in-process store members,
// driven through etcd's gRPC stubs as clientv3 would.
// clang-format off
#include "storage/grpc/test_member.h"
#include "storage/grpc/grpc_proxy.h"
// clang-format on
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/testing/temp_dir.h"
#include "informer/tcp_proxy.h"
#include "net/http_client.h"
#include "schemas/grpc/lock_services.grpc.pb.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/client/local_cluster.h"
#include "storage/grpc/grpc_proxy_http.h"
#include "storage/grpc/proxy_range_cache.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;
using WatchRW = grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>;

// Polls `f` until it holds or 20 s pass (the proxy's counters move on its
// control thread; there is no event to wait on from outside).
bool Eventually(const std::function<bool()>& f) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

class GrpcProxyTest : public ::testing::Test {
 protected:
  void StartProxy(GrpcProxyOptions o = {}) {
    if (o.endpoints.empty()) o.endpoints = {member_.address()};
    o.listen_addr = "127.0.0.1:0";
    auto p = GrpcProxy::Start(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    proxy_ = std::move(*p);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    ch_ =
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(proxy_->port()),
                                  grpc::InsecureChannelCredentials(), args);
    kv_ = pb::KV::NewStub(ch_);
    lease_ = pb::Lease::NewStub(ch_);
    watch_ = pb::Watch::NewStub(ch_);
    cluster_ = pb::Cluster::NewStub(ch_);
    maint_ = pb::Maintenance::NewStub(ch_);
  }

  void SetUp() override { ASSERT_TRUE(member_.Start().ok()); }

  grpc::Status Put(pb::KV::Stub* kv, const std::string& k, const std::string& v,
                   pb::PutResponse* out = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::PutRequest req;
    req.set_key(k);
    req.set_value(v);
    pb::PutResponse resp;
    grpc::Status st = kv->Put(&ctx, req, &resp);
    if (out) *out = resp;
    return st;
  }

  grpc::Status Get(pb::KV::Stub* kv, const std::string& k,
                   const std::string& end, pb::RangeResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::RangeRequest req;
    req.set_key(k);
    req.set_range_end(end);
    return kv->Range(&ctx, req, out);
  }

  static grpc::Status PutWithLease(pb::KV::Stub* kv, const std::string& k,
                                   const std::string& v, int64_t lease) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::PutRequest req;
    req.set_key(k);
    req.set_value(v);
    req.set_lease(lease);
    pb::PutResponse resp;
    return kv->Put(&ctx, req, &resp);
  }

  // Asks `rw` for a watcher on `key` from `start` and returns the answer
  // (which must be a `created`, canceled or not).
  static pb::WatchResponse CreateWatcher(WatchRW* rw, const std::string& key,
                                         int64_t start = 0) {
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(key);
    req.mutable_create_request()->set_start_revision(start);
    EXPECT_TRUE(rw->Write(req));
    pb::WatchResponse resp;
    EXPECT_TRUE(rw->Read(&resp));
    EXPECT_TRUE(resp.created());
    return resp;
  }

  // A Watch stream through the proxy with one watcher on `key`; returns
  // once `created` arrived.
  struct Watcher {
    grpc::ClientContext ctx;
    std::unique_ptr<WatchRW> rw;
    int64_t id = -1;
  };
  std::unique_ptr<Watcher> OpenWatch(const std::string& key,
                                     int64_t start_revision = 0) {
    auto w = std::make_unique<Watcher>();
    w->rw = watch_->Watch(&w->ctx);
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(key);
    req.mutable_create_request()->set_start_revision(start_revision);
    EXPECT_TRUE(w->rw->Write(req));
    pb::WatchResponse resp;
    EXPECT_TRUE(w->rw->Read(&resp));
    EXPECT_TRUE(resp.created());
    EXPECT_FALSE(resp.canceled()) << resp.cancel_reason();
    w->id = resp.watch_id();
    return w;
  }

  // A serializable Range through the proxy; *upstream says whether the
  // proxy asked a member (its count of calls sent to members moved).
  pb::RangeResponse SerialGet(const std::string& k, const std::string& end,
                              bool* upstream, int64_t revision = 0,
                              grpc::Status* status = nullptr,
                              const std::string& token = "") {
    const int64_t before = proxy_->stats().forwarded_calls;
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    if (!token.empty()) ctx.AddMetadata("token", token);
    pb::RangeRequest req;
    req.set_key(k);
    req.set_range_end(end);
    req.set_revision(revision);
    req.set_serializable(true);
    pb::RangeResponse resp;
    grpc::Status st = kv_->Range(&ctx, req, &resp);
    if (status != nullptr) {
      *status = st;
    } else {
      EXPECT_TRUE(st.ok()) << st.error_message();
    }
    *upstream = proxy_->stats().forwarded_calls != before;
    return resp;
  }
  // Whether a serializable Range of [k, end) is answered by the cache.
  bool Cached(const std::string& k, const std::string& end = "") {
    bool upstream = false;
    SerialGet(k, end, &upstream);
    return !upstream;
  }
  // Makes sure [k, end) is cached (a first read fills it).
  void Fill(const std::string& k, const std::string& end = "") {
    Cached(k, end);
    ASSERT_TRUE(Cached(k, end)) << k;
  }

  TestMember member_;
  std::unique_ptr<GrpcProxy> proxy_;
  std::shared_ptr<grpc::Channel> ch_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Lease::Stub> lease_;
  std::unique_ptr<pb::Watch::Stub> watch_;
  std::unique_ptr<pb::Cluster::Stub> cluster_;
  std::unique_ptr<pb::Maintenance::Stub> maint_;
};

TEST_F(GrpcProxyTest, ForwardsKvTxnLeaseAndStatus) {
  StartProxy();
  pb::PutResponse put;
  ASSERT_TRUE(Put(kv_.get(), "a", "1", &put).ok());
  EXPECT_GT(put.header().revision(), 0);
  pb::RangeResponse got;
  ASSERT_TRUE(Get(kv_.get(), "a", "", &got).ok());
  ASSERT_EQ(got.kvs_size(), 1);
  EXPECT_EQ(got.kvs(0).value(), "1");

  {
    grpc::ClientContext ctx;
    pb::TxnRequest req;
    pb::Compare* c = req.add_compare();
    c->set_key("a");
    c->set_target(pb::Compare::VALUE);
    c->set_result(pb::Compare::EQUAL);
    c->set_value("1");
    auto* p = req.add_success()->mutable_request_put();
    p->set_key("b");
    p->set_value("2");
    pb::TxnResponse resp;
    ASSERT_TRUE(kv_->Txn(&ctx, req, &resp).ok());
    EXPECT_TRUE(resp.succeeded());
  }
  ASSERT_TRUE(Get(kv_.get(), "b", "", &got).ok());
  ASSERT_EQ(got.kvs_size(), 1);

  // A member's error passes through with its code and etcd's text.
  {
    grpc::ClientContext ctx;
    pb::RangeRequest req;
    req.set_key("a");
    req.set_revision(1000000);
    pb::RangeResponse resp;
    grpc::Status st = kv_->Range(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_EQ(st.error_message(),
              "etcdserver: mvcc: required revision is a future revision");
  }

  // Lease grant, then the keep-alive stream (bidi, forwarded).
  int64_t lease = 0;
  {
    grpc::ClientContext ctx;
    pb::LeaseGrantRequest req;
    req.set_ttl(30);
    pb::LeaseGrantResponse resp;
    ASSERT_TRUE(lease_->LeaseGrant(&ctx, req, &resp).ok());
    lease = resp.id();
    ASSERT_NE(lease, 0);
  }
  {
    grpc::ClientContext ctx;
    auto rw = lease_->LeaseKeepAlive(&ctx);
    for (int i = 0; i < 3; ++i) {
      pb::LeaseKeepAliveRequest req;
      req.set_id(lease);
      ASSERT_TRUE(rw->Write(req));
      pb::LeaseKeepAliveResponse resp;
      ASSERT_TRUE(rw->Read(&resp));
      EXPECT_EQ(resp.id(), lease);
      EXPECT_EQ(resp.ttl(), 30);
    }
    // As etcd, the stream stays open after the client's half-close; the
    // client ends it.
    ctx.TryCancel();
  }

  {
    grpc::ClientContext ctx;
    pb::StatusResponse resp;
    ASSERT_TRUE(maint_->Status(&ctx, pb::StatusRequest(), &resp).ok());
    EXPECT_GT(resp.header().revision(), 0);
    EXPECT_NE(resp.leader(), 0u);
  }
  // MemberList: the proxy itself, at its advertise URL (etcd's default).
  {
    grpc::ClientContext ctx;
    pb::MemberListResponse resp;
    ASSERT_TRUE(
        cluster_->MemberList(&ctx, pb::MemberListRequest(), &resp).ok());
    ASSERT_EQ(resp.members_size(), 1);
    ASSERT_EQ(resp.members(0).clienturls_size(), 1);
    EXPECT_EQ(resp.members(0).clienturls(0), "127.0.0.1:23790");
  }
}

TEST_F(GrpcProxyTest, MemberListIsForwardedWithoutAdvertiseUrl) {
  GrpcProxyOptions o;
  o.advertise_client_url = "";
  StartProxy(o);
  grpc::ClientContext ctx;
  pb::MemberListResponse resp;
  ASSERT_TRUE(cluster_->MemberList(&ctx, pb::MemberListRequest(), &resp).ok());
  ASSERT_EQ(resp.members_size(), 1);
  EXPECT_EQ(resp.members(0).name(), "m1");
}

// The proxy reaches a member slower than a second to complete a connection
// (one attempt may take kGrpcConnectAttempt). With the attempt bounded by
// the reconnect backoff (100 ms growing to 1 s, as it was) none lasted the
// relay's 1.5 s hold and every forwarded call failed.
TEST_F(GrpcProxyTest, ReachesAMemberSlowToCompleteAConnection) {
  informer::testing::TcpProxy slow(member_.port(), milliseconds(1500));
  GrpcProxyOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(slow.port())};
  StartProxy(o);
  // A few tries: a call may find the proxy's channel between attempts.
  // (Without the fix every one fails: "connection attempt timed out before
  // receiving SETTINGS frame".)
  grpc::Status put;
  for (int i = 0; i < 20 && !(put = Put(kv_.get(), "a", "1")).ok(); ++i) {
  }
  EXPECT_TRUE(put.ok()) << put.error_message();
}

TEST_F(GrpcProxyTest, RequestsOverTheSizeLimitAreRefused) {
  GrpcProxyOptions o;
  o.max_send_bytes = 64 * 1024;
  StartProxy(o);
  grpc::Status st = Put(kv_.get(), "big", std::string(100 * 1024, 'x'));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << st.error_message();
  EXPECT_TRUE(Put(kv_.get(), "small", "x").ok());
}

TEST_F(GrpcProxyTest, IdenticalWatchesShareOneUpstreamWatch) {
  StartProxy();
  constexpr int kWatchers = 8;
  std::vector<std::unique_ptr<Watcher>> ws;
  for (int i = 0; i < kWatchers; ++i) ws.push_back(OpenWatch("k"));
  EXPECT_TRUE(Eventually([&] {
    return proxy_->stats().upstream_watches == 1 &&
           proxy_->stats().watchers == kWatchers;
  })) << proxy_->stats().upstream_watches
      << " upstream watches, " << proxy_->stats().watchers << " watchers";

  // Another key, and a watch from a past revision: their own.
  auto other = OpenWatch("other");
  auto past = OpenWatch("k", 1);
  EXPECT_TRUE(Eventually([&] { return proxy_->stats().upstream_watches == 3; }))
      << proxy_->stats().upstream_watches;

  pb::PutResponse put;
  ASSERT_TRUE(Put(kv_.get(), "k", "v", &put).ok());
  for (auto& w : ws) {
    pb::WatchResponse resp;
    ASSERT_TRUE(w->rw->Read(&resp));
    EXPECT_EQ(resp.watch_id(), w->id);
    ASSERT_EQ(resp.events_size(), 1);
    EXPECT_EQ(resp.events(0).kv().key(), "k");
    EXPECT_EQ(resp.events(0).kv().mod_revision(), put.header().revision());
  }
  {
    pb::WatchResponse resp;
    ASSERT_TRUE(past->rw->Read(&resp));
    ASSERT_EQ(resp.events_size(), 1);
  }
  // etcd's events_coalescing: the one upstream response went to 7 watchers
  // beyond the first (the watches of their own shared with nobody).
  EXPECT_EQ(proxy_->stats().events_coalescing, kWatchers - 1);

  // Closing the streams closes the upstream watches.
  for (auto& w : ws) w->ctx.TryCancel();
  other->ctx.TryCancel();
  past->ctx.TryCancel();
  EXPECT_TRUE(
      Eventually([&] { return proxy_->stats().upstream_watches == 0; }));
  EXPECT_EQ(proxy_->stats().watchers, 0);
}

TEST_F(GrpcProxyTest, CancelOneOfTheSharingWatchers) {
  StartProxy();
  auto a = OpenWatch("k");
  auto b = OpenWatch("k");
  pb::WatchRequest cancel;
  cancel.mutable_cancel_request()->set_watch_id(a->id);
  ASSERT_TRUE(a->rw->Write(cancel));
  pb::WatchResponse resp;
  ASSERT_TRUE(a->rw->Read(&resp));
  EXPECT_TRUE(resp.canceled());
  EXPECT_EQ(resp.watch_id(), a->id);
  EXPECT_TRUE(
      Eventually([&] { return proxy_->stats().upstream_watches == 1; }));
  ASSERT_TRUE(Put(kv_.get(), "k", "v").ok());
  ASSERT_TRUE(b->rw->Read(&resp));
  EXPECT_EQ(resp.events_size(), 1);
}

// max_watchers_per_stream: the members' bound and words
// (etcdjson::CheckWatcherLimit), created and canceled as etcd's proxy
// refuses a watcher; the stream's watchers go on, and a cancel frees a
// place.
TEST_F(GrpcProxyTest, StreamAtItsWatcherLimitRefusesTheNextCreate) {
  GrpcProxyOptions o;
  o.max_watchers_per_stream = 2;
  StartProxy(o);
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  auto create = [&](const std::string& key) {
    return CreateWatcher(rw.get(), key);
  };
  pb::WatchResponse a = create("a");
  ASSERT_FALSE(a.canceled()) << a.cancel_reason();
  pb::WatchResponse b = create("b");
  ASSERT_FALSE(b.canceled()) << b.cancel_reason();
  EXPECT_EQ(proxy_->stats().watch_creates_refused, 0);
  pb::WatchResponse refused = create("a");
  EXPECT_TRUE(refused.canceled());
  EXPECT_EQ(refused.watch_id(), -1);
  EXPECT_EQ(refused.cancel_reason(),
            "etcdserver: too many watchers on this stream (limit 2)");
  EXPECT_EQ(proxy_->stats().watch_creates_refused, 1);

  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  pb::WatchResponse resp;
  ASSERT_TRUE(rw->Read(&resp));
  EXPECT_EQ(resp.watch_id(), a.watch_id());
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().value(), "1");

  pb::WatchRequest cancel;
  cancel.mutable_cancel_request()->set_watch_id(b.watch_id());
  ASSERT_TRUE(rw->Write(cancel));
  ASSERT_TRUE(rw->Read(&resp));
  EXPECT_TRUE(resp.canceled());
  EXPECT_EQ(resp.watch_id(), b.watch_id());
  pb::WatchResponse again = create("c");
  EXPECT_FALSE(again.canceled()) << again.cancel_reason();
  EXPECT_GE(again.watch_id(), 0);
  ctx.TryCancel();
}

// etcd's proxy health check: answered through the member; a proxy whose
// only member is gone is unhealthy.
TEST_F(GrpcProxyTest, CheckHealthAsksTheMembers) {
  StartProxy();
  EXPECT_TRUE(proxy_->CheckHealth().ok());
  proxy_->Stop();
  member_.Stop();
  Status gone = proxy_->CheckHealth();
  EXPECT_FALSE(gone.ok());
}

// A watcher the member side ends (here: its start revision is compacted)
// frees its place on the stream, as one the client cancels does; without
// that, such watchers would fill the stream's bound while none is live.
TEST_F(GrpcProxyTest, WatchersEndedByTheMemberFreeTheirPlaces) {
  GrpcProxyOptions o;
  o.max_watchers_per_stream = 2;
  StartProxy(o);
  pb::PutResponse p;
  ASSERT_TRUE(Put(kv_.get(), "k", "1").ok());
  ASSERT_TRUE(Put(kv_.get(), "k", "2", &p).ok());
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::CompactionRequest compact;
    compact.set_revision(p.header().revision());
    pb::CompactionResponse resp;
    ASSERT_TRUE(kv_->Compact(&ctx, compact, &resp).ok());
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  auto create = [&](const std::string& key, int64_t start) {
    return CreateWatcher(rw.get(), key, start);
  };
  // Three times the stream's bound of watchers from a compacted revision:
  // each is created, then canceled by the member with the compaction.
  for (int i = 0; i < 3 * 2; ++i) {
    pb::WatchResponse created = create("k", 1);
    ASSERT_FALSE(created.canceled())
        << "watcher " << i << ": " << created.cancel_reason();
    pb::WatchResponse canceled;
    ASSERT_TRUE(rw->Read(&canceled));
    EXPECT_EQ(canceled.watch_id(), created.watch_id());
    ASSERT_TRUE(canceled.canceled()) << canceled.DebugString();
    EXPECT_EQ(canceled.compact_revision(), p.header().revision());
  }
  // The stream holds none of them: two live watchers fit, the third not.
  pb::WatchResponse a = create("a", 0);
  EXPECT_FALSE(a.canceled()) << a.cancel_reason();
  pb::WatchResponse b = create("b", 0);
  EXPECT_FALSE(b.canceled()) << b.cancel_reason();
  pb::WatchResponse refused = create("c", 0);
  EXPECT_TRUE(refused.canceled());
  EXPECT_EQ(refused.cancel_reason(),
            "etcdserver: too many watchers on this stream (limit 2)");
  ctx.TryCancel();
}

TEST_F(GrpcProxyTest, SlowWatcherIsEndedOthersKeepUp) {
  GrpcProxyOptions o;
  o.max_queued_watch_bytes = 256 * 1024;
  StartProxy(o);
  auto slow = OpenWatch("k");  // never read again until the end
  auto fast = OpenWatch("k");
  EXPECT_TRUE(
      Eventually([&] { return proxy_->stats().upstream_watches == 1; }));
  constexpr int kPuts = 100;
  const std::string value(100 * 1024, 'v');
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_TRUE(Put(kv_.get(), "k", value).ok());
    pb::WatchResponse resp;
    ASSERT_TRUE(fast->rw->Read(&resp)) << "put " << i;
    ASSERT_EQ(resp.events_size(), 1);
  }
  EXPECT_TRUE(
      Eventually([&] { return proxy_->stats().slow_streams_ended == 1; }));
  // The slow client finds its stream ended, with the reason.
  pb::WatchResponse resp;
  while (slow->rw->Read(&resp)) {
  }
  grpc::Status st = slow->rw->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(st.error_message().find("too slow"), std::string::npos)
      << st.error_message();
}

// max_queued_watch_bytes bounds the backlog behind the response being
// written, not the response itself: one response larger than the bound (a
// catch-up of many large values, a large value) reaches a client that
// reads, and the stream's other watchers go on.
TEST_F(GrpcProxyTest, OneResponseOverTheQueueBoundReachesAReadingClient) {
  GrpcProxyOptions o;
  o.max_queued_watch_bytes = 256 * 1024;
  StartProxy(o);
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  pb::WatchResponse big = CreateWatcher(rw.get(), "big");
  ASSERT_FALSE(big.canceled()) << big.cancel_reason();
  pb::WatchResponse small = CreateWatcher(rw.get(), "small");
  ASSERT_FALSE(small.canceled()) << small.cancel_reason();
  const std::string value(400 * 1024, 'v');
  ASSERT_TRUE(Put(kv_.get(), "big", value).ok());
  pb::WatchResponse resp;
  ASSERT_TRUE(rw->Read(&resp)) << rw->Finish().error_message();
  EXPECT_EQ(resp.watch_id(), big.watch_id());
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().value().size(), value.size());
  ASSERT_TRUE(Put(kv_.get(), "small", "s").ok());
  ASSERT_TRUE(rw->Read(&resp)) << rw->Finish().error_message();
  EXPECT_EQ(resp.watch_id(), small.watch_id());
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().value(), "s");
  EXPECT_EQ(proxy_->stats().slow_streams_ended, 0);
  ctx.TryCancel();
}

// A create whose permission check cannot reach a member (UNAVAILABLE)
// waits for the member, as etcd's proxy's check does (clientv3 retries it):
// refused, the watch would be over for good (clientv3 does not retry a
// canceled create). The stream's later requests are answered after it, in
// order.
TEST_F(GrpcProxyTest, WatchCreateWaitsOutAMemberOutage) {
  informer::testing::TcpProxy relay(member_.port());
  GrpcProxyOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(relay.port())};
  StartProxy(o);
  pb::RangeResponse got;
  ASSERT_TRUE(Get(kv_.get(), "k", "", &got).ok());  // connected
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  relay.Cut();
  pb::WatchRequest req;
  req.mutable_create_request()->set_key("k");
  ASSERT_TRUE(rw->Write(req));
  req.mutable_create_request()->set_key("k2");
  ASSERT_TRUE(rw->Write(req));
  EXPECT_TRUE(
      Eventually([&] { return proxy_->stats().watch_checks_retried >= 2; }));
  relay.Restore();
  pb::WatchResponse resp;
  for (int64_t id : {0, 1}) {
    ASSERT_TRUE(rw->Read(&resp));
    EXPECT_TRUE(resp.created());
    EXPECT_FALSE(resp.canceled()) << resp.cancel_reason();
    EXPECT_EQ(resp.watch_id(), id);
  }
  pb::PutResponse put;
  ASSERT_TRUE(Put(kv_.get(), "k", "v", &put).ok());
  ASSERT_TRUE(rw->Read(&resp));
  EXPECT_EQ(resp.watch_id(), 0);
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().mod_revision(), put.header().revision());
  ctx.TryCancel();
}

// A create waiting for a member ends with its client, and with the proxy:
// neither waits for the member to come back.
TEST_F(GrpcProxyTest, WatchCreateWaitingForAMemberEndsWithClientAndProxy) {
  informer::testing::TcpProxy relay(member_.port());
  GrpcProxyOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(relay.port())};
  StartProxy(o);
  pb::RangeResponse got;
  ASSERT_TRUE(Get(kv_.get(), "k", "", &got).ok());  // connected
  relay.Cut();
  grpc::ClientContext a_ctx, b_ctx;
  a_ctx.set_deadline(TestCallDeadline());
  b_ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> a = watch_->Watch(&a_ctx);
  std::unique_ptr<WatchRW> b = watch_->Watch(&b_ctx);
  pb::WatchRequest req;
  req.mutable_create_request()->set_key("k");
  ASSERT_TRUE(a->Write(req));
  ASSERT_TRUE(b->Write(req));
  EXPECT_TRUE(
      Eventually([&] { return proxy_->stats().watch_checks_retried >= 2; }));
  a_ctx.TryCancel();
  pb::WatchResponse resp;
  while (a->Read(&resp)) {
    EXPECT_FALSE(resp.canceled()) << "refused: " << resp.cancel_reason();
  }
  EXPECT_EQ(a->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // Returns: no check holds b's stream (or the server) open.
  proxy_->Stop();
  while (b->Read(&resp)) {
    EXPECT_FALSE(resp.canceled()) << "refused: " << resp.cancel_reason();
  }
  EXPECT_FALSE(b->Finish().ok());
}

// An empty key is the first key, "\0", as a member takes it (and etcd's
// proxy passes it on): with a range_end, [\0, range_end); with "\0",
// every key.
TEST_F(GrpcProxyTest, WatchOfAnEmptyKeyStartsAtTheFirstKey) {
  StartProxy();
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  auto create = [&](const std::string& range_end) {
    pb::WatchRequest req;
    req.mutable_create_request()->set_range_end(range_end);
    EXPECT_TRUE(rw->Write(req));
    pb::WatchResponse resp;
    EXPECT_TRUE(rw->Read(&resp));
    EXPECT_TRUE(resp.created());
    EXPECT_FALSE(resp.canceled()) << resp.cancel_reason();
    return resp.watch_id();
  };
  const int64_t to_m = create("m");
  const int64_t every = create(std::string(1, '\0'));
  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  std::map<int64_t, std::string> seen;
  for (int i = 0; i < 2; ++i) {
    pb::WatchResponse resp;
    ASSERT_TRUE(rw->Read(&resp));
    ASSERT_EQ(resp.events_size(), 1);
    seen[resp.watch_id()] = resp.events(0).kv().key();
  }
  EXPECT_EQ(seen, (std::map<int64_t, std::string>{{to_m, "a"}, {every, "a"}}));
  ASSERT_TRUE(Put(kv_.get(), "z", "1").ok());
  pb::WatchResponse resp;
  ASSERT_TRUE(rw->Read(&resp));
  EXPECT_EQ(resp.watch_id(), every);
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().key(), "z");
  ctx.TryCancel();
}

// The answer to a client's cancel carries a header, as etcd's proxy's (the
// last one its watcher saw): cluster, member, revision and term.
TEST_F(GrpcProxyTest, CancelAnswerCarriesAHeader) {
  StartProxy();
  auto w = OpenWatch("k");
  pb::PutResponse put;
  ASSERT_TRUE(Put(kv_.get(), "k", "v", &put).ok());
  pb::WatchResponse resp;
  ASSERT_TRUE(w->rw->Read(&resp));
  ASSERT_EQ(resp.events_size(), 1);
  pb::WatchRequest cancel;
  cancel.mutable_cancel_request()->set_watch_id(w->id);
  ASSERT_TRUE(w->rw->Write(cancel));
  ASSERT_TRUE(w->rw->Read(&resp));
  EXPECT_TRUE(resp.canceled());
  EXPECT_EQ(resp.watch_id(), w->id);
  ASSERT_TRUE(resp.has_header());
  EXPECT_EQ(resp.header().revision(), put.header().revision());
  EXPECT_NE(resp.header().cluster_id(), 0u);
  EXPECT_EQ(resp.header().cluster_id(), put.header().cluster_id());
  EXPECT_EQ(resp.header().member_id(), put.header().member_id());
  EXPECT_EQ(resp.header().raft_term(), put.header().raft_term());
  w->ctx.TryCancel();
}

// A watcher joining a shared watch is created at the store's revision (its
// permission check's answer), as etcd's proxy's, not at the last revision
// the shared watch delivered: that may be compacted by now, and clientv3
// resumes a broken stream from the created revision. It gets the events
// after it.
TEST_F(GrpcProxyTest, JoiningWatcherIsCreatedAtTheStoresRevision) {
  StartProxy();
  auto first = OpenWatch("k");
  pb::PutResponse put;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Put(kv_.get(), "other", "v", &put).ok());
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::CompactionRequest compact;
    compact.set_revision(put.header().revision());
    pb::CompactionResponse resp;
    ASSERT_TRUE(kv_->Compact(&ctx, compact, &resp).ok());
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  std::unique_ptr<WatchRW> rw = watch_->Watch(&ctx);
  pb::WatchResponse joined = CreateWatcher(rw.get(), "k");
  ASSERT_FALSE(joined.canceled()) << joined.cancel_reason();
  EXPECT_EQ(joined.header().revision(), put.header().revision());
  EXPECT_EQ(proxy_->stats().upstream_watches, 1);
  pb::PutResponse k;
  ASSERT_TRUE(Put(kv_.get(), "k", "v", &k).ok());
  for (WatchRW* s : {first->rw.get(), rw.get()}) {
    pb::WatchResponse resp;
    ASSERT_TRUE(s->Read(&resp));
    ASSERT_EQ(resp.events_size(), 1);
    EXPECT_EQ(resp.events(0).kv().mod_revision(), k.header().revision());
  }
  ctx.TryCancel();
  first->ctx.TryCancel();
}

TEST_F(GrpcProxyTest, NamespacePrefixesEveryKey) {
  GrpcProxyOptions o;
  o.key_prefix = "tenant-a/";
  StartProxy(o);
  auto direct = pb::KV::NewStub(member_.Channel());
  ASSERT_TRUE(Put(direct.get(), "outside", "x").ok());
  auto w = OpenWatch("k");

  pb::PutResponse put;
  ASSERT_TRUE(Put(kv_.get(), "k", "v", &put).ok());
  pb::RangeResponse got;
  ASSERT_TRUE(Get(direct.get(), "tenant-a/k", "", &got).ok());
  ASSERT_EQ(got.kvs_size(), 1);
  // The whole keyspace, seen through the proxy: only the namespace's keys,
  // without the prefix.
  ASSERT_TRUE(
      Get(kv_.get(), std::string(1, '\0'), std::string(1, '\0'), &got).ok());
  ASSERT_EQ(got.kvs_size(), 1);
  EXPECT_EQ(got.kvs(0).key(), "k");
  pb::WatchResponse resp;
  ASSERT_TRUE(w->rw->Read(&resp));
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().key(), "k");
  // Txn compares and ops are prefixed too.
  {
    grpc::ClientContext ctx;
    pb::TxnRequest req;
    pb::Compare* c = req.add_compare();
    c->set_key("k");
    c->set_target(pb::Compare::VALUE);
    c->set_result(pb::Compare::EQUAL);
    c->set_value("v");
    auto* r = req.add_success()->mutable_request_range();
    r->set_key("k");
    pb::TxnResponse resp;
    ASSERT_TRUE(kv_->Txn(&ctx, req, &resp).ok());
    EXPECT_TRUE(resp.succeeded());
    ASSERT_EQ(resp.responses(0).response_range().kvs_size(), 1);
    EXPECT_EQ(resp.responses(0).response_range().kvs(0).key(), "k");
  }
  grpc::Status st = Put(kv_.get(), "", "v");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "etcdserver: key is not provided");
}

// A lease is not namespaced, so it may hold keys of other namespaces too;
// its TimeToLive shows only this namespace's, as etcd's
// clientv3/namespace (they were shown with their full names).
TEST_F(GrpcProxyTest, NamespaceLeaseTimeToLiveShowsOnlyItsKeys) {
  GrpcProxyOptions o;
  o.key_prefix = "tenant-a/";
  StartProxy(o);
  const int64_t id = MustGrantLease(lease_.get());
  ASSERT_NE(id, 0);
  auto direct = pb::KV::NewStub(member_.Channel());
  ASSERT_TRUE(PutWithLease(direct.get(), "tenant-b/x", "v", id).ok());
  ASSERT_TRUE(PutWithLease(kv_.get(), "k", "v", id).ok());
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  pb::LeaseTimeToLiveRequest req;
  req.set_id(id);
  req.set_keys(true);
  pb::LeaseTimeToLiveResponse resp;
  grpc::Status st = lease_->LeaseTimeToLive(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(std::vector<std::string>(resp.keys().begin(), resp.keys().end()),
            std::vector<std::string>{"k"});
}

// ---- auth: each watcher's permission (etcd's checkPermissionForWatch) ----

// The member with auth enabled: root (root role), alice (READ on /app/),
// bob (no role); their tokens.
class GrpcProxyAuthTest : public GrpcProxyTest {
 protected:
  void SetUp() override {
    GrpcProxyTest::SetUp();
    auto auth = pb::Auth::NewStub(member_.Channel());
    auto ok = [](const grpc::Status& st) {
      ASSERT_TRUE(st.ok()) << st.error_message();
    };
    for (const char* name : {"root", "alice", "bob"}) {
      grpc::ClientContext ctx;
      pb::AuthUserAddRequest r;
      r.set_name(name);
      r.set_password(std::string(name) + "pw");
      pb::AuthUserAddResponse resp;
      ok(auth->UserAdd(&ctx, r, &resp));
    }
    {
      grpc::ClientContext ctx;
      pb::AuthUserGrantRoleRequest r;
      r.set_user("root");
      r.set_role("root");
      pb::AuthUserGrantRoleResponse resp;
      ok(auth->UserGrantRole(&ctx, r, &resp));
    }
    {
      grpc::ClientContext ctx;
      pb::AuthRoleAddRequest r;
      r.set_name("app-reader");
      pb::AuthRoleAddResponse resp;
      ok(auth->RoleAdd(&ctx, r, &resp));
    }
    {
      grpc::ClientContext ctx;
      pb::AuthRoleGrantPermissionRequest r;
      r.set_name("app-reader");
      r.mutable_perm()->set_permtype(authpb::Permission::READ);
      r.mutable_perm()->set_key("/app/");
      r.mutable_perm()->set_range_end("/app0");
      pb::AuthRoleGrantPermissionResponse resp;
      ok(auth->RoleGrantPermission(&ctx, r, &resp));
    }
    {
      grpc::ClientContext ctx;
      pb::AuthUserGrantRoleRequest r;
      r.set_user("alice");
      r.set_role("app-reader");
      pb::AuthUserGrantRoleResponse resp;
      ok(auth->UserGrantRole(&ctx, r, &resp));
    }
    {
      grpc::ClientContext ctx;
      pb::AuthEnableResponse resp;
      ok(auth->AuthEnable(&ctx, pb::AuthEnableRequest(), &resp));
    }
    for (const char* name : {"root", "alice", "bob"}) {
      grpc::ClientContext ctx;
      pb::AuthenticateRequest r;
      r.set_name(name);
      r.set_password(std::string(name) + "pw");
      pb::AuthenticateResponse resp;
      ok(auth->Authenticate(&ctx, r, &resp));
      tokens_[name] = resp.token();
    }
  }

  // A Watch stream through the proxy (or `stub`) carrying `token` ("" for
  // none); its reads fail after 30 s rather than wait forever.
  std::unique_ptr<Watcher> Stream(const std::string& token,
                                  pb::Watch::Stub* stub = nullptr) {
    auto w = std::make_unique<Watcher>();
    if (!token.empty()) w->ctx.AddMetadata("token", token);
    w->ctx.set_deadline(TestCallDeadline());
    w->rw = (stub != nullptr ? stub : watch_.get())->Watch(&w->ctx);
    return w;
  }
  // Changes `user`'s password as root, which ends every token of the user
  // (as an expiry would).
  void DropTokensOf(const std::string& user) {
    auto auth = pb::Auth::NewStub(member_.Channel());
    grpc::ClientContext ctx;
    ctx.AddMetadata("token", tokens_["root"]);
    pb::AuthUserChangePasswordRequest r;
    r.set_name(user);
    r.set_password(user + "-new");
    pb::AuthUserChangePasswordResponse resp;
    grpc::Status st = auth->UserChangePassword(&ctx, r, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  // A put as root, straight to the member.
  int64_t RootPut(const std::string& key) {
    auto kv = pb::KV::NewStub(member_.Channel());
    grpc::ClientContext ctx;
    ctx.AddMetadata("token", tokens_["root"]);
    pb::PutRequest req;
    req.set_key(key);
    req.set_value("v");
    pb::PutResponse resp;
    grpc::Status st = kv->Put(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.header().revision();
  }
  // The proxy, reaching the member through a relay the test can cut, and
  // alice's watcher on /app/x (which opens the upstream watch with her
  // token), then root's, sharing it.
  void ShareOneUpstreamWatch(std::unique_ptr<Watcher>* alice,
                             std::unique_ptr<Watcher>* root) {
    relay_ = std::make_unique<informer::testing::TcpProxy>(member_.port());
    GrpcProxyOptions o;
    o.endpoints = {"127.0.0.1:" + std::to_string(relay_->port())};
    StartProxy(o);
    *alice = Stream(tokens_["alice"]);
    pb::WatchResponse created = Create(alice->get(), "/app/x");
    ASSERT_FALSE(created.canceled()) << created.cancel_reason();
    *root = Stream(tokens_["root"]);
    created = Create(root->get(), "/app/x");
    ASSERT_FALSE(created.canceled()) << created.cancel_reason();
    ASSERT_TRUE(Eventually([&] { return proxy_->stats().watchers == 2; }));
    ASSERT_EQ(proxy_->stats().upstream_watches, 1);
  }
  // Asks for a watcher on `key` and returns the proxy's first answer.
  static pb::WatchResponse Create(Watcher* w, const std::string& key,
                                  const std::string& range_end = "") {
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(key);
    req.mutable_create_request()->set_range_end(range_end);
    EXPECT_TRUE(w->rw->Write(req));
    pb::WatchResponse resp;
    EXPECT_TRUE(w->rw->Read(&resp));
    return resp;
  }
  static void ExpectRefused(const pb::WatchResponse& r,
                            const std::string& reason) {
    EXPECT_TRUE(r.has_header());
    EXPECT_EQ(r.watch_id(), -1);
    EXPECT_TRUE(r.created());
    EXPECT_TRUE(r.canceled());
    EXPECT_EQ(r.cancel_reason(), reason);
    EXPECT_EQ(r.events_size(), 0);
  }

  std::map<std::string, std::string> tokens_;
  std::unique_ptr<informer::testing::TcpProxy> relay_;
};

// A read that carries a token is never answered from the cache: the
// member checks the token and the user's permissions each time, so a
// token that ended or a role revoked takes effect at once (a cached
// answer was served until a write through the proxy dropped it).
TEST_F(GrpcProxyAuthTest, ReadsWithATokenAreNeverAnsweredFromTheCache) {
  StartProxy();
  RootPut("/app/x");
  bool upstream = false;
  pb::RangeResponse first =
      SerialGet("/app/x", "", &upstream, 0, nullptr, tokens_["alice"]);
  EXPECT_EQ(first.kvs_size(), 1);
  EXPECT_TRUE(upstream);
  SerialGet("/app/x", "", &upstream, 0, nullptr, tokens_["alice"]);
  EXPECT_TRUE(upstream) << "answered from the cache";
  DropTokensOf("alice");
  grpc::Status st;
  pb::RangeResponse after =
      SerialGet("/app/x", "", &upstream, 0, &st, tokens_["alice"]);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << st.error_message();
  EXPECT_EQ(after.kvs_size(), 0);
}

TEST_F(GrpcProxyAuthTest, EachWatcherIsCheckedWithItsOwnToken) {
  StartProxy();
  // Refused first, so a refused watcher cannot be the one that opens the
  // upstream watch either.
  auto bob = Stream(tokens_["bob"]);
  ExpectRefused(Create(bob.get(), "/app/x"), "etcdserver: permission denied");
  auto anonymous = Stream("");
  ExpectRefused(Create(anonymous.get(), "/app/x"),
                "etcdserver: user name is empty");
  auto forged = Stream("not-a-token");
  ExpectRefused(Create(forged.get(), "/app/x"),
                "etcdserver: invalid auth token");
  EXPECT_EQ(proxy_->stats().upstream_watches, 0);

  // alice may read /app/: her watcher opens the upstream watch (with her
  // token; the proxy itself has no user) and root's shares it.
  auto alice = Stream(tokens_["alice"]);
  pb::WatchResponse created = Create(alice.get(), "/app/x");
  EXPECT_TRUE(created.created());
  EXPECT_FALSE(created.canceled()) << created.cancel_reason();
  EXPECT_EQ(created.watch_id(), 0);
  auto root = Stream(tokens_["root"]);
  created = Create(root.get(), "/app/x");
  EXPECT_FALSE(created.canceled()) << created.cancel_reason();
  EXPECT_TRUE(Eventually([&] { return proxy_->stats().watchers == 2; }))
      << proxy_->stats().watchers;
  EXPECT_EQ(proxy_->stats().upstream_watches, 1);
  // bob's stream, asked again after his refusal (the id -1 did not use up
  // an id): refused again, and not counted as a watcher.
  ExpectRefused(Create(bob.get(), "/app/x"), "etcdserver: permission denied");

  pb::PutResponse put;
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("token", tokens_["root"]);
    pb::PutRequest req;
    req.set_key("/app/x");
    req.set_value("v");
    grpc::Status st = kv_->Put(&ctx, req, &put);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  for (Watcher* w : {alice.get(), root.get()}) {
    pb::WatchResponse resp;
    ASSERT_TRUE(w->rw->Read(&resp));
    ASSERT_EQ(resp.events_size(), 1);
    EXPECT_EQ(resp.events(0).kv().key(), "/app/x");
    EXPECT_EQ(resp.events(0).kv().mod_revision(), put.header().revision());
  }
  // The refused streams got no event: the next answer on each is the
  // refusal of a later request, which would queue behind an event.
  ExpectRefused(Create(bob.get(), "/app/x"), "etcdserver: permission denied");
  ExpectRefused(Create(anonymous.get(), "/app/"),
                "etcdserver: user name is empty");
  EXPECT_EQ(proxy_->stats().watchers, 2);

  // alice may not read outside /app/: refused on her own stream, whose
  // watcher on /app/x goes on.
  ExpectRefused(Create(alice.get(), "/other"), "etcdserver: permission denied");
  ExpectRefused(Create(alice.get(), "/app/", "/b"),
                "etcdserver: permission denied");
}

TEST_F(GrpcProxyAuthTest, CheckedUnderTheNamespace) {
  GrpcProxyOptions o;
  o.key_prefix = "/app/";
  StartProxy(o);
  // "x" is /app/x on the member, which alice may read; bob may not.
  auto alice = Stream(tokens_["alice"]);
  pb::WatchResponse created = Create(alice.get(), "x");
  EXPECT_FALSE(created.canceled()) << created.cancel_reason();
  auto bob = Stream(tokens_["bob"]);
  ExpectRefused(Create(bob.get(), "x"), "etcdserver: permission denied");
}

// A member refuses each watch of a stream whose token did not resolve,
// with etcd 3.4's words (its isWatchPermitted), and keeps the stream open:
// what a proxy's resumed upstream watch meets once its token has expired.
TEST_F(GrpcProxyAuthTest, MemberRefusesEachWatchOfAnInvalidToken) {
  auto watch = pb::Watch::NewStub(member_.Channel());
  auto forged = Stream("not-a-token", watch.get());
  const std::string invalid =
      "rpc error: code = Unauthenticated desc = etcdserver: invalid auth token";
  ExpectRefused(Create(forged.get(), "/app/x"), invalid);
  ExpectRefused(Create(forged.get(), "/app/y"), invalid);
  auto anonymous = Stream("", watch.get());
  ExpectRefused(Create(anonymous.get(), "/app/x"),
                "rpc error: code = InvalidArgument desc = etcdserver: user "
                "name is empty");
  // The token is resolved again at each create: once alice's password
  // changed, her open stream's next create is refused the same way.
  auto alice = Stream(tokens_["alice"], watch.get());
  pb::WatchResponse created = Create(alice.get(), "/app/x");
  EXPECT_FALSE(created.canceled()) << created.cancel_reason();
  DropTokensOf("alice");
  ExpectRefused(Create(alice.get(), "/app/y"), invalid);
}

// A shared upstream watch that resumes (its connection to the member broke)
// presents the token of the watcher that joined last: the creator's token
// has expired by then (here: ended by a password change), and the watchers
// go on without a gap.
TEST_F(GrpcProxyAuthTest, ResumedWatchPresentsTheLatestSharersToken) {
  std::unique_ptr<Watcher> alice, root;
  ASSERT_NO_FATAL_FAILURE(ShareOneUpstreamWatch(&alice, &root));

  DropTokensOf("alice");
  relay_->Cut();
  relay_->Restore();
  const int64_t rev = RootPut("/app/x");
  for (Watcher* w : {alice.get(), root.get()}) {
    pb::WatchResponse resp;
    ASSERT_TRUE(w->rw->Read(&resp)) << "no event after the resume";
    EXPECT_FALSE(resp.canceled()) << resp.cancel_reason();
    ASSERT_EQ(resp.events_size(), 1);
    EXPECT_EQ(resp.events(0).kv().mod_revision(), rev);
  }
}

// When no sharer's token is good any more, the resumed upstream watch is
// refused by every member: its watchers are canceled with the member's
// words (clientv3 then ends the watch with that error), rather than left
// waiting for events that will not come.
TEST_F(GrpcProxyAuthTest, ResumedWatchRefusedEverywhereCancelsItsWatchers) {
  std::unique_ptr<Watcher> alice, root;
  ASSERT_NO_FATAL_FAILURE(ShareOneUpstreamWatch(&alice, &root));

  DropTokensOf("alice");
  DropTokensOf("root");
  relay_->Cut();
  relay_->Restore();
  for (Watcher* w : {alice.get(), root.get()}) {
    pb::WatchResponse resp;
    ASSERT_TRUE(w->rw->Read(&resp)) << "the watcher was not canceled";
    EXPECT_TRUE(resp.canceled());
    EXPECT_EQ(resp.cancel_reason(),
              "rpc error: code = Unauthenticated desc = etcdserver: invalid "
              "auth token");
    EXPECT_EQ(resp.events_size(), 0);
  }
  EXPECT_TRUE(Eventually([&] { return proxy_->stats().watchers == 0; }));
  // A new watcher with a good token opens a new upstream watch.
  auto auth = pb::Auth::NewStub(member_.Channel());
  grpc::ClientContext ctx;
  pb::AuthenticateRequest r;
  r.set_name("root");
  r.set_password("root-new");
  pb::AuthenticateResponse login;
  ASSERT_TRUE(auth->Authenticate(&ctx, r, &login).ok());
  auto again = Stream(login.token());
  pb::WatchResponse created = Create(again.get(), "/app/x");
  EXPECT_FALSE(created.canceled()) << created.cancel_reason();
}

// ---- progress requests ----

// etcd's proxy (3.4's recvLoop and 3.5+'s, which logs "not supported
// request type by gRPC proxy") answers none: its upstream watches are
// shared. Neither does this one, and the stream goes on.
TEST_F(GrpcProxyTest, ProgressRequestsAreNotAnsweredAsEtcdsProxy) {
  StartProxy();
  auto w = OpenWatch("k");
  pb::WatchRequest progress;
  progress.mutable_progress_request();
  ASSERT_TRUE(w->rw->Write(progress));
  pb::PutResponse put;
  ASSERT_TRUE(Put(kv_.get(), "k", "v", &put).ok());
  // The next answer is the event, not a progress notification.
  pb::WatchResponse resp;
  ASSERT_TRUE(w->rw->Read(&resp));
  ASSERT_EQ(resp.events_size(), 1);
  EXPECT_EQ(resp.events(0).kv().mod_revision(), put.header().revision());
  // Still served: another watcher on the same stream.
  pb::WatchRequest create;
  create.mutable_create_request()->set_key("k2");
  ASSERT_TRUE(w->rw->Write(create));
  ASSERT_TRUE(w->rw->Read(&resp));
  EXPECT_TRUE(resp.created());
  EXPECT_FALSE(resp.canceled());
}

// ---- the serializable-range cache (etcd's proxy/grpcproxy/kv.go) ----

TEST_F(GrpcProxyTest, SerializableRangeIsAnsweredFromTheCache) {
  StartProxy();
  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  bool upstream = false;
  pb::RangeResponse first = SerialGet("a", "", &upstream);
  EXPECT_TRUE(upstream);
  ASSERT_EQ(first.kvs_size(), 1);
  pb::RangeResponse second = SerialGet("a", "", &upstream);
  EXPECT_FALSE(upstream);
  ASSERT_EQ(second.kvs_size(), 1);
  EXPECT_EQ(second.kvs(0).value(), "1");
  EXPECT_EQ(proxy_->stats().range_cache_hits, 1);
  EXPECT_EQ(proxy_->stats().range_cache_misses, 1);
  EXPECT_EQ(proxy_->stats().range_cache_entries, 1);
  // Another caller's token is another entry: one user's answer is never
  // served to another.
  SerialGet("a", "", &upstream, 0, nullptr, "someone-else");
  EXPECT_TRUE(upstream);

  // The staleness etcd accepts: a write that does not go through the proxy
  // is not seen by the cached serializable read; a linearizable one sees it.
  auto direct = pb::KV::NewStub(member_.Channel());
  ASSERT_TRUE(Put(direct.get(), "a", "2").ok());
  EXPECT_EQ(SerialGet("a", "", &upstream).kvs(0).value(), "1");
  EXPECT_FALSE(upstream);
  pb::RangeResponse lin;
  ASSERT_TRUE(Get(kv_.get(), "a", "", &lin).ok());
  EXPECT_EQ(lin.kvs(0).value(), "2");
}

TEST_F(GrpcProxyTest, LinearizableRangesAlwaysGoToAMember) {
  StartProxy();
  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  pb::RangeResponse got;
  const int64_t before = proxy_->stats().forwarded_calls;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Get(kv_.get(), "a", "", &got).ok());
  EXPECT_EQ(proxy_->stats().forwarded_calls - before, 3);
  // Its answer is kept for serializable reads (etcd caches it as one).
  EXPECT_TRUE(Cached("a"));
}

TEST_F(GrpcProxyTest, PutThroughTheProxyDropsOverlappingRanges) {
  StartProxy();
  const std::string kEnd(1, '\0');
  for (const char* k : {"a", "b", "x"})
    ASSERT_TRUE(Put(kv_.get(), k, "0").ok());
  Fill("a");
  Fill("b");
  Fill("a", "c");   // [a, c)
  Fill("x", kEnd);  // x and after
  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  EXPECT_FALSE(Cached("a"));
  EXPECT_FALSE(Cached("a", "c"));
  EXPECT_TRUE(Cached("b"));
  EXPECT_TRUE(Cached("x", kEnd));
  bool upstream = false;
  EXPECT_EQ(SerialGet("a", "", &upstream).kvs(0).value(), "1");
  ASSERT_TRUE(Put(kv_.get(), "y", "1").ok());
  EXPECT_FALSE(Cached("x", kEnd));
  EXPECT_TRUE(Cached("b"));
}

TEST_F(GrpcProxyTest, DeleteRangeThroughTheProxyDropsOverlappingRanges) {
  StartProxy();
  for (const char* k : {"a", "m", "z"})
    ASSERT_TRUE(Put(kv_.get(), k, "0").ok());
  Fill("a");
  Fill("m");
  Fill("z");
  Fill("k", "p");
  grpc::ClientContext ctx;
  pb::DeleteRangeRequest del;
  del.set_key("b");
  del.set_range_end("n");
  pb::DeleteRangeResponse resp;
  ASSERT_TRUE(kv_->DeleteRange(&ctx, del, &resp).ok());
  EXPECT_EQ(resp.deleted(), 1);
  EXPECT_FALSE(Cached("m"));
  EXPECT_FALSE(Cached("k", "p"));
  EXPECT_TRUE(Cached("a"));
  EXPECT_TRUE(Cached("z"));
  bool upstream = false;
  EXPECT_EQ(SerialGet("m", "", &upstream).kvs_size(), 0);
}

TEST_F(GrpcProxyTest, TxnThroughTheProxyDropsOverlappingRanges) {
  StartProxy();
  for (const char* k : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(Put(kv_.get(), k, "0").ok());
  }
  for (const char* k : {"a", "b", "c", "d", "e"}) Fill(k);
  // Compare on a; put b if it holds, delete c if not; a nested txn puts e.
  grpc::ClientContext ctx;
  pb::TxnRequest txn;
  pb::Compare* cmp = txn.add_compare();
  cmp->set_key("a");
  cmp->set_target(pb::Compare::VALUE);
  cmp->set_result(pb::Compare::EQUAL);
  cmp->set_value("0");
  pb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key("b");
  put->set_value("1");
  pb::PutRequest* nested = txn.add_success()
                               ->mutable_request_txn()
                               ->add_success()
                               ->mutable_request_put();
  nested->set_key("e");
  nested->set_value("1");
  txn.add_failure()->mutable_request_delete_range()->set_key("c");
  pb::TxnResponse resp;
  grpc::Status st = kv_->Txn(&ctx, txn, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(resp.succeeded());
  EXPECT_FALSE(Cached("a"));  // compared
  EXPECT_FALSE(Cached("b"));  // written
  EXPECT_FALSE(Cached("c"));  // in the branch not taken: dropped anyway
  EXPECT_FALSE(Cached("e"));  // written by the nested txn
  EXPECT_TRUE(Cached("d"));
  bool upstream = false;
  EXPECT_EQ(SerialGet("b", "", &upstream).kvs(0).value(), "1");
  EXPECT_EQ(SerialGet("e", "", &upstream).kvs(0).value(), "1");
}

TEST_F(GrpcProxyTest, RevisionReadsStayCachedUntilCompaction) {
  StartProxy();
  pb::PutResponse p1, p2;
  ASSERT_TRUE(Put(kv_.get(), "k", "1", &p1).ok());
  ASSERT_TRUE(Put(kv_.get(), "k", "2", &p2).ok());
  const int64_t r1 = p1.header().revision(), r2 = p2.header().revision();
  bool upstream = false;
  SerialGet("k", "", &upstream, r1);
  EXPECT_TRUE(upstream);
  // A write to the key does not change what revision r1 held.
  ASSERT_TRUE(Put(kv_.get(), "k", "3").ok());
  EXPECT_EQ(SerialGet("k", "", &upstream, r1).kvs(0).value(), "1");
  EXPECT_FALSE(upstream);
  Fill("k");

  grpc::ClientContext ctx;
  pb::CompactionRequest compact;
  compact.set_revision(r2);
  pb::CompactionResponse cresp;
  ASSERT_TRUE(kv_->Compact(&ctx, compact, &cresp).ok());
  // Revision r1 is gone: refused by the proxy without asking a member, as
  // the member would refuse it.
  grpc::Status st;
  SerialGet("k", "", &upstream, r1, &st);
  EXPECT_FALSE(upstream);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(st.error_message(),
            "etcdserver: mvcc: required revision has been compacted");
  // r2 itself and the latest values are still served.
  EXPECT_EQ(SerialGet("k", "", &upstream, r2).kvs(0).value(), "2");
  EXPECT_TRUE(Cached("k"));
}

TEST_F(GrpcProxyTest, RangeCacheCanBeTurnedOff) {
  GrpcProxyOptions o;
  o.range_cache_entries = 0;
  StartProxy(o);
  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  EXPECT_FALSE(Cached("a"));
  EXPECT_FALSE(Cached("a"));
  EXPECT_EQ(proxy_->stats().range_cache_entries, 0);
}

TEST_F(GrpcProxyTest, CachedAnswersUnderANamespaceAreStripped) {
  GrpcProxyOptions o;
  o.key_prefix = "t/";
  StartProxy(o);
  ASSERT_TRUE(Put(kv_.get(), "a", "1").ok());
  Fill("a");
  bool upstream = false;
  pb::RangeResponse got = SerialGet("a", "", &upstream);
  EXPECT_FALSE(upstream);
  ASSERT_EQ(got.kvs_size(), 1);
  EXPECT_EQ(got.kvs(0).key(), "a");
  ASSERT_TRUE(Put(kv_.get(), "a", "2").ok());
  EXPECT_EQ(SerialGet("a", "", &upstream).kvs(0).value(), "2");
  EXPECT_TRUE(upstream);
}

// A revoke deletes the lease's keys, which the proxy cannot name (etcd's
// proxy does not invalidate on it either): the whole cache goes.
TEST_F(GrpcProxyTest, LeaseRevokeThroughTheProxyDropsCachedAnswers) {
  StartProxy();
  const int64_t id = MustGrantLease(lease_.get());
  ASSERT_NE(id, 0);
  ASSERT_TRUE(PutWithLease(kv_.get(), "a", "1", id).ok());
  Fill("a");
  ASSERT_TRUE(MustRevokeLease(lease_.get(), id));
  bool upstream = false;
  EXPECT_EQ(SerialGet("a", "", &upstream).kvs_size(), 0);
  EXPECT_TRUE(upstream);
}

// Tokenless answers were cached while auth was off; once it is on the
// member refuses such reads, and so must the proxy.
TEST_F(GrpcProxyTest, AuthEnableThroughTheProxyDropsCachedAnswers) {
  {
    auto auth = pb::Auth::NewStub(member_.Channel());
    grpc::ClientContext add_ctx;
    pb::AuthUserAddRequest add;
    add.set_name("root");
    add.set_password("rootpw");
    pb::AuthUserAddResponse add_resp;
    ASSERT_TRUE(auth->UserAdd(&add_ctx, add, &add_resp).ok());
    grpc::ClientContext grant_ctx;
    pb::AuthUserGrantRoleRequest grant;
    grant.set_user("root");
    grant.set_role("root");
    pb::AuthUserGrantRoleResponse grant_resp;
    ASSERT_TRUE(auth->UserGrantRole(&grant_ctx, grant, &grant_resp).ok());
  }
  StartProxy();
  ASSERT_TRUE(Put(kv_.get(), "s", "v").ok());
  Fill("s");
  {
    auto auth = pb::Auth::NewStub(ch_);
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::AuthEnableResponse resp;
    grpc::Status st = auth->AuthEnable(&ctx, pb::AuthEnableRequest(), &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  // What the member says to the same read.
  grpc::Status member_st;
  {
    auto direct = pb::KV::NewStub(member_.Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::RangeRequest req;
    req.set_key("s");
    req.set_serializable(true);
    pb::RangeResponse resp;
    member_st = direct->Range(&ctx, req, &resp);
    ASSERT_FALSE(member_st.ok());
  }
  bool upstream = false;
  grpc::Status st;
  pb::RangeResponse got = SerialGet("s", "", &upstream, 0, &st);
  EXPECT_EQ(got.kvs_size(), 0);
  EXPECT_EQ(st.error_code(), member_st.error_code());
  EXPECT_EQ(st.error_message(), member_st.error_message());
  EXPECT_EQ(st.error_message(), "etcdserver: user name is empty");
}

// Lock and Unlock write the lock's key on the member: cached reads of the
// lock's prefix must not miss it.
TEST_F(GrpcProxyTest, LockThroughTheProxyDropsCachedAnswers) {
  StartProxy();
  auto lock = v3lockpb::Lock::NewStub(ch_);
  const int64_t id = MustGrantLease(lease_.get());
  ASSERT_NE(id, 0);
  Fill("l/", "l0");
  std::string key;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    v3lockpb::LockRequest req;
    req.set_name("l");
    req.set_lease(id);
    v3lockpb::LockResponse resp;
    grpc::Status st = lock->Lock(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    key = resp.key();
  }
  bool upstream = false;
  pb::RangeResponse got = SerialGet("l/", "l0", &upstream);
  ASSERT_EQ(got.kvs_size(), 1);
  EXPECT_EQ(got.kvs(0).key(), key);
  Fill("l/", "l0");
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    v3lockpb::UnlockRequest req;
    req.set_key(key);
    v3lockpb::UnlockResponse resp;
    grpc::Status st = lock->Unlock(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  EXPECT_EQ(SerialGet("l/", "l0", &upstream).kvs_size(), 0);
}

// The cache alone: the rules a proxy test cannot time.
std::shared_ptr<const std::string> Answer(const std::string& s) {
  return std::make_shared<const std::string>(s);
}

TEST(ProxyRangeCacheTest, AReadThatRacedAWriteIsNotCached) {
  ProxyRangeCache c(16, 1 << 20);
  const uint64_t gen = c.generation();  // the read is sent...
  c.Invalidate("k", "");                // ...a write through the proxy...
  c.Add("key", "k", "", 0, Answer("old"), gen);  // ...the read's answer
  std::shared_ptr<const std::string> got;
  EXPECT_EQ(c.Get("key", 0, &got), ProxyRangeCache::Result::kMiss);
  c.Add("key", "k", "", 0, Answer("new"), c.generation());
  EXPECT_EQ(c.Get("key", 0, &got), ProxyRangeCache::Result::kHit);
  EXPECT_EQ(*got, "new");
}

TEST(ProxyRangeCacheTest, ClearDropsEveryEntryAndRacingReads) {
  ProxyRangeCache c(16, 1 << 20);
  c.Add("latest", "k", "", 0, Answer("x"), c.generation());
  c.Add("at-5", "k", "", 5, Answer("x"), c.generation());
  c.Compact(3);
  const uint64_t gen = c.generation();  // a read is sent...
  c.Clear();                            // ...a revoke through the proxy
  c.Add("racing", "z", "", 0, Answer("old"), gen);
  EXPECT_EQ(c.size(), 0u);
  std::shared_ptr<const std::string> got;
  EXPECT_EQ(c.Get("at-5", 5, &got), ProxyRangeCache::Result::kMiss);
  EXPECT_EQ(c.Get("at-2", 2, &got), ProxyRangeCache::Result::kCompacted);
}

TEST(ProxyRangeCacheTest, BoundedByEntriesAndBytesLeastRecentlyUsedFirst) {
  ProxyRangeCache c(2, 1 << 20);
  c.Add("1", "a", "", 0, Answer("x"), c.generation());
  c.Add("2", "b", "", 0, Answer("x"), c.generation());
  std::shared_ptr<const std::string> got;
  ASSERT_EQ(c.Get("1", 0, &got), ProxyRangeCache::Result::kHit);  // 2 is LRU
  c.Add("3", "c", "", 0, Answer("x"), c.generation());
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.Get("2", 0, &got), ProxyRangeCache::Result::kMiss);
  EXPECT_EQ(c.Get("1", 0, &got), ProxyRangeCache::Result::kHit);
  // An evicted entry leaves the index too: invalidating its key is safe.
  c.Invalidate("b", "");
  EXPECT_EQ(c.size(), 2u);

  ProxyRangeCache small(100, 1000);
  small.Add("big", "a", "", 0, Answer(std::string(2000, 'x')),
            small.generation());
  EXPECT_EQ(small.size(), 0u);  // larger than the whole bound
  small.Add("1", "a", "", 0, Answer(std::string(500, 'x')), small.generation());
  small.Add("2", "b", "", 0, Answer(std::string(500, 'x')), small.generation());
  EXPECT_EQ(small.size(), 1u);  // two would pass 1000 bytes
  EXPECT_EQ(small.Get("2", 0, &got), ProxyRangeCache::Result::kHit);
}

TEST(PrefixIntervalTest, AsEtcdNamespace) {
  std::string k = "a", e = "";
  PrefixInterval("p/", &k, &e);
  EXPECT_EQ(k, "p/a");
  EXPECT_EQ(e, "");
  k = "a";
  e = std::string(1, '\0');
  PrefixInterval("p/", &k, &e);
  EXPECT_EQ(e, "p0");  // '/' + 1
  k = "a";
  e = "b";
  PrefixInterval("p/", &k, &e);
  EXPECT_EQ(e, "p/b");
  k = "a";
  e = std::string(1, '\0');
  PrefixInterval("\xff\xff", &k, &e);
  EXPECT_EQ(e, std::string(1, '\0'));
}

TEST(GrpcProxyFailoverTest, MovesToTheNextMemberWhenOneDies) {
  // Two single-member clusters stand in for two members: which one
  // answered shows in the data.
  TestMember a, b;
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(b.Start().ok());
  GrpcProxyOptions o;
  o.endpoints = {a.address(), b.address()};
  o.listen_addr = "127.0.0.1:0";
  auto p = GrpcProxy::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto ch = grpc::CreateChannel("127.0.0.1:" + std::to_string((*p)->port()),
                                grpc::InsecureChannelCredentials());
  auto kv = pb::KV::NewStub(ch);
  auto bkv = pb::KV::NewStub(b.Channel());
  {
    grpc::ClientContext ctx;
    pb::PutRequest req;
    req.set_key("only-on-b");
    req.set_value("b");
    pb::PutResponse resp;
    ASSERT_TRUE(bkv->Put(&ctx, req, &resp).ok());
  }
  auto get = [&](pb::RangeResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::RangeRequest req;
    req.set_key("only-on-b");
    return kv->Range(&ctx, req, out);
  };
  pb::RangeResponse resp;
  ASSERT_TRUE(get(&resp).ok());
  EXPECT_EQ(resp.kvs_size(), 0);  // a answered
  a.Stop();
  // As clientv3 does, the caller retries a read that failed UNAVAILABLE;
  // the proxy sends the retry to b.
  bool moved = Eventually([&] {
    pb::RangeResponse r;
    grpc::Status st = get(&r);
    return st.ok() && r.kvs_size() == 1;
  });
  EXPECT_TRUE(moved);
}

// etcd's proxy answers HTTP/1.1 on its client port beside gRPC (cmux):
// /health, a member's /metrics with the proxy's own series, and
// /proxy/metrics; with no member left, /metrics is etcd's 500 and /health
// etcd's 503.
TEST_F(GrpcProxyTest, ClientPortAnswersHttpBesideGrpc) {
  // As an etcd member does (its binary holds the proxy's package): a
  // series of the proxy's name, which the proxy's own must replace.
  member_.metrics()
      ->NewGauge("etcd_grpc_proxy_cache_hits_total", "the member's")
      ->With({})
      ->Set(7);
  StartProxy();
  pb::RangeResponse got;
  ASSERT_TRUE(Get(kv_.get(), "k", "", &got).ok());  // gRPC, same port
  net::HttpClient http("127.0.0.1", static_cast<uint16_t>(proxy_->port()));

  auto health = http.Request("GET", "/health");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"health":"true"})");
  EXPECT_EQ(health->headers.Get("Content-Type"), "text/plain; charset=utf-8");

  auto m = http.Request("GET", "/metrics");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->headers.Get("Content-Type"), "text/plain; version=0.0.4");
  // The member's series, then the proxy's (the Range above was
  // linearizable: no cache miss, one forwarded call).
  EXPECT_NE(m->body.find("\netcd_server_has_leader 1\n"), std::string::npos)
      << m->body.substr(0, 2000);
  EXPECT_NE(m->body.find("\netcd_grpc_proxy_cache_misses_total 0\n"),
            std::string::npos);
  EXPECT_NE(m->body.find("\netcd_grpc_proxy_cache_hits_total 0\n"),
            std::string::npos);
  EXPECT_EQ(m->body.find("etcd_grpc_proxy_cache_hits_total 7"),
            std::string::npos);
  EXPECT_EQ(m->body.find("the member's"), std::string::npos);
  EXPECT_NE(m->body.find("\nkplane_grpc_proxy_forwarded_calls_total "),
            std::string::npos);

  auto own = http.Request("GET", "/proxy/metrics");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->status, 200);
  EXPECT_EQ(own->body.find("etcd_server_has_leader"), std::string::npos);
  EXPECT_NE(own->body.find("etcd_grpc_proxy_cache_keys_total"),
            std::string::npos);
  // The listener's own series: this very connection, server="client".
  EXPECT_NE(own->body.find(
                "kplane_http_connections_accepted_total{server=\"client\"}"),
            std::string::npos)
      << own->body;

  auto none = http.Request("GET", "/v3/kv/range");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->status, 404);

  member_.Stop();
  auto down = http.Request("GET", "/metrics");
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_EQ(down->status, 500);
  EXPECT_EQ(down->body, "Internal server error\n");
  auto sick = http.Request("GET", "/health");
  ASSERT_TRUE(sick.ok()) << sick.status();
  EXPECT_EQ(sick->status, 503);
  EXPECT_EQ(sick->body, "{\"health\":\"false\"}\n");
  EXPECT_EQ(sick->headers.Get("X-Content-Type-Options"), "nosniff");
  EXPECT_FALSE(sick->headers.Get("X-Kplane-Health-Reason").empty());
}

// The client port's connection cap counts gRPC connections too: with a
// cap of one, an open gRPC channel leaves no room for an HTTP client.
TEST_F(GrpcProxyTest, ClientPortCountsGrpcAgainstItsConnectionCap) {
  GrpcProxyOptions o;
  o.max_connections = 1;
  StartProxy(o);
  ASSERT_TRUE(Put(kv_.get(), "k", "v").ok());  // the channel stays open
  net::HttpClient http("127.0.0.1", static_cast<uint16_t>(proxy_->port()));
  auto r = http.Request("GET", "/health");
  // Refused: the canned 503, or a reset if the close came first.
  EXPECT_FALSE(r.ok() && r->status == 200);
  if (r.ok()) {
    EXPECT_EQ(r->status, 503);
  }
  EXPECT_NE(proxy_->metrics()->Render().find(
                "kplane_http_connections_rejected_total{server=\"client\"} 1"),
            std::string::npos);
}

// The proxy's families replace the member's of the same names: an etcd
// member serves etcd's proxy series too (one binary), always 0.
TEST(ProxyOwnedMetricLinesTest, SplitsTheProxysFamiliesFromTheOthers) {
  const std::string member =
      "# HELP etcd_grpc_proxy_cache_hits_total Total number of cache hits\n"
      "# TYPE etcd_grpc_proxy_cache_hits_total gauge\n"
      "etcd_grpc_proxy_cache_hits_total 0\n"
      "# HELP etcd_server_has_leader Whether or not a leader exists.\n"
      "# TYPE etcd_server_has_leader gauge\n"
      "etcd_server_has_leader 1\n"
      "kplane_grpc_proxy_watchers{a=\"b\"} 3\n"
      "# a comment\n"
      "etcd_grpc_proxy_x_bucket{le=\"1\"} 2";
  EXPECT_EQ(ProxyOwnedMetricLines(member, false),
            "# HELP etcd_server_has_leader Whether or not a leader exists.\n"
            "# TYPE etcd_server_has_leader gauge\n"
            "etcd_server_has_leader 1\n"
            "# a comment\n");
  EXPECT_EQ(ProxyOwnedMetricLines(member, true),
            "# HELP etcd_grpc_proxy_cache_hits_total Total number of cache "
            "hits\n"
            "# TYPE etcd_grpc_proxy_cache_hits_total gauge\n"
            "etcd_grpc_proxy_cache_hits_total 0\n"
            "kplane_grpc_proxy_watchers{a=\"b\"} 3\n"
            "etcd_grpc_proxy_x_bucket{le=\"1\"} 2\n");
}

// Serving TLS: the client port's TLS carries gRPC (ALPN h2) and HTTP/1.1
// alike; --listen-cipher-suites restricts TLS 1.2 (an unknown name is
// refused at start); a trusted CA file makes client certificates required,
// as etcd's TLSInfo does.
TEST_F(GrpcProxyTest, ServesGrpcAndHttpOverTls) {
  testing::TempDir dir("kplane-proxytls-");
  auto pki = WriteTestPki(dir.path());  // ECDSA P-256 keys (net/pki.h)
  ASSERT_TRUE(pki.ok()) << pki.status();
  GrpcProxyOptions o;
  o.endpoints = {member_.address()};
  o.listen_addr = "127.0.0.1:0";
  o.cert_file = pki->server_cert_file;
  o.key_file = pki->server_key_file;
  o.cipher_suites = {"TLS_BOGUS"};
  auto refused = GrpcProxy::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("TLS_BOGUS"), std::string::npos)
      << refused.status();
  o.cipher_suites = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"};
  auto p = GrpcProxy::Start(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string at = "127.0.0.1:" + std::to_string((*p)->port());

  std::ifstream ca_in(pki->ca_file);
  std::stringstream ca;
  ca << ca_in.rdbuf();
  grpc::SslCredentialsOptions so;
  so.pem_root_certs = ca.str();
  auto kv = pb::KV::NewStub(grpc::CreateChannel(at, grpc::SslCredentials(so)));
  EXPECT_TRUE(Put(kv.get(), "k", "over tls").ok());

  // `suite`: OpenSSL's name of the one TLS 1.2 suite the client offers.
  auto health_over = [&](const std::string& suite, bool with_cert) {
    net::TlsClientConfig cc{.ca_file = pki->ca_file, .alpn = {"http/1.1"}};
    if (with_cert) {
      cc.cert_file = pki->client_cert_file;
      cc.key_file = pki->client_key_file;
    }
    auto tls = net::TlsContext::NewClient(cc);
    EXPECT_TRUE(tls.ok()) << tls.status();
    if (!suite.empty()) {
      SSL_CTX_set_max_proto_version((*tls)->native(), TLS1_2_VERSION);
      SSL_CTX_set_cipher_list((*tls)->native(), suite.c_str());
    }
    auto http = net::HttpClient::ForUrl("https://" + at, {.tls = *tls});
    EXPECT_TRUE(http.ok()) << http.status();
    return (*http)->Request("GET", "/health");
  };
  auto health = health_over("", false);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);
  auto inside = health_over("ECDHE-ECDSA-AES128-GCM-SHA256", false);
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(inside->status, 200);
  EXPECT_FALSE(health_over("ECDHE-ECDSA-AES256-GCM-SHA384", false).ok())
      << "a TLS 1.2 suite outside --listen-cipher-suites was negotiated";
  // Plaintext HTTP on the TLS port: kplane's HTTP server answers as Go's
  // net/http does (etcd's proxy just closes such a connection).
  net::HttpClient plain("127.0.0.1", static_cast<uint16_t>((*p)->port()));
  auto refused_plain = plain.Request("GET", "/health");
  ASSERT_TRUE(refused_plain.ok()) << refused_plain.status();
  EXPECT_EQ(refused_plain->status, 400);
  (*p)->Stop();

  o.cipher_suites.clear();
  o.trusted_ca_file = pki->ca_file;
  auto verifying = GrpcProxy::Start(o);
  ASSERT_TRUE(verifying.ok()) << verifying.status();
  at = "127.0.0.1:" + std::to_string((*verifying)->port());
  EXPECT_FALSE(health_over("", false).ok())
      << "a client without a certificate was served";
  auto with_cert = health_over("", true);
  ASSERT_TRUE(with_cert.ok()) << with_cert.status();
  EXPECT_EQ(with_cert->status, 200);
}

}  // namespace
}  // namespace kplane::storage
