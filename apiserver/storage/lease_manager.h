// LeaseManager: the storage leases behind objects written with a TTL
// (events, on create and on every update), shared between objects whose
// expiry falls in the same window, as kube-apiserver's etcd3 leaseManager
// does. Granting a lease is a raft proposal; without sharing, 10,000
// events would make 10,000 leases and 10,000 expiry revocations.
//
// A lease for `ttl` is granted for ttl + extra seconds, extra = min(60 s,
// 5% of ttl), and reused by every later request with the same ttl while the
// lease still outlives it (now + ttl < expiry) and does not outlive it by
// more than extra (now + ttl + extra > expiry). So an object lives between
// ttl and ttl + extra seconds.
//
// Worked example, ttl = 3600 (events), extra = min(60, 180) = 60:
//   t=0    no lease for 3600: grant 3660 s -> L1, expires at 3660
//   t=30   30+3600 = 3630 < 3660 and 30+3660 = 3690 > 3660: reuse L1
//   t=59   3659 < 3660: reuse L1
//   t=61   3661 >= 3660: L1 would die too early; grant L2 (expires 3721)
// One lease per minute of events. With ttl = 2 (tests), extra = 0 and every
// create gets its own lease.
//
// Thread-safety: GetLease may be called concurrently (it serializes grants).
// Errors: whatever KV::LeaseGrant returns.
#ifndef KPLANE_APISERVER_STORAGE_LEASE_MANAGER_H_
#define KPLANE_APISERVER_STORAGE_LEASE_MANAGER_H_

#include <cstdint>
#include <map>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/statusor.h"
#include "storage/kv.h"

namespace kplane::apiserver {

class LeaseManager {
 public:
  LeaseManager(storage::KV* kv, Clock* clock, int64_t max_extra_seconds = 60,
               double extra_fraction = 0.05);

  // A lease id that keeps a key alive for at least `ttl_seconds` (> 0).
  StatusOr<int64_t> GetLease(int64_t ttl_seconds);

 private:
  struct Granted {
    int64_t id = 0;
    TimePoint expires;
  };
  int64_t ExtraSeconds(int64_t ttl) const;

  storage::KV* kv_;
  Clock* clock_;
  int64_t max_extra_seconds_;
  double extra_fraction_;
  Mutex mu_;
  std::map<int64_t, Granted> by_ttl_ GUARDED_BY(mu_);
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_STORAGE_LEASE_MANAGER_H_
