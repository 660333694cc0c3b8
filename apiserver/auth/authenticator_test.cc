#include "apiserver/auth/authenticator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "apiserver/auth/service_account_token.h"
#include "apiserver/auth/token_file.h"
#include "base/base64.h"
#include "net/jws.h"

namespace kplane::apiserver::auth {
namespace {

using ::testing::ElementsAre;

TEST(BearerTokenTest, ParsesAsKube) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("  bearer abc  "), "abc");
  EXPECT_EQ(BearerToken("BEARER abc extra"), "abc");
  EXPECT_EQ(BearerToken(""), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer "), std::nullopt);
  EXPECT_EQ(BearerToken("Basic YWxpY2U6cHc="), std::nullopt);
}

TEST(TokenFileTest, ParsesRecordsGroupsAndQuotes) {
  std::vector<std::string> warnings;
  auto tf = TokenFileAuthenticator::Parse(
      "tok1,alice,1001,\"dev,ops\"\n"
      "\n"
      "tok2,bob,1002\r\n"
      "\"to,k3\",\"car\"\"ol\",1003,\n",
      "tokens.csv", &warnings);
  ASSERT_TRUE(tf.ok()) << tf.status();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ((*tf)->size(), 3u);
  auto alice = (*tf)->AuthenticateToken("tok1");
  ASSERT_TRUE(alice.ok() && alice->has_value());
  EXPECT_EQ((*alice)->name, "alice");
  EXPECT_EQ((*alice)->uid, "1001");
  EXPECT_THAT((*alice)->groups, ElementsAre("dev", "ops"));
  auto bob = (*tf)->AuthenticateToken("tok2");
  ASSERT_TRUE(bob.ok() && bob->has_value());
  EXPECT_TRUE((*bob)->groups.empty());
  auto carol = (*tf)->AuthenticateToken("to,k3");
  ASSERT_TRUE(carol.ok() && carol->has_value());
  EXPECT_EQ((*carol)->name, "car\"ol");
  // Unknown tokens and prefixes are not this authenticator's.
  auto none = (*tf)->AuthenticateToken("tok");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(TokenFileTest, KubesErrorsAndWarnings) {
  std::vector<std::string> warnings;
  auto short_record =
      TokenFileAuthenticator::Parse("tok1,alice\n", "t.csv", &warnings);
  ASSERT_FALSE(short_record.ok());
  EXPECT_EQ(short_record.status().message(),
            "token file 't.csv' must have at least 3 columns (token, user "
            "name, user uid), found 2");
  EXPECT_FALSE(
      TokenFileAuthenticator::Parse("to\"k,a,1\n", "t.csv", &warnings).ok());
  EXPECT_FALSE(
      TokenFileAuthenticator::Parse("\"tok,a,1\n", "t.csv", &warnings).ok());

  auto tf = TokenFileAuthenticator::Parse(
      "tok,first,1\n,empty,2\ntok,second,3\n", "t.csv", &warnings);
  ASSERT_TRUE(tf.ok());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "empty token has been found in token file 't.csv', "
            "record 2");
  EXPECT_EQ(warnings[1],
            "duplicate token has been found in token file "
            "'t.csv', record 3");
  auto who = (*tf)->AuthenticateToken("tok");
  ASSERT_TRUE(who.ok() && who->has_value());
  EXPECT_EQ((*who)->name, "second");
}

// A token authenticator with fixed answers.
class MapTokens final : public TokenAuthenticator {
 public:
  std::map<std::string, StatusOr<std::optional<UserInfo>>> answers;
  StatusOr<std::optional<UserInfo>> AuthenticateToken(
      std::string_view token) const override {
    auto it = answers.find(std::string(token));
    if (it == answers.end()) return std::optional<UserInfo>();
    return it->second;
  }
};

TEST(AuthenticatorChainTest, KubesOrderAndNoFallThroughOnBadCredentials) {
  MapTokens first, second;
  first.answers.emplace("bad", Status(StatusCode::kUnauthenticated, "expired"));
  second.answers.emplace("good", std::optional<UserInfo>(
                                     UserInfo{.name = "bob", .groups = {"g"}}));
  AuthenticatorChain chain({.tokens = {&first, &second}, .anonymous = true});

  // A verified certificate wins over a token.
  auto cert = chain.Authenticate(
      {.authorization = "Bearer good",
       .client_cert = ClientCertIdentity{.common_name = "alice",
                                         .organizations = {"system:masters"}}});
  ASSERT_TRUE(cert.ok());
  EXPECT_EQ(cert->name, "alice");
  EXPECT_THAT(cert->groups, ElementsAre("system:masters", kAllAuthenticated));

  auto tok = chain.Authenticate({.authorization = "Bearer good"});
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->name, "bob");
  EXPECT_THAT(tok->groups, ElementsAre("g", kAllAuthenticated));

  // A bad or unknown token is 401, never anonymous.
  auto bad = chain.Authenticate({.authorization = "Bearer bad"});
  EXPECT_EQ(bad.status().code(), StatusCode::kUnauthenticated);
  auto unknown = chain.Authenticate({.authorization = "Bearer nobody"});
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(unknown.status().message(), "invalid bearer token");

  auto anon = chain.Authenticate({});
  ASSERT_TRUE(anon.ok());
  EXPECT_EQ(anon->name, kAnonymousUser);
  EXPECT_THAT(anon->groups, ElementsAre(kAllUnauthenticated));
  // Another scheme is no credential at all.
  EXPECT_EQ(chain.Authenticate({.authorization = "Basic eA=="})->name,
            kAnonymousUser);

  AuthenticatorChain closed({.tokens = {&second}, .anonymous = false});
  EXPECT_EQ(closed.Authenticate({}).status().code(),
            StatusCode::kUnauthenticated);
  // A certificate without a CN is no identity.
  EXPECT_EQ(closed
                .Authenticate({.client_cert =
                                   ClientCertIdentity{
                                       .organizations = {"system:masters"}}})
                .status()
                .code(),
            StatusCode::kUnauthenticated);
}

class Accounts final : public ServiceAccountLookup {
 public:
  std::map<std::pair<std::string, std::string>, std::string> uids;
  std::optional<std::string> Uid(const std::string& ns,
                                 const std::string& name) const override {
    auto it = uids.find({ns, name});
    if (it == uids.end()) return std::nullopt;
    return it->second;
  }
  // ("Pod/<ns>", name) -> uid
  std::map<std::pair<std::string, std::string>, std::string> bound;
  std::optional<std::string> BoundObjectUid(
      const std::string& ns, const std::string& kind,
      const std::string& name) const override {
    auto it = bound.find({kind + "/" + ns, name});
    if (it == bound.end()) return std::nullopt;
    return it->second;
  }
};

constexpr char kIssuer[] = "https://kubernetes.default.svc.cluster.local";

const std::string& KeyA() {
  static const std::string* k =
      new std::string(*GenerateServiceAccountKeyPem());
  return *k;
}
const std::string& KeyB() {
  static const std::string* k =
      new std::string(*GenerateServiceAccountKeyPem());
  return *k;
}

class ServiceAccountTokenTest : public ::testing::Test {
 protected:
  ServiceAccountTokenTest() { accounts_.uids[{"team", "builder"}] = "uid-1"; }

  std::unique_ptr<ServiceAccountTokenAuthenticator> Authn(
      std::vector<std::string> keys) {
    auto a =
        ServiceAccountTokenAuthenticator::Create({.key_pems = std::move(keys),
                                                  .issuers = {kIssuer},
                                                  .lookup = &accounts_,
                                                  .clock = &clock_});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? std::move(*a) : nullptr;
  }

  std::string Issue(const std::string& key,
                    std::vector<std::string> aud = {kIssuer},
                    std::string issuer = kIssuer, std::string uid = "uid-1") {
    auto issuer_or = ServiceAccountTokenIssuer::Create(key, issuer);
    EXPECT_TRUE(issuer_or.ok()) << issuer_or.status();
    auto jwt =
        (*issuer_or)
            ->Issue({"team", "builder", uid}, aud, clock_.WallNow(), hours(1));
    EXPECT_TRUE(jwt.ok());
    return *jwt;
  }

  Accounts accounts_;
  FakeClock clock_;
};

TEST_F(ServiceAccountTokenTest, RoundTrip) {
  auto authn = Authn({KeyA()});
  auto who = authn->AuthenticateToken(Issue(KeyA()));
  ASSERT_TRUE(who.ok()) << who.status();
  ASSERT_TRUE(who->has_value());
  EXPECT_EQ((*who)->name, "system:serviceaccount:team:builder");
  EXPECT_EQ((*who)->uid, "uid-1");
  EXPECT_THAT((*who)->groups, ElementsAre("system:serviceaccounts",
                                          "system:serviceaccounts:team"));
}

TEST_F(ServiceAccountTokenTest, TamperedOrForeignSignaturesFail) {
  auto authn = Authn({KeyA()});
  std::string jwt = Issue(KeyA());
  // Re-encode the claims with another namespace, keep the signature.
  size_t d1 = jwt.find('.'), d2 = jwt.rfind('.');
  std::string claims = *Base64UrlDecode(jwt.substr(d1 + 1, d2 - d1 - 1));
  size_t at = claims.find("\"team\"");
  ASSERT_NE(at, std::string::npos);
  claims.replace(at, 6, "\"root\"");
  std::string forged =
      jwt.substr(0, d1) + "." + Base64UrlEncode(claims) + jwt.substr(d2);
  EXPECT_EQ(authn->AuthenticateToken(forged).status().message(),
            "service account token: invalid signature");
  EXPECT_EQ(authn->AuthenticateToken(Issue(KeyB())).status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(ServiceAccountTokenTest, BoundTokenLivesAsLongAsItsObject) {
  auto authn = Authn({KeyA()});
  auto issuer = ServiceAccountTokenIssuer::Create(KeyA(), kIssuer);
  ASSERT_TRUE(issuer.ok());
  accounts_.bound[{"Pod/team", "web-0"}] = "pod-uid-1";
  auto jwt = (*issuer)->Issue({"team", "builder", "uid-1"}, {kIssuer},
                              clock_.WallNow(), hours(1),
                              BoundObjectRef{"Pod", "web-0", "pod-uid-1"});
  ASSERT_TRUE(jwt.ok()) << jwt.status();
  std::string claims = *Base64UrlDecode(
      jwt->substr(jwt->find('.') + 1, jwt->rfind('.') - jwt->find('.') - 1));
  EXPECT_THAT(claims, ::testing::HasSubstr(
                          R"("pod":{"name":"web-0","uid":"pod-uid-1"})"));
  EXPECT_TRUE(authn->AuthenticateToken(*jwt)->has_value());
  // The pod recreated under the same name: another uid.
  accounts_.bound[{"Pod/team", "web-0"}] = "pod-uid-2";
  EXPECT_EQ(authn->AuthenticateToken(*jwt).status().message(),
            "Pod UID (pod-uid-2) does not match claim (pod-uid-1)");
  accounts_.bound.clear();
  EXPECT_EQ(authn->AuthenticateToken(*jwt).status().message(),
            "service account token has been invalidated (Pod team/web-0 is "
            "gone)");
  EXPECT_EQ(
      (*issuer)
          ->Issue({"team", "builder", "uid-1"}, {kIssuer}, clock_.WallNow(),
                  hours(1), BoundObjectRef{"Node", "n", "u"})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
}

TEST_F(ServiceAccountTokenTest, RotationVerifiesWithEveryKey) {
  auto authn = Authn({KeyA() + KeyB()});
  EXPECT_TRUE(authn->AuthenticateToken(Issue(KeyA()))->has_value());
  EXPECT_TRUE(authn->AuthenticateToken(Issue(KeyB()))->has_value());
}

// The header names the signing key as kube's does (base64url of the
// SHA-256 of its public key), and the authenticator tries only the key a
// kid names.
TEST_F(ServiceAccountTokenTest, KidNamesTheKeyThatVerifies) {
  auto key_a = *net::JwsKey::FromPem(net::JwsAlg::kRS256, KeyA(), "");
  auto key_b = *net::JwsKey::FromPem(net::JwsAlg::kRS256, KeyB(), "");
  std::string jwt = Issue(KeyA());
  EXPECT_EQ(*Base64UrlDecode(jwt.substr(0, jwt.find('.'))),
            R"({"alg":"RS256","kid":")" + *key_a->PublicKeyId() + R"("})");
  auto authn = Authn({KeyA() + KeyB()});
  std::string claims = *Base64UrlDecode(
      jwt.substr(jwt.find('.') + 1, jwt.rfind('.') - jwt.find('.') - 1));
  // Signed by A but naming B: only B is tried.
  std::string misnamed =
      *key_a->Sign(claims, {.kid = *key_b->PublicKeyId(), .typ_jwt = false});
  EXPECT_EQ(authn->AuthenticateToken(misnamed).status().message(),
            "service account token: invalid signature");
  // No kid: every key is tried.
  EXPECT_TRUE(authn->AuthenticateToken(*key_a->Sign(claims))->has_value());
}

TEST_F(ServiceAccountTokenTest, ValidityWindowWithLeeway) {
  auto authn = Authn({KeyA()});
  std::string jwt = Issue(KeyA());
  clock_.Advance(hours(1) + seconds(59));
  EXPECT_TRUE(authn->AuthenticateToken(jwt).ok());
  clock_.Advance(seconds(2));
  EXPECT_EQ(authn->AuthenticateToken(jwt).status().message(),
            "service account token has expired");
}

TEST_F(ServiceAccountTokenTest, AudienceIssuerAndAccountChecks) {
  auto authn = Authn({KeyA()});
  EXPECT_EQ(authn->AuthenticateToken(Issue(KeyA(), {"vault"})).status().code(),
            StatusCode::kUnauthenticated);
  // Another issuer's JWT, or no JWT at all, is not this authenticator's.
  auto other = authn->AuthenticateToken(
      Issue(KeyA(), {kIssuer}, "https://other.example"));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
  auto not_jwt = authn->AuthenticateToken("31ada4fd-adec-460c");
  ASSERT_TRUE(not_jwt.ok());
  EXPECT_FALSE(not_jwt->has_value());
  // A recreated account (new uid) invalidates old tokens; a deleted one too.
  std::string jwt = Issue(KeyA());
  accounts_.uids[{"team", "builder"}] = "uid-2";
  EXPECT_EQ(authn->AuthenticateToken(jwt).status().message(),
            "service account UID (uid-2) does not match claim (uid-1)");
  accounts_.uids.clear();
  EXPECT_EQ(authn->AuthenticateToken(jwt).status().message(),
            "service account team/builder has been deleted");
}

TEST_F(ServiceAccountTokenTest, BadKeyMaterialIsRefused) {
  EXPECT_FALSE(ServiceAccountTokenIssuer::Create("not a key", kIssuer).ok());
  EXPECT_FALSE(ServiceAccountTokenAuthenticator::Create(
                   {.key_pems = {"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END "
                                 "PUBLIC KEY-----\n"},
                    .issuers = {kIssuer},
                    .lookup = &accounts_,
                    .clock = &clock_})
                   .ok());
  EXPECT_FALSE(
      ServiceAccountTokenAuthenticator::Create(
          {.key_pems = {KeyA()}, .lookup = &accounts_, .clock = &clock_})
          .ok());
}

}  // namespace
}  // namespace kplane::apiserver::auth
