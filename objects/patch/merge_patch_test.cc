// RFC 7386 JSON merge patch (the RFC's appendix A examples plus kubectl's
// label/scale patches) and the merge-patch builders.
#include "objects/patch/merge_patch.h"

#include <gtest/gtest.h>

#include "objects/patch/test_util.h"

namespace kplane::patch {
namespace {

struct Case {
  const char* target;
  const char* patch;
  const char* want;
};

TEST(MergePatchTest, Rfc7386AppendixA) {
  const Case cases[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})",
       R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", "null", "null"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
      // kubectl label / scale.
      {R"({"metadata":{"labels":{"tier":"a","x":"1"}}})",
       R"({"metadata":{"labels":{"tier":null}}})",
       R"({"metadata":{"labels":{"x":"1"}}})"},
      {R"({"spec":{"replicas":2,"selector":"app=nginx"}})",
       R"({"spec":{"replicas":3}})",
       R"({"spec":{"replicas":3,"selector":"app=nginx"}})"},
  };
  for (const auto& c : cases) {
    rapidjson::Document t, p;
    ASSERT_TRUE(ParseJson(c.target, &t).ok());
    ASSERT_TRUE(ParseJson(c.patch, &p).ok());
    ApplyMergePatch(t, p, t.GetAllocator());
    EXPECT_EQ(CanonicalJson(t), Canon(c.want)) << c.target << " + " << c.patch;
  }
}

TEST(MergePatchTest, CreateMergePatchRoundTrips) {
  const Case cases[] = {
      {R"({})", R"({})", R"({})"},
      {R"({"a":1})", R"({"a":1})", R"({})"},
      {R"({"a":1,"b":2})", R"({"a":1})", R"({"b":null})"},
      {R"({"a":{"x":1,"y":2}})", R"({"a":{"x":1,"y":3}})", R"({"a":{"y":3}})"},
      {R"({"a":[1,2]})", R"({"a":[2,1]})", R"({"a":[2,1]})"},
      {R"({"a":{"x":1}})", R"({"a":5})", R"({"a":5})"},
      {R"({"a":1})", R"({"a":1,"b":{"c":[true]}})", R"({"b":{"c":[true]}})"},
  };
  for (const auto& c : cases) {
    rapidjson::Document o, m;
    ASSERT_TRUE(ParseJson(c.target, &o).ok());
    ASSERT_TRUE(ParseJson(c.patch, &m).ok());
    JsonValue p = CreateMergePatch(o, m, o.GetAllocator());
    EXPECT_EQ(CanonicalJson(p), Canon(c.want));
    ApplyMergePatch(o, p, o.GetAllocator());
    EXPECT_EQ(CanonicalJson(o), CanonicalJson(m));
  }
}

TEST(MergePatchTest, ThreeWayJsonMergePatch) {
  struct ThreeCase {
    const char* original;
    const char* modified;
    const char* current;
    const char* want;  // nullptr: conflict
  } cases[] = {
      // Deletion of an applied field, addition kept from the server.
      {R"({"a":1,"b":2})", R"({"a":1})", R"({"a":1,"b":2,"s":9})",
       R"({"b":null})"},
      // Change relative to live.
      {R"({"a":1})", R"({"a":2})", R"({"a":5})", R"({"a":2})"},
      // Nested: only the changed leaf.
      {R"({"spec":{"x":1,"y":1}})", R"({"spec":{"x":2,"y":1}})",
       R"({"spec":{"x":1,"y":1,"z":0}})", R"({"spec":{"x":2}})"},
      // Unchanged.
      {R"({"a":1})", R"({"a":1})", R"({"a":1,"b":2})", R"({})"},
  };
  for (const auto& c : cases) {
    rapidjson::Document o, m, cur;
    ASSERT_TRUE(ParseJson(c.original, &o).ok());
    ASSERT_TRUE(ParseJson(c.modified, &m).ok());
    ASSERT_TRUE(ParseJson(c.current, &cur).ok());
    auto got = CreateThreeWayJsonMergePatch(o, m, cur);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, Canon(c.want)) << c.original;
  }
}

TEST(MergePatchTest, ThreeWayPreconditions) {
  rapidjson::Document o, m, c;
  ASSERT_TRUE(ParseJson(R"({"kind":"A","metadata":{"name":"x"}})", &o).ok());
  ASSERT_TRUE(ParseJson(R"({"kind":"A","metadata":{"name":"y"}})", &m).ok());
  ASSERT_TRUE(ParseJson(R"({"kind":"A","metadata":{"name":"x"}})", &c).ok());
  auto got = CreateThreeWayJsonMergePatch(
      o, m, c,
      {RequireKeyUnchanged("kind"), RequireMetadataKeyUnchanged("name")});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  auto ok =
      CreateThreeWayJsonMergePatch(o, m, c, {RequireKeyUnchanged("kind")});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, R"({"metadata":{"name":"y"}})");
}

TEST(MergePatchTest, HasConflicts) {
  struct C {
    const char* l;
    const char* r;
    bool want;
  } cases[] = {
      {R"({"a":1})", R"({"a":1})", false},
      {R"({"a":1})", R"({"a":2})", true},
      {R"({"a":1})", R"({"b":1})", false},
      {R"({"a":[1]})", R"({"a":[1,2]})", true},
      {R"({"a":{"b":1}})", R"({"a":{"c":1}})", false},
      {R"({"a":{"b":1}})", R"({"a":null})", true},
  };
  for (const auto& c : cases) {
    rapidjson::Document l, r;
    ASSERT_TRUE(ParseJson(c.l, &l).ok());
    ASSERT_TRUE(ParseJson(c.r, &r).ok());
    EXPECT_EQ(JsonPatchesHaveConflicts(l, r), c.want) << c.l << " " << c.r;
  }
}

}  // namespace
}  // namespace kplane::patch
