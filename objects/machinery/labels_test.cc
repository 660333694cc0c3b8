// Label selectors: parse/String round trips, matching, errors and meta/v1
// LabelSelector conversion, after k8s.io/apimachinery/pkg/labels.
#include "objects/machinery/labels.h"

#include <gtest/gtest.h>

namespace kplane::machinery {
namespace {

TEST(LabelSelectorTest, ParseStringRoundTrip) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"", ""},
      {"x=a,y=b,z=c", "x=a,y=b,z=c"},
      {"x!=a,y=b", "x!=a,y=b"},
      {"x=", "x="},
      {"x= ", "x="},
      {"x=,z= ", "x=,z="},
      {"!x", "!x"},
      {"x>1", "x>1"},
      {"x>1,z<5", "x>1,z<5"},
      {"app=web", "app=web"},
      {"app==web", "app==web"},
      {"  app = web ,  tier != db ", "app=web,tier!=db"},
      {"z=1,a=2", "a=2,z=1"},  // sorted by key
      {"env in (prod, dev)", "env in (dev,prod)"},
      {"env notin (b,a,b)", "env notin (a,b)"},
      {"env in (prod)", "env in (prod)"},
      {"partition", "partition"},
      {"!partition,env in (a)", "env in (a),!partition"},
      {"example.com/key=v", "example.com/key=v"},
      {"k in (a,)", "k in (,a)"},
      {"k in ()", "k in ()"},
      {"in in (in, notin)", "in in (in,notin)"},
      {"x=in", "x=in"},
  };
  for (const auto& c : cases) {
    auto s = LabelSelector::Parse(c.in);
    ASSERT_TRUE(s.ok()) << c.in << ": " << s.status();
    EXPECT_EQ(s->String(), c.out) << c.in;
    auto again = LabelSelector::Parse(s->String());
    ASSERT_TRUE(again.ok()) << s->String();
    EXPECT_EQ(again->requirements(), s->requirements()) << c.in;
  }
}

TEST(LabelSelectorTest, ParseErrors) {
  struct Case {
    const char* in;
    const char* error;
  } cases[] = {
      {"x=a||y=b",
       "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": "
       "a valid label must be an empty string or consist of alphanumeric "
       "characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
       "regex used for validation is "
       "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"},
      {"x==a==b", "found '==', expected: ',' or 'end of string'"},
      {"!x=a", "found '=', expected: ',' or 'end of string'"},
      {"x<a",
       "unable to parse requirement: values[0]: Invalid value: \"a\": for "
       "'Gt', 'Lt' operators, the value must be an integer"},
      {"x=a,", "found '', expected: identifier after ','"},
      {",x=a", "found ',', expected: !, identifier, or 'end of string'"},
      {"x in a", "unable to parse requirement: found 'a' expected: '('"},
      {"x in (a",
       "unable to parse requirement: found '', expected: ',' or ')'"},
      {"x in (a b)",
       "unable to parse requirement: found 'b', expected: ',' or ')'"},
      {"x a",
       "unable to parse requirement: found 'a', expected: in, notin, =, "
       "==, !=, gt, lt"},
      {"a b=c",
       "unable to parse requirement: found 'b', expected: in, notin, "
       "=, ==, !=, gt, lt"},
      {"-x=a",
       "unable to parse requirement: <nil>: Invalid value: \"-x\": name part "
       "must consist of alphanumeric characters, '-', '_' or '.', and must "
       "start and end with an alphanumeric character (e.g. 'MyName',  or "
       "'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
      {"a/b/c=d", "a qualified name must consist of"},
      {"Example.com/x=y", "prefix part a lowercase RFC 1123 subdomain"},
      {"x=!!", "unable to parse requirement: found '!', expected: identifier"},
  };
  for (const auto& c : cases) {
    auto s = LabelSelector::Parse(c.in);
    ASSERT_FALSE(s.ok()) << c.in << " parsed as " << s->String();
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.error), std::string::npos)
        << c.in << "\n got: " << s.status().message();
  }
}

TEST(LabelSelectorTest, Matching) {
  struct Case {
    const char* selector;
    Labels labels;
    bool match;
  } cases[] = {
      {"", {}, true},
      {"", {{"a", "b"}}, true},
      {"x=y", {{"x", "y"}}, true},
      {"x=y", {{"x", "z"}}, false},
      {"x=y", {}, false},
      {"x==y", {{"x", "y"}}, true},
      {"x!=y", {{"x", "z"}}, true},
      {"x!=y", {}, true},
      {"x!=y", {{"x", "y"}}, false},
      {"x in (a,b)", {{"x", "b"}}, true},
      {"x in (a,b)", {{"x", "c"}}, false},
      {"x in (a,b)", {}, false},
      {"x notin (a,b)", {{"x", "c"}}, true},
      {"x notin (a,b)", {}, true},
      {"x notin (a,b)", {{"x", "a"}}, false},
      {"x", {{"x", ""}}, true},
      {"x", {{"y", "1"}}, false},
      {"!x", {{"y", "1"}}, true},
      {"!x", {{"x", "1"}}, false},
      {"x>1", {{"x", "2"}}, true},
      {"x>1", {{"x", "1"}}, false},
      {"x>1", {{"x", "abc"}}, false},
      {"x<1", {{"x", "-5"}}, true},
      {"x=", {{"x", ""}}, true},
      {"x=", {}, false},
      {"app=web,tier in (fe,be)", {{"app", "web"}, {"tier", "be"}}, true},
      {"app=web,tier in (fe,be)", {{"app", "web"}}, false},
  };
  for (const auto& c : cases) {
    auto s = LabelSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector;
    EXPECT_EQ(s->Matches(c.labels), c.match)
        << c.selector << " vs " << LabelsString(c.labels);
  }
  EXPECT_FALSE(LabelSelector::Nothing().Matches({}));
  EXPECT_TRUE(LabelSelector::Everything().Matches({{"a", "b"}}));
  EXPECT_TRUE(LabelSelector::Everything().Empty());
  EXPECT_FALSE(LabelSelector::Nothing().Empty());
}

TEST(LabelSelectorTest, FromSetAndExactMatch) {
  LabelSelector s = LabelSelector::FromSet({{"b", "2"}, {"a", "1"}});
  EXPECT_EQ(s.String(), "a=1,b=2");
  EXPECT_TRUE(s.Matches({{"a", "1"}, {"b", "2"}, {"c", "3"}}));
  EXPECT_EQ(s.RequiresExactMatch("a"), "1");
  EXPECT_EQ(s.RequiresExactMatch("zz"), std::nullopt);
  auto in = LabelSelector::Parse("x in (only)");
  EXPECT_EQ(in->RequiresExactMatch("x"), "only");
  auto notin = LabelSelector::Parse("x notin (only)");
  EXPECT_EQ(notin->RequiresExactMatch("x"), std::nullopt);
  EXPECT_EQ(LabelsString({{"b", "2"}, {"a", "1"}}), "a=1,b=2");
}

TEST(LabelRequirementTest, Validation) {
  struct Case {
    std::string key;
    LabelOperator op;
    std::vector<std::string> values;
    const char* error;  // "" when valid
  } cases[] = {
      {"x", LabelOperator::kIn, {"a"}, ""},
      {"x",
       LabelOperator::kIn,
       {},
       "values: Invalid value: []string{}: for 'in', 'notin' operators, "
       "values set can't be empty"},
      {"x",
       LabelOperator::kEquals,
       {"a", "b"},
       "values: Invalid value: []string{\"a\", \"b\"}: exact-match "
       "compatibility requires one single value"},
      {"x",
       LabelOperator::kExists,
       {"a"},
       "values set must be empty for exists and does not exist"},
      {"x",
       LabelOperator::kGreaterThan,
       {"1", "2"},
       "for 'Gt', 'Lt' operators, exactly one value is required"},
      {"x/y/z", LabelOperator::kExists, {}, "key: Invalid value: \"x/y/z\""},
      {std::string(64, 'a'),
       LabelOperator::kExists,
       {},
       "name part must be no more than 63 characters"},
      {"x",
       LabelOperator::kIn,
       {std::string(64, 'v')},
       "must be no more than 63 characters"},
  };
  for (const auto& c : cases) {
    auto r = NewLabelRequirement(c.key, c.op, c.values);
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(r.ok()) << r.status();
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.key;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos)
        << r.status().message();
  }
  // Several problems are aggregated in brackets.
  auto r = NewLabelRequirement("-bad", LabelOperator::kIn, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().front(), '[');
}

TEST(LabelSelectorTest, FromLabelSelectorJson) {
  struct Case {
    const char* json;
    const char* string;  // nullptr: error
    const char* format;
  } cases[] = {
      {R"({"matchLabels":{"app":"nginx"}})", "app=nginx", "app=nginx"},
      {R"({"matchLabels":{"b":"1","a":"2"}})", "a=2,b=1", "a=2,b=1"},
      {R"({"matchExpressions":[{"key":"env","operator":"In","values":["prod","dev"]}]})",
       "env in (dev,prod)", "env in (dev,prod)"},
      {R"({"matchLabels":{"app":"x"},"matchExpressions":[
          {"key":"tier","operator":"NotIn","values":["db"]},
          {"key":"canary","operator":"DoesNotExist"},
          {"key":"zone","operator":"Exists"}]})",
       "app=x,!canary,tier notin (db),zone",
       "app=x,!canary,tier notin (db),zone"},
      {R"({})", "", "<none>"},
      {R"(null)", "", "<none>"},
      {R"({"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]})",
       nullptr, "<error>"},
      {R"({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})",
       nullptr, "<error>"},
  };
  for (const auto& c : cases) {
    rapidjson::Document d;
    d.Parse(c.json);
    ASSERT_FALSE(d.HasParseError()) << c.json;
    auto s = LabelSelector::FromLabelSelectorJson(d);
    EXPECT_EQ(FormatLabelSelector(d), c.format) << c.json;
    if (c.string == nullptr) {
      EXPECT_FALSE(s.ok()) << c.json;
      continue;
    }
    ASSERT_TRUE(s.ok()) << c.json << ": " << s.status();
    EXPECT_EQ(s->String(), c.string);
  }
  rapidjson::Document d;
  d.Parse(
      R"({"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]})");
  EXPECT_EQ(LabelSelector::FromLabelSelectorJson(d).status().message(),
            "\"Gt\" is not a valid label selector operator");
  d.Parse("null");
  EXPECT_TRUE(LabelSelector::FromLabelSelectorJson(d)->MatchesNothing());
  d.Parse("{}");
  EXPECT_TRUE(LabelSelector::FromLabelSelectorJson(d)->Matches({{"a", "b"}}));
}

}  // namespace
}  // namespace kplane::machinery
