#include "storage/client/lease_keepalive.h"

namespace kplane::storage {

KeepAliveLoop::KeepAliveLoop(KV* kv, int64_t lease_id, KeepAliveOptions options)
    : kv_(kv),
      lease_id_(lease_id),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : Clock::Real()) {
  thread_ = std::thread([this] { Run(); });
}

KeepAliveLoop::~KeepAliveLoop() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void KeepAliveLoop::Stop() {
  MutexLock l(&mu_);
  stop_ = true;
  cv_.notify_all();
  // A callback already running finishes first (the contract: none runs
  // after Stop returns) -- unless that callback is the caller.
  if (std::this_thread::get_id() == loop_thread_) return;
  cv_.wait(l.native(), [&]() REQUIRES(mu_) { return !in_callback_; });
}

bool KeepAliveLoop::EnterCallback() {
  MutexLock l(&mu_);
  if (stop_) return false;
  in_callback_ = true;
  return true;
}

void KeepAliveLoop::LeaveCallback() {
  MutexLock l(&mu_);
  in_callback_ = false;
  cv_.notify_all();
}

Status KeepAliveLoop::Wait() {
  MutexLock l(&mu_);
  cv_.wait(l.native(), [&]() REQUIRES(mu_) { return done_; });
  return result_;
}

int64_t KeepAliveLoop::renewals() const {
  MutexLock l(&mu_);
  return renewals_;
}

void KeepAliveLoop::Run() {
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(lease_id_);
  Status result;
  bool reported_error = false;
  {
    MutexLock l(&mu_);
    loop_thread_ = std::this_thread::get_id();
  }
  for (;;) {
    {
      MutexLock l(&mu_);
      if (stop_) break;
    }
    StatusOr<etcdserverpb::LeaseKeepAliveResponse> r = kv_->LeaseKeepAlive(req);
    Duration next;
    if (r.ok()) {
      reported_error = false;
      {
        MutexLock l(&mu_);
        ++renewals_;
      }
      if (!EnterCallback()) break;
      if (options_.on_renewed) options_.on_renewed(*r);
      LeaveCallback();
      // etcd's clientv3 renews after TTL/3; never spin on a tiny TTL.
      next = std::max<Duration>(seconds(r->ttl()) / 3, milliseconds(100));
    } else if (r.status().code() == StatusCode::kNotFound) {
      result = r.status();
      break;
    } else {
      if (!EnterCallback()) break;
      if (!reported_error && options_.on_error) options_.on_error(r.status());
      LeaveCallback();
      reported_error = true;
      next = options_.retry_interval;
    }
    MutexLock l(&mu_);
    clock_->WaitFor(l.native(), cv_, next,
                    [&]() REQUIRES(mu_) { return stop_; });
  }
  MutexLock l(&mu_);
  done_ = true;
  result_ = result;
  cv_.notify_all();
}

}  // namespace kplane::storage
