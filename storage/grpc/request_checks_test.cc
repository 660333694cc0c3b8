// Requests an etcd client may send, answered where they enter as etcd
// answers them, over gRPC on an in-process member:
// - a txn is checked as etcd's checkTxnRequest checks it: one the store
//   would refuse (too many ops, an empty key, a duplicate key, or txns
//   nested deeper than every member can decode) is answered
//   InvalidArgument before it costs a raft entry, and the member keeps
//   serving;
// - a LeaseKeepAlive stream whose client closes its side ends OK after
//   its answers, as etcd's leaseKeepAlive returns at io.EOF;
// - password hashing (Authenticate, which anyone may send) does not hold
//   up reads and lease renewals;
// - a learner refuses client calls as etcd 3.4's (StoreServer::
//   RefuseIfLearner), over gRPC and the JSON gateway, until promoted.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net/http_client.h"
#include "schemas/grpc/election_services.grpc.pb.h"
#include "schemas/grpc/lock_services.grpc.pb.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/mvcc/txn_rules.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

// `depth` txns, each the only success op of the one above; the innermost
// puts `key` (or, with `read_only`, reads it).
pb::TxnRequest Nested(int depth, const std::string& key,
                      bool read_only = false) {
  pb::TxnRequest top;
  pb::TxnRequest* t = &top;
  for (int i = 1; i < depth; ++i) {
    t = t->add_success()->mutable_request_txn();
  }
  if (read_only) {
    t->add_success()->mutable_request_range()->set_key(key);
  } else {
    pb::PutRequest* put = t->add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value("v");
  }
  return top;
}

class RequestChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start().ok());
    kv_ = pb::KV::NewStub(member_.Channel());
    lease_ = pb::Lease::NewStub(member_.Channel());
  }

  grpc::Status Txn(const pb::TxnRequest& req, pb::TxnResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    return kv_->Txn(&ctx, req, resp);
  }

  // A lease of `ttl` seconds, over gRPC; its ID.
  int64_t GrantLease(int64_t ttl) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::LeaseGrantRequest req;
    req.set_ttl(ttl);
    pb::LeaseGrantResponse granted;
    grpc::Status st = lease_->LeaseGrant(&ctx, req, &granted);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return granted.id();
  }

  // The raft index the member applied: a refused txn must not move it.
  uint64_t LogIndex() { return member_.server()->applied_index(); }

  TestMember member_;
  std::unique_ptr<pb::KV::Stub> kv_;
  std::unique_ptr<pb::Lease::Stub> lease_;
};

// 50 nested txns decode as a gRPC request (protobuf's limit is 100 nested
// messages), but not once wrapped in the proposal: applied, such an entry
// stopped the member (and a follower refuses every append carrying it).
TEST_F(RequestChecksTest, TxnsNestedDeeperThanMembersDecodeAreRefused) {
  member_.MustPut("before", "v");
  const uint64_t index = LogIndex();
  for (int depth : {mvcc::kMaxTxnNesting + 1, 50}) {
    for (bool read_only : {false, true}) {
      pb::TxnResponse resp;
      grpc::Status st = Txn(Nested(depth, "deep", read_only), &resp);
      EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << depth << " " << st.error_message();
      EXPECT_EQ(st.error_message(),
                "etcdserver: txn request nests more than 32 txns");
    }
  }
  EXPECT_EQ(LogIndex(), index);
  member_.MustPut("after", "v");

  // The deepest allowed is proposed, applied and answered, nested as sent.
  pb::TxnResponse resp;
  grpc::Status st = Txn(Nested(mvcc::kMaxTxnNesting, "deep"), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const pb::TxnResponse* r = &resp;
  for (int i = 1; i < mvcc::kMaxTxnNesting; ++i) {
    ASSERT_EQ(r->responses_size(), 1);
    r = &r->responses(0).response_txn();
  }
  ASSERT_EQ(r->responses_size(), 1);
  EXPECT_TRUE(r->responses(0).has_response_put());
  member_.MustPut("last", "v");
}

// etcd's other txn checks, and its put checks, answer before the proposal
// too, with etcd's texts.
TEST_F(RequestChecksTest, InvalidTxnsAndPutsCostNoRaftEntry) {
  member_.MustPut("k", "v");
  const uint64_t index = LogIndex();
  pb::TxnRequest too_many;
  for (int i = 0; i < 129; ++i) {
    pb::PutRequest* p = too_many.add_success()->mutable_request_put();
    p->set_key("k" + std::to_string(i));
  }
  pb::TxnRequest duplicate;
  duplicate.add_success()->mutable_request_put()->set_key("k");
  duplicate.add_success()->mutable_request_put()->set_key("k");
  pb::TxnRequest empty_key;
  empty_key.add_success()->mutable_request_put();
  const std::pair<const pb::TxnRequest*, std::string> cases[] = {
      {&too_many, "etcdserver: too many operations in txn request"},
      {&duplicate, "etcdserver: duplicate key given in txn request"},
      {&empty_key, "etcdserver: key is not provided"},
  };
  for (const auto& [req, text] : cases) {
    pb::TxnResponse resp;
    grpc::Status st = Txn(*req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << text;
    EXPECT_EQ(st.error_message(), text);
  }
  // And etcd's checkPutRequest.
  pb::PutRequest value_and_ignore;
  value_and_ignore.set_key("k");
  value_and_ignore.set_value("v");
  value_and_ignore.set_ignore_value(true);
  pb::PutRequest lease_and_ignore;
  lease_and_ignore.set_key("k");
  lease_and_ignore.set_lease(7);
  lease_and_ignore.set_ignore_lease(true);
  const std::pair<const pb::PutRequest*, std::string> puts[] = {
      {&value_and_ignore, "etcdserver: value is provided"},
      {&lease_and_ignore, "etcdserver: lease is provided"},
  };
  for (const auto& [req, text] : puts) {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    pb::PutResponse resp;
    grpc::Status st = kv_->Put(&ctx, *req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << text;
    EXPECT_EQ(st.error_message(), text);
  }
  EXPECT_EQ(LogIndex(), index);
}

TEST_F(RequestChecksTest, KeepAliveStreamEndsWhenTheClientClosesItsSide) {
  const int64_t id = GrantLease(60);
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());  // a stream left open fails here
  auto stream = lease_->LeaseKeepAlive(&ctx);
  pb::LeaseKeepAliveRequest req;
  req.set_id(id);
  // Back to back, then the end of the requests: every answer comes first.
  constexpr int kRenewals = 5;
  for (int i = 0; i < kRenewals; ++i) ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->WritesDone());
  int answers = 0;
  pb::LeaseKeepAliveResponse resp;
  while (stream->Read(&resp)) {
    EXPECT_EQ(resp.id(), id);
    EXPECT_EQ(resp.ttl(), 60);
    ++answers;
  }
  grpc::Status st = stream->Finish();
  EXPECT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
  EXPECT_EQ(answers, kRenewals);
}

// The member hashes passwords on a thread of its own: with that thread
// held (a second task queued behind the first, as a flood of Authenticate
// requests would leave it), a linearizable range and a lease renewal are
// still answered, and so is an auth request that hashes nothing. (On the
// two read workers, two such tasks stopped both.)
TEST_F(RequestChecksTest, BusyPasswordThreadHoldsUpNoReadOrRenewal) {
  member_.MustPut("k", "v");
  // Shared with the tasks, which may run after this test's frame is gone
  // (the second one runs once the first is let go).
  struct Hold {
    std::promise<void> release;
    std::shared_future<void> released{release.get_future().share()};
    std::promise<void> started;
    std::atomic<bool> first{true};
  };
  auto hold = std::make_shared<Hold>();
  struct Releaser {  // whatever happens below, the thread is let go
    std::shared_ptr<Hold> h;
    ~Releaser() { h->release.set_value(); }
  } releaser{hold};
  for (int i = 0; i < 2; ++i) {
    member_.server()->SubmitPasswordWork([hold] {
      if (hold->first.exchange(false)) hold->started.set_value();
      hold->released.wait();
    });
  }
  hold->started.get_future().wait();

  pb::RangeResponse range;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    pb::RangeRequest req;
    req.set_key("k");
    grpc::Status st = kv_->Range(&ctx, req, &range);
    ASSERT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
  }
  EXPECT_EQ(range.kvs_size(), 1);

  // An auth request that hashes no password does not wait for the thread.
  {
    auto auth = pb::Auth::NewStub(member_.Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    pb::AuthRoleAddRequest req;
    req.set_name("reader");
    pb::AuthRoleAddResponse resp;
    grpc::Status st = auth->RoleAdd(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
  }

  const int64_t id = GrantLease(60);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = lease_->LeaseKeepAlive(&ctx);
  pb::LeaseKeepAliveRequest renew;
  renew.set_id(id);
  ASSERT_TRUE(stream->Write(renew));
  pb::LeaseKeepAliveResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.ttl(), 60);
  stream->WritesDone();
  while (stream->Read(&resp)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

// ---- a learner -------------------------------------------------------------

constexpr char kLearnerRefusal[] = "etcdserver: rpc not supported for learner";

// Runs `call(ctx)` with a test deadline.
template <typename F>
grpc::Status Call(F call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  return call(&ctx);
}

void ExpectRefused(const grpc::Status& st, const std::string& what) {
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE)
      << what << ": " << st.error_message();
  EXPECT_EQ(st.error_message(), kLearnerRefusal) << what;
}

// A JSON gateway call to `m`.
net::HttpResponse Json(const TestMember& m, const std::string& path,
                       const std::string& body) {
  net::HttpClient c("127.0.0.1", m.port());
  auto r = c.Request("POST", path, {{"Content-Type", "application/json"}}, body,
                     Clock::Real()->Now() + seconds(30));
  EXPECT_TRUE(r.ok()) << path << ": " << r.status();
  return r.ok() ? *r : net::HttpResponse{};
}

// etcd 3.4's v3rpc interceptors, as etcd 3.4.23 answers on a learner of a
// two-member cluster: every unary call but Status and a serializable Range
// is refused with Unavailable "etcdserver: rpc not supported for learner",
// on every service (KV, Lease, Cluster, Maintenance, Auth, election,
// lock), before auth; every stream (Watch, LeaseKeepAlive, Snapshot,
// Observe) is refused at its start. The JSON gateway answers 503 with
// etcd's error body (a stream's in grpc-gateway's stream form); a body
// that does not decode is still a 400, and /health is not gRPC. Promoted,
// the member serves everything.
TEST(LearnerTest, ALearnerRefusesClientCallsAsEtcdsUntilPromoted) {
  TestMember voter;
  ASSERT_TRUE(voter.Start({.peers = true}).ok());
  ASSERT_GT(voter.MustPut("k", "v"), 0);
  TestMember learner;
  Status started = learner.StartLearnerOf(voter);
  ASSERT_TRUE(started.ok()) << started;
  const uint64_t id = learner.server()->member_id();
  auto kv = pb::KV::NewStub(learner.Channel());
  auto lease = pb::Lease::NewStub(learner.Channel());
  auto cluster = pb::Cluster::NewStub(learner.Channel());
  auto maintenance = pb::Maintenance::NewStub(learner.Channel());
  auto auth = pb::Auth::NewStub(learner.Channel());
  auto election = v3electionpb::Election::NewStub(learner.Channel());
  auto lock = v3lockpb::Lock::NewStub(learner.Channel());
  auto watch = pb::Watch::NewStub(learner.Channel());

  // What a learner serves: a serializable range (once it has the key) and
  // its status.
  pb::RangeRequest serializable;
  serializable.set_key("k");
  serializable.set_serializable(true);
  pb::RangeResponse got;
  const TimePoint deadline = Clock::Real()->Now() + seconds(10);
  for (;;) {
    grpc::Status st =
        Call([&](auto* c) { return kv->Range(c, serializable, &got); });
    ASSERT_TRUE(st.ok()) << st.error_message();
    if (got.kvs_size() == 1 || Clock::Real()->Now() > deadline) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(got.kvs_size(), 1);
  EXPECT_EQ(got.kvs(0).value(), "v");
  pb::StatusResponse status;
  ASSERT_TRUE(Call([&](auto* c) {
                return maintenance->Status(c, pb::StatusRequest(), &status);
              }).ok());
  EXPECT_TRUE(status.islearner());

  // Everything else, unary.
  pb::PutRequest put;
  put.set_key("k");
  put.set_value("w");
  pb::PutResponse put_resp;
  ExpectRefused(Call([&](auto* c) { return kv->Put(c, put, &put_resp); }),
                "Put");
  pb::RangeRequest linearizable;
  linearizable.set_key("k");
  ExpectRefused(Call([&](auto* c) { return kv->Range(c, linearizable, &got); }),
                "linearizable Range");
  pb::TxnResponse txn;
  ExpectRefused(
      Call([&](auto* c) { return kv->Txn(c, pb::TxnRequest(), &txn); }), "Txn");
  pb::DeleteRangeRequest del;
  del.set_key("k");
  pb::DeleteRangeResponse deleted;
  ExpectRefused(
      Call([&](auto* c) { return kv->DeleteRange(c, del, &deleted); }),
      "DeleteRange");
  pb::CompactionRequest compact;
  compact.set_revision(1);
  pb::CompactionResponse compacted;
  ExpectRefused(
      Call([&](auto* c) { return kv->Compact(c, compact, &compacted); }),
      "Compact");
  pb::LeaseGrantRequest grant;
  grant.set_ttl(60);
  pb::LeaseGrantResponse granted;
  ExpectRefused(
      Call([&](auto* c) { return lease->LeaseGrant(c, grant, &granted); }),
      "LeaseGrant");
  pb::LeaseLeasesResponse leases;
  ExpectRefused(Call([&](auto* c) {
                  return lease->LeaseLeases(c, pb::LeaseLeasesRequest(),
                                            &leases);
                }),
                "LeaseLeases");
  pb::MemberListResponse members;
  ExpectRefused(Call([&](auto* c) {
                  return cluster->MemberList(c, pb::MemberListRequest(),
                                             &members);
                }),
                "MemberList");
  // Promoting itself through its own endpoint too (etcdctl with several
  // endpoints goes on to another).
  pb::MemberPromoteRequest promote;
  promote.set_id(id);
  pb::MemberPromoteResponse promoted;
  ExpectRefused(Call([&](auto* c) {
                  return cluster->MemberPromote(c, promote, &promoted);
                }),
                "MemberPromote");
  pb::AlarmRequest alarm;
  alarm.set_action(pb::AlarmRequest::GET);
  pb::AlarmResponse alarms;
  ExpectRefused(
      Call([&](auto* c) { return maintenance->Alarm(c, alarm, &alarms); }),
      "Alarm");
  pb::HashKVResponse hash;
  ExpectRefused(Call([&](auto* c) {
                  return maintenance->HashKV(c, pb::HashKVRequest(), &hash);
                }),
                "HashKV");
  pb::AuthenticateRequest authenticate;
  authenticate.set_name("root");
  authenticate.set_password("x");
  pb::AuthenticateResponse token;
  ExpectRefused(Call([&](auto* c) {
                  return auth->Authenticate(c, authenticate, &token);
                }),
                "Authenticate");
  v3electionpb::LeaderRequest leader_req;
  leader_req.set_name("e");
  v3electionpb::LeaderResponse leader;
  ExpectRefused(
      Call([&](auto* c) { return election->Leader(c, leader_req, &leader); }),
      "election Leader");
  v3lockpb::LockRequest lock_req;
  lock_req.set_name("l");
  v3lockpb::LockResponse locked;
  ExpectRefused(Call([&](auto* c) { return lock->Lock(c, lock_req, &locked); }),
                "Lock");

  // Streams: refused at their start.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    auto stream = watch->Watch(&ctx);
    pb::WatchRequest create;
    create.mutable_create_request()->set_key("k");
    stream->Write(create);
    pb::WatchResponse w;
    EXPECT_FALSE(stream->Read(&w));
    ExpectRefused(stream->Finish(), "Watch");
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    auto stream = lease->LeaseKeepAlive(&ctx);
    pb::LeaseKeepAliveRequest renew;
    renew.set_id(1);
    stream->Write(renew);
    pb::LeaseKeepAliveResponse k;
    EXPECT_FALSE(stream->Read(&k));
    ExpectRefused(stream->Finish(), "LeaseKeepAlive");
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    auto reader = maintenance->Snapshot(&ctx, pb::SnapshotRequest());
    pb::SnapshotResponse blob;
    EXPECT_FALSE(reader->Read(&blob));
    ExpectRefused(reader->Finish(), "Snapshot");
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    auto reader = election->Observe(&ctx, leader_req);
    EXPECT_FALSE(reader->Read(&leader));
    ExpectRefused(reader->Finish(), "Observe");
  }

  // The JSON gateway, as etcd 3.4.23's answers it.
  const std::string unary_error =
      R"({"error":"etcdserver: rpc not supported for learner",)"
      R"("message":"etcdserver: rpc not supported for learner","code":14})";
  const std::string stream_error =
      R"({"error":{"grpc_code":14,"http_code":503,)"
      R"("message":"etcdserver: rpc not supported for learner",)"
      R"("http_status":"Service Unavailable"}})"
      "\n";
  for (const auto& [path, body] :
       std::vector<std::pair<std::string, std::string>>{
           {"/v3/kv/put", R"({"key":"aw==","value":"dw=="})"},
           {"/v3/kv/range", R"({"key":"aw=="})"},
           {"/v3/lease/grant", R"({"TTL":5})"},
           {"/v3/cluster/member/list", "{}"},
           {"/v3/maintenance/alarm", "{}"},
           {"/v3/auth/authenticate", R"({"name":"root","password":"x"})"},
           {"/v3/lock/lock", R"({"name":"bA=="})"},
           {"/v3/election/leader", R"({"name":"ZQ=="})"}}) {
    net::HttpResponse r = Json(learner, path, body);
    EXPECT_EQ(r.status, 503) << path << ": " << r.body;
    EXPECT_EQ(r.body, unary_error) << path;
  }
  for (const auto& [path, body] :
       std::vector<std::pair<std::string, std::string>>{
           {"/v3/watch", R"({"create_request":{"key":"aw=="}})"},
           {"/v3/lease/keepalive", R"({"ID":1})"},
           {"/v3/election/observe", R"({"name":"ZQ=="})"},
           {"/v3/maintenance/snapshot", "{}"}}) {
    net::HttpResponse r = Json(learner, path, body);
    EXPECT_EQ(r.status, 503) << path << ": " << r.body;
    EXPECT_EQ(r.body, stream_error) << path;
  }
  net::HttpResponse r =
      Json(learner, "/v3/kv/range", R"({"key":"aw==","serializable":true})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("value":"dg==")"), std::string::npos) << r.body;
  r = Json(learner, "/v3/maintenance/status", "{}");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("isLearner":true)"), std::string::npos) << r.body;
  // The body is decoded before the call is made.
  r = Json(learner, "/v3/kv/put", "{bad");
  EXPECT_EQ(r.status, 400) << r.body;
  {
    net::HttpClient c("127.0.0.1", learner.port());
    auto health = c.Request("GET", "/health");
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(health->status, 200) << health->body;
  }

  // Promoted (through the voter, once the leader saw it catch up), it
  // serves everything as soon as it applied its promotion.
  StatusOr<pb::MemberPromoteResponse> done =
      voter.server()->MemberPromote(promote);
  while (!done.ok() && done.status().Is(StatusCode::kFailedPrecondition) &&
         Clock::Real()->Now() < deadline + seconds(10)) {
    voter.MustPut("tick", "1");
    done = voter.server()->MemberPromote(promote);
  }
  ASSERT_TRUE(done.ok()) << done.status();
  grpc::Status put_st;
  do {
    put_st = Call([&](auto* c) { return kv->Put(c, put, &put_resp); });
  } while (!put_st.ok() && put_st.error_message() == kLearnerRefusal &&
           Clock::Real()->Now() < deadline + seconds(20));
  ASSERT_TRUE(put_st.ok()) << put_st.error_message();
  EXPECT_FALSE(learner.server()->is_learner());
  EXPECT_TRUE(
      Call([&](auto* c) { return kv->Range(c, linearizable, &got); }).ok());
  EXPECT_TRUE(Call([&](auto* c) {
                return cluster->MemberList(c, pb::MemberListRequest(),
                                           &members);
              }).ok());
  EXPECT_EQ(members.members_size(), 2);
  EXPECT_TRUE(Call([&](auto* c) {
                return lease->LeaseGrant(c, grant, &granted);
              }).ok());
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    auto stream = watch->Watch(&ctx);
    pb::WatchRequest create;
    create.mutable_create_request()->set_key("k");
    ASSERT_TRUE(stream->Write(create));
    pb::WatchResponse w;
    ASSERT_TRUE(stream->Read(&w));
    EXPECT_TRUE(w.created());
    ctx.TryCancel();
  }
  r = Json(learner, "/v3/kv/put", R"({"key":"aw==","value":"eA=="})");
  EXPECT_EQ(r.status, 200) << r.body;
  r = Json(learner, "/v3/cluster/member/list", "{}");
  EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace kplane::storage
