// HttpWatchSink: a watch cache watcher whose events go to an HTTP response
// stream (chunked, one frame per event, each written as soon as it
// arrives).
//
// The cacher calls Send() from its dispatch thread; Send never blocks: the
// frame is appended to the connection's output buffer. The sink is paced:
// it is Ready() while fewer than `pace_bytes` wait in that buffer, and
// wakes the cacher (NotifyWhenReady) once the client has read it down to
// half that. So a large initial replay goes out as fast as the client
// reads, and a client that does not read holds at most pace_bytes plus one
// event here; the cacher queues its later events and closes the watch when
// that queue is too long (Close(ResourceExhausted): the connection is
// dropped, freeing its buffer; the client re-watches or relists). Every
// frame is charged to the server's WatchBufferBudget (may be null), which
// may close the watches with the most unsent bytes.
//
// Close(): OK ends the stream cleanly (timeout, shutdown); Expired writes
// an ERROR event with a 410 Status ("too old resource version: N (M)") and
// ends it, as kube-apiserver does; other errors write an ERROR event with
// their mapped Status.
//
// Lifetime: shared by the cacher (as its sink) and the HTTP exchange (its
// OnClose callback calls ClientGone(), which destroys the watch handle so
// the cacher stops delivering).
//
// Thread-safety: all methods may be called from any thread (the cacher
// calls Send from its dispatch thread or a send helper, one at a time).
#ifndef KPLANE_APISERVER_WATCH_SINK_H_
#define KPLANE_APISERVER_WATCH_SINK_H_

#include <atomic>
#include <memory>

#include "apiserver/cacher/cacher.h"
#include "apiserver/encoding.h"
#include "apiserver/watch_budget.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "net/http_server.h"

namespace kplane::apiserver {

class HttpWatchSink : public WatchSink {
 public:
  // `headers` start the stream, sent with the first event or Close (so
  // that a watch the cache refuses before anything was sent can still be
  // answered with an HTTP error; see Abort()).
  HttpWatchSink(std::shared_ptr<net::Responder> responder,
                net::HttpHeaders headers, RenderOptions render, Clock* clock,
                metrics::Counter* events_sent, size_t pace_bytes = 0,
                WatchBufferBudget* budget = nullptr);

  bool Send(const WatchEventPtr& event) override;
  void Close(const Status& reason) override;
  bool Ready() override;
  void NotifyWhenReady(std::function<void()> wake) override;

  // Ends the watch before its stream started: true when nothing was sent
  // (the caller answers with an HTTP error), false when the stream is
  // already under way (the caller must Close() it instead).
  bool Abort();
  // Sends the stream head now if nothing did yet (the watch was accepted).
  void StartNow();
  // The handle the cacher returned; destroyed at once if the watch already
  // ended.
  void SetHandle(std::unique_ptr<WatchHandle> handle);
  // The HTTP exchange is over (client gone, stream finished): stop the
  // watch.
  void ClientGone();

 private:
  // Sends the stream head once (mu_ held).
  void EnsureStartedLocked() REQUIRES(mu_);

  std::shared_ptr<net::Responder> responder_;
  const net::HttpHeaders headers_;
  const RenderOptions render_;
  // WatchFormatKey(render_, first = false / true), made once: Send runs
  // once per event and watcher, the hot path of fan-out, and its frame is
  // almost always already encoded (WatchEvent::Encoded), so it should cost
  // a lookup, not a copy of the options and a key.
  const std::string key_;
  const std::string first_key_;
  Clock* clock_;
  metrics::Counter* events_sent_;
  const size_t pace_bytes_;  // 0: never paced
  WatchBufferBudget* const budget_;

  Mutex mu_;
  bool started_ GUARDED_BY(mu_) = false;
  bool first_ GUARDED_BY(mu_) = true;
  bool ended_ GUARDED_BY(mu_) = false;  // Close() ran or the client went away
  std::unique_ptr<WatchHandle> handle_ GUARDED_BY(mu_);
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_WATCH_SINK_H_
