// kplane_apiserver_load: throughput and latency of the apiserver.
//
//   kplane_apiserver_load create [--clients=16] [--count=4000]
//       POSTs small pods from N keep-alive clients (closed loop) and
//       reports pods/s and the latency distribution of the creates.
//
//   kplane_apiserver_load list [--pods=10000] [--repeat=20]
//       Creates N pods (16 clients), then LISTs all of them N times from
//       the watch cache, resourceVersion=0 (kubectl's informers) and ""
//       (a consistent read, served by the cache after it caught up), and
//       reports the latency of each kind.
//
//   kplane_apiserver_load watch [--watchers=1000] [--events=200] [--rate=20]
//       Opens W watches on pods (HTTP/1.0, so the stream is unframed),
//       then creates E pods at R per second; each pod carries the time its
//       POST was sent, and every watcher's receipt of its ADDED event is one
//       delivery sample (send -> delivery; includes the create itself).
//
// By default the target is an in-process apiserver over an embedded store
// in a temporary directory (as `kplane apiserver --storage-backend=
// embedded`); --server=http://host:port targets a running one instead. The
// load generator shares the machine's CPUs with the server.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/api_server.h"
#include "base/clock.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "net/socket.h"
#include "net/url.h"
#include "storage/server/store_server.h"

namespace kplane::apiserver {
namespace {

using Flags = std::map<std::string, std::string>;

Flags ParseFlags(int argc, char** argv, int first) {
  Flags f;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) continue;
    const size_t eq = a.find('=');
    if (eq == std::string::npos) {
      f[a.substr(2)] = "true";
    } else {
      f[a.substr(2, eq - 2)] = a.substr(eq + 1);
    }
  }
  return f;
}

int64_t IntFlag(const Flags& f, const std::string& name, int64_t def) {
  auto it = f.find(name);
  if (it == f.end()) return def;
  auto v = ParseInt64(it->second);
  CHECK(v.has_value()) << "--" << name << " is not a number";
  return *v;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Percentiles {
  double p50, p90, p99, max;
};

Percentiles Summarize(std::vector<int64_t> ns) {
  if (ns.empty()) return {0, 0, 0, 0};
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(ns.size() - 1));
    return static_cast<double>(ns[i]) / 1e6;
  };
  return {at(0.5), at(0.9), at(0.99), static_cast<double>(ns.back()) / 1e6};
}

void PrintLatency(const char* what, const std::vector<int64_t>& ns) {
  Percentiles p = Summarize(ns);
  std::printf("%-28s n=%-8zu p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms\n",
              what, ns.size(), p.p50, p.p90, p.p99, p.max);
}

std::string PodJson(const std::string& name, int64_t sent_ns) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","labels":{"app":"load"},"annotations":{"kplane.io/sent":")" +
         std::to_string(sent_ns) +
         R"("}},"spec":{"containers":[{"name":"app","image":"nginx:1.27","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}})";
}

// The target: a running server, or one started here.
class Target {
 public:
  explicit Target(const Flags& f) {
    auto it = f.find("server");
    if (it != f.end()) {
      auto u = net::ParseUrl(it->second);
      CHECK(u.ok()) << u.status();
      host_ = u->host;
      port_ = u->port;
      return;
    }
    char tmpl[] = "/tmp/kplane-apiload-XXXXXX";
    CHECK(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    storage::StoreConfig c;
    c.name = "load";
    c.data_dir = dir_ + "/data";
    c.peer_urls = {"http://127.0.0.1:2380"};
    c.corrupt_check_interval = Duration(0);
    auto s = storage::StoreServer::Open(c);
    CHECK(s.ok()) << s.status();
    store_ = std::move(*s);
    CHECK(store_->Start(nullptr).ok());
    CHECK(store_->WaitForLeader(seconds(30)));
    ApiServerOptions o;
    o.kv = store_.get();
    o.max_watches = 100000;
    api_ = std::make_unique<ApiServer>(o);
    Status st = api_->Start();
    CHECK(st.ok()) << st;
    CHECK(api_->WaitReady(seconds(60)));
    host_ = "127.0.0.1";
    port_ = api_->port();
    std::printf("in-process apiserver on 127.0.0.1:%u (embedded store in %s)\n",
                port_, dir_.c_str());
  }
  ~Target() {
    if (api_) api_->Stop();
    if (store_) store_->Stop();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }

 private:
  std::string dir_, host_;
  uint16_t port_ = 0;
  std::unique_ptr<storage::StoreServer> store_;
  std::unique_ptr<ApiServer> api_;
};

constexpr char kPods[] = "/api/v1/namespaces/default/pods";

// Creates `count` pods named <prefix>-<i> from `clients` threads; returns
// per-request latencies (ns) and the wall time taken.
std::pair<std::vector<int64_t>, double> CreatePods(const Target& t, int clients,
                                                   int count,
                                                   const std::string& prefix) {
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  Mutex mu;
  std::vector<int64_t> all;
  const int64_t start = NowNs();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      net::HttpClient client(t.host(), t.port());
      std::vector<int64_t> mine;
      for (;;) {
        const int i = next.fetch_add(1);
        if (i >= count) break;
        const int64_t t0 = NowNs();
        auto r = client.Request("POST", kPods,
                                {{"Content-Type", "application/json"}},
                                PodJson(prefix + "-" + std::to_string(i), t0));
        const int64_t t1 = NowNs();
        if (!r.ok() || r->status != 201) {
          if (failures.fetch_add(1) < 5) {
            std::fprintf(
                stderr, "create failed: %s\n",
                r.ok() ? r->body.c_str() : r.status().ToString().c_str());
          }
          continue;
        }
        mine.push_back(t1 - t0);
      }
      MutexLock l(&mu);
      all.insert(all.end(), mine.begin(), mine.end());
    });
  }
  for (auto& th : threads) th.join();
  const double secs = static_cast<double>(NowNs() - start) / 1e9;
  if (failures > 0) std::printf("failed creates: %d\n", failures.load());
  return {all, secs};
}

int RunCreate(const Flags& f) {
  Target t(f);
  const int clients = static_cast<int>(IntFlag(f, "clients", 16));
  const int count = static_cast<int>(IntFlag(f, "count", 4000));
  auto [lat, secs] = CreatePods(t, clients, count, "create");
  std::printf("create: %d clients, %zu pods in %.2fs = %.0f pods/s\n", clients,
              lat.size(), secs, static_cast<double>(lat.size()) / secs);
  PrintLatency("create latency", lat);
  return 0;
}

int RunList(const Flags& f) {
  Target t(f);
  const int pods = static_cast<int>(IntFlag(f, "pods", 10000));
  const int repeat = static_cast<int>(IntFlag(f, "repeat", 20));
  auto [lat, secs] = CreatePods(t, 16, pods, "list");
  std::printf("created %zu pods in %.2fs (%.0f pods/s)\n", lat.size(), secs,
              static_cast<double>(lat.size()) / secs);
  net::HttpClientOptions co;
  co.read_timeout = seconds(120);
  net::HttpClient client(t.host(), t.port(), co);
  for (const char* rv : {"0", ""}) {
    std::vector<int64_t> samples;
    size_t bytes = 0;
    for (int i = 0; i < repeat; ++i) {
      const int64_t t0 = NowNs();
      auto r = client.Request(
          "GET", std::string(kPods) + "?resourceVersion=" + rv, {}, "");
      const int64_t t1 = NowNs();
      CHECK(r.ok() && r->status == 200)
          << (r.ok() ? r->body : r.status().ToString());
      bytes = r->body.size();
      samples.push_back(t1 - t0);
    }
    std::string what = std::string("LIST ") + std::to_string(lat.size()) +
                       " pods rv=\"" + rv + "\"";
    PrintLatency(what.c_str(), samples);
    std::printf("  response size %.1f MB\n", static_cast<double>(bytes) / 1e6);
  }
  // The server's own view (handler time, without the transfer and the
  // client's parsing): apiserver_request_duration_seconds for LIST pods.
  auto m = client.Request("GET", "/metrics", {}, "");
  if (m.ok()) {
    double sum = 0, count = 0;
    for (const std::string& line : StrSplit(m->body, '\n')) {
      if (line.find("verb=\"LIST\"") == std::string::npos ||
          line.find("resource=\"pods\"") == std::string::npos) {
        continue;
      }
      const double v = std::atof(line.substr(line.rfind(' ') + 1).c_str());
      if (line.rfind("apiserver_request_duration_seconds_sum", 0) == 0)
        sum += v;
      if (line.rfind("apiserver_request_duration_seconds_count", 0) == 0)
        count += v;
    }
    if (count > 0) {
      std::printf("server-side LIST pods mean %.1fms over %.0f requests\n",
                  1000 * sum / count, count);
    }
  }
  return 0;
}

int RunWatch(const Flags& f) {
  Target t(f);
  const int watchers = static_cast<int>(IntFlag(f, "watchers", 1000));
  const int events = static_cast<int>(IntFlag(f, "events", 200));
  const int rate = static_cast<int>(IntFlag(f, "rate", 20));
  (void)net::RaiseFileDescriptorLimit();
  net::HttpClient client(t.host(), t.port());
  auto list = client.Request("GET", std::string(kPods) + "?limit=1", {}, "");
  CHECK(list.ok() && list->status == 200);
  const size_t rv_at = list->body.find("\"resourceVersion\":\"");
  CHECK(rv_at != std::string::npos);
  const std::string rv = list->body.substr(
      rv_at + 19, list->body.find('"', rv_at + 19) - (rv_at + 19));

  // HTTP/1.0 watches: the server streams unframed, so lines can be read
  // straight off the socket.
  std::vector<net::ScopedFd> fds;
  const std::string request = "GET " + std::string(kPods) +
                              "?watch=1&resourceVersion=" + rv +
                              " HTTP/1.0\r\nHost: x\r\n\r\n";
  for (int i = 0; i < watchers; ++i) {
    auto fd = net::ConnectTcp(t.host(), t.port(), seconds(5));
    CHECK(fd.ok()) << fd.status();
    CHECK(::send(fd->get(), request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
    fds.push_back(std::move(*fd));
  }
  std::vector<std::string> buffers(watchers);
  std::vector<bool> headed(watchers, false);
  std::vector<int64_t> delivery;
  delivery.reserve(static_cast<size_t>(watchers) * events);
  std::atomic<bool> done{false};
  std::atomic<size_t> delivered{0};
  size_t expected = static_cast<size_t>(watchers) * events;
  std::thread reader([&] {
    // epoll: the reader's cost must not grow with the number of watches.
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0);
    for (int i = 0; i < watchers; ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<uint32_t>(i);
      CHECK(::epoll_ctl(ep, EPOLL_CTL_ADD, fds[i].get(), &ev) == 0);
    }
    std::vector<epoll_event> ready(256);
    char buf[65536];
    while (!done.load()) {
      int n =
          ::epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 200);
      for (int k = 0; k < n; ++k) {
        const int i = static_cast<int>(ready[k].data.u32);
        ssize_t got = ::recv(fds[i].get(), buf, sizeof(buf), 0);
        if (got <= 0) {
          ::epoll_ctl(ep, EPOLL_CTL_DEL, fds[i].get(), nullptr);
          continue;
        }
        const int64_t now = NowNs();
        std::string& b = buffers[i];
        b.append(buf, static_cast<size_t>(got));
        if (!headed[i]) {
          size_t end = b.find("\r\n\r\n");
          if (end == std::string::npos) continue;
          headed[i] = true;
          b.erase(0, end + 4);
        }
        size_t nl;
        while ((nl = b.find('\n')) != std::string::npos) {
          const size_t at = b.find("\"kplane.io/sent\":\"");
          if (at != std::string::npos && at < nl) {
            int64_t sent = std::stoll(b.substr(at + 18, 20));
            delivery.push_back(now - sent);
            delivered.fetch_add(1);
          }
          b.erase(0, nl + 1);
        }
      }
    }
    ::close(ep);
  });
  // Give every watch its head before writing (they are all registered then).
  const int64_t interval_ns = 1000000000LL / std::max(1, rate);
  std::vector<int64_t> create_lat;
  const int64_t begin = NowNs();
  for (int i = 0; i < events; ++i) {
    const int64_t due = begin + i * interval_ns;
    while (NowNs() < due) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const int64_t t0 = NowNs();
    auto r =
        client.Request("POST", kPods, {{"Content-Type", "application/json"}},
                       PodJson("watch-" + std::to_string(i), t0));
    CHECK(r.ok() && r->status == 201)
        << (r.ok() ? r->body : r.status().ToString());
    create_lat.push_back(NowNs() - t0);
  }
  const int64_t deadline = NowNs() + 60LL * 1000000000LL;
  while (NowNs() < deadline) {
    if (delivered.load() >= expected) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  done = true;
  reader.join();
  std::printf("watch: %d watchers, %d events at %d/s: %zu of %zu deliveries\n",
              watchers, events, rate, delivery.size(), expected);
  PrintLatency("create latency", create_lat);
  PrintLatency("send->delivery latency", delivery);
  return 0;
}

}  // namespace
}  // namespace kplane::apiserver

int main(int argc, char** argv) {
  using namespace kplane::apiserver;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: kplane_apiserver_load create|list|watch [--flags]\n");
    return 2;
  }
  kplane::SetMinLogLevel(kplane::LogLevel::kWarning);
  const std::string mode = argv[1];
  Flags f = ParseFlags(argc, argv, 2);
  if (mode == "create") return RunCreate(f);
  if (mode == "list") return RunList(f);
  if (mode == "watch") return RunWatch(f);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
