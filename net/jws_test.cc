#include "net/jws.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/base64.h"
#include "net/jws_test_keys.h"

namespace kplane::net {
namespace {

using Pem = PemKeyPair;

// Keys made once per process (RSA generation is slow).
const Pem& Keys(const std::string& which) {
  static auto* keys = [] {
    auto* m = new std::map<std::string, Pem>;
    (*m)["rsa"] = NewRsaKeyPem(2048);
    (*m)["rsa2"] = NewRsaKeyPem(2048);
    (*m)["rsa1024"] = NewRsaKeyPem(1024);
    (*m)["P-256"] = NewEcKeyPem("P-256");
    (*m)["P-256b"] = NewEcKeyPem("P-256");
    (*m)["P-384"] = NewEcKeyPem("P-384");
    (*m)["P-521"] = NewEcKeyPem("P-521");
    return m;
  }();
  return keys->at(which);
}

std::shared_ptr<const JwsKey> MustKey(JwsAlg alg, const Pem& p,
                                      bool with_private = true) {
  auto k = JwsKey::FromPem(alg, with_private ? p.priv : "", p.pub);
  EXPECT_TRUE(k.ok()) << k.status();
  return k.ok() ? *k : nullptr;
}

// RFC 7515 appendix A.1: HS256 with the JWK's "k".
constexpr char kA1Key[] =
    "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUu"
    "TwjAzZr1Z9CAow";
constexpr char kA1Token[] =
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9."
    "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNv"
    "bS9pc19yb290Ijp0cnVlfQ."
    "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
constexpr char kRfcPayload[] =
    "{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n "
    "\"http://example.com/is_root\":true}";

TEST(JwsTest, VerifiesRfc7515A1Hs256) {
  auto key = JwsKey::Hmac(JwsAlg::kHS256, *Base64UrlDecode(kA1Key));
  ASSERT_TRUE(key.ok()) << key.status();
  StatusOr<std::string> payload = (*key)->Verify(kA1Token);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, kRfcPayload);
  // The signature's last character carries 2 bits and 4 unused ones:
  // 'l' decodes to the same bytes as 'k', but only one spelling is valid.
  std::string respelled = kA1Token;
  ASSERT_EQ(respelled.back(), 'k');
  respelled.back() = 'l';
  EXPECT_EQ((*key)->Verify(respelled).status().message(),
            "jws: invalid base64url");
  // One bit of the key off: refused.
  std::string other = *Base64UrlDecode(kA1Key);
  other[0] ^= 1;
  auto wrong = JwsKey::Hmac(JwsAlg::kHS256, other);
  EXPECT_EQ((*wrong)->Verify(kA1Token).status().code(),
            StatusCode::kUnauthenticated);
}

// RFC 7515 appendix A.3: ES256, the JWK's public point as a PEM
// SubjectPublicKeyInfo (the fixed DER prefix of a P-256 key, then 04||x||y).
TEST(JwsTest, VerifiesRfc7515A3Es256) {
  const std::string x =
      *Base64UrlDecode("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU");
  const std::string y =
      *Base64UrlDecode("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0");
  const unsigned char kPrefix[] = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a,
                                   0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
                                   0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03,
                                   0x01, 0x07, 0x03, 0x42, 0x00, 0x04};
  std::string der(reinterpret_cast<const char*>(kPrefix), sizeof(kPrefix));
  der += x + y;
  std::string pem = "-----BEGIN PUBLIC KEY-----\n" + Base64Encode(der) +
                    "\n-----END PUBLIC KEY-----\n";
  auto key = JwsKey::FromPem(JwsAlg::kES256, "", pem);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_FALSE((*key)->can_sign());
  const std::string token =
      "eyJhbGciOiJFUzI1NiJ9."
      "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNv"
      "bS9pc19yb290Ijp0cnVlfQ."
      "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKT"
      "UJqPP3-Kg6NU1Q";
  StatusOr<std::string> payload = (*key)->Verify(token);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, kRfcPayload);
  // The signature's last byte changed: refused.
  std::string bad = token;
  bad[bad.size() - 2] = bad[bad.size() - 2] == 'A' ? 'B' : 'A';
  EXPECT_EQ((*key)->Verify(bad).status().code(), StatusCode::kUnauthenticated);
  // The public key cannot sign.
  EXPECT_EQ((*key)->Sign("{}").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(JwsTest, EveryAlgorithmSignsAndVerifies) {
  const std::map<std::string, std::string> curve = {
      {"ES256", "P-256"}, {"ES384", "P-384"}, {"ES512", "P-521"}};
  for (const char* name :
       {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
        "ES512", "HS256", "HS384", "HS512"}) {
    SCOPED_TRACE(name);
    JwsAlg alg = *ParseJwsAlg(name);
    EXPECT_EQ(JwsAlgName(alg), name);
    std::shared_ptr<const JwsKey> key, verify_only;
    if (name[0] == 'H') {
      key = *JwsKey::Hmac(alg, "secret bytes\n");
      verify_only = key;
    } else {
      const Pem& p = Keys(name[0] == 'E' ? curve.at(name) : "rsa");
      key = MustKey(alg, p);
      verify_only = MustKey(alg, p, /*with_private=*/false);
      EXPECT_FALSE(verify_only->can_sign());
    }
    ASSERT_TRUE(key->can_sign());
    StatusOr<std::string> jws = key->Sign(R"({"username":"alice"})");
    ASSERT_TRUE(jws.ok()) << jws.status();
    // The header says the algorithm (and nothing needs padding).
    EXPECT_EQ(jws->find('='), std::string::npos);
    EXPECT_EQ(*Base64UrlDecode(jws->substr(0, jws->find('.'))),
              std::string(R"({"alg":")") + name + R"(","typ":"JWT"})");
    StatusOr<std::string> payload = verify_only->Verify(*jws);
    ASSERT_TRUE(payload.ok()) << payload.status();
    EXPECT_EQ(*payload, R"({"username":"alice"})");
    if (name[0] == 'E') {
      // Raw r||s, not DER.
      size_t width = std::string(name) == "ES256"   ? 64
                     : std::string(name) == "ES384" ? 96
                                                    : 132;
      EXPECT_EQ(Base64UrlDecode(jws->substr(jws->rfind('.') + 1))->size(),
                width);
    }
  }
}

std::string Part(std::string_view s) { return Base64UrlEncode(s); }

TEST(JwsTest, RefusesTamperedTokens) {
  auto key = MustKey(JwsAlg::kRS256, Keys("rsa"));
  std::string jws = *key->Sign(R"({"username":"alice","revision":3})");
  const size_t d1 = jws.find('.'), d2 = jws.rfind('.');
  const std::string header = jws.substr(0, d1);
  const std::string sig = jws.substr(d2 + 1);
  auto code = [&](const std::string& t) {
    return key->Verify(t).status().code();
  };
  // Another payload under the same signature.
  EXPECT_EQ(code(header + "." + Part(R"({"username":"root","revision":3})") +
                 "." + sig),
            StatusCode::kUnauthenticated);
  // A flipped signature byte.
  std::string raw_sig = *Base64UrlDecode(sig);
  raw_sig[10] ^= 0x01;
  EXPECT_EQ(code(jws.substr(0, d2 + 1) + Part(raw_sig)),
            StatusCode::kUnauthenticated);
  // Signed by another key of the same kind.
  auto other = MustKey(JwsAlg::kRS256, Keys("rsa2"));
  EXPECT_EQ(key->Verify(*other->Sign("{}")).status().message(),
            "jws: the signature does not verify");
  // Structure: parts, padding, alphabet, stray low bits.
  EXPECT_EQ(code(""), StatusCode::kUnauthenticated);
  EXPECT_EQ(code(jws.substr(0, d2)), StatusCode::kUnauthenticated);
  EXPECT_EQ(code(jws + ".x"), StatusCode::kUnauthenticated);
  EXPECT_EQ(code(jws + "="), StatusCode::kUnauthenticated);
  EXPECT_EQ(code("+" + jws), StatusCode::kUnauthenticated);
  EXPECT_EQ(code(std::string(kMaxJwsBytes + 1, 'a')),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(key->Verify(jws).ok());
}

TEST(JwsTest, RefusesAnyOtherAlgorithm) {
  auto rsa = MustKey(JwsAlg::kRS256, Keys("rsa"));
  const std::string payload = Part(R"({"username":"root"})");
  // alg "none", with or without a signature part.
  for (const char* h : {R"({"alg":"none"})", R"({"alg":"none","typ":"JWT"})",
                        R"({"alg":"NONE"})", R"({"typ":"JWT"})",
                        R"({"alg":256})", R"(["alg","RS256"])", "not json"}) {
    SCOPED_TRACE(h);
    EXPECT_EQ(rsa->Verify(Part(h) + "." + payload + ".").status().code(),
              StatusCode::kUnauthenticated);
  }
  EXPECT_EQ(rsa->Verify(Part(R"({"alg":"none"})") + "." + payload + ".")
                .status()
                .message(),
            "jws: alg \"none\" is not the expected RS256");
  // The key confusion attack: HS256 keyed with the RSA public key's PEM.
  auto hs = *JwsKey::Hmac(JwsAlg::kHS256, Keys("rsa").pub);
  std::string forged = *hs->Sign(R"({"username":"root"})");
  EXPECT_EQ(rsa->Verify(forged).status().message(),
            "jws: alg \"HS256\" is not the expected RS256");
  // PS256 and RS256 share a key but not tokens.
  auto ps = MustKey(JwsAlg::kPS256, Keys("rsa"));
  EXPECT_FALSE(rsa->Verify(*ps->Sign("{}")).ok());
  EXPECT_FALSE(ps->Verify(*rsa->Sign("{}")).ok());
  EXPECT_EQ(ParseJwsAlg("none"), std::nullopt);
  EXPECT_EQ(ParseJwsAlg("rs256"), std::nullopt);
  EXPECT_EQ(ParseJwsAlg("EdDSA"), std::nullopt);
}

TEST(JwsTest, RefusesCriticalHeaders) {
  // The header's checks come before the signature's, so the message says
  // which refused it: a header asking for an extension we do not
  // understand is refused whatever its signature.
  auto key = *JwsKey::Hmac(JwsAlg::kHS256, "k");
  const std::string input =
      Part(R"({"alg":"HS256","crit":["exp"],"exp":1})") + "." + Part("{}");
  EXPECT_EQ(key->Verify(input + "." + Part("x")).status().message(),
            "jws: critical header extensions");
  EXPECT_TRUE(key->Verify(*key->Sign("{}")).ok());
}

TEST(JwsTest, KeyLoadingErrors) {
  const Pem& rsa = Keys("rsa");
  const Pem& ec = Keys("P-256");
  auto msg = [](const StatusOr<std::shared_ptr<const JwsKey>>& k) {
    return k.ok() ? std::string("ok") : k.status().message();
  };
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, "", "")), "no key");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, "garbage", "")),
            "not a PEM private key (PKCS#1, SEC 1 or unencrypted PKCS#8)");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, "", "garbage")),
            "not a PEM public key (\"PUBLIC KEY\", \"RSA PUBLIC KEY\" or a "
            "certificate)");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, ec.priv, "")),
            "private key: RS256 needs an RSA key");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kES256, rsa.priv, "")),
            "private key: ES256 needs an EC key");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kES384, "", ec.pub)),
            "public key: ES384 needs a secp384r1 key, not prime256v1");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, Keys("rsa1024").priv, "")),
            "private key: RSA keys must have at least 2048 bits, not 1024");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, rsa.priv, Keys("rsa2").pub)),
            "the public and private keys do not match");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kES256, ec.priv, Keys("P-256b").pub)),
            "the public and private keys do not match");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kHS256, rsa.priv, "")),
            "HS256 takes a shared secret, not a key pair");
  EXPECT_EQ(msg(JwsKey::Hmac(JwsAlg::kHS256, "")), "the HMAC key is empty");
  EXPECT_EQ(msg(JwsKey::Hmac(JwsAlg::kRS256, "k")),
            "RS256 does not take a shared secret");
  EXPECT_EQ(msg(JwsKey::FromPem(JwsAlg::kRS256, rsa.priv, rsa.pub)), "ok");
}

// The payload, or the error's message.
std::string Got(const StatusOr<std::string>& payload) {
  return payload.ok() ? *payload : payload.status().message();
}

std::string HeaderOf(const std::string& jws) {
  return *Base64UrlDecode(jws.substr(0, jws.find('.')));
}

TEST(JwsTest, SignWritesKidAndTyp) {
  auto key = MustKey(JwsAlg::kRS256, Keys("rsa"));
  EXPECT_EQ(HeaderOf(*key->Sign("{}")), R"({"alg":"RS256","typ":"JWT"})");
  EXPECT_EQ(HeaderOf(*key->Sign("{}", {.kid = "k\"1"})),
            R"({"alg":"RS256","kid":"k\"1","typ":"JWT"})");
  // Kubernetes' service account header.
  std::string jws = *key->Sign("{}", {.kid = "k1", .typ_jwt = false});
  EXPECT_EQ(HeaderOf(jws), R"({"alg":"RS256","kid":"k1"})");
  EXPECT_TRUE(key->Verify(jws).ok());
  EXPECT_EQ(key->Sign("{}", {.kid = "\xff"}).status().code(),
            StatusCode::kInvalidArgument);
  // A kid must be a string.
  auto hs = *JwsKey::Hmac(JwsAlg::kHS256, "k");
  EXPECT_EQ(hs->Verify(Part(R"({"alg":"HS256","kid":7})") + "." + Part("{}") +
                       "." + Part("x"))
                .status()
                .message(),
            "jws: the kid is not a string");
}

TEST(JwsTest, PublicKeyIdIsThePublicKeysDigest) {
  auto pair = MustKey(JwsAlg::kRS256, Keys("rsa"));
  auto pub = MustKey(JwsAlg::kRS256, Keys("rsa"), /*with_private=*/false);
  auto other = MustKey(JwsAlg::kRS256, Keys("rsa2"));
  auto ec = MustKey(JwsAlg::kES256, Keys("P-256"));
  ASSERT_TRUE(pair->PublicKeyId().ok());
  EXPECT_EQ(pair->PublicKeyId()->size(), 43u);  // 32 bytes, base64url
  EXPECT_EQ(*pair->PublicKeyId(), *pub->PublicKeyId());
  EXPECT_NE(*pair->PublicKeyId(), *other->PublicKeyId());
  EXPECT_NE(*pair->PublicKeyId(), *ec->PublicKeyId());
  EXPECT_EQ((*JwsKey::Hmac(JwsAlg::kHS256, "k"))->PublicKeyId().status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(JwsKeySetTest, AKidChoosesTheKeysTried) {
  auto a = MustKey(JwsAlg::kRS256, Keys("rsa"));
  auto b = MustKey(JwsAlg::kRS256, Keys("rsa2"));
  JwsKeySet set;
  set.Add(a, "a");
  set.Add(b, "b");
  EXPECT_EQ(Got(set.Verify(*a->Sign("1", {.kid = "a"}))), "1");
  EXPECT_EQ(Got(set.Verify(*b->Sign("2", {.kid = "b"}))), "2");
  // Signed by a, naming b: only b is tried.
  EXPECT_EQ(set.Verify(*a->Sign("{}", {.kid = "b"})).status().message(),
            "jws: the signature does not verify");
  EXPECT_EQ(set.Verify(*a->Sign("{}", {.kid = "c"})).status().message(),
            "jws: no key with kid \"c\"");
  // No kid: every key is tried.
  EXPECT_EQ(Got(set.Verify(*b->Sign("3"))), "3");
  // A key added without a kid answers only tokens without one.
  JwsKeySet plain;
  plain.Add(a);
  EXPECT_TRUE(plain.Verify(*a->Sign("{}")).ok());
  EXPECT_EQ(plain.Verify(*a->Sign("{}", {.kid = "a"})).status().message(),
            "jws: no key with kid \"a\"");
}

TEST(JwsKeySetTest, SeveralKeysOfSeveralAlgorithms) {
  auto rsa = MustKey(JwsAlg::kRS256, Keys("rsa"));
  auto ec = MustKey(JwsAlg::kES256, Keys("P-256"));
  auto hs = *JwsKey::Hmac(JwsAlg::kHS256, "secret");
  JwsKeySet set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.Verify(*rsa->Sign("{}")).status().message(),
            "jws: no key to verify with");
  set.Add(MustKey(JwsAlg::kRS256, Keys("rsa"), /*with_private=*/false));
  set.Add(MustKey(JwsAlg::kES256, Keys("P-256"), /*with_private=*/false));
  set.Add(hs);
  // Rotation: a second key of the same algorithm.
  set.Add(MustKey(JwsAlg::kRS256, Keys("rsa2"), /*with_private=*/false));
  EXPECT_EQ(set.size(), 4u);
  EXPECT_EQ(Got(set.Verify(*rsa->Sign("r"))), "r");
  EXPECT_EQ(Got(set.Verify(*ec->Sign("e"))), "e");
  EXPECT_EQ(Got(set.Verify(*hs->Sign("h"))), "h");
  EXPECT_EQ(Got(set.Verify(*MustKey(JwsAlg::kRS256, Keys("rsa2"))->Sign("2"))),
            "2");
  EXPECT_EQ(
      Got(set.Verify(*(*JwsKey::Hmac(JwsAlg::kHS256, "other"))->Sign("x"))),
      "jws: the signature does not verify");
  EXPECT_EQ(set.Verify(*MustKey(JwsAlg::kPS256, Keys("rsa"))->Sign("{}"))
                .status()
                .message(),
            "jws: alg \"PS256\" is not the algorithm of any key");
  // The key confusion attack: HS256 keyed with the RSA public key's PEM.
  auto forged_key = *JwsKey::Hmac(JwsAlg::kHS256, Keys("rsa").pub);
  EXPECT_EQ(set.Verify(*forged_key->Sign("{}")).status().code(),
            StatusCode::kUnauthenticated);
  const std::string crit =
      Part(R"({"alg":"HS256","crit":["exp"]})") + "." + Part("{}");
  EXPECT_EQ(set.Verify(crit + "." + Part("x")).status().message(),
            "jws: critical header extensions");
  EXPECT_EQ(set.Verify("a.b").status().code(), StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace kplane::net
