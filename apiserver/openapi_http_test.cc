// /openapi/v2 and /openapi/v3 over HTTP against a real ApiServer: content
// negotiation (JSON, kubectl's protobuf, 406), ETags and If-None-Match (304),
// the v3 index's immutable ?hash= URLs and the redirect of a stale hash.
#include <gtest/gtest.h>

#include <string>

#include "apiserver/openapi/openapi_v2.pb.h"
#include "apiserver/test_server.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;

constexpr char kKubectlV2Accept[] =
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

Response GetWith(TestServer& s, std::string_view target,
                 net::HttpHeaders headers) {
  return s.Do("GET", target, {}, std::move(headers));
}

TEST(OpenApiHttpTest, V2JsonWithEtagAnd304) {
  TestServer s;
  Response r = s.Get("/openapi/v2");
  ASSERT_EQ(r.code, 200) << r.body;
  EXPECT_EQ(r.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(r.Str({"swagger"}), "2.0");
  ASSERT_NE(r.At({"definitions", "io.k8s.api.apps.v1.Deployment"}), nullptr);
  EXPECT_EQ(r.Str({"definitions", "io.k8s.api.core.v1.PodSpec", "properties",
                   "containers", "x-kubernetes-patch-merge-key"}),
            "name");
  const std::string etag(r.headers.Get("Etag"));
  ASSERT_EQ(etag.size(), 130u) << etag;  // quoted hex SHA-512
  EXPECT_EQ(etag.front(), '"');
  EXPECT_EQ(r.headers.Get("Vary"), "Accept");

  Response again = GetWith(s, "/openapi/v2", {{"If-None-Match", etag}});
  EXPECT_EQ(again.code, 304);
  EXPECT_TRUE(again.body.empty());
  Response other = GetWith(s, "/openapi/v2", {{"If-None-Match", "\"0123\""}});
  EXPECT_EQ(other.code, 200);
  EXPECT_EQ(other.body, r.body);
}

TEST(OpenApiHttpTest, V2ProtobufAsKubectlAsksForIt) {
  TestServer s;
  Response r = s.Get("/openapi/v2", kKubectlV2Accept);
  ASSERT_EQ(r.code, 200);
  EXPECT_EQ(r.headers.Get("Content-Type"),
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
  openapi::v2::Document doc;
  ASSERT_TRUE(doc.ParseFromString(r.body));
  EXPECT_EQ(doc.swagger(), "2.0");
  bool deployment = false;
  for (const auto& d : doc.definitions().additional_properties()) {
    if (d.name() != "io.k8s.api.apps.v1.Deployment") continue;
    deployment = true;
    ASSERT_GE(d.value().vendor_extension_size(), 1);
    EXPECT_EQ(d.value().vendor_extension(0).value().yaml(),
              R"([{"group":"apps","kind":"Deployment","version":"v1"}])");
  }
  EXPECT_TRUE(deployment);
  // The protobuf's ETag is its own; If-None-Match with it answers 304.
  const std::string etag(r.headers.Get("Etag"));
  EXPECT_NE(etag, std::string(s.Get("/openapi/v2").headers.Get("Etag")));
  EXPECT_EQ(GetWith(s, "/openapi/v2",
                    {{"Accept", kKubectlV2Accept}, {"If-None-Match", etag}})
                .code,
            304);
  // Unacceptable media types: 406.
  EXPECT_EQ(s.Get("/openapi/v2", "text/html").code, 406);
  EXPECT_EQ(s.Get("/openapi/v2", "*/*").headers.Get("Content-Type"),
            "application/json");
}

TEST(OpenApiHttpTest, V3IndexHashesAreImmutableUrls) {
  TestServer s;
  Response index = s.Get("/openapi/v3");
  ASSERT_EQ(index.code, 200);
  const std::string url =
      index.Str({"paths", "apis/apps/v1", "serverRelativeURL"});
  ASSERT_EQ(url.rfind("/openapi/v3/apis/apps/v1?hash=", 0), 0u) << url;
  const std::string hash = url.substr(url.find('=') + 1);

  Response doc = s.Get(url);
  ASSERT_EQ(doc.code, 200);
  EXPECT_EQ(doc.headers.Get("Cache-Control"), "public, immutable");
  EXPECT_FALSE(doc.headers.Get("Expires").empty());
  EXPECT_EQ(doc.headers.Get("Etag"), "\"" + hash + "\"");
  ASSERT_NE(doc.At({"components", "schemas", "io.k8s.api.apps.v1.Deployment"}),
            nullptr);
  EXPECT_EQ(GetWith(s, url, {{"If-None-Match", "\"" + hash + "\""}}).code, 304);

  // Without a hash: not immutable; a stale hash redirects to the current.
  Response plain = s.Get("/openapi/v3/apis/apps/v1");
  EXPECT_EQ(plain.code, 200);
  EXPECT_TRUE(plain.headers.Get("Cache-Control").empty());
  EXPECT_EQ(plain.body, doc.body);
  Response stale = s.Get("/openapi/v3/apis/apps/v1?hash=ABC");
  EXPECT_EQ(stale.code, 301);
  EXPECT_EQ(stale.headers.Get("Location"), url);

  EXPECT_EQ(s.Get("/openapi/v3/apis/nope/v1").code, 404);
  EXPECT_EQ(s.Get(url, "application/yaml").code, 406);
  Response i304 =
      GetWith(s, "/openapi/v3",
              {{"If-None-Match", std::string(index.headers.Get("Etag"))}});
  EXPECT_EQ(i304.code, 304);
}

}  // namespace
}  // namespace kplane::apiserver
