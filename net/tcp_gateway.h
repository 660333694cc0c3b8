// TcpGateway: an L4 TCP proxy in front of a store cluster, etcd 3.4's
// `etcd gateway start` (proxy/tcpproxy). Each client connection accepted on
// the listener is joined to one connection to an endpoint, chosen round
// robin; bytes are copied both ways unchanged, so TLS, gRPC and the JSON
// gateway pass through as they are.
//
//   TcpGatewayOptions o;
//   o.endpoints = {{"127.0.0.1", 2379}, {"127.0.0.1", 22379}};
//   ASSIGN_OR_RETURN(ScopedFd l, ListenTcp("127.0.0.1", 23790, 4096));
//   ASSIGN_OR_RETURN(auto gw, TcpGateway::Start(std::move(l), o));
//   ...
//   gw->Stop();  // or the destructor
//
// Choosing an endpoint (as etcd's tcpproxy): among the active endpoints of
// the best (lowest) SRV priority, the next in round-robin order. An endpoint
// that fails to dial (refused, unreachable, no answer within dial_timeout)
// is marked inactive and the connection fails over to the next one; each
// endpoint is tried at most once per connection, and a connection with no
// endpoint left is closed. An inactive endpoint becomes eligible again
// retry_delay after it failed (on `clock`): the next connection that picks
// it is the retry. (etcd probes inactive endpoints from a timer and
// reactivates them on a successful dial; a client sees the same.) Within
// a priority, SRV weights share the connections in proportion (smooth
// weighted round robin: deterministic, where etcd draws at random);
// records of weight 0, and all --endpoints, are served round robin when
// no weighted record is eligible.
//
// Bounds (kplane's; etcd's gateway has none): at most max_connections
// client connections at once (one over is accepted and closed at once, and
// counted in Stats::refused); dial_timeout per dial; idle_timeout (0: none)
// closes a connection on which no byte moved either way for that long. Each
// direction has one buffer of buffer_bytes: the gateway reads from one side
// only when there is room, so a slow reader slows its writer (back-pressure)
// and memory per connection is bounded. A side's end of stream (FIN) is
// passed on as a half-close (shutdown(SHUT_WR)) once its buffered bytes are
// written; the connection ends when both directions ended, or at once on an
// error (reset) on either side.
//
// One thread accepts; each connection has its own thread (poll() on its two
// sockets), so the thread count is bounded by max_connections + 1.
//
// Thread-safety: all methods may be called from any thread. Stop() closes
// the listener and every connection and joins the threads.
// Errors: Start() returns kInvalidArgument for options out of range (no
// endpoint, max_connections 0, negative durations, buffer_bytes 0).
#ifndef KPLANE_NET_TCP_GATEWAY_H_
#define KPLANE_NET_TCP_GATEWAY_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "net/socket.h"

namespace kplane::net {

// One upstream: host (a name or an IP literal) and port; priority and
// weight as an SRV record gave them (0 for --endpoints).
struct GatewayEndpoint {
  std::string host;
  uint16_t port = 0;
  uint16_t priority = 0;
  uint16_t weight = 0;

  // "host:port" ("[::1]:2379" for an IPv6 literal).
  std::string HostPort() const;
};

struct TcpGatewayOptions {
  std::vector<GatewayEndpoint> endpoints;
  // How long a failed endpoint is skipped (etcd's --retry-delay).
  Duration retry_delay = minutes(1);
  size_t max_connections = 1024;
  Duration dial_timeout = seconds(5);
  Duration idle_timeout = Duration(0);  // 0: none
  size_t buffer_bytes = 64 * 1024;      // per direction and connection
  // For retry_delay only; socket waits are in real time.
  Clock* clock = Clock::Real();
};

class TcpGateway {
 public:
  struct Stats {
    uint64_t accepted = 0;       // client connections taken on
    uint64_t refused = 0;        // closed at once: max_connections reached
    uint64_t dial_failures = 0;  // endpoint dials that failed
    uint64_t no_endpoint = 0;    // closed: every endpoint failed or inactive
    uint64_t idle_closed = 0;    // closed by idle_timeout
    uint64_t bytes_to_endpoints = 0;
    uint64_t bytes_to_clients = 0;
  };

  // Serves `listener` (a listening, non-blocking socket) until Stop().
  static StatusOr<std::unique_ptr<TcpGateway>> Start(ScopedFd listener,
                                                     TcpGatewayOptions options);
  ~TcpGateway();
  TcpGateway(const TcpGateway&) = delete;
  TcpGateway& operator=(const TcpGateway&) = delete;

  void Stop() EXCLUDES(mu_);

  uint16_t port() const { return port_; }
  Stats stats() const EXCLUDES(mu_);
  size_t active_connections() const EXCLUDES(mu_);
  // Whether endpoint i (options' order) is active now, i.e. not within
  // retry_delay of a failed dial.
  std::vector<bool> EndpointsActive() const EXCLUDES(mu_);
  // Blocks until exactly `n` client connections are open, or `timeout`
  // (real time) passes; returns whether it happened. For tests and tools
  // that must know a close was seen without sleeping.
  bool AwaitActiveConnections(size_t n, Duration timeout) EXCLUDES(mu_);

 private:
  struct EndpointState {
    GatewayEndpoint ep;
    bool inactive = false;
    TimePoint retry_at;
    int64_t current_weight = 0;  // smooth weighted round robin
  };

  TcpGateway(ScopedFd listener, TcpGatewayOptions options, ScopedFd wake);
  void AcceptLoop() EXCLUDES(mu_);
  void Serve(uint64_t id, ScopedFd client) EXCLUDES(mu_);
  // The index of the endpoint to dial next, skipping those in `tried`;
  // -1 when none is left.
  int Pick(const std::vector<bool>& tried) EXCLUDES(mu_);
  void MarkFailed(int index, const Status& why) EXCLUDES(mu_);
  // Copies bytes both ways until both directions ended, an error, the idle
  // timeout or Stop().
  void Pump(int client, int upstream) EXCLUDES(mu_);
  void JoinFinished() EXCLUDES(mu_);

  const TcpGatewayOptions opts_;
  ScopedFd listener_;
  // An eventfd written once by Stop(): every poll() in the gateway watches
  // it, so no thread blocks past Stop().
  ScopedFd wake_;
  uint16_t port_ = 0;
  std::thread acceptor_;

  mutable Mutex mu_;
  std::condition_variable changed_;  // active_ changed
  std::vector<EndpointState> endpoints_ GUARDED_BY(mu_);
  size_t next_ GUARDED_BY(mu_) = 0;  // round-robin position
  bool stopping_ GUARDED_BY(mu_) = false;
  size_t active_ GUARDED_BY(mu_) = 0;
  uint64_t next_id_ GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::thread> conns_ GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ GUARDED_BY(mu_);  // threads to join
  Stats stats_ GUARDED_BY(mu_);
};

}  // namespace kplane::net

#endif  // KPLANE_NET_TCP_GATEWAY_H_
