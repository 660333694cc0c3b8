// Hostile bodies on the store's etcd JSON API (issue 15): a 2 MB body to
// /v3/kv/put nested 1,000,000 deep killed the store; a txn nested deeper
// than protobuf's recursion limit would have been accepted and then failed
// to apply from the raft log on every member. Both are 400s now, and the
// store keeps serving.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/metrics.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/server/client_api.h"
#include "storage/server/store_server.h"

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;

class HostileJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-hostile-XXXXXX";
    dir_ = mkdtemp(tmpl);
    StoreConfig c;
    c.name = "m1";
    c.data_dir = dir_ + "/m1";
    c.peer_urls = {"http://m1:2380"};
    c.heartbeat_interval = milliseconds(10);
    c.election_timeout = milliseconds(100);
    c.corrupt_check_interval = Duration(0);
    auto s = StoreServer::Open(c);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    ASSERT_TRUE(server_->Start(nullptr).ok());
    ASSERT_TRUE(server_->WaitReady(seconds(10)));
    net::HttpServerOptions o;
    o.port = 0;
    o.metrics = &metrics_;
    http_ = std::make_unique<net::HttpServer>(o);
    api_ = std::make_unique<ClientApi>(server_.get(), &metrics_);
    api_->RegisterHandlers(http_.get());
    ASSERT_TRUE(http_->Start().ok());
    client_ = std::make_unique<net::HttpClient>("127.0.0.1", http_->port());
  }
  void TearDown() override {
    client_.reset();
    if (http_) http_->Stop();
    if (server_) server_->Stop();
    fs::remove_all(dir_);
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

  std::string dir_;
  metrics::Registry metrics_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<ClientApi> api_;
  std::unique_ptr<net::HttpClient> client_;
};

std::string ReadHostile(const std::string& name) {
  std::ifstream in(std::string(KPLANE_HOSTILE_TESTDATA) + "/etcd_json/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
  r = Post("/v3/kv/put", ReadHostile("put_deep_10001.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400) << r->body;
  ExpectServing();
}

TEST_F(HostileJsonTest, DeeplyNestedTxnIsA400) {
  auto r = Post("/v3/kv/txn", ReadHostile("txn_nested_70.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("messages nested more than 64 deep"),
            std::string::npos)
      << r->body;
  ExpectServing();
}

}  // namespace
}  // namespace kplane::storage
