#include "bench/load.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/file_system.h"
#include "base/strings.h"
#include "net/http_parser.h"
#include "net/url.h"

namespace kplane::bench {
namespace {

struct Conn {
  int fd = -1;
  const Endpoint* endpoint = nullptr;
  std::unique_ptr<ClientScript> script;
  std::string out;  // bytes not yet written
  size_t out_off = 0;
  std::string in;
  size_t scan_from = 0;
  bool have_head = false;
  net::HttpResponse resp;
  net::BodyDecoder body;
  std::string method;                    // of the request in flight
  std::unique_ptr<net::TlsSession> tls;  // https:// endpoints only
  int64_t op_start = 0;
  int64_t req_start = 0;
  bool in_op = false;
};

class Loop {
 public:
  Loop(const LoadOptions& o, int64_t count_from, int64_t stop_at,
       std::atomic<int64_t>* ops_budget)
      : o_(o), count_from_(count_from), stop_at_(stop_at), budget_(ops_budget) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
  }
  ~Loop() {
    for (auto& c : conns_) {
      c->tls.reset();
      if (c->fd >= 0) close(c->fd);
    }
    if (ep_ >= 0) close(ep_);
  }

  void AddClient(int i) {
    auto c = std::make_unique<Conn>();
    c->endpoint = &o_.endpoints[i % o_.endpoints.size()];
    c->script = o_.make_script(i);
    conns_.push_back(std::move(c));
  }

  void Run() {
    for (auto& c : conns_) {
      if (!Connect(c.get())) continue;
      SendNext(c.get());
    }
    std::vector<epoll_event> evs(256);
    while (NowNs() < stop_at_ && !Exhausted() && idle_ < conns_.size()) {
      int n = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), 50);
      for (int k = 0; k < n; ++k) {
        Conn* c = static_cast<Conn*>(evs[k].data.ptr);
        if (evs[k].events & EPOLLOUT) Flush(c);
        if (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) Read(c);
      }
      // Requests that never answered.
      int64_t now = NowNs();
      for (auto& c : conns_) {
        if (c->fd >= 0 && c->req_start &&
            now - c->req_start > o_.request_timeout.count()) {
          Error(c.get(), "request timed out");
        }
      }
    }
  }

  // Every client's script has run out of work.
  bool AllIdle() const { return idle_ == conns_.size(); }

  LatencyHistogram latency;
  int64_t ops = 0;
  int64_t errors = 0;
  std::vector<std::string> sample_errors;

 private:
  bool Exhausted() const {
    return o_.max_operations > 0 && budget_->load() <= 0;
  }

  bool Connect(Conn* c) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(c->endpoint->port);
    inet_pton(AF_INET,
              c->endpoint->host == "localhost" ? "127.0.0.1"
                                               : c->endpoint->host.c_str(),
              &a.sin_addr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 &&
        errno != EINPROGRESS) {
      close(fd);
      NoteError("connect: " + std::string(strerror(errno)));
      return false;
    }
    c->fd = fd;
    if (c->endpoint->tls) {
      auto session = net::TlsSession::NewClient(c->endpoint->tls->context, fd,
                                                c->endpoint->host);
      if (!session.ok()) {
        close(fd);
        c->fd = -1;
        NoteError("tls: " + session.status().ToString());
        return false;
      }
      c->tls = std::move(*session);
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ev.data.ptr = c;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    return true;
  }

  void SendNext(Conn* c) {
    if (NowNs() >= stop_at_ || Exhausted()) return;
    Request r = c->script->Next();
    if (r.method.empty()) {  // this client is done
      ++idle_;
      return;
    }
    if (!c->in_op) {
      c->in_op = true;
      c->op_start = NowNs();
    }
    c->method = r.method;
    std::string& o = c->out;
    o.clear();
    c->out_off = 0;
    o += r.method + " " + r.path + " HTTP/1.1\r\nHost: " + c->endpoint->host +
         ":" + std::to_string(c->endpoint->port) + "\r\n";
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT" ||
        r.method == "PATCH") {
      o += "Content-Type: " + r.content_type +
           "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n";
    }
    o += "\r\n";
    o += r.body;
    c->req_start = NowNs();
    Flush(c);
  }

  // TLS: drives the handshake. False while it is not done (the socket's
  // next readiness calls again) or after it failed (the connection is gone).
  bool TlsReady(Conn* c) {
    if (c->tls->handshake_done()) return true;
    net::TlsSession::Result r = c->tls->Handshake();
    if (r == net::TlsSession::Result::kOk) return true;
    if (r == net::TlsSession::Result::kError ||
        r == net::TlsSession::Result::kClosed) {
      Error(c, "tls handshake: " + c->tls->error().ToString());
    }
    return false;
  }

  void Flush(Conn* c) {
    if (c->tls) {
      if (!TlsReady(c)) return;
      while (c->fd >= 0 && c->out_off < c->out.size()) {
        size_t n = 0;
        net::TlsSession::Result r = c->tls->Write(
            c->out.data() + c->out_off, c->out.size() - c->out_off, &n);
        c->out_off += n;
        if (r == net::TlsSession::Result::kOk) continue;
        if (r == net::TlsSession::Result::kWantRead ||
            r == net::TlsSession::Result::kWantWrite) {
          return;
        }
        Error(c, "tls write: " + c->tls->error().ToString());
        return;
      }
      return;
    }
    while (c->out_off < c->out.size()) {
      ssize_t n =
          write(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off);
      if (n < 0) {
        if (errno == EAGAIN) return;
        if (errno == EINTR) continue;
        Error(c, std::string("write: ") + strerror(errno));
        return;
      }
      c->out_off += static_cast<size_t>(n);
    }
  }

  void Read(Conn* c) {
    char buf[64 << 10];
    if (c->tls) {
      // The handshake may be waiting for this readiness; then the request
      // queued meanwhile goes out.
      if (!c->tls->handshake_done()) {
        Flush(c);
        if (c->fd < 0 || !c->tls->handshake_done()) return;
      }
      while (c->fd >= 0) {
        size_t n = 0;
        net::TlsSession::Result r = c->tls->Read(buf, sizeof(buf), &n);
        if (r == net::TlsSession::Result::kOk) {
          c->in.append(buf, n);
          Parse(c);
          continue;
        }
        if (r == net::TlsSession::Result::kWantRead ||
            r == net::TlsSession::Result::kWantWrite) {
          return;
        }
        Error(c, r == net::TlsSession::Result::kClosed
                     ? std::string("connection closed by server")
                     : "tls read: " + c->tls->error().ToString());
        return;
      }
      return;
    }
    while (c->fd >= 0) {
      ssize_t n = read(c->fd, buf, sizeof(buf));
      if (n < 0) {
        if (errno == EAGAIN) return;
        if (errno == EINTR) continue;
        Error(c, std::string("read: ") + strerror(errno));
        return;
      }
      if (n == 0) {
        Error(c, "connection closed by server");
        return;
      }
      c->in.append(buf, static_cast<size_t>(n));
      Parse(c);
    }
  }

  void Parse(Conn* c) {
    while (c->fd >= 0 && !c->in.empty()) {
      if (!c->have_head) {
        c->resp = net::HttpResponse();
        net::HeadResult h =
            net::ParseResponseHead(c->in, &c->scan_from, {}, &c->resp);
        if (h.kind == net::HeadResult::kIncomplete) return;
        if (h.kind == net::HeadResult::kError) {
          Error(c, "bad response: " + h.error);
          return;
        }
        c->in.erase(0, h.head_length);
        c->scan_from = 0;
        auto framing = net::ResponseBodyFraming(c->method, c->resp);
        if (!framing.ok()) {
          Error(c, framing.status().ToString());
          return;
        }
        c->body.Reset(*framing);
        c->have_head = true;
      }
      auto used = c->body.Decode(c->in, &c->resp.body);
      if (!used.ok()) {
        Error(c, used.status().ToString());
        return;
      }
      c->in.erase(0, *used);
      if (!c->body.done()) return;
      c->have_head = false;
      Complete(c);
    }
  }

  void Complete(Conn* c) {
    int64_t now = NowNs();
    c->req_start = 0;
    Step s = c->script->OnResponse(c->resp);
    if (s == Step::kContinue) {
      SendNext(c);
      return;
    }
    c->in_op = false;
    bool counted = c->op_start >= count_from_ && now <= stop_at_;
    if (s == Step::kDone) {
      if (counted) {
        latency.Record(now - c->op_start);
        ++ops;
        budget_->fetch_sub(1);
      }
    } else if (counted) {
      ++errors;
      if (sample_errors.size() < 5) {
        sample_errors.push_back("HTTP " + std::to_string(c->resp.status) +
                                ": " + c->resp.body.substr(0, 200));
      }
    }
    SendNext(c);
  }

  void NoteError(const std::string& e) {
    ++errors;
    if (sample_errors.size() < 5) sample_errors.push_back(e);
  }

  // A broken connection: count the operation as failed and reconnect.
  void Error(Conn* c, const std::string& e) {
    NoteError(e);
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    c->tls.reset();  // before the close: the session borrows the socket
    close(c->fd);
    c->fd = -1;
    c->in.clear();
    c->have_head = false;
    c->scan_from = 0;
    c->in_op = false;
    c->req_start = 0;
    if (NowNs() < stop_at_ && Connect(c)) SendNext(c);
  }

  const LoadOptions& o_;
  int64_t count_from_, stop_at_;
  std::atomic<int64_t>* budget_;
  int ep_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  size_t idle_ = 0;  // clients whose script has no more work
};

}  // namespace

StatusOr<std::shared_ptr<const ClientTls>> LoadClientTls(
    const std::string& ca_file, const std::string& cert_file,
    const std::string& key_file) {
  auto tls = std::make_shared<ClientTls>();
  FileSystem* fs = FileSystem::Default();
  if (!ca_file.empty()) {
    ASSIGN_OR_RETURN(tls->ca_pem, ReadFile(fs, ca_file));
  }
  if (!cert_file.empty()) {
    ASSIGN_OR_RETURN(tls->cert_pem, ReadFile(fs, cert_file));
  }
  if (!key_file.empty()) {
    ASSIGN_OR_RETURN(tls->key_pem, ReadFile(fs, key_file));
  }
  ASSIGN_OR_RETURN(tls->context,
                   net::TlsContext::NewClient({.ca_pem = tls->ca_pem,
                                               .cert_pem = tls->cert_pem,
                                               .key_pem = tls->key_pem,
                                               .alpn = {"http/1.1"}}));
  return std::shared_ptr<const ClientTls>(std::move(tls));
}

StatusOr<std::vector<Endpoint>> ParseEndpoints(
    std::string_view list, std::shared_ptr<const ClientTls> tls) {
  std::vector<Endpoint> out;
  for (const std::string& part : StrSplit(list, ',')) {
    if (StripWhitespace(part).empty()) continue;
    ASSIGN_OR_RETURN(net::Url u, net::ParseUrl(StripWhitespace(part),
                                               net::UrlSchemes::kHttpOrHttps));
    Endpoint e{u.host, u.port, nullptr};
    if (u.scheme == "https") {
      if (!tls) {
        ASSIGN_OR_RETURN(tls, LoadClientTls("", "", ""));
      }
      e.tls = tls;
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) return InvalidArgumentError("no endpoints");
  return out;
}

StatusOr<LoadResult> RunLoad(const LoadOptions& o) {
  if (o.endpoints.empty()) return InvalidArgumentError("no endpoints");
  if (o.clients < 1 || o.threads < 1) {
    return InvalidArgumentError("clients and threads must be >= 1");
  }
  if (!o.make_script) return InvalidArgumentError("no script");
  int threads = std::min(o.threads, o.clients);
  int64_t start = NowNs();
  int64_t count_from = start + o.warmup.count();
  int64_t stop_at = count_from + o.duration.count();
  if (o.max_operations > 0) {
    stop_at = start +
              (o.time_limit > Duration(0) ? o.time_limit : Duration(hours(24)))
                  .count();
  }
  std::atomic<int64_t> budget{o.max_operations};
  std::vector<std::unique_ptr<Loop>> loops;
  for (int t = 0; t < threads; ++t) {
    loops.push_back(std::make_unique<Loop>(o, count_from, stop_at, &budget));
  }
  for (int i = 0; i < o.clients; ++i) loops[i % threads]->AddClient(i);
  double cpu_before = 0;
  int64_t measured_start = count_from;
  std::thread cpu_sampler([&] {
    // The CPU window starts when the warmup ends.
    int64_t wait = count_from - NowNs();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    cpu_before = SelfCpuSeconds();
  });
  std::vector<std::thread> ts;
  for (auto& l : loops) ts.emplace_back([&l] { l->Run(); });
  for (auto& t : ts) t.join();
  cpu_sampler.join();
  LoadResult r;
  int64_t end = std::min(NowNs(), stop_at);
  r.seconds = (end - measured_start) / 1e9;
  r.client_cpu_seconds = SelfCpuSeconds() - cpu_before;
  r.all_idle = true;
  for (auto& l : loops) {
    r.all_idle = r.all_idle && l->AllIdle();
    r.latency.Merge(l->latency);
    r.operations += l->ops;
    r.errors += l->errors;
    for (auto& e : l->sample_errors) {
      if (r.sample_errors.size() < 5) r.sample_errors.push_back(e);
    }
  }
  return r;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double SelfCpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

StatusOr<double> ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) {
    return NotFoundError("no process " + std::to_string(pid));
  }
  // Fields after the parenthesized command name; utime and stime are the
  // 14th and 15th fields overall.
  size_t rp = line.rfind(')');
  std::istringstream rest(line.substr(rp + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

StatusOr<int64_t> ProcessRssBytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream s(line.substr(6));
      int64_t kb = 0;
      s >> kb;
      return kb * 1024;
    }
  }
  return NotFoundError("no process " + std::to_string(pid));
}

}  // namespace kplane::bench
