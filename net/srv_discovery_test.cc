#include "net/srv_discovery.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace kplane::net {
namespace {

// DNS wire format by hand (RFC 1035 section 4), so that the parser meets
// exactly the bytes a test means, compression pointers included.
std::string U16(int v) {
  return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
}
std::string Name(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& l : labels) out += static_cast<char>(l.size()) + l;
  return out + '\0';
}
std::string Pointer(int offset) { return U16(0xc000 | offset); }

// The question "_etcd-client._tcp.example.com" starts at offset 12; its
// "example.com" part at offset 12 + 13 + 5 = 30.
constexpr int kQuestionName = 12;
constexpr int kExampleCom = 30;

std::string Message(const std::vector<std::string>& answers) {
  std::string m = U16(0x1234) + U16(0x8180) + U16(1) +
                  U16(static_cast<int>(answers.size())) + U16(0) + U16(0);
  m += Name({"_etcd-client", "_tcp", "example", "com"}) + U16(33) + U16(1);
  for (const auto& a : answers) m += a;
  return m;
}
std::string Answer(int type, const std::string& rdata) {
  return Pointer(kQuestionName) + U16(type) + U16(1) + U16(0) + U16(300) +
         U16(static_cast<int>(rdata.size())) + rdata;
}
std::string Srv(int prio, int weight, int port, const std::string& target) {
  return Answer(33, U16(prio) + U16(weight) + U16(port) + target);
}

TEST(SrvParseTest, ReadsRecordsPlainAndCompressed) {
  auto recs = ParseSrvResponse(
      Message({Srv(10, 5, 2379, Name({"m1", "example", "com"})),
               Srv(20, 0, 22379, "\x02m2" + Pointer(kExampleCom))}));
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 2u);
  EXPECT_EQ((*recs)[0].target, "m1.example.com");
  EXPECT_EQ((*recs)[0].port, 2379);
  EXPECT_EQ((*recs)[0].priority, 10);
  EXPECT_EQ((*recs)[0].weight, 5);
  EXPECT_EQ((*recs)[1].target, "m2.example.com");
  EXPECT_EQ((*recs)[1].port, 22379);
  EXPECT_EQ((*recs)[1].priority, 20);
}

TEST(SrvParseTest, SkipsOtherTypesAndTheRootTarget) {
  auto recs = ParseSrvResponse(
      Message({Answer(5, Name({"alias", "example", "com"})),  // CNAME
               Srv(0, 0, 1, Name({})),                        // "."
               Srv(0, 0, 2379, Name({"m1", "example", "com"}))}));
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].target, "m1.example.com");
}

TEST(SrvParseTest, RefusesMalformedMessages) {
  const std::string good =
      Message({Srv(0, 0, 2379, Name({"m1", "example", "com"}))});
  // Cut anywhere inside the answer: the record no longer fits.
  for (size_t cut : {size_t{5}, size_t{20}, good.size() - 3}) {
    auto r = ParseSrvResponse(good.substr(0, cut));
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << cut;
  }
  // RDATA shorter than priority + weight + port + a name.
  auto short_rdata = ParseSrvResponse(Message({Answer(33, U16(0) + U16(0))}));
  EXPECT_EQ(short_rdata.status().code(), StatusCode::kInvalidArgument);
  // A target name that points at itself.
  const int self = static_cast<int>(Message({}).size()) + 12 + 6;
  auto loop = ParseSrvResponse(Message({Srv(0, 0, 1, Pointer(self))}));
  EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
  // A target name running past its RDATA.
  auto past = ParseSrvResponse(
      Message({Answer(33, U16(0) + U16(0) + U16(1) + "\x05m1")}));
  EXPECT_EQ(past.status().code(), StatusCode::kInvalidArgument);
}

class FakeResolver : public SrvResolver {
 public:
  std::map<std::string, StatusOr<std::vector<SrvRecord>>> answers;
  std::vector<std::string> asked;

  StatusOr<std::vector<SrvRecord>> LookupSrv(const std::string& name) override {
    asked.push_back(name);
    auto it = answers.find(name);
    if (it == answers.end()) {
      return NotFoundError("lookup " + name + ": no such SRV record");
    }
    return it->second;
  }
};

TEST(SrvDiscoveryTest, QueriesEtcdsServiceNames) {
  EXPECT_EQ(SrvQueryName("etcd-client", "", true, "example.com"),
            "_etcd-client-ssl._tcp.example.com");
  EXPECT_EQ(SrvQueryName("etcd-client", "", false, "example.com"),
            "_etcd-client._tcp.example.com");
  EXPECT_EQ(SrvQueryName("etcd-client", "prod", true, "example.com"),
            "_etcd-client-ssl-prod._tcp.example.com");
  EXPECT_EQ(SrvQueryName("etcd-client", "prod", false, "example.com"),
            "_etcd-client-prod._tcp.example.com");
}

TEST(SrvDiscoveryTest, HttpsRecordsFirstThenHttp) {
  FakeResolver r;
  r.answers.emplace("_etcd-client-ssl-prod._tcp.example.com",
                    std::vector<SrvRecord>{{"m1.example.com", 2379, 0, 0}});
  r.answers.emplace("_etcd-client-prod._tcp.example.com",
                    std::vector<SrvRecord>{{"m2.example.com", 2379, 1, 0},
                                           {"::1", 2380, 0, 0}});
  auto eps = DiscoverClientEndpoints(r, "example.com", "prod");
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  ASSERT_EQ(eps->size(), 3u);
  EXPECT_EQ((*eps)[0].url, "https://m1.example.com:2379");
  EXPECT_TRUE((*eps)[0].https);
  EXPECT_EQ((*eps)[1].url, "http://m2.example.com:2379");
  EXPECT_EQ((*eps)[1].srv.priority, 1);
  EXPECT_EQ((*eps)[2].url, "http://[::1]:2380");
  EXPECT_EQ(r.asked,
            (std::vector<std::string>{"_etcd-client-ssl-prod._tcp.example.com",
                                      "_etcd-client-prod._tcp.example.com"}));
}

TEST(SrvDiscoveryTest, FailsOnlyWhenBothLookupsFail) {
  FakeResolver r;
  r.answers.emplace("_etcd-client._tcp.example.com",
                    std::vector<SrvRecord>{{"m1.example.com", 2379, 0, 0}});
  auto one = DiscoverClientEndpoints(r, "example.com", "");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);

  FakeResolver none;
  auto both = DiscoverClientEndpoints(none, "example.com", "");
  EXPECT_EQ(both.status().code(), StatusCode::kNotFound);
  EXPECT_NE(both.status().message().find("_etcd-client-ssl._tcp.example.com"),
            std::string::npos);
  EXPECT_NE(both.status().message().find(" and lookup _etcd-client._tcp"),
            std::string::npos)
      << both.status().message();
}

}  // namespace
}  // namespace kplane::net
