#include "bench/load.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "base/clock.h"
#include "net/http_server.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::bench {
namespace {

// Answers POST /ok with 200 and POST /fail with 500; /step answers 200 with
// the number of requests seen so far on this path.
class BenchServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<net::HttpServer>(net::HttpServerOptions{});
    server_->Handle(
        "POST", "/ok",
        [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
          ++ok_;
          r->Respond(200, {}, "ok");
        });
    server_->Handle(
        "POST", "/fail",
        [](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
          r->Respond(500, {}, "broken");
        });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Stop(); }

  std::unique_ptr<net::HttpServer> server_;
  std::atomic<int64_t> ok_{0};
};

class FixedScript : public ClientScript {
 public:
  FixedScript(std::string path, int steps) : path_(path), steps_(steps) {}
  Request Next() override { return {"POST", path_, "x"}; }
  Step OnResponse(const net::HttpResponse& r) override {
    if (r.status != 200) return Step::kFailed;
    return ++seen_ % steps_ == 0 ? Step::kDone : Step::kContinue;
  }

 private:
  std::string path_;
  int steps_;
  int seen_ = 0;
};

TEST_F(BenchServerTest, CountsOperationsAndLatencies) {
  LoadOptions o;
  o.endpoints = {{"127.0.0.1", server_->port()}};
  o.clients = 4;
  o.max_operations = 200;
  o.make_script = [](int) { return std::make_unique<FixedScript>("/ok", 1); };
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  // In-flight operations may finish after the budget is spent; none are
  // lost or double counted.
  EXPECT_GE(r->operations, 200);
  EXPECT_LE(r->operations, 200 + o.clients);
  EXPECT_EQ(r->latency.count(), r->operations);
  EXPECT_EQ(r->errors, 0);
  EXPECT_GT(r->latency.Percentile(50), 0);
  // Requests in flight when the budget ran out reach the server uncounted.
  EXPECT_GE(ok_.load(), r->operations);
  EXPECT_LE(ok_.load(), r->operations + o.clients);
}

TEST_F(BenchServerTest, MultiRequestOperationsCountOnce) {
  LoadOptions o;
  o.endpoints = {{"127.0.0.1", server_->port()}};
  o.clients = 2;
  o.max_operations = 50;
  o.make_script = [](int) { return std::make_unique<FixedScript>("/ok", 3); };
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_GE(r->operations, 50);
  // Three requests per operation reached the server.
  EXPECT_GE(ok_.load(), 3 * 50);
  EXPECT_LE(ok_.load(), 3 * (50 + o.clients));
}

TEST_F(BenchServerTest, ErrorsAreCountedWithSamples) {
  LoadOptions o;
  o.endpoints = {{"127.0.0.1", server_->port()}};
  o.clients = 1;
  o.duration = milliseconds(200);
  o.make_script = [](int) { return std::make_unique<FixedScript>("/fail", 1); };
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->operations, 0);
  EXPECT_GT(r->errors, 0);
  ASSERT_FALSE(r->sample_errors.empty());
  EXPECT_NE(r->sample_errors[0].find("HTTP 500"), std::string::npos);
}

// https:// endpoints: the load runs over TLS with the files' certificate, as
// `kpctl store bench --cacert --cert --key` does against a store with
// --client-cert-auth.
class BenchTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const WallTime now = Clock::Real()->WallNow();
    ca_ = *net::GenerateCa("bench-ca", now);
    const net::KeyPair server =
        *net::IssueCertificate(ca_,
                               {.common_name = "server",
                                .ip_addresses = {"127.0.0.1"},
                                .server_auth = true},
                               now);
    const net::KeyPair client = *net::IssueCertificate(
        ca_, {.common_name = "bench-user", .client_auth = true}, now);
    // mkdtemp, not a name from `this`: ctest runs the cases in parallel
    // processes, whose fixtures can sit at the same address.
    std::string tmpl = ::testing::TempDir() + "/bench_tls_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Write("ca.crt", ca_.cert_pem);
    Write("client.crt", client.cert_pem);
    Write("client.key", client.key_pem);
    net::HttpServerOptions o;
    o.tls = *net::TlsContext::NewServer(
        {.cert_pem = server.cert_pem,
         .key_pem = server.key_pem,
         .client_ca_pem = ca_.cert_pem,
         .client_auth = net::ClientAuth::kRequireAndVerify,
         .alpn = {"http/1.1"}});
    server_ = std::make_unique<net::HttpServer>(std::move(o));
    server_->Handle(
        "POST", "/ok",
        [this](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
          if (req.tls && req.tls->peer_verified &&
              req.tls->peer.common_name == "bench-user") {
            ++verified_;
          }
          r->Respond(200, {}, "ok");
        });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  // `ops` operations, or (0) whatever 300 ms of load gets.
  StatusOr<LoadResult> Run(std::shared_ptr<const ClientTls> tls,
                           const std::string& scheme, int64_t ops) {
    auto eps = ParseEndpoints(
        scheme + "://127.0.0.1:" + std::to_string(server_->port()), tls);
    if (!eps.ok()) return eps.status();
    LoadOptions o;
    o.endpoints = *eps;
    o.clients = 4;
    o.threads = 2;
    o.max_operations = ops;
    o.time_limit = seconds(20);
    o.duration = milliseconds(300);
    o.request_timeout = seconds(5);
    o.make_script = [](int) { return std::make_unique<FixedScript>("/ok", 1); };
    return RunLoad(o);
  }

  net::KeyPair ca_;
  std::string dir_;
  std::unique_ptr<net::HttpServer> server_;
  std::atomic<int64_t> verified_{0};
};

TEST_F(BenchTlsTest, HttpsEndpointsRunOverTlsWithTheClientCertificate) {
  auto tls = LoadClientTls(dir_ + "/ca.crt", dir_ + "/client.crt",
                           dir_ + "/client.key");
  ASSERT_TRUE(tls.ok()) << tls.status();
  auto r = Run(*tls, "https", 100);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->operations, 100);
  EXPECT_EQ(r->errors, 0) << (r->sample_errors.empty() ? ""
                                                       : r->sample_errors[0]);
  // Every request arrived over TLS with the verified client certificate.
  EXPECT_GE(verified_.load(), r->operations);
}

TEST_F(BenchTlsTest, WithoutTheClientCertificateTheServerRefuses) {
  auto tls = LoadClientTls(dir_ + "/ca.crt", "", "");
  ASSERT_TRUE(tls.ok()) << tls.status();
  auto r = Run(*tls, "https", 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->operations, 0);
  EXPECT_GT(r->errors, 0);
  EXPECT_EQ(verified_.load(), 0);
}

TEST_F(BenchTlsTest, PlainHttpToTheTlsPortFails) {
  auto r = Run(nullptr, "http", 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->operations, 0);
  EXPECT_GT(r->errors, 0);
}

TEST(EndpointsTest, MissingTlsFilesAreReported) {
  auto tls = LoadClientTls("/nonexistent/ca.crt", "", "");
  EXPECT_FALSE(tls.ok());
}

TEST(EndpointsTest, Parses) {
  auto e = ParseEndpoints("http://127.0.0.1:2379, http://localhost:12380");
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 2u);
  EXPECT_EQ((*e)[1].host, "localhost");
  EXPECT_EQ((*e)[1].port, 12380);
  EXPECT_FALSE(ParseEndpoints("").ok());
  EXPECT_EQ((*e)[0].tls, nullptr);
  auto https = ParseEndpoints("https://127.0.0.1:2379");
  ASSERT_TRUE(https.ok()) << https.status();
  EXPECT_NE((*https)[0].tls, nullptr);
}

}  // namespace
}  // namespace kplane::bench
