#include "base/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace kplane {
namespace {

TEST(Utf8, SequenceLengthFollowsGo) {
  EXPECT_EQ(Utf8SequenceLength("\xc3\xa9x"), 2u);
  EXPECT_EQ(Utf8SequenceLength("\xc0\xaf"), 0u);
  EXPECT_EQ(Utf8SequenceLength("\xed\xa0\x80"), 0u);
  EXPECT_EQ(Utf8SequenceLength(""), 0u);
}

TEST(Utf8, RunesAreCountedAndPrefixesNeverSplitOne) {
  const std::string s = "h\xc3\xa9\xe2\x82\xac!";  // h é € !
  EXPECT_EQ(Utf8RuneCount(s), 4u);
  EXPECT_EQ(Utf8RuneCount(""), 0u);
  EXPECT_EQ(Utf8PrefixBytes(s, 0), 0u);
  EXPECT_EQ(Utf8PrefixBytes(s, 1), 1u);
  EXPECT_EQ(Utf8PrefixBytes(s, 2), 3u);
  EXPECT_EQ(Utf8PrefixBytes(s, 3), 6u);
  EXPECT_EQ(Utf8PrefixBytes(s, 4), 7u);
  EXPECT_EQ(Utf8PrefixBytes(s, 100), 7u);
}

}  // namespace
}  // namespace kplane
