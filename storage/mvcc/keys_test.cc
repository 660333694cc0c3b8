#include "storage/mvcc/keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace kplane::mvcc::keys {
namespace {

TEST(MvccKeysTest, EscapingPreservesOrderOfUserKeys) {
  std::mt19937 rng(7);
  const std::string alphabet(
      "\x00\x01\xfe\xff"
      "ab",
      6);
  std::vector<std::string> user;
  for (int i = 0; i < 2000; ++i) {
    std::string k;
    int len = static_cast<int>(rng() % 5);
    for (int j = 0; j < len; ++j)
      k.push_back(alphabet[rng() % alphabet.size()]);
    user.push_back(k);
  }
  for (size_t i = 0; i + 1 < user.size(); ++i) {
    const std::string& a = user[i];
    const std::string& b = user[i + 1];
    EXPECT_EQ(a < b, VersionPrefix(a) < VersionPrefix(b)) << a << " vs " << b;
    // The versions of a key never interleave with another key's.
    EXPECT_EQ(a < b, VersionKey(a, 1, 0) < VersionKey(b, 999, 3));
  }
}

TEST(MvccKeysTest, VersionsAreNewestFirstAndRoundTrip) {
  std::string k("fo\0o", 4);
  std::string v1 = VersionKey(k, 1, 0);
  std::string v3 = VersionKey(k, 3, 0);
  std::string v3s2 = VersionKey(k, 3, 2);
  EXPECT_LT(v3s2, v3);  // a later change in the same revision comes first
  EXPECT_LT(v3, v1);
  // The seek key for revision 3 sorts before every version <= 3.
  EXPECT_LE(VersionSeekKey(k, 3), v3s2);
  EXPECT_GT(VersionSeekKey(k, 2), v3);

  std::string_view prefix;
  int64_t main;
  uint32_t sub;
  ASSERT_TRUE(ParseVersionKey(v3s2, &prefix, &main, &sub));
  EXPECT_EQ(main, 3);
  EXPECT_EQ(sub, 2u);
  std::string user;
  ASSERT_TRUE(UserKeyOfPrefix(prefix, &user));
  EXPECT_EQ(user, k);
  EXPECT_FALSE(ParseVersionKey("k\x00\x01short", &prefix, &main, &sub));
}

TEST(MvccKeysTest, UserKeyOfPrefixUndoesTheEscaping) {
  std::mt19937 rng(11);
  const std::string alphabet(
      "\x00\x01\xff"
      "ab",
      5);
  std::string user;
  for (int i = 0; i < 2000; ++i) {
    std::string k;
    int len = static_cast<int>(rng() % 7);
    for (int j = 0; j < len; ++j)
      k.push_back(alphabet[rng() % alphabet.size()]);
    // A reused buffer holding a longer key before.
    user.assign(std::string(20, 'x'));
    ASSERT_TRUE(UserKeyOfPrefix(VersionPrefix(k), &user));
    EXPECT_EQ(user, k);
  }
  // A NUL not escaped, or escaped with another byte, or no terminator.
  for (const std::string& bad :
       {std::string("ka\0b\0\x01", 6), std::string("ka\0\x01\0\x01", 6),
        std::string("ka\0", 3), std::string("kab\0\x02", 5),
        std::string("xab\0\x01", 5)}) {
    EXPECT_FALSE(UserKeyOfPrefix(bad, &user)) << bad;
  }
}

TEST(MvccKeysTest, WorkedExampleBytes) {
  // FORMAT.md's example: "foo" put at revision 3.
  std::string k = VersionKey("foo", 3, 0);
  EXPECT_EQ(k, std::string("kfoo\x00\x01"
                           "\xff\xff\xff\xff\xff\xff\xff\xfc"
                           "\xff\xff\xff\xff",
                           18));
  EXPECT_EQ(EventKey(3, 1), std::string("r\0\0\0\0\0\0\0\x03\0\0\0\x01", 13));
  // A range of the log starting at revision 3 takes every event of 3 and
  // none of 2, and is no event's key.
  EXPECT_EQ(EventRangeStart(3), std::string("r\0\0\0\0\0\0\0\x03", 9));
  EXPECT_LT(EventKey(2, 0xffffffff), EventRangeStart(3));
  EXPECT_LT(EventRangeStart(3), EventKey(3, 0));
}

TEST(MvccKeysTest, PrefixSuccessorSeparatesKeys) {
  std::string a = VersionPrefix("a");
  std::string succ = PrefixSuccessor(a);
  EXPECT_GT(succ, VersionKey("a", 0, 0));
  EXPECT_LT(succ, VersionKey(std::string("a\0", 2), INT64_MAX, UINT32_MAX));
  EXPECT_LT(succ, VersionKey("a\x01", INT64_MAX, UINT32_MAX));
  EXPECT_LT(succ, VersionKey("b", INT64_MAX, UINT32_MAX));
}

TEST(MvccKeysTest, VersionBoundsFollowEtcdRangeEnd) {
  std::string lower, upper;
  ASSERT_TRUE(VersionBounds("a", "", &lower, &upper));  // single key
  EXPECT_LT(VersionKey("a", 5, 0), upper);
  EXPECT_GE(VersionKey("a\x01", 5, 0), upper);

  ASSERT_TRUE(VersionBounds("a", std::string("\0", 1), &lower, &upper));
  EXPECT_LT(VersionKey("\xff\xff", 5, 0), upper);  // every key >= "a"
  EXPECT_EQ(upper, "l");

  ASSERT_TRUE(VersionBounds("a", "c", &lower, &upper));
  EXPECT_LT(VersionKey("bzz", 5, 0), upper);
  EXPECT_GE(VersionKey("c", 5, 0), upper);
  EXPECT_GE(VersionKey("a", 5, 0), lower);

  EXPECT_FALSE(VersionBounds("b", "b", &lower, &upper));
  EXPECT_FALSE(VersionBounds("b", "a", &lower, &upper));
}

TEST(MvccKeysTest, RecordsRoundTrip) {
  std::string rec = EncodePutRecord(7, 3, 0x123456789, std::string("v\0x", 3));
  mvccpb::KeyValue kv;
  ASSERT_TRUE(DecodePutRecord(rec, &kv));
  EXPECT_EQ(kv.create_revision(), 7);
  EXPECT_EQ(kv.version(), 3);
  EXPECT_EQ(kv.lease(), 0x123456789);
  EXPECT_EQ(kv.value(), std::string("v\0x", 3));
  EXPECT_FALSE(IsTombstoneRecord(rec));
  EXPECT_TRUE(IsTombstoneRecord(EncodeTombstoneRecord()));
  EXPECT_FALSE(DecodePutRecord(EncodeTombstoneRecord(), &kv));

  bool del;
  std::string_view user;
  const std::string event = EncodeEventRecord(true, "k");
  ASSERT_TRUE(DecodeEventRecord(event, &del, &user));
  EXPECT_TRUE(del);
  EXPECT_EQ(user, "k");

  int64_t id;
  std::string key;
  ASSERT_TRUE(ParseAttachKey(AttachKey(42, "x/y"), &id, &key));
  EXPECT_EQ(id, 42);
  EXPECT_EQ(key, "x/y");
  ASSERT_TRUE(ParseLeaseKey(LeaseKey(-5), &id));
  EXPECT_EQ(id, -5);
}

}  // namespace
}  // namespace kplane::mvcc::keys
