// etcd's errors for reads at revisions a member cannot serve, over gRPC on
// an in-process member: a range (serializable or linearizable) or a
// read-only txn below the compaction revision answers ErrCompacted, one
// above the current revision ErrFutureRev, both OUT_OF_RANGE with etcd's
// rpctypes texts, as etcd 3.4's KV server answers them.
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

constexpr char kCompacted[] =
    "etcdserver: mvcc: required revision has been compacted";
constexpr char kFutureRev[] =
    "etcdserver: mvcc: required revision is a future revision";

class KvReadErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(member_.Start().ok());
    kv_ = pb::KV::NewStub(member_.Channel());
  }

  int64_t PutValue(const std::string& value) {
    grpc::ClientContext ctx;
    pb::PutRequest req;
    req.set_key("k");
    req.set_value(value);
    pb::PutResponse resp;
    grpc::Status st = kv_->Put(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.header().revision();
  }

  grpc::Status RangeAt(int64_t revision, bool serializable,
                       pb::RangeResponse* resp) {
    grpc::ClientContext ctx;
    pb::RangeRequest req;
    req.set_key("k");
    req.set_revision(revision);
    req.set_serializable(serializable);
    return kv_->Range(&ctx, req, resp);
  }

  grpc::Status TxnRangeAt(int64_t revision, pb::TxnResponse* resp) {
    grpc::ClientContext ctx;
    pb::TxnRequest req;
    pb::RangeRequest* r = req.add_success()->mutable_request_range();
    r->set_key("k");
    r->set_revision(revision);
    return kv_->Txn(&ctx, req, resp);
  }

  TestMember member_;
  std::unique_ptr<pb::KV::Stub> kv_;
};

TEST_F(KvReadErrorsTest, ReadsBelowTheCompactionOrAboveTheStoreAreRefused) {
  const int64_t first = PutValue("v1");
  const int64_t second = PutValue("v2");
  const int64_t current = PutValue("v3");
  ASSERT_EQ(second, first + 1);
  ASSERT_EQ(current, first + 2);
  {
    grpc::ClientContext ctx;
    pb::CompactionRequest req;
    req.set_revision(second);
    pb::CompactionResponse resp;
    grpc::Status st = kv_->Compact(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }

  for (bool serializable : {true, false}) {
    SCOPED_TRACE(serializable ? "serializable" : "linearizable");
    pb::RangeResponse resp;
    grpc::Status st = RangeAt(first, serializable, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_EQ(st.error_message(), kCompacted);

    st = RangeAt(current + 100, serializable, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
    EXPECT_EQ(st.error_message(), kFutureRev);

    // The compaction revision itself is still served.
    resp.Clear();
    st = RangeAt(second, serializable, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(resp.kvs_size(), 1);
    EXPECT_EQ(resp.kvs(0).value(), "v2");
    EXPECT_EQ(resp.header().revision(), current);
  }

  pb::TxnResponse txn;
  grpc::Status st = TxnRangeAt(first, &txn);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(st.error_message(), kCompacted);
  st = TxnRangeAt(current + 1, &txn);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(st.error_message(), kFutureRev);
}

}  // namespace
}  // namespace kplane::storage
