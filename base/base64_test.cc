#include "base/base64.h"

#include <gtest/gtest.h>

namespace kplane {
namespace {

TEST(Base64Test, RoundTripsRfcVectors) {
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("k8s\0", 4), "azhzAA=="}};
  for (const auto& [plain, enc] : cases) {
    EXPECT_EQ(Base64Encode(plain), enc);
    auto dec = Base64Decode(enc);
    ASSERT_TRUE(dec.ok());
    EXPECT_EQ(*dec, plain);
  }
}

TEST(Base64Test, RejectsGarbage) {
  EXPECT_FALSE(Base64Decode("a$==").ok());
  EXPECT_FALSE(Base64Decode("abcde").ok());
  EXPECT_EQ(*Base64Decode("Zm8"), "fo");  // unpadded accepted
}

TEST(Base64UrlTest, UrlAlphabetWithoutPadding) {
  // 0xfb 0xff encodes to "+/8=" in the standard alphabet.
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  ASSERT_TRUE(Base64UrlDecode("-_8").ok());
  EXPECT_EQ(*Base64UrlDecode("-_8"), "\xfb\xff");
  EXPECT_EQ(*Base64UrlDecode("Zm9vYg"), "foob");
  EXPECT_FALSE(Base64UrlDecode("+/8").ok());
  EXPECT_FALSE(Base64UrlDecode("Zg==").ok());
}

}  // namespace
}  // namespace kplane
