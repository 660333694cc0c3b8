#include "bench/store_bench_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "base/flags.h"
#include "base/strings.h"
#include "bench/failover.h"
#include "bench/grpc_store_bench.h"
#include "bench/store_workloads.h"
#include "bench/watch_bench.h"

namespace kplane::bench {

int RunStoreBenchCommand(const std::vector<std::string>& args) {
  FlagSet flags("kpctl store bench",
                "Closed-loop load on etcd's v3 API (kplane store or etcd), "
                "over JSON or gRPC (--protocol): put, range or cas at "
                "several client counts; watch fan-out; leader failover "
                "(kills the leader's process; JSON only).");
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
  flags.String("endpoints", &endpoints,
               "Comma-separated client URLs (https:// ones over TLS).");
  std::string cacert, cert, key;
  flags.String("cacert", &cacert,
               "https endpoints: the CA file that signed the servers' "
               "certificates (etcdctl's flag; empty: the system's CAs).");
  flags.String("cert", &cert, "https endpoints: the client certificate file.");
  flags.String("key", &key, "https endpoints: the client key file.");
  std::string protocol = "json";
  flags.String("protocol", &protocol,
               "json (etcd's v3 JSON API, HTTP/1.1) or grpc (etcd's v3 gRPC "
               "API: KV and Watch).");
  flags.String("workload", &w.kind,
               "put, range, cas, watch or failover (`kpctl store bench "
               "<workload>` sets it).");
  flags.StringList("clients", &clients, "Client counts to run, e.g. 1,16,64.");
  flags.Duration("duration", &duration, "Measured time per run.");
  flags.Duration("warmup", &warmup, "Unmeasured time before each run.");
  flags.Int("val-size", &w.value_size, "Value size in bytes.");
  flags.Int64("key-space", &key_space, "Keys drawn from [0, N).");
  flags.String("prefix", &w.prefix, "Key prefix.");
  flags.String("key-prefix", &w.prefix, "Key prefix (same as --prefix).");
  int64_t total = 0;
  flags.Int64("total", &total,
              "Stop each run after N operations instead of --duration.");
  int conns = 0;
  flags.Int("conns", &conns,
            "Connections. json: must equal each client count (0: one per "
            "client; HTTP/1.1 carries one request at a time, so clients "
            "sharing a connection would only queue behind each other). "
            "grpc: channels the clients (watch: the streams) share, each "
            "its own TCP connection (0: one per 10 clients or streams).");
  flags.Bool("range-prefix", &w.range_prefix,
             "range: read every key under --prefix instead of one key.");
  flags.Bool("serializable", &w.serializable, "range: serializable reads.");
  flags.Int64("fill", &fill,
              "First write keys 0..N-1 under --prefix (range fixtures).");
  flags.Int("threads", &threads,
            "Client event-loop (grpc: completion-queue) threads.");
  flags.StringList("server-pids", &server_pids,
                   "Server processes whose CPU time to report.");
  flags.String("label", &label, "A label for the RESULT lines.");
  WatchBenchOptions wo;
  flags.Int("watchers", &wo.watchers, "watch: watchers on the prefix.");
  flags.Int("streams", &wo.streams,
            "watch: streams (connections) carrying them.");
  flags.Int("puts", &wo.puts, "watch: puts to make under the prefix.");
  flags.Int("writers", &wo.writers,
            "watch: concurrent writers sharing the puts (and --put-rate).");
  std::string put_rate = "100";
  flags.String("put-rate", &put_rate, "watch: puts per second (0: unpaced).");
  Duration kill_after = seconds(3);
  Duration op_timeout = milliseconds(100);
  flags.Duration("kill-after", &kill_after,
                 "failover: when to kill the leader.");
  flags.Duration("op-timeout", &op_timeout, "failover: per-put timeout.");
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
  if (protocol != "json" && protocol != "grpc") {
    std::cerr << "kpctl store bench: --protocol must be json or grpc\n";
    return 2;
  }
  const bool grpc = protocol == "grpc";
  if (conns < 0) {
    std::cerr << "kpctl store bench: --conns must be >= 0\n";
    return 2;
  }
  if (total > 0 && !flags.IsSet("warmup")) warmup = Duration(0);
  std::shared_ptr<const ClientTls> tls;
  if (!cacert.empty() || !cert.empty() || !key.empty()) {
    auto t = LoadClientTls(cacert, cert, key);
    if (!t.ok()) {
      std::cerr << "kpctl store bench: tls: " << t.status().message() << "\n";
      return 2;
    }
    tls = *t;
  }
  auto eps = ParseEndpoints(endpoints, tls);
  if (!eps.ok()) {
    std::cerr << "kpctl store bench: --endpoints: " << eps.status().message()
              << "\n";
    return 2;
  }
  if (w.kind == "watch") {
    wo.endpoints = *eps;
    wo.value_size = w.value_size;
    wo.puts_per_second = ParseDouble(put_rate).value_or(100);
    if (flags.IsSet("prefix") || flags.IsSet("key-prefix"))
      wo.prefix = w.prefix;
    std::vector<double> cpu_before;
    for (const auto& p : server_pids) {
      int pid = static_cast<int>(ParseInt64(p).value_or(0));
      wo.server_pids.push_back(pid);
      cpu_before.push_back(ProcessCpuSeconds(pid).value_or(0));
    }
    // (The channels are never more than the streams.)
    int watch_conns =
        std::min(wo.streams, conns > 0 ? conns : DefaultGrpcConns(wo.streams));
    auto r = grpc ? RunGrpcWatchBench(wo, watch_conns) : RunWatchBench(wo);
    double srv_cpu = 0;
    for (size_t i = 0; i < wo.server_pids.size(); ++i) {
      srv_cpu +=
          ProcessCpuSeconds(wo.server_pids[i]).value_or(0) - cpu_before[i];
    }
    if (!r.ok()) {
      std::cerr << "kpctl store bench: " << r.status().message() << "\n";
      return 1;
    }
    auto ms = [](int64_t ns) { return ns / 1e6; };
    std::printf(
        "watchers %d over %d streams, %d puts by %d writer(s) at %s/s: "
        "delivered %lld of %lld "
        "events, %.0f events/s, writer %.2f s\n"
        "  put-send -> event: %s\n  put-ack  -> event: %s (%lld events before "
        "the ack)\n  put latency: %s\n  server RSS growth from the watchers: "
        "%.1f MiB (%.0f bytes/watcher), server CPU %.2f s\n",
        wo.watchers, wo.streams, wo.puts, wo.writers, put_rate.c_str(),
        static_cast<long long>(r->delivered_events),
        static_cast<long long>(r->expected_events), r->events_per_second,
        r->writer_seconds, r->from_send.Summary().c_str(),
        r->from_ack.Summary().c_str(), static_cast<long long>(r->before_ack),
        r->put_latency.Summary().c_str(),
        r->server_rss_growth_bytes / 1048576.0,
        static_cast<double>(r->server_rss_growth_bytes) / wo.watchers, srv_cpu);
    std::printf(
        "RESULT label=%s protocol=%s workload=watch watchers=%d streams=%d "
        "conns=%d puts=%d "
        "writers=%d put_errors=%d delivered=%lld expected=%lld "
        "events_per_s=%.0f "
        "send_p50_ms=%.3f "
        "send_p99_ms=%.3f ack_p50_ms=%.3f ack_p99_ms=%.3f ack_max_ms=%.3f "
        "before_ack=%lld writer_s=%.2f client_cpu_s=%.2f server_cpu_s=%.2f "
        "rss_per_watcher_b=%.0f\n",
        label.empty() ? "-" : label.c_str(), protocol.c_str(), wo.watchers,
        wo.streams, grpc ? watch_conns : wo.streams, wo.puts, wo.writers,
        r->put_errors, static_cast<long long>(r->delivered_events),
        static_cast<long long>(r->expected_events), r->events_per_second,
        ms(r->from_send.Percentile(50)), ms(r->from_send.Percentile(99)),
        ms(r->from_ack.Percentile(50)), ms(r->from_ack.Percentile(99)),
        ms(r->from_ack.max()), static_cast<long long>(r->before_ack),
        r->writer_seconds, r->client_cpu_seconds, srv_cpu,
        static_cast<double>(r->server_rss_growth_bytes) / wo.watchers);
    if (r->put_errors > 0) {
      std::printf("  %d put(s) failed, e.g.: %s\n", r->put_errors,
                  r->last_put_error.c_str());
    }
    return r->delivered_events == r->expected_events ? 0 : 1;
  }
  if (w.kind == "failover") {
    if (grpc) {
      std::cerr << "kpctl store bench: failover runs over JSON only\n";
      return 2;
    }
    FailoverOptions fo;
    fo.endpoints = *eps;
    for (const auto& p : server_pids) {
      fo.pids.push_back(static_cast<int>(ParseInt64(p).value_or(0)));
    }
    fo.kill_after = kill_after;
    fo.op_timeout = op_timeout;
    auto r = RunFailover(fo);
    if (!r.ok()) {
      std::cerr << "kpctl store bench: " << r.status().message() << "\n";
      return 1;
    }
    std::printf(
        "killed leader pid %d (endpoint %d): first write after the kill "
        "in %.0f ms, longest gap %.0f ms, %lld failed puts\n",
        r->killed_pid, r->killed_endpoint, r->kill_to_first_write_ms,
        r->longest_gap_ms, static_cast<long long>(r->failed_puts));
    std::printf(
        "RESULT label=%s workload=failover kill_to_write_ms=%.1f "
        "longest_gap_ms=%.1f failed_puts=%lld\n",
        label.empty() ? "-" : label.c_str(), r->kill_to_first_write_ms,
        r->longest_gap_ms, static_cast<long long>(r->failed_puts));
    return 0;
  }
  if (w.kind != "put" && w.kind != "range" && w.kind != "cas") {
    std::cerr << "kpctl store bench: --workload must be put, range, cas, "
                 "watch or failover\n";
    return 2;
  }
  if (fill > 0) {
    Status f = grpc ? GrpcFillStore(*eps, w.prefix, fill, w.value_size, 16, 2)
                    : FillStore(*eps, w.prefix, fill, w.value_size, 16);
    if (!f.ok()) {
      std::cerr << "kpctl store bench: " << f.message() << "\n";
      return 1;
    }
  }
  std::printf("%-8s %10s %9s %9s %9s %9s %9s %7s %8s %8s\n", "clients", "ops/s",
              "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "errors",
              "cli cpu", "srv cpu");
  for (const std::string& c : clients) {
    auto n = ParseInt64(c);
    if (!n || *n < 1) {
      std::cerr << "kpctl store bench: bad client count " << c << "\n";
      return 2;
    }
    if (!grpc && conns != 0 && conns != *n) {
      std::cerr << "kpctl store bench: --conns must equal --clients (one "
                   "HTTP/1.1 connection per client)\n";
      return 2;
    }
    std::vector<double> cpu_before;
    for (const auto& p : server_pids) {
      cpu_before.push_back(
          ProcessCpuSeconds(static_cast<int>(ParseInt64(p).value_or(0)))
              .value_or(0));
    }
    const int n_conns = !grpc       ? static_cast<int>(*n)
                        : conns > 0 ? std::min(conns, static_cast<int>(*n))
                                    : DefaultGrpcConns(static_cast<int>(*n));
    StatusOr<LoadResult> r = InternalError("not run");
    if (grpc) {
      GrpcLoadOptions o;
      o.endpoints = *eps;
      o.workload = w;
      o.clients = static_cast<int>(*n);
      o.conns = n_conns;
      o.threads = threads;
      o.duration = duration;
      o.max_operations = total;
      o.warmup = warmup;
      r = RunGrpcLoad(o);
    } else {
      LoadOptions o;
      o.endpoints = *eps;
      o.clients = static_cast<int>(*n);
      o.threads = threads;
      o.duration = duration;
      o.max_operations = total;
      o.warmup = warmup;
      o.make_script = [&](int i) { return NewStoreScript(w, i); };
      r = RunLoad(o);
    }
    if (!r.ok()) {
      std::cerr << "kpctl store bench: " << r.status().message() << "\n";
      return 1;
    }
    double srv_cpu = 0;
    for (size_t i = 0; i < server_pids.size(); ++i) {
      srv_cpu += ProcessCpuSeconds(
                     static_cast<int>(ParseInt64(server_pids[i]).value_or(0)))
                     .value_or(0) -
                 cpu_before[i];
    }
    const LatencyHistogram& h = r->latency;
    auto ms = [](int64_t ns) { return ns / 1e6; };
    std::printf(
        "%-8lld %10.0f %9.3f %9.3f %9.3f %9.3f %9.3f %7lld %8.2f %8.2f\n",
        static_cast<long long>(*n), r->ops_per_second(), ms(h.Percentile(50)),
        ms(h.Percentile(90)), ms(h.Percentile(99)), ms(h.Percentile(99.9)),
        ms(h.max()), static_cast<long long>(r->errors), r->client_cpu_seconds,
        srv_cpu);
    std::printf(
        "RESULT label=%s protocol=%s workload=%s clients=%lld conns=%d "
        "operations=%lld ops_per_s=%.1f p50_ms=%.3f "
        "p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f errors=%lld "
        "client_cpu_s=%.2f server_cpu_s=%.2f seconds=%.2f\n",
        label.empty() ? "-" : label.c_str(), protocol.c_str(), w.kind.c_str(),
        static_cast<long long>(*n), n_conns,
        static_cast<long long>(r->operations), r->ops_per_second(),
        ms(h.Percentile(50)), ms(h.Percentile(90)), ms(h.Percentile(99)),
        ms(h.Percentile(99.9)), ms(h.max()), static_cast<long long>(r->errors),
        r->client_cpu_seconds, srv_cpu, r->seconds);
    for (const auto& e : r->sample_errors) {
      std::fprintf(stderr, "  error sample: %s\n", e.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace kplane::bench
