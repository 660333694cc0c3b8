#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

namespace kplane::net {

namespace {

std::string FormatSockaddr(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    return "[" + std::string(buf) +
           "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "unknown";
}

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

StatusOr<AddrInfoPtr> Resolve(const std::string& host, uint16_t port,
                              bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(),
                       &hints, &res);
  if (rc != 0) {
    return InvalidArgumentError("cannot resolve \"" + host +
                                "\": " + gai_strerror(rc));
  }
  return AddrInfoPtr(res);
}

}  // namespace

void ScopedFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status ErrnoToStatus(int err, std::string_view what) {
  std::string msg = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENOTCONN:
      return UnavailableError(msg);
    case ETIMEDOUT:
      return DeadlineExceededError(msg);
    default:
      return InternalError(msg);
  }
}

StatusOr<uint64_t> RaiseFileDescriptorLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    return ErrnoToStatus(errno, "getrlimit");
  }
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      return ErrnoToStatus(errno, "setrlimit");
    }
  }
  return static_cast<uint64_t>(rl.rlim_cur);
}

StatusOr<ScopedFd> ListenTcp(const std::string& host, uint16_t port,
                             int backlog) {
  ASSIGN_OR_RETURN(AddrInfoPtr ai, Resolve(host, port, /*passive=*/true));
  Status last = InternalError("no address to listen on");
  for (addrinfo* a = ai.get(); a != nullptr; a = a->ai_next) {
    ScopedFd fd(::socket(a->ai_family,
                         a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = ErrnoToStatus(errno, "socket");
      continue;
    }
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      last = ErrnoToStatus(errno, "bind " + FormatSockaddr(a->ai_addr));
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last = ErrnoToStatus(errno, "listen");
      continue;
    }
    return fd;
  }
  return last;
}

namespace {

StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError(
        "unix socket path of " + std::to_string(path.size()) + " bytes (1 to " +
        std::to_string(sizeof(addr.sun_path) - 1) + " allowed): " + path);
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

}  // namespace

StatusOr<ScopedFd> ListenUnix(const std::string& path, int backlog) {
  ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, "remove " + path);
  }
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoToStatus(errno, "bind " + path);
  }
  if (::listen(fd.get(), backlog) != 0) {
    return ErrnoToStatus(errno, "listen " + path);
  }
  return fd;
}

StatusOr<uint16_t> LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return ErrnoToStatus(errno, "getsockname");
  }
  if (ss.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  if (ss.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  }
  if (ss.ss_family == AF_UNIX) return 0;
  return InternalError("unknown address family");
}

std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "unknown";
  }
  return FormatSockaddr(reinterpret_cast<sockaddr*>(&ss));
}

Status WaitFd(int fd, bool for_write, Duration timeout, int cancel_fd) {
  pollfd fds[2];
  fds[0].fd = fd;
  fds[0].events = for_write ? POLLOUT : POLLIN;
  fds[1].fd = cancel_fd;
  fds[1].events = POLLIN;
  nfds_t n = cancel_fd >= 0 ? 2 : 1;
  // poll() waits in real time: socket timeouts are about the network, not
  // the simulated time of tests. Callers pass the remaining time of a
  // deadline they computed on their Clock. An EINTR restarts the full wait,
  // which at worst lengthens it.
  int ms = -1;
  if (timeout.count() >= 0) {
    ms = static_cast<int>(std::min<int64_t>(
        std::chrono::ceil<milliseconds>(timeout).count(), INT_MAX));
  }
  for (;;) {
    fds[0].revents = fds[1].revents = 0;
    int rc = ::poll(fds, n, ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "poll");
    }
    if (n == 2 && fds[1].revents != 0) return CancelledError("cancelled");
    if (rc > 0 && fds[0].revents != 0) return Status::Ok();
    if (rc == 0) return DeadlineExceededError("timed out");
  }
}

StatusOr<ScopedFd> ConnectTcp(const std::string& host, uint16_t port,
                              Duration timeout) {
  ASSIGN_OR_RETURN(AddrInfoPtr ai, Resolve(host, port, /*passive=*/false));
  Status last = UnavailableError("no address for " + host);
  for (addrinfo* a = ai.get(); a != nullptr; a = a->ai_next) {
    ScopedFd fd(::socket(a->ai_family,
                         a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = ErrnoToStatus(errno, "socket");
      continue;
    }
    std::string where = "connect " + FormatSockaddr(a->ai_addr);
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = ErrnoToStatus(errno, where);
        continue;
      }
      Status w = WaitFd(fd.get(), /*for_write=*/true, timeout);
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
    int flags = fcntl(fd.get(), F_GETFL);
    fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  return last;
}

StatusOr<ScopedFd> ConnectUnix(const std::string& path, Duration timeout) {
  ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket");
  const std::string where = "connect unix://" + path;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    // A unix socket connects at once or, with a full backlog, EAGAIN. No
    // file yet is the unix form of a refused connection (the peer is not
    // up yet).
    if (errno == ENOENT) return UnavailableError(where + ": no such socket");
    if (errno != EINPROGRESS && errno != EAGAIN) {
      return ErrnoToStatus(errno, where);
    }
    RETURN_IF_ERROR(
        WaitFd(fd.get(), /*for_write=*/true, timeout).Annotate(where));
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return ErrnoToStatus(err, where);
  }
  int flags = fcntl(fd.get(), F_GETFL);
  fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace kplane::net
