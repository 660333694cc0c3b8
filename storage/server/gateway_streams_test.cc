// --max-concurrent-streams on the JSON gateway (issue 17, etcd's
// TestV3Curl_MaxStreams_*): etcd's gateway is a gRPC client of its own
// member over one connection per listener, so with the limit's worth of
// watches open the next request waits for a stream to free.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "base/metrics.h"
#include "net/http_server.h"
#include "net/http_test_util.h"
#include "storage/server/client_api.h"
#include "storage/server/store_server.h"

namespace kplane::storage {
namespace {

namespace fs = std::filesystem;
using net::testing::RawConnection;

class GatewayStreamsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (http_) http_->Stop();
    api_.reset();
    if (server_) server_->Stop();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void StartStore(ClientApiOptions options) {
    char tmpl[] = "/tmp/kplane-gwstreams-XXXXXX";
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
    api_ = std::make_unique<ClientApi>(server_.get(), &metrics_, options);
    api_->RegisterHandlers(http_.get());
    ASSERT_TRUE(http_->Start().ok());
  }

  static std::string Chunk(const std::string& data) {
    char size[32];
    snprintf(size, sizeof(size), "%zx\r\n", data.size());
    return size + data + "\r\n";
  }

  // A watch of "foo" from revision 1, as etcd's test opens it; returns once
  // it is created.
  std::unique_ptr<RawConnection> OpenWatch() {
    auto c = std::make_unique<RawConnection>(http_->port());
    c->Send(
        "POST /v3/watch HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
        Chunk(R"({"create_request":{"key":"Zm9v","start_revision":1}})"));
    EXPECT_TRUE(c->ReadUntilContains("\"created\":true"));
    return c;
  }

  // Sends a range of "foo" on a new connection (with `extra` header lines).
  std::unique_ptr<RawConnection> SendRange(const std::string& extra = "") {
    auto c = std::make_unique<RawConnection>(http_->port());
    const std::string body = R"({"key":"Zm9v"})";
    c->Send(
        "POST /v3/kv/range HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\n" +
        extra + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
        body);
    return c;
  }

  std::string dir_;
  metrics::Registry metrics_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<ClientApi> api_;
};

// Below the limit every request is answered (TestV3Curl_MaxStreams_BelowLimit).
TEST_F(GatewayStreamsTest, RequestBelowTheLimitIsAnswered) {
  StartStore({.max_concurrent_streams = 3});
  auto w1 = OpenWatch();
  auto w2 = OpenWatch();
  auto r = SendRange();
  StatusOr<net::HttpResponse> resp = r->ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200);
  EXPECT_NE(resp->body.find("\"revision\":\""), std::string::npos)
      << resp->body;
}

// At the limit the next request waits: its client's own deadline
// (grpc-gateway's Grpc-Timeout) ends the wait with etcd's 504, code 4.
// Without the limit it would be answered 200.
TEST_F(GatewayStreamsTest, RequestAtTheLimitWaitsUntilTheClientDeadline) {
  StartStore({.max_concurrent_streams = 2});
  auto w1 = OpenWatch();
  auto w2 = OpenWatch();
  auto r = SendRange("Grpc-Timeout: 300m\r\n");
  StatusOr<net::HttpResponse> resp = r->ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 504);
  EXPECT_EQ(resp->body, R"({"error":"context deadline exceeded",)"
                        R"("message":"context deadline exceeded","code":4})");
}

// Without a client deadline the wait ends at max_stream_wait, with a 503
// (code 14) that names the limit.
TEST_F(GatewayStreamsTest, RequestAtTheLimitWaitsAtMostMaxStreamWait) {
  StartStore(
      {.max_concurrent_streams = 1, .max_stream_wait = milliseconds(300)});
  auto w1 = OpenWatch();
  auto r = SendRange();
  StatusOr<net::HttpResponse> resp = r->ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 503);
  EXPECT_NE(resp->body.find("\"code\":14"), std::string::npos) << resp->body;
  EXPECT_NE(resp->body.find("etcdserver: the gateway's 1 streams "
                            "(--max-concurrent-streams) stayed busy for 300ms"),
            std::string::npos)
      << resp->body;
}

// A waiting request runs once a stream frees (here: a watch's client goes
// away), and a waiter whose client left takes no slot with it.
TEST_F(GatewayStreamsTest, WaitingRequestRunsWhenAStreamFrees) {
  StartStore({.max_concurrent_streams = 2});
  auto w1 = OpenWatch();
  auto w2 = OpenWatch();
  auto gone = SendRange();  // waits, then its client leaves
  auto r = SendRange();     // waits behind it
  // The waiting range is still waiting: its deadline passes first.
  auto probe = SendRange("Grpc-Timeout: 200m\r\n");
  StatusOr<net::HttpResponse> p = probe->ReadResponse("POST");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->status, 504);
  gone->Close();
  w1->Close();
  StatusOr<net::HttpResponse> resp = r->ReadResponse("POST");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200) << resp->body;
  // w2 holds one stream; the range's stream is free again, so is the one
  // the departed waiter was handed (if it was): a watch and a range fit.
  auto w3 = OpenWatch();
  auto after = SendRange("Grpc-Timeout: 300m\r\n");
  StatusOr<net::HttpResponse> a = after->ReadResponse("POST");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->status, 504) << "w2 and w3 hold both streams: " << a->body;
  w3->Close();
  auto last = SendRange("Grpc-Timeout: 10S\r\n");
  StatusOr<net::HttpResponse> l = last->ReadResponse("POST");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->status, 200) << "a stream leaked: " << l->body;
}

// Unary requests hold a stream only until answered: many in a row pass one
// stream.
TEST_F(GatewayStreamsTest, AnsweredRequestsFreeTheirStream) {
  StartStore({.max_concurrent_streams = 1});
  RawConnection c(http_->port());
  const std::string body = R"({"key":"Zm9v","value":"YmFy"})";
  for (int i = 0; i < 20; ++i) {
    c.Send(
        "POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nGrpc-Timeout: 10S\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    StatusOr<net::HttpResponse> resp = c.ReadResponse("POST");
    ASSERT_TRUE(resp.ok()) << resp.status();
    ASSERT_EQ(resp->status, 200) << i << ": " << resp->body;
  }
}

}  // namespace
}  // namespace kplane::storage
