// The store differential suite: the same etcd v3 JSON API cases against a
// fresh etcd 3.4 and a fresh `kplane store`; see differential.h for what is
// compared and how revisions are lined up.
#include <future>
#include <regex>
#include <thread>

#include "tests/e2e/store/differential.h"

namespace kplane::e2e {
namespace {

// "\"<base64 of s>\"".
std::string Q(const std::string& s) { return "\"" + B64(s) + "\""; }

std::string PutBody(const std::string& k, const std::string& v,
                    const std::string& extra = "") {
  return "{\"key\":" + Q(k) + ",\"value\":" + Q(v) + extra + "}";
}

std::string RangeBody(const std::string& k, const std::string& extra = "") {
  return "{\"key\":" + Q(k) + extra + "}";
}

// --- revisions ---------------------------------------------------------------

TEST_F(DiffTest, EmptyStoreRevision) {
  // This was known difference 1 (issue 17): an empty kplane store reported
  // revision 0, left out of the header. Both start at 1 now; the first
  // write is revision 2.
  Same("POST", "/v3/kv/range", RangeBody("foo"));
  Same("POST", "/v3/kv/txn", "{}");
  Same("POST", "/v3/kv/put", PutBody("foo", "bar"));
  Same("POST", "/v3/kv/range", RangeBody("foo"));
}

TEST_F(DiffTest, RangeAtRevisions) {
  // The seeds' example: PUT /foo v1, /bar v2, /foo v3, then ranges at the
  // revisions in between.
  Same("POST", "/v3/kv/put", PutBody("/foo", "v1"));
  Same("POST", "/v3/kv/put", PutBody("/bar", "v2"));
  Same("POST", "/v3/kv/put", PutBody("/foo", "v3"));
  for (int rev : {2, 3, 4}) {
    Same(
        "POST", "/v3/kv/range",
        RangeBody("/foo", ",\"revision\":\"{R:" + std::to_string(rev) + "}\""));
    Same("POST", "/v3/kv/range",
         RangeBody("/", ",\"range_end\":" + Q("0") + ",\"revision\":\"{R:" +
                            std::to_string(rev) + "}\""));
  }
  Same("POST", "/v3/kv/range", RangeBody("/", ",\"range_end\":" + Q("0")));
  Same("POST", "/v3/kv/range", RangeBody("/foo", ",\"revision\":\"0\""));
  Same("POST", "/v3/kv/range", RangeBody("/foo", ",\"revision\":\"-7\""));
  Same("POST", "/v3/kv/range", RangeBody("/foo", ",\"revision\":\"{R:5}\""));
  Same("POST", "/v3/kv/range", RangeBody("/foo", ",\"revision\":\"{R:99}\""));
}

// --- ranges ------------------------------------------------------------------

TEST_F(DiffTest, PrefixAndFromKeyRanges) {
  for (const char* k : {"a", "ab", "abc", "b", "c"}) {
    Same("POST", "/v3/kv/put", PutBody(k, std::string("v-") + k));
  }
  Same("POST", "/v3/kv/put", PutBody("\xff", "ff"));
  Same("POST", "/v3/kv/put", PutBody("\xff\xff", "ffff"));
  Same("POST", "/v3/kv/range", RangeBody("a", ",\"range_end\":" + Q("b")));
  Same("POST", "/v3/kv/range", RangeBody("ab", ",\"range_end\":" + Q("ac")));
  Same("POST", "/v3/kv/range", RangeBody("b", ",\"range_end\":\"AA==\""));
  Same("POST", "/v3/kv/range", "{\"key\":\"AA==\",\"range_end\":\"AA==\"}");
  Same("POST", "/v3/kv/range", RangeBody("\xff", ",\"range_end\":\"AA==\""));
  Same("POST", "/v3/kv/range", RangeBody("a", ",\"range_end\":" + Q("a")));
  Same("POST", "/v3/kv/range", RangeBody("c", ",\"range_end\":" + Q("a")));
  Same("POST", "/v3/kv/range", RangeBody("zz"));
  Same("POST", "/v3/kv/deleterange",
       RangeBody("ab", ",\"range_end\":" + Q("b") + ",\"prev_kv\":true"));
  Same("POST", "/v3/kv/range", "{\"key\":\"AA==\",\"range_end\":\"AA==\"}");
}

TEST_F(DiffTest, LimitSortCountAndFilters) {
  // Keys with different versions, create and mod revisions, values.
  Same("POST", "/v3/kv/put", PutBody("k3", "z"));
  Same("POST", "/v3/kv/put", PutBody("k1", "y"));
  Same("POST", "/v3/kv/put", PutBody("k2", "x"));
  Same("POST", "/v3/kv/put", PutBody("k1", "w"));
  Same("POST", "/v3/kv/put", PutBody("k4", ""));
  Same("POST", "/v3/kv/put", PutBody("k3", "v"));
  const std::string all = ",\"range_end\":" + Q("l");
  for (const char* limit : {"2", "4", "5", "-1", "0"}) {
    Same("POST", "/v3/kv/range",
         RangeBody("k", all + ",\"limit\":\"" + limit + "\""));
  }
  for (const std::string target :
       {"KEY", "VERSION", "CREATE", "MOD", "VALUE"}) {
    for (const std::string order : {"NONE", "ASCEND", "DESCEND"}) {
      Same("POST", "/v3/kv/range",
           RangeBody("k", all + ",\"sort_target\":\"" + target +
                              "\",\"sort_order\":\"" + order + "\""));
      if (order == "NONE" && (target == "VERSION" || target == "VALUE")) {
        continue;  // known difference 5, below
      }
      Same("POST", "/v3/kv/range",
           RangeBody("k", all + ",\"sort_target\":\"" + target +
                              "\",\"sort_order\":\"" + order +
                              "\",\"limit\":\"2\""));
    }
  }
  // Known difference 5: a sort target other than KEY with sort_order NONE
  // and a limit. etcd fetches limit+1 keys in key order, sorts that page
  // ascending and truncates it; kplane sorts every match, then limits.
  // (With ASCEND/DESCEND both sort everything first.)
  const std::string k1 =
      R"({"key":"azE=","create_revision":"3","mod_revision":"5","version":"2","value":"dw=="})";
  const std::string k2 =
      R"({"key":"azI=","create_revision":"4","mod_revision":"4","version":"1","value":"eA=="})";
  const std::string k3 =
      R"({"key":"azM=","create_revision":"2","mod_revision":"7","version":"2","value":"dg=="})";
  const std::string k4 =
      R"({"key":"azQ=","create_revision":"6","mod_revision":"6","version":"1"})";
  auto page = [](const std::string& a, const std::string& b) {
    return R"({"header":{"revision":"7"},"kvs":[)" + a + "," + b +
           R"(],"more":true,"count":"4"})";
  };
  KnownDiff(
      "POST", "/v3/kv/range",
      RangeBody(
          "k",
          all + R"(,"sort_target":"VERSION","sort_order":"NONE","limit":"2")"),
      {200, "", page(k2, k1)}, {200, "", page(k2, k4)});
  KnownDiff(
      "POST", "/v3/kv/range",
      RangeBody(
          "k",
          all + R"(,"sort_target":"VALUE","sort_order":"NONE","limit":"2")"),
      {200, "", page(k3, k1)}, {200, "", page(k4, k3)});
  Same("POST", "/v3/kv/range", RangeBody("k", all + ",\"count_only\":true"));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"count_only\":true,\"limit\":\"1\""));
  Same("POST", "/v3/kv/range", RangeBody("k", all + ",\"keys_only\":true"));
  Same("POST", "/v3/kv/range", RangeBody("k", all + ",\"serializable\":true"));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"min_mod_revision\":\"{R:4}\""));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"max_mod_revision\":\"{R:4}\""));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"min_create_revision\":\"{R:3}\""
                            ",\"max_create_revision\":\"{R:4}\""));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"min_mod_revision\":\"{R:3}\",\"limit\":\"1\""));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"min_mod_revision\":\"{R:3}\",\"count_only\":"
                            "true"));
  Same("POST", "/v3/kv/range",
       RangeBody("k", all + ",\"revision\":\"{R:4}\",\"sort_target\":"
                            "\"VALUE\",\"limit\":\"1\""));
}

// --- txn ---------------------------------------------------------------------

TEST_F(DiffTest, TxnCompareTargetsAndResults) {
  Same("POST", "/v3/kv/put", PutBody("k1", "v"));  // rev 2, version 1
  Same("POST", "/v3/kv/put", PutBody("k1", "v"));  // rev 3, version 2
  Same("POST", "/v3/lease/grant", R"({"TTL":"60","ID":"77"})");
  Same("POST", "/v3/kv/put", PutBody("k2", "w", ",\"lease\":\"77\""));
  struct Target {
    const char* name;
    const char* field;
    std::vector<std::string> values;
  };
  const std::vector<Target> targets = {
      {"VERSION", "version", {"\"0\"", "\"1\"", "\"2\"", "\"3\""}},
      {"CREATE", "create_revision", {"\"0\"", "\"{R:2}\"", "\"{R:3}\""}},
      {"MOD", "mod_revision", {"\"0\"", "\"{R:2}\"", "\"{R:3}\"", "\"{R:9}\""}},
      {"VALUE", "value", {Q("v"), Q("a"), Q("z"), Q("")}},
      {"LEASE", "lease", {"\"0\"", "\"77\"", "\"78\""}},
  };
  for (const Target& t : targets) {
    for (const char* result : {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"}) {
      for (const char* key : {"k1", "k2", "missing"}) {
        for (const std::string& v : t.values) {
          std::string body =
              "{\"compare\":[{\"target\":\"" + std::string(t.name) +
              "\",\"result\":\"" + result + "\",\"key\":" + Q(key) + ",\"" +
              t.field + "\":" + v +
              "}],\"success\":[{\"request_range\":{\"key\":" + Q(key) + "}}]}";
          Same("POST", "/v3/kv/txn", body);
        }
      }
    }
  }
  // A compare over a range of keys.
  Same("POST", "/v3/kv/txn",
       "{\"compare\":[{\"target\":\"VERSION\",\"result\":\"GREATER\",\"key\":" +
           Q("k") + ",\"range_end\":" + Q("l") + ",\"version\":\"0\"}]}");
  Same("POST", "/v3/kv/txn",
       "{\"compare\":[{\"target\":\"VALUE\",\"result\":\"EQUAL\",\"key\":" +
           Q("k") + ",\"range_end\":" + Q("l") + ",\"value\":" + Q("v") +
           "}]}");
}

TEST_F(DiffTest, NestedTxnAndHeadersInside) {
  Same("POST", "/v3/kv/put", PutBody("a", "1"));
  // A range before a write in the same txn reports the pre-write revision.
  Same("POST", "/v3/kv/txn",
       "{\"success\":[{\"request_range\":{\"key\":" + Q("a") +
           "}},{\"request_put\":{\"key\":" + Q("a") + ",\"value\":" + Q("2") +
           ",\"prev_kv\":true}},{\"request_range\":{\"key\":" + Q("a") +
           "}},{\"request_txn\":{\"success\":[{\"request_range\":{\"key\":" +
           Q("a") + "}}],\"failure\":[{\"request_put\":{\"key\":" + Q("n") +
           ",\"value\":" + Q("x") +
           "}}]}},{\"request_delete_range\":{\"key\":" + Q("zz") + "}}]}");
  // Read-only: no new revision. Empty: succeeded.
  Same("POST", "/v3/kv/txn",
       "{\"success\":[{\"request_range\":{\"key\":" + Q("a") + "}}]}");
  Same("POST", "/v3/kv/txn", "{}");
  Same("POST", "/v3/kv/range", RangeBody("a"));
  // A nested txn in the failure branch.
  Same("POST", "/v3/kv/txn",
       "{\"compare\":[{\"target\":\"VALUE\",\"result\":\"EQUAL\",\"key\":" +
           Q("a") + ",\"value\":" + Q("nope") +
           "}],\"failure\":[{\"request_txn\":{\"compare\":[{\"target\":"
           "\"VERSION\",\"result\":\"EQUAL\",\"key\":" +
           Q("a") +
           ",\"version\":\"2\"}],\"success\":[{\"request_put\":{\"key\":" +
           Q("b") + ",\"value\":" + Q("nested") + "}}]}}]}");
  Same("POST", "/v3/kv/range", RangeBody("b"));
}

TEST_F(DiffTest, TxnDuplicateKeysAndTooManyOps) {
  auto put = [](const std::string& k) {
    return "{\"request_put\":{\"key\":" + Q(k) + ",\"value\":" + Q("v") + "}}";
  };
  Same("POST", "/v3/kv/txn",
       "{\"success\":[" + put("x") + "," + put("x") + "]}");
  Same("POST", "/v3/kv/txn",
       "{\"success\":[{\"request_delete_range\":{\"key\":" + Q("a") +
           ",\"range_end\":" + Q("c") + "}}," + put("b") + "]}");
  Same("POST", "/v3/kv/txn",
       "{\"success\":[" + put("b") + ",{\"request_txn\":{\"success\":[" +
           put("b") + "]}}]}");
  // The same key in both branches is fine.
  Same("POST", "/v3/kv/txn",
       "{\"success\":[" + put("x") + "],\"failure\":[" + put("x") + "]}");
  // Two deletes of overlapping ranges are fine too.
  Same("POST", "/v3/kv/txn",
       "{\"success\":[{\"request_delete_range\":{\"key\":" + Q("a") +
           ",\"range_end\":" + Q("c") +
           "}},{\"request_delete_range\":{\"key\":" + Q("b") + "}}]}");
  for (int n : {128, 129}) {
    std::string ops;
    for (int i = 0; i < n; ++i) {
      if (i > 0) ops += ",";
      ops += put("k" + std::to_string(i));
    }
    Same("POST", "/v3/kv/txn", "{\"success\":[" + ops + "]}");
  }
}

// --- put/delete options ------------------------------------------------------

TEST_F(DiffTest, PrevKvIgnoreValueIgnoreLease) {
  Same("POST", "/v3/kv/put", PutBody("p", "1", ",\"prev_kv\":true"));
  Same("POST", "/v3/kv/put", PutBody("p", "", ",\"prev_kv\":true"));
  Same("POST", "/v3/kv/put", PutBody("p", "3", ",\"prev_kv\":true"));
  Same("POST", "/v3/kv/put",
       "{\"key\":" + Q("p") + ",\"ignore_value\":true,\"prev_kv\":true}");
  Same("POST", "/v3/kv/range", RangeBody("p"));
  Same("POST", "/v3/kv/put",
       "{\"key\":" + Q("nope") + ",\"ignore_value\":true}");
  Same("POST", "/v3/kv/put", PutBody("p", "x", ",\"ignore_value\":true"));
  Same("POST", "/v3/lease/grant", R"({"TTL":"60","ID":"5"})");
  Same("POST", "/v3/kv/put", PutBody("p", "4", ",\"lease\":\"5\""));
  Same("POST", "/v3/kv/put", PutBody("p", "5", ",\"ignore_lease\":true"));
  Same("POST", "/v3/kv/range", RangeBody("p"));
  Same("POST", "/v3/kv/put",
       PutBody("p", "6", ",\"ignore_lease\":true,\"lease\":\"5\""));
  Same("POST", "/v3/kv/put", PutBody("nope", "6", ",\"ignore_lease\":true"));
  Same("POST", "/v3/kv/put", PutBody("p", "7", ",\"lease\":\"12345\""));
  Same("POST", "/v3/kv/put", "{\"value\":" + Q("no key") + "}");
  Same("POST", "/v3/kv/put", PutBody("q", "1"));
  Same("POST", "/v3/kv/deleterange",
       RangeBody("p", ",\"range_end\":" + Q("r") + ",\"prev_kv\":true"));
  Same("POST", "/v3/kv/deleterange", RangeBody("p", ",\"prev_kv\":true"));
  Same("POST", "/v3/kv/deleterange", "{}");
}

// --- watch -------------------------------------------------------------------

TEST_F(DiffTest, WatchFromThePastAndLive) {
  Same("POST", "/v3/kv/put", PutBody("w/a", "1"));
  Same("POST", "/v3/kv/put", PutBody("w/b", "2"));
  Same("POST", "/v3/kv/put", PutBody("w/a", "3"));
  SameWatch(
      "{\"create_request\":{\"key\":" + Q("w/") + ",\"range_end\":" + Q("w0") +
          ",\"start_revision\":\"{R:2}\",\"prev_kv\":true}}",
      5,
      [](Side* s) {
        s->Do("POST", "/v3/kv/put", PutBody("w/c", "4"));
        s->Do("POST", "/v3/kv/txn",
              "{\"success\":[{\"request_put\":{\"key\":" + Q("w/d") +
                  ",\"value\":" + Q("5") + "}},{\"request_put\":{\"key\":" +
                  Q("w/e") + ",\"value\":" + Q("6") + "}}]}");
        s->Do("POST", "/v3/kv/deleterange",
              RangeBody("w/a", ",\"range_end\":" + Q("w/c")));
      },
      /*before=*/2);  // created, then the history: then write
}

TEST_F(DiffTest, WatchIdsFiltersProgressAndCancel) {
  Same("POST", "/v3/kv/put", PutBody("f", "1"));
  // Two watchers on one stream, one with a chosen id, then a duplicate id.
  SameWatch(
      "{\"create_request\":{\"key\":" + Q("f") +
          "}}{\"create_request\":{\"key\":" + Q("f") +
          ",\"filters\":[\"NOPUT\"]}}{\"create_request\":{\"key\":" + Q("f") +
          ",\"watch_id\":\"7\",\"filters\":[\"NODELETE\"]}}"
          "{\"create_request\":{\"key\":" +
          Q("f") + ",\"watch_id\":\"7\"}}",
      8,
      [](Side* s) {
        s->Do("POST", "/v3/kv/put", PutBody("f", "2"));
        s->Do("POST", "/v3/kv/deleterange", RangeBody("f"));
      },
      /*before=*/4, /*unordered=*/true);
  // A progress request after the create.
  SameWatch(
      "{\"create_request\":{\"key\":" + Q("g") + "}}{\"progress_request\":{}}",
      2);
  // Cancel.
  SameWatch("{\"create_request\":{\"key\":" + Q("g") +
                "}}{\"cancel_request\":{\"watch_id\":\"0\"}}",
            2);
}

// A watcher created with fragment (etcd's sendFragments): three 800 KiB
// puts read from history make a 2.4 MiB response, over the limit of both
// (--max-request-bytes 1.5 MiB + 512 KiB), so it comes in two messages,
// `"fragment":true` on the first. The messages are compared in full; a
// mismatch prints only their beginnings.
TEST_F(DiffTest, WatchFragmentAsEtcd) {
  for (int i = 0; i < 3; ++i) {
    Same("POST", "/v3/kv/put",
         PutBody("fr/" + std::to_string(i),
                 std::string(800 << 10, static_cast<char>('a' + i))));
  }
  const std::string create = "{\"create_request\":{\"key\":" + Q("fr/") +
                             ",\"range_end\":" + Q("fr0") +
                             ",\"start_revision\":\"{R:2}\"";
  for (bool fragment : {true, false}) {
    std::string body = create + (fragment ? ",\"fragment\":true}}" : "}}");
    size_t n = fragment ? 3 : 2;  // created, then the events
    std::vector<std::string> e = etcd_->Watch(body, n, nullptr);
    std::vector<std::string> k = kplane_->Watch(body, n, nullptr);
    ASSERT_EQ(e.size(), n);
    ASSERT_EQ(k.size(), n);
    // Not vacuous: etcd itself cuts (or not) as expected.
    EXPECT_EQ(e[1].find("\"fragment\":true") != std::string::npos, fragment);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(k[i] == e[i])
          << (fragment ? "fragment" : "whole") << " message " << i
          << ": kplane (" << k[i].size() << " bytes) " << k[i].substr(0, 200)
          << "\netcd (" << e[i].size() << " bytes) " << e[i].substr(0, 200);
    }
  }
}

TEST_F(DiffTest, WatchCompactedAndFutureStart) {
  for (int i = 0; i < 4; ++i) {
    Same("POST", "/v3/kv/put", PutBody("c", std::to_string(i)));
  }
  Same("POST", "/v3/kv/compaction", "{\"revision\":\"{R:4}\"}");
  SameWatch("{\"create_request\":{\"key\":" + Q("c") +
                ",\"start_revision\":\"{R:2}\"}}",
            2);
  // Exactly at the compaction revision: served (revision 4 is kept). (Was
  // known difference 6 until kplane's mvcc fixed it.)
  SameWatch("{\"create_request\":{\"key\":" + Q("c") +
                ",\"start_revision\":\"{R:4}\"}}",
            2);
  // From a future revision: created now, the event when it happens.
  SameWatch("{\"create_request\":{\"key\":" + Q("c") +
                ",\"start_revision\":\"{R:7}\"}}",
            2, [](Side* s) {
              s->Do("POST", "/v3/kv/put", PutBody("c", "6"));
              s->Do("POST", "/v3/kv/put", PutBody("c", "7"));
            });
}

// --- compaction --------------------------------------------------------------

TEST_F(DiffTest, CompactionErrors) {
  for (int i = 0; i < 5; ++i) {
    Same("POST", "/v3/kv/put", PutBody("k", std::to_string(i)));
  }
  Same("POST", "/v3/kv/compaction", "{\"revision\":\"{R:100}\"}");
  Same("POST", "/v3/kv/compaction", "{\"revision\":\"{R:3}\"}");
  Same("POST", "/v3/kv/compaction", "{\"revision\":\"{R:3}\"}");
  Same("POST", "/v3/kv/compaction", "{\"revision\":\"{R:2}\"}");
  Same("POST", "/v3/kv/range", RangeBody("k", ",\"revision\":\"{R:2}\""));
  Same("POST", "/v3/kv/range", RangeBody("k", ",\"revision\":\"{R:3}\""));
  Same("POST", "/v3/kv/compaction",
       "{\"revision\":\"{R:6}\",\"physical\":true}");
  Same("POST", "/v3/kv/range", RangeBody("k", ",\"revision\":\"{R:6}\""));
  Same("POST", "/v3/kv/range", RangeBody("k", ",\"revision\":\"{R:5}\""));
}

// --- leases ------------------------------------------------------------------

TEST_F(DiffTest, LeaseGrantTtlRevokeAndAliases) {
  // (A write first: on an empty store the revisions differ, see above.)
  Same("POST", "/v3/kv/put", PutBody("first", "x"));
  Same("POST", "/v3/lease/grant", R"({"TTL":"30","ID":"1000"})");
  Same("POST", "/v3/lease/grant", R"({"TTL":"30","ID":"1000"})");
  Same("POST", "/v3/lease/grant", R"({"TTL":"0","ID":"1001"})");
  Same("POST", "/v3/lease/grant", R"({"TTL":"-5","ID":"1002"})");
  Same("POST", "/v3/lease/grant", R"({"TTL":"1","ID":"1003"})");
  Same("POST", "/v3/lease/grant", R"({"TTL":"9000000000","ID":"1004"})");
  Same("POST", "/v3/lease/grant", R"({"TTL":"9000000001","ID":"1005"})");
  Same("POST", "/v3/kv/put", PutBody("l1", "a", ",\"lease\":\"1000\""));
  Same("POST", "/v3/kv/put", PutBody("l2", "b", ",\"lease\":\"1000\""));
  // Right after granting 30 s, timetolive reads 29 (rounded down).
  Same("POST", "/v3/lease/timetolive", R"({"ID":"1000","keys":true})");
  Same("POST", "/v3/kv/lease/timetolive", R"({"ID":"1000"})");
  Same("POST", "/v3/lease/timetolive", R"({"ID":"4242"})");
  Same("POST", "/v3/lease/leases", "{}");
  Same("POST", "/v3/kv/lease/leases", "{}");
  Same("POST", "/v3/lease/keepalive", R"({"ID":"1000"})");
  Same("POST", "/v3/lease/keepalive", R"({"ID":"4242"})");
  Same("POST", "/v3/lease/keepalive", "{}");
  // Revoking a lease without keys does not change the revision; with keys
  // it deletes them all in one revision.
  Same("POST", "/v3/lease/revoke", R"({"ID":"1001"})");
  Same("POST", "/v3/kv/range", RangeBody("l1"));
  SameWatch("{\"create_request\":{\"key\":" + Q("l") +
                ",\"range_end\":" + Q("m") + "}}",
            2, [](Side* s) {
              s->Do("POST", "/v3/kv/lease/revoke", R"({"ID":"1000"})");
            });
  Same("POST", "/v3/kv/range", RangeBody("l", ",\"range_end\":" + Q("m")));
  Same("POST", "/v3/lease/revoke", R"({"ID":"1000"})");
  Same("POST", "/v3/lease/leases", "{}");
}

TEST_F(DiffTest, LeaseExpiry) {
  Same("POST", "/v3/kv/put", PutBody("first", "x"));
  Same("POST", "/v3/lease/grant", R"({"TTL":"2","ID":"9"})");
  Same("POST", "/v3/kv/put", PutBody("e1", "x", ",\"lease\":\"9\""));
  Same("POST", "/v3/kv/put", PutBody("e2", "y", ",\"lease\":\"9\""));
  // Await the expiry through a watch on each store at once (the leases
  // run out on their own clocks): both keys go in one message, at one
  // revision (5).
  const std::string watch = "{\"create_request\":{\"key\":" + Q("e") +
                            ",\"range_end\":" + Q("f") + "}}";
  std::vector<std::string> e, k;
  std::thread te([&] { e = etcd_->Watch(watch, 2, nullptr); });
  std::thread tk([&] { k = kplane_->Watch(watch, 2, nullptr); });
  te.join();
  tk.join();
  EXPECT_EQ(k, e);
  Same("POST", "/v3/lease/timetolive", R"({"ID":"9"})");
  Same("POST", "/v3/kv/range", RangeBody("e", ",\"range_end\":" + Q("f")));
  Same("POST", "/v3/kv/range",
       RangeBody("e", ",\"range_end\":" + Q("f") + ",\"revision\":\"{R:4}\""));
}

// --- sizes and HTTP ----------------------------------------------------------

TEST_F(DiffTest, RequestTooLarge) {
  const size_t limit = 1536 * 1024;
  Same("POST", "/v3/kv/put", PutBody("big", std::string(limit - 100, 'x')));
  Same("POST", "/v3/kv/put", PutBody("big", std::string(limit + 10, 'x')));
  // Past 2 MiB etcd's gRPC layer refuses the message (429, code 8); kplane
  // answers the same (this was known difference 2).
  Same("POST", "/v3/kv/put",
       PutBody("big", std::string(2 * 1024 * 1024 + 10, 'x')));
}

TEST_F(DiffTest, HttpStatusesAndParsing) {
  Same("POST", "/v3/kv/range", "");
  Same("POST", "/v3/kv/range", "{}");
  Same("POST", "/v3/kv/put", PutBody("n", "1", ",\"unknown_field\":{\"x\":1}"));
  Same("POST", "/v3/kv/range",
       "{\"key\":" + Q("n") + ",\"limit\":5,\"sort_order\":2}");
  Same("POST", "/v3beta/kv/range", RangeBody("n"));
  Same("POST", "/v3/maintenance/defragment", "{}");
  // 404 and 405 in etcd's plain text (this was known difference 3).
  Same("POST", "/v3/nosuch", "{}");
  Same("GET", "/v3/kv/range", "");
  // A truncated body (this was known difference 4).
  Same("POST", "/v3/kv/range", "{");
  Same("POST", "/v3/kv/put", "{\"key\":");
}

// Issue 17: Patroni int()s the dot-separated parts of /version's
// "etcdserver" ("3.4.0-kplane" stopped it). kplane reports etcd's API level
// in etcd's form and names itself in a field of its own.
TEST_F(DiffTest, VersionParsesAsEtcds) {
  auto fields = [](Side* s) {
    Answer a = s->Do("GET", "/version", "");
    EXPECT_EQ(a.status, 200) << s->name();
    EXPECT_EQ(a.content_type, "application/json") << s->name();
    std::smatch m;
    EXPECT_TRUE(std::regex_match(
        a.body, m,
        std::regex(R"re(\{"etcdserver":"(\d+)\.(\d+)\.(\d+)",)re"
                   R"re("etcdcluster":"3\.4\.0"(,"kplane":"[^"]+")?\})re")))
        << s->name() << ": " << a.body;
    return m.size() == 5 ? m[1].str() + "." + m[2].str() + "|" + m[4].str()
                         : a.body;
  };
  EXPECT_EQ(fields(etcd_.get()), "3.4|");
  EXPECT_EQ(fields(kplane_.get()), "3.4|,\"kplane\":\"0.1.0\"");
}

// Issue 17: /v3/maintenance/hash answers etcd's HashResponse, field for
// field: {header, hash} with the hash present (an empty store's too). The
// values differ by design (etcd hashes its whole backend, member ids
// included; kplane the live key-values, see docs/store.md), so the hash is
// masked before comparing.
TEST_F(DiffTest, MaintenanceHashFields) {
  auto masked = [](Side* s) {
    Answer a = s->Do("POST", "/v3/maintenance/hash", "{}");
    EXPECT_EQ(a.status, 200) << s->name() << ": " << a.body;
    std::string b = s->Normalize(a.body);
    const std::string field = ",\"hash\":";
    const size_t p = b.find(field);
    EXPECT_NE(p, std::string::npos) << s->name() << ": " << b;
    if (p == std::string::npos) return b;
    size_t e = p + field.size();
    while (e < b.size() && b[e] >= '0' && b[e] <= '9') ++e;
    EXPECT_GT(e, p + field.size()) << s->name() << ": " << b;
    return b.replace(p + field.size(), e - p - field.size(), "H");
  };
  EXPECT_EQ(masked(kplane_.get()), masked(etcd_.get()));
  Same("POST", "/v3/kv/put", PutBody("h", "1"));
  EXPECT_EQ(masked(kplane_.get()), masked(etcd_.get()));
}

// Issue 17: the gateway decodes strictly (grpc-gateway's jsonpb): an unknown
// enum name or a value of the wrong JSON kind is 400, code 3, in Go's words.
TEST_F(DiffTest, StrictRequestDecoding) {
  Same("POST", "/v3/kv/put", PutBody("n", "1"));
  const std::string k = "{\"key\":" + Q("n");
  for (const std::string extra :
       {R"(,"sort_order":"BOGUS")", R"(,"sort_order":"1")",
        R"(,"sort_order":"ascend")", R"(,"sort_target":"BOGUS")",
        R"(,"sort_order":true)", R"(,"count_only":"true")",
        R"(,"keys_only":"false")", R"(,"serializable":1)",
        R"(,"count_only":[])", R"(,"limit":true)", R"(,"limit":1.5)",
        R"(,"limit":"1.5")", R"(,"limit":"abc")", R"(,"limit":{})",
        // Accepted: any enum number, null.
        R"(,"sort_order":9)", R"(,"sort_order":null,"count_only":null)"}) {
    Same("POST", "/v3/kv/range", k + extra + "}");
  }
  Same("POST", "/v3/kv/range", R"({"key":5})");
  Same("POST", "/v3/kv/range", "[]");
  Same("POST", "/v3/kv/put", k + R"(,"prev_kv":"true"})");
  Same("POST", "/v3/kv/txn", R"({"compare":[{"key":"bg==","target":"NOPE"}]})");
  Same("POST", "/v3/kv/txn", R"({"compare":[{"key":"bg==","result":"BAD"}]})");
  Same("POST", "/v3/kv/txn", R"({"compare":[{"key":"bg==","version":true}]})");
  Same("POST", "/v3/kv/txn", R"({"compare":{}})");
  Same("POST", "/v3/kv/txn", R"({"compare":[5]})");
  Same("POST", "/v3/kv/txn", R"({"success":[{"request_put":[]}]})");
  Same("POST", "/v3/maintenance/alarm", R"({"action":"X"})");
  // On the watch stream the same words come as its error: 500, code 2.
  Same("POST", "/v3/watch",
       R"({"create_request":{"key":"bg==","filters":["NOPUT","BAD"]}})");
  Same("POST", "/v3/watch",
       R"({"create_request":{"key":"bg==","prev_kv":"true"}})");
}

// --- election and lock (etcd's v3election, v3lock) ---------------------------

std::string LeaderKey(const std::string& key, const std::string& rev,
                      const std::string& lease) {
  return "{\"name\":" + Q("e") + ",\"key\":" + Q(key) + ",\"rev\":\"" + rev +
         "\",\"lease\":\"" + lease + "\"}";
}

// A request that waits (lock, campaign) on its own connection, in the
// background; the answer normalized as Side::Do's would be.
std::future<std::string> InBackground(Side* s, const std::string& path,
                                      const std::string& body,
                                      net::HttpHeaders headers = {}) {
  headers.Add("Content-Type", "application/json");
  return std::async(
      std::launch::async, [s, path, body, headers]() -> std::string {
        auto client = s->NewClient();
        if (!client.ok()) return client.status().ToString();
        auto r = (*client)->Request("POST", path, headers, s->Translate(body));
        if (!r.ok()) return r.status().ToString();
        return std::to_string(r->status) + " " + s->Normalize(r->body);
      });
}

TEST_F(DiffTest, ElectionCampaignLeaderProclaimResign) {
  const std::string e = ",\"name\":" + Q("e");
  Same("POST", "/v3/election/leader", "{" + e.substr(1) + "}");
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":100})");
  Same("POST", "/v3/election/campaign",
       "{\"lease\":100,\"value\":" + Q("v1") + e + "}");
  Same("POST", "/v3/election/leader", "{" + e.substr(1) + "}");
  const std::string me = LeaderKey("e/64", "{R:2}", "100");
  Same("POST", "/v3/election/proclaim",
       "{\"leader\":" + me + ",\"value\":" + Q("v2") + "}");
  // A LeaderKey of another leadership (create revision) cannot act.
  const std::string stale = LeaderKey("e/64", "{R:9}", "100");
  Same("POST", "/v3/election/proclaim",
       "{\"leader\":" + stale + ",\"value\":" + Q("v3") + "}");
  Same("POST", "/v3/election/resign", "{\"leader\":" + stale + "}");
  Same("POST", "/v3/election/proclaim", "{\"value\":" + Q("v3") + "}");
  Same("POST", "/v3/election/resign", "{}");
  Same("POST", "/v3/election/leader", "{" + e.substr(1) + "}");
  // Campaigning again with the same lease and another value proclaims it;
  // the answer carries the header of the read that found the key.
  Same("POST", "/v3/election/campaign",
       "{\"lease\":100,\"value\":" + Q("v4") + e + "}");
  Same("POST", "/v3/election/leader", "{" + e.substr(1) + "}");
  Same("POST", "/v3/election/campaign",
       "{\"lease\":999,\"value\":" + Q("x") + e + "}");
  Same("POST", "/v3/election/resign", "{\"leader\":" + me + "}");
  Same("POST", "/v3/election/leader", "{" + e.substr(1) + "}");
  Same("POST", "/v3/kv/range", RangeBody("e/", ",\"range_end\":" + Q("e0")));
}

TEST_F(DiffTest, LockUnlockAndWaiting) {
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":100})");
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":200})");
  const std::string l = "\"name\":" + Q("l");
  Same("POST", "/v3/lock/lock", "{" + l + ",\"lease\":100}");
  // The holder's lease locking again: its key, at once.
  Same("POST", "/v3/lock/lock", "{" + l + ",\"lease\":100}");
  Same("POST", "/v3/lock/lock", "{" + l + ",\"lease\":999}");
  Same("POST", "/v3/lock/unlock", "{}");

  // A second locker waits (its key l/c8 put at revision 3) until the
  // holder unlocks (revision 4).
  auto flow = [](Side* s) {
    std::vector<std::string> out;
    auto waiter = InBackground(s, "/v3/lock/lock",
                               "{\"name\":" + Q("l") + ",\"lease\":200}");
    std::vector<std::string> put = s->Watch(
        R"({"create_request":{"key":"bC8=","range_end":"bDA=","start_revision":"{R:3}"}})",
        2, nullptr);
    // The event only: whether the watch was created before or after the
    // put (its "created" header) is a race.
    out.push_back(put.back());
    out.push_back(waiter.wait_for(std::chrono::seconds(0)) ==
                          std::future_status::ready
                      ? "waiter done early"
                      : "waiter waits");
    Answer u = s->Do("POST", "/v3/lock/unlock", "{\"key\":" + Q("l/64") + "}");
    out.push_back(std::to_string(u.status) + " " + s->Normalize(u.body));
    out.push_back(waiter.get());
    return out;
  };
  EXPECT_EQ(flow(kplane_.get()), flow(etcd_.get()));
  Same("POST", "/v3/kv/range", RangeBody("l/", ",\"range_end\":" + Q("l0")));
  Same("POST", "/v3/lock/unlock", "{\"key\":" + Q("l/c8") + "}");
  Same("POST", "/v3/lock/unlock", "{\"key\":" + Q("l/c8") + "}");
}

TEST_F(DiffTest, LockAndCampaignEndAtTheClientsDeadline) {
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":100})");
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":200})");
  Same("POST", "/v3/lock/lock", "{\"name\":" + Q("l") + ",\"lease\":100}");
  Same("POST", "/v3/election/campaign",
       "{\"name\":" + Q("e") + ",\"lease\":100}");
  // grpc-gateway's Grpc-Timeout header is the call's deadline: 504, code 4,
  // and the waiter's key is deleted before the answer. etcd answers a
  // campaign's deadline either way, as its gRPC server's deadline timer or
  // the recipe's own context error (500, code 2) comes first: both count as
  // the deadline.
  auto deadline = [](std::string a) {
    const std::string unknown =
        "500 {\"error\":\"context deadline exceeded\",\"message\":"
        "\"context deadline exceeded\",\"code\":2}";
    return a == unknown ? "504 {\"error\":\"context deadline exceeded\","
                          "\"message\":\"context deadline exceeded\","
                          "\"code\":4}"
                        : a;
  };
  auto flow = [&deadline](Side* s) {
    std::vector<std::string> out;
    for (const char* path : {"/v3/lock/lock", "/v3/election/campaign"}) {
      const std::string name =
          Q(std::string(path).ends_with("lock") ? "l" : "e");
      out.push_back(deadline(
          InBackground(s, path, "{\"name\":" + name + ",\"lease\":200}",
                       {{"Grpc-Timeout", "300m"}})
              .get()));
      out.push_back(InBackground(s, path,
                                 "{\"name\":" + name + ",\"lease\":200}",
                                 {{"Grpc-Timeout", "soon"}})
                        .get());
    }
    return out;
  };
  EXPECT_EQ(flow(kplane_.get()), flow(etcd_.get()));
  Same("POST", "/v3/kv/range", RangeBody("e", ",\"range_end\":" + Q("m")));
}

TEST_F(DiffTest, ElectionObserveProclamationsAndTheNextLeader) {
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":100})");
  Both("POST", "/v3/lease/grant", R"({"TTL":60,"ID":200})");
  const std::string e = ",\"name\":" + Q("e");
  Same("POST", "/v3/election/campaign",
       "{\"lease\":100,\"value\":" + Q("v1") + e + "}");
  auto flow = [&](Side* s) {
    std::vector<std::string> out;
    // B (e/c8, revision 3) queues behind the leader A (e/64, revision 2).
    auto b = InBackground(s, "/v3/election/campaign",
                          "{\"lease\":200,\"value\":" + Q("v3") + e + "}");
    std::vector<std::string> put = s->Watch(
        R"({"create_request":{"key":"ZS8=","range_end":"ZTA=","start_revision":"{R:3}"}})",
        2, nullptr);
    // The event only: whether the watch was created before or after the
    // put (its "created" header) is a race.
    out.push_back(put.back());
    // The observer sees A, A's proclamation, then B once A resigned.
    std::vector<std::string> seen = s->Watch(
        "{" + e.substr(1) + "}", 3,
        [&] {
          const std::string a = LeaderKey("e/64", "{R:2}", "100");
          s->Do("POST", "/v3/election/proclaim",
                "{\"leader\":" + a + ",\"value\":" + Q("v2") + "}");
          s->Do("POST", "/v3/election/resign", "{\"leader\":" + a + "}");
        },
        1, seconds(10), "/v3/election/observe");
    // Compared without their headers: a message's header is its watch
    // response's, whose revision depends on whether the observer's watch
    // caught up from history (etcd too answers 4 or 5 for the
    // proclamation at 4, followed by the resignation at 5).
    static const std::regex header(R"("header":\{[^}]*\},)");
    for (const std::string& m : seen) {
      out.push_back(std::regex_replace(m, header, ""));
    }
    out.push_back(b.get());
    return out;
  };
  EXPECT_EQ(flow(kplane_.get()), flow(etcd_.get()));
  Same("POST", "/v3/election/leader", "{" + e.substr(1) + "}");
}

}  // namespace
}  // namespace kplane::e2e
