// kplane_http_load: measures net/'s HTTP server.
//
//   kplane_http_load post [--clients=1,16,64] [--duration=5s] [--size=256]
//                         [--io-handler] [--io-threads=1] [--workers=4]
//       Starts a server process (this binary, "serve") and drives it with
//       small POSTs over keep-alive connections from an epoll load generator,
//       closed loop (each connection sends its next request when the answer
//       arrives). Prints requests/s and latency per client count.
//       --port=N targets an already running server instead.
//
//   kplane_http_load idle-streams [--conns=10000]
//       Starts a server process, opens N streaming GETs (chunked responses
//       that stay open, like watches) and reports the server's resident
//       memory growth per connection, plus the kernel's socket memory.
//
//   kplane_http_load serve [--port=0] [--io-threads=1] [--workers=4]
//                          [--io-handler]
//       The server side: POST /post answers {"ok":true}; GET /stream starts a
//       chunked stream and keeps it open. Prints "PORT <n>" and runs until
//       SIGTERM/SIGINT or until stdin closes.
//
// The load generator and the server share the machine's CPUs; on a 2-core
// machine the figures are a lower bound for the server alone.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/command.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/strings.h"
#include "net/http_parser.h"
#include "net/http_server.h"
#include "net/socket.h"

extern char** environ;

namespace kplane::net {
namespace {

using Flags = std::map<std::string, std::string>;

Flags ParseFlags(int argc, char** argv, int first) {
  Flags flags;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::cerr << "unexpected argument " << a << "\n";
      std::exit(2);
    }
    a = a.substr(2);
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      flags[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      flags[a] = argv[++i];
    } else {
      flags[a] = "true";
    }
  }
  return flags;
}

std::string Flag(const Flags& f, const std::string& name,
                 const std::string& def) {
  auto it = f.find(name);
  return it == f.end() ? def : it->second;
}

int64_t IntFlag(const Flags& f, const std::string& name, int64_t def) {
  auto v = ParseInt64(Flag(f, name, std::to_string(def)));
  if (!v) {
    std::cerr << "bad --" << name << "\n";
    std::exit(2);
  }
  return *v;
}

// ---------------------------------------------------------------------------
// serve

int Serve(const Flags& flags) {
  // Before any thread starts, so only sigwait sees them.
  sigset_t stop = BlockStopSignals();

  HttpServerOptions o;
  o.port = static_cast<uint16_t>(IntFlag(flags, "port", 0));
  o.io_threads = static_cast<int>(IntFlag(flags, "io-threads", 1));
  o.worker_threads = static_cast<int>(IntFlag(flags, "workers", 4));
  o.name = "load";
  HttpServer server(o);
  RouteOptions post_opts;
  post_opts.run_on_io_thread = flags.count("io-handler") > 0;
  server.Handle(
      "POST", "/post",
      [](const HttpRequest&, std::shared_ptr<Responder> r) {
        r->Respond(200, {{"Content-Type", "application/json"}},
                   "{\"ok\":true}");
      },
      post_opts);
  Mutex mu;
  std::vector<std::shared_ptr<Responder>> streams;
  server.Handle("GET", "/stream",
                [&](const HttpRequest&, std::shared_ptr<Responder> r) {
                  r->StartStream(200, {{"Content-Type", "application/json"}});
                  MutexLock l(&mu);
                  streams.push_back(std::move(r));
                });
  Status s = server.Start();
  if (!s.ok()) {
    std::cerr << "start: " << s << "\n";
    return 1;
  }
  std::printf("PORT %u\n", server.port());
  std::fflush(stdout);
  // Stop on a signal or when the parent closes our stdin.
  std::thread stdin_watch([] {
    char c;
    while (::read(0, &c, 1) > 0) {
    }
    kill(getpid(), SIGTERM);
  });
  stdin_watch.detach();
  int sig;
  sigwait(&stop, &sig);
  server.Stop();
  return 0;
}

// A server child process started from this binary.
class ServerProcess {
 public:
  explicit ServerProcess(const Flags& flags) {
    std::vector<std::string> args = {"/proc/self/exe", "serve", "--port=0"};
    for (const char* name : {"io-threads", "workers"}) {
      if (flags.count(name))
        args.push_back("--" + std::string(name) + "=" + flags.at(name));
    }
    if (flags.count("io-handler")) args.push_back("--io-handler");
    int in[2], out[2];
    CHECK_EQ(pipe2(in, O_CLOEXEC), 0);
    CHECK_EQ(pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    CHECK_EQ(posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv.data(),
                         environ),
             0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    stdin_.Reset(in[1]);
    ScopedFd out_fd(out[0]);
    std::string line;
    char c;
    while (::read(out_fd.get(), &c, 1) == 1 && c != '\n') line.push_back(c);
    CHECK_EQ(line.rfind("PORT ", 0), 0u) << "server said: " << line;
    port_ = static_cast<uint16_t>(std::stoi(line.substr(5)));
  }
  ~ServerProcess() {
    stdin_.Reset();  // the server stops when its stdin closes
    int status;
    ::waitpid(pid_, &status, 0);
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  ScopedFd stdin_;
};

// ---------------------------------------------------------------------------
// post: closed-loop keep-alive load

struct LoadConn {
  ScopedFd fd;
  size_t sent = 0;
  std::string in;
  size_t scan = 0;
  bool have_head = false;
  BodyDecoder body;
  std::string body_data;
  TimePoint started;
};

struct LoadResult {
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::vector<int64_t> latencies_us;
};

LoadResult RunLoad(uint16_t port, int clients, Duration warmup,
                   Duration duration, const std::string& request) {
  Clock* clock = Clock::Real();
  ScopedFd ep(epoll_create1(EPOLL_CLOEXEC));
  std::vector<std::unique_ptr<LoadConn>> conns;
  for (int i = 0; i < clients; ++i) {
    auto fd = ConnectTcp("127.0.0.1", port, seconds(5));
    CHECK(fd.ok()) << fd.status();
    int flags = fcntl(fd->get(), F_GETFL);
    fcntl(fd->get(), F_SETFL, flags | O_NONBLOCK);
    auto c = std::make_unique<LoadConn>();
    c->fd = std::move(*fd);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.ptr = c.get();
    CHECK_EQ(epoll_ctl(ep.get(), EPOLL_CTL_ADD, c->fd.get(), &ev), 0);
    conns.push_back(std::move(c));
  }
  LoadResult result;
  const TimePoint start = clock->Now();
  const TimePoint measure_from = start + warmup;
  const TimePoint end = measure_from + duration;
  for (auto& c : conns) c->started = start;
  std::vector<char> buf(64 * 1024);
  epoll_event events[256];
  TimePoint now = start;
  while (now < end) {
    int n = epoll_wait(ep.get(), events, 256, 100);
    now = clock->Now();
    for (int i = 0; i < n; ++i) {
      LoadConn* c = static_cast<LoadConn*>(events[i].data.ptr);
      if ((events[i].events & EPOLLOUT) && c->sent < request.size()) {
        ssize_t w = ::send(c->fd.get(), request.data() + c->sent,
                           request.size() - c->sent, MSG_NOSIGNAL);
        if (w > 0) c->sent += static_cast<size_t>(w);
        if (c->sent == request.size()) {
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.ptr = c;
          epoll_ctl(ep.get(), EPOLL_CTL_MOD, c->fd.get(), &ev);
        }
      }
      if (!(events[i].events & EPOLLIN)) continue;
      ssize_t r = ::recv(c->fd.get(), buf.data(), buf.size(), 0);
      if (r <= 0) {
        LOG(FATAL) << "server closed a load connection";
      }
      c->in.append(buf.data(), static_cast<size_t>(r));
      if (!c->have_head) {
        HttpResponse resp;
        HeadResult h = ParseResponseHead(c->in, &c->scan, {}, &resp);
        if (h.kind == HeadResult::kError) LOG(FATAL) << "bad response";
        if (h.kind == HeadResult::kIncomplete) continue;
        c->in.erase(0, h.head_length);
        c->scan = 0;
        c->have_head = true;
        if (resp.status != 200) result.errors++;
        c->body.Reset(*ResponseBodyFraming("POST", resp));
      }
      auto used = c->body.Decode(c->in, &c->body_data);
      CHECK(used.ok());
      c->in.erase(0, *used);
      if (!c->body.done()) continue;
      // One exchange done: record it and send the next request.
      if (c->started >= measure_from && now <= end) {
        result.requests++;
        result.latencies_us.push_back(
            std::chrono::duration_cast<microseconds>(now - c->started).count());
      }
      c->have_head = false;
      c->body_data.clear();
      c->sent = 0;
      c->started = now;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT;
      ev.data.ptr = c;
      epoll_ctl(ep.get(), EPOLL_CTL_MOD, c->fd.get(), &ev);
    }
  }
  return result;
}

int64_t Percentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  size_t idx = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(idx), v.end());
  return v[idx];
}

int Post(const Flags& flags) {
  std::unique_ptr<ServerProcess> server;
  uint16_t port = static_cast<uint16_t>(IntFlag(flags, "port", 0));
  if (port == 0) {
    server = std::make_unique<ServerProcess>(flags);
    port = server->port();
  }
  auto duration = ParseGoDuration(Flag(flags, "duration", "5s"));
  auto warmup = ParseGoDuration(Flag(flags, "warmup", "1s"));
  CHECK(duration && warmup) << "bad --duration/--warmup";
  size_t size = static_cast<size_t>(IntFlag(flags, "size", 256));
  std::string request =
      "POST /post HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(size) + "\r\n\r\n" + std::string(size, 'v');
  std::printf("%-8s %12s %10s %10s %10s %8s\n", "clients", "requests/s",
              "p50_us", "p99_us", "p99.9_us", "errors");
  for (const std::string& c :
       StrSplit(Flag(flags, "clients", "1,16,64"), ',')) {
    int clients = static_cast<int>(*ParseInt64(c));
    LoadResult r = RunLoad(port, clients, nanoseconds(*warmup),
                           nanoseconds(*duration), request);
    double secs = static_cast<double>(*duration) / 1e9;
    std::printf("%-8d %12.0f %10ld %10ld %10ld %8lu\n", clients,
                static_cast<double>(r.requests) / secs,
                Percentile(r.latencies_us, 0.5),
                Percentile(r.latencies_us, 0.99),
                Percentile(r.latencies_us, 0.999), r.errors);
    std::fflush(stdout);
  }
  return 0;
}

// ---------------------------------------------------------------------------
// idle-streams

int64_t ReadProcKb(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream is(line.substr(key.size()));
      int64_t v = 0;
      is >> v;
      return v;
    }
  }
  return -1;
}

// "TCP: inuse 5 orphan 0 tw 0 alloc 7 mem 1" -> mem (pages).
int64_t TcpMemPages() {
  std::ifstream in("/proc/net/sockstat");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("TCP:", 0) != 0) continue;
    size_t p = line.find(" mem ");
    if (p != std::string::npos) return std::stoll(line.substr(p + 5));
  }
  return -1;
}

int IdleStreams(const Flags& flags) {
  const int n = static_cast<int>(IntFlag(flags, "conns", 10000));
  auto limit = RaiseFileDescriptorLimit();
  CHECK(limit.ok() && *limit > static_cast<uint64_t>(n) + 64)
      << "open-file limit too low for " << n << " connections";
  ServerProcess server(flags);
  const std::string status =
      "/proc/" + std::to_string(server.pid()) + "/status";
  // Warm the server up with a few streams so one-time allocations (thread
  // stacks touched, malloc arenas) are not charged to the connections.
  std::vector<ScopedFd> conns;
  const std::string request = "GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  auto open_stream = [&] {
    auto fd = ConnectTcp("127.0.0.1", server.port(), seconds(10));
    CHECK(fd.ok()) << fd.status();
    CHECK_EQ(::send(fd->get(), request.data(), request.size(), MSG_NOSIGNAL),
             static_cast<ssize_t>(request.size()));
    conns.push_back(std::move(*fd));
  };
  auto await_heads = [&](size_t from) {
    for (size_t i = from; i < conns.size(); ++i) {
      std::string got;
      while (got.find("\r\n\r\n") == std::string::npos) {
        CHECK_OK(WaitFd(conns[i].get(), false, seconds(30)));
        char b[1024];
        ssize_t r = ::recv(conns[i].get(), b, sizeof(b), 0);
        CHECK_GT(r, 0) << "stream " << i << " closed";
        got.append(b, static_cast<size_t>(r));
      }
    }
  };
  for (int i = 0; i < 100; ++i) open_stream();
  await_heads(0);
  const int64_t rss_before = ReadProcKb(status, "VmRSS:");
  const int64_t slab_before = ReadProcKb("/proc/meminfo", "Slab:");
  const int64_t tcp_before = TcpMemPages();
  const size_t first = conns.size();
  for (int i = 0; i < n; ++i) open_stream();
  await_heads(first);
  const int64_t rss_after = ReadProcKb(status, "VmRSS:");
  const int64_t slab_after = ReadProcKb("/proc/meminfo", "Slab:");
  const int64_t tcp_after = TcpMemPages();
  const int64_t threads = ReadProcKb(status, "Threads:");
  std::printf("idle streaming connections: %d (plus 100 warm-up)\n", n);
  std::printf("server threads:             %ld\n", threads);
  std::printf("server RSS:                 %ld KiB -> %ld KiB\n", rss_before,
              rss_after);
  std::printf("server user-space bytes per connection: %.0f\n",
              static_cast<double>(rss_after - rss_before) * 1024.0 / n);
  std::printf(
      "kernel slab growth per connection (both socket ends, whole machine): "
      "%.0f bytes\n",
      static_cast<double>(slab_after - slab_before) * 1024.0 / n);
  std::printf("kernel TCP buffer pages: %ld -> %ld\n", tcp_before, tcp_after);
  return 0;
}

}  // namespace
}  // namespace kplane::net

int main(int argc, char** argv) {
  using namespace kplane::net;
  if (argc < 2) {
    std::cerr << "usage: kplane_http_load serve|post|idle-streams [--flags]\n";
    return 2;
  }
  std::string mode = argv[1];
  Flags flags = ParseFlags(argc, argv, 2);
  if (mode == "serve") return Serve(flags);
  if (mode == "post") return Post(flags);
  if (mode == "idle-streams") return IdleStreams(flags);
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
