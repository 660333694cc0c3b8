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
  // Past int64 nanoseconds (about 292 years), as Go refuses it; the
  // conversion used to be undefined behaviour.
  EXPECT_EQ(ParseGoDuration("2562047h"), 2562047LL * 3600 * 1'000'000'000);
  EXPECT_EQ(ParseGoDuration("550055000m"), std::nullopt);
  EXPECT_EQ(ParseGoDuration("-9999999999h"), std::nullopt);
  EXPECT_EQ(ParseGoDuration(std::string(400, '9') + "s"), std::nullopt);
}

// Expected values are Go's: fmt.Sprintf("%q", s).
TEST(StringsTest, GoQuote) {
  EXPECT_EQ(GoQuote(""), R"("")");
  EXPECT_EQ(GoQuote("web-1"), R"("web-1")");
  EXPECT_EQ(GoQuote("a\"b\\c\n"), R"("a\"b\\c\n")");
  EXPECT_EQ(GoQuote("\a\b\f\r\t\v"), R"("\a\b\f\r\t\v")");
  EXPECT_EQ(GoQuote(std::string("\0\x01\x7f", 3)), R"("\x00\x01\x7f")");
  // Valid UTF-8 stays as it is; bytes that are not UTF-8 are escaped.
  EXPECT_EQ(GoQuote("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(GoQuote("\xff\xfe"), R"("\xff\xfe")");
  EXPECT_EQ(GoQuote("\xc3"), R"("\xc3")");                  // truncated
  EXPECT_EQ(GoQuote("\xc0\xaf"), R"("\xc0\xaf")");          // overlong
  EXPECT_EQ(GoQuote("\xed\xa0\x80"), R"("\xed\xa0\x80")");  // surrogate
  EXPECT_EQ(GoQuote("\xc2\x85"), R"("\u0085")");            // C1 control
}

TEST(StringsTest, PrefixRangeEnd) {
  EXPECT_EQ(PrefixRangeEnd("a"), "b");
  EXPECT_EQ(PrefixRangeEnd("/registry/pods/"), "/registry/pods0");
  EXPECT_EQ(PrefixRangeEnd("a\xff"), "b");
  EXPECT_EQ(PrefixRangeEnd("\xff"), std::string(1, '\0'));
}

TEST(StringsTest, HexDump) {
  EXPECT_EQ(HexDump(std::string("k8s\0", 4)), "6b 38 73 00");
}

}  // namespace
}  // namespace kplane
