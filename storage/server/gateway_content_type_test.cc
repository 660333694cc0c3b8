// The gateway's content-type rule (gateway_content_type.h): the function's
// table, and the same over HTTP against an in-process member -- a refused
// body is never executed.
#include "storage/server/gateway_content_type.h"

#include <gtest/gtest.h>

#include "net/http_client.h"
#include "storage/server/single_member_store.h"

namespace kplane::storage {
namespace {

net::HttpHeaders Headers(const std::string& type, bool origin) {
  net::HttpHeaders h;
  if (!type.empty()) h.Add("Content-Type", type);
  if (origin) h.Add("Origin", "https://evil.example");
  return h;
}

TEST(GatewayContentTypeTest, TheRule) {
  struct Case {
    std::string type;
    bool origin;
    bool accepted;
  } cases[] = {
      {"application/json", false, true},
      {"application/json", true, true},  // needs a preflight: never cross-site
      {"Application/JSON; charset=utf-8", true, true},
      {"application/merge-patch+json", false, true},
      {"application/x-www-form-urlencoded", false, true},  // curl -d
      {"application/x-www-form-urlencoded", true, false},  // an HTML form
      {"", false, true},                                   // a bare client
      {"", true, false},  // fetch() with a Blob body
      {"text/plain", false, false},
      {"text/plain;charset=UTF-8", true, false},
      {"multipart/form-data; boundary=x", false, false},
      {"application/octet-stream", false, false},
  };
  for (const Case& c : cases) {
    Status st = CheckGatewayContentType(Headers(c.type, c.origin));
    EXPECT_EQ(st.ok(), c.accepted)
        << "\"" << c.type << "\" origin=" << c.origin << ": " << st;
    if (!st.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(GatewayContentTypeTest, RefusedBodiesAreNotExecuted) {
  auto store = SingleMemberStore::Start();
  ASSERT_TRUE(store.ok()) << store.status();
  net::HttpClient c("127.0.0.1", (*store)->port());
  const std::string put = R"({"key":"YQ==","value":"Yg=="})";
  // What a page can make a browser send: refused with 415 and etcd's body.
  for (const auto& [type, origin] : std::vector<std::pair<std::string, bool>>{
           {"text/plain", false},
           {"multipart/form-data; boundary=x", true},
           {"application/x-www-form-urlencoded", true},
           {"", true}}) {
    auto r = c.Request("POST", "/v3/kv/put", Headers(type, origin), put);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 415) << type;
    EXPECT_NE(r->body.find("\"code\":3"), std::string::npos) << r->body;
    EXPECT_NE(r->body.find("is not accepted"), std::string::npos) << r->body;
  }
  // Streams too (a watch opened by a page).
  auto w = c.Request("POST", "/v3/watch", Headers("text/plain", true),
                     R"({"create_request":{"key":"YQ=="}})");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->status, 415);
  // Nothing was written: the revision is still the empty store's.
  auto range =
      c.Request("POST", "/v3/kv/range", Headers("application/json", false),
                R"({"key":"YQ=="})");
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->status, 200) << range->body;
  EXPECT_EQ(range->body.find("\"kvs\""), std::string::npos) << range->body;
  // curl -d (form-urlencoded, no Origin) and application/json work.
  auto curl =
      c.Request("POST", "/v3/kv/put",
                Headers("application/x-www-form-urlencoded", false), put);
  ASSERT_TRUE(curl.ok());
  EXPECT_EQ(curl->status, 200) << curl->body;
  range = c.Request("POST", "/v3/kv/range", Headers("application/json", true),
                    R"({"key":"YQ=="})");
  ASSERT_TRUE(range.ok());
  EXPECT_NE(range->body.find("\"kvs\""), std::string::npos) << range->body;
}

}  // namespace
}  // namespace kplane::storage
