#include "storage/server/gateway_streams.h"

#include <string>
#include <utility>

#include "storage/etcdjson/etcd_json.h"
#include "storage/server/election_lock.h"

namespace kplane::storage {

namespace {

const net::HttpHeaders& JsonHeaders() {
  static const net::HttpHeaders* h =
      new net::HttpHeaders{{"Content-Type", "application/json"}};
  return *h;
}

}  // namespace

// A request waiting for a slot. Lives in waiters_ while it waits; the
// close hook and the timer hold it weakly.
class GatewayStreams::Waiter : public PendingCall {
 public:
  Waiter(std::weak_ptr<GatewayStreams> owner, ResponderPtr r, Handler handler,
         bool client_deadline)
      : owner_(std::move(owner)),
        r_(std::move(r)),
        handler_(std::move(handler)),
        client_deadline_(client_deadline) {}

  // The client went away (kCancelled) or a time limit passed.
  void Cancel(Status why) override {
    std::shared_ptr<GatewayStreams> owner = owner_.lock();
    if (!owner || !owner->Forget(this)) return;
    if (why.Is(StatusCode::kCancelled)) return;  // nobody to answer
    const int64_t ms =
        std::chrono::duration_cast<milliseconds>(owner->options_.max_wait)
            .count();
    const std::string waited = ms % 1000 == 0 ? std::to_string(ms / 1000) + "s"
                                              : std::to_string(ms) + "ms";
    const etcdjson::HttpError e =
        client_deadline_
            // grpc-gateway's answer when the call's context ends first.
            ? etcdjson::HttpError{504, etcdjson::kGrpcDeadlineExceeded,
                                  "context deadline exceeded"}
            : etcdjson::HttpError{
                  503, etcdjson::kGrpcUnavailable,
                  "etcdserver: the gateway's " +
                      std::to_string(owner->options_.limit) +
                      " streams (--max-concurrent-streams) stayed busy for " +
                      waited};
    r_->Respond(e.http_status, JsonHeaders(), e.Body());
  }

  const std::weak_ptr<GatewayStreams> owner_;
  const ResponderPtr r_;
  const Handler handler_;
  const bool client_deadline_;  // the client's deadline ends the wait
  // Guarded by the owner's mu_.
  uint64_t seq_ = 0;   // its key in waiters_ once queued
  bool gone_ = false;  // stopped waiting
};

// The handler's view of the request: every call goes to the request's own
// Responder, but OnClose, which the slot's release hook occupies there.
class GatewayStreams::SlotResponder : public net::Responder {
 public:
  explicit SlotResponder(ResponderPtr inner) : inner_(std::move(inner)) {}

  // The exchange is over: runs the handler's OnClose callback, if any.
  void Closed() EXCLUDES(mu_) {
    std::function<void()> cb;
    {
      MutexLock l(&mu_);
      closed_ = true;
      cb = std::move(on_close_);
      on_close_ = nullptr;
    }
    if (cb) cb();
  }

  const net::HttpRequest& request() const override { return inner_->request(); }
  bool Respond(int status, net::HttpHeaders headers,
               std::string body) override {
    return inner_->Respond(status, std::move(headers), std::move(body));
  }
  bool StartStream(int status, net::HttpHeaders headers) override {
    return inner_->StartStream(status, std::move(headers));
  }
  bool Write(std::string_view chunk) override { return inner_->Write(chunk); }
  bool WriteChunks(std::span<const std::string_view> chunks) override {
    return inner_->WriteChunks(chunks);
  }
  bool Finish() override { return inner_->Finish(); }
  size_t BufferedBytes() const override { return inner_->BufferedBytes(); }
  void SetMaxBufferedBytes(size_t max_bytes) override {
    inner_->SetMaxBufferedBytes(max_bytes);
  }
  void SetResponseDeadline(Duration timeout) override {
    inner_->SetResponseDeadline(timeout);
  }
  void OnDrained(size_t low_water, std::function<void()> callback) override {
    inner_->OnDrained(low_water, std::move(callback));
  }
  void OnClose(std::function<void()> callback) override EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (!closed_) {
        on_close_ = std::move(callback);
        return;
      }
    }
    // Over already: the request's Responder schedules it at once, on a
    // worker, as the contract says.
    inner_->OnClose(std::move(callback));
  }
  bool IsClosed() const override { return inner_->IsClosed(); }
  void OnBodyData(
      std::function<void(std::string_view data, bool eof)> fn) override {
    inner_->OnBodyData(std::move(fn));
  }
  void Close() override { inner_->Close(); }

 private:
  const ResponderPtr inner_;
  Mutex mu_;
  bool closed_ GUARDED_BY(mu_) = false;
  std::function<void()> on_close_ GUARDED_BY(mu_);
};

GatewayStreams::GatewayStreams(Options options, Clock* clock, Executor submit)
    : options_(options),
      clock_(clock),
      submit_(std::move(submit)),
      deadlines_(std::make_unique<CallDeadlines>(clock)) {}

void GatewayStreams::Shutdown() {
  std::unique_ptr<CallDeadlines> d;
  {
    MutexLock l(&mu_);
    d = std::move(deadlines_);
  }
  d.reset();  // joins the timer thread, outside mu_ (its callbacks take it)
}

void GatewayStreams::Run(ResponderPtr r, std::optional<TimePoint> deadline,
                         Handler handler) {
  if (options_.limit == 0) {
    handler(std::move(r));
    return;
  }
  {
    MutexLock l(&mu_);
    if (in_use_ < options_.limit) {
      ++in_use_;
      l.Unlock();
      Start(std::move(r), handler);
      return;
    }
  }
  const TimePoint cap = clock_->Now() + options_.max_wait;
  const bool client_first = deadline && *deadline <= cap;
  auto w = std::make_shared<Waiter>(weak_from_this(), r, std::move(handler),
                                    client_first);
  // The close hook goes in before the waiter is queued, so that the hook
  // Start() sets once the waiter has a slot replaces it, never the reverse.
  std::weak_ptr<Waiter> weak = w;
  r->OnClose([weak] {
    if (auto w = weak.lock()) w->Cancel(CancelledError("context canceled"));
  });
  MutexLock l(&mu_);
  if (w->gone_) return;  // the client has gone already
  if (in_use_ < options_.limit) {
    // A slot freed meanwhile.
    ++in_use_;
    w->gone_ = true;
    l.Unlock();
    Start(std::move(r), w->handler_);
    return;
  }
  w->seq_ = ++next_seq_;
  waiters_.emplace(w->seq_, w);
  if (deadlines_) deadlines_->Add(client_first ? *deadline : cap, w);
}

void GatewayStreams::Start(ResponderPtr r, const Handler& handler) {
  auto slot = std::make_shared<SlotResponder>(r);
  // Runs once the exchange is over (answered, or the connection closed);
  // replaces a waiter's hook. The Responder drops it then, which ends the
  // cycle r -> hook -> slot -> r.
  r->OnClose([self = shared_from_this(), slot] {
    self->Release();
    slot->Closed();
  });
  handler(std::move(slot));
}

void GatewayStreams::Release() {
  std::shared_ptr<Waiter> next;
  {
    MutexLock l(&mu_);
    if (waiters_.empty()) {
      --in_use_;
      return;
    }
    // The slot passes to the first waiter: in_use_ stays.
    next = std::move(waiters_.begin()->second);
    waiters_.erase(waiters_.begin());
    next->gone_ = true;
  }
  submit_([self = shared_from_this(), next] {
    self->Start(next->r_, next->handler_);
  });
}

bool GatewayStreams::Forget(Waiter* w) {
  MutexLock l(&mu_);
  if (w->gone_) return false;
  w->gone_ = true;
  if (w->seq_ != 0) waiters_.erase(w->seq_);
  return true;
}

uint32_t GatewayStreams::in_use() const {
  MutexLock l(&mu_);
  return in_use_;
}

size_t GatewayStreams::waiting() const {
  MutexLock l(&mu_);
  return waiters_.size();
}

}  // namespace kplane::storage
