#include "apiserver/watch_sink.h"

namespace kplane::apiserver {

HttpWatchSink::HttpWatchSink(std::shared_ptr<net::Responder> responder,
                             net::HttpHeaders headers, RenderOptions render,
                             Clock* clock, metrics::Counter* events_sent,
                             size_t pace_bytes, WatchBufferBudget* budget)
    : responder_(std::move(responder)),
      headers_(std::move(headers)),
      render_(std::move(render)),
      key_(WatchFormatKey(render_, /*first=*/false)),
      first_key_(WatchFormatKey(render_, /*first=*/true)),
      clock_(clock),
      events_sent_(events_sent),
      pace_bytes_(pace_bytes),
      budget_(budget) {}

bool HttpWatchSink::Ready() {
  return pace_bytes_ == 0 || responder_->BufferedBytes() < pace_bytes_;
}

void HttpWatchSink::NotifyWhenReady(std::function<void()> wake) {
  // Half the allowance: a client that reads gets a few frames per wake-up,
  // not one.
  responder_->OnDrained(pace_bytes_ / 2, std::move(wake));
}

void HttpWatchSink::EnsureStartedLocked() {
  if (started_) return;
  started_ = true;
  responder_->StartStream(200, headers_);
}

void HttpWatchSink::StartNow() {
  MutexLock l(&mu_);
  if (!ended_) EnsureStartedLocked();
}

bool HttpWatchSink::Abort() {
  MutexLock l(&mu_);
  if (started_) return false;
  ended_ = true;
  return true;
}

bool HttpWatchSink::Send(const WatchEventPtr& event) {
  bool first;
  {
    MutexLock l(&mu_);
    if (ended_) return false;
    EnsureStartedLocked();
    // Only object events count as "first" (they carry the Table columns);
    // a bookmark is never wrapped in a Table.
    first = first_ && event->type != WatchEventType::kBookmark;
    if (first) first_ = false;
  }
  std::shared_ptr<const std::string> frame = event->Encoded(
      first ? first_key_ : key_, [this, first](const WatchEvent& e) {
        // The first watcher of this format encodes it; `now` only matters
        // to a Table's AGE cells.
        RenderOptions render = render_;
        render.now = clock_->WallNow();
        return RenderWatchEvent(render, e, first);
      });
  if (!responder_->Write(*frame)) return false;
  if (budget_ != nullptr) budget_->Charge(frame->size());
  if (events_sent_ != nullptr) events_sent_->Inc();
  return true;
}

void HttpWatchSink::Close(const Status& reason) {
  {
    MutexLock l(&mu_);
    if (ended_) return;
    ended_ = true;
    EnsureStartedLocked();
  }
  if (!reason.ok()) {
    ApiError e = ApiError::FromStatus(reason);
    if (reason.Is(StatusCode::kResourceExhausted)) {
      // A watcher too slow for the cache: drop the connection, which frees
      // its unsent buffer at once (a final chunk would wait behind it); the
      // client re-watches or relists.
      responder_->Close();
      return;
    }
    responder_->Write(RenderWatchError(render_, e));
  }
  responder_->Finish();
}

void HttpWatchSink::SetHandle(std::unique_ptr<WatchHandle> handle) {
  {
    MutexLock l(&mu_);
    if (!ended_ && !responder_->IsClosed()) {
      handle_ = std::move(handle);
      return;
    }
  }
  handle.reset();  // outside the lock: the cacher may be calling Send
}

void HttpWatchSink::ClientGone() {
  std::unique_ptr<WatchHandle> handle;
  {
    MutexLock l(&mu_);
    ended_ = true;
    handle = std::move(handle_);
  }
  handle.reset();
}

}  // namespace kplane::apiserver
