// A watch stream whose store closes under it (a snapshot from the leader
// replaced the member's store, or the member stops) ends, on both
// protocols, with an error that makes etcd clients watch again from their
// last revision. The streams went silent for good before: no event, no
// cancel, no end (a kube-apiserver's watch cache on a member that caught
// up through a snapshot waited forever).
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <string>

#include "base/base64.h"
#include "net/http_client.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"
#include "storage/server/watch_requests.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

TEST(WatchStoreClosedTest, BothProtocolsEndTheirStreams) {
  TestMember m;
  ASSERT_TRUE(m.Start().ok());
  // gRPC: a watcher created, then the store closes.
  auto watch = pb::Watch::NewStub(m.Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(TestCallDeadline());
  auto rw = watch->Watch(&ctx);
  pb::WatchRequest create;
  create.mutable_create_request()->set_key("k");
  ASSERT_TRUE(rw->Write(create));
  pb::WatchResponse created;
  ASSERT_TRUE(rw->Read(&created));
  ASSERT_TRUE(created.created());
  // The gateway: the same.
  net::HttpClient c("127.0.0.1", m.port());
  auto json = c.OpenStream("POST", "/v3/watch",
                           {{"Content-Type", "application/json"}});
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_TRUE((*json)
                  ->Send(R"({"create_request":{"key":")" + Base64Encode("k") +
                         R"("}})")
                  .ok());
  std::string got;
  while (got.find("\"created\":true") == std::string::npos) {
    StatusOr<bool> more = (*json)->Read(&got, seconds(30));
    ASSERT_TRUE(more.ok() && *more) << got;
  }

  m.server()->mvcc()->Close();

  pb::WatchResponse r;
  EXPECT_FALSE(rw->Read(&r)) << r.DebugString();
  grpc::Status st = rw->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(st.error_message(), kWatchStoreClosed);
  // grpc-gateway's in-stream error, then the connection closes (the
  // response is cut, as the gateway's).
  for (;;) {
    StatusOr<bool> more = (*json)->Read(&got, seconds(30));
    if (!more.ok() || !*more) break;
  }
  EXPECT_NE(got.find("\"grpc_code\":14"), std::string::npos) << got;
  EXPECT_NE(got.find(std::string(kWatchStoreClosed)), std::string::npos)
      << got;
}

}  // namespace
}  // namespace kplane::storage
