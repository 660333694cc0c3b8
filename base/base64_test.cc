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

// Go's base64.StdEncoding.DecodeString; each error offset is Go 1.19's (as
// etcd 3.4.23's gateway answers the same key).
TEST(Base64GoStdTest, DecodesAsGoStdEncoding) {
  const std::pair<std::string, std::string> ok[] = {
      {"", ""},
      {"Zg==", "f"},
      {"Zm8=", "fo"},
      {"Zm9vYmFy", "foobar"},
      {"Zm9v\nYmFy", "foobar"},
      {"Zm9v\r\nYmFy\n", "foobar"},
      {"\nZ\rm\n9\nv\n", "foo"},
      {"Zg=\n=", "f"},
      {"Zm9\r=", "fo"},
      {"Zh==", "f"},  // trailing bits not checked
      {"\n", ""},
      {"+/8=", "\xfb\xff"},
  };
  for (const auto& [enc, plain] : ok) {
    auto dec = Base64DecodeGoStd(enc);
    ASSERT_TRUE(dec.ok()) << enc << ": " << dec.status();
    EXPECT_EQ(*dec, plain) << enc;
  }
  const std::pair<std::string, int> bad[] = {
      {"Zm8", 0},       {"-_8=", 0},   {"Zm9v====", 4}, {"Zm9v=", 4},
      {"Zg=", 3},       {"Zg", 0},     {"Z", 0},        {"Zm9vYg", 4},
      {"Zm=v", 2},      {"====", 0},   {"Zg==Zg==", 4}, {"Zg==x", 4},
      {"Zm9vYmFy!", 8}, {"Zm\n", 1},   {"Z\n\n", 2},    {"\nZm9", 1},
      {"Zm9v\nZ", 5},   {"Zg\n=", 4},  {"Zg=\n", 4},    {"Zg=\nx", 3},
      {"Zm9v YmFy", 4}, {"Zm9v\t", 4},
  };
  for (const auto& [enc, at] : bad) {
    auto dec = Base64DecodeGoStd(enc);
    ASSERT_FALSE(dec.ok()) << enc;
    EXPECT_EQ(dec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(dec.status().message(),
              "illegal base64 data at input byte " + std::to_string(at))
        << enc;
  }
  // Every byte string round-trips through Base64Encode, with or without
  // line breaks every 76 characters.
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::string plain = all.substr(0, n);
    std::string enc = Base64Encode(plain);
    EXPECT_EQ(*Base64DecodeGoStd(enc), plain);
    for (size_t i = 76; i < enc.size(); i += 77) enc.insert(i, "\n");
    EXPECT_EQ(*Base64DecodeGoStd(enc + "\n"), plain);
  }
}

}  // namespace
}  // namespace kplane
