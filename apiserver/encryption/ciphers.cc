#include "apiserver/encryption/ciphers.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

namespace kplane::apiserver::encryption {
namespace {

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
unsigned char* Bytes(std::string& s) {
  return reinterpret_cast<unsigned char*>(s.data());
}

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

Status OpenSslError(std::string_view what) {
  return InternalError("openssl: " + std::string(what) + " failed");
}

StatusOr<const EVP_CIPHER*> AesCipher(size_t key_size, bool gcm) {
  switch (key_size) {
    case 16:
      return gcm ? EVP_aes_128_gcm() : EVP_aes_128_cbc();
    case 24:
      return gcm ? EVP_aes_192_gcm() : EVP_aes_192_cbc();
    case 32:
      return gcm ? EVP_aes_256_gcm() : EVP_aes_256_cbc();
    default:
      return InvalidArgumentError("crypto/aes: invalid key size " +
                                  std::to_string(key_size));
  }
}

// Both GCM directions share the setup: cipher, 12-byte IV, key, AAD.
StatusOr<CipherCtx> GcmInit(std::string_view key, std::string_view nonce,
                            std::string_view aad, bool encrypt) {
  ASSIGN_OR_RETURN(const EVP_CIPHER* cipher, AesCipher(key.size(), true));
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return OpenSslError("EVP_CIPHER_CTX_new");
  if (EVP_CipherInit_ex(ctx.get(), cipher, nullptr, nullptr, nullptr,
                        encrypt ? 1 : 0) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN,
                          static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, Bytes(key), Bytes(nonce),
                        -1) != 1) {
    return OpenSslError("AES-GCM init");
  }
  int len = 0;
  if (!aad.empty() && EVP_CipherUpdate(ctx.get(), nullptr, &len, Bytes(aad),
                                       static_cast<int>(aad.size())) != 1) {
    return OpenSslError("AES-GCM additional data");
  }
  return ctx;
}

// ---------------------------------------------------------------------------
// Salsa20 / XSalsa20 (Bernstein, "The Salsa20 family of stream ciphers" and
// "Extending the Salsa20 nonce"). The 4x4 state of 32-bit words is
//   c0 k0 k1 k2 / k3 c1 n0 n1 / b0 b1 c2 k4 / k5 k6 k7 c3
// with c = "expand 32-byte k", k the key, n the nonce, b the block counter.

constexpr uint32_t kSigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};

uint32_t Load32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}
void Store32(unsigned char* p, uint32_t v) {
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
  p[2] = static_cast<unsigned char>(v >> 16);
  p[3] = static_cast<unsigned char>(v >> 24);
}
uint32_t Rotl(uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

// y_b ^= (y_a + y_d) <<< 7, and so on: one quarter-round on four words.
void QuarterRound(uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  b ^= Rotl(a + d, 7);
  c ^= Rotl(b + a, 9);
  d ^= Rotl(c + b, 13);
  a ^= Rotl(d + c, 18);
}

// 20 rounds (10 column + row double rounds) over `x` in place.
void SalsaRounds(std::array<uint32_t, 16>& x) {
  for (int i = 0; i < 10; ++i) {
    QuarterRound(x[0], x[4], x[8], x[12]);  // columns
    QuarterRound(x[5], x[9], x[13], x[1]);
    QuarterRound(x[10], x[14], x[2], x[6]);
    QuarterRound(x[15], x[3], x[7], x[11]);
    QuarterRound(x[0], x[1], x[2], x[3]);  // rows
    QuarterRound(x[5], x[6], x[7], x[4]);
    QuarterRound(x[10], x[11], x[8], x[9]);
    QuarterRound(x[15], x[12], x[13], x[14]);
  }
}

std::array<uint32_t, 16> SalsaState(const unsigned char key[32],
                                    const unsigned char in[16]) {
  std::array<uint32_t, 16> s;
  s[0] = kSigma[0];
  s[5] = kSigma[1];
  s[10] = kSigma[2];
  s[15] = kSigma[3];
  for (int i = 0; i < 4; ++i) {
    s[1 + i] = Load32(key + 4 * i);
    s[11 + i] = Load32(key + 16 + 4 * i);
    s[6 + i] = Load32(in + 4 * i);
  }
  return s;
}

// HSalsa20: the 32-byte subkey for XSalsa20 from the key and the nonce's
// first 16 bytes (the rounds' words 0, 5, 10, 15, 6, 7, 8, 9; no feed-
// forward).
void HSalsa20(const unsigned char key[32], const unsigned char in[16],
              unsigned char out[32]) {
  std::array<uint32_t, 16> x = SalsaState(key, in);
  SalsaRounds(x);
  constexpr int kWords[8] = {0, 5, 10, 15, 6, 7, 8, 9};
  for (int i = 0; i < 8; ++i) Store32(out + 4 * i, x[kWords[i]]);
}

// XORs the XSalsa20 keystream of (key, 24-byte nonce), from block 0, into
// data[0, n).
void XSalsa20XorInPlace(const unsigned char key[32],
                        const unsigned char nonce[24], unsigned char* data,
                        size_t n) {
  unsigned char subkey[32];
  HSalsa20(key, nonce, subkey);
  unsigned char in[16] = {0};
  std::memcpy(in, nonce + 16, 8);  // bytes 8..15: the block counter
  uint64_t counter = 0;
  unsigned char block[64];
  for (size_t off = 0; off < n; off += 64) {
    for (int i = 0; i < 8; ++i) {
      in[8 + i] = static_cast<unsigned char>(counter >> (8 * i));
    }
    std::array<uint32_t, 16> s = SalsaState(subkey, in);
    std::array<uint32_t, 16> x = s;
    SalsaRounds(x);
    for (int i = 0; i < 16; ++i) Store32(block + 4 * i, x[i] + s[i]);
    size_t take = n - off < 64 ? n - off : 64;
    for (size_t i = 0; i < take; ++i) data[off + i] ^= block[i];
    ++counter;
  }
  OPENSSL_cleanse(subkey, sizeof(subkey));
  OPENSSL_cleanse(block, sizeof(block));
}

StatusOr<std::string> Poly1305(const unsigned char key[32],
                               std::string_view msg) {
  struct MacFree {
    void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
  };
  struct MacCtxFree {
    void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
  };
  std::unique_ptr<EVP_MAC, MacFree> mac(
      EVP_MAC_fetch(nullptr, "POLY1305", nullptr));
  if (!mac) return OpenSslError("EVP_MAC_fetch(POLY1305)");
  std::unique_ptr<EVP_MAC_CTX, MacCtxFree> ctx(EVP_MAC_CTX_new(mac.get()));
  std::string tag(kSecretboxTagSize, '\0');
  size_t len = 0;
  if (!ctx || EVP_MAC_init(ctx.get(), key, 32, nullptr) != 1 ||
      EVP_MAC_update(ctx.get(), Bytes(msg), msg.size()) != 1 ||
      EVP_MAC_final(ctx.get(), Bytes(tag), &len, tag.size()) != 1 ||
      len != kSecretboxTagSize) {
    return OpenSslError("Poly1305");
  }
  return tag;
}

Status CheckSecretboxArgs(std::string_view key, std::string_view nonce) {
  if (key.size() != kSecretboxKeySize) {
    return InvalidArgumentError("secretbox: key must be 32 bytes, not " +
                                std::to_string(key.size()));
  }
  if (nonce.size() != kSecretboxNonceSize) {
    return InvalidArgumentError("secretbox: nonce must be 24 bytes");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (n > 0 && RAND_bytes(Bytes(out), static_cast<int>(n)) != 1) {
    return InternalError("unable to read sufficient random bytes");
  }
  return out;
}

// ---------------------------------------------------------------------------
// AES-GCM

StatusOr<std::string> AesGcmSeal(std::string_view key, std::string_view plain,
                                 std::string_view aad) {
  ASSIGN_OR_RETURN(std::string nonce, RandomBytes(kGcmNonceSize));
  return AesGcmSealWithNonce(key, nonce, plain, aad);
}

StatusOr<std::string> AesGcmSealWithNonce(std::string_view key,
                                          std::string_view nonce,
                                          std::string_view plain,
                                          std::string_view aad) {
  if (nonce.size() != kGcmNonceSize) {
    return InvalidArgumentError("AES-GCM nonce must be 12 bytes");
  }
  ASSIGN_OR_RETURN(CipherCtx ctx, GcmInit(key, nonce, aad, true));
  std::string out(nonce);
  out.resize(kGcmNonceSize + plain.size() + kGcmTagSize);
  unsigned char* ct = Bytes(out) + kGcmNonceSize;
  int len = 0;
  int fin = 0;
  if ((!plain.empty() &&
       EVP_EncryptUpdate(ctx.get(), ct, &len, Bytes(plain),
                         static_cast<int>(plain.size())) != 1) ||
      EVP_EncryptFinal_ex(ctx.get(), ct + len, &fin) != 1 ||
      static_cast<size_t>(len + fin) != plain.size() ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kGcmTagSize,
                          ct + plain.size()) != 1) {
    return OpenSslError("AES-GCM seal");
  }
  return out;
}

StatusOr<std::string> AesGcmOpen(std::string_view key, std::string_view sealed,
                                 std::string_view aad) {
  if (sealed.size() < kGcmNonceSize + kGcmTagSize) {
    return CorruptionError(
        "the stored data was shorter than the required size");
  }
  std::string_view nonce = sealed.substr(0, kGcmNonceSize);
  std::string_view ct =
      sealed.substr(kGcmNonceSize, sealed.size() - kGcmNonceSize - kGcmTagSize);
  std::string tag(sealed.substr(sealed.size() - kGcmTagSize));
  ASSIGN_OR_RETURN(CipherCtx ctx, GcmInit(key, nonce, aad, false));
  std::string out(ct.size(), '\0');
  int len = 0;
  int fin = 0;
  if ((!ct.empty() && EVP_DecryptUpdate(ctx.get(), Bytes(out), &len, Bytes(ct),
                                        static_cast<int>(ct.size())) != 1) ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kGcmTagSize,
                          tag.data()) != 1) {
    return OpenSslError("AES-GCM open");
  }
  if (EVP_DecryptFinal_ex(ctx.get(), Bytes(out) + len, &fin) != 1) {
    // The tag did not match: wrong key, other authenticated data, or
    // altered bytes. Never hand out what was decrypted.
    OPENSSL_cleanse(out.data(), out.size());
    return CorruptionError("cipher: message authentication failed");
  }
  return out;
}

// ---------------------------------------------------------------------------
// AES-CBC

StatusOr<std::string> AesCbcSeal(std::string_view key, std::string_view plain) {
  ASSIGN_OR_RETURN(std::string iv, RandomBytes(kAesBlockSize));
  return AesCbcSealWithIv(key, iv, plain);
}

StatusOr<std::string> AesCbcSealWithIv(std::string_view key,
                                       std::string_view iv,
                                       std::string_view plain) {
  if (iv.size() != kAesBlockSize) {
    return InvalidArgumentError("AES-CBC IV must be 16 bytes");
  }
  ASSIGN_OR_RETURN(const EVP_CIPHER* cipher, AesCipher(key.size(), false));
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  // OpenSSL pads with PKCS#7 by default, the padding kube writes.
  std::string out(iv);
  out.resize(kAesBlockSize + plain.size() + kAesBlockSize);
  int len = 0;
  int fin = 0;
  if (!ctx ||
      EVP_EncryptInit_ex(ctx.get(), cipher, nullptr, Bytes(key), Bytes(iv)) !=
          1 ||
      (!plain.empty() &&
       EVP_EncryptUpdate(ctx.get(), Bytes(out) + kAesBlockSize, &len,
                         Bytes(plain), static_cast<int>(plain.size())) != 1) ||
      EVP_EncryptFinal_ex(ctx.get(), Bytes(out) + kAesBlockSize + len, &fin) !=
          1) {
    return OpenSslError("AES-CBC seal");
  }
  out.resize(kAesBlockSize + static_cast<size_t>(len + fin));
  return out;
}

StatusOr<std::string> AesCbcOpen(std::string_view key,
                                 std::string_view sealed) {
  if (sealed.size() < kAesBlockSize) {
    return CorruptionError(
        "the stored data was shorter than the required size");
  }
  std::string_view iv = sealed.substr(0, kAesBlockSize);
  std::string_view ct = sealed.substr(kAesBlockSize);
  if (ct.size() % kAesBlockSize != 0) {
    return CorruptionError(
        "the stored data is not a multiple of the block size");
  }
  ASSIGN_OR_RETURN(const EVP_CIPHER* cipher, AesCipher(key.size(), false));
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  std::string out(ct.size(), '\0');
  int len = 0;
  int fin = 0;
  // Padding is checked below, with kube's messages.
  if (!ctx ||
      EVP_DecryptInit_ex(ctx.get(), cipher, nullptr, Bytes(key), Bytes(iv)) !=
          1 ||
      EVP_CIPHER_CTX_set_padding(ctx.get(), 0) != 1 ||
      (!ct.empty() && EVP_DecryptUpdate(ctx.get(), Bytes(out), &len, Bytes(ct),
                                        static_cast<int>(ct.size())) != 1) ||
      EVP_DecryptFinal_ex(ctx.get(), Bytes(out) + len, &fin) != 1) {
    return OpenSslError("AES-CBC open");
  }
  size_t pad = out.empty() ? 0 : static_cast<unsigned char>(out.back());
  if (pad == 0 || pad > out.size() || pad > kAesBlockSize) {
    OPENSSL_cleanse(out.data(), out.size());
    return CorruptionError("invalid PKCS7 data (empty or not padded)");
  }
  for (size_t i = out.size() - pad; i < out.size(); ++i) {
    if (static_cast<unsigned char>(out[i]) != pad) {
      OPENSSL_cleanse(out.data(), out.size());
      return CorruptionError("invalid padding on input");
    }
  }
  out.resize(out.size() - pad);
  return out;
}

// ---------------------------------------------------------------------------
// secretbox

StatusOr<std::string> XSalsa20Xor(std::string_view key, std::string_view nonce,
                                  std::string_view data) {
  RETURN_IF_ERROR(CheckSecretboxArgs(key, nonce));
  std::string out(data);
  XSalsa20XorInPlace(Bytes(key), Bytes(nonce), Bytes(out), out.size());
  return out;
}

StatusOr<std::string> SecretboxSealDetached(std::string_view key,
                                            std::string_view nonce,
                                            std::string_view plain) {
  RETURN_IF_ERROR(CheckSecretboxArgs(key, nonce));
  // NaCl: the first 32 keystream bytes are the one-time Poly1305 key; the
  // message is XORed with the keystream from byte 32 on.
  std::string stream(32 + plain.size(), '\0');
  std::memcpy(stream.data() + 32, plain.data(), plain.size());
  XSalsa20XorInPlace(Bytes(key), Bytes(nonce), Bytes(stream), stream.size());
  std::string_view ct = std::string_view(stream).substr(32);
  auto tag = Poly1305(Bytes(stream), ct);
  OPENSSL_cleanse(stream.data(), 32);
  if (!tag.ok()) return tag.status();
  std::string out = std::move(*tag);
  out.append(ct);
  return out;
}

StatusOr<std::string> SecretboxSeal(std::string_view key,
                                    std::string_view plain) {
  ASSIGN_OR_RETURN(std::string nonce, RandomBytes(kSecretboxNonceSize));
  ASSIGN_OR_RETURN(std::string box, SecretboxSealDetached(key, nonce, plain));
  return nonce + box;
}

StatusOr<std::string> SecretboxOpen(std::string_view key,
                                    std::string_view sealed) {
  if (sealed.size() < kSecretboxNonceSize + kSecretboxTagSize) {
    return CorruptionError(
        "the stored data was shorter than the required size");
  }
  std::string_view nonce = sealed.substr(0, kSecretboxNonceSize);
  std::string_view tag = sealed.substr(kSecretboxNonceSize, kSecretboxTagSize);
  std::string_view ct = sealed.substr(kSecretboxNonceSize + kSecretboxTagSize);
  RETURN_IF_ERROR(CheckSecretboxArgs(key, nonce));
  std::string stream(32 + ct.size(), '\0');
  std::memcpy(stream.data() + 32, ct.data(), ct.size());
  XSalsa20XorInPlace(Bytes(key), Bytes(nonce), Bytes(stream), stream.size());
  ASSIGN_OR_RETURN(std::string want, Poly1305(Bytes(stream), ct));
  OPENSSL_cleanse(stream.data(), 32);
  if (CRYPTO_memcmp(want.data(), tag.data(), kSecretboxTagSize) != 0) {
    OPENSSL_cleanse(stream.data(), stream.size());
    // kube-apiserver says "output array was not large enough for
    // encryption" here, which misleads; this says what failed.
    return CorruptionError("secretbox: message authentication failed");
  }
  return stream.substr(32);
}

}  // namespace kplane::apiserver::encryption
