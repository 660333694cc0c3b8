// Test support for JWS users (net/jws.h, the store's JWT auth tokens):
// fresh key pairs as PEM text, made with OpenSSL. Tests and fuzzers only
// (target kplane_jws_testing); production keys come from files or from
// apiserver/auth's GenerateServiceAccountKeyPem.
//
//   PemKeyPair k = NewEcKeyPem("P-256");
//   auto key = JwsKey::FromPem(JwsAlg::kES256, k.priv, k.pub);
//
// Generating an RSA key takes tens of milliseconds: make the ones a test
// binary needs once (a function-local static), not per test.
// Thread-safety: both functions may be called from any thread. A key that
// cannot be made is a broken test environment: they CHECK-fail.
#ifndef KPLANE_NET_JWS_TEST_KEYS_H_
#define KPLANE_NET_JWS_TEST_KEYS_H_

#include <string>

namespace kplane::net {

struct PemKeyPair {
  std::string priv;  // PKCS#8 "PRIVATE KEY"
  std::string pub;   // "PUBLIC KEY" (SubjectPublicKeyInfo)
};

// A new RSA key of `bits` (bits below 2048 too, for tests of refusals).
PemKeyPair NewRsaKeyPem(int bits);
// A new EC key on `curve` ("P-256", "P-384", "P-521").
PemKeyPair NewEcKeyPem(const char* curve);

}  // namespace kplane::net

#endif  // KPLANE_NET_JWS_TEST_KEYS_H_
