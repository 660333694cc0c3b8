#include "bench/api_watch_bench.h"

#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "bench/api_workloads.h"
#include "bench/watch_bench.h"
#include "net/http_client.h"
#include "net/http_parser.h"
#include "net/socket.h"

namespace kplane::bench {
namespace {

// The resourceVersion of the first object in `s` (the event's object:
// metadata leads it, and managedFields carry no resourceVersion).
int64_t FirstResourceVersion(std::string_view s) {
  static constexpr std::string_view kKey = "\"resourceVersion\":\"";
  size_t p = s.find(kKey);
  if (p == std::string_view::npos) return 0;
  return std::strtoll(s.data() + p + kKey.size(), nullptr, 10);
}

// One watch connection: the response head, then a chunked body of
// newline-framed JSON events.
struct Watch {
  net::ScopedFd fd;
  std::string in;
  size_t scan_from = 0;
  bool head_done = false;
  net::HttpResponse head;
  net::BodyDecoder body;
  std::string lines;  // decoded payload not yet split into lines
  bool ended = false;
};

}  // namespace

StatusOr<ApiWatchBenchResult> RunApiWatchBench(const ApiWatchBenchOptions& o) {
  if (o.watchers < 1 || o.creates < 1) {
    return InvalidArgumentError("need watchers >= 1 and creates >= 1");
  }
  (void)net::RaiseFileDescriptorLimit();
  ApiWatchBenchResult res;
  res.expected_events = static_cast<int64_t>(o.watchers) * o.creates;
  const double cpu0 = SelfCpuSeconds();
  auto server_rss = [&o] {
    int64_t sum = 0;
    for (int pid : o.server_pids) sum += ProcessRssBytes(pid).value_or(0);
    return sum;
  };
  RETURN_IF_ERROR(EnsureNamespace(o.server, o.ns));
  const std::string pods = "/api/v1/namespaces/" + o.ns + "/pods";
  net::HttpClient writer(o.server.host, o.server.port);
  // The namespace's current resourceVersion: every watch starts there, so
  // it sees exactly the creates below.
  ASSIGN_OR_RETURN(net::HttpResponse list,
                   writer.Request("GET", pods + "?limit=1"));
  if (list.status != 200) {
    return UnavailableError("list: HTTP " + std::to_string(list.status));
  }
  const int64_t start_rv = FirstResourceVersion(list.body);
  const int64_t rss_before = server_rss();

  const int64_t setup_start = NowNs();
  std::vector<Watch> watches(static_cast<size_t>(o.watchers));
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return InternalError("epoll_create1 failed");
  net::ScopedFd ep_fd(ep);
  const std::string request =
      "GET " + pods + "?watch=1&resourceVersion=" + std::to_string(start_rv) +
      " HTTP/1.1\r\nHost: " + o.server.host + ":" +
      std::to_string(o.server.port) + "\r\n\r\n";
  for (int i = 0; i < o.watchers; ++i) {
    ASSIGN_OR_RETURN(
        net::ScopedFd fd,
        net::ConnectTcp(o.server.host, o.server.port, seconds(10)));
    if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      return UnavailableError(std::string("send watch request: ") +
                              strerror(errno));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd.get(), &ev);
    watches[i].fd = std::move(fd);
  }

  std::atomic<int> heads{0};
  std::atomic<int> bad_heads{0};
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> last_event{0};
  // (resourceVersion, arrival) of every ADDED event; the reader appends,
  // the matching happens after it stopped (an event may beat its create's
  // answer).
  std::vector<std::pair<int64_t, int64_t>> arrivals;
  arrivals.reserve(static_cast<size_t>(res.expected_events));
  auto on_data = [&](Watch& w, int64_t now) {
    size_t from = 0, nl;
    while ((nl = w.lines.find('\n', from)) != std::string::npos) {
      std::string_view line(w.lines.data() + from, nl - from);
      if (line.find("\"type\":\"ADDED\"") != std::string_view::npos) {
        arrivals.emplace_back(FirstResourceVersion(line), now);
        ++delivered;
        last_event = now;
      }
      from = nl + 1;
    }
    w.lines.erase(0, from);
  };
  auto feed = [&](Watch& w, const char* data, size_t n, int64_t now) {
    w.in.append(data, n);
    if (!w.head_done) {
      net::HeadResult h =
          net::ParseResponseHead(w.in, &w.scan_from, {}, &w.head);
      if (h.kind == net::HeadResult::kIncomplete) return;
      if (h.kind == net::HeadResult::kError || w.head.status != 200) {
        w.ended = true;
        ++bad_heads;
        return;
      }
      auto framing = net::ResponseBodyFraming("GET", w.head);
      if (!framing.ok()) {
        w.ended = true;
        ++bad_heads;
        return;
      }
      w.body.Reset(*framing);
      w.in.erase(0, h.head_length);
      w.head_done = true;
      ++heads;
    }
    auto used = w.body.Decode(w.in, &w.lines);
    if (!used.ok()) {
      w.ended = true;
      return;
    }
    w.in.erase(0, *used);
    on_data(w, now);
  };
  std::atomic<bool> stop_reader{false};
  std::thread reader([&] {
    std::vector<epoll_event> evs(512);
    std::vector<char> buf(256 << 10);
    while (!stop_reader.load()) {
      int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 20);
      const int64_t now = NowNs();
      for (int k = 0; k < n; ++k) {
        Watch& w = watches[evs[k].data.u32];
        ssize_t r = read(w.fd.get(), buf.data(), buf.size());
        if (r > 0 && !w.ended) {
          feed(w, buf.data(), static_cast<size_t>(r), now);
        } else if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
          epoll_ctl(ep, EPOLL_CTL_DEL, w.fd.get(), nullptr);
          w.ended = true;
        }
      }
    }
  });
  auto stop = [&] {
    stop_reader = true;
    reader.join();
  };

  const int64_t head_deadline = NowNs() + o.head_timeout.count();
  while (heads.load() + bad_heads.load() < o.watchers &&
         NowNs() < head_deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (heads.load() < o.watchers) {
    stop();
    return UnavailableError("only " + std::to_string(heads.load()) + " of " +
                            std::to_string(o.watchers) + " watches started (" +
                            std::to_string(bad_heads.load()) + " refused)");
  }
  res.setup_seconds = (NowNs() - setup_start) / 1e9;
  res.server_rss_growth_bytes = server_rss() - rss_before;

  // The writer: sequential creates, paced.
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> sent_acked;
  const int64_t first = NowNs();
  for (int i = 0; i < o.creates; ++i) {
    if (o.creates_per_second > 0) {
      const int64_t due =
          first + static_cast<int64_t>(i * 1e9 / o.creates_per_second);
      const int64_t wait = due - NowNs();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
    const int64_t sent = NowNs();
    auto r = writer.Request(
        "POST", pods, {{"Content-Type", "application/json"}},
        PodJson(o.run + "-" + std::to_string(i), std::to_string(i)));
    const int64_t acked = NowNs();
    if (!r.ok() || r->status != 201) {
      stop();
      return UnavailableError(
          "create failed: " +
          (r.ok() ? r->body.substr(0, 200) : r.status().ToString()));
    }
    res.create_latency.Record(acked - sent);
    sent_acked[FirstResourceVersion(r->body)] = {sent, acked};
  }
  const int64_t writer_end = NowNs();
  const int64_t drain_until = NowNs() + o.drain_timeout.count();
  while (delivered.load() < res.expected_events && NowNs() < drain_until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  stop();
  RecordDeliveries(arrivals, sent_acked, &res);
  res.writer_seconds = (writer_end - first) / 1e9;
  const int64_t last = last_event.load();
  const double span = ((last ? last : writer_end) - first) / 1e9;
  res.events_per_second = span > 0 ? res.delivered_events / span : 0;
  res.client_cpu_seconds = SelfCpuSeconds() - cpu0;
  return res;
}

}  // namespace kplane::bench
