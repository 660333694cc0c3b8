// A simple token names the raft index of its Authenticate; a member that
// has not applied that index yet waits for it before looking the token up,
// as etcd does. Anyone can send a token naming an index far ahead: the
// wait must hold no thread, or one forged request stalls the JSON
// gateway's I/O thread (every other connection on it) for the whole wait.
// Both fronts of one member (JSON gateway and gRPC on one port).
// First, as in grpc_front.cc: base/thread_annotations.h must come before
// absl's (included by grpcpp), which defines the same macros only if unset.
// clang-format off
#include "storage/grpc/test_member.h"
// clang-format on
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "base/base64.h"
#include "net/http_client.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

TEST(TokenIndexWaitTest, AForgedTokenWaitsWithoutHoldingAThread) {
  TestMember m;
  // Long enough that a request stalled behind the wait cannot pass.
  ASSERT_TRUE(m.Start({.auth_token_index_wait = seconds(60)}).ok());
  auto auth = pb::Auth::NewStub(m.Channel());
  auto kv = pb::KV::NewStub(m.Channel());
  ASSERT_TRUE(AddRootUser(auth.get(), "rootpw").ok());
  {
    grpc::ClientContext ctx;
    pb::AuthEnableResponse resp;
    ASSERT_TRUE(auth->AuthEnable(&ctx, pb::AuthEnableRequest(), &resp).ok());
  }
  std::string root;
  {
    grpc::ClientContext ctx;
    pb::AuthenticateRequest r;
    r.set_name("root");
    r.set_password("rootpw");
    pb::AuthenticateResponse resp;
    ASSERT_TRUE(auth->Authenticate(&ctx, r, &resp).ok());
    root = resp.token();
  }
  // "<prefix>.<index>": a token of an index two entries ahead.
  const uint64_t index = std::stoull(root.substr(root.rfind('.') + 1));
  const std::string forged = "forged." + std::to_string(index + 2);

  // A forged put on the gateway (a small body: handled on the I/O thread)
  // and a forged range over gRPC, each on a connection of its own.
  std::future<StatusOr<net::HttpResponse>> json_forged =
      std::async(std::launch::async, [&] {
        net::HttpClient c("127.0.0.1", m.port());
        return c.Request(
            "POST", "/v3/kv/put",
            {{"Content-Type", "application/json"}, {"Authorization", forged}},
            R"({"key":")" + Base64Encode("k") + R"(","value":"dg=="})");
      });
  ASSERT_TRUE(m.server()->auth()->WaitForTokenWaiters(1, seconds(20)));
  std::future<grpc::Status> grpc_forged = std::async(std::launch::async, [&] {
    auto stub = pb::KV::NewStub(m.Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(TestCallDeadline());
    ctx.AddMetadata("token", forged);
    pb::RangeRequest r;
    r.set_key("k");
    pb::RangeResponse resp;
    return stub->Range(&ctx, r, &resp);
  });
  ASSERT_TRUE(m.server()->auth()->WaitForTokenWaiters(2, seconds(20)));

  // Other clients are served meanwhile, on the gateway (the same I/O
  // thread) and over gRPC.
  net::HttpClient other("127.0.0.1", m.port(), {.read_timeout = seconds(20)});
  StatusOr<net::HttpResponse> version = other.Request("GET", "/version");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->status, 200);
  auto put_as_root = [&] {
    StatusOr<net::HttpResponse> r = other.Request(
        "POST", "/v3/kv/put",
        {{"Content-Type", "application/json"}, {"Authorization", root}},
        R"({"key":")" + Base64Encode("k") + R"(","value":"dg=="})");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 200) << r->body;
  };
  put_as_root();  // the entry at index + 1
  EXPECT_EQ(json_forged.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);
  EXPECT_EQ(grpc_forged.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);

  // The index is reached (one more entry): both are answered now, long
  // before the wait is over, as invalid tokens.
  put_as_root();
  ASSERT_EQ(json_forged.wait_for(std::chrono::seconds(20)),
            std::future_status::ready);
  StatusOr<net::HttpResponse> j = json_forged.get();
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->status, 401) << j->body;
  EXPECT_NE(j->body.find("etcdserver: invalid auth token"), std::string::npos)
      << j->body;
  ASSERT_EQ(grpc_forged.wait_for(std::chrono::seconds(20)),
            std::future_status::ready);
  grpc::Status g = grpc_forged.get();
  EXPECT_EQ(g.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(g.error_message(), "etcdserver: invalid auth token");
}

}  // namespace
}  // namespace kplane::storage
