// JSON Web Signature (RFC 7515) in compact form, for the algorithms of RFC
// 7518 §3 that etcd's --auth-token=jwt offers: RS256/384/512 (RSASSA-PKCS1
// v1.5), PS256/384/512 (RSASSA-PSS, salt as long as the hash, MGF1 with the
// same hash), ES256/384/512 (ECDSA on P-256/P-384/P-521; the signature is
// the raw r||s pair of fixed width, as JWS wants, not OpenSSL's DER) and
// HS256/384/512 (HMAC, compared in constant time). OpenSSL 3's EVP does the
// cryptography.
//
//   auto key = JwsKey::FromPem(JwsAlg::kES256, private_pem, public_pem);
//   StatusOr<std::string> jws = (*key)->Sign(R"({"sub":"x"})");
//   StatusOr<std::string> payload = (*key)->Verify(*jws);
//
// A compact JWS is base64url(header) "." base64url(payload) "."
// base64url(signature), base64url without padding (RFC 7515 §2). Sign
// writes the header {"alg":"<alg>","kid":"<kid>","typ":"JWT"} ("kid" only
// when given, "typ" unless JwsHeader says not to). Verify accepts a token
// only if its header is a JSON object whose "alg" is exactly the key's
// algorithm (so "none", or HS256 presented to an RSA key, is refused before
// any cryptography: RFC 8725 §3.1), whose "kid", if any, is a string, it
// has no "crit" member (we understand no extension), every part is
// canonical base64url, and the signature checks. It does not look into the
// payload: claims (exp, ...) are the caller's.
//
// Several keys (rotation: verify with old and new, sign with new):
// JwsKeySet. A token whose header names a "kid" is tried only against the
// keys added with that kid (Kubernetes' service account authenticator does
// the same); one without is tried against every key. Either way only keys
// of the header's "alg" are tried.
//
// Keys: RS and PS take an RSA key of at least 2048 bits, ES an EC key on
// the algorithm's curve, from PEM (private: PKCS#1, SEC 1 or PKCS#8;
// public: "PUBLIC KEY", "RSA PUBLIC KEY" or a certificate). With only the
// public key the JwsKey verifies but cannot sign (etcd's verify-only
// members); with both they must be one pair. HS takes the secret's bytes
// as they are (etcd uses the priv-key file's contents).
//
// Thread-safety: a JwsKey is immutable after construction; Sign and Verify
// are safe from any number of threads (each call has its own OpenSSL
// contexts; the key is only read). A JwsKeySet may be read (Verify) from
// any number of threads once no Add runs. Errors: FromPem/Hmac:
// InvalidArgument with the reason; Sign: FailedPrecondition without a
// private key, InvalidArgument for a kid JSON cannot carry, Internal if
// OpenSSL fails; Verify: Unauthenticated with the reason.
#ifndef KPLANE_NET_JWS_H_
#define KPLANE_NET_JWS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::net {

enum class JwsAlg {
  kRS256,
  kRS384,
  kRS512,
  kPS256,
  kPS384,
  kPS512,
  kES256,
  kES384,
  kES512,
  kHS256,
  kHS384,
  kHS512,
};

// "RS256" -> kRS256 (case-sensitive, as RFC 7518's names); nullopt for any
// other name, "none" included.
std::optional<JwsAlg> ParseJwsAlg(std::string_view name);
std::string_view JwsAlgName(JwsAlg alg);

// Tokens longer than this are refused unread (ours are a few hundred bytes;
// an RS512 token with a 4096-bit key under 1 KiB).
inline constexpr size_t kMaxJwsBytes = 16 * 1024;

// What Sign writes into the header besides "alg".
struct JwsHeader {
  // "kid" (RFC 7515 §4.1.4) when not empty.
  std::string kid;
  // "typ":"JWT". Kubernetes' service account tokens carry none.
  bool typ_jwt = true;
};

class JwsKey {
 public:
  // An HS* key from the secret's bytes (not empty).
  static StatusOr<std::shared_ptr<const JwsKey>> Hmac(JwsAlg alg,
                                                      std::string secret);
  // An RS*, PS* or ES* key from PEM text; either may be empty, not both.
  static StatusOr<std::shared_ptr<const JwsKey>> FromPem(
      JwsAlg alg, std::string_view private_pem, std::string_view public_pem);

  ~JwsKey();
  JwsKey(const JwsKey&) = delete;
  JwsKey& operator=(const JwsKey&) = delete;

  JwsAlg alg() const { return alg_; }
  // False for a public key alone.
  bool can_sign() const { return can_sign_; }

  // The compact JWS of `payload`.
  StatusOr<std::string> Sign(std::string_view payload,
                             const JwsHeader& header = {}) const;
  // The payload of `compact` if its header and signature are valid for
  // this key (see the file comment).
  StatusOr<std::string> Verify(std::string_view compact) const;

  // base64url(SHA-256(DER SubjectPublicKeyInfo)) of an RS, PS or ES key:
  // the kid Kubernetes gives a service account key. FailedPrecondition for
  // an HS key (no public half).
  StatusOr<std::string> PublicKeyId() const;

 private:
  friend class JwsKeySet;
  struct Impl;
  JwsKey(JwsAlg alg, bool can_sign, std::unique_ptr<Impl> impl);

  StatusOr<std::string> SignInput(std::string_view input) const;
  bool VerifyInput(std::string_view input, std::string_view sig) const;

  const JwsAlg alg_;
  const bool can_sign_;
  const std::unique_ptr<Impl> impl_;
};

// Verification keys, each with an optional kid (see the file comment).
class JwsKeySet {
 public:
  // `kid` empty: the key is tried only for tokens without a kid.
  void Add(std::shared_ptr<const JwsKey> key, std::string kid = "");
  bool empty() const { return keys_.empty(); }
  size_t size() const { return keys_.size(); }

  // The payload of `compact` if one of the chosen keys verifies it.
  // Unauthenticated, with the reason: malformed (as JwsKey::Verify), no
  // key with the token's kid, no key of its alg, or no chosen key verifies
  // the signature.
  StatusOr<std::string> Verify(std::string_view compact) const;

 private:
  struct Entry {
    std::shared_ptr<const JwsKey> key;
    std::string kid;
  };
  std::vector<Entry> keys_;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_JWS_H_
