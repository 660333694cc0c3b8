#include "objects/patch/json_value.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// Of two members of one name, Go's map decoding keeps the last.
TEST(JsonValueTest, KeepLastMembers) {
  struct C {
    const char* in;
    const char* want;  // compact, in member order
  };
  const C cases[] = {
      {R"({"a":1,"b":2})", R"({"a":1,"b":2})"},
      {R"({"a":1,"b":2,"a":3})", R"({"b":2,"a":3})"},
      {R"({"d":{"a":"1"},"d":{"b":"2"}})", R"({"d":{"b":"2"}})"},
      {R"({"x":[{"k":1,"k":2},{"m":{"n":1,"n":null}}]})",
       R"({"x":[{"k":2},{"m":{"n":null}}]})"},
      {R"([{"a":1,"a":2}])", R"([{"a":2}])"},
      {R"("s")", R"("s")"},
  };
  for (const C& c : cases) {
    rapidjson::Document d;
    ASSERT_TRUE(ParseJson(c.in, &d).ok()) << c.in;
    EXPECT_EQ(HasDuplicateMembers(d), std::string(c.in) != c.want) << c.in;
    KeepLastMembers(d);
    EXPECT_EQ(CompactJson(d), c.want) << c.in;
    EXPECT_FALSE(HasDuplicateMembers(d)) << c.in;
  }
  // Wide objects (names found through a set).
  std::string in = "{", want = "{";
  for (int i = 0; i < 100; ++i) {
    in += "\"k" + std::to_string(i) + "\":0,";
  }
  for (int i = 0; i < 100; ++i) {
    const std::string m = "\"k" + std::to_string(i) + "\":" + std::to_string(i);
    in += m + (i < 99 ? "," : "}");
    want += m + (i < 99 ? "," : "}");
  }
  rapidjson::Document d;
  ASSERT_TRUE(ParseJson(in, &d).ok());
  EXPECT_TRUE(HasDuplicateMembers(d));
  KeepLastMembers(d);
  EXPECT_EQ(CompactJson(d), want);
}

// sigs.k8s.io/json's findings for a body decoded into map[string]interface{}
// (kube-apiserver's merge and strategic merge patches).
TEST(JsonValueTest, DuplicateFieldErrors) {
  rapidjson::Document d;
  auto errors = [&](const char* json) {
    EXPECT_TRUE(ParseJson(json, &d).ok()) << json;
    return DuplicateFieldErrors(d);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(errors(R"({"data":{"a":"1"}})"), V{});
  EXPECT_EQ(errors(R"({"data":{"a":"1"},"data":{"b":"2"}})"),
            V{R"(duplicate field "data")"});
  // Each in document order, a member before what its value holds; both
  // values of a repeated member are walked; each path once.
  EXPECT_EQ(
      errors(R"({"spec":{"paused":true,"paused":false,"template":{"spec":)"
             R"({"containers":[{"name":"n","p":"A","p":"N"}]}}},)"
             R"("spec":{"x":{"y":1,"y":2},"x":{"y":1,"y":2}}})"),
      (V{R"(duplicate field "spec.paused")",
         R"(duplicate field "spec.template.spec.containers[0].p")",
         R"(duplicate field "spec")", R"(duplicate field "spec.x.y")",
         R"(duplicate field "spec.x")"}));
  // Names are quoted as Go's %q; a non-object body has no members.
  EXPECT_EQ(errors(R"({"a\nb":1,"a\nb":2})"), V{R"(duplicate field "a\nb")"});
  EXPECT_EQ(errors(R"([{"a":1,"a":2}])"), V{R"(duplicate field "[0].a")"});
  // At most 100.
  std::string many = "{";
  for (int i = 0; i < 150; ++i) {
    const std::string k = "\"k" + std::to_string(i) + "\":{\"a\":1,\"a\":2}";
    many += k + (i < 149 ? "," : "}");
  }
  V got = errors(many.c_str());
  ASSERT_EQ(got.size(), 100u);
  EXPECT_EQ(got.back(), R"(duplicate field "k99.a")");
}

}  // namespace
}  // namespace kplane::patch
