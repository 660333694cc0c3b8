#include "bench/watch_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "base/base64.h"
#include "base/mutex.h"
#include "base/strings.h"
#include "net/http_client.h"

namespace kplane::bench {
namespace {

// Per-revision times of the puts, filled by the writer (the calling thread).
struct PutTimes {
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> by_rev;  // send, ack
};

// One watch stream: raw socket, a chunked response of newline-framed JSON.
struct Stream {
  int fd = -1;
  std::string in;  // undecoded chunked bytes
  size_t chunk_left = 0;
  bool in_chunk_header = true;
  bool head_done = false;
  std::string line;  // the JSON line being assembled
  int created = 0;
};

// Extracts each "mod_revision":"N" in an events message.
void ForEachModRevision(const std::string& line,
                        const std::function<void(int64_t)>& fn) {
  size_t p = 0;
  static const std::string kKey = "\"mod_revision\":\"";
  while ((p = line.find(kKey, p)) != std::string::npos) {
    p += kKey.size();
    fn(std::strtoll(line.c_str() + p, nullptr, 10));
  }
}

}  // namespace

StatusOr<WatchBenchResult> RunWatchBench(const WatchBenchOptions& o) {
  if (o.endpoints.empty()) return InvalidArgumentError("no endpoints");
  if (o.watchers < 1 || o.streams < 1 || o.streams > o.watchers) {
    return InvalidArgumentError("need 1 <= streams <= watchers");
  }
  if (o.writers < 1 || o.writers > o.puts) {
    return InvalidArgumentError("need 1 <= writers <= puts");
  }
  // One socket per stream: 10,000 streams need more than the usual soft
  // limit of 1,024 open files.
  struct rlimit fds;
  if (getrlimit(RLIMIT_NOFILE, &fds) == 0 &&
      fds.rlim_cur < static_cast<rlim_t>(o.streams) + 64) {
    fds.rlim_cur = fds.rlim_max;
    setrlimit(RLIMIT_NOFILE, &fds);
  }
  WatchBenchResult res;
  res.expected_events = static_cast<int64_t>(o.watchers) * o.puts;
  double cpu0 = SelfCpuSeconds();
  auto server_rss = [&o] {
    int64_t sum = 0;
    for (int pid : o.server_pids) sum += ProcessRssBytes(pid).value_or(0);
    return sum;
  };
  const int64_t rss_before = server_rss();

  // Open the streams; each sends its watchers' create requests at once.
  std::string key_b64 = Base64Encode(o.prefix);
  std::string end_b64 = Base64Encode(PrefixRangeEnd(o.prefix));
  std::vector<Stream> streams(static_cast<size_t>(o.streams));
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return InternalError("epoll_create1 failed");
  // Closes the streams and the epoll set on every return path.
  struct Closer {
    std::vector<Stream>* streams;
    int ep;
    ~Closer() {
      for (auto& st : *streams) {
        if (st.fd >= 0) close(st.fd);
      }
      close(ep);
    }
  } closer{&streams, ep};
  std::atomic<int> total_created{0};
  for (int s = 0; s < o.streams; ++s) {
    const Endpoint& e = o.endpoints[s % o.endpoints.size()];
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(e.port);
    inet_pton(AF_INET, e.host == "localhost" ? "127.0.0.1" : e.host.c_str(),
              &a.sin_addr);
    if (fd < 0) return InternalError("socket failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd);
      return UnavailableError(std::string("connect: ") + strerror(errno));
    }
    int n = o.watchers / o.streams + (s < o.watchers % o.streams ? 1 : 0);
    std::string body;
    for (int w = 0; w < n; ++w) {
      body += "{\"create_request\":{\"key\":\"" + key_b64 +
              "\",\"range_end\":\"" + end_b64 + "\"}}";
    }
    std::string req = "POST /v3/watch HTTP/1.1\r\nHost: " + e.host +
                      "\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body;
    for (size_t off = 0; off < req.size();) {
      ssize_t w = write(fd, req.data() + off, req.size() - off);
      if (w <= 0) {
        close(fd);
        return UnavailableError("write watch request");
      }
      off += static_cast<size_t>(w);
    }
    streams[s].fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(s);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }

  PutTimes times;
  std::atomic<int64_t> delivered{0};
  int64_t first_put = 0, writer_end = 0;
  std::atomic<int64_t> last_event{0};
  // (mod_revision, arrival time) of every event, appended by the reader
  // thread only and matched to the puts after it has stopped: an event may
  // arrive before its put's answer tells the writer the revision.
  std::vector<std::pair<int64_t, int64_t>> arrivals;
  arrivals.reserve(static_cast<size_t>(res.expected_events));

  // Reads every stream: decodes chunked framing, splits lines, matches
  // events to puts.
  auto on_line = [&](Stream& st, const std::string& line) {
    if (line.find("\"created\":true") != std::string::npos) {
      ++st.created;
      ++total_created;
      return;
    }
    int64_t now = NowNs();
    ForEachModRevision(line, [&](int64_t rev) {
      ++delivered;
      last_event = now;
      arrivals.emplace_back(rev, now);
    });
  };
  auto feed = [&](Stream& st, const char* data, size_t n) {
    st.in.append(data, n);
    if (!st.head_done) {
      size_t p = st.in.find("\r\n\r\n");
      if (p == std::string::npos) return;
      st.in.erase(0, p + 4);
      st.head_done = true;
    }
    size_t pos = 0;
    while (pos < st.in.size()) {
      if (st.in_chunk_header) {
        size_t eol = st.in.find("\r\n", pos);
        if (eol == std::string::npos) break;
        if (eol == pos) {  // CRLF after a chunk's data
          pos += 2;
          continue;
        }
        st.chunk_left = std::strtoull(st.in.c_str() + pos, nullptr, 16);
        pos = eol + 2;
        st.in_chunk_header = false;
        continue;
      }
      size_t take = std::min(st.chunk_left, st.in.size() - pos);
      // Lines may span chunks and a chunk may hold many lines.
      const char* p = st.in.data() + pos;
      const char* end = p + take;
      while (p < end) {
        const char* nl = static_cast<const char*>(
            std::memchr(p, '\n', static_cast<size_t>(end - p)));
        if (nl == nullptr) {
          st.line.append(p, static_cast<size_t>(end - p));
          break;
        }
        st.line.append(p, static_cast<size_t>(nl - p));
        on_line(st, st.line);
        st.line.clear();
        p = nl + 1;
      }
      pos += take;
      st.chunk_left -= take;
      if (st.chunk_left == 0) st.in_chunk_header = true;
    }
    st.in.erase(0, pos);
  };
  std::atomic<bool> stop_reader{false};
  std::thread reader([&] {
    std::vector<epoll_event> evs(256);
    char buf[256 << 10];
    while (!stop_reader.load()) {
      int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 20);
      for (int k = 0; k < n; ++k) {
        Stream& st = streams[evs[k].data.u32];
        ssize_t r = read(st.fd, buf, sizeof(buf));
        if (r > 0) feed(st, buf, static_cast<size_t>(r));
      }
    }
  });

  // Wait for every watcher to be created before writing (etcd's gateway
  // on a loaded machine needed more than 30 s for 1,000).
  int64_t deadline = NowNs() + o.create_timeout.count();
  while (total_created < o.watchers && NowNs() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (total_created < o.watchers) {
    stop_reader = true;
    reader.join();
    std::string per_stream;
    for (const Stream& st : streams) {
      per_stream +=
          (per_stream.empty() ? "" : ",") + std::to_string(st.created);
    }
    return UnavailableError("only " + std::to_string(total_created) + " of " +
                            std::to_string(o.watchers) +
                            " watchers created (per stream: " + per_stream +
                            ")");
  }

  res.server_rss_growth_bytes = server_rss() - rss_before;

  // The writers: `writers` closed-loop clients, writer k making puts
  // k, k+K, k+2K, ...; paced, put i is due at first_put + i / rate, so the
  // total rate is `puts_per_second` however it is split.
  {
    const Endpoint& e = o.endpoints[0];
    const std::string value = Base64Encode(std::string(o.value_size, 'v'));
    Mutex times_mu;
    std::string failure;  // the last put error
    first_put = NowNs();
    auto write = [&](int k) {
      net::HttpClient client(e.host, e.port);
      std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> mine;
      LatencyHistogram lat;
      for (int i = k; i < o.puts; i += o.writers) {
        if (o.puts_per_second > 0) {
          int64_t due =
              first_put + static_cast<int64_t>(i * 1e9 / o.puts_per_second);
          int64_t wait = due - NowNs();
          if (wait > 0) {
            std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
          }
        }
        std::string body =
            "{\"key\":\"" +
            Base64Encode(o.prefix + "k" + std::to_string(i % 100)) +
            "\",\"value\":\"" + value + "\"}";
        int64_t sent = NowNs();
        auto r = client.Request("POST", "/v3/kv/put",
                                {{"Content-Type", "application/json"}}, body);
        int64_t acked = NowNs();
        if (!r.ok() || r->status != 200) {
          // Counted, not fatal: an overloaded etcd answers "request timed
          // out" now and then, and the other puts' deliveries still count.
          MutexLock l(&times_mu);
          failure = r.ok() ? r->body : r.status().ToString();
          ++res.put_errors;
          continue;
        }
        lat.Record(acked - sent);
        size_t p = r->body.find("\"revision\":\"");
        int64_t rev = p == std::string::npos
                          ? 0
                          : std::strtoll(r->body.c_str() + p + 12, nullptr, 10);
        mine.push_back({rev, {sent, acked}});
      }
      MutexLock l(&times_mu);
      for (const auto& [rev, t] : mine) times.by_rev[rev] = t;
      res.put_latency.Merge(lat);
    };
    std::vector<std::thread> writers;
    for (int k = 1; k < o.writers; ++k) writers.emplace_back(write, k);
    write(0);
    for (auto& t : writers) t.join();
    writer_end = NowNs();
    if (res.put_errors == o.puts) {
      stop_reader = true;
      reader.join();
      return UnavailableError("every put failed: " + failure);
    }
    res.last_put_error = failure;
  }
  // Drain until every event of the acknowledged puts arrived or the
  // timeout. A failed put may still have been committed (a timeout), so
  // with errors wait until its events too arrived or 2 s passed quietly.
  res.expected_events =
      static_cast<int64_t>(o.watchers) * (o.puts - res.put_errors);
  int64_t drain_until = NowNs() + o.drain_timeout.count();
  while (delivered.load() < res.expected_events && NowNs() < drain_until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  while (res.put_errors > 0 &&
         delivered.load() < static_cast<int64_t>(o.watchers) * o.puts &&
         NowNs() < drain_until && NowNs() - last_event.load() < 2'000'000'000) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  stop_reader = true;
  reader.join();
  RecordDeliveries(arrivals, times.by_rev, &res);
  res.writer_seconds = (writer_end - first_put) / 1e9;
  int64_t last = last_event.load();
  double span = ((last ? last : writer_end) - first_put) / 1e9;
  res.events_per_second = span > 0 ? res.delivered_events / span : 0;
  res.client_cpu_seconds = SelfCpuSeconds() - cpu0;
  return res;
}

}  // namespace kplane::bench
