#include "net/jws_test_keys.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "base/logging.h"

namespace kplane::net {

namespace {

std::string BioText(BIO* b) {
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

// Takes `k`.
PemKeyPair ToPem(EVP_PKEY* k) {
  CHECK(k != nullptr) << "cannot generate a test key";
  BIO* a = BIO_new(BIO_s_mem());
  CHECK_EQ(
      PEM_write_bio_PrivateKey(a, k, nullptr, nullptr, 0, nullptr, nullptr), 1);
  BIO* b = BIO_new(BIO_s_mem());
  CHECK_EQ(PEM_write_bio_PUBKEY(b, k), 1);
  EVP_PKEY_free(k);
  return {BioText(a), BioText(b)};
}

}  // namespace

PemKeyPair NewRsaKeyPem(int bits) { return ToPem(EVP_RSA_gen(bits)); }

PemKeyPair NewEcKeyPem(const char* curve) { return ToPem(EVP_EC_gen(curve)); }

}  // namespace kplane::net
