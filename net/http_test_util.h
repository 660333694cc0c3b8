// Test helpers for net/ tests (not part of the library): a raw TCP
// connection that sends arbitrary bytes and reads with a failure deadline,
// a one-shot latch, and a bounded poll for server state that no event
// announces.
//
// Reads wait for data to arrive (poll), never sleep; the 10 s deadline only
// turns a hang into a test failure.
//
// Thread-safety: a RawConnection is used by one thread; Latch by any.
#ifndef KPLANE_NET_HTTP_TEST_UTIL_H_
#define KPLANE_NET_HTTP_TEST_UTIL_H_

#include <poll.h>
#include <sys/socket.h>

#include <condition_variable>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "base/clock.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "net/http_message.h"
#include "net/http_parser.h"
#include "net/socket.h"

namespace kplane::net::testing {

inline constexpr Duration kTestDeadline = seconds(10);

// Polls `done` until it holds or kTestDeadline passes; returns its last
// answer. For server state changed by a timer sweep that tells no one (a
// closed connection's slot coming back), where there is nothing to wait on.
inline bool PollUntil(const std::function<bool()>& done) {
  const TimePoint deadline = Clock::Real()->Now() + kTestDeadline;
  while (!done()) {
    if (Clock::Real()->Now() >= deadline) return done();
    std::this_thread::yield();
  }
  return true;
}

class RawConnection {
 public:
  explicit RawConnection(uint16_t port) {
    StatusOr<ScopedFd> fd = ConnectTcp("127.0.0.1", port, seconds(5));
    CHECK(fd.ok()) << fd.status();
    fd_ = std::move(*fd);
  }

  void Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      CHECK_GT(n, 0) << "send failed";
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  // Reads until `done(buffer)` holds. Returns false on EOF/timeout first.
  bool ReadUntil(const std::function<bool(std::string_view)>& done) {
    while (!done(buffer_)) {
      if (!ReadSome()) return false;
    }
    return true;
  }
  bool ReadUntilContains(std::string_view needle) {
    return ReadUntil([&](std::string_view b) {
      return b.find(needle) != std::string_view::npos;
    });
  }

  // Reads one complete response (head and body) and removes it from the
  // buffer. Fails the CHECK-free way: returns an error status.
  StatusOr<HttpResponse> ReadResponse(std::string_view method = "GET") {
    HttpResponse resp;
    size_t scan = 0;
    for (;;) {
      HeadResult r = ParseResponseHead(buffer_, &scan, {}, &resp);
      if (r.kind == HeadResult::kError) return InvalidArgumentError(r.error);
      if (r.kind == HeadResult::kComplete) {
        buffer_.erase(0, r.head_length);
        break;
      }
      if (!ReadSome()) return UnavailableError("EOF before response head");
    }
    StatusOr<BodyFraming> framing = ResponseBodyFraming(method, resp);
    if (!framing.ok()) return framing.status();
    BodyDecoder decoder(*framing);
    for (;;) {
      StatusOr<size_t> used = decoder.Decode(buffer_, &resp.body);
      if (!used.ok()) return used.status();
      buffer_.erase(0, *used);
      if (decoder.done()) return resp;
      if (!ReadSome()) {
        decoder.FinishAtEof();
        if (decoder.done()) return resp;
        return UnavailableError("EOF in body");
      }
    }
  }

  // True if the server closes the connection (EOF or reset) in time; data
  // arriving first is appended to the buffer.
  bool WaitForClose() {
    for (;;) {
      if (!ReadSome()) return closed_;
    }
  }

  void ShutdownWrite() { ::shutdown(fd_.get(), SHUT_WR); }
  void Close() { fd_.Reset(); }
  std::string& buffer() { return buffer_; }
  int fd() const { return fd_.get(); }
  bool closed() const { return closed_; }

 private:
  // Appends what arrives; false on EOF/error (closed_ = true) or timeout.
  bool ReadSome() {
    if (closed_) return false;
    Status w = WaitFd(fd_.get(), false, kTestDeadline);
    if (!w.ok()) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  ScopedFd fd_;
  std::string buffer_;
  bool closed_ = false;
};

// A count-down latch with a failure deadline.
class Latch {
 public:
  explicit Latch(int count = 1) : count_(count) {}
  void CountDown() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    if (--count_ <= 0) cv_.notify_all();
  }
  // True if the count reached zero before the test deadline.
  bool Wait() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return cv_.wait_for(l.native(), kTestDeadline,
                        [&]() REQUIRES(mu_) { return count_ <= 0; });
  }
  bool Done() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return count_ <= 0;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int count_ GUARDED_BY(mu_);
};

}  // namespace kplane::net::testing

#endif  // KPLANE_NET_HTTP_TEST_UTIL_H_
