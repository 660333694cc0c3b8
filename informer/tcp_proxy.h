// TcpProxy (tests only, not part of the library): a loopback TCP relay that
// a test can cut and restore, to disconnect a client from a server without
// stopping either.
//
//   TcpProxy proxy(api_port);          // listens on 127.0.0.1:proxy.port()
//   client -> proxy.port() ...
//   proxy.Cut();      // every relayed connection is closed; new ones are
//                     // accepted and closed at once (the client sees resets)
//   proxy.Restore();  // relays again
//
//   TcpProxy slow(port, milliseconds(1500));  // each connection reaches the
//                     // server 1.5 s after it was accepted: a server slow
//                     // to complete a handshake
//
// Each relayed connection costs two threads (one per direction), and one
// more while it is held, which is fine for the handful a test opens.
//
// Thread-safety: Cut/Restore from any thread. The destructor closes
// everything and joins every thread.
#ifndef KPLANE_INFORMER_TCP_PROXY_H_
#define KPLANE_INFORMER_TCP_PROXY_H_

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "net/socket.h"

namespace kplane::informer::testing {

class TcpProxy {
 public:
  explicit TcpProxy(uint16_t upstream_port, Duration hold = Duration(0))
      : upstream_port_(upstream_port), hold_(hold) {
    StatusOr<net::ScopedFd> fd = net::ListenTcp("127.0.0.1", 0, 128);
    CHECK(fd.ok()) << fd.status();
    listener_ = std::move(*fd);
    port_ = *net::LocalPort(listener_.get());
    CHECK_EQ(::pipe(wake_), 0);
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~TcpProxy() {
    stopping_ = true;
    char c = 0;
    (void)!::write(wake_[1], &c, 1);
    acceptor_.join();
    Cut();
    // A held connection's thread may add its pumps while the first ones
    // are joined (it sees stopping_ under mu_ and adds none after that).
    for (;;) {
      std::vector<std::thread> threads;
      {
        MutexLock l(&mu_);
        threads.swap(threads_);
      }
      if (threads.empty()) break;
      for (std::thread& t : threads) t.join();
    }
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  uint16_t port() const { return port_; }

  void Cut() {
    cut_ = true;
    MutexLock l(&mu_);
    for (const auto& link : links_) {
      ::shutdown(link->client.get(), SHUT_RDWR);
      ::shutdown(link->server.get(), SHUT_RDWR);
    }
  }
  void Restore() { cut_ = false; }

 private:
  struct Link {
    net::ScopedFd client;
    net::ScopedFd server;
  };

  void Accept() {
    for (;;) {
      pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (stopping_) return;
      int fd = ::accept(listener_.get(), nullptr, nullptr);
      if (fd < 0) continue;
      net::ScopedFd client(fd);
      if (cut_) continue;  // closed at once
      if (hold_ > Duration(0)) {
        auto held = std::make_shared<net::ScopedFd>(std::move(client));
        MutexLock l(&mu_);
        threads_.emplace_back([this, held] {
          // The hold is the fault itself; the destructor's wake-up ends it.
          if (net::WaitFd(wake_[0], /*for_write=*/false, hold_).ok()) return;
          Relay(std::move(*held));
        });
        continue;
      }
      Relay(std::move(client));
    }
  }

  void Relay(net::ScopedFd client) {
    if (cut_) return;
    StatusOr<net::ScopedFd> server =
        net::ConnectTcp("127.0.0.1", upstream_port_, seconds(5));
    if (!server.ok()) return;
    auto link =
        std::make_shared<Link>(Link{std::move(client), std::move(*server)});
    MutexLock l(&mu_);
    if (stopping_) return;
    links_.push_back(link);
    threads_.emplace_back(
        [link] { Pump(link->client.get(), link->server.get()); });
    threads_.emplace_back(
        [link] { Pump(link->server.get(), link->client.get()); });
  }

  static void Pump(int from, int to) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(from, buf, sizeof(buf));
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = ::send(to, buf + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) {
          ::shutdown(from, SHUT_RDWR);
          return;
        }
        off += w;
      }
    }
    ::shutdown(to, SHUT_RDWR);
  }

  const uint16_t upstream_port_;
  const Duration hold_;
  net::ScopedFd listener_;
  uint16_t port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  Mutex mu_;
  std::vector<std::shared_ptr<Link>> links_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  std::thread acceptor_;
};

}  // namespace kplane::informer::testing

#endif  // KPLANE_INFORMER_TCP_PROXY_H_
