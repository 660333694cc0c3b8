#include "base/metrics.h"

#include <gtest/gtest.h>

namespace kplane::metrics {
namespace {

TEST(MetricsTest, RendersPrometheusText) {
  Registry r;
  auto* c = r.NewCounter("req_total", "Requests.", {"verb", "code"});
  c->With({"GET", "200"})->Inc();
  c->With({"GET", "200"})->Inc(2);
  c->With({"PUT", "409"})->Inc();
  r.NewGauge("up", "Up.")->With({})->Set(1);
  auto* h = r.NewHistogram("lat_seconds", "Latency.", {}, {0.1, 1});
  h->With({})->Observe(0.05);
  h->With({})->Observe(0.5);
  h->With({})->Observe(5);
  r.NewCallbackGauge("answer", "Computed.", [] { return 42; });
  std::string text = r.Render();
  EXPECT_NE(text.find("# TYPE req_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("req_total{verb=\"GET\",code=\"200\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("req_total{verb=\"PUT\",code=\"409\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("up 1\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("lat_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(text.find("answer 42\n"), std::string::npos);
  // Sorted by family name.
  EXPECT_LT(text.find("answer"), text.find("lat_seconds"));
}

TEST(MetricsTest, SameNameReturnsSameFamily) {
  Registry r;
  EXPECT_EQ(r.NewCounter("x", "a"), r.NewCounter("x", "b"));
}

}  // namespace
}  // namespace kplane::metrics
