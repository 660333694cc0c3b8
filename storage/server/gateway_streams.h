// GatewayStreams: etcd's --max-concurrent-streams on one listener's JSON
// gateway. etcd 3.4's gateway is a gRPC client of its own member over one
// connection per listener (embed/serve.go), so every gateway request in
// flight -- a unary call until it is answered, a /v3/watch or
// /v3/lease/keepalive until its client goes away -- holds one HTTP/2 stream
// of that connection, and a request beyond the limit waits for a stream to
// free (grpc-go's stream quota). etcd's e2e tests TestV3Curl_MaxStreams_*
// check exactly that: with N watches open and the limit N, a range waits
// (curl times out). We keep the wait and bound it.
//
//   auto streams = std::make_shared<GatewayStreams>(
//       GatewayStreams::Options{.limit = 3}, clock, submit);
//   // in a route's handler:
//   streams->Run(std::move(r), deadline, [](ResponderPtr r) { ... });
//
// A request gets a slot at once when one is free; else it waits, in
// arrival order, until (a) a slot frees: its handler then runs on `submit`;
// (b) its client goes away: it is dropped; (c) the client's deadline
// (grpc-gateway's Grpc-Timeout header) passes: 504, code 4 "context
// deadline exceeded", as etcd; or (d) it has waited Options::max_wait: 503,
// code 14, naming the limit (etcd would wait as long as the client does).
// The handler receives a Responder that forwards to the request's own and
// frees the slot when the exchange is over (answered, or the connection
// closed); the handler may set its own OnClose on it as usual. Waiters are
// bounded by the listener's connections (one request at a time each).
//
// Ownership: shared; handlers hold references. The owner calls Shutdown()
// from its controlling thread before it lets go (it joins the timer
// thread; a timer must not drop the last reference). Thread-safety: Run()
// from any thread. Errors: answered on the Responder as above.
#ifndef KPLANE_STORAGE_SERVER_GATEWAY_STREAMS_H_
#define KPLANE_STORAGE_SERVER_GATEWAY_STREAMS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "base/clock.h"
#include "base/mutex.h"
#include "net/http_server.h"
#include "storage/server/call_deadlines.h"

namespace kplane::storage {

class GatewayStreams : public std::enable_shared_from_this<GatewayStreams> {
 public:
  struct Options {
    uint32_t limit = 0;  // streams in flight; 0: no limit (Run is a call)
    Duration max_wait = seconds(60);  // the request timeout of docs/limits.md
  };
  using ResponderPtr = std::shared_ptr<net::Responder>;
  using Handler = std::function<void(ResponderPtr)>;
  using Executor = std::function<void(std::function<void()>)>;

  // `submit` runs a waiter's handler off the thread that freed its slot.
  GatewayStreams(Options options, Clock* clock, Executor submit);
  GatewayStreams(const GatewayStreams&) = delete;
  GatewayStreams& operator=(const GatewayStreams&) = delete;

  // Runs `handler` for `r` now (inline) or once a slot is free, as above.
  void Run(ResponderPtr r, std::optional<TimePoint> deadline, Handler handler)
      EXCLUDES(mu_);

  // Stops the timers (waiters then wait for a slot or their client only).
  // Not from a handler or a callback. Idempotent.
  void Shutdown() EXCLUDES(mu_);

  Clock* clock() const { return clock_; }

  // For tests and metrics.
  uint32_t in_use() const EXCLUDES(mu_);
  size_t waiting() const EXCLUDES(mu_);

 private:
  class Waiter;
  class SlotResponder;
  friend class Waiter;

  // Starts `handler` on a slot already counted in in_use_.
  void Start(ResponderPtr r, const Handler& handler);
  // A slot's exchange ended: hands the slot to the first waiter or frees it.
  void Release() EXCLUDES(mu_);
  // `w` stops waiting (client gone or timed out): false if it has a slot
  // already (or stopped waiting before).
  bool Forget(Waiter* w) EXCLUDES(mu_);

  const Options options_;
  Clock* const clock_;
  const Executor submit_;
  mutable Mutex mu_;
  // The waiters' time limits; null after Shutdown(). Add() under mu_ (its
  // lock is a leaf; its thread calls back outside it).
  std::unique_ptr<CallDeadlines> deadlines_ GUARDED_BY(mu_);
  uint32_t in_use_ GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;
  // Arrival order; a waiter leaves when it gets a slot or stops waiting.
  std::map<uint64_t, std::shared_ptr<Waiter>> waiters_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_GATEWAY_STREAMS_H_
