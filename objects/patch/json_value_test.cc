#include "objects/patch/json_value.h"

#include <gtest/gtest.h>

#include "objects/patch/test_util.h"

namespace kplane::patch {
namespace {

JsonValue Parse(rapidjson::Document& d, const char* s) {
  EXPECT_TRUE(ParseJson(s, &d).ok()) << s;
  return JsonValue(d, d.GetAllocator());
}

TEST(JsonValueTest, KindsFollowGoDecoding) {
  rapidjson::Document d;
  EXPECT_EQ(KindOf(Parse(d, "1")), JsonKind::kInt);
  EXPECT_EQ(KindOf(Parse(d, "1.0")),
            JsonKind::kInt);  // k8s json: whole -> int64
  EXPECT_EQ(KindOf(Parse(d, "1.5")), JsonKind::kFloat);
  EXPECT_EQ(KindOf(Parse(d, "18446744073709551615")), JsonKind::kInt);
  EXPECT_EQ(KindOf(Parse(d, "\"s\"")), JsonKind::kString);
  EXPECT_EQ(KindOf(Parse(d, "null")), JsonKind::kNull);
  EXPECT_EQ(KindOf(Parse(d, "[]")), JsonKind::kArray);
  EXPECT_EQ(KindOf(Parse(d, "{}")), JsonKind::kObject);
  EXPECT_EQ(KindOf(Parse(d, "true")), JsonKind::kBool);
}

TEST(JsonValueTest, EqualityIgnoresKeyOrder) {
  struct C {
    const char* a;
    const char* b;
    bool eq;
  } cases[] = {
      {R"({"a":1,"b":[1,{"c":2}]})", R"({"b":[1,{"c":2}],"a":1})", true},
      {"1", "1.0", true},
      {"1", "1.5", false},
      {"1", "\"1\"", false},
      {"[1,2]", "[2,1]", false},
      {R"({"a":1})", R"({"a":1,"b":null})", false},
      {"null", "null", true},
      {"-5", "-5", true},
  };
  for (const auto& c : cases) {
    rapidjson::Document da, db;
    EXPECT_EQ(JsonEqual(Parse(da, c.a), Parse(db, c.b)), c.eq)
        << c.a << " vs " << c.b;
  }
}

TEST(JsonValueTest, GoStringMatchesFmtV) {
  struct C {
    const char* json;
    const char* want;
  } cases[] = {
      {"\"abc\"", "abc"},
      {"80", "80"},
      {"-3", "-3"},
      {"1.5", "1.5"},
      {"0.0001", "0.0001"},
      {"1e-05", "1e-05"},
      {"1234567.5", "1.2345675e+06"},
      {"123456.5", "123456.5"},
      {"true", "true"},
      {"null", "<nil>"},
      {"[1,\"a\"]", "[1 a]"},
      {R"({"b":1,"a":"x"})", "map[a:x b:1]"},
  };
  for (const auto& c : cases) {
    rapidjson::Document d;
    EXPECT_EQ(GoString(Parse(d, c.json)), c.want) << c.json;
  }
}

TEST(JsonValueTest, CanonicalJsonSortsKeysAndNormalizesWholeDoubles) {
  rapidjson::Document d;
  JsonValue v =
      Parse(d, R"({"b":{"z":1,"y":2.0},"a":[{"d":1,"c":0.5}],"$p":1})");
  EXPECT_EQ(CanonicalJson(v),
            R"({"$p":1,"a":[{"c":0.5,"d":1}],"b":{"y":2,"z":1}})");
  EXPECT_EQ(CompactJson(v),
            R"({"b":{"z":1,"y":2},"a":[{"d":1,"c":0.5}],"$p":1})");
}

TEST(JsonValueTest, ParseErrors) {
  rapidjson::Document d;
  Status st = ParseJson("{", &d);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "invalid JSON document");
}

TEST(JsonValueTest, ParseIsBoundedInDepth) {
  rapidjson::Document d;
  const std::string deep = std::string(10001, '[') + std::string(10001, ']');
  Status st = ParseJson(deep, &d);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "exceeded max depth of 10000");
  EXPECT_TRUE(ParseJson(deep.substr(1, deep.size() - 2), &d).ok());
}

TEST(JsonValueTest, CheckBounds) {
  rapidjson::Document d;
  ASSERT_TRUE(ParseJson(R"({"a":[[1]],"b":"xxxxxxxxxx"})", &d).ok());
  PatchLimits limits;
  EXPECT_TRUE(CheckBounds(d, limits, "it").ok());
  limits.max_depth = 2;
  Status st = CheckBounds(d, limits, "it");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "it: exceeded max depth of 2");
  limits.max_depth = 3;
  limits.max_bytes = 20;
  st = CheckBounds(d, limits, "the patched object");
  EXPECT_EQ(st.code(), StatusCode::kTooLarge);
  EXPECT_EQ(st.message(), "the patched object is larger than 20 bytes");
}

TEST(JsonValueTest, EqualityOfWideObjectsIgnoresOrder) {
  std::string a = "{", b = "{";
  for (int i = 0; i < 100; ++i) {
    a += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
    b += (i ? ",\"k" : "\"k") + std::to_string(99 - i) +
         "\":" + std::to_string(99 - i);
  }
  rapidjson::Document da, db;
  ASSERT_TRUE(ParseJson(a + "}", &da).ok());
  ASSERT_TRUE(ParseJson(b + "}", &db).ok());
  EXPECT_TRUE(JsonEqual(da, db));
  db["k7"].SetInt(8);
  EXPECT_FALSE(JsonEqual(da, db));
}

TEST(JsonValueTest, MemberHelpersKeepOrder) {
  rapidjson::Document d;
  ASSERT_TRUE(ParseJson(R"({"a":1,"b":2,"c":3})", &d).ok());
  EXPECT_TRUE(RemoveMember(d, "b"));
  EXPECT_FALSE(RemoveMember(d, "b"));
  SetMember(d, "a", JsonValue(9), d.GetAllocator());
  SetMember(d, "d", JsonValue(4), d.GetAllocator());
  EXPECT_EQ(CompactJson(d), R"({"a":9,"c":3,"d":4})");
  ASSERT_NE(FindMember(d, "c"), nullptr);
  EXPECT_EQ(FindMember(d, "zz"), nullptr);
}

}  // namespace
}  // namespace kplane::patch
