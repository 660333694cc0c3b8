#include "base/strings.h"

#include <gtest/gtest.h>

namespace kplane {
namespace {

TEST(StringsTest, Split) {
  EXPECT_EQ(StrSplit("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(StrSplit("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(StrJoin({"a", "b"}, ", "), "a, b");
}

TEST(StringsTest, ParseBoolLikeGo) {
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) {
    EXPECT_EQ(ParseBool(t), true) << t;
  }
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) {
    EXPECT_EQ(ParseBool(f), false) << f;
  }
  EXPECT_EQ(ParseBool("yes"), std::nullopt);
  EXPECT_EQ(ParseBool("tRuE"), std::nullopt);
}

TEST(StringsTest, ParseIntegers) {
  EXPECT_EQ(ParseInt64("-42"), -42);
  EXPECT_EQ(ParseInt64("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseInt64("9223372036854775808"), std::nullopt);
  EXPECT_EQ(ParseInt64("12a"), std::nullopt);
  EXPECT_EQ(ParseInt64(""), std::nullopt);
  EXPECT_EQ(ParseUint64("18446744073709551615"), UINT64_MAX);
}

TEST(StringsTest, ParseGoDuration) {
  EXPECT_EQ(ParseGoDuration("100ms"), 100'000'000);
  EXPECT_EQ(ParseGoDuration("1.5s"), 1'500'000'000);
  EXPECT_EQ(ParseGoDuration("1m30s"), 90'000'000'000);
  EXPECT_EQ(ParseGoDuration("2h"), 7'200'000'000'000);
  EXPECT_EQ(ParseGoDuration("0"), 0);
  EXPECT_EQ(ParseGoDuration("5"), std::nullopt);
  EXPECT_EQ(ParseGoDuration("3x"), std::nullopt);
}

TEST(StringsTest, HexDump) {
  EXPECT_EQ(HexDump(std::string("k8s\0", 4)), "6b 38 73 00");
}

}  // namespace
}  // namespace kplane
