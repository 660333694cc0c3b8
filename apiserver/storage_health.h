// StorageHealth: the API server's view of its store's health, for /readyz
// (kube-apiserver's "etcd" readiness check).
//
// Kubernetes checks etcd by reading `<prefix>/health` through its client
// with a timeout; a failed or late read makes /readyz fail. Here a probe
// thread does that every `interval` -- a linearizable Range of
// `<prefix>/health` (so a store without a leader, or one whose apply is
// stuck, fails it) -- and then asks the store's status for active alarms
// (CORRUPT, NOSPACE: the store refuses writes then, so the API server is
// not ready to serve them). /readyz reads the last result, never waits:
//
//   ok       the last probe passed and is younger than `stale_after`;
//   failed   it failed (the error is reported), or no probe answered
//            for `stale_after` (a hung store), or none ran yet.
//
// Ownership: borrows the KV, which must outlive it.
// Thread-safety: Start/Stop from one thread; Check from any.
#ifndef KPLANE_APISERVER_STORAGE_HEALTH_H_
#define KPLANE_APISERVER_STORAGE_HEALTH_H_

#include <condition_variable>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "storage/kv.h"

namespace kplane::apiserver {

struct StorageHealthOptions {
  storage::KV* kv = nullptr;
  std::string storage_prefix = "/registry";
  Duration interval = seconds(1);
  // A result older than this no longer counts (kube's etcd health timeout
  // is 2 s; a probe may take that long and then some).
  Duration stale_after = seconds(5);
  Clock* clock = Clock::Real();
};

class StorageHealth {
 public:
  explicit StorageHealth(StorageHealthOptions options);
  ~StorageHealth();  // Stop()s
  StorageHealth(const StorageHealth&) = delete;
  StorageHealth& operator=(const StorageHealth&) = delete;

  // Probes once (blocking), then every interval on a thread.
  void Start() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

  // OK when ready; else why not (for /readyz's "[-]etcd failed: ...").
  Status Check() const EXCLUDES(mu_);

 private:
  Status ProbeOnce();
  void Loop() EXCLUDES(mu_);

  const StorageHealthOptions options_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool probed_ GUARDED_BY(mu_) = false;
  Status last_ GUARDED_BY(mu_);
  TimePoint last_at_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_STORAGE_HEALTH_H_
