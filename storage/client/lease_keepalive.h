// KeepAliveLoop: keeps one lease alive until stopped, renewing it every
// TTL/3 (TTL as the store last reported it), as etcd's clientv3 does.
//
//   KeepAliveLoop loop(kv, lease_id, {
//       .on_renewed = [](const LeaseKeepAliveResponse& r) { ... }});
//   ...
//   Status why = loop.Wait();   // kNotFound once the lease expired or
//                               // was revoked; OK after Stop()
//
// The first renewal is sent at once. A failed round (no endpoint answered,
// a timeout) is retried every retry_interval; the loop gives up only when
// the store says the lease is gone (kNotFound) or when Stop() is called.
//
// Time goes through the injected Clock, so tests drive the rounds with a
// FakeClock (the loop waits on it between rounds).
//
// Ownership: `kv` must outlive the loop. Callbacks run on the loop's own
// thread, never after Stop() or the destructor returned.
// Thread-safety: Stop() and Wait() may be called from any thread.
#ifndef KPLANE_STORAGE_CLIENT_LEASE_KEEPALIVE_H_
#define KPLANE_STORAGE_CLIENT_LEASE_KEEPALIVE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "storage/kv.h"

namespace kplane::storage {

struct KeepAliveOptions {
  std::function<void(const etcdserverpb::LeaseKeepAliveResponse&)> on_renewed;
  // Called once when a round fails (the loop keeps trying).
  std::function<void(const Status&)> on_error;
  Duration retry_interval = milliseconds(500);
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

class KeepAliveLoop {
 public:
  KeepAliveLoop(KV* kv, int64_t lease_id, KeepAliveOptions options);
  ~KeepAliveLoop();
  KeepAliveLoop(const KeepAliveLoop&) = delete;
  KeepAliveLoop& operator=(const KeepAliveLoop&) = delete;

  // Ends the loop; idempotent. Waits for a callback that is running (unless
  // called from that callback).
  void Stop() EXCLUDES(mu_);
  // Blocks until the loop ends; returns kNotFound if the lease is gone, OK
  // if Stop() ended it.
  Status Wait() EXCLUDES(mu_);
  // Number of successful renewals so far.
  int64_t renewals() const EXCLUDES(mu_);

 private:
  void Run();
  // False once stopped; else marks a callback running until LeaveCallback.
  bool EnterCallback() EXCLUDES(mu_);
  void LeaveCallback() EXCLUDES(mu_);

  KV* const kv_;
  const int64_t lease_id_;
  const KeepAliveOptions options_;
  Clock* const clock_;
  mutable Mutex mu_;  // a leaf: callbacks and KV calls run without it
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool done_ GUARDED_BY(mu_) = false;
  Status result_ GUARDED_BY(mu_);
  int64_t renewals_ GUARDED_BY(mu_) = 0;
  bool in_callback_ GUARDED_BY(mu_) = false;
  std::thread::id loop_thread_ GUARDED_BY(mu_);  // Run()'s
  std::thread thread_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_CLIENT_LEASE_KEEPALIVE_H_
