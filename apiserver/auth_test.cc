// Authentication and authorization wired into the API server (issue 18),
// end to end over HTTPS: certificates from net/pki.h (an admin in
// system:masters, users, a node, a certificate of another CA), a static
// token file, anonymous requests, RBAC objects created through the API and
// taking effect without a restart, the escalation check, the review
// resources, and the real kubectl's `auth can-i` and `auth whoami`.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "apiserver/test_server.h"
#include "base/base64.h"
#include "base/mutex.h"
#include "base/subprocess.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;
using testing::ToResponse;

constexpr char kUnauthorized[] =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
    R"("message":"Unauthorized","reason":"Unauthorized","code":401})";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-authz-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    net::Pki pki({.dir = dir_ + "/pki"});
    StatusOr<net::KeyPair> ca = pki.EnsureCa();
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    StatusOr<net::KeyPair> server =
        pki.EnsureCertificate("apiserver", {.common_name = "kube-apiserver",
                                            .dns_names = {"localhost"},
                                            .ip_addresses = {"127.0.0.1"},
                                            .server_auth = true});
    ASSERT_TRUE(server.ok()) << server.status();
    auto client = [&](const std::string& file, const std::string& cn,
                      std::vector<std::string> orgs) {
      StatusOr<net::KeyPair> p =
          pki.EnsureCertificate(file, {.common_name = cn,
                                       .organizations = std::move(orgs),
                                       .client_auth = true});
      EXPECT_TRUE(p.ok()) << p.status();
      return p.ok() ? *p : net::KeyPair{};
    };
    admin_ = client("admin", "kubernetes-admin", {"system:masters"});
    alice_ = client("alice", "alice", {"dev"});
    node1_ = client("node-1", "system:node:node-1", {"system:nodes"});
    // A certificate for "admin" in system:masters, signed by another CA.
    StatusOr<net::KeyPair> other_ca =
        net::GenerateCa("other-ca", std::chrono::system_clock::now());
    ASSERT_TRUE(other_ca.ok());
    StatusOr<net::KeyPair> forged =
        net::IssueCertificate(*other_ca,
                              {.common_name = "kubernetes-admin",
                               .organizations = {"system:masters"},
                               .client_auth = true},
                              std::chrono::system_clock::now());
    ASSERT_TRUE(forged.ok());
    forged_ = *forged;

    std::ofstream(dir_ + "/tokens.csv")
        << "bob-token-123,bob,1002,\"ops,dev\"\n";
    StatusOr<std::shared_ptr<const net::TlsContext>> tls =
        net::TlsContext::NewServer({.cert_pem = server->cert_pem,
                                    .key_pem = server->key_pem,
                                    .client_ca_pem = ca_.cert_pem,
                                    .client_auth = net::ClientAuth::kRequest});
    ASSERT_TRUE(tls.ok()) << tls.status();
    server_ = std::make_unique<TestServer>([&](ApiServerOptions* o) {
      o->tls = *tls;
      o->auth.enabled = true;
      o->auth.token_auth_file = dir_ + "/tokens.csv";
      Tweak(o);
    });
  }
  // Options a derived fixture changes.
  virtual void Tweak(ApiServerOptions*) {}
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A client presenting `cert` (none if empty), trusting our CA.
  std::unique_ptr<net::HttpClient> Client(const net::KeyPair& cert = {}) {
    StatusOr<std::shared_ptr<const net::TlsContext>> ctx =
        net::TlsContext::NewClient({.ca_pem = ca_.cert_pem,
                                    .cert_pem = cert.cert_pem,
                                    .key_pem = cert.key_pem});
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    return std::make_unique<net::HttpClient>(
        "127.0.0.1", server_->port(), net::HttpClientOptions{.tls = *ctx});
  }
  Response Do(const net::KeyPair& cert, std::string_view method,
              std::string_view target, std::string_view body = {},
              net::HttpHeaders headers = {}) {
    if (!body.empty() && !headers.Has("Content-Type")) {
      headers.Add("Content-Type", "application/json");
    }
    return ToResponse(Client(cert)->Request(method, target, headers, body));
  }
  Response WithToken(std::string_view token, std::string_view method,
                     std::string_view target, std::string_view body = {}) {
    net::HttpHeaders h{{"Authorization", "Bearer " + std::string(token)}};
    if (!body.empty()) h.Add("Content-Type", "application/json");
    return ToResponse(Client()->Request(method, target, h, body));
  }
  // Repeats `request` until it answers `code` (a binding takes effect when
  // its watch event reaches the policy cache, within moments).
  Response AwaitCode(int code, const std::function<Response()>& request) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    Response r = request();
    while (r.code != code && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
      r = request();
    }
    return r;
  }

  std::string dir_;
  net::KeyPair ca_, admin_, alice_, node1_, forged_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(AuthTest, AnonymousReachesOnlyHealthAndVersion) {
  net::KeyPair none;
  for (const char* path : {"/healthz", "/livez", "/readyz", "/version"}) {
    EXPECT_EQ(Do(none, "GET", path).code, 200) << path;
  }
  // Discovery is for authenticated users (system:discovery), as in kube.
  for (const char* path : {"/api", "/apis", "/api/v1", "/apis/apps/v1"}) {
    EXPECT_EQ(Do(none, "GET", path).code, 403) << path;
    EXPECT_EQ(Do(alice_, "GET", path).code, 200) << path;
  }
  EXPECT_EQ(Do(none, "GET", "/apis").Str({"message"}),
            "forbidden: User \"system:anonymous\" cannot get path \"/apis\"");
  Response pods = Do(none, "GET", "/api/v1/pods");
  EXPECT_EQ(pods.code, 403) << pods.body;
  EXPECT_EQ(pods.Str({"reason"}), "Forbidden");
  EXPECT_EQ(pods.Str({"message"}),
            "pods is forbidden: User \"system:anonymous\" cannot list "
            "resource \"pods\" in API group \"\" at the cluster scope");
  EXPECT_EQ(pods.Str({"details", "kind"}), "pods");
  Response secret = Do(none, "GET", "/api/v1/namespaces/default/secrets/db");
  EXPECT_EQ(secret.code, 403);
  EXPECT_EQ(secret.Str({"message"}),
            "secrets \"db\" is forbidden: User \"system:anonymous\" cannot "
            "get resource \"secrets\" in API group \"\" in the namespace "
            "\"default\"");
  EXPECT_EQ(secret.Str({"details", "name"}), "db");
  Response metrics = Do(none, "GET", "/metrics");
  EXPECT_EQ(metrics.code, 403);
  EXPECT_EQ(metrics.Str({"message"}),
            "forbidden: User \"system:anonymous\" cannot get path "
            "\"/metrics\"");
  // A watch is authorized like any request.
  EXPECT_EQ(Do(none, "GET", "/api/v1/namespaces/default/pods?watch=1").code,
            403);
}

TEST_F(AuthTest, BadCredentialsAre401NeverAnonymous) {
  Response wrong = WithToken("not-a-token", "GET", "/healthz");
  EXPECT_EQ(wrong.code, 401);
  EXPECT_EQ(wrong.body, kUnauthorized);
  EXPECT_EQ(WithToken("not-a-token", "GET", "/api/v1/pods").body,
            kUnauthorized);
  // A certificate another CA signed: the handshake succeeds (the server
  // only requests certificates) and the request is refused, as kube does.
  auto forged_client = [&] {
    StatusOr<std::shared_ptr<const net::TlsContext>> ctx =
        net::TlsContext::NewClient({.ca_pem = ca_.cert_pem,
                                    .cert_pem = forged_.cert_pem,
                                    .key_pem = forged_.key_pem});
    EXPECT_TRUE(ctx.ok());
    return std::make_unique<net::HttpClient>(
        "127.0.0.1", server_->port(), net::HttpClientOptions{.tls = *ctx});
  };
  Response forged =
      ToResponse(forged_client()->Request("GET", "/api/v1/secrets"));
  EXPECT_EQ(forged.code, 401);
  EXPECT_EQ(forged.body, kUnauthorized);
  // With a bearer token too, the token decides (kube's union of
  // authenticators goes on past the certificate's error): a kubeconfig
  // whose certificate expired still works with its token, and a bad token
  // is still 401.
  Response with_token = ToResponse(forged_client()->Request(
      "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      {{"Authorization", "Bearer bob-token-123"},
       {"Content-Type", "application/json"}},
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})"));
  EXPECT_EQ(with_token.code, 201) << with_token.body;
  EXPECT_EQ(with_token.Str({"status", "userInfo", "username"}), "bob");
  EXPECT_EQ(ToResponse(forged_client()->Request(
                           "GET", "/api/v1/secrets",
                           {{"Authorization", "Bearer not-a-token"}}))
                .code,
            401);
}

TEST_F(AuthTest, MastersMayDoEverything) {
  Response created = Do(admin_, "POST", "/api/v1/namespaces/default/configmaps",
                        R"({"metadata":{"name":"c1"},"data":{"a":"1"}})");
  EXPECT_EQ(created.code, 201) << created.body;
  EXPECT_EQ(Do(admin_, "GET", "/api/v1/secrets").code, 200);
  EXPECT_EQ(Do(admin_, "GET", "/metrics").code, 200);
}

TEST_F(AuthTest, BootstrapPolicyIsServedWithAutoupdate) {
  Response crb = Do(admin_, "GET",
                    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"
                    "cluster-admin");
  ASSERT_EQ(crb.code, 200) << crb.body;
  EXPECT_EQ(crb.Str({"roleRef", "name"}), "cluster-admin");
  EXPECT_EQ(crb.Str({"metadata", "annotations",
                     "rbac.authorization.kubernetes.io/autoupdate"}),
            "true");
  Response view =
      Do(admin_, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view");
  EXPECT_EQ(view.code, 200) << view.body;
  // kubectl's table: Name, Role, Age (+ Users, Groups, ServiceAccounts).
  Response table = Do(
      admin_, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      {}, {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}});
  ASSERT_EQ(table.code, 200);
  EXPECT_NE(table.body.find(R"("name":"Role")"), std::string::npos);
  EXPECT_NE(table.body.find(R"("ClusterRole/cluster-admin")"),
            std::string::npos);
}

TEST_F(AuthTest, ViewBindingAllowsReadsAndForbidsWrites) {
  const char* list = "/api/v1/namespaces/default/configmaps";
  Response before = Do(alice_, "GET", list);
  EXPECT_EQ(before.code, 403);
  EXPECT_EQ(before.Str({"message"}),
            "configmaps is forbidden: User \"alice\" cannot list resource "
            "\"configmaps\" in API group \"\" in the namespace \"default\"");
  Response bound =
      Do(admin_, "POST",
         "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
         R"({"metadata":{"name":"alice-view"},
          "roleRef":{"kind":"ClusterRole","name":"view"},
          "subjects":[{"kind":"User","name":"alice"}]})");
  ASSERT_EQ(bound.code, 201) << bound.body;
  // Defaulted as kube: the roleRef's and the User subject's apiGroup.
  EXPECT_EQ(bound.Str({"roleRef", "apiGroup"}), "rbac.authorization.k8s.io");

  EXPECT_EQ(AwaitCode(200, [&] { return Do(alice_, "GET", list); }).code, 200);
  Response create = Do(alice_, "POST", list, R"({"metadata":{"name":"x"}})");
  EXPECT_EQ(create.code, 403);
  EXPECT_EQ(create.Str({"message"}),
            "configmaps is forbidden: User \"alice\" cannot create resource "
            "\"configmaps\" in API group \"\" in the namespace \"default\"");
  EXPECT_EQ(create.Str({"details", "kind"}), "configmaps");
  Response deploy =
      Do(alice_, "DELETE", "/apis/apps/v1/namespaces/default/deployments/web");
  EXPECT_EQ(deploy.Str({"message"}),
            "deployments.apps \"web\" is forbidden: User \"alice\" cannot "
            "delete resource \"deployments\" in API group \"apps\" in the "
            "namespace \"default\"");
  EXPECT_EQ(deploy.Str({"details", "group"}), "apps");
  // view reads no Secrets, and grants nothing in other namespaces.
  EXPECT_EQ(Do(alice_, "GET", "/api/v1/namespaces/default/secrets").code, 403);
  EXPECT_EQ(Do(alice_, "GET", "/api/v1/namespaces/kube-system/configmaps").code,
            403);
  // Watches too.
  auto ok_watch = Client(alice_)->Stream(
      "GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
      {}, "", [](std::string_view) { return true; });
  ASSERT_TRUE(ok_watch.ok());
  EXPECT_EQ(ok_watch->status, 200);

  // Deleting the binding takes the permission away again.
  EXPECT_EQ(Do(admin_, "DELETE",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
               "rolebindings/alice-view")
                .code,
            200);
  EXPECT_EQ(AwaitCode(403, [&] { return Do(alice_, "GET", list); }).code, 403);
}

// A role limited to named objects may list and watch them with the
// metadata.name field selector (kube's RequestInfo takes the name from
// it; kube's documentation tells such users to do this), never the rest.
TEST_F(AuthTest, ResourceNamesAllowAListOrWatchOfThatName) {
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
               R"({"metadata":{"name":"one-map"},"rules":[
                   {"apiGroups":[""],"resources":["configmaps"],
                    "verbs":["get","list","watch"],
                    "resourceNames":["mine"]}]})")
                .code,
            201);
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
               "rolebindings",
               R"({"metadata":{"name":"alice-one-map"},
                   "roleRef":{"kind":"Role","name":"one-map"},
                   "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  const std::string list = "/api/v1/namespaces/default/configmaps";
  const std::string mine = list + "?fieldSelector=metadata.name%3Dmine";
  EXPECT_EQ(AwaitCode(200, [&] { return Do(alice_, "GET", mine); }).code, 200);
  auto watch =
      Client(alice_)->Stream("GET", mine + "&watch=1&timeoutSeconds=1", {}, "",
                             [](std::string_view) { return true; });
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(watch->status, 200);
  EXPECT_EQ(Do(alice_, "GET", list).code, 403);
  EXPECT_EQ(
      Do(alice_, "GET", list + "?fieldSelector=metadata.name%3Dother").code,
      403);
  EXPECT_EQ(Do(alice_, "GET",
               list + "?fieldSelector=metadata.name%3Dmine,metadata."
                      "namespace%3Ddefault")
                .code,
            200);
  EXPECT_EQ(
      Do(alice_, "GET", list + "?fieldSelector=metadata.name!%3Dmine").code,
      403);
}

// kubectl --as / --as-group / --as-uid: the requester must be allowed to
// impersonate each part, and then acts as that user. The headers were
// ignored: every request ran with the requester's own (larger) rights.
TEST_F(AuthTest, ImpersonationActsAsTheUserWhenAllowed) {
  const char* secrets = "/api/v1/namespaces/default/secrets";
  // The admin (system:masters) may impersonate anyone; jane has nothing.
  Response as_jane =
      Do(admin_, "GET", secrets, {}, {{"Impersonate-User", "jane"}});
  EXPECT_EQ(as_jane.code, 403) << as_jane.body;
  EXPECT_EQ(as_jane.Str({"message"}),
            "secrets is forbidden: User \"jane\" cannot list resource "
            "\"secrets\" in API group \"\" in the namespace \"default\"");
  Response whoami = Do(
      admin_, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})",
      {{"Impersonate-User", "system:serviceaccount:team:robot"}});
  ASSERT_EQ(whoami.code, 201) << whoami.body;
  EXPECT_EQ(whoami.Str({"status", "userInfo", "username"}),
            "system:serviceaccount:team:robot");
  const rapidjson::Value* groups = whoami.At({"status", "userInfo", "groups"});
  ASSERT_TRUE(groups != nullptr && groups->IsArray());
  ASSERT_EQ(groups->Size(), 3u);
  EXPECT_STREQ((*groups)[0].GetString(), "system:serviceaccounts");
  EXPECT_STREQ((*groups)[1].GetString(), "system:serviceaccounts:team");
  EXPECT_STREQ((*groups)[2].GetString(), "system:authenticated");

  // alice may not impersonate at all ...
  Response refused =
      Do(alice_, "GET", secrets, {}, {{"Impersonate-User", "jane"}});
  EXPECT_EQ(refused.code, 403) << refused.body;
  EXPECT_EQ(refused.Str({"message"}),
            "users \"jane\" is forbidden: User \"alice\" cannot impersonate "
            "resource \"users\" in API group \"\" at the cluster scope");
  // ... until she may impersonate jane (and only her, not a group).
  ASSERT_EQ(
      Do(admin_, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
         R"({"metadata":{"name":"as-jane"},"rules":[
                   {"apiGroups":[""],"resources":["users"],
                    "verbs":["impersonate"],"resourceNames":["jane"]}]})")
          .code,
      201);
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
               R"({"metadata":{"name":"alice-as-jane"},
                   "roleRef":{"kind":"ClusterRole","name":"as-jane"},
                   "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  // (Repeated until the binding reaches the policy cache, as AwaitCode.)
  std::string as_jane2;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  do {
    as_jane2 = Do(alice_, "GET", secrets, {}, {{"Impersonate-User", "jane"}})
                   .Str({"message"});
  } while (as_jane2.find("User \"jane\"") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(as_jane2, as_jane.Str({"message"}));
  Response masters = Do(
      alice_, "GET", secrets, {},
      {{"Impersonate-User", "jane"}, {"Impersonate-Group", "system:masters"}});
  EXPECT_EQ(masters.code, 403) << masters.body;
  EXPECT_EQ(masters.Str({"message"}),
            "groups \"system:masters\" is forbidden: User \"alice\" cannot "
            "impersonate resource \"groups\" in API group \"\" at the "
            "cluster scope");
  // Groups without a user are an error, as kube's.
  Response no_user =
      Do(admin_, "GET", secrets, {}, {{"Impersonate-Group", "dev"}});
  EXPECT_EQ(no_user.code, 500) << no_user.body;
  EXPECT_EQ(no_user.Str({"message"}),
            "Internal error occurred: requested [group \"dev\"] without "
            "impersonating a user");
}

// Kube's group rules (impersonation.go): system:authenticated is added to
// an impersonated user only when neither it nor system:unauthenticated was
// asked for, and an empty Impersonate-User impersonates nobody. Both were
// off: an "unauthenticated" user came out authenticated too, and an empty
// header made the request user "".
TEST_F(AuthTest, ImpersonationGroupsAndAnEmptyUserAsKube) {
  const char* review = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
  const char* body =
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})";
  auto groups_of = [](const Response& r) {
    std::vector<std::string> out;
    const rapidjson::Value* g = r.At({"status", "userInfo", "groups"});
    if (g != nullptr && g->IsArray()) {
      for (const auto& v : g->GetArray()) out.push_back(v.GetString());
    }
    return out;
  };
  // Only in system:unauthenticated, jane lacks what every authenticated
  // user may do (system:basic-user: create selfsubjectreviews).
  Response unauth = Do(admin_, "POST", review, body,
                       {{"Impersonate-User", "jane"},
                        {"Impersonate-Group", "system:unauthenticated"}});
  EXPECT_EQ(unauth.code, 403) << unauth.body;
  EXPECT_EQ(unauth.Str({"message"}),
            "selfsubjectreviews.authentication.k8s.io is forbidden: User "
            "\"jane\" cannot create resource \"selfsubjectreviews\" in API "
            "group \"authentication.k8s.io\" at the cluster scope");
  Response dev =
      Do(admin_, "POST", review, body,
         {{"Impersonate-User", "jane"}, {"Impersonate-Group", "dev"}});
  ASSERT_EQ(dev.code, 201) << dev.body;
  EXPECT_EQ(groups_of(dev),
            (std::vector<std::string>{"dev", "system:authenticated"}));

  Response empty = Do(admin_, "POST", review, body, {{"Impersonate-User", ""}});
  ASSERT_EQ(empty.code, 201) << empty.body;
  EXPECT_EQ(empty.Str({"status", "userInfo", "username"}), "kubernetes-admin");
  // With a group it is a group without a user.
  Response no_user =
      Do(admin_, "GET", "/api/v1/namespaces/default/secrets", {},
         {{"Impersonate-User", ""}, {"Impersonate-Group", "dev"}});
  EXPECT_EQ(no_user.code, 500) << no_user.body;
  EXPECT_EQ(no_user.Str({"message"}),
            "Internal error occurred: requested [group \"dev\"] without "
            "impersonating a user");
}

TEST_F(AuthTest, TokenFileUser) {
  Response whoami = WithToken(
      "bob-token-123", "POST",
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})");
  ASSERT_EQ(whoami.code, 201) << whoami.body;
  EXPECT_EQ(whoami.Str({"status", "userInfo", "username"}), "bob");
  EXPECT_EQ(whoami.Str({"status", "userInfo", "uid"}), "1002");
  const rapidjson::Value* groups = whoami.At({"status", "userInfo", "groups"});
  ASSERT_TRUE(groups != nullptr && groups->IsArray());
  ASSERT_EQ(groups->Size(), 3u);
  EXPECT_STREQ((*groups)[0].GetString(), "ops");
  EXPECT_STREQ((*groups)[2].GetString(), "system:authenticated");
  // Older kubectl asks v1beta1.
  Response beta = WithToken("bob-token-123", "POST",
                            "/apis/authentication.k8s.io/v1beta1/"
                            "selfsubjectreviews",
                            "{}");
  EXPECT_EQ(beta.code, 201) << beta.body;
  EXPECT_EQ(beta.Str({"apiVersion"}), "authentication.k8s.io/v1beta1");
  EXPECT_EQ(beta.Str({"status", "userInfo", "username"}), "bob");
  // A Group subject grants to the token's groups.
  const char* cms = "/api/v1/namespaces/kube-system/configmaps";
  EXPECT_EQ(WithToken("bob-token-123", "GET", cms).code, 403);
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
               R"({"metadata":{"name":"ops-view"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io",
                              "kind":"ClusterRole","name":"view"},
                   "subjects":[{"kind":"Group","name":"ops"}]})")
                .code,
            201);
  EXPECT_EQ(
      AwaitCode(200, [&] { return WithToken("bob-token-123", "GET", cms); })
          .code,
      200);
}

TEST_F(AuthTest, AccessReviews) {
  const char* ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  Response r = Do(alice_, "POST", ssar,
                  R"({"spec":{"resourceAttributes":{"verb":"create",
                      "resource":"configmaps","namespace":"default"}}})");
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "SelfSubjectAccessReview");
  ASSERT_NE(r.At({"status", "allowed"}), nullptr);
  EXPECT_FALSE((*r.At({"status", "allowed"})).GetBool());
  Response masters = Do(admin_, "POST", ssar,
                        R"({"spec":{"resourceAttributes":{"verb":"delete",
                            "resource":"nodes"}}})");
  EXPECT_TRUE((*masters.At({"status", "allowed"})).GetBool());
  Response invalid = Do(alice_, "POST", ssar, R"({"spec":{}})");
  EXPECT_EQ(invalid.code, 422);
  EXPECT_EQ(invalid.Str({"message"}),
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: "
            "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
            "nonResourceAttributes or resourceAttributes must be specified");
  // SubjectAccessReview: only for who may create them (cluster-admin).
  const char* sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
  const char* about_alice =
      R"({"spec":{"user":"alice","groups":["dev","system:authenticated"],
          "nonResourceAttributes":
          {"verb":"get","path":"/healthz"}}})";
  EXPECT_EQ(Do(alice_, "POST", sar, about_alice).code, 403);
  Response answered = Do(admin_, "POST", sar, about_alice);
  ASSERT_EQ(answered.code, 201) << answered.body;
  EXPECT_TRUE((*answered.At({"status", "allowed"})).GetBool());
}

// kube's review answers denied only when an authorizer denies; RBAC and
// the Node authorizer never do (they allow or have no opinion), nor does
// the union of them, so a refusal with a reason is allowed false, denied
// absent, the reason kept (pkg/registry/authorization/subjectaccessreview).
TEST_F(AuthTest, AccessReviewsWithAReasonAreNotDenied) {
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
               R"({"metadata":{"name":"alice-dangling"},
                "roleRef":{"kind":"ClusterRole","name":"nosuch"},
                "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  const char* ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  const char* body = R"({"spec":{"resourceAttributes":{"verb":"get",
                         "resource":"pods","namespace":"default"}}})";
  const std::string dangling =
      "RBAC: clusterrole.rbac.authorization.k8s.io \"nosuch\" not found";
  // The binding takes effect when its watch event reaches the policy cache.
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  Response r = Do(alice_, "POST", ssar, body);
  while (r.Str({"status", "reason"}) != dangling &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
    r = Do(alice_, "POST", ssar, body);
  }
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"status", "reason"}), dangling) << r.body;
  ASSERT_NE(r.At({"status", "allowed"}), nullptr) << r.body;
  EXPECT_FALSE((*r.At({"status", "allowed"})).GetBool());
  EXPECT_EQ(r.At({"status", "denied"}), nullptr) << r.body;

  // The Node authorizer's reason about another node.
  Response node =
      Do(admin_, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
         R"({"spec":{"user":"system:node:n1",
                         "groups":["system:nodes","system:authenticated"],
                         "resourceAttributes":{"verb":"update",
                         "resource":"nodes","name":"n2"}}})");
  ASSERT_EQ(node.code, 201) << node.body;
  EXPECT_EQ(node.Str({"status", "reason"}), "node 'n1' cannot modify node 'n2'")
      << node.body;
  EXPECT_FALSE((*node.At({"status", "allowed"})).GetBool());
  EXPECT_EQ(node.At({"status", "denied"}), nullptr) << node.body;
  // A request refused the same way is still a 403 with that reason.
  Response get = Do(alice_, "GET", "/api/v1/namespaces/default/pods");
  EXPECT_EQ(get.code, 403);
  EXPECT_EQ(get.Str({"message"}),
            "pods is forbidden: User \"alice\" cannot list resource \"pods\" "
            "in API group \"\" in the namespace \"default\": " +
                dangling);
}

TEST_F(AuthTest, LocalSubjectAccessReviews) {
  const char* lsar =
      "/apis/authorization.k8s.io/v1/namespaces/default/"
      "localsubjectaccessreviews";
  const char* about_alice =
      R"({"spec":{"user":"alice","groups":["dev"],"resourceAttributes":
          {"verb":"get","resource":"configmaps","namespace":"default"}}})";
  // Who may create them: RBAC's create on localsubjectaccessreviews in the
  // namespace (admin, cluster-admin); alice has neither.
  EXPECT_EQ(Do(alice_, "POST", lsar, about_alice).code, 403);
  Response r = Do(admin_, "POST", lsar, about_alice);
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "LocalSubjectAccessReview");
  EXPECT_EQ(r.Str({"metadata", "namespace"}), "default");
  ASSERT_NE(r.At({"status", "allowed"}), nullptr);
  EXPECT_FALSE((*r.At({"status", "allowed"})).GetBool());
  Response masters = Do(admin_, "POST", lsar,
                        R"({"spec":{"groups":["system:masters"],
                            "resourceAttributes":{"verb":"delete",
                            "resource":"pods","namespace":"default"}}})");
  ASSERT_EQ(masters.code, 201) << masters.body;
  EXPECT_TRUE((*masters.At({"status", "allowed"})).GetBool());
  // Another namespace than the request's: kube's field error.
  Response other = Do(admin_, "POST", lsar,
                      R"({"spec":{"user":"alice","resourceAttributes":
                          {"verb":"get","resource":"pods",
                           "namespace":"kube-system"}}})");
  EXPECT_EQ(other.code, 422) << other.body;
  EXPECT_EQ(other.Str({"message"}),
            "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: "
            "spec.resourceAttributes.namespace: Invalid value: "
            "\"kube-system\": must match metadata.namespace");
  Response nonres = Do(admin_, "POST", lsar,
                       R"({"spec":{"user":"alice","nonResourceAttributes":
                           {"verb":"get","path":"/healthz"}}})");
  EXPECT_EQ(nonres.code, 422) << nonres.body;
  EXPECT_NE(nonres.Str({"message"}).find("disallowed on this kind of request"),
            std::string::npos)
      << nonres.body;
  Response body_ns = Do(admin_, "POST", lsar,
                        R"({"metadata":{"namespace":"kube-system"},
                            "spec":{"user":"alice","resourceAttributes":
                            {"verb":"get","resource":"pods",
                             "namespace":"default"}}})");
  EXPECT_EQ(body_ns.code, 400) << body_ns.body;
  // Namespaced only, as in kube.
  EXPECT_EQ(
      Do(admin_, "POST",
         "/apis/authorization.k8s.io/v1/localsubjectaccessreviews", about_alice)
          .code,
      404);
}

TEST_F(AuthTest, TokenReviews) {
  const char* tr = "/apis/authentication.k8s.io/v1/tokenreviews";
  const char* bob = R"({"spec":{"token":"bob-token-123"}})";
  // create tokenreviews: cluster-admin (kube's system:auth-delegator).
  EXPECT_EQ(Do(alice_, "POST", tr, bob).code, 403);
  Response r = Do(admin_, "POST", tr, bob);
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "TokenReview");
  ASSERT_NE(r.At({"status", "authenticated"}), nullptr) << r.body;
  EXPECT_TRUE((*r.At({"status", "authenticated"})).GetBool());
  EXPECT_EQ(r.Str({"status", "user", "username"}), "bob");
  EXPECT_EQ(r.Str({"status", "user", "uid"}), "1002");
  const rapidjson::Value* groups = r.At({"status", "user", "groups"});
  ASSERT_NE(groups, nullptr) << r.body;
  std::vector<std::string> got;
  for (const auto& g : groups->GetArray()) got.push_back(g.GetString());
  EXPECT_EQ(got,
            (std::vector<std::string>{"ops", "dev", "system:authenticated"}));
  // An unknown token is not authenticated (and not anonymous).
  Response bad = Do(admin_, "POST", tr, R"({"spec":{"token":"nope"}})");
  ASSERT_EQ(bad.code, 201) << bad.body;
  EXPECT_EQ(bad.At({"status", "authenticated"}), nullptr) << bad.body;
  EXPECT_EQ(bad.Str({"status", "error"}), "invalid bearer token");
  EXPECT_EQ(bad.Str({"status", "user", "username"}), "");
  Response spaced = Do(admin_, "POST", tr, R"({"spec":{"token":"a b"}})");
  EXPECT_EQ(spaced.At({"status", "authenticated"}), nullptr) << spaced.body;
  Response empty = Do(admin_, "POST", tr, R"({"spec":{}})");
  EXPECT_EQ(empty.code, 400) << empty.body;
  EXPECT_EQ(empty.Str({"message"}),
            "token is required for TokenReview in authentication");
  // A static token is for the API server's audiences only: another
  // service's review of it must not authenticate it.
  Response vault = Do(admin_, "POST", tr,
                      R"({"spec":{"token":"bob-token-123",)"
                      R"("audiences":["vault"]}})");
  ASSERT_EQ(vault.code, 201) << vault.body;
  EXPECT_EQ(vault.At({"status", "authenticated"}), nullptr) << vault.body;
  Response ours =
      Do(admin_, "POST", tr,
         R"({"spec":{"token":"bob-token-123","audiences":)"
         R"(["vault","https://kubernetes.default.svc.cluster.local"]}})");
  ASSERT_EQ(ours.code, 201) << ours.body;
  EXPECT_EQ(ours.Str({"status", "user", "username"}), "bob");
  const rapidjson::Value* auds = ours.At({"status", "audiences"});
  ASSERT_TRUE(auds != nullptr && auds->IsArray() && auds->Size() == 1)
      << ours.body;
  EXPECT_STREQ((*auds)[0].GetString(),
               "https://kubernetes.default.svc.cluster.local");
}

TEST_F(AuthTest, EscalationIsRefusedBindWithPermission) {
  ASSERT_EQ(Do(admin_, "POST", "/api/v1/namespaces",
               R"({"metadata":{"name":"team"}})")
                .code,
            201);
  // alice may manage Roles and RoleBindings in team, nothing else.
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
               R"({"metadata":{"name":"rbac-manager"},"rules":[
                   {"apiGroups":["rbac.authorization.k8s.io"],
                    "resources":["roles","rolebindings"],
                    "verbs":["create","get","list"]}]})")
                .code,
            201);
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/team/"
               "rolebindings",
               R"({"metadata":{"name":"alice-rbac"},
                   "roleRef":{"kind":"Role","name":"rbac-manager"},
                   "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  const char* roles =
      "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles";
  const char* bindings =
      "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings";
  const char* pod_reader =
      R"({"metadata":{"name":"pod-reader"},"rules":[
          {"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]})";
  Response role =
      AwaitCode(403, [&] { return Do(alice_, "POST", roles, pod_reader); });
  ASSERT_EQ(role.code, 403) << role.body;
  EXPECT_EQ(role.Str({"message"}),
            "roles.rbac.authorization.k8s.io \"pod-reader\" is forbidden: "
            "user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is "
            "attempting to grant RBAC permissions not currently held:\n"
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" "
            "\"list\"]}");
  // A role within what she holds is fine.
  EXPECT_EQ(Do(alice_, "POST", roles,
               R"({"metadata":{"name":"sub"},"rules":[
                   {"apiGroups":["rbac.authorization.k8s.io"],
                    "resources":["roles"],"verbs":["get"]}]})")
                .code,
            201);
  const char* bind_admin =
      R"({"metadata":{"name":"alice-admin"},
          "roleRef":{"kind":"ClusterRole","name":"admin"},
          "subjects":[{"kind":"User","name":"alice"}]})";
  Response bind = Do(alice_, "POST", bindings, bind_admin);
  EXPECT_EQ(bind.code, 403) << bind.body;
  EXPECT_NE(bind.Str({"message"})
                .find("rolebindings.rbac.authorization.k8s.io \"alice-admin\" "
                      "is forbidden: user \"alice\""),
            std::string::npos)
      << bind.body;
  // With `bind` on that ClusterRole she may.
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/team/"
               "rolebindings",
               R"({"metadata":{"name":"alice-may-bind"},
                   "roleRef":{"kind":"Role","name":"binder"},
                   "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  ASSERT_EQ(Do(admin_, "POST", roles,
               R"({"metadata":{"name":"binder"},"rules":[
                   {"apiGroups":["rbac.authorization.k8s.io"],
                    "resources":["clusterroles"],"verbs":["bind"],
                    "resourceNames":["admin"]}]})")
                .code,
            201);
  EXPECT_EQ(
      AwaitCode(201, [&] { return Do(alice_, "POST", bindings, bind_admin); })
          .code,
      201);
}

// An aggregation rule gathers whatever roles its selector matches (the
// controller filling it may escalate): setting one, or changing a role
// that has one, needs every permission. A user who may only manage
// ClusterRoles and their bindings made herself cluster-admin with an empty
// role, a binding to it, and then an aggregation rule matching the
// bootstrap roles' label.
TEST_F(AuthTest, AnAggregationRuleNeedsEveryPermission) {
  ASSERT_EQ(
      Do(admin_, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
         R"({"metadata":{"name":"rbac-manager"},"rules":[
                   {"apiGroups":["rbac.authorization.k8s.io"],
                    "resources":["clusterroles","clusterrolebindings"],
                    "verbs":["create","get","update","patch"]}]})")
          .code,
      201);
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
               R"({"metadata":{"name":"alice-rbac"},
                   "roleRef":{"kind":"ClusterRole","name":"rbac-manager"},
                   "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  const char* roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
  // Empty at first: nothing to escalate, so it is created.
  Response empty = AwaitCode(201, [&] {
    return Do(alice_, "POST", roles,
              R"({"metadata":{"name":"evil"},"rules":[]})");
  });
  ASSERT_EQ(empty.code, 201) << empty.body;
  Response patched =
      Do(alice_, "PATCH", std::string(roles) + "/evil",
         R"({"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":
          {"kubernetes.io/bootstrapping":"rbac-defaults"}}]}})",
         {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(patched.code, 403) << patched.body;
  EXPECT_EQ(patched.Str({"message"}),
            "clusterroles.rbac.authorization.k8s.io \"evil\" is forbidden: "
            "must have cluster-admin privileges to use the aggregationRule");
  Response created = Do(alice_, "POST", roles,
                        R"({"metadata":{"name":"evil2"},"aggregationRule":
                            {"clusterRoleSelectors":[{"matchLabels":
                            {"kubernetes.io/bootstrapping":"rbac-defaults"}}]}})");
  EXPECT_EQ(created.code, 403) << created.body;
  // The admin may; then changing that role needs everything too.
  ASSERT_EQ(Do(admin_, "PATCH", std::string(roles) + "/evil",
               R"({"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":
                   {"example.com/aggregate":"true"}}]}})",
               {{"Content-Type", "application/merge-patch+json"}})
                .code,
            200);
  EXPECT_EQ(Do(alice_, "PATCH", std::string(roles) + "/evil",
               R"({"metadata":{"labels":{"x":"y"}}})",
               {{"Content-Type", "application/merge-patch+json"}})
                .code,
            403);
}

TEST_F(AuthTest, RbacValidation) {
  Response bad = Do(admin_, "POST",
                    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                    R"({"metadata":{"name":"b"},
                        "roleRef":{"kind":"Role","name":"r"},
                        "subjects":[{"kind":"Robot","name":"x"}]})");
  EXPECT_EQ(bad.code, 422);
  EXPECT_EQ(bad.Str({"message"}),
            "ClusterRoleBinding.rbac.authorization.k8s.io \"b\" is invalid: "
            "[roleRef.kind: Unsupported value: \"Role\": supported values: "
            "\"ClusterRole\", subjects[0].kind: Unsupported value: \"Robot\": "
            "supported values: \"ServiceAccount\", \"User\", \"Group\"]");
  Response rule = Do(admin_, "POST",
                     "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
                     "roles",
                     R"({"metadata":{"name":"r"},"rules":[
                         {"nonResourceURLs":["/x"],"verbs":["get"]}]})");
  EXPECT_EQ(rule.code, 422);
  EXPECT_NE(rule.Str({"message"})
                .find("rules[0].nonResourceURLs: Invalid value: "
                      "[]string{\"/x\"}: namespaced rules cannot apply to "
                      "non-resource URLs"),
            std::string::npos)
      << rule.body;
}

TEST_F(AuthTest, NodeAuthorizerOverHttp) {
  for (const char* n : {"node-1", "node-2"}) {
    ASSERT_EQ(Do(admin_, "POST", "/api/v1/nodes",
                 std::string(R"({"metadata":{"name":")") + n + "\"}}")
                  .code,
              201);
  }
  const char* patch = R"({"metadata":{"labels":{"x":"y"}}})";
  net::HttpHeaders merge{{"Content-Type", "application/merge-patch+json"}};
  auto patch_node = [&](const std::string& name) {
    return ToResponse(Client(node1_)->Request("PATCH", "/api/v1/nodes/" + name,
                                              merge, patch));
  };
  EXPECT_EQ(patch_node("node-1").code, 200);
  Response other = patch_node("node-2");
  EXPECT_EQ(other.code, 403);
  EXPECT_EQ(other.Str({"message"}),
            "nodes \"node-2\" is forbidden: User \"system:node:node-1\" "
            "cannot patch resource \"nodes\" in API group \"\" at the cluster "
            "scope: node 'node-1' cannot modify node 'node-2'");
  EXPECT_EQ(Do(node1_, "GET", "/api/v1/nodes").code, 200);
  // NodeRestriction: a node creates only its own Node object.
  Response create =
      Do(node1_, "POST", "/api/v1/nodes", R"({"metadata":{"name":"node-3"}})");
  EXPECT_EQ(create.code, 403);
  EXPECT_EQ(create.Str({"message"}),
            "nodes \"node-3\" is forbidden: node \"node-1\" is not allowed "
            "to modify node \"node-3\"");
  // The status of pods bound to it, not of others.
  for (const auto& [name, node] :
       {std::pair{"p1", "node-1"}, {"p2", "node-2"}}) {
    ASSERT_EQ(Do(admin_, "POST", "/api/v1/namespaces/default/pods",
                 std::string(R"({"metadata":{"name":")") + name +
                     R"("},"spec":{"nodeName":")" + node +
                     R"(","containers":[{"name":"c","image":"nginx"}]}})")
                  .code,
              201);
  }
  auto patch_status = [&](const std::string& pod) {
    return ToResponse(Client(node1_)->Request(
        "PATCH", "/api/v1/namespaces/default/pods/" + pod + "/status", merge,
        R"({"status":{"phase":"Running"}})"));
  };
  EXPECT_EQ(patch_status("p1").code, 200);
  EXPECT_EQ(patch_status("p2").code, 403);
  EXPECT_EQ(Do(node1_, "DELETE", "/api/v1/namespaces/default/pods/p2").code,
            403);
  EXPECT_EQ(Do(node1_, "DELETE", "/api/v1/namespaces/default/pods/p1").code,
            200);
}

// An apply or an update that finds no object creates it, which needs
// `create` too, as kube's handlers authorize it: a user who may only get
// and patch pods made any pod by applying one, and one who may update
// services (which take create-on-update) any Service.
TEST_F(AuthTest, CreatingThroughApplyOrUpdateNeedsCreate) {
  // A Role in default with `rules`, bound to alice.
  auto grant = [&](const std::string& role, const std::string& rules) {
    ASSERT_EQ(
        Do(admin_, "POST",
           "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
           R"({"metadata":{"name":")" + role + R"("},"rules":)" + rules + "}")
            .code,
        201);
    ASSERT_EQ(Do(admin_, "POST",
                 "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
                 "rolebindings",
                 R"({"metadata":{"name":")" + role +
                     R"("},"roleRef":{"kind":"Role","name":")" + role +
                     R"("},"subjects":[{"kind":"User","name":"alice"}]})")
                  .code,
              201);
  };
  grant("labeler", R"([{"apiGroups":[""],"resources":["pods","services"],
                        "verbs":["get","patch","update"]}])");
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"evil"},)"
      R"("spec":{"containers":[{"name":"c","image":"x"}]}})";
  auto apply = [&] {
    return Do(alice_, "PATCH",
              "/api/v1/namespaces/default/pods/evil?fieldManager=a", pod,
              {{"Content-Type", "application/apply-patch+yaml"}});
  };
  // Once the binding is seen (alice may get pods: 404, not 403) ...
  ASSERT_EQ(AwaitCode(404,
                      [&] {
                        return Do(alice_, "GET",
                                  "/api/v1/namespaces/default/pods/evil");
                      })
                .code,
            404);
  // ... the apply that would create the pod is refused.
  Response applied = apply();
  EXPECT_EQ(applied.code, 403) << applied.body;
  EXPECT_EQ(applied.Str({"message"}),
            "pods \"evil\" is forbidden: User \"alice\" cannot create "
            "resource \"pods\" in API group \"\" in the namespace \"default\"");
  EXPECT_EQ(Do(admin_, "GET", "/api/v1/namespaces/default/pods/evil").code,
            404);
  Response put = Do(alice_, "PUT", "/api/v1/namespaces/default/services/new",
                    R"({"apiVersion":"v1","kind":"Service",)"
                    R"("metadata":{"name":"new"},)"
                    R"("spec":{"ports":[{"port":80}]}})");
  EXPECT_EQ(put.code, 403) << put.body;
  // With `create` as well, the same apply creates the pod, and `patch`
  // alone still patches what exists.
  grant("creator",
        R"([{"apiGroups":[""],"resources":["pods"],"verbs":["create"]}])");
  EXPECT_EQ(AwaitCode(201, apply).code, 201);
  EXPECT_EQ(apply().code, 200);
}

// NodeRestriction for Leases: a node creates and renews only its own in
// kube-node-lease (the authorizer cannot see a create's name).
TEST_F(AuthTest, ANodeWritesOnlyItsOwnLease) {
  const std::string leases =
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
  auto lease = [](const std::string& name) {
    return R"({"metadata":{"name":")" + name +
           R"("},"spec":{"holderIdentity":")" + name + R"("}})";
  };
  Response other = Do(node1_, "POST", leases, lease("node-2"));
  EXPECT_EQ(other.code, 403) << other.body;
  EXPECT_EQ(other.Str({"message"}),
            "leases.coordination.k8s.io \"node-2\" is forbidden: can only "
            "access node lease with the same name as the requesting node");
  EXPECT_EQ(Do(node1_, "PUT", leases + "/node-2", lease("node-2")).code, 403);
  // Its own: created by POST, or by PUT (leases take create-on-update).
  EXPECT_EQ(Do(node1_, "PUT", leases + "/node-1", lease("node-1")).code, 201);
  EXPECT_EQ(Do(node1_, "DELETE", leases + "/node-1").code, 200);
  EXPECT_EQ(Do(node1_, "POST", leases, lease("node-1")).code, 201);
}

// The real kubectl (1.32 on the PATH) with a kubeconfig carrying alice's
// certificate: `auth can-i` asks a SelfSubjectAccessReview, `auth whoami`
// a SelfSubjectReview.
TEST_F(AuthTest, KubectlAuthCanIAndWhoami) {
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
               "rolebindings",
               R"({"metadata":{"name":"alice-view"},
                   "roleRef":{"kind":"ClusterRole","name":"view"},
                   "subjects":[{"kind":"User","name":"alice"}]})")
                .code,
            201);
  AwaitCode(200, [&] {
    return Do(alice_, "GET", "/api/v1/namespaces/default/configmaps");
  });
  const std::string kubeconfig = dir_ + "/kubeconfig";
  std::ofstream(kubeconfig)
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: kplane\n"
      << "  cluster:\n    server: https://127.0.0.1:" << server_->port()
      << "\n    certificate-authority-data: " << Base64Encode(ca_.cert_pem)
      << "\nusers:\n- name: alice\n  user:\n"
      << "    client-certificate-data: " << Base64Encode(alice_.cert_pem)
      << "\n    client-key-data: " << Base64Encode(alice_.key_pem)
      << "\ncontexts:\n- name: alice\n  context:\n    cluster: kplane\n"
      << "    user: alice\ncurrent-context: alice\n";
  int run = 0;
  auto kubectl = [&](std::vector<std::string> args) {
    const std::string out = dir_ + "/kubectl-" + std::to_string(run++) + ".out";
    args.insert(args.begin(), {"kubectl", "--kubeconfig", kubeconfig});
    Subprocess p(args, {.log_path = out});
    EXPECT_TRUE(p.Start().ok());
    const int code = p.Wait();
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    return std::make_pair(code, ss.str());
  };
  auto [list_code, list_out] =
      kubectl({"auth", "can-i", "list", "configmaps", "-n", "default"});
  EXPECT_EQ(list_code, 0) << list_out;
  EXPECT_EQ(list_out, "yes\n");
  auto [create_code, create_out] =
      kubectl({"auth", "can-i", "create", "configmaps", "-n", "default"});
  EXPECT_EQ(create_code, 1) << create_out;
  EXPECT_EQ(create_out, "no\n");
  auto [who_code, who_out] = kubectl({"auth", "whoami"});
  EXPECT_EQ(who_code, 0) << who_out;
  EXPECT_NE(who_out.find("alice"), std::string::npos) << who_out;
  EXPECT_NE(who_out.find("[dev system:authenticated]"), std::string::npos)
      << who_out;
  auto [get_code, get_out] = kubectl({"get", "secrets", "-n", "default"});
  EXPECT_EQ(get_code, 1);
  EXPECT_NE(get_out.find("Error from server (Forbidden): secrets is "
                         "forbidden: User \"alice\" cannot list resource "
                         "\"secrets\" in API group \"\" in the namespace "
                         "\"default\""),
            std::string::npos)
      << get_out;
}

TEST(AuthOptionsTest, UnknownAuthorizationModeIsRefused) {
  TestServer holder;  // for its store
  metrics::Registry registry;
  ApiServerOptions o;
  o.kv = holder.store();
  o.metrics = &registry;
  o.auth.enabled = true;
  o.auth.authorization_modes = {"RBAC", "ABAC"};
  ApiServer api(o);
  Status s = api.Start();
  EXPECT_TRUE(s.Is(StatusCode::kInvalidArgument)) << s;
  EXPECT_EQ(s.message(), "authorization-mode \"ABAC\" is not a valid mode");
}

// pods/log streams (and exec sessions, through the same slots) are
// counted per user: one user with --max-streams-per-user streams open gets
// 429 for the next, while another user still gets one. A kubelet that
// keeps every log open stands in for `kubectl logs -f`.
class AuthStreamLimitTest : public AuthTest {
 protected:
  void Tweak(ApiServerOptions* o) override {
    o->max_kubelet_streams_per_user = 1;
  }
};

TEST_F(AuthStreamLimitTest, OneUserCannotTakeEveryLogStream) {
  Mutex mu;
  std::vector<std::shared_ptr<net::Responder>> open;
  net::HttpServer kubelet({.name = "fake-kubelet"});
  kubelet.HandlePrefix(
      "GET", "/containerLogs/",
      [&](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->StartStream(200, {{"Content-Type", "text/plain"}});
        r->Write("started\n");
        MutexLock l(&mu);
        open.push_back(std::move(r));  // kept open until the kubelet stops
      });
  ASSERT_TRUE(kubelet.Start().ok());
  ASSERT_EQ(Do(admin_, "POST", "/api/v1/nodes",
               R"({"metadata":{"name":"node-1"},"status":{"addresses":[
                   {"type":"ExternalIP","address":"127.0.0.1"}],
                   "daemonEndpoints":{"kubeletEndpoint":{"Port":)" +
                   std::to_string(kubelet.port()) + "}}}}")
                .code,
            201);
  ASSERT_EQ(Do(admin_, "POST", "/api/v1/namespaces/default/pods",
               R"({"metadata":{"name":"web"},"spec":{"nodeName":"node-1",
                   "containers":[{"name":"a","image":"nginx"}]}})")
                .code,
            201);
  ASSERT_EQ(Do(admin_, "POST",
               "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
               "rolebindings",
               R"({"metadata":{"name":"readers"},
                   "roleRef":{"kind":"ClusterRole","name":"view"},
                   "subjects":[{"kind":"User","name":"alice"},
                               {"kind":"User","name":"bob"}]})")
                .code,
            201);
  const std::string log =
      "/api/v1/namespaces/default/pods/web/log?container=a&follow=true";
  // Alice's first stream stays open on a thread of its own.
  net::CancelToken cancel;
  Mutex started_mu;
  std::condition_variable started_cv;
  bool started = false;
  ASSERT_EQ(AwaitCode(200,
                      [&] {
                        return Do(alice_, "GET",
                                  "/api/v1/namespaces/default/pods/web");
                      })
                .code,
            200);
  std::thread follower([&] {
    auto r = Client(alice_)->Stream(
        "GET", log, {}, "",
        [&](std::string_view) {
          MutexLock l(&started_mu);
          started = true;
          started_cv.notify_all();
          return true;
        },
        &cancel);
    if (r.ok()) {  // else cancelled
      EXPECT_EQ(r->status, 200);
    }
  });
  {
    MutexLock l(&started_mu);
    ASSERT_TRUE(started_cv.wait_for(l.native(), std::chrono::seconds(20), [&] {
      return started;
    })) << "alice's first stream did not start";
  }
  Response second = Do(alice_, "GET", log);
  EXPECT_EQ(second.code, 429) << second.body;
  EXPECT_EQ(second.Str({"message"}),
            "too many pod log streams for user \"alice\" (at most 1 at "
            "once), please try again later");
  // Bob is another user: his stream starts.
  auto bob =
      Client()->Stream("GET", log, {{"Authorization", "Bearer bob-token-123"}},
                       "", [](std::string_view) { return false; });
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_EQ(bob->status, 200);
  cancel.Cancel();
  follower.join();
  kubelet.Stop();
}

}  // namespace
}  // namespace kplane::apiserver
