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
//   up reads and lease renewals.
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

}  // namespace
}  // namespace kplane::storage
