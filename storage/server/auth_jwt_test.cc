// AuthStore with JWT tokens (etcd's --auth-token=jwt,...): issued at apply,
// checked by any member with the key (a verify-only one too), refused when
// forged, unsigned, signed by another key, expired or older than the auth
// revision; and the --auth-token option's parsing.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/base64.h"
#include "net/jws_test_keys.h"
#include "storage/server/auth_store.h"
#include "storage/server/auth_token.h"

namespace kplane::storage {
namespace {

namespace pb = etcdserverpb;

using KeyFiles = net::PemKeyPair;

KeyFiles NewEcKey() { return net::NewEcKeyPem("P-256"); }

// Files as a map (ParseAuthTokenOption's reader).
ReadFileFn Files(std::map<std::string, std::string> files) {
  return [files](const std::string& path) -> StatusOr<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return NotFoundError("no such file");
    return it->second;
  };
}

std::shared_ptr<const TokenProvider> MustParse(const std::string& value,
                                               const ReadFileFn& files) {
  auto p = ParseAuthTokenOption(value, files);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : nullptr;
}

// One member's auth store and the log it applies.
class Member {
 public:
  Member(FakeClock* clock, std::shared_ptr<const TokenProvider> tokens)
      : auth_({.clock = clock, .tokens = tokens, .pbkdf2_iterations = 1000}) {}

  StatusOr<AuthStore::Applied> Do(storagepb::AuthRequest req,
                                  const std::string& user = "") {
    ASSIGN_OR_RETURN(storagepb::AuthRequest prepared,
                     auth_.Prepare(std::move(req)));
    auto applied = auth_.Apply(prepared, user, ++index_);
    auth_.NoteApplied(index_);
    return applied;
  }
  void Setup() {
    for (auto [name, pw] :
         {std::pair{"root", "rootpw"}, std::pair{"alice", "alicepw"}}) {
      storagepb::AuthRequest r;
      r.mutable_user_add()->set_name(name);
      r.mutable_user_add()->set_password(pw);
      ASSERT_TRUE(Do(r, "root").ok());
    }
    storagepb::AuthRequest g;
    g.mutable_user_grant_role()->set_user("root");
    g.mutable_user_grant_role()->set_role("root");
    ASSERT_TRUE(Do(g, "root").ok());
    storagepb::AuthRequest e;
    e.mutable_enable();
    ASSERT_TRUE(Do(e, "root").ok());
  }
  StatusOr<std::string> Login(const std::string& user, const std::string& pw) {
    storagepb::AuthRequest r;
    r.mutable_authenticate()->set_name(user);
    r.mutable_authenticate()->set_password(pw);
    ASSIGN_OR_RETURN(AuthStore::Applied a, Do(r));
    return static_cast<pb::AuthenticateResponse*>(a.response.get())->token();
  }
  AuthStore& auth() { return auth_; }

 private:
  AuthStore auth_;
  uint64_t index_ = 0;
};

class AuthJwtTest : public ::testing::Test {
 protected:
  AuthJwtTest()
      : keys_(NewEcKey()),
        files_(Files({{"priv.pem", keys_.priv}, {"pub.pem", keys_.pub}})),
        signer_(MustParse(
            "jwt,pub-key=pub.pem,priv-key=priv.pem,sign-method=ES256,ttl=1m",
            files_)),
        verifier_(
            MustParse("jwt,pub-key=pub.pem,sign-method=ES256,ttl=1m", files_)),
        a_(&clock_, signer_),
        b_(&clock_, verifier_) {
    a_.Setup();
    // The verify-only member holds the same users (the log's record).
    b_.auth().Load(a_.auth().Record());
  }

  KeyFiles keys_;
  ReadFileFn files_;
  std::shared_ptr<const TokenProvider> signer_, verifier_;
  FakeClock clock_;
  Member a_, b_;
};

TEST_F(AuthJwtTest, IssuedAtApplyCheckedByAnyMemberWithTheKey) {
  StatusOr<std::string> token = a_.Login("alice", "alicepw");
  ASSERT_TRUE(token.ok()) << token.status();
  // etcd's claims, nothing remembered.
  std::string claims = *Base64UrlDecode(token->substr(
      token->find('.') + 1, token->rfind('.') - token->find('.') - 1));
  const int64_t exp = std::chrono::duration_cast<std::chrono::seconds>(
                          (clock_.WallNow() + minutes(1)).time_since_epoch())
                          .count();
  EXPECT_EQ(claims, "{\"exp\":" + std::to_string(exp) + ",\"revision\":" +
                        std::to_string(a_.auth().revision()) +
                        ",\"username\":\"alice\"}");
  EXPECT_EQ(a_.auth().TokenCount(), 0u);
  EXPECT_EQ(*a_.auth().ResolveToken(*token), "alice");
  // A member that never saw the Authenticate, holding only the public key.
  EXPECT_EQ(*b_.auth().ResolveToken(*token), "alice");
  // A JWT names no raft index (its last part, the signature, is not one):
  // nothing is waited for.
  EXPECT_FALSE(b_.auth().DeferUntilTokenIndex(
      *token, [] { ADD_FAILURE() << "deferred"; }));
  EXPECT_FALSE(b_.auth().DeferUntilTokenIndex(
      "a.999", [] { ADD_FAILURE() << "deferred"; }));
  // It cannot issue: etcd's ErrVerifyOnly, before the request is proposed.
  StatusOr<std::string> refused = b_.Login("alice", "alicepw");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnknown);
  EXPECT_EQ(refused.status().message(),
            "auth: token signing attempted with verify-only key");
  // A wrong password is still AuthFailed, not a token.
  EXPECT_EQ(a_.Login("alice", "nope").status().message(),
            "etcdserver: authentication failed, invalid user ID or password");
}

TEST_F(AuthJwtTest, ForgedUnsignedOtherKeyAndExpiredAreInvalid) {
  StatusOr<std::string> token = a_.Login("alice", "alicepw");
  ASSERT_TRUE(token.ok());
  const std::string header = token->substr(0, token->find('.'));
  const std::string sig = token->substr(token->rfind('.') + 1);
  const std::string root_claims = Base64UrlEncode(
      "{\"exp\":9999999999,\"revision\":" +
      std::to_string(a_.auth().revision()) + ",\"username\":\"root\"}");
  auto expect_invalid = [&](const std::string& t, const char* what) {
    for (Member* m : {&a_, &b_}) {
      StatusOr<std::string> u = m->auth().ResolveToken(t);
      EXPECT_EQ(u.status().code(), StatusCode::kUnauthenticated) << what;
      EXPECT_EQ(u.status().message(), "etcdserver: invalid auth token") << what;
    }
  };
  expect_invalid(header + "." + root_claims + "." + sig, "claims swapped");
  expect_invalid(Base64UrlEncode(R"({"alg":"none","typ":"JWT"})") + "." +
                     root_claims + ".",
                 "alg none");
  // Signed by another key, and HS256 keyed with our public key's PEM.
  KeyFiles other = NewEcKey();
  auto stranger = MustParse("jwt,priv-key=o.pem,sign-method=ES256",
                            Files({{"o.pem", other.priv}}));
  expect_invalid(
      *stranger->Assign("root", a_.auth().revision(), clock_.WallNow()),
      "other key");
  auto confused = MustParse("jwt,priv-key=pub.pem,sign-method=HS256", files_);
  expect_invalid(
      *confused->Assign("root", a_.auth().revision(), clock_.WallNow()),
      "HS256 with the public key");
  expect_invalid("alice", "not a JWT");
  // Valid until exp (a 1-minute ttl, second granularity), then not; using
  // it does not extend it.
  clock_.Advance(seconds(59));
  EXPECT_EQ(*b_.auth().ResolveToken(*token), "alice");
  clock_.Advance(seconds(2));
  expect_invalid(*token, "expired");
}

TEST_F(AuthJwtTest, TokenOlderThanTheAuthRevisionIsOld) {
  StatusOr<std::string> token = a_.Login("alice", "alicepw");
  ASSERT_TRUE(token.ok());
  storagepb::AuthRequest r;
  r.mutable_role_add()->set_name("app");
  ASSERT_TRUE(a_.Do(r, "root").ok());  // the auth revision moves on
  StatusOr<std::string> u = a_.auth().ResolveToken(*token);
  EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(u.status().message(), "etcdserver: revision of auth store is old");
  // A new token is good again.
  StatusOr<std::string> fresh = a_.Login("alice", "alicepw");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(*a_.auth().ResolveToken(*fresh), "alice");
  // Tokens are ignored while auth is disabled, as simple ones.
  storagepb::AuthRequest off;
  off.mutable_disable();
  ASSERT_TRUE(a_.Do(off, "root").ok());
  EXPECT_EQ(*a_.auth().ResolveToken("garbage"), "");
}

TEST(AuthTokenOptionTest, SimpleAndJwtWithEtcdsOptionNames) {
  KeyFiles k = NewEcKey();
  ReadFileFn files = Files({{"priv.pem", k.priv},
                            {"pub.pem", k.pub},
                            {"empty", ""},
                            {"secret", "hunter2\n"}});
  auto simple = ParseAuthTokenOption("simple", files);
  ASSERT_TRUE(simple.ok());
  EXPECT_EQ(*simple, nullptr);
  auto jwt = MustParse("jwt,sign-method=ES256,priv-key=priv.pem", files);
  ASSERT_NE(jwt, nullptr);
  EXPECT_TRUE(jwt->can_assign());
  EXPECT_EQ(static_cast<const JwtTokenProvider*>(jwt.get())->ttl(),
            kDefaultJwtTtl);
  auto hs = MustParse("jwt,sign-method=HS512,priv-key=secret,ttl=90s", files);
  ASSERT_NE(hs, nullptr);
  EXPECT_EQ(static_cast<const JwtTokenProvider*>(hs.get())->ttl(), seconds(90));
  EXPECT_FALSE(
      MustParse("jwt,sign-method=ES256,pub-key=pub.pem", files)->can_assign());

  auto err = [&](const std::string& v) {
    auto p = ParseAuthTokenOption(v, files);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << v;
    return p.ok() ? std::string("ok") : p.status().message();
  };
  EXPECT_EQ(err("jwk"),
            "--auth-token=jwk: unknown token type \"jwk\" (simple or jwt)");
  EXPECT_EQ(err(""), "--auth-token=: unknown token type \"\" (simple or jwt)");
  EXPECT_EQ(err("simple,ttl=1s"),
            "--auth-token=simple,ttl=1s: simple tokens take no options");
  EXPECT_EQ(err("jwt,sign-method"),
            "--auth-token=jwt,sign-method: option \"sign-method\" is not "
            "<name>=<value>");
  EXPECT_EQ(err("jwt,ttl=1s=2"),
            "--auth-token=jwt,ttl=1s=2: option \"ttl=1s=2\" is not "
            "<name>=<value>");
  EXPECT_EQ(err("jwt,ttl=1s,ttl=2s,sign-method=ES256,priv-key=priv.pem"),
            "--auth-token=jwt,ttl=1s,ttl=2s,sign-method=ES256,"
            "priv-key=priv.pem: option \"ttl\" given twice");
  EXPECT_EQ(err("jwt,priv_key=priv.pem,sign-method=ES256"),
            "--auth-token=jwt,priv_key=priv.pem,sign-method=ES256: unknown "
            "option \"priv_key\" (pub-key, priv-key, sign-method, ttl)");
  EXPECT_EQ(err("jwt,priv-key=priv.pem"),
            "--auth-token=jwt,priv-key=priv.pem: sign-method \"\" is not one "
            "of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, "
            "ES512, HS256, HS384, HS512");
  EXPECT_EQ(err("jwt,priv-key=priv.pem,sign-method=none"),
            "--auth-token=jwt,priv-key=priv.pem,sign-method=none: "
            "sign-method \"none\" is not one of RS256, RS384, RS512, PS256, "
            "PS384, PS512, ES256, ES384, ES512, HS256, HS384, HS512");
  EXPECT_EQ(err("jwt,sign-method=ES256,priv-key=priv.pem,ttl=soon"),
            "--auth-token=jwt,sign-method=ES256,priv-key=priv.pem,ttl=soon: "
            "ttl \"soon\" is not a positive duration (e.g. 5m, 30s)");
  EXPECT_EQ(err("jwt,sign-method=ES256,priv-key=priv.pem,ttl=0s"),
            "--auth-token=jwt,sign-method=ES256,priv-key=priv.pem,ttl=0s: "
            "ttl \"0s\" is not a positive duration (e.g. 5m, 30s)");
  EXPECT_EQ(err("jwt,sign-method=ES256,priv-key=priv.pem,ttl=9000h"),
            "--auth-token=jwt,sign-method=ES256,priv-key=priv.pem,ttl=9000h: "
            "ttl \"9000h\" is longer than a year");
  EXPECT_EQ(err("jwt,sign-method=ES256"),
            "--auth-token=jwt,sign-method=ES256: ES256 needs priv-key (to "
            "issue tokens) or pub-key (to only check them), or both");
  EXPECT_EQ(err("jwt,sign-method=HS256,pub-key=pub.pem"),
            "--auth-token=jwt,sign-method=HS256,pub-key=pub.pem: HS256 needs "
            "priv-key, the file whose bytes are the shared secret");
  EXPECT_EQ(err("jwt,sign-method=ES256,priv-key=missing.pem"),
            "--auth-token=jwt,sign-method=ES256,priv-key=missing.pem: "
            "priv-key missing.pem: no such file");
  EXPECT_EQ(err("jwt,sign-method=ES256,pub-key=empty"),
            "--auth-token=jwt,sign-method=ES256,pub-key=empty: pub-key empty "
            "is empty");
  EXPECT_EQ(err("jwt,sign-method=RS256,priv-key=priv.pem"),
            "--auth-token=jwt,sign-method=RS256,priv-key=priv.pem: private "
            "key: RS256 needs an RSA key");
  EXPECT_EQ(err("jwt,sign-method=ES256,priv-key=secret"),
            "--auth-token=jwt,sign-method=ES256,priv-key=secret: not a PEM "
            "private key (PKCS#1, SEC 1 or unencrypted PKCS#8)");
  KeyFiles other = NewEcKey();
  auto mismatch = ParseAuthTokenOption(
      "jwt,sign-method=ES256,priv-key=priv.pem,pub-key=other.pem",
      Files({{"priv.pem", k.priv}, {"other.pem", other.pub}}));
  EXPECT_EQ(mismatch.status().message(),
            "--auth-token=jwt,sign-method=ES256,priv-key=priv.pem,"
            "pub-key=other.pem: the public and private keys do not match");
}

}  // namespace
}  // namespace kplane::storage
