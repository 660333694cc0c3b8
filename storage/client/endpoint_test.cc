#include "storage/client/endpoint.h"

#include <gtest/gtest.h>

#include "storage/client/local_cluster.h"
#include "storage/client/remote_kv.h"

namespace kplane::storage {
namespace {

TEST(ParseEndpoints, FormsAndLists) {
  auto eps =
      ParseEndpoints({"127.0.0.1:2379,http://10.0.0.2:22379", " localhost:1 "});
  ASSERT_TRUE(eps.ok()) << eps.status();
  ASSERT_EQ(eps->size(), 3u);
  EXPECT_EQ((*eps)[0].url, "http://127.0.0.1:2379");
  EXPECT_EQ((*eps)[0].host_port, "127.0.0.1:2379");
  EXPECT_EQ((*eps)[1].host, "10.0.0.2");
  EXPECT_EQ((*eps)[1].port, 22379);
  EXPECT_EQ((*eps)[2].host, "localhost");
}

TEST(ParseEndpoints, Errors) {
  EXPECT_EQ(ParseEndpoints({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEndpoints({","}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEndpoints({"ftp://a:1"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseEndpoints({"noport"}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(IsConnectFailure, RefusedConnectionIsOneAndOthersAreNot) {
  auto port = PickFreePort();
  ASSERT_TRUE(port.ok());
  net::HttpClientOptions o;
  o.connect_timeout = seconds(2);
  net::HttpClient c("127.0.0.1", *port, o);
  auto r = c.Request("POST", "/v3/kv/put", {}, "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsConnectFailure(r.status())) << r.status();
  EXPECT_FALSE(IsConnectFailure(
      UnavailableError("connection closed before the response")));
  // Nothing is written before the handshake completes.
  EXPECT_TRUE(IsConnectFailure(UnavailableError(
      "TLS handshake with 127.0.0.1 failed: server certificate signed by an "
      "unknown authority")));
  EXPECT_FALSE(
      IsConnectFailure(DeadlineExceededError("reading response: timed out")));
}

TEST(IsReadOnlyTxn, NestedWritesCount) {
  etcdserverpb::TxnRequest t;
  EXPECT_TRUE(IsReadOnlyTxn(t));
  t.add_success()->mutable_request_range()->set_key("a");
  t.add_failure()->mutable_request_range()->set_key("b");
  EXPECT_TRUE(IsReadOnlyTxn(t));
  etcdserverpb::TxnRequest* nested = t.add_failure()->mutable_request_txn();
  nested->add_success()->mutable_request_range()->set_key("c");
  EXPECT_TRUE(IsReadOnlyTxn(t));
  nested->add_failure()->mutable_request_delete_range()->set_key("c");
  EXPECT_FALSE(IsReadOnlyTxn(t));
  etcdserverpb::TxnRequest p;
  p.add_success()->mutable_request_put()->set_key("x");
  EXPECT_FALSE(IsReadOnlyTxn(p));
}

}  // namespace
}  // namespace kplane::storage
