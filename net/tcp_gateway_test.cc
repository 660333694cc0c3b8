#include "net/tcp_gateway.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"

namespace kplane::net {
namespace {

// Receives time out so that a broken gateway fails a test instead of
// hanging it.
void SetReceiveTimeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until end of stream (or an error/timeout, which adds "<error>").
std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return out;
    if (n < 0) return out + "<error>";
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string ReadExactly(int fd, size_t want) {
  std::string out;
  char buf[4096];
  while (out.size() < want) {
    ssize_t n = ::read(fd, buf, std::min(sizeof(buf), want - out.size()));
    if (n <= 0) return out + "<eof>";
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A small upstream for the gateway. Each connection first gets the
// server's one-letter tag (so a test sees which endpoint it reached), then:
//   kEcho        echoes until the client's FIN, then sends "<bye>" and
//                closes (the client's half-close must reach us while the
//                client can still read);
//   kCloseFirst  half-closes at once, then reads until the client's FIN and
//                records what came (our half-close must not end the
//                client's direction).
class TagServer {
 public:
  enum Mode { kEcho, kCloseFirst };

  explicit TagServer(char tag, Mode mode = kEcho, uint16_t port = 0)
      : tag_(tag), mode_(mode) {
    auto fd = ListenTcp("127.0.0.1", port, 64);
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    listener_ = std::move(*fd);
    port_ = *LocalPort(listener_.get());
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    stop_r_.Reset(p[0]);
    stop_w_.Reset(p[1]);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~TagServer() {
    (void)!::write(stop_w_.get(), "x", 1);
    acceptor_.join();
    for (auto& t : conns_) t.join();
  }

  uint16_t port() const { return port_; }
  // Waits until `n` connections have been served and closed.
  bool AwaitHandled(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return handled_ >= n; });
  }
  // What kCloseFirst connections received, once one has ended.
  std::string AwaitReceived() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10),
                 [&] { return received_done_; });
    return received_;
  }

 private:
  void Accept() {
    for (;;) {
      pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_r_.get(), POLLIN, 0}};
      ::poll(p, 2, -1);
      if (p[1].revents) return;
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      conns_.emplace_back([this, fd] {
        Handle(ScopedFd(fd));  // closes fd
        std::lock_guard<std::mutex> lock(mu_);
        ++handled_;
        cv_.notify_all();
      });
    }
  }
  void Handle(ScopedFd fd) {
    SetReceiveTimeout(fd.get(), 10);
    if (!WriteAll(fd.get(), std::string(1, tag_))) return;
    if (mode_ == kEcho) {
      char buf[65536];
      for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        if (n <= 0) break;
        if (!WriteAll(fd.get(), std::string_view(buf, n))) return;
      }
      WriteAll(fd.get(), "<bye>");
      return;
    }
    ::shutdown(fd.get(), SHUT_WR);
    std::string got = ReadAll(fd.get());
    std::lock_guard<std::mutex> lock(mu_);
    received_ = got;
    received_done_ = true;
    cv_.notify_all();
  }

  const char tag_;
  const Mode mode_;
  ScopedFd listener_;
  uint16_t port_ = 0;
  ScopedFd stop_r_, stop_w_;
  std::thread acceptor_;
  std::vector<std::thread> conns_;  // only the acceptor touches it
  std::mutex mu_;
  std::condition_variable cv_;
  std::string received_;
  bool received_done_ = false;
  int handled_ = 0;
};

// A port on which nothing listens (bound, then closed).
uint16_t DeadPort() {
  auto fd = ListenTcp("127.0.0.1", 0, 1);
  return *LocalPort(fd->get());
}

GatewayEndpoint Local(uint16_t port) { return {"127.0.0.1", port, 0, 0}; }

std::unique_ptr<TcpGateway> StartGateway(TcpGatewayOptions o) {
  auto l = ListenTcp("127.0.0.1", 0, 64);
  EXPECT_TRUE(l.ok());
  auto gw = TcpGateway::Start(std::move(*l), std::move(o));
  EXPECT_TRUE(gw.ok()) << gw.status().ToString();
  return std::move(*gw);
}

ScopedFd Dial(const TcpGateway& gw) {
  auto fd = ConnectTcp("127.0.0.1", gw.port(), seconds(5));
  EXPECT_TRUE(fd.ok()) << fd.status().ToString();
  SetReceiveTimeout(fd->get(), 10);
  return std::move(*fd);
}

// The tag of the endpoint a new connection through `gw` reached ("" if the
// gateway closed it).
std::string Reach(const TcpGateway& gw) {
  ScopedFd c = Dial(gw);
  std::string tag = ReadExactly(c.get(), 1);
  return tag == "<eof>" ? "" : tag;
}

TEST(TcpGatewayTest, RoundRobinOverEndpoints) {
  TagServer a('A'), b('B'), c('C');
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port()), Local(b.port()), Local(c.port())};
  auto gw = StartGateway(o);
  std::string seen;
  for (int i = 0; i < 6; ++i) seen += Reach(*gw);
  EXPECT_EQ(seen, "ABCABC");
  EXPECT_EQ(gw->stats().accepted, 6u);
}

TEST(TcpGatewayTest, BestSrvPriorityFirstThenTheNext) {
  TagServer a('A'), b('B'), c('C');
  TcpGatewayOptions o;
  o.endpoints = {{"127.0.0.1", a.port(), 1, 0},
                 {"127.0.0.1", b.port(), 0, 0},
                 {"127.0.0.1", c.port(), 0, 0}};
  auto gw = StartGateway(o);
  std::string seen;
  for (int i = 0; i < 4; ++i) seen += Reach(*gw);
  EXPECT_EQ(seen, "BCBC");  // A (priority 1) only when no 0 is left
  TcpGatewayOptions o2;
  o2.endpoints = {{"127.0.0.1", a.port(), 1, 0},
                  {"127.0.0.1", DeadPort(), 0, 0}};
  auto gw2 = StartGateway(o2);
  EXPECT_EQ(Reach(*gw2), "A");
  EXPECT_EQ(gw2->stats().dial_failures, 1u);
}

TEST(TcpGatewayTest, SrvWeightsShareConnectionsInProportion) {
  TagServer a('A'), b('B'), c('C');
  TcpGatewayOptions o;
  o.endpoints = {{"127.0.0.1", a.port(), 0, 3},
                 {"127.0.0.1", b.port(), 0, 1},
                 {"127.0.0.1", c.port(), 0, 0}};
  auto gw = StartGateway(o);
  std::string seen;
  for (int i = 0; i < 8; ++i) seen += Reach(*gw);
  // 3:1, spread out; the weight-0 record is not used while weighted ones
  // answer.
  EXPECT_EQ(seen, "AABAAABA");
  // ...but is when none does.
  TcpGatewayOptions o2;
  o2.endpoints = {{"127.0.0.1", DeadPort(), 0, 5},
                  {"127.0.0.1", c.port(), 0, 0}};
  auto gw2 = StartGateway(o2);
  EXPECT_EQ(Reach(*gw2), "C");
}

TEST(TcpGatewayTest, FailsOverToTheNextEndpoint) {
  TagServer b('B');
  TcpGatewayOptions o;
  o.endpoints = {Local(DeadPort()), Local(b.port())};
  auto gw = StartGateway(o);
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(gw->stats().dial_failures, 1u);
  EXPECT_EQ(gw->EndpointsActive(), (std::vector<bool>{false, true}));
  // The inactive endpoint is skipped, not dialled again.
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(gw->stats().dial_failures, 1u);
}

TEST(TcpGatewayTest, RetriesAFailedEndpointAfterTheRetryDelay) {
  FakeClock clock;
  TagServer b('B');
  const uint16_t a_port = DeadPort();
  TcpGatewayOptions o;
  o.endpoints = {Local(a_port), Local(b.port())};
  o.retry_delay = minutes(1);
  o.clock = &clock;
  auto gw = StartGateway(o);
  EXPECT_EQ(Reach(*gw), "B");                  // A refused: marked inactive
  TagServer a('A', TagServer::kEcho, a_port);  // A comes back
  // Within the delay A is not tried, though it would answer now.
  clock.Advance(seconds(59));
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(gw->EndpointsActive(), (std::vector<bool>{false, true}));
  clock.Advance(seconds(1));
  EXPECT_EQ(gw->EndpointsActive(), (std::vector<bool>{true, true}));
  std::string seen;
  for (int i = 0; i < 4; ++i) seen += Reach(*gw);
  EXPECT_EQ(seen, "ABAB");
  EXPECT_EQ(gw->stats().dial_failures, 1u);
}

TEST(TcpGatewayTest, AFailedRetryWaitsAnotherDelay) {
  FakeClock clock;
  TagServer b('B');
  TcpGatewayOptions o;
  o.endpoints = {Local(DeadPort()), Local(b.port())};
  o.retry_delay = seconds(10);
  o.clock = &clock;
  auto gw = StartGateway(o);
  EXPECT_EQ(Reach(*gw), "B");
  clock.Advance(seconds(10));
  // Each connection tries A at most once; A still refuses, so it fails
  // over to B and A is inactive for another 10 s.
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(gw->stats().dial_failures, 2u);
  EXPECT_EQ(gw->EndpointsActive(), (std::vector<bool>{false, true}));
}

TEST(TcpGatewayTest, ClosesTheClientWhenNoEndpointAnswers) {
  TcpGatewayOptions o;
  o.endpoints = {Local(DeadPort()), Local(DeadPort())};
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  EXPECT_EQ(ReadAll(c.get()), "");
  EXPECT_TRUE(gw->AwaitActiveConnections(0, seconds(10)));
  EXPECT_EQ(gw->stats().no_endpoint, 1u);
  EXPECT_EQ(gw->stats().dial_failures, 2u);
  // Both are inactive now: the next client is closed without a dial.
  ScopedFd c2 = Dial(*gw);
  EXPECT_EQ(ReadAll(c2.get()), "");
  EXPECT_TRUE(gw->AwaitActiveConnections(0, seconds(10)));
  EXPECT_EQ(gw->stats().no_endpoint, 2u);
  EXPECT_EQ(gw->stats().dial_failures, 2u);
}

TEST(TcpGatewayTest, DialTimeoutFailsOverFromASilentEndpoint) {
  // A listener with a full backlog that never accepts: Linux drops further
  // SYNs, so a connect neither succeeds nor is refused.
  auto silent = ListenTcp("127.0.0.1", 0, 0);
  ASSERT_TRUE(silent.ok());
  const uint16_t silent_port = *LocalPort(silent->get());
  std::vector<ScopedFd> fill;
  for (int i = 0; i < 4; ++i) {
    ScopedFd f(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(silent_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(f.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    fill.push_back(std::move(f));
  }
  TagServer b('B');
  TcpGatewayOptions o;
  o.endpoints = {Local(silent_port), Local(b.port())};
  o.dial_timeout = milliseconds(300);
  auto gw = StartGateway(o);
  EXPECT_EQ(Reach(*gw), "B");
  EXPECT_EQ(gw->stats().dial_failures, 1u);
  EXPECT_EQ(gw->EndpointsActive(), (std::vector<bool>{false, true}));
}

TEST(TcpGatewayTest, MaxConnectionsClosesExtraConnections) {
  TagServer a('A');
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  o.max_connections = 2;
  auto gw = StartGateway(o);
  ScopedFd c1 = Dial(*gw);
  ScopedFd c2 = Dial(*gw);
  EXPECT_EQ(ReadExactly(c1.get(), 1), "A");
  EXPECT_EQ(ReadExactly(c2.get(), 1), "A");
  ScopedFd c3 = Dial(*gw);  // the kernel accepts; the gateway closes it
  EXPECT_EQ(ReadAll(c3.get()), "");
  EXPECT_EQ(gw->stats().refused, 1u);
  EXPECT_EQ(gw->active_connections(), 2u);
  c1.Reset();
  ASSERT_TRUE(gw->AwaitActiveConnections(1, seconds(10)));
  EXPECT_EQ(Reach(*gw), "A");  // room again
  EXPECT_EQ(gw->stats().refused, 1u);
}

TEST(TcpGatewayTest, ClientHalfCloseReachesTheEndpoint) {
  TagServer a('A', TagServer::kEcho);
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  ASSERT_TRUE(WriteAll(c.get(), "ping"));
  ASSERT_EQ(::shutdown(c.get(), SHUT_WR), 0);
  // The server saw our FIN (it sends "<bye>" only then) and its answer
  // still reached us after we stopped writing.
  EXPECT_EQ(ReadAll(c.get()), "Aping<bye>");
}

TEST(TcpGatewayTest, EndpointHalfCloseKeepsTheClientsDirectionOpen) {
  TagServer a('A', TagServer::kCloseFirst);
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  EXPECT_EQ(ReadAll(c.get()), "A");  // the endpoint's FIN reached us
  ASSERT_TRUE(WriteAll(c.get(), "late"));
  ASSERT_EQ(::shutdown(c.get(), SHUT_WR), 0);
  EXPECT_EQ(a.AwaitReceived(), "late");
  EXPECT_TRUE(gw->AwaitActiveConnections(0, seconds(10)));
}

TEST(TcpGatewayTest, LargeTransferBothWaysThroughSmallBuffers) {
  TagServer a('A', TagServer::kEcho);
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  o.buffer_bytes = 4096;  // many rounds of back-pressure
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  std::string data(24 << 20, '\0');
  uint32_t x = 12345;
  for (char& ch : data) {
    x = x * 1103515245 + 12345;
    ch = static_cast<char>(x >> 24);
  }
  std::thread writer([&] {
    EXPECT_TRUE(WriteAll(c.get(), data));
    ::shutdown(c.get(), SHUT_WR);
  });
  std::string got = ReadAll(c.get());
  writer.join();
  ASSERT_EQ(got.size(), data.size() + 6);
  EXPECT_TRUE(got == "A" + data + "<bye>");
  ASSERT_TRUE(gw->AwaitActiveConnections(0, seconds(10)));
  EXPECT_EQ(gw->stats().bytes_to_endpoints, data.size());
  EXPECT_EQ(gw->stats().bytes_to_clients, data.size() + 6);
}

TEST(TcpGatewayTest, SlowReaderIsBackPressuredNotBuffered) {
  TagServer a('A', TagServer::kEcho);
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  ASSERT_EQ(ReadExactly(c.get(), 1), "A");
  // We write and never read: the echo server blocks writing to the
  // gateway, the gateway stops reading from it and from us. Our writes
  // must stop within the kernel's socket buffers plus the gateway's two
  // 64 KiB buffers, not grow the gateway's memory.
  const int fl = fcntl(c.get(), F_GETFL);
  fcntl(c.get(), F_SETFL, fl | O_NONBLOCK);
  std::string chunk(65536, 'x');
  size_t written = 0;
  for (;;) {
    ssize_t n = ::send(c.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n > 0) {
      written += n;
      ASSERT_LT(written, size_t{64} << 20) << "the gateway never pushed back";
      continue;
    }
    ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
    // Full for now; give the pipeline 200 ms to drain if it can.
    pollfd p{c.get(), POLLOUT, 0};
    if (::poll(&p, 1, 200) == 0) break;
  }
  EXPECT_GT(written, 0u);
}

TEST(TcpGatewayTest, IdleTimeoutClosesAQuietConnection) {
  TagServer a('A', TagServer::kEcho);
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  o.idle_timeout = milliseconds(300);
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  EXPECT_EQ(ReadExactly(c.get(), 1), "A");
  ASSERT_TRUE(WriteAll(c.get(), "x"));
  EXPECT_EQ(ReadExactly(c.get(), 1), "x");
  EXPECT_EQ(ReadAll(c.get()), "");  // closed once quiet for 300 ms
  EXPECT_EQ(gw->stats().idle_closed, 1u);
}

int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

TEST(TcpGatewayTest, ConnectionsLeaveNoDescriptorsBehind) {
  TagServer a('A', TagServer::kEcho);
  TcpGatewayOptions o;
  o.endpoints = {Local(DeadPort()), Local(a.port())};
  // Every connection dials the dead endpoint first (a failed dial must
  // leave nothing open either), then the echo server.
  o.retry_delay = Duration(0);
  auto gw = StartGateway(o);
  auto round_trip = [&] {
    ScopedFd c = Dial(*gw);
    ASSERT_TRUE(WriteAll(c.get(), "hi"));
    ::shutdown(c.get(), SHUT_WR);
    EXPECT_EQ(ReadAll(c.get()), "Ahi<bye>");
  };
  // One connection first, so that both acceptor threads are surely past
  // their start: a starting thread may hold descriptors for a moment (the
  // sanitizers' runtime opens a pipe there), which must not be counted.
  // The connections' own threads have all ended before either count.
  round_trip();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(gw->AwaitActiveConnections(0, seconds(10)));
  ASSERT_TRUE(a.AwaitHandled(1));
  const int before = OpenFds();
  for (int i = 0; i < 20 && !HasFatalFailure(); ++i) round_trip();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(gw->AwaitActiveConnections(0, seconds(10)));
  // The echo server's sockets are closed once its handlers end; the
  // gateway holds none: the count is back where it was.
  ASSERT_TRUE(a.AwaitHandled(21));
  EXPECT_EQ(gw->stats().dial_failures, 21u);
  EXPECT_EQ(OpenFds(), before);
}

TEST(TcpGatewayTest, StopEndsOpenConnections) {
  TagServer a('A', TagServer::kEcho);
  TcpGatewayOptions o;
  o.endpoints = {Local(a.port())};
  auto gw = StartGateway(o);
  ScopedFd c = Dial(*gw);
  EXPECT_EQ(ReadExactly(c.get(), 1), "A");
  gw->Stop();
  EXPECT_EQ(ReadAll(c.get()), "");
  gw->Stop();  // twice is fine
}

TEST(TcpGatewayTest, StartRejectsBadOptions) {
  auto start = [](TcpGatewayOptions o) {
    auto l = ListenTcp("127.0.0.1", 0, 1);
    return TcpGateway::Start(std::move(*l), std::move(o)).status();
  };
  TcpGatewayOptions ok;
  ok.endpoints = {Local(1)};
  TcpGatewayOptions o = ok;
  o.endpoints.clear();
  EXPECT_EQ(start(o).code(), StatusCode::kInvalidArgument);
  o = ok;
  o.max_connections = 0;
  EXPECT_EQ(start(o).code(), StatusCode::kInvalidArgument);
  o = ok;
  o.dial_timeout = Duration(0);
  EXPECT_EQ(start(o).code(), StatusCode::kInvalidArgument);
  o = ok;
  o.idle_timeout = seconds(-1);
  EXPECT_EQ(start(o).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(start(ok).ok());
}

}  // namespace
}  // namespace kplane::net
