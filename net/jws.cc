#include "net/jws.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <utility>

#include "base/base64.h"
#include "base/json.h"

namespace kplane::net {

namespace {

enum class Family { kRsa, kPss, kEcdsa, kHmac };

struct AlgInfo {
  JwsAlg alg;
  std::string_view name;
  Family family;
  int bits;  // of the hash
};

constexpr std::array<AlgInfo, 12> kAlgs = {{
    {JwsAlg::kRS256, "RS256", Family::kRsa, 256},
    {JwsAlg::kRS384, "RS384", Family::kRsa, 384},
    {JwsAlg::kRS512, "RS512", Family::kRsa, 512},
    {JwsAlg::kPS256, "PS256", Family::kPss, 256},
    {JwsAlg::kPS384, "PS384", Family::kPss, 384},
    {JwsAlg::kPS512, "PS512", Family::kPss, 512},
    {JwsAlg::kES256, "ES256", Family::kEcdsa, 256},
    {JwsAlg::kES384, "ES384", Family::kEcdsa, 384},
    {JwsAlg::kES512, "ES512", Family::kEcdsa, 512},
    {JwsAlg::kHS256, "HS256", Family::kHmac, 256},
    {JwsAlg::kHS384, "HS384", Family::kHmac, 384},
    {JwsAlg::kHS512, "HS512", Family::kHmac, 512},
}};

const AlgInfo& Info(JwsAlg alg) { return kAlgs[static_cast<size_t>(alg)]; }

const EVP_MD* Digest(JwsAlg alg) {
  switch (Info(alg).bits) {
    case 256:
      return EVP_sha256();
    case 384:
      return EVP_sha384();
    default:
      return EVP_sha512();
  }
}

// The curve ES<n> signs on and the width of r and s in its signatures.
int CurveNid(JwsAlg alg) {
  switch (Info(alg).bits) {
    case 256:
      return NID_X9_62_prime256v1;
    case 384:
      return NID_secp384r1;
    default:
      return NID_secp521r1;
  }
}
size_t CoordinateBytes(JwsAlg alg) {
  switch (Info(alg).bits) {
    case 256:
      return 32;
    case 384:
      return 48;
    default:
      return 66;  // 521 bits
  }
}

constexpr int kMinRsaBits = 2048;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* s) const { ECDSA_SIG_free(s); }
};
using EcdsaSig = std::unique_ptr<ECDSA_SIG, EcdsaSigFree>;

// Never prompts for a pass phrase: an encrypted key file is an error.
int NoPassphrase(char*, int, int, void*) { return -1; }

Bio MemBio(std::string_view pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

StatusOr<Pkey> LoadPrivate(std::string_view pem) {
  Bio bio = MemBio(pem);
  Pkey k(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr)
          : nullptr);
  ERR_clear_error();
  if (!k) {
    return InvalidArgumentError(
        "not a PEM private key (PKCS#1, SEC 1 or unencrypted PKCS#8)");
  }
  return k;
}

StatusOr<Pkey> LoadPublic(std::string_view pem) {
  // "PUBLIC KEY" and "RSA PUBLIC KEY" through the decoders...
  EVP_PKEY* raw = nullptr;
  OSSL_DECODER_CTX* dctx = OSSL_DECODER_CTX_new_for_pkey(
      &raw, "PEM", nullptr, nullptr, EVP_PKEY_PUBLIC_KEY, nullptr, nullptr);
  if (dctx != nullptr) {
    Bio bio = MemBio(pem);
    if (bio) OSSL_DECODER_from_bio(dctx, bio.get());
    OSSL_DECODER_CTX_free(dctx);
  }
  Pkey k(raw);
  if (!k) {
    // ... else a certificate's key (etcd's own e2e tests pass server.crt).
    Bio bio = MemBio(pem);
    X509* cert =
        bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)
            : nullptr;
    if (cert != nullptr) {
      k.reset(X509_get_pubkey(cert));
      X509_free(cert);
    }
  }
  ERR_clear_error();
  if (!k) {
    return InvalidArgumentError(
        "not a PEM public key (\"PUBLIC KEY\", \"RSA PUBLIC KEY\" or a "
        "certificate)");
  }
  return k;
}

// Whether `k` is usable with `alg`: the right type, size and curve.
Status CheckKeyType(JwsAlg alg, EVP_PKEY* k) {
  const AlgInfo& info = Info(alg);
  if (info.family == Family::kEcdsa) {
    if (EVP_PKEY_get_base_id(k) != EVP_PKEY_EC) {
      return InvalidArgumentError(std::string(info.name) + " needs an EC key");
    }
    char group[80] = {0};
    size_t len = 0;
    if (EVP_PKEY_get_group_name(k, group, sizeof(group), &len) != 1) {
      ERR_clear_error();
      return InvalidArgumentError("the EC key names no curve");
    }
    int nid = OBJ_sn2nid(group);
    if (nid == NID_undef) nid = EC_curve_nist2nid(group);
    if (nid != CurveNid(alg)) {
      return InvalidArgumentError(std::string(info.name) + " needs a " +
                                  OBJ_nid2sn(CurveNid(alg)) + " key, not " +
                                  group);
    }
    return Status::Ok();
  }
  if (EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) {
    return InvalidArgumentError(std::string(info.name) + " needs an RSA key");
  }
  if (EVP_PKEY_get_bits(k) < kMinRsaBits) {
    return InvalidArgumentError("RSA keys must have at least " +
                                std::to_string(kMinRsaBits) + " bits, not " +
                                std::to_string(EVP_PKEY_get_bits(k)));
  }
  return Status::Ok();
}

Status Invalid(std::string_view why) {
  return Status(StatusCode::kUnauthenticated, "jws: " + std::string(why));
}

// base64url without padding, and only its canonical spelling (no stray
// low bits), so one signature has one spelling.
std::optional<std::string> DecodePart(std::string_view part) {
  StatusOr<std::string> d = Base64UrlDecode(part);
  if (!d.ok() || Base64UrlEncode(*d) != part) return std::nullopt;
  return std::move(*d);
}

// A compact JWS taken apart, before any key is involved.
struct Parsed {
  std::string alg;
  std::optional<std::string> kid;
  bool crit = false;
  std::string payload;
  std::string sig;
  std::string_view signing_input;  // into the token
};

StatusOr<Parsed> Parse(std::string_view compact) {
  if (compact.size() > kMaxJwsBytes) return Invalid("token too long");
  const size_t d1 = compact.find('.');
  const size_t d2 =
      d1 == std::string_view::npos ? d1 : compact.find('.', d1 + 1);
  if (d2 == std::string_view::npos ||
      compact.find('.', d2 + 1) != std::string_view::npos) {
    return Invalid("not a compact JWS (three parts separated by '.')");
  }
  std::optional<std::string> header = DecodePart(compact.substr(0, d1));
  std::optional<std::string> payload =
      DecodePart(compact.substr(d1 + 1, d2 - d1 - 1));
  std::optional<std::string> sig = DecodePart(compact.substr(d2 + 1));
  if (!header || !payload || !sig) return Invalid("invalid base64url");
  rapidjson::Document h;
  if (!json::ParseDom(*header, &h, /*max_depth=*/8).ok() || !h.IsObject()) {
    return Invalid("the header is not a JSON object");
  }
  auto alg = h.FindMember("alg");
  if (alg == h.MemberEnd() || !alg->value.IsString()) {
    return Invalid("the header has no alg");
  }
  Parsed p;
  p.alg.assign(alg->value.GetString(), alg->value.GetStringLength());
  if (auto kid = h.FindMember("kid"); kid != h.MemberEnd()) {
    if (!kid->value.IsString()) return Invalid("the kid is not a string");
    p.kid.emplace(kid->value.GetString(), kid->value.GetStringLength());
  }
  p.crit = h.HasMember("crit");
  p.payload = std::move(*payload);
  p.sig = std::move(*sig);
  p.signing_input = compact.substr(0, d2);
  return p;
}

}  // namespace

std::optional<JwsAlg> ParseJwsAlg(std::string_view name) {
  for (const AlgInfo& a : kAlgs) {
    if (a.name == name) return a.alg;
  }
  return std::nullopt;
}

std::string_view JwsAlgName(JwsAlg alg) { return Info(alg).name; }

struct JwsKey::Impl {
  Pkey pkey;           // RS, PS, ES: the private key, or the public one
  std::string secret;  // HS
};

JwsKey::JwsKey(JwsAlg alg, bool can_sign, std::unique_ptr<Impl> impl)
    : alg_(alg), can_sign_(can_sign), impl_(std::move(impl)) {}

JwsKey::~JwsKey() = default;

StatusOr<std::shared_ptr<const JwsKey>> JwsKey::Hmac(JwsAlg alg,
                                                     std::string secret) {
  if (Info(alg).family != Family::kHmac) {
    return InvalidArgumentError(std::string(JwsAlgName(alg)) +
                                " does not take a shared secret");
  }
  if (secret.empty()) return InvalidArgumentError("the HMAC key is empty");
  auto impl = std::make_unique<Impl>();
  impl->secret = std::move(secret);
  return std::shared_ptr<const JwsKey>(new JwsKey(alg, true, std::move(impl)));
}

StatusOr<std::shared_ptr<const JwsKey>> JwsKey::FromPem(
    JwsAlg alg, std::string_view private_pem, std::string_view public_pem) {
  if (Info(alg).family == Family::kHmac) {
    return InvalidArgumentError(std::string(JwsAlgName(alg)) +
                                " takes a shared secret, not a key pair");
  }
  if (private_pem.empty() && public_pem.empty()) {
    return InvalidArgumentError("no key");
  }
  Pkey priv, pub;
  if (!private_pem.empty()) {
    StatusOr<Pkey> k = LoadPrivate(private_pem);
    if (!k.ok()) return k.status();
    priv = std::move(*k);
    if (Status st = CheckKeyType(alg, priv.get()); !st.ok()) {
      return InvalidArgumentError("private key: " + st.message());
    }
  }
  if (!public_pem.empty()) {
    StatusOr<Pkey> k = LoadPublic(public_pem);
    if (!k.ok()) return k.status();
    pub = std::move(*k);
    if (Status st = CheckKeyType(alg, pub.get()); !st.ok()) {
      return InvalidArgumentError("public key: " + st.message());
    }
  }
  if (priv && pub && EVP_PKEY_eq(priv.get(), pub.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError("the public and private keys do not match");
  }
  auto impl = std::make_unique<Impl>();
  const bool can_sign = priv != nullptr;
  impl->pkey = can_sign ? std::move(priv) : std::move(pub);
  return std::shared_ptr<const JwsKey>(
      new JwsKey(alg, can_sign, std::move(impl)));
}

StatusOr<std::string> JwsKey::Sign(std::string_view payload,
                                   const JwsHeader& header) const {
  if (!can_sign_) {
    return FailedPreconditionError("jws: a public key cannot sign");
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>,
                    rapidjson::UTF8<>, rapidjson::CrtAllocator,
                    rapidjson::kWriteValidateEncodingFlag>
      w(buf);
  const std::string_view alg = JwsAlgName(alg_);
  w.StartObject();
  w.Key("alg");
  w.String(alg.data(), static_cast<rapidjson::SizeType>(alg.size()));
  if (!header.kid.empty()) {
    w.Key("kid");
    // Refuses text that is not UTF-8 rather than writing a header no
    // parser reads back.
    if (!w.String(header.kid.data(),
                  static_cast<rapidjson::SizeType>(header.kid.size()))) {
      return InvalidArgumentError("jws: the kid is not valid UTF-8");
    }
  }
  if (header.typ_jwt) {
    w.Key("typ");
    w.String("JWT");
  }
  w.EndObject();
  const std::string input =
      Base64UrlEncode(std::string_view(buf.GetString(), buf.GetSize())) + "." +
      Base64UrlEncode(payload);
  StatusOr<std::string> sig = SignInput(input);
  if (!sig.ok()) return sig.status();
  return input + "." + Base64UrlEncode(*sig);
}

StatusOr<std::string> JwsKey::PublicKeyId() const {
  if (Info(alg_).family == Family::kHmac) {
    return FailedPreconditionError("jws: an HMAC key has no public key");
  }
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(impl_->pkey.get(), &der);
  if (n <= 0) {
    ERR_clear_error();
    return InternalError("jws: cannot encode the public key");
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(n), digest);
  OPENSSL_free(der);
  return Base64UrlEncode(
      std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

StatusOr<std::string> JwsKey::SignInput(std::string_view input) const {
  const AlgInfo& info = Info(alg_);
  const EVP_MD* md = Digest(alg_);
  if (info.family == Family::kHmac) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (HMAC(md, impl_->secret.data(), static_cast<int>(impl_->secret.size()),
             reinterpret_cast<const unsigned char*>(input.data()), input.size(),
             mac, &len) == nullptr) {
      ERR_clear_error();
      return InternalError("jws: HMAC failed");
    }
    return std::string(reinterpret_cast<char*>(mac), len);
  }
  MdCtx ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  size_t len = 0;
  std::string sig;
  bool ok =
      ctx &&
      EVP_DigestSignInit(ctx.get(), &pctx, md, nullptr, impl_->pkey.get()) ==
          1 &&
      (info.family != Family::kPss ||
       (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1)) &&
      EVP_DigestSign(ctx.get(), nullptr, &len,
                     reinterpret_cast<const unsigned char*>(input.data()),
                     input.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()),
                        &len,
                        reinterpret_cast<const unsigned char*>(input.data()),
                        input.size()) == 1;
    sig.resize(len);
  }
  if (!ok) {
    ERR_clear_error();
    return InternalError("jws: signing failed");
  }
  if (info.family != Family::kEcdsa) return sig;
  // DER (SEQUENCE { r INTEGER, s INTEGER }) -> r||s, each left-padded.
  const unsigned char* p = reinterpret_cast<const unsigned char*>(sig.data());
  EcdsaSig es(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size())));
  const size_t n = CoordinateBytes(alg_);
  std::string raw(2 * n, '\0');
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  if (es) ECDSA_SIG_get0(es.get(), &r, &s);
  if (!es ||
      BN_bn2binpad(r, reinterpret_cast<unsigned char*>(raw.data()),
                   static_cast<int>(n)) < 0 ||
      BN_bn2binpad(s, reinterpret_cast<unsigned char*>(raw.data() + n),
                   static_cast<int>(n)) < 0) {
    ERR_clear_error();
    return InternalError("jws: ECDSA signature conversion failed");
  }
  return raw;
}

bool JwsKey::VerifyInput(std::string_view input, std::string_view sig) const {
  const AlgInfo& info = Info(alg_);
  const EVP_MD* md = Digest(alg_);
  if (info.family == Family::kHmac) {
    StatusOr<std::string> want = SignInput(input);
    // Lengths are public (the algorithm's); the bytes compare in constant
    // time so a forger learns nothing from timing.
    return want.ok() && want->size() == sig.size() &&
           CRYPTO_memcmp(want->data(), sig.data(), sig.size()) == 0;
  }
  std::string der;
  if (info.family == Family::kEcdsa) {
    const size_t n = CoordinateBytes(alg_);
    if (sig.size() != 2 * n) return false;
    const auto* b = reinterpret_cast<const unsigned char*>(sig.data());
    EcdsaSig es(ECDSA_SIG_new());
    BIGNUM* r = BN_bin2bn(b, static_cast<int>(n), nullptr);
    BIGNUM* s = BN_bin2bn(b + n, static_cast<int>(n), nullptr);
    if (!es || r == nullptr || s == nullptr ||
        ECDSA_SIG_set0(es.get(), r, s) != 1) {
      BN_free(r);
      BN_free(s);
      ERR_clear_error();
      return false;
    }
    unsigned char* out = nullptr;
    int len = i2d_ECDSA_SIG(es.get(), &out);
    if (len <= 0) {
      ERR_clear_error();
      return false;
    }
    der.assign(reinterpret_cast<char*>(out), static_cast<size_t>(len));
    OPENSSL_free(out);
    sig = der;
  }
  MdCtx ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  bool ok =
      ctx &&
      EVP_DigestVerifyInit(ctx.get(), &pctx, md, nullptr, impl_->pkey.get()) ==
          1 &&
      (info.family != Family::kPss ||
       (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1)) &&
      EVP_DigestVerify(
          ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()),
          sig.size(), reinterpret_cast<const unsigned char*>(input.data()),
          input.size()) == 1;
  ERR_clear_error();
  return ok;
}

StatusOr<std::string> JwsKey::Verify(std::string_view compact) const {
  StatusOr<Parsed> p = Parse(compact);
  if (!p.ok()) return p.status();
  // Only the configured algorithm: never "none", never HS256 keyed with
  // an RSA public key's bytes.
  if (p->alg != JwsAlgName(alg_)) {
    return Invalid("alg \"" + p->alg + "\" is not the expected " +
                   std::string(JwsAlgName(alg_)));
  }
  if (p->crit) return Invalid("critical header extensions");
  if (!VerifyInput(p->signing_input, p->sig)) {
    return Invalid("the signature does not verify");
  }
  return std::move(p->payload);
}

void JwsKeySet::Add(std::shared_ptr<const JwsKey> key, std::string kid) {
  keys_.push_back({std::move(key), std::move(kid)});
}

StatusOr<std::string> JwsKeySet::Verify(std::string_view compact) const {
  StatusOr<Parsed> p = Parse(compact);
  if (!p.ok()) return p.status();
  bool kid_known = false;
  bool alg_known = false;
  for (const Entry& e : keys_) {
    if (p->kid.has_value() && e.kid != *p->kid) continue;
    kid_known = true;
    // As JwsKey::Verify: the header's alg picks keys, it never reinterprets
    // one.
    if (JwsAlgName(e.key->alg()) != p->alg) continue;
    alg_known = true;
    if (p->crit) return Invalid("critical header extensions");
    if (e.key->VerifyInput(p->signing_input, p->sig)) {
      return std::move(p->payload);
    }
  }
  if (!kid_known) {
    return p->kid.has_value() ? Invalid("no key with kid \"" + *p->kid + "\"")
                              : Invalid("no key to verify with");
  }
  if (!alg_known) {
    return Invalid("alg \"" + p->alg + "\" is not the algorithm of any key");
  }
  return Invalid("the signature does not verify");
}

}  // namespace kplane::net
