#include "net/url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kplane::net {
namespace {

TEST(PercentDecodeTest, DecodesEscapesAndPlus) {
  EXPECT_EQ(*PercentDecode("a%20b%2Fc%2f", false), "a b/c/");
  EXPECT_EQ(*PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(*PercentDecode("a+b", true), "a b");
  EXPECT_EQ(*PercentDecode("%00x", false), std::string("\0x", 2));
  EXPECT_EQ(*PercentDecode("", true), "");
}

TEST(PercentDecodeTest, RejectsBadEscapes) {
  EXPECT_EQ(PercentDecode("%", false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(PercentDecode("%2", false).ok());
  EXPECT_FALSE(PercentDecode("%zz", false).ok());
  EXPECT_FALSE(PercentDecode("ab%g1", true).ok());
}

TEST(EscapeTest, QueryAndPathEscaping) {
  EXPECT_EQ(QueryEscape("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
  EXPECT_EQ(QueryEscape("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(PathEscape("a b/c:d@e"), "a%20b%2Fc:d@e");
  EXPECT_EQ(*PercentDecode(QueryEscape("x+y z%"), true), "x+y z%");
  EXPECT_EQ(*PercentDecode(PathEscape("x+y z%/"), false), "x+y z%/");
}

TEST(QueryTest, ParsesRepeatedKeysAndEmptyValues) {
  auto q = ParseQuery("a=1&b=x+y&a=2&flag&&c=%26");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->count("a"), 2u);
  auto range = q->equal_range("a");
  std::vector<std::string> as;
  for (auto it = range.first; it != range.second; ++it)
    as.push_back(it->second);
  EXPECT_EQ(as, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(q->find("b")->second, "x y");
  EXPECT_EQ(q->find("flag")->second, "");
  EXPECT_EQ(q->find("c")->second, "&");
  EXPECT_EQ(q->size(), 5u);
  EXPECT_FALSE(ParseQuery("a=%zz").ok());
}

TEST(QueryTest, BuildEscapesAndRoundTrips) {
  std::string s =
      BuildQuery({{"labelSelector", "app=web,tier in (a,b)"}, {"watch", "1"}});
  EXPECT_EQ(s, "labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&watch=1");
  auto back = ParseQuery(s);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->find("labelSelector")->second, "app=web,tier in (a,b)");
  std::multimap<std::string, std::string> m{{"k", "1"}, {"k", "2"}};
  EXPECT_EQ(BuildQueryFromMap(m), "k=1&k=2");
}

TEST(ParseUrlTest, SplitsParts) {
  auto u = ParseUrl("http://127.0.0.1:2379/v3/kv/range?x=1#frag");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 2379);
  EXPECT_EQ(u->path, "/v3/kv/range");
  EXPECT_EQ(u->raw_query, "x=1");
  EXPECT_EQ(u->HostPort(), "127.0.0.1:2379");
  EXPECT_EQ(u->PathAndQuery(), "/v3/kv/range?x=1");
}

TEST(ParseUrlTest, DefaultsAndIpv6) {
  auto u = ParseUrl("HTTP://example.com");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "/");
  auto v6 = ParseUrl("http://[::1]:8080/x");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8080);
  EXPECT_EQ(v6->HostPort(), "[::1]:8080");
  auto bare = ParseUrl("localhost:6443");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->host, "localhost");
  EXPECT_EQ(bare->port, 6443);
}

TEST(ParseUrlTest, RejectsBadUrls) {
  EXPECT_FALSE(ParseUrl("https://x:1/").ok());
  StatusOr<Url> tls = ParseUrl("https://x/a", UrlSchemes::kHttpOrHttps);
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->scheme, "https");
  EXPECT_EQ(tls->port, 443);
  EXPECT_FALSE(ParseUrl("ftp://x/", UrlSchemes::kHttpOrHttps).ok());
  EXPECT_FALSE(ParseUrl("http://:80/").ok());
  EXPECT_FALSE(ParseUrl("http://h:0/").ok());
  EXPECT_FALSE(ParseUrl("http://h:70000/").ok());
  EXPECT_FALSE(ParseUrl("http://h:x/").ok());
  EXPECT_FALSE(ParseUrl("http://[::1/").ok());
  EXPECT_FALSE(ParseUrl("http://user@h/").ok());
}

// Go's net.SplitHostPort, as listen and dial flags take it.
TEST(SplitHostPortTest, TakesGosForms) {
  std::string host;
  uint16_t port = 1;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:0", true, &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(SplitHostPort("[::1]:2379", false, &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 2379);
  ASSERT_TRUE(SplitHostPort(":80", false, &host, &port).ok());
  EXPECT_EQ(host, "");
  struct Bad {
    const char* in;
    const char* why;
  };
  for (const Bad& b : std::vector<Bad>{
           {"23790", "missing port"},
           {"[::1]", "missing port"},
           {"::1:80", "too many colons (an IPv6 address needs [])"},
           {"h:+80", "bad port \"+80\""},
           {"h: 80", "bad port \" 80\""},
           {"h:", "bad port \"\""},
           {"h:65536", "port 65536 out of range"},
           {"h:0", "port 0 out of range"},
       }) {
    Status st = SplitHostPort(b.in, /*allow_zero=*/false, &host, &port);
    EXPECT_EQ(st.message(), b.why) << b.in;
  }
}

}  // namespace
}  // namespace kplane::net
