// Hostile request parameters and labels against a real ApiServer (issue 15):
// metric labels from what a client typed, CR/LF in a Warning header,
// watches from a resourceVersion the store never reached, and integers at
// the ends of int64 in limit, timeoutSeconds, gracePeriodSeconds and
// resourceVersion. The overflow tests mean most under the clang job's
// -fsanitize=undefined (scripts/clang-checks.sh), where signed overflow
// halts the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>

#include "apiserver/query_params.h"
#include "apiserver/test_server.h"
#include "base/base64.h"

namespace kplane::apiserver {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Response;
using testing::TestServer;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";
constexpr char kPods[] = "/api/v1/namespaces/default/pods";
const std::string kInt64Max =
    std::to_string(std::numeric_limits<int64_t>::max());

std::string ConfigMap(const std::string& name, const std::string& extra = "") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
         name + R"("},"data":{"k":"v"})" + extra + "}";
}

// A pod bound to a node, so that deleting it is graceful.
std::string BoundPod(const std::string& name, const std::string& spec_extra) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"("},"spec":{"nodeName":"node-1",)" + spec_extra +
         R"("containers":[{"name":"c","image":"busybox"}]}})";
}

void ExpectStatus(const Response& r, int code, const std::string& reason) {
  EXPECT_EQ(r.code, code) << r.body.substr(0, 500);
  EXPECT_EQ(r.Str({"kind"}), "Status") << r.body.substr(0, 500);
  EXPECT_EQ(r.Str({"reason"}), reason) << r.body.substr(0, 500);
}

// Series of apiserver_request_total, by their label values.
std::set<std::vector<std::string>> RequestSeries(TestServer& s) {
  std::set<std::vector<std::string>> out;
  s.metrics()
      ->NewCounter("apiserver_request_total", "",
                   {"verb", "group", "version", "resource", "subresource",
                    "scope", "code"})
      ->ForEach([&](const std::vector<std::string>& labels,
                    const metrics::Counter&) { out.insert(labels); });
  return out;
}

TEST(ApiParamsTest, MetricLabelsComeOnlyFromResolvedRequests) {
  TestServer s;
  ASSERT_EQ(s.Get(kConfigMaps).code, 200);
  const size_t before = RequestSeries(s).size();
  // What the issue sent (/apis/<random>/<v>), and its relatives: unknown
  // groups, versions, resources and subresources, and made-up methods.
  for (int i = 0; i < 200; ++i) {
    const std::string n = std::to_string(i);
    ExpectStatus(s.Get("/apis/group" + n + ".example/v" + n), 404, "NotFound");
    ExpectStatus(s.Get("/apis/group" + n + ".example/v1/things" + n), 404,
                 "NotFound");
    ExpectStatus(s.Get("/api/v" + n + "alpha9/pods"), 404, "NotFound");
    ExpectStatus(s.Get(std::string(kPods) + "/p/sub" + n), 404, "NotFound");
    Response m = s.Do("VERB" + n, kConfigMaps);
    EXPECT_EQ(m.code, 405) << m.body;
  }
  const std::set<std::vector<std::string>> series = RequestSeries(s);
  // A handful of new series (the 404s share one, the unknown subresource
  // one, the made-up methods one), not thousands.
  EXPECT_LE(series.size(), before + 6);
  for (const auto& labels : series) {
    EXPECT_THAT(labels[1], Not(HasSubstr("example"))) << labels[1];
    EXPECT_THAT(labels[2], ::testing::AnyOf("", "v1"));
    EXPECT_THAT(labels[3], Not(HasSubstr("things")));
    EXPECT_THAT(labels[4], Not(HasSubstr("sub")));
    EXPECT_THAT(labels[0], Not(HasSubstr("VERB")));
  }
  // Served requests keep their labels.
  EXPECT_EQ(
      series.count({"LIST", "", "v1", "configmaps", "", "namespace", "200"}),
      1u);
  EXPECT_EQ(
      series.count({"other", "", "v1", "configmaps", "", "namespace", "405"}),
      1u);
  EXPECT_EQ(series.count({"GET", "", "", "", "", "", "404"}), 1u);
}

TEST(ApiParamsTest, DiscoveryOfKnownGroupsIsLabelled) {
  TestServer s;
  ASSERT_EQ(s.Get("/apis/apps/v1").code, 200);
  EXPECT_EQ(RequestSeries(s).count({"GET", "apps", "v1", "", "", "", "200"}),
            1u);
}

// A field named "a\r\nX-Injected: yes": the warning names it, escaped; no
// header is injected.
TEST(ApiParamsTest, WarningHeaderCarriesNoLineBreaks) {
  TestServer s;
  const std::string field = R"("a\r\nX-Injected: yes":1)";
  Response r = s.Post(kConfigMaps, ConfigMap("warned", "," + field));
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_FALSE(r.headers.Has("X-Injected"));
  std::vector<std::string_view> warnings = r.headers.GetAll("Warning");
  ASSERT_EQ(warnings.size(), 1u);
  for (const auto& [name, value] : r.headers) {
    EXPECT_EQ(value.find_first_of("\r\n"), std::string::npos) << name;
  }
  // Go's %q of the name, then quoted once more as a header value.
  EXPECT_EQ(warnings[0], R"(299 - "unknown field \"a\\r\\nX-Injected: yes\"")");

  // Strict validation: a 400 whose message names the field the same way.
  Response strict = s.Post(std::string(kConfigMaps) + "?fieldValidation=Strict",
                           ConfigMap("strict", "," + field));
  ExpectStatus(strict, 400, "BadRequest");
  EXPECT_EQ(strict.Str({"message"}),
            R"(strict decoding error: unknown field "a\r\nX-Injected: yes")");
}

// kube-apiserver's watch cache waits up to 3 s for a resourceVersion it has
// not seen, then answers 504 Timeout "Too large resource version".
TEST(ApiParamsTest, WatchFromAFutureResourceVersionTimesOut) {
  TestServer s([](ApiServerOptions* o) {
    o->cacher.consistent_read_wait = milliseconds(100);
  });
  for (const std::string& rv : {std::string("99999999999"), kInt64Max}) {
    Response r =
        s.Get(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + rv);
    ExpectStatus(r, 504, "Timeout");
    EXPECT_EQ(r.headers.Get("Retry-After"), "1");
    EXPECT_THAT(r.Str({"message"}),
                ::testing::StartsWith("Timeout: Too large resource version: " +
                                      rv + ", current: "));
    const rapidjson::Value* causes = r.At({"details", "causes"});
    ASSERT_NE(causes, nullptr) << r.body;
    ASSERT_TRUE(causes->IsArray() && causes->Size() == 1) << r.body;
    EXPECT_STREQ((*causes)[0]["reason"].GetString(), "ResourceVersionTooLarge");
    EXPECT_STREQ((*causes)[0]["message"].GetString(),
                 "Too large resource version");
    const rapidjson::Value* retry = r.At({"details", "retryAfterSeconds"});
    ASSERT_NE(retry, nullptr);
    EXPECT_EQ(retry->GetInt(), 1);
  }
  // A list not older than such a revision answers the same way.
  Response list =
      s.Get(std::string(kConfigMaps) + "?resourceVersion=" + kInt64Max +
            "&resourceVersionMatch=NotOlderThan");
  ExpectStatus(list, 504, "Timeout");
  EXPECT_NE(list.body.find("ResourceVersionTooLarge"), std::string::npos);
  // The server goes on serving watches from revisions it has.
  Response created = s.Post(kConfigMaps, ConfigMap("after"));
  ASSERT_EQ(created.code, 201);
  auto w = s.Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" +
                   created.Str({"metadata", "resourceVersion"}));
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("next")).code, 201);
  rapidjson::Document ev = w->NextJson();
  ASSERT_TRUE(ev.IsObject());
  EXPECT_STREQ(ev["type"].GetString(), "ADDED");
}

TEST(ApiParamsTest, LimitAtInt64Max) {
  TestServer s;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("cm" + std::to_string(i))).code,
              201);
  }
  Response r = s.Get(std::string(kConfigMaps) + "?limit=" + kInt64Max);
  ASSERT_EQ(r.code, 200) << r.body;
  EXPECT_EQ(r.At({"items"})->Size(), 3u);
  EXPECT_EQ(r.Str({"metadata", "continue"}), "");
  // With a selector (the store reads on past filtered-out objects).
  r = s.Get(std::string(kConfigMaps) + "?limit=" + kInt64Max +
            "&fieldSelector=metadata.name%3Dcm1");
  ASSERT_EQ(r.code, 200) << r.body;
  EXPECT_EQ(r.At({"items"})->Size(), 1u);
  // resourceVersion=0: from the watch cache, which ignores the limit.
  r = s.Get(std::string(kConfigMaps) + "?limit=" + kInt64Max +
            "&resourceVersion=0");
  ASSERT_EQ(r.code, 200) << r.body;
  EXPECT_EQ(r.At({"items"})->Size(), 3u);
  // Out of int64: 400.
  ExpectStatus(s.Get(std::string(kConfigMaps) + "?limit=9223372036854775808"),
               400, "BadRequest");
}

TEST(ApiParamsTest, ContinueTokenAndResourceVersionAtInt64Max) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  std::string json =
      R"({"v":"meta.k8s.io/v1","rv":)" + kInt64Max + R"(,"start":"a\u0000"})";
  std::string token = Base64Encode(json);
  for (char& c : token) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!token.empty() && token.back() == '=') token.pop_back();
  Response r = s.Get(std::string(kConfigMaps) + "?limit=1&continue=" + token);
  ExpectStatus(r, 504, "Timeout");
  // An exact list at it, from the store.
  r = s.Get(std::string(kConfigMaps) + "?resourceVersion=" + kInt64Max +
            "&resourceVersionMatch=Exact");
  ExpectStatus(r, 504, "Timeout");
  // One past int64: not a resource version.
  ExpectStatus(
      s.Get(std::string(kConfigMaps) + "?resourceVersion=9223372036854775808"),
      400, "BadRequest");
}

TEST(ApiParamsTest, HugeWatchTimeoutIsCappedNotOverflowed) {
  TestServer s;
  Response created = s.Post(kConfigMaps, ConfigMap("a"));
  ASSERT_EQ(created.code, 201);
  auto w = s.Watch(
      std::string(kConfigMaps) + "?watch=1&timeoutSeconds=" + kInt64Max +
      "&resourceVersion=" + created.Str({"metadata", "resourceVersion"}));
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("b")).code, 201);
  rapidjson::Document ev = w->NextJson();
  ASSERT_TRUE(ev.IsObject());
  EXPECT_STREQ(ev["type"].GetString(), "ADDED");
}

TEST(ApiParamsTest, ParsedTimeoutIsCapped) {
  net::HttpRequest req;
  req.method = "GET";
  req.query.emplace("timeoutSeconds", kInt64Max);
  ApiResult<ListParams> p = ParseListParams(req, true);
  ASSERT_TRUE(std::holds_alternative<ListParams>(p));
  EXPECT_EQ(std::get<ListParams>(p).timeout_seconds,
            kMaxRequestDurationSeconds);
}

TEST(ApiParamsTest, HugeGracePeriodsAreCapped) {
  TestServer s;
  ASSERT_EQ(s.Post(kPods, BoundPod("p1", "")).code, 201);
  // gracePeriodSeconds=INT64_MAX: "now + grace" would overflow.
  Response d =
      s.Delete(std::string(kPods) + "/p1?gracePeriodSeconds=" + kInt64Max);
  ASSERT_EQ(d.code, 200) << d.body;
  const rapidjson::Value* grace =
      d.At({"metadata", "deletionGracePeriodSeconds"});
  ASSERT_NE(grace, nullptr) << d.body;
  EXPECT_EQ(grace->GetInt64(), kMaxRequestDurationSeconds);
  // 100 years from now (the clock is real: 2126 or so).
  const std::string ts = d.Str({"metadata", "deletionTimestamp"});
  ASSERT_EQ(ts.size(), 20u) << ts;
  EXPECT_GE(std::stoi(ts.substr(0, 4)), 2100) << ts;
  // Shortening it to 0 deletes the pod.
  d = s.Delete(std::string(kPods) + "/p1?gracePeriodSeconds=0");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_EQ(s.Get(std::string(kPods) + "/p1").code, 404);

  // The same in a DeleteOptions body.
  ASSERT_EQ(s.Post(kPods, BoundPod("p2", "")).code, 201);
  d = s.Delete(std::string(kPods) + "/p2",
               R"({"kind":"DeleteOptions","apiVersion":"v1",)"
               R"("gracePeriodSeconds":)" +
                   kInt64Max + "}");
  ASSERT_EQ(d.code, 200) << d.body;
  grace = d.At({"metadata", "deletionGracePeriodSeconds"});
  ASSERT_NE(grace, nullptr) << d.body;
  EXPECT_EQ(grace->GetInt64(), kMaxRequestDurationSeconds);

  // The pod's own terminationGracePeriodSeconds is the default grace.
  ASSERT_EQ(s.Post(kPods, BoundPod("p3", R"("terminationGracePeriodSeconds":)" +
                                             kInt64Max + ","))
                .code,
            201);
  d = s.Delete(std::string(kPods) + "/p3");
  ASSERT_EQ(d.code, 200) << d.body;
  grace = d.At({"metadata", "deletionGracePeriodSeconds"});
  ASSERT_NE(grace, nullptr) << d.body;
  EXPECT_EQ(grace->GetInt64(), kMaxRequestDurationSeconds);
}

// Members given twice in a patch body. Kubernetes decodes a JSON patch
// operation as a Go map and merge and strategic merge patches into
// map[string]interface{}: the last of the two counts. Under
// fieldValidation=Warn (the default) each duplicate is a warning, as
// sigs.k8s.io/json's strict decoding names it; under Strict the patch fails.
struct DuplicatePatch {
  const char* name;
  const char* content_type;
  const char* body;
  const char* want_a;
  const char* want_b;
  const char* finding;  // the strict decoding error
};
const DuplicatePatch kDuplicatePatches[] = {
    {"jp-path", "application/json-patch+json",
     R"([{"op":"replace","path":"/data/a","path":"/data/b","value":"k1"}])",
     "x", "k1", R"(json patch duplicate field "[0].path")"},
    {"jp-value", "application/json-patch+json",
     R"([{"op":"replace","path":"/data/a","value":"j1","value":"j2"}])", "j2",
     "y", R"(json patch duplicate field "[0].value")"},
    {"smp", "application/strategic-merge-patch+json",
     R"({"data":{"a":"1"},"data":{"b":"2"}})", "x", "2",
     R"(duplicate field "data")"},
    {"merge", "application/merge-patch+json",
     R"({"data":{"a":"1"},"data":{"b":"2"}})", "x", "2",
     R"(duplicate field "data")"},
};

std::string TwoKeyConfigMap(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
         name + R"("},"data":{"a":"x","b":"y"}})";
}

// The Warning header kube-apiserver sends for a strict decoding finding.
std::string WarningFor(std::string_view finding) {
  std::string out = "299 - \"";
  for (char c : finding) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

TEST(ApiParamsTest, DuplicateMembersInPatchBodiesLastWinsAndWarns) {
  TestServer s;
  for (const DuplicatePatch& c : kDuplicatePatches) {
    SCOPED_TRACE(c.name);
    for (const char* validation : {"", "?fieldValidation=Warn"}) {
      const std::string name = std::string(c.name) + (*validation ? "-w" : "");
      ASSERT_EQ(s.Post(kConfigMaps, TwoKeyConfigMap(name)).code, 201);
      Response r = s.Patch(std::string(kConfigMaps) + "/" + name + validation,
                           c.body, c.content_type);
      ASSERT_EQ(r.code, 200) << r.body;
      EXPECT_EQ(r.Str({"data", "a"}), c.want_a) << r.body;
      EXPECT_EQ(r.Str({"data", "b"}), c.want_b) << r.body;
      EXPECT_THAT(r.headers.GetAll("Warning"),
                  ::testing::ElementsAre(WarningFor(c.finding)));
      Response got = s.Get(std::string(kConfigMaps) + "/" + name);
      EXPECT_EQ(got.Str({"data", "a"}), c.want_a) << got.body;
      EXPECT_EQ(got.Str({"data", "b"}), c.want_b) << got.body;
    }
    // Ignore: the same result, silently.
    const std::string name = std::string(c.name) + "-i";
    ASSERT_EQ(s.Post(kConfigMaps, TwoKeyConfigMap(name)).code, 201);
    Response r = s.Patch(
        std::string(kConfigMaps) + "/" + name + "?fieldValidation=Ignore",
        c.body, c.content_type);
    ASSERT_EQ(r.code, 200) << r.body;
    EXPECT_EQ(r.Str({"data", "a"}), c.want_a) << r.body;
    EXPECT_EQ(r.Str({"data", "b"}), c.want_b) << r.body;
    EXPECT_FALSE(r.headers.Has("Warning"));
  }
}

TEST(ApiParamsTest, DuplicateMembersInPatchBodiesFailStrictValidation) {
  TestServer s;
  for (const DuplicatePatch& c : kDuplicatePatches) {
    SCOPED_TRACE(c.name);
    const std::string url = std::string(kConfigMaps) + "/" + c.name;
    ASSERT_EQ(s.Post(kConfigMaps, TwoKeyConfigMap(c.name)).code, 201);
    Response r =
        s.Patch(url + "?fieldValidation=Strict", c.body, c.content_type);
    ExpectStatus(r, 400, "BadRequest");
    // kube-apiserver's message ends with the strict decoding error.
    EXPECT_THAT(r.Str({"message"}),
                ::testing::EndsWith(std::string("strict decoding error: ") +
                                    c.finding));
    Response got = s.Get(url);
    EXPECT_EQ(got.Str({"data", "a"}), "x") << got.body;
    EXPECT_EQ(got.Str({"data", "b"}), "y") << got.body;
  }
}

// The findings in the patch body come first, then those of the patched
// object, as kube-apiserver lists them.
TEST(ApiParamsTest, PatchBodyFindingsPrecedeThePatchedObjects) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, TwoKeyConfigMap("order")).code, 201);
  const std::string url = std::string(kConfigMaps) + "/order";
  // "foo" is unknown to an operation; given twice, it is named once.
  const char* body =
      R"([{"op":"add","path":"/bogus","value":1},)"
      R"({"op":"add","path":"/data/c","value":"v","foo":"bar","foo":"baz"},)"
      R"({"op":"add","path":"/data/d","value":"w","op":"add"}])";
  Response strict = s.Patch(url + "?fieldValidation=Strict", body,
                            "application/json-patch+json");
  ExpectStatus(strict, 400, "BadRequest");
  EXPECT_THAT(
      strict.Str({"message"}),
      ::testing::EndsWith(
          R"(strict decoding error: json patch unknown field "[1].foo", )"
          R"(json patch duplicate field "[2].op", unknown field "bogus")"));
  Response warned = s.Patch(url, body, "application/json-patch+json");
  ASSERT_EQ(warned.code, 200) << warned.body;
  EXPECT_EQ(warned.Str({"data", "c"}), "v");
  EXPECT_EQ(warned.Str({"data", "d"}), "w");
  EXPECT_THAT(warned.headers.GetAll("Warning"),
              ::testing::ElementsAre(
                  WarningFor(R"(json patch unknown field "[1].foo")"),
                  WarningFor(R"(json patch duplicate field "[2].op")"),
                  WarningFor(R"(unknown field "bogus")")));
}

}  // namespace
}  // namespace kplane::apiserver
