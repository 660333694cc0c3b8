#include "base/json.h"

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

namespace kplane::json {
namespace {

std::string Nested(int depth, bool objects) {
  std::string s;
  s.reserve(static_cast<size_t>(depth) * 6 + 1);
  for (int i = 0; i < depth; ++i) s += objects ? "{\"a\":" : "[";
  s += "1";
  for (int i = 0; i < depth; ++i) s += objects ? "}" : "]";
  return s;
}

std::string Compact(const rapidjson::Value& v, bool iterative) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  if (iterative) {
    EXPECT_TRUE(Accept(v, w));
  } else {
    v.Accept(w);
  }
  return std::string(b.GetString(), b.GetSize());
}

TEST(BoundedJson, DepthLimitIsKubernetes) {
  for (bool objects : {false, true}) {
    rapidjson::Document d;
    Outcome ok = ParseDom(Nested(kMaxDepth, objects), &d);
    EXPECT_TRUE(ok.ok()) << ok.Message();
    Outcome deep = ParseDom(Nested(kMaxDepth + 1, objects), &d);
    EXPECT_FALSE(deep.ok());
    EXPECT_TRUE(deep.too_deep);
    EXPECT_EQ(deep.Message(), "exceeded max depth of 10000");
    EXPECT_TRUE(d.IsNull());  // left null on error
  }
}

// A recursive parser overflows the stack long before this depth (a few
// hundred bytes of stack per level): the parse must not recurse.
TEST(BoundedJson, HundredThousandLevelsAreRefusedWithoutRecursion) {
  for (bool objects : {false, true}) {
    rapidjson::Document d;
    Outcome r = ParseDom(Nested(100000, objects), &d);
    EXPECT_TRUE(r.too_deep);
    // With the limit raised, the parse itself still holds no stack.
    r = ParseDom(Nested(100000, objects), &d, 1000000);
    ASSERT_TRUE(r.ok()) << r.Message();
    // ...and neither do Accept and Measure over the result.
    EXPECT_EQ(Measure(d).depth, 100000);
    rapidjson::StringBuffer b;
    rapidjson::Writer<rapidjson::StringBuffer> w(b);
    EXPECT_TRUE(Accept(d, w));
    EXPECT_EQ(std::string(b.GetString(), b.GetSize()), Nested(100000, objects));
  }
}

TEST(BoundedJson, SyntaxErrorsKeepRapidJsonsWordsAndOffset) {
  rapidjson::Document d;
  Outcome r = ParseDom("{\"a\":tru}", &d);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.too_deep);
  EXPECT_EQ(r.Message(), "Invalid value.");
  rapidjson::Document recursive;
  recursive.Parse("{\"a\":tru}");
  ASSERT_TRUE(recursive.HasParseError());
  EXPECT_EQ(r.offset, recursive.GetErrorOffset());
  EXPECT_FALSE(ParseDom("[1] 2", &d).ok());  // one value only
  EXPECT_FALSE(ParseDom(std::string_view("[1\0]", 4), &d).ok());
}

TEST(BoundedJson, ParseDomHonoursFlags) {
  rapidjson::Document d;
  ASSERT_TRUE(ParseDom<rapidjson::kParseFullPrecisionFlag>(
                  "{\"x\":0.1,\"y\":[true]}", &d)
                  .ok());
  EXPECT_EQ(d["x"].GetDouble(), 0.1);
  EXPECT_FALSE(
      ParseDom<rapidjson::kParseValidateEncodingFlag>("\"\xff\"", &d).ok());
}

TEST(BoundedJson, SaxHandlersSeeTheSameEvents) {
  const std::string text =
      R"({"a":[1,-2,3.5,"s",null,true,false,{}],"b":{"c":18446744073709551615}})";
  rapidjson::Document d;
  ASSERT_TRUE(ParseDom(text, &d).ok());
  EXPECT_EQ(Compact(d, true), Compact(d, false));
  EXPECT_EQ(Compact(d, true), text);
}

TEST(BoundedJson, AcceptStopsWhenTheHandlerDoes) {
  struct StopAtSecondString : rapidjson::BaseReaderHandler<> {
    int strings = 0;
    bool String(const char*, rapidjson::SizeType, bool) {
      return ++strings < 2;
    }
  } h;
  rapidjson::Document d;
  ASSERT_TRUE(ParseDom(R"(["a",["b","c"]])", &d).ok());
  EXPECT_FALSE(Accept(d, h));
  EXPECT_EQ(h.strings, 2);
}

TEST(BoundedJson, MeasureEstimatesCompactSize) {
  rapidjson::Document d;
  const std::string text =
      R"({"name":"web","n":-12,"u":7,"list":[true,false,null],"o":{}})";
  ASSERT_TRUE(ParseDom(text, &d).ok());
  Extent e = Measure(d);
  EXPECT_EQ(e.depth, 2);
  EXPECT_EQ(e.bytes, text.size());
  rapidjson::Document scalar;
  ASSERT_TRUE(ParseDom("-9223372036854775808", &scalar).ok());
  EXPECT_EQ(Measure(scalar).bytes, 20u);
  EXPECT_EQ(Measure(scalar).depth, 0);
  // Counting stops past the cap.
  EXPECT_GT(Measure(d, 10).bytes, 10u);
  EXPECT_LT(Measure(d, 10).bytes, text.size());
}

}  // namespace
}  // namespace kplane::json
