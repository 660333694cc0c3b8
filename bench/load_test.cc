#include "bench/load.h"

#include <gtest/gtest.h>

#include <atomic>

#include "net/http_server.h"

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

TEST(EndpointsTest, Parses) {
  auto e = ParseEndpoints("http://127.0.0.1:2379, http://localhost:12380");
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 2u);
  EXPECT_EQ((*e)[1].host, "localhost");
  EXPECT_EQ((*e)[1].port, 12380);
  EXPECT_FALSE(ParseEndpoints("").ok());
}

}  // namespace
}  // namespace kplane::bench
