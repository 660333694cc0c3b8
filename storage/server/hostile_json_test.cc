// Hostile bodies on the store's etcd JSON API (issue 15): a 2 MB body to
// /v3/kv/put nested 1,000,000 deep killed the store; a txn nested deeper
// than protobuf's recursion limit would have been accepted and then failed
// to apply from the raft log on every member. Both are 400s now, and the
// store keeps serving.
#include <gtest/gtest.h>

#include "base/testing/hostile_inputs.h"
#include "net/http_client.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/server/single_member_store.h"

namespace kplane::storage {
namespace {

using kplane::testing::HostileInput;

class HostileJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SingleMemberStore::Start();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    client_ = std::make_unique<net::HttpClient>("127.0.0.1", store_->port());
  }

  StatusOr<net::HttpResponse> Post(const std::string& path,
                                   const std::string& body) {
    return client_->Request("POST", path,
                            {{"Content-Type", "application/json"}}, body);
  }

  // The store answers and a well-behaved put and range go through.
  void ExpectServing() {
    auto health = client_->Request("GET", "/health");
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(health->status, 200);
    auto put = Post("/v3/kv/put", R"({"key":"Zm9v","value":"YmFy"})");
    ASSERT_TRUE(put.ok()) << put.status();
    EXPECT_EQ(put->status, 200) << put->body;
    auto range = Post("/v3/kv/range", R"({"key":"Zm9v"})");
    ASSERT_TRUE(range.ok()) << range.status();
    EXPECT_NE(range->body.find("YmFy"), std::string::npos) << range->body;
  }

  std::unique_ptr<SingleMemberStore> store_;
  std::unique_ptr<net::HttpClient> client_;
};

TEST_F(HostileJsonTest, DeepPutBodyIsA400) {
  // 1,000,000 levels in 2 MB, within the store's 2 MB-plus body limit.
  const std::string body = R"({"key":"YQ==","value":)" +
                           std::string(1000000, '[') +
                           std::string(1000000, ']') + "}";
  auto r = Post("/v3/kv/put", body);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400) << r->body;
  Status s = etcdjson::ErrorToStatus(r->status, r->body);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("exceeded max depth of 10000"), std::string::npos)
      << s;
  r = Post("/v3/kv/put", HostileInput("etcd_json/put_deep_10001.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400) << r->body;
  ExpectServing();
}

TEST_F(HostileJsonTest, DeeplyNestedTxnIsA400) {
  auto r = Post("/v3/kv/txn", HostileInput("etcd_json/txn_nested_70.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("messages nested more than 64 deep"),
            std::string::npos)
      << r->body;
  ExpectServing();
}

}  // namespace
}  // namespace kplane::storage
