// RFC 7386 JSON merge patch (the RFC's appendix A examples plus kubectl's
// label/scale patches) and the merge-patch builders.
#include "objects/patch/merge_patch.h"

#include <gtest/gtest.h>

#include <string>

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

// Kubernetes decodes a merge patch into Go maps (evanphx json-patch's
// partialDoc): of a member given twice in one object, at any depth, only
// the last counts; the first is not merged in before it.
TEST(MergePatchTest, DuplicateKeysLastWins) {
  const Case cases[] = {
      {R"({"data":{"a":"x","b":"y"}})",
       R"({"data":{"a":"1"},"data":{"b":"2"}})",
       R"({"data":{"a":"x","b":"2"}})"},
      {R"({"data":{"a":"x","b":"y"}})", R"({"data":null,"data":{"b":"2"}})",
       R"({"data":{"a":"x","b":"2"}})"},
      {R"({"data":{"a":"x"}})", R"({"data":{"b":"2"},"data":null})", R"({})"},
      {R"({"m":{"l":{"a":"x"}}})", R"({"m":{"l":{"b":"1"},"l":{"c":"2"}}})",
       R"({"m":{"l":{"a":"x","c":"2"}}})"},
      {R"({})", R"({"a":[{"k":1,"k":2}]})", R"({"a":[{"k":2}]})"},
  };
  for (const auto& c : cases) {
    rapidjson::Document t, p;
    ASSERT_TRUE(ParseJson(c.target, &t).ok());
    ASSERT_TRUE(ParseJson(c.patch, &p).ok());
    ApplyMergePatch(t, p, t.GetAllocator());
    EXPECT_EQ(CanonicalJson(t), Canon(c.want)) << c.target << " + " << c.patch;
  }
  // The same through the index a patch of many members is merged with.
  std::string target = R"({"d":{"a":"x"})", patch = "{";
  for (int i = 0; i < 100; ++i) {
    const std::string k = "\"k" + std::to_string(i) + "\":";
    target += "," + k + R"({"a":"x"})";
    patch += k + R"({"b":"1"},)" + k + R"({"c":"2"},)";
  }
  target += "}";
  patch += R"("d":{"b":"1"},"d":{"c":"2"}})";
  rapidjson::Document t, p;
  ASSERT_TRUE(ParseJson(target, &t).ok());
  ASSERT_TRUE(ParseJson(patch, &p).ok());
  ApplyMergePatch(t, p, t.GetAllocator());
  ASSERT_TRUE(t.IsObject());
  EXPECT_EQ(t.MemberCount(), 101u);
  for (const auto& m : t.GetObject()) {
    EXPECT_EQ(CanonicalJson(m.value), Canon(R"({"a":"x","c":"2"})"))
        << m.name.GetString();
  }
}

// A patch of many members (merged through an index, removals in one pass)
// gives what applying its members one at a time gives, order included:
// removals, updates, new members, objects over scalars, nested nulls.
TEST(MergePatchTest, ManyMembersMergeAsOneAtATime) {
  std::string target = "{", patch = "{";
  for (int i = 0; i < 100; ++i) {
    target +=
        (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  }
  target += ",\"obj\":{\"a\":1,\"b\":2}}";
  for (int i = 0; i < 30; ++i) patch += "\"k" + std::to_string(i) + "\":null,";
  for (int i = 30; i < 60; ++i)
    patch += "\"k" + std::to_string(i) + "\":\"x\",";
  for (int i = 0; i < 10; ++i) {
    patch += "\"n" + std::to_string(i) + "\":{\"a\":1,\"b\":null},";
  }
  patch += "\"k60\":{\"z\":null},\"obj\":{\"a\":null,\"c\":3},";
  patch += "\"k5\":5,\"k31\":null,\"gone\":null}";
  rapidjson::Document whole, one_by_one, p;
  ASSERT_TRUE(ParseJson(target, &whole).ok());
  ASSERT_TRUE(ParseJson(target, &one_by_one).ok());
  ASSERT_TRUE(ParseJson(patch, &p).ok());
  ApplyMergePatch(whole, p, whole.GetAllocator());
  // Of "k5" and "k31", given twice, the last (the patch decodes as a Go
  // map).
  KeepLastMembers(p);
  for (const auto& m : p.GetObject()) {
    rapidjson::Document single;
    single.SetObject();
    single.AddMember(JsonValue(m.name, single.GetAllocator()),
                     JsonValue(m.value, single.GetAllocator()),
                     single.GetAllocator());
    ApplyMergePatch(one_by_one, single, one_by_one.GetAllocator());
  }
  EXPECT_EQ(CompactJson(whole), CompactJson(one_by_one));
  EXPECT_EQ(whole.MemberCount(), 100u - 30u - 1u + 1u + 10u + 1u);
}

// ... in one walk: labels changed by one patch took a scan of the map per
// label (80 s of a core for 300,000, -O1; 0.55 s now); with 400,000 the
// old merge passes the test's 120 s timeout.
TEST(MergePatchTest, ManyMembersAreOneWalk) {
  std::string target = "{", patch = "{";
  for (int i = 0; i < 400000; ++i) {
    const std::string k = "\"k" + std::to_string(i) + "\":";
    target += (i ? "," : "") + k + "\"v\"";
    patch += (i ? "," : "") + k + (i % 2 ? "\"w\"" : "null");
  }
  target += "}";
  patch += "}";
  rapidjson::Document t, p;
  ASSERT_TRUE(ParseJson(target, &t).ok());
  ASSERT_TRUE(ParseJson(patch, &p).ok());
  ApplyMergePatch(t, p, t.GetAllocator());
  ASSERT_EQ(t.MemberCount(), 200000u);
  EXPECT_EQ(std::string(StringOf(t.MemberBegin()->name)), "k1");
  EXPECT_STREQ(t.MemberBegin()->value.GetString(), "w");
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
