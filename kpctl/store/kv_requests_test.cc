#include "kpctl/store/kv_requests.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kplane::kpctl {
namespace {

using RR = etcdserverpb::RangeRequest;

TEST(BuildRange, PrefixFromKeyAndSortAsClientv3) {
  RR r;
  GetFlags f;
  f.prefix = true;
  ASSERT_FALSE(BuildRange({"ab"}, f, &r));
  EXPECT_EQ(r.key(), "ab");
  EXPECT_EQ(r.range_end(), "ac");
  ASSERT_FALSE(BuildRange({""}, f, &r));
  EXPECT_EQ(r.key(), std::string(1, '\0'));
  EXPECT_EQ(r.range_end(), std::string(1, '\0'));

  GetFlags g;
  g.from_key = true;
  g.limit = 3;
  g.keys_only = true;
  ASSERT_FALSE(BuildRange({"b"}, g, &r));
  EXPECT_EQ(r.range_end(), std::string(1, '\0'));
  EXPECT_EQ(r.limit(), 3);
  EXPECT_TRUE(r.keys_only());

  GetFlags s;
  s.order = "ascend";  // KEY/ASCEND is sent as no sort
  ASSERT_FALSE(BuildRange({"a", "z"}, s, &r));
  EXPECT_EQ(r.range_end(), "z");
  EXPECT_EQ(r.sort_order(), RR::NONE);
  s.sort_by = "modify";
  s.order = "DESCEND";
  s.consistency = "s";
  s.rev = 5;
  ASSERT_FALSE(BuildRange({"a"}, s, &r));
  EXPECT_EQ(r.sort_target(), RR::MOD);
  EXPECT_EQ(r.sort_order(), RR::DESCEND);
  EXPECT_TRUE(r.serializable());
  EXPECT_EQ(r.revision(), 5);
}

TEST(BuildRange, ErrorsAndExitCodes) {
  RR r;
  GetFlags f;
  auto e = BuildRange({}, f, &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, kExitBadArgs);
  f.prefix = f.from_key = true;
  e = BuildRange({"a"}, f, &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message,
            "`--prefix` and `--from-key` cannot be set at the same time, "
            "choose one");
  GetFlags c;
  c.consistency = "x";
  e = BuildRange({"a"}, c, &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, kExitBadFeature);
  EXPECT_EQ(e->message, "unknown consistency flag \"x\"");
}

TEST(BuildPut, ValueFromStdinAndLeaseInHex) {
  etcdserverpb::PutRequest p;
  PutFlags f;
  f.lease = "1a";
  std::istringstream in("from stdin\n");
  ASSERT_FALSE(BuildPut({"k"}, f, &in, &p));
  EXPECT_EQ(p.value(), "from stdin\n");
  EXPECT_EQ(p.lease(), 26);
  f.lease = "zz";
  auto e = BuildPut({"k", "v"}, f, nullptr, &p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message,
            "bad lease ID (strconv.ParseInt: parsing \"zz\": invalid syntax), "
            "expecting ID in Hex");
  PutFlags g;
  EXPECT_EQ(BuildPut({"k"}, g, nullptr, &p)->exit_code, kExitBadArgs);
}

TEST(Argify, QuotesAsEtcdctl) {
  EXPECT_EQ(Argify(R"(put k "a b\n" 'c d' e)"),
            (std::vector<std::string>{"put", "k", "a b\n", "c d", "e"}));
  EXPECT_EQ(Argify("  get   key  "), (std::vector<std::string>{"get", "key"}));
  // An unterminated quote is skipped like the regexp skips it.
  EXPECT_EQ(Argify("put \"k v"), (std::vector<std::string>{"put", "k", "v"}));
}

TEST(ParseCompare, TargetsOpsAndErrors) {
  etcdserverpb::Compare c;
  ASSERT_FALSE(ParseCompare(R"(mod("k") > "3")", &c));
  EXPECT_EQ(c.target(), etcdserverpb::Compare::MOD);
  EXPECT_EQ(c.result(), etcdserverpb::Compare::GREATER);
  EXPECT_EQ(c.mod_revision(), 3);
  ASSERT_FALSE(ParseCompare(R"(value("k") != "x\ty")", &c));
  EXPECT_EQ(c.value(), "x\ty");
  EXPECT_EQ(c.result(), etcdserverpb::Compare::NOT_EQUAL);
  ASSERT_FALSE(ParseCompare(R"(ver("k") < "2")", &c));
  EXPECT_EQ(c.version(), 2);
  ASSERT_FALSE(ParseCompare(R"(c("k") = "0")", &c));
  EXPECT_EQ(c.target(), etcdserverpb::Compare::CREATE);
  ASSERT_FALSE(ParseCompare(R"(lease("k") = "1a")", &c));
  EXPECT_EQ(c.lease(), 26);

  EXPECT_EQ(ParseCompare("bogus", &c)->message, "malformed comparison: bogus");
  EXPECT_EQ(ParseCompare(R"(ver("foo") > "x")", &c)->message,
            R"(invalid txn compare request: ver("foo") > "x")");
  EXPECT_EQ(ParseCompare(R"(mod("k") > 3)", &c)->message,
            R"(malformed comparison: mod("k") > 3; got mod("k") > "")");
  EXPECT_EQ(ParseCompare(R"(size("k") = "1")", &c)->message,
            R"(malformed comparison: size("k") = "1" (unknown target size))");
}

TEST(ReadTxn, SectionsAndEof) {
  std::istringstream in(
      "value(\"foo\") = \"v3\"\nmod(\"bar\") > \"0\"\n\n"
      "put a 1\nget foo --prefix\ndel nosuch\n\nput b 2\n\n");
  etcdserverpb::TxnRequest t;
  ASSERT_FALSE(ReadTxn(in, nullptr, &t));
  EXPECT_EQ(t.compare_size(), 2);
  ASSERT_EQ(t.success_size(), 3);
  EXPECT_EQ(t.success(1).request_range().range_end(), "fop");
  ASSERT_EQ(t.failure_size(), 1);
  EXPECT_EQ(t.failure(0).request_put().value(), "2");

  // etcdctl needs the final blank line.
  std::istringstream short_in("\nput a 1\n\nput b 2\n");
  auto e = ReadTxn(short_in, nullptr, &t);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, kExitInvalidInput);
  EXPECT_EQ(e->message, "EOF");

  std::istringstream bad("\nfoo bar\n\n\n");
  EXPECT_EQ(ReadTxn(bad, nullptr, &t)->message, "invalid txn request: foo bar");
  std::istringstream prompts_in("\n\n\n");
  std::ostringstream prompts;
  ASSERT_FALSE(ReadTxn(prompts_in, &prompts, &t));
  EXPECT_EQ(prompts.str(),
            "compares:\nsuccess requests (get, put, del):\n"
            "failure requests (get, put, del):\n");
}

TEST(GoParseInt, ErrorTexts) {
  std::string err;
  EXPECT_EQ(GoParseInt("-7f", 16, &err), -127);
  EXPECT_FALSE(GoParseInt("", 10, &err));
  EXPECT_EQ(err, "strconv.ParseInt: parsing \"\": invalid syntax");
  EXPECT_FALSE(GoParseInt("99999999999999999999", 10, &err));
  EXPECT_EQ(err,
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of "
            "range");
  EXPECT_EQ(GoParseUint("ffffffffffffffff", 16, &err), UINT64_MAX);
}

}  // namespace
}  // namespace kplane::kpctl
