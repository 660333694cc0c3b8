// The ciphers behind the encryption-at-rest providers, with the byte layouts
// kube-apiserver stores (k8s.io/apiserver/pkg/storage/value/encrypt/...), so
// a value one writes the other can read:
//
//   aesgcm     nonce (12, random) || ciphertext || tag (16); the tag also
//              covers the authenticated data (the store key of the value)
//   aescbc     iv (16, random) || AES-CBC(plaintext + PKCS#7 padding); no
//              integrity check at all
//   secretbox  nonce (24, random) || tag (16) || ciphertext: NaCl's
//              crypto_secretbox (XSalsa20 + Poly1305), no authenticated data
//
// AES is OpenSSL 3's EVP. Secretbox is XSalsa20 written here from the
// Salsa20 and XSalsa20 papers (Bernstein), with OpenSSL's Poly1305 EVP_MAC:
// Debian ships libsodium's runtime but not its headers, and pulling in a
// second crypto library for one 60-line stream cipher is more weight than
// the cipher. secretbox_test.cc checks it against NaCl's published output.
// Random bytes come from OpenSSL's RAND_bytes.
//
// Keys are raw bytes: 16, 24 or 32 for AES (AES-128/192/256), 32 for
// secretbox. Callers validate sizes first; a wrong size here is
// kInvalidArgument.
//
// Errors: opening data that is too short, was altered, or was sealed under
// another key is kCorruption with a message saying which check failed
// (GCM: "cipher: message authentication failed", Go's words that
// kube-apiserver reports). Nothing here returns bytes that failed a check;
// AES-CBC has no check beyond the padding, which is why kube calls it weak.
// A failure inside OpenSSL is kInternal.
//
// Thread-safety: every function is reentrant (OpenSSL 3 is thread-safe).
#ifndef KPLANE_APISERVER_ENCRYPTION_CIPHERS_H_
#define KPLANE_APISERVER_ENCRYPTION_CIPHERS_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/statusor.h"

namespace kplane::apiserver::encryption {

inline constexpr size_t kGcmNonceSize = 12;
inline constexpr size_t kGcmTagSize = 16;
inline constexpr size_t kAesBlockSize = 16;
inline constexpr size_t kSecretboxKeySize = 32;
inline constexpr size_t kSecretboxNonceSize = 24;
inline constexpr size_t kSecretboxTagSize = 16;

// `n` bytes from OpenSSL's CSPRNG.
StatusOr<std::string> RandomBytes(size_t n);

// AES-GCM with a random nonce (see the layout above).
StatusOr<std::string> AesGcmSeal(std::string_view key, std::string_view plain,
                                 std::string_view aad);
// The same with a given 12-byte nonce (known-answer tests).
StatusOr<std::string> AesGcmSealWithNonce(std::string_view key,
                                          std::string_view nonce,
                                          std::string_view plain,
                                          std::string_view aad);
StatusOr<std::string> AesGcmOpen(std::string_view key, std::string_view sealed,
                                 std::string_view aad);

// AES-CBC with PKCS#7 padding and a random IV.
StatusOr<std::string> AesCbcSeal(std::string_view key, std::string_view plain);
StatusOr<std::string> AesCbcSealWithIv(std::string_view key,
                                       std::string_view iv,
                                       std::string_view plain);
StatusOr<std::string> AesCbcOpen(std::string_view key, std::string_view sealed);

// NaCl crypto_secretbox with a random nonce, laid out as kube stores it.
StatusOr<std::string> SecretboxSeal(std::string_view key,
                                    std::string_view plain);
// NaCl's own output for a given nonce: tag (16) || ciphertext, no nonce.
StatusOr<std::string> SecretboxSealDetached(std::string_view key,
                                            std::string_view nonce,
                                            std::string_view plain);
StatusOr<std::string> SecretboxOpen(std::string_view key,
                                    std::string_view sealed);

// XSalsa20 keystream XORed into `data` from block 0 (tests; the stream
// cipher alone authenticates nothing).
StatusOr<std::string> XSalsa20Xor(std::string_view key, std::string_view nonce,
                                  std::string_view data);

}  // namespace kplane::apiserver::encryption

#endif  // KPLANE_APISERVER_ENCRYPTION_CIPHERS_H_
