// Behaviours etcd 3.4's own e2e suite (tests/e2e, scripts/etcd-e2e.sh)
// checks, held here by tests of our own so that they do not depend on that
// suite's run: /health's exact body and alarm responses (with no header,
// as etcd's), an expired lease revoked with auth on, etcd's member and
// cluster IDs.
#include <gtest/gtest.h>

#include <future>

#include "base/base64.h"
#include "net/http_client.h"
#include "storage/server/cluster.h"
#include "storage/server/single_member_store.h"

namespace kplane::storage {
namespace {

class EtcdCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SingleMemberStore::Start();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    client_ = std::make_unique<net::HttpClient>("127.0.0.1", store_->port());
  }

  net::HttpResponse Post(const std::string& path, const std::string& body,
                         const std::string& token = "") {
    net::HttpHeaders h{{"Content-Type", "application/json"}};
    if (!token.empty()) h.Add("Authorization", token);
    auto r = client_->Request("POST", path, h, body);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : net::HttpResponse{};
  }
  // The value of "field":"..." in a JSON body, empty if absent.
  static std::string Field(const std::string& body, const std::string& field) {
    const std::string open = "\"" + field + "\":\"";
    size_t at = body.find(open);
    if (at == std::string::npos) return "";
    at += open.size();
    return body.substr(at, body.find('"', at) - at);
  }

  std::unique_ptr<SingleMemberStore> store_;
  std::unique_ptr<net::HttpClient> client_;
};

// etcd's TestCtlV3Alarm matches {"health":"false"} exactly once NOSPACE is
// raised; why is in a header of ours. A disarm answers what it removed.
TEST_F(EtcdCompatTest, HealthBodyIsEtcdsWithTheReasonInAHeader) {
  auto ok = client_->Request("GET", "/health");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, R"({"health":"true"})");
  // What Go's net/http sniffs from that body, as etcd answers it.
  EXPECT_EQ(ok->headers.Get("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_FALSE(ok->headers.Has("X-Kplane-Health-Reason"));

  etcdserverpb::AlarmRequest raise;
  raise.set_action(etcdserverpb::AlarmRequest::ACTIVATE);
  raise.set_memberid(store_->server()->member_id());
  raise.set_alarm(etcdserverpb::NOSPACE);
  auto raised = store_->server()->Alarm(raise);
  ASSERT_TRUE(raised.ok()) << raised.status();
  ASSERT_EQ(raised->alarms_size(), 1);
  EXPECT_EQ(raised->alarms(0).alarm(), etcdserverpb::NOSPACE);

  auto bad = client_->Request("GET", "/health");
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->status, 503);
  // Go's http.Error: a newline after the body, nosniff.
  EXPECT_EQ(bad->body, "{\"health\":\"false\"}\n");
  EXPECT_EQ(bad->headers.Get("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(bad->headers.Get("X-Content-Type-Options"), "nosniff");
  const std::string reason(bad->headers.Get("X-Kplane-Health-Reason"));
  EXPECT_EQ(reason.rfind("ALARM ACTIVE", 0), 0u) << reason;
  EXPECT_NE(reason.find("NOSPACE"), std::string::npos) << reason;

  // etcd's ?exclude=NOSPACE (kubeadm's liveness probe asks it): that alarm
  // is left out; other names, unknown ones included, leave it in.
  auto excluded = client_->Request("GET", "/health?exclude=NOSPACE");
  ASSERT_TRUE(excluded.ok()) << excluded.status();
  EXPECT_EQ(excluded->status, 200);
  EXPECT_EQ(excluded->body, R"({"health":"true"})");
  auto others = client_->Request("GET", "/health?exclude=CORRUPT&exclude=NOPE");
  ASSERT_TRUE(others.ok()) << others.status();
  EXPECT_EQ(others->status, 503);

  // etcd's TestCtlV3Alarm then expects `etcdctl alarm disarm` to print the
  // alarm it disarmed: the response lists what the disarm removed.
  etcdserverpb::AlarmRequest disarm;
  disarm.set_action(etcdserverpb::AlarmRequest::DEACTIVATE);
  disarm.set_memberid(store_->server()->member_id());
  disarm.set_alarm(etcdserverpb::NOSPACE);
  auto disarmed = store_->server()->Alarm(disarm);
  ASSERT_TRUE(disarmed.ok()) << disarmed.status();
  ASSERT_EQ(disarmed->alarms_size(), 1);
  EXPECT_EQ(disarmed->alarms(0).alarm(), etcdserverpb::NOSPACE);
  EXPECT_EQ(disarmed->alarms(0).memberid(), store_->server()->member_id());
  auto again = store_->server()->Alarm(disarm);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->alarms_size(), 0);
  auto ok_again = client_->Request("GET", "/health");
  ASSERT_TRUE(ok_again.ok()) << ok_again.status();
  EXPECT_EQ(ok_again->status, 200);

  // Another method, HEAD too: etcd's 405 (not counted as a check).
  for (const char* method : {"HEAD", "POST"}) {
    auto other = client_->Request(method, "/health");
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_EQ(other->status, 405) << method;
    EXPECT_EQ(other->headers.Get("Allow"), "GET");
    if (std::string(method) == "POST") {
      EXPECT_EQ(other->body, "Method Not Allowed\n");
    }
  }

  // etcd's counters of the answers: 3 healthy, 2 not.
  auto m = client_->Request("GET", "/metrics");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NE(m->body.find("\netcd_server_health_success 3\n"),
            std::string::npos);
  EXPECT_NE(m->body.find("\netcd_server_health_failures 2\n"),
            std::string::npos);
}

// etcd's AlarmResponse has no header, on every action (etcd 3.4.23's
// gateway answers a GET `{}` with no alarm; etcdctl alarm list -w json
// prints none either): each answer below is etcd's, byte for byte.
TEST_F(EtcdCompatTest, AlarmAnswersCarryNoHeader) {
  const std::string member = std::to_string(store_->server()->member_id());
  const std::string nospace =
      R"({"alarms":[{"memberID":")" + member + R"(","alarm":"NOSPACE"}]})";
  net::HttpResponse r = Post("/v3/maintenance/alarm", R"({"action":"GET"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(Post("/v3/maintenance/alarm", "{}").body, "{}");
  const std::string alarm =
      R"("memberID":")" + member + R"(","alarm":"NOSPACE"})";
  r = Post("/v3/maintenance/alarm", R"({"action":"ACTIVATE",)" + alarm);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, nospace);
  EXPECT_EQ(Post("/v3/maintenance/alarm", R"({"action":"GET"})").body, nospace);
  EXPECT_EQ(
      Post("/v3/maintenance/alarm", R"({"action":"GET","alarm":"CORRUPT"})")
          .body,
      "{}");
  r = Post("/v3/maintenance/alarm", R"({"action":"DEACTIVATE",)" + alarm);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, nospace);
  EXPECT_EQ(
      Post("/v3/maintenance/alarm", R"({"action":"DEACTIVATE",)" + alarm).body,
      "{}");
  EXPECT_EQ(Post("/v3/maintenance/alarm", R"({"action":"GET"})").body, "{}");
}

// etcd's TestCtlV3AuthLeaseTestTimeToLiveExpired: with auth on, the
// leader's revoke of an expired lease runs as root (etcd's WithRoot); an
// anonymous revoke was refused for want of write permission on the key, so
// the lease outlived its TTL and its key stayed.
TEST_F(EtcdCompatTest, ExpiredLeaseIsRevokedWithAuthOn) {
  ASSERT_EQ(
      Post("/v3/auth/user/add", R"({"name":"root","password":"pw"})").status,
      200);
  ASSERT_EQ(
      Post("/v3/auth/user/grant", R"({"user":"root","role":"root"})").status,
      200);
  ASSERT_EQ(Post("/v3/auth/enable", "{}").status, 200);
  const std::string token = Field(
      Post("/v3/auth/authenticate", R"({"name":"root","password":"pw"})").body,
      "token");
  ASSERT_FALSE(token.empty());

  net::HttpResponse g = Post("/v3/lease/grant", R"({"TTL":"2"})", token);
  const std::string id = Field(g.body, "ID");
  ASSERT_FALSE(id.empty()) << g.body;
  const std::string key = Base64Encode("/ephemeral");
  ASSERT_EQ(Post("/v3/kv/put",
                 R"({"key":")" + key + R"(","value":")" + Base64Encode("x") +
                     R"(","lease":")" + id + R"("})",
                 token)
                .status,
            200);

  // Expiry is real time (2 s, the minimum TTL); the DELETE is awaited.
  std::promise<void> deleted;
  bool fired = false;
  etcdserverpb::WatchCreateRequest w;
  w.set_key("/ephemeral");
  auto watch = store_->server()->StartWatch(
      w, [&](const etcdserverpb::WatchResponse& r) {
        for (const auto& e : r.events()) {
          if (e.type() == mvccpb::Event::DELETE && !fired) {
            fired = true;
            deleted.set_value();
          }
        }
      });
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_EQ(deleted.get_future().wait_for(seconds(15)),
            std::future_status::ready)
      << "the expired lease was not revoked";
  net::HttpResponse ttl =
      Post("/v3/lease/timetolive", R"({"ID":")" + id + R"("})", token);
  EXPECT_EQ(Field(ttl.body, "TTL"), "-1") << ttl.body;
}

// Request bodies as etcd 3.4.23's gateway decodes them (jsonpb over Go's
// encoding/json), each answer measured with curl against it: of a key given
// twice only the last counts, two members of one oneof resolve in
// declaration order (etcd's most frequent choice: it varies), bytes are
// Go's padded standard base64 with CR/LF skipped, an integer in float form
// is refused. The error bodies are etcd's, byte for byte.
TEST_F(EtcdCompatTest, RequestBodiesDecodeAsEtcdsGateway) {
  net::HttpResponse r =
      Post("/v3/kv/txn", R"({"success":[{"request_put":{"key":"YQ==",)"
                         R"("value":"MQ=="}}],"success":[{"request_put":)"
                         R"({"key":"Yg==","value":"Mg=="}}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  r = Post("/v3/kv/range", R"({"key":"YQ==","range_end":"ZA=="})");
  EXPECT_EQ(r.body.find("\"YQ==\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("key":"Yg==")"), std::string::npos) << r.body;
  // The second request_put replaces the first, value and all.
  r = Post("/v3/kv/txn", R"({"success":[{"request_put":{"key":"Yw==",)"
                         R"("value":"MQ=="},"request_put":{"key":"Yw=="}}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  r = Post("/v3/kv/range", R"({"key":"Yw=="})");
  EXPECT_NE(r.body.find(R"("key":"Yw==")"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("\"value\""), std::string::npos) << r.body;
  // request_delete_range (declared 3rd) over request_put (2nd).
  r = Post("/v3/kv/txn", R"({"success":[{"request_delete_range":{"key":)"
                         R"("Yg=="},"request_put":{"key":"Yg==","value":)"
                         R"("Mw=="}}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"("response_delete_range":{)"), std::string::npos)
      << r.body;
  EXPECT_EQ(Post("/v3/kv/range", R"({"key":"Yg=="})").body.find("\"kvs\""),
            std::string::npos);

  // Python's base64.encodebytes output: lines end in "\n".
  r = Post("/v3/kv/put", R"({"key":"Zm9v\nYmFy","value":"eA==\n"})");
  EXPECT_EQ(r.status, 200) << r.body;
  r = Post("/v3/kv/range", R"({"key":"Zm9vYmFy"})");
  EXPECT_NE(r.body.find(R"("value":"eA==")"), std::string::npos) << r.body;

  auto error_body = [](const std::string& m) {
    return R"({"error":")" + m + R"(","message":")" + m + R"(","code":3})";
  };
  struct Case {
    const char* path;
    const char* body;
    const char* message;
  };
  const Case kRefused[] = {
      {"/v3/kv/range", R"({"key":"Zm8"})",
       "illegal base64 data at input byte 0"},
      {"/v3/kv/range", R"({"key":"-_8="})",
       "illegal base64 data at input byte 0"},
      {"/v3/kv/put", R"({"key":"Zm9v====","value":"eA=="})",
       "illegal base64 data at input byte 4"},
      {"/v3/kv/range", R"({"key":"YQ==","limit":1.0})",
       "json: cannot unmarshal number 1.0 into Go value of type int64"},
      {"/v3/kv/range", R"({"key":"YQ==","limit":1e3})",
       "json: cannot unmarshal number 1e3 into Go value of type int64"},
      {"/v3/kv/txn", R"({"success":[{"request":{}}]})",
       "json: cannot unmarshal object into Go value of type "
       "etcdserverpb.isRequestOp_Request"},
  };
  for (const Case& c : kRefused) {
    r = Post(c.path, c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_EQ(r.body, error_body(c.message)) << c.body;
  }
}

// etcd's gateway reads a unary body with one json.Decoder Decode: the first
// JSON value, whatever follows it; `null`, an empty or a blank body is an
// empty request; a syntax error is Go's scanner's, in its words. Each answer
// below is etcd 3.4.23's to the same body (measured with curl, 2026-12-07).
TEST_F(EtcdCompatTest, UnaryBodiesAreReadAsEtcdsGatewayReadsThem) {
  // The first value counts; what follows it is not read.
  for (const char* body :
       {R"({"key":"YQ=="} xyz)", R"({"key":"YQ=="}{"key":"Yg=="})",
        R"({"key":"YQ=="}xyz)", R"({"key":"YQ=="} {"key":)",
        R"({"key":"YQ=="}})"}) {
    net::HttpResponse r = Post("/v3/kv/put", body);
    EXPECT_EQ(r.status, 200) << body << ": " << r.body;
    r = Post("/v3/kv/range", body);
    EXPECT_EQ(r.status, 200) << body << ": " << r.body;
    EXPECT_NE(r.body.find(R"("key":"YQ==")"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Post("/v3/kv/range", R"({"key":"Yg=="})").body.find("\"kvs\""),
            std::string::npos);

  auto error_body = [](const std::string& m) {
    return R"({"error":")" + m + R"(","message":")" + m + R"(","code":3})";
  };
  struct Case {
    std::string body;
    std::string message;  // JSON-escaped, as in etcd's body
  };
  const std::string kNoKey = "etcdserver: key is not provided";
  auto kind = [](const char* k) {
    return std::string("json: cannot unmarshal ") + k +
           " into Go value of type map[string]json.RawMessage";
  };
  const Case kCases[] = {
      // An empty request: the key is missing.
      {"null", kNoKey},
      {"null xyz", kNoKey},
      {"  null  ", kNoKey},
      {"nullx", kNoKey},
      {"  \n\t ", kNoKey},
      {"", kNoKey},
      // Values that are not objects (read whole, then refused).
      {"[]", kind("array")},
      {"[1]", kind("array")},
      {R"("x")", kind("string")},
      {"1", kind("number")},
      {"1x", kind("number")},
      {"true", kind("bool")},
      {"truex", kind("bool")},
      // Go's scanner's syntax errors.
      {"xyz", R"(invalid character 'x' looking for beginning of value)"},
      {R"({"key":x})",
       R"(invalid character 'x' looking for beginning of value)"},
      {"[1,x]", R"(invalid character 'x' looking for beginning of value)"},
      {R"({"key" "YQ=="})", R"(invalid character '\"' after object key)"},
      {R"({"key":"YQ==" x})",
       R"(invalid character 'x' after object key:value pair)"},
      {R"({"key":"YQ==","range_end":"Yg==" "x":1})",
       R"(invalid character '\"' after object key:value pair)"},
      {R"({"limit":01})",
       R"(invalid character '1' after object key:value pair)"},
      {"{x:1}",
       R"(invalid character 'x' looking for beginning of object key string)"},
      {R"({"key":"YQ==",})",
       R"(invalid character '}' looking for beginning of object key string)"},
      {"{'key':'YQ=='}",
       R"(invalid character '\\'' looking for beginning of object key string)"},
      {"{\v\"key\":\"YQ==\"}",
       R"(invalid character '\\v' looking for beginning of object key string)"},
      {"{\"key\":\"Y\nQ==\"}", R"(invalid character '\\n' in string literal)"},
      {std::string("{\"key\":\"Y\0Q==\"}", 15),
       R"(invalid character '\\x00' in string literal)"},
      {R"({"key":"\q"})", R"(invalid character 'q' in string escape code)"},
      {R"({"key":"\u12g4"})",
       R"(invalid character 'g' in \\u hexadecimal character escape)"},
      {R"({"compare":[{} x]})", R"(invalid character 'x' after array element)"},
      {R"({"keys_only":tru})",
       R"(invalid character '}' in literal true (expecting 'e'))"},
      {R"({"key":nul})",
       R"(invalid character '}' in literal null (expecting 'l'))"},
      {R"({"limit":-x})", R"(invalid character 'x' in numeric literal)"},
      {R"({"limit":1.x})",
       R"(invalid character 'x' after decimal point in numeric literal)"},
      {R"({"limit":1ex})",
       R"(invalid character 'x' in exponent of numeric literal)"},
      {"\xff", "invalid character '\xc3\xbf' looking for beginning of value"},
      {"\xef\xbb\xbf{}",
       "invalid character '\xc3\xaf' looking for beginning of value"},
      // The body ends inside the first value.
      {R"({"key":"YQ==")", "unexpected EOF"},
      {"{", "unexpected EOF"},
      {R"({"key")", "unexpected EOF"},
      {R"({"key":"YQ)", "unexpected EOF"},
      {R"({"limit":1)", "unexpected EOF"},
      {"nul", "unexpected EOF"},
      {"[1", "unexpected EOF"},
      {"-", "unexpected EOF"},
      {"1.", "unexpected EOF"},
      {R"({"key":"YQ==","a":)" + std::string(9999, '['), "unexpected EOF"},
  };
  for (const char* path : {"/v3/kv/range", "/v3/kv/put"}) {
    for (const Case& c : kCases) {
      net::HttpResponse r = Post(path, c.body);
      EXPECT_EQ(r.status, 400) << path << " " << c.body.substr(0, 40);
      EXPECT_EQ(r.body, error_body(c.message))
          << path << " " << c.body.substr(0, 40);
    }
  }
  // An integer as a string: jsonpb drops the quotes and json.Unmarshals
  // the rest (its syntax errors, white space allowed, null as no value).
  const Case kLimits[] = {
      {"1x", "invalid character 'x' after top-level value"},
      {"01", "invalid character '1' after top-level value"},
      {"1 2", "invalid character '2' after top-level value"},
      {"0x10", "invalid character 'x' after top-level value"},
      {"", "unexpected end of JSON input"},
      {" ", "unexpected end of JSON input"},
      {"-", "invalid character ' ' in numeric literal"},
      {"1e", "invalid character ' ' in exponent of numeric literal"},
      {"1.", "invalid character ' ' after decimal point in numeric literal"},
      {"tru", "invalid character ' ' in literal true (expecting 'e')"},
      {"+1", "invalid character '+' looking for beginning of value"},
      {"[1]", "json: cannot unmarshal array into Go value of type int64"},
      {"{}", "json: cannot unmarshal object into Go value of type int64"},
      {"true", "json: cannot unmarshal bool into Go value of type int64"},
  };
  for (const Case& c : kLimits) {
    const std::string body = R"({"key":"YQ==","limit":")" + c.body + "\"}";
    net::HttpResponse r = Post("/v3/kv/range", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.body, error_body(c.message)) << body;
  }
  for (const char* limit : {" 1", "1 ", "null"}) {
    const std::string body =
        R"({"key":"YQ==","limit":")" + std::string(limit) + "\"}";
    EXPECT_EQ(Post("/v3/kv/range", body).status, 200) << body;
  }

  // 10,000 levels are read (then refused as not an object). Past that
  // etcd says "invalid character '[' exceeded max depth", the store its
  // own "exceeded max depth of 10000" (HostileJsonTest.DeepPutBodyIsA400).
  EXPECT_EQ(
      Post("/v3/kv/range", std::string(10000, '[') + std::string(10000, ']'))
          .body,
      error_body(kind("array")));
}

// etcd's TestCtlV3GetFormat matches the response header of `etcdctl get -w
// protobuf` byte for byte: cluster ID 0x34c21a2d427db393 and a member ID
// starting 0x...6d for its one member (peer URL https://localhost:20001,
// token "new"). etcd's derivation gives the same for the same flags.
TEST(EtcdIdsTest, MemberAndClusterIdsAreEtcds) {
  const uint64_t member = ComputeMemberId({"https://localhost:20001"}, "new");
  EXPECT_EQ(member, 0xa8f3458387986dULL);
  EXPECT_EQ(ComputeClusterId({member}), 0x34c21a2d427db393ULL);
  // Order of URLs and of members does not count.
  EXPECT_EQ(ComputeMemberId({"http://b:2380", "http://a:2380"}, "t"),
            ComputeMemberId({"http://a:2380", "http://b:2380"}, "t"));
  EXPECT_EQ(ComputeClusterId({1, 2, 3}), ComputeClusterId({3, 1, 2}));
  // A member added later (salted with its time) gets another ID.
  EXPECT_NE(ComputeMemberId({"https://localhost:20001"}, "new", 1700000000),
            member);
}

}  // namespace
}  // namespace kplane::storage
