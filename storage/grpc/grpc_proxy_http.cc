#include "storage/grpc/grpc_proxy_http.h"

#include <algorithm>
#include <utility>

#include "base/logging.h"
#include "base/prometheus_text.h"
#include "net/http_client.h"
#include "storage/grpc/grpc_proxy.h"
#include "storage/server/etcd_health.h"

namespace kplane::storage {

namespace {

constexpr std::string_view kProxyPrefixes[] = {"etcd_grpc_proxy_",
                                               "kplane_grpc_proxy_"};

// The metric a line of the text format is about: the sample's name, or the
// name a "# HELP" / "# TYPE" line describes; "" for other comments.
std::string_view MetricNameOf(std::string_view line) {
  if (line.starts_with('#')) {
    if (!line.starts_with("# HELP ") && !line.starts_with("# TYPE ")) return {};
    line.remove_prefix(7);
  }
  return line.substr(0, line.find_first_of("{ "));
}

bool IsProxyOwned(std::string_view name) {
  return std::any_of(
      std::begin(kProxyPrefixes), std::end(kProxyPrefixes),
      [name](std::string_view p) { return name.starts_with(p); });
}

const net::HttpHeaders& MetricsHeaders() {
  static const net::HttpHeaders* h =
      new net::HttpHeaders{{"Content-Type", metrics::kTextFormatContentType}};
  return *h;
}

}  // namespace

std::string ProxyOwnedMetricLines(std::string_view text, bool proxy_owned) {
  std::string out;
  out.reserve(proxy_owned ? 0 : text.size());
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const size_t len = eol == std::string_view::npos ? text.size() : eol + 1;
    const std::string_view line = text.substr(0, len);
    text.remove_prefix(len);
    if (IsProxyOwned(MetricNameOf(line)) == proxy_owned) {
      out.append(line);
      if (line.back() != '\n') out.push_back('\n');
    }
  }
  return out;
}

void RegisterGrpcProxyMetrics(GrpcProxy* proxy, metrics::Registry* registry) {
  using Stats = GrpcProxyStats;
  // etcd's proxy declares four of its five as gauges, "_total" names and
  // all.
  registry->NewCallbackGauge(
      "etcd_grpc_proxy_watchers_coalescing_total",
      "Client watchers sharing an upstream watch with another.", [proxy] {
        const Stats s = proxy->stats();
        return static_cast<double>(
            std::max<int64_t>(0, s.watchers - s.upstream_watches));
      });
  struct Figure {
    bool counter;
    const char* name;
    const char* help;
    int64_t Stats::*field;
  };
  static constexpr Figure kFigures[] = {
      // etcd declares this one a counter.
      {true, "etcd_grpc_proxy_events_coalescing_total",
       "Upstream watch responses sent to a client watcher beyond the first "
       "that shares the upstream watch.",
       &Stats::events_coalescing},
      {false, "etcd_grpc_proxy_cache_keys_total",
       "Serializable Range answers in the cache.", &Stats::range_cache_entries},
      {false, "etcd_grpc_proxy_cache_hits_total",
       "Serializable Ranges answered from the cache.",
       &Stats::range_cache_hits},
      {false, "etcd_grpc_proxy_cache_misses_total",
       "Serializable Ranges forwarded to a member.",
       &Stats::range_cache_misses},
      {false, "kplane_grpc_proxy_upstream_watches",
       "Watches open to the members now.", &Stats::upstream_watches},
      {false, "kplane_grpc_proxy_watchers", "Client watchers open now.",
       &Stats::watchers},
      {true, "kplane_grpc_proxy_slow_streams_ended_total",
       "Client Watch streams ended for holding more unsent responses than "
       "the proxy queues.",
       &Stats::slow_streams_ended},
      {true, "kplane_grpc_proxy_forwarded_calls_total",
       "Calls forwarded to the members.", &Stats::forwarded_calls},
      {true, "kplane_grpc_proxy_watch_creates_refused_total",
       "Watch creates refused because their client Watch stream already "
       "held --max-watchers-per-stream watchers.",
       &Stats::watch_creates_refused},
  };
  for (const Figure& f : kFigures) {
    auto read = [proxy, field = f.field] {
      return static_cast<double>(proxy->stats().*field);
    };
    if (f.counter) {
      registry->NewCallbackCounter(f.name, f.help, read);
    } else {
      registry->NewCallbackGauge(f.name, f.help, read);
    }
  }
}

GrpcProxyHttp::GrpcProxyHttp(GrpcProxy* proxy, metrics::Registry* own,
                             GrpcProxyHttpOptions options)
    : proxy_(proxy),
      own_(own),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()) {}

void GrpcProxyHttp::AddRoutes(net::HttpServer* server) {
  // /health and /metrics may wait on the members: on the worker pool.
  server->Handle(
      "", "/health",
      [this](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        ServeHealth(req, *r);
      });
  server->Handle(
      "GET", "/metrics",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        ServeMetrics(*r);
      });
  server->Handle(
      "GET", "/proxy/metrics",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->Respond(200, MetricsHeaders(), own_->Render());
      },
      {.run_on_io_thread = true});
}

void GrpcProxyHttp::ServeHealth(const net::HttpRequest& req,
                                net::Responder& r) {
  if (RespondEtcdHealthToOtherMethods(req, r)) return;
  const Status h = proxy_->CheckHealth();
  uint64_t more = 0;
  if (!h.ok() && health_warnings_.Allow(clock_->Now(), &more)) {
    LOG(WARNING) << "/health false: " << h
                 << LogThrottle::LeftOut(more, "failed checks");
  }
  RespondEtcdHealth(r, h.ok(), h.ok() ? std::string() : h.ToString());
}

void GrpcProxyHttp::ServeMetrics(net::Responder& r) {
  const std::vector<Endpoint>& members = options_.members;
  const TimePoint deadline = clock_->Now() + options_.metrics_deadline;
  net::HttpClientOptions ho;
  ho.connect_timeout = std::min(options_.member_timeout, Duration(seconds(1)));
  ho.read_timeout = ho.write_timeout = options_.member_timeout;
  ho.max_response_body_bytes = options_.max_member_metrics_bytes;
  ho.clock = clock_;
  std::string failures;
  const size_t first = metrics_member_.load();
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0 && clock_->Now() >= deadline) {
      failures += "; no time left for the others";
      break;
    }
    const size_t k = (first + i) % members.size();
    const Endpoint& m = members[k];
    ho.tls = m.tls ? options_.member_tls : nullptr;
    StatusOr<std::unique_ptr<net::HttpClient>> c =
        net::HttpClient::ForUrl(m.url, ho);
    StatusOr<net::HttpResponse> got = c.status();
    if (c.ok()) got = (*c)->Request("GET", "/metrics");
    if (got.ok() && got->status == 200) {
      metrics_member_.store(k);
      std::string body = ProxyOwnedMetricLines(got->body, false);
      body += ProxyOwnedMetricLines(own_->Render(), true);
      r.Respond(200, MetricsHeaders(), std::move(body));
      return;
    }
    failures += (failures.empty() ? "" : "; ") + m.url + ": " +
                (got.ok() ? "HTTP " + std::to_string(got->status)
                          : got.status().ToString());
  }
  uint64_t more = 0;
  if (metrics_warnings_.Allow(clock_->Now(), &more)) {
    LOG(WARNING) << "/metrics: no member answered: " << failures
                 << LogThrottle::LeftOut(more, "failed scrapes");
  }
  // Go's http.Error, as etcd's proxy answers.
  r.Respond(500,
            {{"Content-Type", "text/plain; charset=utf-8"},
             {"X-Content-Type-Options", "nosniff"}},
            "Internal server error\n");
}

}  // namespace kplane::storage
