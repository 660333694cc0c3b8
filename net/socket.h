// Thin POSIX socket helpers used by the HTTP server and client: listening,
// connecting with a timeout, waiting for readiness, and raising the
// process's open-file limit.
//
// ScopedFd owns one file descriptor and closes it on destruction.
//
// Thread-safety: the functions are thread-safe; a ScopedFd is a value owned
// by one thread at a time.
// Errors: kUnavailable when a connection is refused or reset (the peer is
// not there), kDeadlineExceeded when a timeout passes, kInvalidArgument for
// a bad address, kInternal for other system-call failures (message includes
// strerror).
#ifndef KPLANE_NET_SOCKET_H_
#define KPLANE_NET_SOCKET_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/statusor.h"

namespace kplane::net {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() { Reset(); }
  ScopedFd(ScopedFd&& o) noexcept : fd_(o.Release()) {}
  ScopedFd& operator=(ScopedFd&& o) noexcept {
    if (this != &o) Reset(o.Release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Raises RLIMIT_NOFILE's soft limit to its hard limit (10,000 streaming
// connections need more than the usual 1,024). Returns the new soft limit.
StatusOr<uint64_t> RaiseFileDescriptorLimit();

// A non-blocking, close-on-exec listening TCP socket on host:port
// (port 0 = ephemeral). `host` may be a name, an IPv4 or an IPv6 literal;
// "" means all interfaces.
StatusOr<ScopedFd> ListenTcp(const std::string& host, uint16_t port,
                             int backlog);

// A non-blocking, close-on-exec listening unix-domain stream socket at
// `path`. As etcd's NewUnixListener, a file already at `path` is removed
// first (a socket left by an earlier run). kInvalidArgument for a path
// longer than sockaddr_un holds.
StatusOr<ScopedFd> ListenUnix(const std::string& path, int backlog);

// The local port a socket is bound to (0 for a unix-domain socket).
StatusOr<uint16_t> LocalPort(int fd);
// "127.0.0.1:5432" / "[::1]:5432" for the peer of a connected socket.
std::string PeerAddress(int fd);

// Connects to host:port within `timeout`, trying each resolved address in
// turn. The returned socket is blocking, close-on-exec, with TCP_NODELAY.
StatusOr<ScopedFd> ConnectTcp(const std::string& host, uint16_t port,
                              Duration timeout);

// Connects to the unix-domain stream socket at `path` within `timeout`.
// The returned socket is blocking and close-on-exec. kInvalidArgument for a
// path longer than sockaddr_un holds; kUnavailable when nothing listens.
StatusOr<ScopedFd> ConnectUnix(const std::string& path, Duration timeout);

// Waits until `fd` is readable (or writable, with `for_write`), or until
// `cancel_fd` (if >= 0) becomes readable, or `timeout` passes (negative =
// forever). Returns OK when fd is ready, kCancelled when cancel_fd fired,
// kDeadlineExceeded on timeout.
Status WaitFd(int fd, bool for_write, Duration timeout, int cancel_fd = -1);

// Maps an errno from a socket call to a Status (see the file comment).
Status ErrnoToStatus(int err, std::string_view what);

}  // namespace kplane::net

#endif  // KPLANE_NET_SOCKET_H_
