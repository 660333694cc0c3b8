// HttpWatchSink: a watch cache watcher whose events go to an HTTP response
// stream (chunked, one frame per event, each written as soon as it
// arrives).
//
// The cacher calls Send() from its dispatch thread; Send never blocks: the
// frame is appended to the connection's output buffer. A client that does
// not keep up lets the buffer grow to its cap, at which point the
// connection is closed and Send returns false, so the cacher drops the
// watcher (the client relists) and nobody else waits.
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
// Thread-safety: all methods may be called from any thread.
#ifndef KPLANE_APISERVER_WATCH_SINK_H_
#define KPLANE_APISERVER_WATCH_SINK_H_

#include <atomic>
#include <memory>
#include <mutex>

#include "apiserver/cacher/cacher.h"
#include "apiserver/encoding.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "net/http_server.h"

namespace kplane::apiserver {

class HttpWatchSink : public WatchSink {
 public:
  HttpWatchSink(std::shared_ptr<net::Responder> responder, RenderOptions render,
                Clock* clock, metrics::Counter* events_sent);

  bool Send(const WatchEventPtr& event) override;
  void Close(const Status& reason) override;

  // The handle the cacher returned; destroyed at once if the watch already
  // ended.
  void SetHandle(std::unique_ptr<WatchHandle> handle);
  // The HTTP exchange is over (client gone, stream finished): stop the
  // watch.
  void ClientGone();

 private:
  std::shared_ptr<net::Responder> responder_;
  const RenderOptions render_;
  Clock* clock_;
  metrics::Counter* events_sent_;

  std::mutex mu_;
  bool first_ = true;
  bool ended_ = false;  // Close() ran or the client went away
  std::unique_ptr<WatchHandle> handle_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_WATCH_SINK_H_
