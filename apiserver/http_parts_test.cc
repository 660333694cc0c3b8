// Unit tests of the apiserver's pure parts: content negotiation, request
// paths, query parameters, the status table and discovery documents.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <string>

#include "apiserver/browser_guard.h"
#include "apiserver/discovery.h"
#include "apiserver/errors.h"
#include "apiserver/impersonation.h"
#include "apiserver/negotiation.h"
#include "apiserver/query_params.h"
#include "apiserver/request_info.h"
#include "net/url.h"

namespace kplane::apiserver {
namespace {

net::HttpRequest Req(std::string method, std::string target) {
  net::HttpRequest r;
  r.method = std::move(method);
  r.target = target;
  const size_t q = target.find('?');
  r.path = target.substr(0, q);
  if (q != std::string::npos) {
    r.raw_query = target.substr(q + 1);
    auto parsed = net::ParseQuery(r.raw_query);
    EXPECT_TRUE(parsed.ok());
    r.query = *parsed;
  }
  return r;
}

TEST(NegotiationTest, KubectlTableAccept) {
  auto n = NegotiateResponse(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/"
      "json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
      {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->shape, ResponseShape::kTable);
  EXPECT_EQ(n->meta_version, "v1");
  EXPECT_EQ(n->ContentType(), "application/json");
}

TEST(NegotiationTest, TableRefusedFallsBackToJson) {
  NegotiateOptions o;
  o.allow_table = false;
  auto n = NegotiateResponse(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", o);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->shape, ResponseShape::kObject);
  EXPECT_EQ(n->media, objects::MediaType::kJson);
}

TEST(NegotiationTest, ProtobufFirstAndQValues) {
  auto n = NegotiateResponse(
      "application/vnd.kubernetes.protobuf,application/json", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kProtobuf);
  n = NegotiateResponse(
      "application/vnd.kubernetes.protobuf;q=0.5,application/yaml", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kYaml);
  n = NegotiateResponse("", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kJson);
  n = NegotiateResponse("*/*", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kJson);
  EXPECT_FALSE(NegotiateResponse("text/html", {}));
}

// At equal q a concrete type goes before a wildcard, whatever the order
// (kube's goautoneg sorts by q, then type, then subtype specificity).
TEST(NegotiationTest, ConcreteTypesBeforeWildcardsAtEqualQ) {
  auto n = NegotiateResponse("*/*, application/vnd.kubernetes.protobuf", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kProtobuf);
  n = NegotiateResponse("application/*,application/yaml", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kYaml);
  // q still comes first.
  n = NegotiateResponse("*/*, application/yaml;q=0.9", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->media, objects::MediaType::kJson);
}

TEST(NegotiationTest, MetadataShape) {
  auto n = NegotiateResponse(
      "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->shape, ResponseShape::kMetadata);
  EXPECT_EQ(n->media, objects::MediaType::kJson);
  // What kube's metadata informers send: protobuf first.
  n = NegotiateResponse(
      "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;"
      "g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;"
      "g=meta.k8s.io;v=v1,application/json",
      {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->shape, ResponseShape::kMetadata);
  EXPECT_EQ(n->media, objects::MediaType::kProtobuf);
  EXPECT_EQ(n->meta_version, "v1");
  // Not in YAML; a Table only in JSON.
  n = NegotiateResponse(
      "application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
      "application/json",
      {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->shape, ResponseShape::kObject);
  n = NegotiateResponse(
      "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,"
      "application/json",
      {});
  ASSERT_TRUE(n);
  EXPECT_EQ(n->shape, ResponseShape::kObject);
  EXPECT_EQ(n->media, objects::MediaType::kJson);
}

// The form asked for must fit the verb; kube's words and internal types.
TEST(NegotiationTest, MetadataFormMustFitTheVerb) {
  auto list_form = NegotiateResponse(
      "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", {});
  auto one_form = NegotiateResponse(
      "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", {});
  ASSERT_TRUE(list_form && one_form);
  EXPECT_TRUE(list_form->metadata_list);
  EXPECT_FALSE(one_form->metadata_list);
  EXPECT_EQ(MetadataFormMismatch(*list_form, /*list=*/true, "*core.PodList"),
            "");
  EXPECT_EQ(MetadataFormMismatch(*one_form, /*list=*/false, "*core.Pod"), "");
  EXPECT_EQ(MetadataFormMismatch(*list_form, /*list=*/false, "*core.Pod"),
            "you requested PartialObjectMetadataList, but the requested "
            "object is not a list (*core.Pod)");
  EXPECT_EQ(MetadataFormMismatch(*one_form, /*list=*/true, "*core.PodList"),
            "you requested PartialObjectMetadata, but the requested object "
            "is a list (*core.PodList)");
  auto plain = NegotiateResponse("application/json", {});
  ASSERT_TRUE(plain);
  EXPECT_EQ(MetadataFormMismatch(*plain, /*list=*/true, "*core.PodList"), "");

  const objects::Scheme& scheme = objects::Scheme::Default();
  struct Case {
    const char* group;
    const char* version;
    const char* resource;
    const char* one;
  } cases[] = {
      {"", "v1", "pods", "*core.Pod"},
      {"apps", "v1", "deployments", "*apps.Deployment"},
      {"coordination.k8s.io", "v1", "leases", "*coordination.Lease"},
      {"rbac.authorization.k8s.io", "v1", "roles", "*rbac.Role"},
      {"events.k8s.io", "v1", "events", "*core.Event"},
  };
  for (const Case& c : cases) {
    const objects::ResourceInfo* r =
        scheme.FindResource(c.group, c.version, c.resource);
    ASSERT_NE(r, nullptr) << c.resource;
    EXPECT_EQ(GoTypeName(*r, false, false), c.one);
    EXPECT_EQ(GoTypeName(*r, false, true), std::string(c.one) + "List");
  }
  const objects::ResourceInfo* pods = scheme.FindResource("", "v1", "pods");
  EXPECT_EQ(GoTypeName(*pods, /*custom=*/true, false),
            "*unstructured.Unstructured");
  EXPECT_EQ(GoTypeName(*pods, /*custom=*/true, true),
            "*unstructured.UnstructuredList");
}

TEST(NegotiationTest, AggregatedDiscoveryOnlyOnExactV2) {
  EXPECT_TRUE(WantsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as="
      "APIGroupDiscoveryList,application/json"));
  // kubectl 1.27-1.29 ask only for v2beta1: they get the legacy documents.
  EXPECT_FALSE(WantsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as="
      "APIGroupDiscoveryList,application/json"));
  EXPECT_FALSE(WantsAggregatedDiscovery("application/json, */*"));
}

TEST(NegotiationTest, PatchTypes) {
  EXPECT_EQ(ParsePatchType("application/merge-patch+json"),
            PatchType::kMergePatch);
  EXPECT_EQ(ParsePatchType("application/strategic-merge-patch+json"),
            PatchType::kStrategicMergePatch);
  EXPECT_EQ(ParsePatchType("application/json-patch+json; charset=utf-8"),
            PatchType::kJsonPatch);
  EXPECT_EQ(ParsePatchType("application/apply-patch+yaml"), PatchType::kApply);
  EXPECT_FALSE(ParsePatchType("application/json"));
}

TEST(RequestInfoTest, Paths) {
  auto i = ParseRequestInfo(Req("GET", "/api/v1/namespaces/default/pods"));
  ASSERT_TRUE(i.ok());
  EXPECT_TRUE(i->is_resource_request);
  EXPECT_EQ(i->verb, "list");
  EXPECT_EQ(i->ns, "default");
  EXPECT_EQ(i->resource, "pods");

  i = ParseRequestInfo(Req("GET", "/api/v1/pods?watch=True"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->verb, "watch");
  EXPECT_EQ(i->ns, "");

  i = ParseRequestInfo(
      Req("PATCH", "/apis/apps/v1/namespaces/d/deployments/web/scale"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->group, "apps");
  EXPECT_EQ(i->verb, "patch");
  EXPECT_EQ(i->name, "web");
  EXPECT_EQ(i->subresource, "scale");

  i = ParseRequestInfo(Req("GET", "/api/v1/namespaces/default"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->resource, "namespaces");
  EXPECT_EQ(i->name, "default");
  EXPECT_EQ(i->ns, "");
  EXPECT_EQ(i->verb, "get");

  i = ParseRequestInfo(Req("PUT", "/api/v1/namespaces/x/status"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->resource, "namespaces");
  EXPECT_EQ(i->name, "x");
  EXPECT_EQ(i->subresource, "status");

  i = ParseRequestInfo(Req("DELETE", "/api/v1/namespaces/d/configmaps"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->verb, "deletecollection");

  i = ParseRequestInfo(Req("GET", "/api/v1/watch/namespaces/d/pods/x"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->verb, "watch");
  EXPECT_EQ(i->name, "x");

  i = ParseRequestInfo(Req("GET", "/apis/apps/v1"));
  ASSERT_TRUE(i.ok());
  EXPECT_FALSE(i->is_resource_request);

  i = ParseRequestInfo(Req("GET", "/api/v1/namespaces/d/pods/x/status/extra"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->subresource, "status/extra");

  EXPECT_FALSE(ParseRequestInfo(Req("GET", "/api/v1/pods?watch=yes")).ok());
}

TEST(QueryParamsTest, GoBooleansAndLimits) {
  auto p = ParseListParams(
      Req("GET", "/x?allowWatchBookmarks=True&limit=2&timeoutSeconds=30"),
      true);
  ASSERT_TRUE(std::holds_alternative<ListParams>(p));
  const ListParams& lp = std::get<ListParams>(p);
  EXPECT_TRUE(lp.allow_watch_bookmarks);
  EXPECT_EQ(lp.limit, 2);
  EXPECT_EQ(lp.timeout_seconds, 30);
  p = ParseListParams(Req("GET", "/x?limit=abc"), false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  EXPECT_EQ(std::get<ApiError>(p).code, 400);
}

TEST(QueryParamsTest, ResourceVersionMatchRules) {
  auto p = ParseListParams(Req("GET", "/x?resourceVersionMatch=Exact"), false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  const ApiError& e = std::get<ApiError>(p);
  EXPECT_EQ(e.code, 422);
  EXPECT_EQ(e.reason, "Invalid");
  EXPECT_NE(e.message.find("resourceVersionMatch is forbidden unless "
                           "resourceVersion is provided"),
            std::string::npos)
      << e.message;
  p = ParseListParams(
      Req("GET", "/x?resourceVersion=0&resourceVersionMatch=Exact"), false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  p = ParseListParams(Req("GET", "/x?sendInitialEvents=true"), false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  // Watch: sendInitialEvents needs NotOlderThan.
  p = ParseListParams(Req("GET", "/x?sendInitialEvents=true"), true);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  EXPECT_NE(std::get<ApiError>(p).message.find(
                "sendInitialEvents requires setting resourceVersionMatch to "
                "NotOlderThan"),
            std::string::npos);
  p = ParseListParams(Req("GET",
                          "/x?sendInitialEvents=true&resourceVersionMatch="
                          "NotOlderThan"),
                      true);
  EXPECT_TRUE(std::holds_alternative<ListParams>(p));
}

TEST(QueryParamsTest, WriteParams) {
  auto p = ParseWriteParams(
      Req("POST", "/x?dryRun=All&fieldManager=m&fieldValidation=Strict"),
      false);
  ASSERT_TRUE(std::holds_alternative<WriteParams>(p));
  EXPECT_TRUE(std::get<WriteParams>(p).dry_run);
  EXPECT_EQ(std::get<WriteParams>(p).field_validation,
            FieldValidation::kStrict);
  p = ParseWriteParams(Req("PATCH", "/x"), /*is_apply_patch=*/true);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  EXPECT_EQ(std::get<ApiError>(p).code, 422);
  p = ParseWriteParams(Req("PATCH", "/x?force=true"), false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
  p = ParseWriteParams(Req("POST", "/x?dryRun=Some"), false);
  ASSERT_TRUE(std::holds_alternative<ApiError>(p));
}

TEST(QueryParamsTest, DeleteOptionsFromBodyAndQuery) {
  net::HttpRequest r = Req("DELETE", "/x?gracePeriodSeconds=5");
  r.headers.Add("Content-Type", "application/json");
  auto o = ParseDeleteOptions(r, R"({"propagationPolicy":"Foreground"})");
  ASSERT_TRUE(std::holds_alternative<objects::metav1::DeleteOptions>(o));
  const auto& d = std::get<objects::metav1::DeleteOptions>(o);
  EXPECT_EQ(d.graceperiodseconds(), 5);
  EXPECT_EQ(d.propagationpolicy(), "Foreground");
  o = ParseDeleteOptions(r, R"({"propagationPolicy":"Sideways"})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(o));
  EXPECT_EQ(std::get<ApiError>(o).code, 422);
}

TEST(ErrorsTest, StatusTable) {
  EXPECT_EQ(MapStatusCode(StatusCode::kNotFound).http_code, 404);
  EXPECT_EQ(MapStatusCode(StatusCode::kConflict).reason, "Conflict");
  EXPECT_EQ(MapStatusCode(StatusCode::kAlreadyExists).http_code, 409);
  EXPECT_EQ(MapStatusCode(StatusCode::kExpired).http_code, 410);
  EXPECT_EQ(MapStatusCode(StatusCode::kCompacted).reason, "Expired");
  EXPECT_EQ(MapStatusCode(StatusCode::kInvalidArgument).http_code, 400);
  EXPECT_EQ(MapStatusCode(StatusCode::kTooLarge).http_code, 413);
  EXPECT_EQ(MapStatusCode(StatusCode::kResourceExhausted).http_code, 429);
  EXPECT_EQ(MapStatusCode(StatusCode::kDeadlineExceeded).http_code, 504);
  EXPECT_EQ(MapStatusCode(StatusCode::kUnavailable).http_code, 503);
  EXPECT_EQ(MapStatusCode(StatusCode::kIOError).http_code, 500);
  ApiError e = ApiError::FromStatus(IOError("disk gone"));
  EXPECT_EQ(e.message, "Internal error occurred: disk gone");
  objects::metav1::Status s = e.ToStatus();
  EXPECT_EQ(s.code(), 500);
  EXPECT_EQ(s.status(), "Failure");
}

TEST(DiscoveryTest, Documents) {
  Discovery d(objects::Scheme::Default(), "127.0.0.1:6443");
  rapidjson::Document doc;
  doc.Parse(d.ResourceList("", "v1")->c_str());
  ASSERT_TRUE(doc.IsObject());
  bool pods = false, status = false, binding = false;
  for (const auto& r : doc["resources"].GetArray()) {
    const std::string name = r["name"].GetString();
    if (name == "pods") {
      pods = true;
      EXPECT_STREQ(r["shortNames"][0].GetString(), "po");
      EXPECT_STREQ(r["categories"][0].GetString(), "all");
      EXPECT_TRUE(r.HasMember("storageVersionHash"));
    }
    if (name == "pods/status") status = true;
    if (name == "pods/binding") binding = true;
  }
  EXPECT_TRUE(pods && status && binding);
  doc.Parse(d.ResourceList("apps", "v1")->c_str());
  bool scale = false;
  for (const auto& r : doc["resources"].GetArray()) {
    if (std::string(r["name"].GetString()) == "deployments/scale") {
      scale = true;
      EXPECT_STREQ(r["group"].GetString(), "autoscaling");
      EXPECT_STREQ(r["kind"].GetString(), "Scale");
    }
  }
  EXPECT_TRUE(scale);
  doc.Parse(d.ApiGroupList().c_str());
  // Names, not a count: each new group would otherwise break this line.
  std::set<std::string> groups;
  for (const auto& g : doc["groups"].GetArray()) {
    groups.insert(g["name"].GetString());
  }
  for (const char* want :
       {"apps", "batch", "coordination.k8s.io", "discovery.k8s.io",
        "events.k8s.io", "policy", "rbac.authorization.k8s.io",
        "authorization.k8s.io", "authentication.k8s.io"}) {
    EXPECT_EQ(groups.count(want), 1u) << want;
  }
  EXPECT_EQ(groups.size(), doc["groups"].Size()) << "a group listed twice";
  EXPECT_EQ(d.ResourceList("apps", "v2"), nullptr);
  doc.Parse(d.Version().c_str());
  EXPECT_STREQ(doc["minor"].GetString(), "32");
  EXPECT_STREQ(doc["gitVersion"].GetString(), "v1.32.4");
}

TEST(DiscoveryTest, OpenApiDeclaresFieldValidationForEveryKind) {
  Discovery d(objects::Scheme::Default(), "127.0.0.1:6443");
  rapidjson::Document index;
  index.Parse(d.OpenApiIndex().c_str());
  ASSERT_TRUE(index.IsObject());
  for (const char* gv :
       {"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"}) {
    ASSERT_TRUE(index["paths"].HasMember(gv)) << gv;
    std::string url = index["paths"][gv]["serverRelativeURL"].GetString();
    EXPECT_NE(url.find("?hash="), std::string::npos);
    const std::string* doc = d.OpenApiDocument(gv);
    ASSERT_NE(doc, nullptr);
    rapidjson::Document o;
    o.Parse(doc->c_str());
    ASSERT_TRUE(o.HasMember("components"));
    int patches = 0;
    for (const auto& p : o["paths"].GetObject()) {
      if (!p.value.HasMember("patch")) continue;
      ++patches;
      bool fv = false;
      for (const auto& param : p.value["patch"]["parameters"].GetArray()) {
        fv |= std::string(param["name"].GetString()) == "fieldValidation";
      }
      EXPECT_TRUE(fv) << p.name.GetString();
      EXPECT_TRUE(
          p.value["patch"].HasMember("x-kubernetes-group-version-kind"));
    }
    EXPECT_GT(patches, 0) << gv;
  }
}

// Without authentication, what a browser may have been made to send is
// refused: another origin's request, a rebound DNS name.
TEST(BrowserGuard, RefusesCrossOriginAndReboundNames) {
  auto refusal = [](std::string host, std::string origin) {
    net::HttpRequest r;
    if (!host.empty()) r.headers.Add("Host", host);
    if (!origin.empty()) r.headers.Add("Origin", origin);
    std::optional<std::string> why = UnauthenticatedBrowserRefusal(r);
    return why.value_or("");
  };
  // kubectl and the client libraries: no Origin.
  for (const char* host : {"127.0.0.1:6443", "[::1]:6443", "localhost:6443",
                           "apiserver:6443", "x", "10.1.2.3", ""}) {
    EXPECT_EQ(refusal(host, ""), "") << host;
  }
  // The web view's own pages.
  EXPECT_EQ(refusal("127.0.0.1:6443", "http://127.0.0.1:6443"), "");
  EXPECT_EQ(refusal("[::1]:6443", "http://[::1]:6443"), "");
  EXPECT_EQ(refusal("localhost:6443", "HTTP://LOCALHOST:6443"), "");
  // Another page's fetch or form, or a sandboxed one.
  EXPECT_EQ(refusal("127.0.0.1:6443", "https://evil.example"),
            "cross-origin request from \"https://evil.example\" refused: a "
            "server without authentication answers browsers only from its "
            "own pages");
  EXPECT_NE(refusal("127.0.0.1:6443", "http://127.0.0.1:8080"), "");
  EXPECT_NE(refusal("127.0.0.1:6443", "null"), "");
  // A name the attacker resolves to 127.0.0.1 (same-origin to the browser).
  EXPECT_EQ(refusal("rebind.evil.example:6443", ""),
            "host \"rebind.evil.example\" refused: a server without "
            "authentication answers only requests for an IP address, a name "
            "without a dot, or this host's name");
  EXPECT_NE(
      refusal("rebind.evil.example:6443", "http://rebind.evil.example:6443"),
      "");
}

// The Impersonate-* headers as kube's filter reads them: the checks in its
// order, the user with its implied groups.
TEST(Impersonation, ParsesChecksAndBuildsTheUser) {
  net::HttpHeaders h{{"Impersonate-User", "jane"},
                     {"impersonate-group", "dev"},
                     {"Impersonate-Group", "ops"},
                     {"Impersonate-Extra-Acme.com%2Fscopes", "view"},
                     {"Impersonate-Uid", "42"},
                     {"Accept", "application/json"}};
  StatusOr<std::optional<Impersonation>> imp = ParseImpersonation(h);
  ASSERT_TRUE(imp.ok()) << imp.status();
  ASSERT_TRUE(imp->has_value());
  std::vector<std::string> checks;
  for (const auth::Attributes& a :
       ImpersonationChecks({.name = "alice"}, **imp)) {
    EXPECT_EQ(a.user.name, "alice");
    EXPECT_EQ(a.verb, "impersonate");
    checks.push_back(a.api_group + "/" + a.resource +
                     (a.subresource.empty() ? "" : "/" + a.subresource) + " " +
                     a.ns + "/" + a.name);
  }
  EXPECT_EQ(checks,
            (std::vector<std::string>{
                "/users /jane", "/groups /dev", "/groups /ops",
                "authentication.k8s.io/userextras/acme.com/scopes /view",
                "authentication.k8s.io/uids /42"}));
  auth::UserInfo u = ImpersonatedUser(**imp);
  EXPECT_EQ(u.name, "jane");
  EXPECT_EQ(u.uid, "42");
  EXPECT_EQ(u.groups,
            (std::vector<std::string>{"dev", "ops", "system:authenticated"}));
  // A ServiceAccount: checked in its namespace, its groups implied.
  imp = ParseImpersonation(
      {{"Impersonate-User", "system:serviceaccount:team:robot"}});
  ASSERT_TRUE(imp.ok() && imp->has_value());
  auth::Attributes sa = ImpersonationChecks({}, **imp).at(0);
  EXPECT_EQ(sa.resource + " " + sa.ns + "/" + sa.name,
            "serviceaccounts team/robot");
  EXPECT_EQ(ImpersonatedUser(**imp).groups,
            (std::vector<std::string>{"system:serviceaccounts",
                                      "system:serviceaccounts:team",
                                      "system:authenticated"}));
  imp = ParseImpersonation({{"Impersonate-User", "system:anonymous"}});
  ASSERT_TRUE(imp.ok() && imp->has_value());
  EXPECT_EQ(ImpersonatedUser(**imp).groups,
            std::vector<std::string>{"system:unauthenticated"});
  // None, and parts without a user.
  imp = ParseImpersonation({{"Accept", "*/*"}});
  ASSERT_TRUE(imp.ok());
  EXPECT_FALSE(imp->has_value());
  EXPECT_EQ(ParseImpersonation({{"Impersonate-Uid", "1"}}).status().message(),
            "requested [uid \"1\"] without impersonating a user");
  EXPECT_FALSE(ParseImpersonation(
                   {{"Impersonate-User", "x"}, {"Impersonate-Extra-%zz", "v"}})
                   .ok());
}

}  // namespace
}  // namespace kplane::apiserver
