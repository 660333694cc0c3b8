// Field selectors, after k8s.io/apimachinery/pkg/fields.
#include "objects/machinery/fields.h"

#include <gtest/gtest.h>

#include <map>

namespace kplane::machinery {
namespace {

FieldGetter Getter(std::map<std::string, std::string> fields) {
  return [fields](std::string_view f) {
    auto it = fields.find(std::string(f));
    return it == fields.end() ? std::string() : it->second;
  };
}

TEST(FieldSelectorTest, ParseAndString) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"", ""},
      {"a=b", "a=b"},
      {"a==b", "a=b"},
      {"a!=b", "a!=b"},
      {"b=1,a=2", "a=2,b=1"},
      {"metadata.name=web-0", "metadata.name=web-0"},
      {"spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed",
       "spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded"},
      {"involvedObject.namespace=,involvedObject.kind=Node",
       "involvedObject.kind=Node,involvedObject.namespace="},
      {"x=a\\,b", "x=a\\,b"},
      {"x=a\\=b\\\\c", "x=a\\=b\\\\c"},
      {"a=b,,c=d", "a=b,c=d"},
      {"a=", "a="},
      {"a=b=c\\", "a=b=c\\"},
  };
  for (const auto& c : cases) {
    auto s = FieldSelector::Parse(c.in);
    if (std::string(c.in) == "a=b=c\\") {
      EXPECT_FALSE(s.ok());
      continue;
    }
    ASSERT_TRUE(s.ok()) << c.in << ": " << s.status();
    EXPECT_EQ(s->String(), c.out) << c.in;
  }
}

TEST(FieldSelectorTest, Errors) {
  struct Case {
    const char* in;
    const char* error;
  } cases[] = {
      {"a", "invalid selector: 'a'; can't understand 'a'"},
      {"a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"},
      {"x=a=b", "invalid field selector: unescaped character in value: 61"},
      {"x=a\\n", "invalid field selector: invalid escape sequence: \\n"},
      {"x=a\\", "invalid field selector: invalid escape sequence: \\"},
  };
  for (const auto& c : cases) {
    auto s = FieldSelector::Parse(c.in);
    ASSERT_FALSE(s.ok()) << c.in;
    EXPECT_EQ(s.status().message(), c.error) << c.in;
  }
}

TEST(FieldSelectorTest, Matching) {
  auto pod = Getter({{"metadata.name", "web-0"},
                     {"spec.nodeName", "n1"},
                     {"status.phase", "Running"}});
  struct Case {
    const char* selector;
    bool match;
  } cases[] = {
      {"", true},
      {"metadata.name=web-0", true},
      {"metadata.name=web-1", false},
      {"spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed", true},
      {"spec.nodeName=n1,status.phase!=Running", false},
      {"spec.nodeName=", false},
      {"metadata.namespace=", true},  // unset reads as ""
      {"metadata.namespace!=", false},
  };
  for (const auto& c : cases) {
    auto s = FieldSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector;
    EXPECT_EQ(s->Matches(pod), c.match) << c.selector;
  }
}

TEST(FieldSelectorTest, SupportedFieldsAndExactMatch) {
  auto s = FieldSelector::Parse("metadata.name=a,spec.nodeName=n");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(
      s->Validate({"metadata.name", "metadata.namespace", "spec.nodeName"})
          .ok());
  Status st = s->Validate({"metadata.name", "metadata.namespace"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "field label not supported: spec.nodeName");
  EXPECT_EQ(s->RequiresExactMatch("metadata.name"), "a");
  EXPECT_EQ(s->RequiresExactMatch("other"), std::nullopt);
  auto ne = FieldSelector::Parse("metadata.name!=a");
  EXPECT_EQ(ne->RequiresExactMatch("metadata.name"), std::nullopt);
  FieldSelector one = FieldSelector::OneTermEqual("metadata.name", "x,y");
  EXPECT_EQ(one.String(), "metadata.name=x\\,y");
  EXPECT_TRUE(FieldSelector::Everything().Empty());
}

TEST(FieldSelectorTest, EscapeRoundTrip) {
  for (const char* v : {"", "plain", "a,b", "a=b", "a\\b", ",=\\"}) {
    std::string esc = EscapeFieldValue(v);
    auto back = UnescapeFieldValue(esc);
    ASSERT_TRUE(back.ok()) << esc;
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(EscapeFieldValue("a,b=c\\d"), "a\\,b\\=c\\\\d");
}

}  // namespace
}  // namespace kplane::machinery
