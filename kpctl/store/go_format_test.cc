#include "kpctl/store/go_format.h"

#include <gtest/gtest.h>

#include "kpctl/store/printer.h"
#include "schemas/rpc.pb.h"

namespace kplane::kpctl {
namespace {

TEST(GoJsonString, EscapesLikeEncodingJson) {
  EXPECT_EQ(GoJsonString("plain"), "\"plain\"");
  EXPECT_EQ(GoJsonString("a<b>&c"), "\"a\\u003cb\\u003e\\u0026c\"");
  EXPECT_EQ(GoJsonString("q\"b\\n\n\t\r\x01"),
            "\"q\\\"b\\\\n\\n\\t\\r\\u0001\"");
  EXPECT_EQ(GoJsonString("\xE2\x80\xA8x"), "\"\\u2028x\"");
  EXPECT_EQ(GoJsonString("h\xC3\xA9"), "\"h\xC3\xA9\"");
  EXPECT_EQ(GoJsonString("bad\xFFz"), "\"bad\\ufffdz\"");
}

TEST(GoDuration, MatchesGoStringer) {
  EXPECT_EQ(GoDuration(nanoseconds(0)), "0s");
  EXPECT_EQ(GoDuration(nanoseconds(999)), "999ns");
  EXPECT_EQ(GoDuration(nanoseconds(1500)), "1.5\xC2\xB5s");
  EXPECT_EQ(GoDuration(nanoseconds(4735173)), "4.735173ms");
  EXPECT_EQ(GoDuration(milliseconds(4)), "4ms");
  EXPECT_EQ(GoDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(GoDuration(seconds(90)), "1m30s");
  EXPECT_EQ(GoDuration(hours(2) + seconds(1)), "2h0m1s");
  EXPECT_EQ(GoDuration(nanoseconds(-1500000)), "-1.5ms");
}

TEST(HumanizeBytes, SiUnitsAsGoHumanize) {
  EXPECT_EQ(HumanizeBytes(7), "7 B");
  EXPECT_EQ(HumanizeBytes(20480), "20 kB");
  EXPECT_EQ(HumanizeBytes(16384), "16 kB");
  EXPECT_EQ(HumanizeBytes(1500000), "1.5 MB");
  EXPECT_EQ(HumanizeBytes(41418752), "41 MB");
}

TEST(GoHex, PaddingAndSign) {
  EXPECT_EQ(GoHexU(0x628170c800dbceeULL), "628170c800dbcee");
  EXPECT_EQ(GoHexU(0x628170c800dbceeULL, 16), " 628170c800dbcee");
  EXPECT_EQ(GoHex(0x3ceea2271710b622LL, 16, '0'), "3ceea2271710b622");
  EXPECT_EQ(GoHex(0x4d2, 16, '0'), "00000000000004d2");
  EXPECT_EQ(GoHex(-0x4d2, 16, '0'), "-0000000000004d2");
}

TEST(RenderTable, EndpointStatusAsEtcdctl) {
  // Captured from etcdctl 3.4.23 `endpoint status -w table`.
  const std::string want =
      "+-----------------+-----------------+---------+---------+-----------+"
      "------------+-----------+------------+--------------------+--------+\n"
      "|    ENDPOINT     |       ID        | VERSION | DB SIZE | IS LEADER |"
      " IS LEARNER | RAFT TERM | RAFT INDEX | RAFT APPLIED INDEX | ERRORS |\n"
      "+-----------------+-----------------+---------+---------+-----------+"
      "------------+-----------+------------+--------------------+--------+\n"
      "| 127.0.0.1:32379 | 628170c800dbcee |  3.4.23 |   20 kB |      true |"
      "      false |         2 |          7 |                  7 |        |\n"
      "+-----------------+-----------------+---------+---------+-----------+"
      "------------+-----------+------------+--------------------+--------+\n";
  EXPECT_EQ(RenderTable({"endpoint", "ID", "version", "db size", "is leader",
                         "is learner", "raft term", "raft index",
                         "raft applied index", "errors"},
                        {{"127.0.0.1:32379", "628170c800dbcee", "3.4.23",
                          "20 kB", "true", "false", "2", "7", "7", ""}}),
            want);
}

TEST(RenderTable, WrapsLongCellsOnSpaces) {
  // A 56-character cell is wrapped (minimum raggedness) at 30 columns.
  EXPECT_EQ(RenderTable(
                {"endpoint", "error"},
                {{"a:1",
                  "failed to commit proposal: context deadline exceeded now"}}),
            "+----------+--------------------------------+\n"
            "| ENDPOINT |             ERROR              |\n"
            "+----------+--------------------------------+\n"
            "|      a:1 |     failed to commit proposal: |\n"
            "|          |  context deadline exceeded now |\n"
            "+----------+--------------------------------+\n");
}

TEST(MessageToGoJson, RangeResponseAsEtcdctlPrintsIt) {
  etcdserverpb::RangeResponse r;
  r.mutable_header()->set_cluster_id(13455796455940752355ULL);
  r.mutable_header()->set_member_id(443629905751424238ULL);
  r.mutable_header()->set_revision(4);
  r.mutable_header()->set_raft_term(2);
  auto* kv = r.add_kvs();
  kv->set_key("foo");
  kv->set_create_revision(2);
  kv->set_mod_revision(4);
  kv->set_version(2);
  kv->set_value("v3");
  r.set_count(1);
  // Captured from etcdctl 3.4.23 `get foo -w json`.
  EXPECT_EQ(MessageToGoJson(r),
            R"({"header":{"cluster_id":13455796455940752355,)"
            R"("member_id":443629905751424238,"revision":4,"raft_term":2},)"
            R"("kvs":[{"key":"Zm9v","create_revision":2,"mod_revision":4,)"
            R"("version":2,"value":"djM="}],"count":1})");
}

TEST(MessageToGoJson, TxnOneofsAndEmptySubMessages) {
  etcdserverpb::TxnResponse t;
  t.mutable_header()->set_revision(14);
  t.set_succeeded(true);
  t.add_responses()->mutable_response_put()->mutable_header()->set_revision(14);
  t.add_responses()->mutable_response_delete_range()->mutable_header();
  EXPECT_EQ(MessageToGoJson(t),
            R"({"header":{"revision":14},"succeeded":true,"responses":[)"
            R"({"Response":{"ResponsePut":{"header":{"revision":14}}}},)"
            R"({"Response":{"ResponseDeleteRange":{"header":{}}}}]})");
  etcdserverpb::WatchResponse w;
  auto* e = w.add_events();
  e->set_type(mvccpb::Event::DELETE);
  e->mutable_kv()->set_key("w1");
  e->mutable_kv()->set_mod_revision(12);
  EXPECT_EQ(MessageToGoJson(w.events(0)),
            R"({"type":1,"kv":{"key":"dzE=","mod_revision":12}})");
}

TEST(Printer, SimpleAndJsonLeaseShapes) {
  std::ostringstream out, err;
  auto simple = NewPrinter("simple", false, false, &out, &err);
  etcdserverpb::LeaseTimeToLiveResponse ttl;
  ttl.set_id(0x3ceea2271710b626LL);
  ttl.set_ttl(99);
  ttl.set_grantedttl(100);
  ttl.add_keys("lk");
  ASSERT_TRUE(simple->TimeToLive(ttl, true));
  EXPECT_EQ(out.str(),
            "lease 3ceea2271710b626 granted with TTL(100s), remaining(99s), "
            "attached keys([lk])\n");
  out.str("");
  auto json = NewPrinter("json", false, false, &out, &err);
  ttl.mutable_header()->set_revision(8);
  ASSERT_TRUE(json->TimeToLive(ttl, true));
  EXPECT_EQ(out.str(), R"({"revision":8,"id":4390624975507207718,"ttl":99,)"
                       R"("granted-ttl":100,"keys":["bGs="]})"
                       "\n");
  auto table = NewPrinter("table", false, false, &out, &err);
  EXPECT_FALSE(table->Get(etcdserverpb::RangeResponse()));
  EXPECT_EQ(NewPrinter("xml", false, false, &out, &err), nullptr);
}

}  // namespace
}  // namespace kplane::kpctl
