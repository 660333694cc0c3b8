#include "bench/store_bench_command.h"

#include <cstdio>
#include <iostream>

#include "base/flags.h"
#include "base/strings.h"
#include "bench/store_workloads.h"

namespace kplane::bench {

int RunStoreBenchCommand(const std::vector<std::string>& args) {
  FlagSet flags("kpctl store bench",
                "Closed-loop load on an etcd v3 JSON API (kplane store or "
                "etcd): put, range or cas, at several client counts.");
  std::string endpoints = "http://127.0.0.1:2379";
  StoreWorkload w;
  std::vector<std::string> clients = {"1"};
  Duration duration = seconds(10);
  Duration warmup = seconds(1);
  int64_t fill = 0;
  int threads = 1;
  std::vector<std::string> server_pids;
  std::string label;
  int64_t key_space = w.key_space;
  flags.String("endpoints", &endpoints, "Comma-separated client URLs.");
  flags.String("workload", &w.kind, "put, range or cas.");
  flags.StringList("clients", &clients, "Client counts to run, e.g. 1,16,64.");
  flags.Duration("duration", &duration, "Measured time per run.");
  flags.Duration("warmup", &warmup, "Unmeasured time before each run.");
  flags.Int("val-size", &w.value_size, "Value size in bytes.");
  flags.Int64("key-space", &key_space, "Keys drawn from [0, N).");
  flags.String("prefix", &w.prefix, "Key prefix.");
  flags.Bool("range-prefix", &w.range_prefix,
             "range: read every key under --prefix instead of one key.");
  flags.Bool("serializable", &w.serializable, "range: serializable reads.");
  flags.Int64("fill", &fill,
              "First write keys 0..N-1 under --prefix (range fixtures).");
  flags.Int("threads", &threads, "Client event-loop threads.");
  flags.StringList("server-pids", &server_pids,
                   "Server processes whose CPU time to report.");
  flags.String("label", &label, "A label for the RESULT lines.");
  Status s = flags.Parse(args);
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!s.ok()) {
    std::cerr << "kpctl store bench: " << s.message() << "\n";
    return 2;
  }
  w.key_space = key_space;
  auto eps = ParseEndpoints(endpoints);
  if (!eps.ok()) {
    std::cerr << "kpctl store bench: --endpoints: " << eps.status().message()
              << "\n";
    return 2;
  }
  if (w.kind != "put" && w.kind != "range" && w.kind != "cas") {
    std::cerr << "kpctl store bench: --workload must be put, range or cas\n";
    return 2;
  }
  if (fill > 0) {
    Status f = FillStore(*eps, w.prefix, fill, w.value_size, 16);
    if (!f.ok()) {
      std::cerr << "kpctl store bench: " << f.message() << "\n";
      return 1;
    }
  }
  std::printf("%-8s %10s %9s %9s %9s %9s %9s %7s %8s %8s\n", "clients",
              "ops/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
              "errors", "cli cpu", "srv cpu");
  for (const std::string& c : clients) {
    auto n = ParseInt64(c);
    if (!n || *n < 1) {
      std::cerr << "kpctl store bench: bad client count " << c << "\n";
      return 2;
    }
    std::vector<double> cpu_before;
    for (const auto& p : server_pids) {
      cpu_before.push_back(
          ProcessCpuSeconds(static_cast<int>(ParseInt64(p).value_or(0)))
              .value_or(0));
    }
    LoadOptions o;
    o.endpoints = *eps;
    o.clients = static_cast<int>(*n);
    o.threads = threads;
    o.duration = duration;
    o.warmup = warmup;
    o.make_script = [&](int i) { return NewStoreScript(w, i); };
    auto r = RunLoad(o);
    if (!r.ok()) {
      std::cerr << "kpctl store bench: " << r.status().message() << "\n";
      return 1;
    }
    double srv_cpu = 0;
    for (size_t i = 0; i < server_pids.size(); ++i) {
      srv_cpu +=
          ProcessCpuSeconds(static_cast<int>(ParseInt64(server_pids[i]).value_or(0)))
              .value_or(0) -
          cpu_before[i];
    }
    const LatencyHistogram& h = r->latency;
    auto ms = [](int64_t ns) { return ns / 1e6; };
    std::printf("%-8lld %10.0f %9.3f %9.3f %9.3f %9.3f %9.3f %7lld %8.2f %8.2f\n",
                static_cast<long long>(*n), r->ops_per_second(),
                ms(h.Percentile(50)), ms(h.Percentile(90)),
                ms(h.Percentile(99)), ms(h.Percentile(99.9)), ms(h.max()),
                static_cast<long long>(r->errors), r->client_cpu_seconds,
                srv_cpu);
    std::printf(
        "RESULT label=%s workload=%s clients=%lld ops_per_s=%.1f p50_ms=%.3f "
        "p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f errors=%lld "
        "client_cpu_s=%.2f server_cpu_s=%.2f seconds=%.2f\n",
        label.empty() ? "-" : label.c_str(), w.kind.c_str(),
        static_cast<long long>(*n), r->ops_per_second(), ms(h.Percentile(50)),
        ms(h.Percentile(90)), ms(h.Percentile(99)), ms(h.Percentile(99.9)),
        ms(h.max()), static_cast<long long>(r->errors), r->client_cpu_seconds,
        srv_cpu, r->seconds);
    for (const auto& e : r->sample_errors) {
      std::fprintf(stderr, "  error sample: %s\n", e.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace kplane::bench
