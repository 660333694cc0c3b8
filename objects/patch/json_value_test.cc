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

TEST(JsonValueTest, YamlBodies) {
  struct C {
    const char* text;
    const char* want;
  } cases[] = {
      {R"({"a": 1})", R"({"a":1})"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    "
       "a: \"1\"\nspec:\n  replicas: 3\n  paused: false\n  x: ~\n  f: 1.5\n"
       "  list:\n  - a\n  - 2\n",
       R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
          "spec":{"replicas":3,"paused":false,"x":null,"f":1.5,"list":["a",2]}})"},
      {"a: '007'\nb: 007x\n", R"({"a":"007","b":"007x"})"},
  };
  for (const auto& c : cases) {
    rapidjson::Document d;
    Status st = ParseJsonOrYaml(c.text, &d);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(CanonicalJson(d), Canon(c.want)) << c.text;
  }
  rapidjson::Document d;
  EXPECT_FALSE(ParseJsonOrYaml("a: [1,\n", &d).ok());
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
