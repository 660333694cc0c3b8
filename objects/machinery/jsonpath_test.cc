// client-go's JSONPath templates, as kpctl's -o jsonpath and the API
// server's printer columns use them.
#include "objects/machinery/jsonpath.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"

namespace kplane::machinery {
namespace {

rapidjson::Document Json(std::string_view s) {
  rapidjson::Document d;
  EXPECT_TRUE(json::ParseDom(s, &d).ok()) << s;
  return d;
}

std::string RunPath(std::string_view templ, std::string_view json) {
  StatusOr<JsonPath> p = JsonPath::Parse(templ);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? p->Execute(Json(json)) : "<error>";
}

constexpr char kPods[] = R"({"kind":"List","items":[
  {"metadata":{"name":"a","annotations":{"x.io/y":"z"}},
   "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"},
     {"type":"PodScheduled","status":"True"}]},"spec":{"replicas":2}},
  {"metadata":{"name":"b"},"status":{"phase":"Pending","conditions":[
     {"type":"Ready","status":"False"}]}}]})";

TEST(JsonPathTest, FieldsIndexesWildcardsFiltersRanges) {
  EXPECT_EQ(RunPath("{.kind}", kPods), "List");
  EXPECT_EQ(RunPath("{.items[*].metadata.name}", kPods), "a b");
  EXPECT_EQ(RunPath("{.items[0].spec.replicas}", kPods), "2");
  EXPECT_EQ(RunPath("{.items[-1].status.phase}", kPods), "Pending");
  EXPECT_EQ(RunPath("{.items[0].metadata.annotations['x.io/y']}", kPods), "z");
  EXPECT_EQ(
      RunPath(R"({.items[*].status.conditions[?(@.type=="Ready")].status})",
              kPods),
      "True False");
  EXPECT_EQ(RunPath(R"({.items[0].status.conditions[?(@.type!="Ready")].type})",
                    kPods),
            "PodScheduled");
  EXPECT_EQ(
      RunPath(
          R"({range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end})",
          kPods),
      "a\tRunning\nb\tPending\n");
  EXPECT_EQ(RunPath("name={.items[0].metadata.name}!", kPods), "name=a!");
  EXPECT_EQ(RunPath("{.items[0].spec}", kPods), R"({"replicas":2})");
  EXPECT_EQ(RunPath("{.nope.deeper}", kPods), "");
  EXPECT_FALSE(JsonPath::Parse("{.a").ok());
  EXPECT_FALSE(JsonPath::Parse("{range .items[*]}{.a}").ok());
  EXPECT_FALSE(JsonPath::Parse("{.a[x]}").ok());
}

// What a printer column reads: the first element's values, unprinted.
TEST(JsonPathTest, FindResultsGivesTheFirstElementsValues) {
  const rapidjson::Document pods = Json(kPods);
  StatusOr<JsonPath> p = JsonPath::Parse(
      R"({.items[0].status.conditions[?(@.type=="Ready")].status})");
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<const rapidjson::Value*> got = p->FindResults(pods);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(JsonPath::PrintValue(*got[0]), "True");

  p = JsonPath::Parse("{.items[*].metadata.name}");
  ASSERT_TRUE(p.ok()) << p.status();
  got = p->FindResults(pods);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(JsonPath::PrintValue(*got[1]), "b");

  p = JsonPath::Parse("{.items[0].spec}");
  ASSERT_TRUE(p.ok()) << p.status();
  got = p->FindResults(pods);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0]->IsObject());
  EXPECT_EQ(JsonPath::PrintValue(*got[0]), R"({"replicas":2})");

  p = JsonPath::Parse("{.items[5].spec}");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->FindResults(pods).empty());
  p = JsonPath::Parse("text{.kind}");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->FindResults(pods).empty());
}

}  // namespace
}  // namespace kplane::machinery
