// ServiceAccounts over HTTP against a real ApiServer and store: the
// resource (validation, Table columns), the TokenRequest subresource
// (serviceaccounts/<name>/token: defaults, kube's errors, bound objects)
// and the ServiceAccount token authenticator backed by the server's caches
// (deleted or recreated accounts, deleted bound pods, expiry, audiences).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "apiserver/auth/authenticator.h"
#include "apiserver/auth/service_account_token.h"
#include "apiserver/test_server.h"
#include "base/strings.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::apiserver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Response;
using testing::SkewedClock;
using testing::TestServer;

constexpr char kAccounts[] = "/api/v1/namespaces/default/serviceaccounts";
constexpr char kIssuer[] = "https://kubernetes.default.svc.cluster.local";
// The body `kubectl create token` sends.
constexpr char kKubectlBody[] =
    R"({"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1",)"
    R"("metadata":{"creationTimestamp":null},"spec":{"audiences":null,)"
    R"("expirationSeconds":null,"boundObjectRef":null},)"
    R"("status":{"token":"","expirationTimestamp":null}})";

const std::string& SigningKey() {
  static const std::string* key =
      new std::string(*auth::GenerateServiceAccountKeyPem());
  return *key;
}

class ServiceAccountsTest : public ::testing::Test {
 protected:
  ServiceAccountsTest()
      : server_([this](ApiServerOptions* o) {
          o->service_account_signing_key_pem = SigningKey();
          o->clock = &clock_;
        }) {}

  std::string CreateAccount(const std::string& name) {
    Response r =
        server_.Post(kAccounts, R"({"metadata":{"name":")" + name + R"("}})");
    EXPECT_EQ(r.code, 201) << r.body;
    return r.Str({"metadata", "uid"});
  }
  Response RequestToken(const std::string& account, const std::string& body) {
    return server_.Post(std::string(kAccounts) + "/" + account + "/token",
                        body);
  }
  std::string Token(const std::string& account,
                    const std::string& body = kKubectlBody) {
    Response r = RequestToken(account, body);
    EXPECT_EQ(r.code, 201) << r.body;
    return r.Str({"status", "token"});
  }
  // Through the chain the API server's requests will go through.
  StatusOr<auth::UserInfo> Authenticate(const std::string& token) {
    const auth::TokenAuthenticator* sa =
        server_.api()->service_account_authenticator();
    EXPECT_NE(sa, nullptr);
    auth::AuthenticatorChain chain({.tokens = {sa}, .anonymous = false});
    std::string header = "Bearer " + token;
    return chain.Authenticate({.authorization = header});
  }
  // The caches learn of a delete from the store's watch a moment after the
  // DELETE answered: wait (bounded) until the token is refused.
  Status AwaitRefusal(const std::string& token) {
    const TimePoint deadline = clock_.Now() + testing::kDeadline;
    StatusOr<auth::UserInfo> who = Authenticate(token);
    while (who.ok() && clock_.Now() < deadline) {
      clock_.SleepFor(milliseconds(5));
      who = Authenticate(token);
    }
    return who.status();
  }

  SkewedClock clock_;
  TestServer server_;
};

TEST_F(ServiceAccountsTest, ResourceValidatesAndPrintsAsKube) {
  Response created = server_.Post(kAccounts, R"({"metadata":{"name":"ci"},
      "secrets":[{"name":"ci-token","namespace":"elsewhere","uid":"x"}]})");
  ASSERT_EQ(created.code, 201) << created.body;
  EXPECT_EQ(created.Str({"kind"}), "ServiceAccount");
  // kube's cleanSecretReferences: only the name is kept.
  const rapidjson::Value& secret = (*created.At({"secrets"}))[0];
  EXPECT_EQ(secret.MemberCount(), 1u);
  EXPECT_STREQ(secret["name"].GetString(), "ci-token");

  Response bad = server_.Post(kAccounts, R"({"metadata":{"name":"Bad_Name"}})");
  EXPECT_EQ(bad.code, 422);
  EXPECT_THAT(bad.Str({"message"}),
              HasSubstr("ServiceAccount \"Bad_Name\" is invalid: "
                        "metadata.name: Invalid value: \"Bad_Name\""));

  Response table =
      server_.Get(kAccounts, "application/json;as=Table;v=v1;g=meta.k8s.io");
  ASSERT_EQ(table.code, 200) << table.body;
  const rapidjson::Value& cols = *table.At({"columnDefinitions"});
  ASSERT_EQ(cols.Size(), 3u);
  EXPECT_STREQ(cols[0]["name"].GetString(), "Name");
  EXPECT_STREQ(cols[1]["name"].GetString(), "Secrets");
  EXPECT_STREQ(cols[2]["name"].GetString(), "Age");
  const rapidjson::Value& cells = (*table.At({"rows"}))[0]["cells"];
  EXPECT_STREQ(cells[0].GetString(), "ci");
  EXPECT_EQ(cells[1].GetInt(), 1);

  // kubectl's short name.
  Response discovery = server_.Get("/api/v1");
  EXPECT_THAT(discovery.body, HasSubstr(R"("name":"serviceaccounts/token")"));
  EXPECT_THAT(discovery.body, HasSubstr(R"("shortNames":["sa"])"));
}

TEST_F(ServiceAccountsTest, TokenRequestAnswersAsKube) {
  const std::string uid = CreateAccount("builder");
  Response r = RequestToken("builder", kKubectlBody);
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "TokenRequest");
  EXPECT_EQ(r.Str({"apiVersion"}), "authentication.k8s.io/v1");
  EXPECT_EQ(r.Str({"metadata", "name"}), "builder");
  EXPECT_EQ(r.Str({"metadata", "namespace"}), "default");
  EXPECT_EQ((*r.At({"spec", "expirationSeconds"})).GetInt64(), 3600);
  const rapidjson::Value& aud = *r.At({"spec", "audiences"});
  ASSERT_EQ(aud.Size(), 1u);
  EXPECT_STREQ(aud[0].GetString(), kIssuer);
  EXPECT_FALSE(r.Str({"status", "expirationTimestamp"}).empty());

  StatusOr<auth::UserInfo> who = Authenticate(r.Str({"status", "token"}));
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->name, "system:serviceaccount:default:builder");
  EXPECT_EQ(who->uid, uid);
  EXPECT_THAT(who->groups, ElementsAre("system:serviceaccounts",
                                       "system:serviceaccounts:default",
                                       "system:authenticated"));
}

TEST_F(ServiceAccountsTest, TokenRequestErrorsAsKube) {
  CreateAccount("builder");
  Response missing = RequestToken("nobody", kKubectlBody);
  EXPECT_EQ(missing.code, 404);
  EXPECT_EQ(missing.Str({"message"}), "serviceaccounts \"nobody\" not found");

  Response short_lived =
      RequestToken("builder", R"({"spec":{"expirationSeconds":599}})");
  EXPECT_EQ(short_lived.code, 422);
  EXPECT_EQ(short_lived.Str({"message"}),
            "TokenRequest.authentication.k8s.io \"\" is invalid: "
            "spec.expirationSeconds: Invalid value: 599: may not specify a "
            "duration less than 10 minutes");
  EXPECT_EQ(
      RequestToken("builder", R"({"spec":{"expirationSeconds":600}})").code,
      201);

  Response other_name =
      RequestToken("builder", R"({"metadata":{"name":"someone"}})");
  EXPECT_EQ(other_name.code, 422);
  EXPECT_THAT(other_name.Str({"message"}),
              HasSubstr("metadata.name: Invalid value: \"someone\": must "
                        "match the service account name if specified"));

  Response node = RequestToken(
      "builder",
      R"({"spec":{"boundObjectRef":{"kind":"Node","apiVersion":"v1","name":"n"}}})");
  EXPECT_EQ(node.code, 400);
  EXPECT_EQ(node.Str({"message"}),
            "cannot bind token to object of type /v1, Kind=Node");

  Response no_pod = RequestToken(
      "builder",
      R"({"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"gone"}}})");
  EXPECT_EQ(no_pod.code, 404);
  EXPECT_EQ(no_pod.Str({"message"}), "pods \"gone\" not found");
}

TEST_F(ServiceAccountsTest, NoSigningKeyNoTokens) {
  TestServer plain;
  EXPECT_EQ(plain.api()->service_account_authenticator(), nullptr);
  ASSERT_EQ(plain.Post(kAccounts, R"({"metadata":{"name":"a"}})").code, 201);
  EXPECT_EQ(plain.Post(std::string(kAccounts) + "/a/token", kKubectlBody).code,
            404);
}

TEST_F(ServiceAccountsTest, DeletedOrRecreatedAccountsTokensAreRefused) {
  CreateAccount("builder");
  const std::string token = Token("builder");
  ASSERT_TRUE(Authenticate(token).ok());

  ASSERT_EQ(server_.Delete(std::string(kAccounts) + "/builder").code, 200);
  Status refused = AwaitRefusal(token);
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(refused.message(),
            "service account default/builder has been deleted");

  // The same name again is another account: the old token stays refused,
  // a new one works.
  const std::string new_uid = CreateAccount("builder");
  StatusOr<auth::UserInfo> old = Authenticate(token);
  EXPECT_EQ(old.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(old.status().message(), HasSubstr("does not match claim"));
  StatusOr<auth::UserInfo> fresh = Authenticate(Token("builder"));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->uid, new_uid);
}

// Through the API server's authenticator chain (authentication on): a
// request with the token is the ServiceAccount's user, and once the
// account is deleted the same request is kube's 401.
TEST(ServiceAccountTokensOverHttp, TokenIsTheAccountsUserUntilItIsDeleted) {
  TestServer server([](ApiServerOptions* o) {
    o->service_account_signing_key_pem = SigningKey();
    o->auth.enabled = true;
    // Who may do what is not the point here: everyone may do everything,
    // only who they are is checked.
    o->auth.authorization_modes = {"AlwaysAllow"};
  });
  ASSERT_EQ(server.Post(kAccounts, R"({"metadata":{"name":"ci"}})").code, 201);
  Response token =
      server.Post(std::string(kAccounts) + "/ci/token", kKubectlBody);
  ASSERT_EQ(token.code, 201) << token.body;
  net::HttpHeaders bearer;
  bearer.Add("Authorization", "Bearer " + token.Str({"status", "token"}));
  constexpr char kReview[] =
      R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})";
  auto whoami = [&] {
    return server.Do("POST",
                     "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                     kReview, bearer);
  };
  Response me = whoami();
  ASSERT_EQ(me.code, 201) << me.body;
  EXPECT_EQ(me.Str({"status", "userInfo", "username"}),
            "system:serviceaccount:default:ci");
  EXPECT_THAT(me.body, HasSubstr(R"("system:serviceaccounts:default")"));

  ASSERT_EQ(server.Delete(std::string(kAccounts) + "/ci").code, 200);
  // The cache follows the store's watch: await the refusal.
  Response after = whoami();
  for (int i = 0; i < 500 && after.code != 401; ++i) {
    Clock::Real()->SleepFor(milliseconds(10));
    after = whoami();
  }
  EXPECT_EQ(after.code, 401) << after.body;
  EXPECT_THAT(after.body, HasSubstr(R"("reason":"Unauthorized")"));
}

// A TokenReview names the audiences its service accepts: a token made for
// the API server (what every pod holds) is not one for "vault", and one
// made for "vault" is, with status.audiences saying so. The review checked
// every token against the API server's own audiences.
TEST(ServiceAccountTokensOverHttp, TokenReviewChecksTheRequestedAudiences) {
  TestServer server([](ApiServerOptions* o) {
    o->service_account_signing_key_pem = SigningKey();
    o->auth.enabled = true;
    o->auth.authorization_modes = {"AlwaysAllow"};
  });
  ASSERT_EQ(server.Post(kAccounts, R"({"metadata":{"name":"ci"}})").code, 201);
  auto token = [&](const std::string& body) {
    Response t = server.Post(std::string(kAccounts) + "/ci/token", body);
    EXPECT_EQ(t.code, 201) << t.body;
    return t.Str({"status", "token"});
  };
  const std::string api = token(kKubectlBody);
  const std::string vault = token(R"({"spec":{"audiences":["vault"]}})");
  auto review = [&](const std::string& t, const std::string& audiences) {
    return server.Post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        R"({"spec":{"token":")" + t + R"(","audiences":)" + audiences + "}}");
  };
  Response replayed = review(api, R"(["vault"])");
  ASSERT_EQ(replayed.code, 201) << replayed.body;
  EXPECT_EQ(replayed.At({"status", "authenticated"}), nullptr) << replayed.body;
  EXPECT_THAT(replayed.Str({"status", "error"}), HasSubstr("audiences"));
  Response for_vault = review(vault, R"(["vault","other"])");
  ASSERT_EQ(for_vault.code, 201) << for_vault.body;
  EXPECT_EQ(for_vault.Str({"status", "user", "username"}),
            "system:serviceaccount:default:ci");
  EXPECT_THAT(for_vault.body, HasSubstr(R"("audiences":["vault"])"));
  // Without audiences: the API server's own, as before.
  Response plain = review(api, "[]");
  EXPECT_EQ(plain.Str({"status", "user", "username"}),
            "system:serviceaccount:default:ci");
  EXPECT_EQ(review(vault, "[]").At({"status", "authenticated"}), nullptr);
}

TEST_F(ServiceAccountsTest, TokensBoundToAPodEndWithIt) {
  CreateAccount("builder");
  const std::string pod =
      R"({"metadata":{"name":"web"},"spec":{"serviceAccountName":"builder",)"
      R"("containers":[{"name":"c","image":"nginx"}]}})";
  Response created = server_.Post("/api/v1/namespaces/default/pods", pod);
  ASSERT_EQ(created.code, 201) << created.body;
  const std::string pod_uid = created.Str({"metadata", "uid"});

  const std::string token = Token(
      "builder",
      R"({"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web"}}})");
  ASSERT_TRUE(Authenticate(token).ok());

  Response stale_uid = RequestToken(
      "builder", R"({"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1",)"
                 R"("name":"web","uid":"not-the-pod"}}})");
  EXPECT_EQ(stale_uid.code, 409);
  EXPECT_THAT(stale_uid.Str({"message"}),
              HasSubstr("Operation cannot be fulfilled on Pod \"web\": the "
                        "UID in the bound object reference (not-the-pod)"));

  // A pod running as another account cannot carry this account's token.
  CreateAccount("other");
  Response mismatch = RequestToken(
      "other",
      R"({"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web"}}})");
  EXPECT_EQ(mismatch.code, 400);
  EXPECT_EQ(mismatch.Str({"message"}),
            "cannot bind token for serviceaccount \"other\" to pod running "
            "with different serviceaccount name.");

  ASSERT_EQ(server_
                .Delete("/api/v1/namespaces/default/pods/web",
                        R"({"gracePeriodSeconds":0})")
                .code,
            200);
  Status refused = AwaitRefusal(token);
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.message(), HasSubstr("Pod default/web is gone"));
  // The account itself still works with an unbound token.
  EXPECT_TRUE(Authenticate(Token("builder")).ok());
}

// A bound token ends a minute after its object began to be deleted, even
// while the object lingers (a finalizer, a pod on a node that is gone), as
// kube's validator: it stayed valid for as long as the object did.
TEST_F(ServiceAccountsTest, TokensOfAnObjectBeingDeletedEndAfterAMinute) {
  CreateAccount("builder");
  const std::string pod =
      R"({"metadata":{"name":"web","finalizers":["example.com/hold"]},)"
      R"("spec":{"serviceAccountName":"builder",)"
      R"("containers":[{"name":"c","image":"nginx"}]}})";
  ASSERT_EQ(server_.Post("/api/v1/namespaces/default/pods", pod).code, 201);
  const std::string token = Token(
      "builder",
      R"({"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"web"}}})");
  ASSERT_EQ(server_
                .Delete("/api/v1/namespaces/default/pods/web",
                        R"({"gracePeriodSeconds":0})")
                .code,
            200);
  ASSERT_EQ(server_.Get("/api/v1/namespaces/default/pods/web").code, 200);
  EXPECT_TRUE(Authenticate(token).ok());  // within the minute
  clock_.Skip(seconds(61));
  Status refused = AwaitRefusal(token);
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.message(), HasSubstr("Pod default/web is being deleted"));
}

TEST_F(ServiceAccountsTest, ExpiredAndForeignAudienceTokensAreRefused) {
  CreateAccount("builder");
  const std::string token =
      Token("builder", R"({"spec":{"expirationSeconds":600}})");
  ASSERT_TRUE(Authenticate(token).ok());
  // 60 s of leeway past the expiry, as go-jose's.
  clock_.Skip(seconds(600 + 61));
  StatusOr<auth::UserInfo> expired = Authenticate(token);
  EXPECT_EQ(expired.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(expired.status().message(), "service account token has expired");

  const std::string vault_token =
      Token("builder", R"({"spec":{"audiences":["vault"]}})");
  StatusOr<auth::UserInfo> foreign = Authenticate(vault_token);
  EXPECT_EQ(foreign.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(foreign.status().message(), HasSubstr("audiences"));
}

// The real kubectl (the PATH's, 1.32): `kubectl create token` prints a
// token that authenticates; its errors are kube-apiserver's.
TEST_F(ServiceAccountsTest, KubectlCreateToken) {
  CreateAccount("builder");
  char tmpl[] = "/tmp/kplane-sa-kubectl-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/kubeconfig") << "";
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "kubectl", "--server",
        "http://127.0.0.1:" + std::to_string(server_.port()), "--cache-dir",
        dir + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    e2e::Process p(std::move(argv),
                   {"KUBECONFIG=" + dir + "/kubeconfig", "HOME=" + dir});
    p.Start();
    return p.Wait(std::chrono::milliseconds(60000));
  };
  e2e::RunResult token = kubectl({"create", "token", "builder"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  StatusOr<auth::UserInfo> who =
      Authenticate(std::string(StripWhitespace(token.out)));
  ASSERT_TRUE(who.ok()) << who.status() << " " << token.out;
  EXPECT_EQ(who->name, "system:serviceaccount:default:builder");

  e2e::RunResult missing = kubectl({"create", "token", "nobody"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("error: failed to create token: "
                                     "serviceaccounts \"nobody\" not found"));
  e2e::RunResult short_lived =
      kubectl({"create", "token", "builder", "--duration", "5m"});
  EXPECT_NE(short_lived.exit_code, 0);
  EXPECT_THAT(short_lived.err,
              HasSubstr("spec.expirationSeconds: Invalid value: 300: may not "
                        "specify a duration less than 10 minutes"));
  e2e::RunResult sa = kubectl({"get", "serviceaccounts"});
  ASSERT_EQ(sa.exit_code, 0) << sa.err;
  EXPECT_THAT(sa.out, ::testing::StartsWith("NAME      SECRETS   AGE\n"));
  EXPECT_THAT(sa.out,
              ::testing::ContainsRegex("\nbuilder   0         [0-9]+s\n"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::apiserver
