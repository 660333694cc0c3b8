// etcd's Lock and Election services over gRPC (v3lockpb.Lock,
// v3electionpb.Election) on one in-process member: the recipes' answers
// and etcd's error texts, and that a waiter ends -- and takes its key with
// it -- when its client cancels, its deadline passes or its lease goes.
// Waits are awaited on a watch of the election's or lock's prefix, never
// slept on.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>

#include "base/base64.h"
#include "net/http_client.h"
#include "net/http_test_util.h"
#include "schemas/grpc/election_services.grpc.pb.h"
#include "schemas/grpc/lock_services.grpc.pb.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;
namespace epb = v3electionpb;
namespace lpb = v3lockpb;

std::string Hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

template <typename Resp>
struct Result {
  grpc::Status status;
  Resp resp;
};

class ElectionLockGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start().ok());
    auto ch = member_.Channel();
    kv_ = pb::KV::NewStub(ch);
    lease_ = pb::Lease::NewStub(ch);
    watch_ = pb::Watch::NewStub(ch);
    lock_ = lpb::Lock::NewStub(ch);
    election_ = epb::Election::NewStub(ch);
  }

  int64_t Grant(int64_t ttl = 60) { return MustGrantLease(lease_.get(), ttl); }

  void Revoke(int64_t id) { MustRevokeLease(lease_.get(), id); }

  int64_t Count(const std::string& prefix) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::RangeRequest req;
    req.set_key(prefix);
    std::string end = prefix;
    end.back()++;
    req.set_range_end(end);
    req.set_count_only(true);
    pb::RangeResponse resp;
    EXPECT_TRUE(kv_->Range(&ctx, req, &resp).ok());
    return resp.count();
  }

  // Lock in the background; `ctx` may cancel it.
  std::future<Result<lpb::LockResponse>> LockAsync(
      const std::string& name, int64_t lease,
      std::shared_ptr<grpc::ClientContext> ctx) {
    return std::async(std::launch::async, [this, name, lease, ctx] {
      lpb::LockRequest req;
      req.set_name(name);
      req.set_lease(lease);
      Result<lpb::LockResponse> r;
      r.status = lock_->Lock(ctx.get(), req, &r.resp);
      return r;
    });
  }

  Result<lpb::LockResponse> Lock(const std::string& name, int64_t lease) {
    auto ctx = std::make_shared<grpc::ClientContext>();
    ctx->set_deadline(TestCallDeadline());
    return LockAsync(name, lease, ctx).get();
  }

  std::future<Result<epb::CampaignResponse>> CampaignAsync(
      const std::string& name, int64_t lease, const std::string& value,
      std::shared_ptr<grpc::ClientContext> ctx) {
    return std::async(std::launch::async, [this, name, lease, value, ctx] {
      epb::CampaignRequest req;
      req.set_name(name);
      req.set_lease(lease);
      req.set_value(value);
      Result<epb::CampaignResponse> r;
      r.status = election_->Campaign(ctx.get(), req, &r.resp);
      return r;
    });
  }

  static std::shared_ptr<grpc::ClientContext> Ctx(
      std::chrono::system_clock::time_point deadline = TestCallDeadline()) {
    auto ctx = std::make_shared<grpc::ClientContext>();
    ctx->set_deadline(deadline);
    return ctx;
  }

  TestMember member_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Lease::Stub> lease_;
  std::unique_ptr<pb::Watch::Stub> watch_;
  std::unique_ptr<lpb::Lock::Stub> lock_;
  std::unique_ptr<epb::Election::Stub> election_;
};

// A watch on every key under `prefix`, from now on.
class PrefixWatch {
 public:
  PrefixWatch(pb::Watch::Stub* stub, const std::string& prefix) {
    ctx_.set_deadline(TestCallDeadline());
    stream_ = stub->Watch(&ctx_);
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(prefix);
    std::string end = prefix;
    end.back()++;
    req.mutable_create_request()->set_range_end(end);
    EXPECT_TRUE(stream_->Write(req));
    pb::WatchResponse created;
    EXPECT_TRUE(stream_->Read(&created));
    EXPECT_TRUE(created.created());
  }
  ~PrefixWatch() {
    ctx_.TryCancel();
    (void)stream_->Finish();
  }

  // Reads until an event of `type` on `key`; false if the stream ends
  // first (its deadline: the event never came).
  bool Await(mvccpb::Event::EventType type, const std::string& key) {
    pb::WatchResponse resp;
    while (stream_->Read(&resp)) {
      for (const auto& ev : resp.events()) {
        if (ev.type() == type && ev.kv().key() == key) return true;
      }
    }
    return false;
  }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>>
      stream_;
};

TEST_F(ElectionLockGrpcTest, SecondLockerWaitsUntilTheFirstUnlocks) {
  int64_t a = Grant(), b = Grant();
  Result<lpb::LockResponse> first = Lock("l", a);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  EXPECT_EQ(first.resp.key(), "l/" + Hex(a));

  PrefixWatch w(watch_.get(), "l/");
  auto second = LockAsync("l", b, Ctx());
  ASSERT_TRUE(w.Await(mvccpb::Event::PUT, "l/" + Hex(b)));
  // B's key is in the queue behind A's: it cannot hold the lock yet.
  EXPECT_NE(second.wait_for(std::chrono::seconds(0)),
            std::future_status::ready);

  grpc::ClientContext ctx;
  lpb::UnlockRequest unlock;
  unlock.set_key(first.resp.key());
  lpb::UnlockResponse unlocked;
  ASSERT_TRUE(lock_->Unlock(&ctx, unlock, &unlocked).ok());
  Result<lpb::LockResponse> got = second.get();
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.resp.key(), "l/" + Hex(b));
  EXPECT_GE(got.resp.header().revision(), unlocked.header().revision());

  // The same lease locking again gets its key back at once.
  Result<lpb::LockResponse> again = Lock("l", b);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.resp.key(), "l/" + Hex(b));
}

TEST_F(ElectionLockGrpcTest, LockOnAMissingLeaseFailsAsEtcd) {
  int64_t a = Grant();
  Revoke(a);
  Result<lpb::LockResponse> r = Lock("l", a);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(r.status.error_message(), "etcdserver: requested lease not found");
  EXPECT_EQ(Count("l/"), 0);
}

TEST_F(ElectionLockGrpcTest, DeadlineEndsTheWaitAndRemovesTheKey) {
  int64_t a = Grant(), b = Grant();
  ASSERT_TRUE(Lock("l", a).status.ok());
  PrefixWatch w(watch_.get(), "l/");
  auto second = LockAsync(
      "l", b,
      Ctx(std::chrono::system_clock::now() + std::chrono::milliseconds(300)));
  ASSERT_TRUE(w.Await(mvccpb::Event::PUT, "l/" + Hex(b)));
  EXPECT_EQ(second.get().status.error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server gave up too: the waiter's key is deleted (etcd's Mutex
  // unlocks after a failed wait), so it does not queue forever.
  EXPECT_TRUE(w.Await(mvccpb::Event::DELETE, "l/" + Hex(b)));
  EXPECT_EQ(Count("l/"), 1);
}

TEST_F(ElectionLockGrpcTest, RevokedLeaseEndsTheWait) {
  int64_t a = Grant(), b = Grant();
  ASSERT_TRUE(Lock("l", a).status.ok());
  PrefixWatch w(watch_.get(), "l/");
  auto second = LockAsync("l", b, Ctx());
  ASSERT_TRUE(w.Await(mvccpb::Event::PUT, "l/" + Hex(b)));
  Revoke(b);
  Result<lpb::LockResponse> r = second.get();
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(r.status.error_message(), "etcdserver: requested lease not found");
}

TEST_F(ElectionLockGrpcTest, JsonClientGoneEndsTheWait) {
  int64_t a = Grant(), b = Grant();
  ASSERT_TRUE(Lock("l", a).status.ok());
  PrefixWatch w(watch_.get(), "l/");
  {
    net::testing::RawConnection c(member_.port());
    std::string body =
        "{\"name\":\"bA==\",\"lease\":\"" + std::to_string(b) + "\"}";
    c.Send("POST /v3/lock/lock HTTP/1.1\r\nHost: x\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    ASSERT_TRUE(w.Await(mvccpb::Event::PUT, "l/" + Hex(b)));
  }  // the client hangs up
  EXPECT_TRUE(w.Await(mvccpb::Event::DELETE, "l/" + Hex(b)));
}

TEST_F(ElectionLockGrpcTest, CampaignObserveProclaimResign) {
  int64_t a = Grant(), b = Grant();
  {
    grpc::ClientContext ctx;
    epb::LeaderRequest req;
    req.set_name("e");
    epb::LeaderResponse resp;
    grpc::Status st = election_->Leader(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(st.error_message(), "election: no leader");
  }
  Result<epb::CampaignResponse> ca = CampaignAsync("e", a, "va", Ctx()).get();
  ASSERT_TRUE(ca.status.ok()) << ca.status.error_message();
  const epb::LeaderKey leader_a = ca.resp.leader();
  EXPECT_EQ(leader_a.name(), "e");
  EXPECT_EQ(leader_a.key(), "e/" + Hex(a));
  EXPECT_EQ(leader_a.rev(), ca.resp.header().revision());
  EXPECT_EQ(leader_a.lease(), a);

  grpc::ClientContext octx;
  octx.set_deadline(TestCallDeadline());
  epb::LeaderRequest oreq;
  oreq.set_name("e");
  auto observe = election_->Observe(&octx, oreq);
  epb::LeaderResponse seen;
  ASSERT_TRUE(observe->Read(&seen));
  EXPECT_EQ(seen.kv().value(), "va");

  PrefixWatch w(watch_.get(), "e/");
  auto cb = CampaignAsync("e", b, "vb", Ctx());
  ASSERT_TRUE(w.Await(mvccpb::Event::PUT, "e/" + Hex(b)));

  {
    grpc::ClientContext ctx;
    epb::ProclaimRequest req;
    *req.mutable_leader() = leader_a;
    req.set_value("va2");
    epb::ProclaimResponse resp;
    ASSERT_TRUE(election_->Proclaim(&ctx, req, &resp).ok());
  }
  ASSERT_TRUE(observe->Read(&seen));
  EXPECT_EQ(seen.kv().value(), "va2");
  EXPECT_EQ(seen.header().revision(), seen.kv().mod_revision());
  EXPECT_NE(cb.wait_for(std::chrono::seconds(0)), std::future_status::ready);

  {
    grpc::ClientContext ctx;
    epb::ResignRequest req;
    *req.mutable_leader() = leader_a;
    epb::ResignResponse resp;
    ASSERT_TRUE(election_->Resign(&ctx, req, &resp).ok());
  }
  Result<epb::CampaignResponse> got = cb.get();
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.resp.leader().key(), "e/" + Hex(b));
  ASSERT_TRUE(observe->Read(&seen));
  EXPECT_EQ(seen.kv().key(), "e/" + Hex(b));
  EXPECT_EQ(seen.kv().value(), "vb");

  // A's leadership is over: its LeaderKey can no longer proclaim.
  {
    grpc::ClientContext ctx;
    epb::ProclaimRequest req;
    *req.mutable_leader() = leader_a;
    req.set_value("stale");
    epb::ProclaimResponse resp;
    grpc::Status st = election_->Proclaim(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(st.error_message(), "election: not leader");
  }
  {
    grpc::ClientContext ctx;
    epb::ResignRequest req;
    epb::ResignResponse resp;
    grpc::Status st = election_->Resign(&ctx, req, &resp);
    EXPECT_EQ(st.error_message(), "\"leader\" field must be provided");
  }
  {
    grpc::ClientContext ctx;
    epb::LeaderRequest req;
    req.set_name("e");
    epb::LeaderResponse resp;
    ASSERT_TRUE(election_->Leader(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.kv().value(), "vb");
  }
  octx.TryCancel();
  EXPECT_FALSE(observe->Read(&seen));
}

TEST_F(ElectionLockGrpcTest, CancelledCampaignResigns) {
  int64_t a = Grant(), b = Grant();
  ASSERT_TRUE(CampaignAsync("e", a, "va", Ctx()).get().status.ok());
  PrefixWatch w(watch_.get(), "e/");
  auto ctx = Ctx();
  auto cb = CampaignAsync("e", b, "vb", ctx);
  ASSERT_TRUE(w.Await(mvccpb::Event::PUT, "e/" + Hex(b)));
  ctx->TryCancel();
  EXPECT_EQ(cb.get().status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(w.Await(mvccpb::Event::DELETE, "e/" + Hex(b)));
}

TEST_F(ElectionLockGrpcTest, ObserveWaitsForTheFirstCandidate) {
  grpc::ClientContext octx;
  octx.set_deadline(TestCallDeadline());
  epb::LeaderRequest oreq;
  oreq.set_name("f");
  auto observe = election_->Observe(&octx, oreq);
  // No leader yet: nothing to read until a candidate puts its key. The
  // campaign runs until the observer's answer arrives, so its put may come
  // before or after the observer's first read; either way it is seen.
  int64_t a = Grant();
  Result<epb::CampaignResponse> ca =
      CampaignAsync("f", a, "first", Ctx()).get();
  ASSERT_TRUE(ca.status.ok()) << ca.status.error_message();
  epb::LeaderResponse seen;
  ASSERT_TRUE(observe->Read(&seen));
  EXPECT_EQ(seen.kv().key(), "f/" + Hex(a));
  EXPECT_EQ(seen.kv().value(), "first");
  octx.TryCancel();
}

TEST_F(ElectionLockGrpcTest, NoLeaseGetsASessionLease) {
  // As etcd's server (concurrency.NewSession): a 60 s lease, granted for
  // the request and not renewed; the key is named after it.
  Result<lpb::LockResponse> r = Lock("nl", 0);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.resp.key().rfind("nl/", 0), 0u) << r.resp.key();
  const int64_t lease =
      static_cast<int64_t>(std::stoull(r.resp.key().substr(3), nullptr, 16));
  grpc::ClientContext ctx;
  pb::LeaseTimeToLiveRequest q;
  q.set_id(lease);
  pb::LeaseTimeToLiveResponse ttl;
  ASSERT_TRUE(lease_->LeaseTimeToLive(&ctx, q, &ttl).ok());
  EXPECT_EQ(ttl.grantedttl(), 60);
}

// With auth enabled, the gRPC front runs Lock as the caller of its
// metadata token, and a token sent on a call that needs no permission
// (lease grant, compaction) must still be valid, as etcd's.
TEST_F(ElectionLockGrpcTest, AuthRunsLockAsTheCallerAndChecksEveryToken) {
  net::HttpClient http("127.0.0.1", member_.port());
  auto post = [&](const std::string& path, const std::string& body) {
    auto r = http.Request("POST", path, {{"Content-Type", "application/json"}},
                          body);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return std::string();
    EXPECT_EQ(r->status, 200) << path << " " << r->body;
    return r->body;
  };
  auto b64 = [](const std::string& v) { return Base64Encode(v); };
  post("/v3/auth/user/add", R"({"name":"root","password":"r"})");
  post("/v3/auth/user/grant", R"({"user":"root","role":"root"})");
  post("/v3/auth/role/add", R"({"name":"app"})");
  post("/v3/auth/role/grant",
       R"({"name":"app","perm":{"permType":"READWRITE","key":")" +
           b64("/app/") + R"(","range_end":")" + b64("/app0") + R"("}})");
  post("/v3/auth/user/add", R"({"name":"alice","password":"a"})");
  post("/v3/auth/user/grant", R"({"user":"alice","role":"app"})");
  post("/v3/auth/enable", "{}");
  std::string login =
      post("/v3/auth/authenticate", R"({"name":"alice","password":"a"})");
  size_t at = login.find(R"("token":")");
  ASSERT_NE(at, std::string::npos) << login;
  const std::string token =
      login.substr(at + 9, login.find('"', at + 9) - at - 9);

  auto lock = [&](const std::string& name, const std::string& tok) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    if (!tok.empty()) ctx.AddMetadata("token", tok);
    lpb::LockRequest req;
    req.set_name(name);
    lpb::LockResponse resp;
    return lock_->Lock(&ctx, req, &resp);
  };
  grpc::Status held = lock("/app/l", token);
  EXPECT_TRUE(held.ok()) << held.error_message();
  grpc::Status denied = lock("/other/l", token);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(denied.error_message(), "etcdserver: permission denied");
  grpc::Status anon = lock("/app/l2", "");
  EXPECT_EQ(anon.error_message(), "etcdserver: user name is empty");

  grpc::ClientContext gctx;
  gctx.set_deadline(TestCallDeadline());
  gctx.AddMetadata("token", "bogus.1");
  pb::LeaseGrantRequest greq;
  greq.set_ttl(60);
  pb::LeaseGrantResponse gresp;
  grpc::Status grant = lease_->LeaseGrant(&gctx, greq, &gresp);
  EXPECT_EQ(grant.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(grant.error_message(), "etcdserver: invalid auth token");
  grpc::ClientContext cctx;
  cctx.set_deadline(TestCallDeadline());
  cctx.AddMetadata("token", "bogus.1");
  pb::CompactionRequest creq;
  creq.set_revision(1);
  pb::CompactionResponse cresp;
  grpc::Status compact = kv_->Compact(&cctx, creq, &cresp);
  EXPECT_EQ(compact.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_GT(Grant(), 0);  // no token: served
}

}  // namespace
}  // namespace kplane::storage
