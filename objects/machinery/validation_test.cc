// Name validation messages as kube-apiserver prints them.
#include "objects/machinery/validation.h"

#include <gtest/gtest.h>

#include <random>

#include "base/strings.h"

namespace kplane::machinery {
namespace {

constexpr const char* kSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr const char* kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
    "characters or '-', and must start and end with an alphanumeric "
    "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

TEST(ValidationTest, DNS1123Subdomain) {
  for (const char* ok :
       {"a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "a.a",
        "a.b.c.d", "1.2.3.4", "nginx-7d8f9c", "example.com"}) {
    EXPECT_TRUE(IsDNS1123Subdomain(ok).empty()) << ok;
  }
  for (const char* bad :
       {"", "A", "ABC", "aBc", "A1", "a_1", "a..b", "_a", "a_", "-a", "a-",
        ".a", "a.", "a@b", "a,b", "a b", "1 ", " 1", "Foo"}) {
    auto errs = IsDNS1123Subdomain(bad);
    ASSERT_EQ(errs.size(), 1u) << bad;
    EXPECT_EQ(errs[0], kSubdomainMsg);
  }
  auto long_errs = IsDNS1123Subdomain(std::string(254, 'a'));
  ASSERT_EQ(long_errs.size(), 1u);
  EXPECT_EQ(long_errs[0], "must be no more than 253 characters");
  EXPECT_TRUE(IsDNS1123Subdomain(std::string(253, 'a')).empty());
}

TEST(ValidationTest, DNS1123Label) {
  for (const char* ok :
       {"a", "ab", "a-1", "0", "a--1--2--b", "kube-node-lease"}) {
    EXPECT_TRUE(IsDNS1123Label(ok).empty()) << ok;
  }
  EXPECT_EQ(IsDNS1123Label("a.b"),
            std::vector<std::string>{"must not contain dots"});
  EXPECT_EQ(IsDNS1123Label("Abc"), std::vector<std::string>{kLabelMsg});
  EXPECT_EQ(IsDNS1123Label("-a"), std::vector<std::string>{kLabelMsg});
  EXPECT_EQ(IsDNS1123Label(std::string(64, 'a')),
            std::vector<std::string>{"must be no more than 63 characters"});
}

TEST(ValidationTest, DNS1035Label) {
  EXPECT_TRUE(IsDNS1035Label("my-svc").empty());
  ASSERT_EQ(IsDNS1035Label("1abc").size(), 1u);
  EXPECT_NE(IsDNS1035Label("1abc")[0].find("start with an alphabetic"),
            std::string::npos);
}

TEST(ValidationTest, QualifiedNameAndLabelValue) {
  for (const char* ok :
       {"simple", "now-with-dashes", "1-starts-with-num", "1234",
        "simple/simple", "now-with-dashes/simple", "example.com/Upper_Case.v1",
        "a.b.c/d", "A", "kubernetes.io/cluster-service"}) {
    EXPECT_TRUE(IsQualifiedName(ok).empty()) << ok;
  }
  struct Bad {
    const char* in;
    const char* first;
  } bad[] = {
      {"", "name part must be non-empty"},
      {"/simple", "prefix part must be non-empty"},
      {"Example.com/x", "prefix part a lowercase RFC 1123 subdomain"},
      {"x/", "name part must be non-empty"},
      {"a/b/c", "a qualified name must consist of"},
      {"-x", "name part must consist of"},
      {"x_", "name part must consist of"},
  };
  for (const auto& b : bad) {
    auto errs = IsQualifiedName(b.in);
    ASSERT_FALSE(errs.empty()) << b.in;
    EXPECT_EQ(errs[0].rfind(b.first, 0), 0u) << b.in << ": " << errs[0];
  }
  EXPECT_EQ(
      IsQualifiedName(std::string(64, 'a')),
      std::vector<std::string>{"name part must be no more than 63 characters"});

  for (const char* ok : {"", "a", "A_b.c-1", "1234"}) {
    EXPECT_TRUE(IsValidLabelValue(ok).empty()) << ok;
  }
  for (const char* bad : {"-a", "a-", "a b", "a/b", "a@"}) {
    EXPECT_EQ(IsValidLabelValue(bad).size(), 1u) << bad;
  }
}

TEST(ValidationTest, ObjectNames) {
  auto errs = ValidateObjectName("Foo", "", NameRule::kDNS1123Subdomain);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], std::string("metadata.name: Invalid value: \"Foo\": ") +
                         kSubdomainMsg);
  EXPECT_EQ(InvalidObjectMessage("Pod", "Foo", errs),
            std::string("Pod \"Foo\" is invalid: metadata.name: Invalid "
                        "value: \"Foo\": ") +
                kSubdomainMsg);
  errs = ValidateObjectName("", "", NameRule::kDNS1123Subdomain);
  EXPECT_EQ(errs, std::vector<std::string>{
                      "metadata.name: Required value: name or generateName "
                      "is required"});
  // A generateName prefix may end in '-'.
  EXPECT_TRUE(
      ValidateObjectName("web-x7k2p", "web-", NameRule::kDNS1123Subdomain)
          .empty());
  errs = ValidateObjectName("", "Web-", NameRule::kDNS1123Subdomain);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].rfind("metadata.generateName: Invalid value: \"Web-\"", 0),
            0u);
  errs = ValidateObjectName("a.b", "", NameRule::kDNS1123Label);
  EXPECT_EQ(errs, std::vector<std::string>{
                      "metadata.name: Invalid value: \"a.b\": must not "
                      "contain dots"});
  EXPECT_EQ(InvalidObjectMessage("Namespace", "x", {"e1", "e2"}),
            "Namespace \"x\" is invalid: [e1, e2]");
  EXPECT_EQ(GoQuote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
}

TEST(ValidationTest, GenerateName) {
  std::mt19937 rng(42);
  auto next = [&rng](int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng);
  };
  for (int i = 0; i < 200; ++i) {
    std::string s = GenerateNameSuffix(next);
    ASSERT_EQ(s.size(), 5u);
    for (char c : s) {
      EXPECT_NE(kGenerateNameAlphabet.find(c), std::string_view::npos) << s;
    }
    EXPECT_TRUE(IsDNS1123Label(s).empty()) << s;
  }
  // Deterministic with a scripted source: index 0 is 'b', 26 is '9'.
  int calls = 0;
  EXPECT_EQ(GenerateNameSuffix([&calls](int) { return calls++ == 0 ? 0 : 26; }),
            "b9999");
  std::string name = GenerateName(std::string(70, 'a'), next);
  EXPECT_EQ(name.size(), 63u);
  EXPECT_EQ(name.substr(0, 58), std::string(58, 'a'));
  EXPECT_EQ(GenerateName("web-", next).size(), 9u);
}

}  // namespace
}  // namespace kplane::machinery
