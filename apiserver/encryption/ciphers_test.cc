#include "apiserver/encryption/ciphers.h"

#include <gtest/gtest.h>

#include <string>

namespace kplane::apiserver::encryption {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// ---- secretbox: XSalsa20 (ours) + Poly1305 (OpenSSL) ----------------------

// The XSalsa20 vector of golang.org/x/crypto/salsa20 (salsa20_test.go).
TEST(XSalsa20Test, KnownAnswer) {
  auto out = XSalsa20Xor("this is 32-byte key for xsalsa20",
                         "24-byte nonce for xsalsa", "Hello world!");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Hex(*out), "002d4513843fc240c401e541");
}

// NaCl's output for key 0x01.., nonce 0x02.., message 0x03 x 64 (the vector
// golang.org/x/crypto/nacl/secretbox took from the C implementation).
TEST(SecretboxTest, NaclKnownAnswer) {
  auto box =
      SecretboxSealDetached(std::string(32, '\x01'), std::string(24, '\x02'),
                            std::string(64, '\x03'));
  ASSERT_TRUE(box.ok()) << box.status();
  EXPECT_EQ(Hex(*box),
            "8442bc313f4626f1359e3b50122b6ce6fe66ddfe7d39d14e637eb4fd5b45beadab"
            "55198df6ab5368439792a23c87db70acb6156dc5ef957ac04f6276cf6093b84be7"
            "7ff0849cc33e34b7254d5a8f65ad");
}

// Longer than three keystream blocks, against Go's x/crypto secretbox.Seal
// (generated once; the counter must carry across blocks).
TEST(SecretboxTest, MultiBlockMatchesGoImplementation) {
  std::string msg;
  for (int i = 0; i < 200; ++i) msg.push_back(static_cast<char>(i));
  auto box = SecretboxSealDetached("0123456789abcdef0123456789abcdef",
                                   "twenty-four-byte-nonce!!", msg);
  ASSERT_TRUE(box.ok()) << box.status();
  EXPECT_EQ(
      Hex(*box),
      "71454ff4cca24bd798a15e5b1e01c112875657eeac012b81c80c0846f31a5c2f955464"
      "2f505ebf2fa2399da1bdbe5711dd9b5a76892c29e09009e7eeb9a9474049cf41d1a2e0"
      "cfd4eeedd4a2af3a35e19ac875651e510a44b5edde54eb6198c2b21fdef69910b62703"
      "a21c968f6d49a673cf98574edce2847c4df27c4dd9260df24f6522dcfddbb2f47ab5a1"
      "548c4239c534f1014864dfd61fc10f6f3795a30d18d18b08124c6c65bc074d04223b46"
      "e7b8e0394dfa9fe6f6c90f4e731f7727071144c5efa3e8d578b4490084dd6ee88ace75"
      "cb0bcb20d221");
  auto opened = SecretboxOpen("0123456789abcdef0123456789abcdef",
                              "twenty-four-byte-nonce!!" + *box);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(*opened, msg);
}

TEST(SecretboxTest, EveryFlippedBitFails) {
  const std::string key(32, 'k');
  auto sealed = SecretboxSeal(key, "the secret");
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(sealed->size(), 24 + 16 + 10);
  for (size_t i = 0; i < sealed->size(); ++i) {
    std::string bad = *sealed;
    bad[i] ^= 0x20;
    auto opened = SecretboxOpen(key, bad);
    ASSERT_FALSE(opened.ok()) << "byte " << i;
    EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
    EXPECT_EQ(opened.status().message(),
              "secretbox: message authentication failed");
  }
  EXPECT_FALSE(SecretboxOpen(std::string(32, 'x'), *sealed).ok());
  EXPECT_FALSE(SecretboxOpen(key, sealed->substr(0, 39)).ok());
}

// ---- AES ------------------------------------------------------------------

// Go's crypto/cipher GCM (what kube-apiserver runs) on the same input.
TEST(AesGcmTest, MatchesGoImplementation) {
  auto sealed =
      AesGcmSealWithNonce("0123456789abcdef0123456789abcdef", "twelve-bytes",
                          std::string("k8s\0 secret payload: hunter2", 28),
                          "/registry/secrets/default/db");
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  EXPECT_EQ(Hex(*sealed),
            "7477656c76652d627974657343d51e78792bc59f6fe95df4f258ca8a978df65725"
            "07c71b3782d6f0b94ed425a942b28c4204c9397d514c78");
}

TEST(AesGcmTest, TamperWrongKeyOrOtherAadFail) {
  const std::string key(32, 'k');
  auto sealed = AesGcmSeal(key, "payload", "/registry/secrets/a/b");
  ASSERT_TRUE(sealed.ok());
  auto opened = AesGcmOpen(key, *sealed, "/registry/secrets/a/b");
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, "payload");
  for (size_t i = 0; i < sealed->size(); ++i) {
    std::string bad = *sealed;
    bad[i] ^= 1;
    auto r = AesGcmOpen(key, bad, "/registry/secrets/a/b");
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.status().message(), "cipher: message authentication failed");
  }
  EXPECT_FALSE(AesGcmOpen(key, *sealed, "/registry/secrets/a/c").ok());
  EXPECT_FALSE(
      AesGcmOpen(std::string(32, 'j'), *sealed, "/registry/secrets/a/b").ok());
  EXPECT_FALSE(AesGcmOpen(key, sealed->substr(0, 27), "").ok());
}

TEST(AesGcmTest, RandomNoncesDiffer) {
  const std::string key(16, 'k');
  auto a = AesGcmSeal(key, "same", "");
  auto b = AesGcmSeal(key, "same", "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->substr(0, 12), b->substr(0, 12));
}

TEST(AesCbcTest, MatchesGoImplementationAndChecksPadding) {
  std::string plain("k8s\0 secret payload: hunter2", 28);
  auto sealed = AesCbcSealWithIv("0123456789abcdef", "sixteen-byte-iv!", plain);
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  EXPECT_EQ(Hex(*sealed),
            "7369787465656e2d627974652d697621b490f62bbda3bd1b5b85c9fc7a1d1700cd"
            "9fa26a56b9a15c170b13fc5eadd20e");
  auto opened = AesCbcOpen("0123456789abcdef", *sealed);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(*opened, plain);
  // A wrong key garbles the padding (almost always): an error, not bytes.
  auto wrong = AesCbcOpen("fedcba9876543210", *sealed);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kCorruption);
  auto ragged = AesCbcOpen("0123456789abcdef", sealed->substr(0, 40));
  EXPECT_EQ(ragged.status().message(),
            "the stored data is not a multiple of the block size");
}

TEST(AesTest, KeySizes) {
  for (size_t n : {16, 24, 32}) {
    EXPECT_TRUE(AesGcmSeal(std::string(n, 'k'), "x", "").ok()) << n;
    EXPECT_TRUE(AesCbcSeal(std::string(n, 'k'), "x").ok()) << n;
  }
  EXPECT_EQ(AesGcmSeal(std::string(20, 'k'), "x", "").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kplane::apiserver::encryption
