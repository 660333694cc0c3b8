#include "bench/api_bench_command.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/flags.h"
#include "base/strings.h"
#include "bench/api_watch_bench.h"
#include "bench/api_workloads.h"
#include "bench/store_bench_command.h"

namespace kplane::bench {
namespace {

// CPU and memory of the server processes over one run.
class ServerSampler {
 public:
  explicit ServerSampler(std::vector<int> pids) : pids_(std::move(pids)) {}
  // Starts a window: CPU baseline, and the kernel's peak-RSS mark reset
  // (writing 5 to /proc/<pid>/clear_refs) so PeakRssBytes covers the run.
  void Begin() {
    cpu_before_.clear();
    for (int pid : pids_) {
      cpu_before_.push_back(ProcessCpuSeconds(pid).value_or(0));
      std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5";
    }
  }
  double CpuSeconds() const {
    double s = 0;
    for (size_t i = 0; i < pids_.size(); ++i) {
      s += ProcessCpuSeconds(pids_[i]).value_or(0) - cpu_before_[i];
    }
    return s;
  }
  int64_t RssBytes() const {
    int64_t s = 0;
    for (int pid : pids_) s += ProcessRssBytes(pid).value_or(0);
    return s;
  }
  // Sum of VmHWM (peak RSS since Begin()).
  int64_t PeakRssBytes() const {
    int64_t s = 0;
    for (int pid : pids_) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/status");
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
          std::istringstream v(line.substr(6));
          int64_t kb = 0;
          v >> kb;
          s += kb * 1024;
        }
      }
    }
    return s;
  }

 private:
  std::vector<int> pids_;
  std::vector<double> cpu_before_;
};

double Ms(int64_t ns) { return ns / 1e6; }
double MiB(int64_t b) { return b / 1048576.0; }

int RunWatch(const Endpoint& server, const ApiWatchBenchOptions& base,
             const std::vector<int>& pids, const std::string& label) {
  ApiWatchBenchOptions wo = base;
  wo.server = server;
  wo.server_pids = pids;
  ServerSampler sampler(pids);
  sampler.Begin();
  auto r = RunApiWatchBench(wo);
  const double srv_cpu = sampler.CpuSeconds();
  if (!r.ok()) {
    std::cerr << "kpctl bench api: " << r.status().message() << "\n";
    return 1;
  }
  std::printf(
      "%d watchers, %d creates at %g/s: delivered %lld of %lld events, "
      "%.0f events/s; watches opened in %.2f s\n"
      "  create-send -> event: %s\n  create-ack  -> event: %s (%lld events "
      "before the ack)\n  create latency: %s\n  server RSS growth from the "
      "watches: %.1f MiB (%.0f bytes/watcher), server CPU %.2f s\n",
      wo.watchers, wo.creates, wo.creates_per_second,
      static_cast<long long>(r->delivered_events),
      static_cast<long long>(r->expected_events), r->events_per_second,
      r->setup_seconds, r->from_send.Summary().c_str(),
      r->from_ack.Summary().c_str(), static_cast<long long>(r->before_ack),
      r->create_latency.Summary().c_str(), MiB(r->server_rss_growth_bytes),
      static_cast<double>(r->server_rss_growth_bytes) / wo.watchers, srv_cpu);
  std::printf(
      "RESULT label=%s workload=watch watchers=%d creates=%d rate=%g "
      "delivered=%lld expected=%lld events_per_s=%.0f send_p50_ms=%.3f "
      "send_p99_ms=%.3f send_max_ms=%.3f ack_p50_ms=%.3f ack_p99_ms=%.3f "
      "ack_max_ms=%.3f create_p99_ms=%.3f before_ack=%lld setup_s=%.2f "
      "client_cpu_s=%.2f server_cpu_s=%.2f rss_per_watcher_b=%.0f "
      "server_rss_mb=%.1f\n",
      label.empty() ? "-" : label.c_str(), wo.watchers, wo.creates,
      wo.creates_per_second, static_cast<long long>(r->delivered_events),
      static_cast<long long>(r->expected_events), r->events_per_second,
      Ms(r->from_send.Percentile(50)), Ms(r->from_send.Percentile(99)),
      Ms(r->from_send.max()), Ms(r->from_ack.Percentile(50)),
      Ms(r->from_ack.Percentile(99)), Ms(r->from_ack.max()),
      Ms(r->create_latency.Percentile(99)),
      static_cast<long long>(r->before_ack), r->setup_seconds,
      r->client_cpu_seconds, srv_cpu,
      static_cast<double>(r->server_rss_growth_bytes) / wo.watchers,
      MiB(sampler.RssBytes()));
  return r->delivered_events == r->expected_events ? 0 : 1;
}

}  // namespace

int RunApiBenchCommand(const std::vector<std::string>& in_args) {
  std::vector<std::string> args = in_args;
  ApiWorkload w;
  if (!args.empty() && args[0].rfind("-", 0) != 0) {
    w.kind = args[0];
    args.erase(args.begin());
  }
  FlagSet flags(
      "kpctl bench api <create|get|update|list|delete|watch>",
      "Closed-loop load on a Kubernetes apiserver: pods in one namespace "
      "(bench/api_workloads.h), at several client counts; or watch fan-out "
      "(bench/api_watch_bench.h).");
  std::string server = "http://127.0.0.1:6443";
  std::vector<std::string> clients = {"1"};
  Duration duration = seconds(10);
  Duration warmup = seconds(1);
  Duration time_limit = minutes(10);
  int64_t total = 0;
  int64_t fill = 0;
  int fill_clients = 64;
  int threads = 1;
  std::vector<std::string> server_pids;
  std::string label;
  ApiWatchBenchOptions wo;
  std::string create_rate = "10";
  flags.String("server", &server, "The apiserver's URL (https:// over TLS).");
  std::string ca_file, cert_file, key_file;
  flags.String("certificate-authority", &ca_file,
               "https: the CA file that signed the apiserver's certificate "
               "(kubectl's flag; empty: the system's CAs).");
  flags.String("client-certificate", &cert_file,
               "https: the client certificate file (its CN is the user).");
  flags.String("client-key", &key_file, "https: the client key file.");
  flags.StringList("clients", &clients, "Client counts to run, e.g. 1,16,64.");
  flags.Duration("duration", &duration, "Measured time per run.");
  flags.Duration("warmup", &warmup,
                 "Unmeasured time before each run (0 with --total unless "
                 "set).");
  flags.Int64("total", &total,
              "Stop each run after N operations instead of --duration "
              "(delete: default every pod in the namespace).");
  flags.Duration("time-limit", &time_limit,
                 "With --total: give up after this long.");
  flags.String("namespace", &w.ns, "Namespace of the pods.");
  flags.String("fixture", &w.fixture,
               "get/update/--fill: fixture pods are named <fixture>-%08d.");
  flags.Int64("pods", &w.pods, "get/update: fixture pods 0..N-1 are used.");
  flags.Int64("fill", &fill,
              "First create fixture pods 0..N-1 (existing ones are kept) and "
              "print how long it took.");
  flags.Int("fill-clients", &fill_clients, "Concurrent creates for --fill.");
  flags.String("list-query", &w.list_query,
               "list: query string, e.g. resourceVersion=0 (watch cache), "
               "limit=500 (the store, paged), resourceVersionMatch=Exact&"
               "resourceVersion=N; empty: a consistent read.");
  flags.Int("threads", &threads, "Client event-loop threads.");
  flags.StringList("server-pids", &server_pids,
                   "Server processes whose CPU time and memory to report.");
  flags.String("label", &label, "A label for the RESULT lines.");
  flags.Int("watchers", &wo.watchers, "watch: watches (one connection each).");
  flags.Int("creates", &wo.creates, "watch: pods to create while watching.");
  flags.String("create-rate", &create_rate,
               "watch: creates per second (0: unpaced).");
  Status s = flags.Parse(args);
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!s.ok()) {
    std::cerr << "kpctl bench api: " << s.message() << "\n";
    return 2;
  }
  std::shared_ptr<const ClientTls> tls;
  if (!ca_file.empty() || !cert_file.empty() || !key_file.empty()) {
    auto t = LoadClientTls(ca_file, cert_file, key_file);
    if (!t.ok()) {
      std::cerr << "kpctl bench api: tls: " << t.status().message() << "\n";
      return 2;
    }
    tls = *t;
  }
  auto eps = ParseEndpoints(server, tls);
  if (!eps.ok()) {
    std::cerr << "kpctl bench api: --server: " << eps.status().message()
              << "\n";
    return 2;
  }
  const Endpoint ep = (*eps)[0];
  std::vector<int> pids;
  for (const auto& p : server_pids) {
    auto v = ParseInt64(p);
    if (!v) {
      std::cerr << "kpctl bench api: bad pid " << p << "\n";
      return 2;
    }
    pids.push_back(static_cast<int>(*v));
  }
  // Names unique to this process and run.
  std::string run_tag = "r";
  run_tag += std::to_string(std::time(nullptr) % 100000);
  run_tag += "-";
  run_tag += std::to_string(getpid() % 10000);
  if (fill > 0) {
    auto t = FillPods(ep, w.ns, w.fixture, fill, fill_clients);
    if (!t.ok()) {
      std::cerr << "kpctl bench api: " << t.status().message() << "\n";
      return 1;
    }
    std::printf("filled %lld pods in %s in %.1f s (%.0f pods/s)\n",
                static_cast<long long>(fill), w.ns.c_str(), *t, fill / *t);
    std::printf("RESULT label=%s workload=fill pods=%lld seconds=%.2f\n",
                label.empty() ? "-" : label.c_str(),
                static_cast<long long>(fill), *t);
    std::fflush(stdout);
  }
  if (w.kind == "watch") {
    wo.ns = w.ns;
    wo.run = "watch-" + run_tag;
    wo.creates_per_second = ParseDouble(create_rate).value_or(10);
    return RunWatch(ep, wo, pids, label);
  }
  if (w.kind != "create" && w.kind != "get" && w.kind != "update" &&
      w.kind != "list" && w.kind != "delete") {
    std::cerr << "kpctl bench api: the workload must be create, get, update, "
                 "list, delete or watch\n";
    return 2;
  }
  if (Status st = EnsureNamespace(ep, w.ns); !st.ok()) {
    std::cerr << "kpctl bench api: " << st.message() << "\n";
    return 1;
  }
  if (total > 0 && !flags.IsSet("warmup")) warmup = Duration(0);
  std::printf("%-8s %10s %9s %9s %9s %9s %9s %7s %8s %8s %9s\n", "clients",
              "ops/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
              "errors", "cli cpu", "srv cpu", "srv MiB");
  for (const std::string& c : clients) {
    auto n = ParseInt64(c);
    if (!n || *n < 1) {
      std::cerr << "kpctl bench api: bad client count " << c << "\n";
      return 2;
    }
    ApiWorkload run = w;
    run.clients = static_cast<int>(*n);
    run.run = "bench-" + run_tag + "-" + c;
    run.list_stats = std::make_shared<ApiListStats>();
    int64_t run_total = total;
    if (w.kind == "delete") {
      auto names = ListPodNames(ep, w.ns);
      if (!names.ok()) {
        std::cerr << "kpctl bench api: " << names.status().message() << "\n";
        return 1;
      }
      if (run_total <= 0 || run_total > static_cast<int64_t>(names->size())) {
        run_total = static_cast<int64_t>(names->size());
      }
      if (run_total == 0) {
        std::cerr << "kpctl bench api: no pods to delete in " << w.ns << "\n";
        return 1;
      }
      run.delete_names =
          std::make_shared<const std::vector<std::string>>(std::move(*names));
      run.delete_next = std::make_shared<std::atomic<int64_t>>(0);
    }
    LoadOptions o;
    o.endpoints = {ep};
    o.clients = static_cast<int>(*n);
    o.threads = threads;
    o.duration = duration;
    o.max_operations = run_total;
    o.time_limit = time_limit;
    o.warmup = run_total > 0 ? Duration(0) : warmup;
    o.request_timeout = seconds(120);
    o.make_script = [&run](int i) { return NewApiScript(run, i); };
    ServerSampler sampler(pids);
    sampler.Begin();
    auto r = RunLoad(o);
    if (!r.ok()) {
      std::cerr << "kpctl bench api: " << r.status().message() << "\n";
      return 1;
    }
    const double srv_cpu = sampler.CpuSeconds();
    const LatencyHistogram& h = r->latency;
    std::printf(
        "%-8lld %10.1f %9.3f %9.3f %9.3f %9.3f %9.3f %7lld %8.2f %8.2f "
        "%9.1f\n",
        static_cast<long long>(*n), r->ops_per_second(), Ms(h.Percentile(50)),
        Ms(h.Percentile(90)), Ms(h.Percentile(99)), Ms(h.Percentile(99.9)),
        Ms(h.max()), static_cast<long long>(r->errors), r->client_cpu_seconds,
        srv_cpu, MiB(sampler.RssBytes()));
    std::printf(
        "RESULT label=%s workload=%s clients=%lld ops_per_s=%.2f p50_ms=%.3f "
        "p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f errors=%lld "
        "operations=%lld client_cpu_s=%.2f server_cpu_s=%.2f seconds=%.2f "
        "server_rss_mb=%.1f server_peak_rss_mb=%.1f",
        label.empty() ? "-" : label.c_str(), w.kind.c_str(),
        static_cast<long long>(*n), r->ops_per_second(), Ms(h.Percentile(50)),
        Ms(h.Percentile(90)), Ms(h.Percentile(99)), Ms(h.Percentile(99.9)),
        Ms(h.max()), static_cast<long long>(r->errors),
        static_cast<long long>(r->operations), r->client_cpu_seconds, srv_cpu,
        r->seconds, MiB(sampler.RssBytes()), MiB(sampler.PeakRssBytes()));
    if (w.kind == "list") {
      std::printf(" list_items=%lld list_bytes=%lld list_pages=%lld",
                  static_cast<long long>(run.list_stats->items.load()),
                  static_cast<long long>(run.list_stats->bytes.load()),
                  static_cast<long long>(run.list_stats->pages.load()));
    }
    std::printf("\n");
    for (const auto& e : r->sample_errors) {
      std::fprintf(stderr, "  error sample: %s\n", e.c_str());
    }
    std::fflush(stdout);
    if (r->operations == 0) return 1;
  }
  return 0;
}

int RunBenchCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "Usage: kpctl bench api <create|get|update|list|delete|watch> "
        "[flags]\n       kpctl bench store <put|range|cas|watch|failover> "
        "[flags]\n(--help after the workload lists the flags)\n");
    return args.empty() ? 2 : 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "api") return RunApiBenchCommand(rest);
  if (args[0] == "store") {
    if (!rest.empty() && rest[0].rfind("-", 0) != 0) {
      rest.push_back("--workload=" + rest[0]);
      rest.erase(rest.begin());
    }
    return RunStoreBenchCommand(rest);
  }
  std::fprintf(stderr, "kpctl bench: unknown target \"%s\" (api or store)\n",
               args[0].c_str());
  return 2;
}

}  // namespace kplane::bench
