#include "net/tcp_gateway.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "base/logging.h"

namespace kplane::net {

namespace {

// Milliseconds for poll(): -1 for "no limit" (d < 0), rounded up otherwise
// so that a wait never ends before its deadline.
int PollMillis(Duration d) {
  if (d.count() < 0) return -1;
  return static_cast<int>(
      std::min<int64_t>(std::chrono::ceil<milliseconds>(d).count(), INT_MAX));
}

std::string FormatDuration(Duration d) {
  auto ms = std::chrono::duration_cast<milliseconds>(d).count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// One direction of a connection: bytes read from `from` wait in `buf`
// until written to `to`. Reading stops while the buffer is full, which is
// the back-pressure: the kernel's receive window then fills and the sender
// is slowed.
struct Direction {
  int from = -1;
  int to = -1;
  std::vector<char> buf;
  size_t start = 0;   // first unwritten byte
  size_t end = 0;     // one past the last read byte
  bool eof = false;   // `from` sent FIN
  bool done = false;  // FIN passed on to `to` (shutdown SHUT_WR)
  uint64_t moved = 0;

  bool WantsRead() const { return !eof && end < buf.size(); }
  bool HasData() const { return start < end; }
};

// Connects to host:port within `timeout`, trying each address the name
// resolves to; a readable `cancel_fd` (Stop) ends the wait with kCancelled.
// The socket returned is non-blocking, close-on-exec, with TCP_NODELAY.
// (socket.h's ConnectTcp has no cancel: a dial must not hold up Stop for
// the whole dial timeout.)
StatusOr<ScopedFd> Dial(const std::string& host, uint16_t port,
                        Duration timeout, int cancel_fd) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
      rc != 0) {
    return UnavailableError("cannot resolve \"" + host +
                            "\": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> free_res(res, freeaddrinfo);
  const TimePoint deadline = Clock::Real()->Now() + timeout;
  Status last = UnavailableError("no address for " + host);
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    ScopedFd fd(::socket(a->ai_family,
                         a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = ErrnoToStatus(errno, "socket");
      continue;
    }
    const std::string where = "dial " + GatewayEndpoint{host, port}.HostPort();
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = ErrnoToStatus(errno, where);
        continue;
      }
      Status w = WaitFd(fd.get(), /*for_write=*/true,
                        std::max(Duration(0), deadline - Clock::Real()->Now()),
                        cancel_fd);
      if (w.code() == StatusCode::kCancelled) return w;
      if (!w.ok()) {
        last = w.Annotate(where);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last = ErrnoToStatus(err, where);
        continue;
      }
    }
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  return last;
}

}  // namespace

std::string GatewayEndpoint::HostPort() const {
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

StatusOr<std::unique_ptr<TcpGateway>> TcpGateway::Start(
    ScopedFd listener, TcpGatewayOptions options) {
  if (options.endpoints.empty()) {
    return InvalidArgumentError("gateway: no endpoint to proxy to");
  }
  if (options.max_connections == 0) {
    return InvalidArgumentError("gateway: max connections must be positive");
  }
  if (options.dial_timeout.count() <= 0) {
    return InvalidArgumentError("gateway: dial timeout must be positive");
  }
  if (options.retry_delay.count() < 0 || options.idle_timeout.count() < 0) {
    return InvalidArgumentError(
        "gateway: retry delay and idle timeout must not be negative");
  }
  if (options.buffer_bytes == 0) {
    return InvalidArgumentError("gateway: buffer size must be positive");
  }
  if (options.clock == nullptr) options.clock = Clock::Real();
  ScopedFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return ErrnoToStatus(errno, "eventfd");
  // The listener must not block the accept thread: a client that resets
  // between poll() and accept() would otherwise hang it.
  int fl = fcntl(listener.get(), F_GETFL);
  if (fl < 0 || fcntl(listener.get(), F_SETFL, fl | O_NONBLOCK) != 0) {
    return ErrnoToStatus(errno, "fcntl O_NONBLOCK on the listener");
  }
  ASSIGN_OR_RETURN(uint16_t port, LocalPort(listener.get()));
  std::unique_ptr<TcpGateway> gw(
      new TcpGateway(std::move(listener), std::move(options), std::move(wake)));
  gw->port_ = port;
  gw->acceptor_ = std::thread([g = gw.get()] { g->AcceptLoop(); });
  return gw;
}

TcpGateway::TcpGateway(ScopedFd listener, TcpGatewayOptions options,
                       ScopedFd wake)
    : opts_(std::move(options)),
      listener_(std::move(listener)),
      wake_(std::move(wake)) {
  MutexLock lock(&mu_);
  for (const GatewayEndpoint& e : opts_.endpoints) {
    endpoints_.push_back(EndpointState{e, false, TimePoint()});
  }
}

TcpGateway::~TcpGateway() { Stop(); }

void TcpGateway::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  uint64_t one = 1;
  // An eventfd write of 1 cannot fail short of a counter overflow.
  (void)!::write(wake_.get(), &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  listener_.Reset();
  std::map<uint64_t, std::thread> conns;
  {
    MutexLock lock(&mu_);
    conns.swap(conns_);
    finished_.clear();
  }
  for (auto& [id, t] : conns) t.join();
}

TcpGateway::Stats TcpGateway::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

size_t TcpGateway::active_connections() const {
  MutexLock lock(&mu_);
  return active_;
}

std::vector<bool> TcpGateway::EndpointsActive() const {
  MutexLock lock(&mu_);
  const TimePoint now = opts_.clock->Now();
  std::vector<bool> out;
  for (const EndpointState& e : endpoints_) {
    out.push_back(!e.inactive || now >= e.retry_at);
  }
  return out;
}

bool TcpGateway::AwaitActiveConnections(size_t n, Duration timeout) {
  MutexLock lock(&mu_);
  // Real time: connections close on the network's schedule.
  return Clock::Real()->WaitFor(lock.native(), changed_, timeout,
                                [&]() REQUIRES(mu_) { return active_ == n; });
}

void TcpGateway::JoinFinished() {
  std::vector<std::thread> done;
  {
    MutexLock lock(&mu_);
    for (uint64_t id : finished_) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      done.push_back(std::move(it->second));
      conns_.erase(it);
    }
    finished_.clear();
  }
  // These threads have left Serve() (or are returning from it).
  for (std::thread& t : done) t.join();
}

void TcpGateway::AcceptLoop() {
  for (;;) {
    JoinFinished();
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    int rc = ::poll(p, 2, -1);
    if (rc < 0 && errno != EINTR) {
      LOG(ERROR) << "gateway: poll: " << std::strerror(errno);
      return;
    }
    if (p[1].revents != 0) return;
    if (rc <= 0 || p[0].revents == 0) continue;
    int fd = ::accept4(listener_.get(), nullptr, nullptr,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR ||
          err == ECONNABORTED) {
        continue;
      }
      // Out of descriptors or memory: the pending connection stays in the
      // backlog and poll() would report it again at once, so wait a little
      // (or for Stop) instead of spinning.
      LOG(WARNING) << "gateway: accept: " << std::strerror(err);
      pollfd w{wake_.get(), POLLIN, 0};
      ::poll(&w, 1, 100);
      continue;
    }
    ScopedFd client(fd);
    // Small gRPC frames must not wait for Nagle's algorithm on our side
    // (the endpoint side gets TCP_NODELAY from Dial).
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    MutexLock lock(&mu_);
    if (active_ >= opts_.max_connections) {
      // Closed at once (client ScopedFd): the client sees its connection
      // end before any byte, as from a server that is not there. Logged at
      // the 1st, 2nd, 4th, 8th ... refusal so a flood does not flood the log.
      const uint64_t n = ++stats_.refused;
      if ((n & (n - 1)) == 0) {
        LOG(WARNING) << "gateway: " << active_
                     << " connections open (--max-connections): closed a new "
                        "one ("
                     << n << " so far)";
      }
      continue;
    }
    ++stats_.accepted;
    ++active_;
    const uint64_t id = next_id_++;
    // Inserted under mu_, which Serve() takes before it reports itself
    // finished, so the thread is in conns_ before it can be in finished_.
    conns_.emplace(id, std::thread([this, id, c = client.Release()] {
                     Serve(id, ScopedFd(c));
                   }));
    changed_.notify_all();
  }
}

int TcpGateway::Pick(const std::vector<bool>& tried) {
  MutexLock lock(&mu_);
  const TimePoint now = opts_.clock->Now();
  const size_t n = endpoints_.size();
  int best = INT_MAX;
  for (size_t i = 0; i < n; ++i) {
    EndpointState& e = endpoints_[i];
    if (tried[i]) continue;
    if (e.inactive && now >= e.retry_at) {
      e.inactive = false;
      LOG(INFO) << "gateway: retrying endpoint " << e.ep.HostPort();
    }
    if (!e.inactive) best = std::min<int>(best, e.ep.priority);
  }
  if (best == INT_MAX) return -1;
  auto eligible = [&](size_t i) REQUIRES(mu_) {
    return !tried[i] && !endpoints_[i].inactive &&
           endpoints_[i].ep.priority == best;
  };
  // SRV weights (RFC 2782): among the eligible records with a weight, each
  // gets connections in proportion to it, spread evenly (smooth weighted
  // round robin, so the order is deterministic; etcd draws at random).
  // Records of weight 0 are used only when no weighted one is eligible.
  int64_t total = 0;
  int chosen = -1;
  for (size_t i = 0; i < n; ++i) {
    if (!eligible(i) || endpoints_[i].ep.weight == 0) continue;
    EndpointState& e = endpoints_[i];
    e.current_weight += e.ep.weight;
    total += e.ep.weight;
    if (chosen < 0 || e.current_weight > endpoints_[chosen].current_weight) {
      chosen = static_cast<int>(i);
    }
  }
  if (chosen >= 0) {
    endpoints_[chosen].current_weight -= total;
    return chosen;
  }
  for (size_t k = 0; k < n; ++k) {
    const size_t i = next_++ % n;
    if (eligible(i)) return static_cast<int>(i);
  }
  return -1;
}

void TcpGateway::MarkFailed(int index, const Status& why) {
  MutexLock lock(&mu_);
  EndpointState& e = endpoints_[index];
  ++stats_.dial_failures;
  e.inactive = true;
  e.retry_at = opts_.clock->Now() + opts_.retry_delay;
  LOG(WARNING) << "gateway: deactivated endpoint " << e.ep.HostPort() << " for "
               << FormatDuration(opts_.retry_delay) << ": " << why.message();
}

void TcpGateway::Serve(uint64_t id, ScopedFd client) {
  std::vector<bool> tried(opts_.endpoints.size(), false);
  ScopedFd upstream;
  for (;;) {
    const int i = Pick(tried);
    if (i < 0) break;
    tried[i] = true;
    const GatewayEndpoint& ep = opts_.endpoints[i];
    auto conn = Dial(ep.host, ep.port, opts_.dial_timeout, wake_.get());
    if (conn.ok()) {
      upstream = std::move(*conn);
      break;
    }
    if (conn.status().code() == StatusCode::kCancelled) break;  // Stop()
    MarkFailed(i, conn.status());
  }
  if (upstream.valid()) {
    Pump(client.get(), upstream.get());
  } else {
    MutexLock lock(&mu_);
    if (!stopping_) {
      ++stats_.no_endpoint;
      LOG(WARNING) << "gateway: no endpoint could take a connection from "
                   << PeerAddress(client.get()) << "; closed it";
    }
  }
  client.Reset();
  upstream.Reset();
  MutexLock lock(&mu_);
  --active_;
  finished_.push_back(id);
  changed_.notify_all();
}

void TcpGateway::Pump(int client, int upstream) {
  Direction dirs[2];
  dirs[0].from = client;
  dirs[0].to = upstream;
  dirs[1].from = upstream;
  dirs[1].to = client;
  for (Direction& d : dirs) d.buf.resize(opts_.buffer_bytes);
  const int fds[2] = {client, upstream};
  // A socket that reported POLLHUP while we asked nothing of it is left out
  // of poll() until we need it again, or poll() would return at once forever.
  bool hup[2] = {false, false};
  auto slot = [&](int fd) { return fd == client ? 0 : 1; };
  const bool idle_limit = opts_.idle_timeout.count() > 0;
  TimePoint last_moved = Clock::Real()->Now();
  bool idle = false;

  while (!(dirs[0].done && dirs[1].done)) {
    short events[2] = {0, 0};
    for (const Direction& d : dirs) {
      if (d.WantsRead()) events[slot(d.from)] |= POLLIN;
      if (d.HasData()) events[slot(d.to)] |= POLLOUT;
    }
    pollfd p[3];
    for (int s = 0; s < 2; ++s) {
      p[s].fd = (events[s] == 0 && hup[s]) ? -1 : fds[s];
      p[s].events = events[s];
      p[s].revents = 0;
    }
    p[2] = {wake_.get(), POLLIN, 0};
    Duration wait(-1);
    if (idle_limit) {
      wait = std::max(Duration(0),
                      last_moved + opts_.idle_timeout - Clock::Real()->Now());
    }
    const int rc = ::poll(p, 3, PollMillis(wait));
    if (rc < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << "gateway: poll: " << std::strerror(errno);
      break;
    }
    if (p[2].revents != 0) break;  // Stop()
    if (rc == 0) {
      if (idle_limit &&
          Clock::Real()->Now() - last_moved >= opts_.idle_timeout) {
        idle = true;
        break;
      }
      continue;
    }
    bool failed = false;
    for (int s = 0; s < 2; ++s) {
      // A reset or another socket error ends the whole connection: neither
      // direction can be completed faithfully any more.
      if (p[s].revents & (POLLERR | POLLNVAL)) failed = true;
      if ((p[s].revents & POLLHUP) && events[s] == 0) hup[s] = true;
    }
    if (failed) break;
    for (Direction& d : dirs) {
      const short rev_from = p[slot(d.from)].revents;
      const short rev_to = p[slot(d.to)].revents;
      if (d.WantsRead() && (rev_from & (POLLIN | POLLHUP))) {
        ssize_t n = ::read(d.from, d.buf.data() + d.end, d.buf.size() - d.end);
        if (n > 0) {
          d.end += n;
          last_moved = Clock::Real()->Now();
        } else if (n == 0) {
          d.eof = true;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          failed = true;
          break;
        }
      }
      if (d.HasData() && (rev_to & (POLLOUT | POLLHUP))) {
        ssize_t n =
            ::send(d.to, d.buf.data() + d.start, d.end - d.start, MSG_NOSIGNAL);
        if (n > 0) {
          d.start += n;
          d.moved += n;
          last_moved = Clock::Real()->Now();
          if (d.start == d.end) d.start = d.end = 0;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                   errno != EINTR) {
          failed = true;
          break;
        }
      }
      if (d.eof && !d.HasData() && !d.done) {
        // The half-close: the reader on the other side sees end of stream
        // and may still answer on the other direction.
        ::shutdown(d.to, SHUT_WR);
        d.done = true;
      }
    }
    if (failed) break;
  }
  MutexLock lock(&mu_);
  stats_.bytes_to_endpoints += dirs[0].moved;
  stats_.bytes_to_clients += dirs[1].moved;
  if (idle) ++stats_.idle_closed;
}

}  // namespace kplane::net
