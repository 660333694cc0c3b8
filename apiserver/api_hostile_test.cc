// Hostile request bodies against a real ApiServer (issue 15): each of these
// killed the process or grew it by gigabytes. Each must be answered with a
// Kubernetes Status (400, 413 or 422), and the server must keep serving.
//
// Patches of deeply nested documents run through the strategic merge and
// server-side apply algorithms, which recurse once per level: at 10,000
// levels they need more stack than an HTTP worker has, and are run on a deep
// stack (base/deep_stack.h). Those tests crash the binary if that is lost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apiserver/test_server.h"
#include "base/base64.h"
#include "base/json.h"
#include "base/testing/hostile_inputs.h"
#include "net/http_test_util.h"

namespace kplane::apiserver {
namespace {

using kplane::testing::HostileInput;
using kplane::testing::NestedJsonArrays;
using kplane::testing::NestedJsonObjects;
using ::testing::HasSubstr;
using testing::Response;
using testing::TestServer;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

std::string ConfigMap(const std::string& name, const std::string& extra = "") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
         name + R"("},"data":{"k":"v"})" + extra + "}";
}

void ExpectStatus(const Response& r, int code, const std::string& reason,
                  const std::string& message_part) {
  EXPECT_EQ(r.code, code) << r.body.substr(0, 500);
  EXPECT_EQ(r.Str({"kind"}), "Status") << r.body.substr(0, 500);
  EXPECT_EQ(r.Str({"reason"}), reason) << r.body.substr(0, 500);
  EXPECT_THAT(r.Str({"message"}), HasSubstr(message_part));
}

// The server still answers, and a well-behaved client is served.
void ExpectServing(TestServer& s, const std::string& name) {
  EXPECT_EQ(s.Get("/healthz").code, 200);
  Response ok = s.Post(kConfigMaps, ConfigMap(name));
  EXPECT_EQ(ok.code, 201) << ok.body;
}

TEST(ApiHostileTest, DeepJsonBodies) {
  TestServer s;
  // The issue's 200 KB ConfigMap nested 100,000 deep.
  Response r = s.Post(kConfigMaps,
                      ConfigMap("deep", ",\"x\":" + NestedJsonArrays(100000)));
  ExpectStatus(r, 400, "BadRequest", "exceeded max depth of 10000");
  r = s.Post(kConfigMaps, HostileInput("json/configmap_deep_10001.json"));
  ExpectStatus(r, 400, "BadRequest", "exceeded max depth of 10000");
  // At the limit it is an ordinary unknown field.
  r = s.Post(kConfigMaps,
             ConfigMap("at-limit", ",\"x\":" + NestedJsonArrays(9999)));
  EXPECT_EQ(r.code, 201) << r.body.substr(0, 500);
  EXPECT_THAT(std::string(r.headers.Get("Warning")),
              HasSubstr("unknown field \\\"x\\\""));
  ExpectServing(s, "after-deep-json");
}

// A kubernetes.io/dockerconfigjson Secret is checked to hold a JSON object:
// 1 MiB of '[' (the most a Secret may hold) once overflowed that check.
TEST(ApiHostileTest, DeepDockerConfigJson) {
  TestServer s;
  const std::string body =
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"pull"},)"
      R"("type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":")" +
      Base64Encode(std::string(1 << 20, '[')) + "\"}}";
  Response r = s.Post("/api/v1/namespaces/default/secrets", body);
  ExpectStatus(r, 422, "Invalid", "invalid JSON");
  ExpectServing(s, "after-deep-dockerconfigjson");
}

TEST(ApiHostileTest, YamlAliasCycles) {
  TestServer s;
  // 68 bytes of YAML recursed forever.
  Response r =
      s.Do("POST", kConfigMaps, HostileInput("yaml/alias_cycle_configmap.yaml"),
           {{"Content-Type", "application/yaml"}});
  ExpectStatus(r, 400, "BadRequest", "yaml: anchor 'a' value contains itself");
  r = s.Patch(std::string(kConfigMaps) + "/x?fieldManager=m",
              HostileInput("yaml/alias_cycle_apply.yaml"),
              "application/apply-patch+yaml");
  ExpectStatus(r, 400, "BadRequest", "yaml: anchor 'a' value contains itself");
  ExpectServing(s, "after-cycles");
}

TEST(ApiHostileTest, YamlExpansionBombs) {
  TestServer s;
  // 536 bytes that expand to 10^9 strings.
  Response r = s.Patch(std::string(kConfigMaps) + "/laughs?fieldManager=m",
                       HostileInput("yaml/billion_laughs.yaml"),
                       "application/apply-patch+yaml");
  ExpectStatus(r, 400, "BadRequest", "excessive aliasing");
  // 2.4 MB: one 2 MiB string aliased 100,000 times (200 GB).
  std::string yaml =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
      "data:\n  s: &s " +
      std::string(2 << 20, 'x') + "\n  l: [";
  for (int i = 0; i < 100000; ++i) yaml += i ? ",*s" : "*s";
  yaml += "]\n";
  ASSERT_LT(yaml.size(), 3u << 20);
  r = s.Do("POST", kConfigMaps, yaml, {{"Content-Type", "application/yaml"}});
  ExpectStatus(r, 400, "BadRequest", "excessive aliasing");
  ExpectServing(s, "after-bombs");
}

TEST(ApiHostileTest, JsonPatchLimits) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("target")).code, 201);
  const std::string url = std::string(kConfigMaps) + "/target";
  // A 2 KB patch copying data into itself 40 times (2^40 copies).
  Response r = s.Patch(url, HostileInput("json_patch/self_copy_40.json"),
                       "application/json-patch+json");
  ExpectStatus(r, 422, "Invalid",
               "unable to copy, the accumulated size increase of copy is");
  // 10,001 operations.
  std::string ops = "[";
  for (int i = 0; i < 10001; ++i) {
    ops += std::string(i ? "," : "") +
           R"({"op":"add","path":"/data/k","value":"v"})";
  }
  ops += "]";
  r = s.Patch(url, ops, "application/json-patch+json");
  ExpectStatus(r, 413, "RequestEntityTooLarge",
               "The allowed maximum operations in a JSON patch is 10000, got "
               "10001");
  // A value placed past 10,000 levels. The patch itself is 10,000 deep
  // (an array, an operation, then the value's 9,998), within the limit.
  const std::string value = NestedJsonArrays(9998);
  r = s.Patch(url, R"([{"op":"add","path":"/x/a","value":)" + value + "}]",
              "application/json-patch+json");
  EXPECT_EQ(r.code, 422) << r.body.substr(0, 300);  // /x does not exist
  r = s.Patch(url,
              R"([{"op":"add","path":"/data/o","value":{"p":{}}},)"
              R"({"op":"add","path":"/data/o/p/q","value":)" +
                  value + "}]",
              "application/json-patch+json");
  ExpectStatus(r, 400, "BadRequest", "exceeded max depth of 10000");
  ExpectServing(s, "after-json-patch");
}

// The results of merge patches must fit the body limit too.
TEST(ApiHostileTest, PatchedObjectsStayUnderTheBodyLimit) {
  TestServer s(
      [](ApiServerOptions* o) { o->max_request_body_bytes = 64 << 10; });
  const std::string half(40 << 10, 'x');
  ASSERT_EQ(s.Post(kConfigMaps, R"({"metadata":{"name":"grow"},"data":{"a":")" +
                                    half + "\"}}")
                .code,
            201);
  Response r = s.Patch(std::string(kConfigMaps) + "/grow",
                       R"({"data":{"b":")" + half + "\"}}",
                       "application/merge-patch+json");
  ExpectStatus(r, 413, "RequestEntityTooLarge",
               "the patched object is larger than 65536 bytes");
  r = s.Patch(std::string(kConfigMaps) + "/grow", R"({"data":{"b":"small"}})",
              "application/merge-patch+json");
  EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
}

// Patches 9,990 levels deep, legal in size and depth, go through the
// recursive patch algorithms; on an HTTP worker's stack they would crash.
TEST(ApiHostileTest, DeepPatchesRunOnADeepStack) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("deep")).code, 201);
  const std::string url = std::string(kConfigMaps) + "/deep";
  const std::string deep = NestedJsonObjects(9990);
  Response r = s.Patch(url, "{\"x\":" + deep + "}",
                       "application/strategic-merge-patch+json");
  EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
  r = s.Patch(url, "{\"x\":" + deep + "}", "application/merge-patch+json");
  EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
  r = s.Patch(url + "?fieldManager=deep", ConfigMap("deep", ",\"x\":" + deep),
              "application/apply-patch+yaml");
  EXPECT_EQ(r.code, 200) << r.body.substr(0, 300);
  // Past the limit: refused as it is read.
  r = s.Patch(url, "{\"x\":" + NestedJsonObjects(10000) + "}",
              "application/strategic-merge-patch+json");
  ExpectStatus(r, 400, "BadRequest", "exceeded max depth of 10000");
  ExpectServing(s, "after-deep-patches");
}

// pods/log's query options come from any client that may read logs and are
// forwarded to a kubelet: numbers past int64, negative and zero bounds,
// non-numbers and garbage times are kube's 400 (unparsable) or 422
// (ValidatePodLogOptions) Statuses, and none reaches the kubelet. The pod
// has no node yet, so an accepted request is kube's empty log.
TEST(ApiHostileTest, PodLogOptions) {
  TestServer s;
  Response created =
      s.Post("/api/v1/namespaces/default/pods",
             R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},)"
             R"("spec":{"containers":[{"name":"app","image":"nginx"}]}})");
  ASSERT_EQ(created.code, 201) << created.body;
  const std::string log = "/api/v1/namespaces/default/pods/web/log?";
  struct Row {
    std::string query;
    int code;
    std::string message_part;
  };
  const std::vector<Row> rows = {
      {"tailLines=99999999999999999999", 400,
       "tailLines: invalid value \"99999999999999999999\""},
      {"limitBytes=-99999999999999999999", 400, "limitBytes: invalid value"},
      {"sinceSeconds=18446744073709551616", 400, "sinceSeconds: invalid"},
      {"tailLines=ten", 400, "tailLines: invalid value \"ten\""},
      {"limitBytes=0x10", 400, "limitBytes: invalid value"},
      {"tailLines=1e3", 400, "tailLines: invalid value"},
      {"tailLines=%00", 400, "tailLines: invalid value \"\\x00\""},
      {"sinceTime=yesterday", 400, "sinceTime: invalid value \"yesterday\""},
      {"sinceTime=2026-13-45T99:99:99Z", 400, "sinceTime: invalid value"},
      {"sinceTime=" + std::string(1000, '9'), 400, "sinceTime: invalid"},
      {"follow=maybe", 400, "follow: invalid value \"maybe\""},
      {"tailLines=-1", 422,
       "tailLines: Invalid value: -1: must be greater than or equal to 0"},
      {"limitBytes=0", 422,
       "limitBytes: Invalid value: 0: must be greater than 0"},
      {"limitBytes=-9223372036854775808", 422,
       "limitBytes: Invalid value: -9223372036854775808"},
      {"sinceSeconds=-5", 422, "sinceSeconds: Invalid value: -5"},
      {"sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z", 422,
       "at most one of `sinceTime` or `sinceSeconds` may be specified"},
      {"container=nope", 400, "container nope is not valid for pod web"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.query.substr(0, 80));
    Response r = s.Get(log + row.query);
    ExpectStatus(r, row.code, row.code == 400 ? "BadRequest" : "Invalid",
                 row.message_part);
  }
  // The largest values are valid (kube caps what the kubelet sends, not
  // what may be asked).
  for (const std::string q :
       {"tailLines=9223372036854775807", "limitBytes=9223372036854775807",
        "sinceSeconds=9223372036854775807", "tailLines=1&tailLines=-1"}) {
    Response r = s.Get(log + q);
    EXPECT_EQ(r.code, 200) << q << ": " << r.body.substr(0, 500);
    EXPECT_EQ(r.body, "") << q;
  }
  ExpectServing(s, "after-pod-log-options");
}

// Without authentication (--insecure-http) a page in the user's browser
// must not drive the API: its cross-origin requests and requests for a
// name rebound to the server are refused, before anything is done.
TEST(ApiHostileTest, BrowsersOfOtherOriginsCannotDriveAnUnauthenticatedApi) {
  TestServer s;
  const std::string cm =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}})";
  Response cross = s.Do("POST", "/api/v1/namespaces/default/configmaps", cm,
                        {{"Origin", "https://evil.example"}});
  EXPECT_EQ(cross.code, 403) << cross.body;
  EXPECT_THAT(cross.body, HasSubstr("cross-origin request from"));
  EXPECT_EQ(s.Get("/api/v1/namespaces/default/configmaps/x").code, 404);

  // The server's own pages (the web view), and clients without an Origin.
  const std::string self = "http://127.0.0.1:" + std::to_string(s.port());
  Response own = s.Do("POST", "/api/v1/namespaces/default/configmaps", cm,
                      {{"Origin", self}});
  EXPECT_EQ(own.code, 201) << own.body;
  Response plain = s.Post("/api/v1/namespaces/default/configmaps",
                          R"({"apiVersion":"v1","kind":"ConfigMap",)"
                          R"("metadata":{"name":"y"}})");
  EXPECT_EQ(plain.code, 201) << plain.body;

  net::testing::RawConnection c(s.port());
  c.Send(
      "GET /api/v1/namespaces/default/configmaps/x HTTP/1.1\r\n"
      "Host: rebind.evil.example:" +
      std::to_string(s.port()) + "\r\n\r\n");
  StatusOr<net::HttpResponse> rebound = c.ReadResponse();
  ASSERT_TRUE(rebound.ok()) << rebound.status();
  EXPECT_EQ(rebound->status, 403);
  EXPECT_THAT(rebound->body, HasSubstr("rebind.evil.example"));
  EXPECT_THAT(rebound->body, ::testing::Not(HasSubstr("ConfigMap")));
  // Non-API routes too (the web view's node control, /metrics).
  EXPECT_EQ(s.Do("POST", "/ui/api/nodes/node-1/stop", "{}",
                 {{"Origin", "https://evil.example"}})
                .code,
            403);
  EXPECT_EQ(
      s.Do("GET", "/metrics", {}, {{"Origin", "https://evil.example"}}).code,
      403);
}

// A write with thousands of unknown fields gets kube's bounded warnings:
// each at most once, at most 4,096 characters in all (it got one Warning
// header per field, more than a client's header limit).
TEST(ApiHostileTest, WarningsAreBoundedAsKubes) {
  TestServer s;
  std::string fields;
  for (int i = 0; i < 5000; ++i) fields += ",\"x" + std::to_string(i) + "\":1";
  Response r = s.Post(kConfigMaps, ConfigMap("many", fields));
  EXPECT_EQ(r.code, 201) << r.body.substr(0, 300);
  std::vector<std::string_view> warnings = r.headers.GetAll("Warning");
  ASSERT_FALSE(warnings.empty());
  size_t total = 0;
  for (std::string_view w : warnings) total += w.size();
  EXPECT_LE(total, 4096u + warnings.size() * 12);  // each "299 - \"...\""
  EXPECT_LT(warnings.size(), 5000u);
  EXPECT_THAT(std::string(warnings.front()), HasSubstr("unknown field"));
}

}  // namespace
}  // namespace kplane::apiserver
