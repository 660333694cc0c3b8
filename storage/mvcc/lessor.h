// Lessor: the storage-level lease table (etcd's lessor). A lease has an ID,
// a TTL and a set of attached keys; revoking it deletes those keys in one
// revision. Expiry is tracked on the injected monotonic Clock but never acted
// on here: ExpiredLeases() reports what is due and the owner revokes it
// (the replicated server lets only the leader do that, through a proposal).
//
// Primary vs not: only a primary lessor (the leader's) counts time. A lessor
// starts demoted, when every lease is "forever"; Promote(extend) resets every
// expiry to now + TTL + extend, Demote() makes them forever again.
//
// Persistence is the owner's: the lessor calls a LeaseBackend (defined here,
// because the lessor is the consumer, as etcd's RangeDeleter) to save a
// granted lease and to delete a revoked lease together with its keys in one
// atomic write. Attach/Detach only update memory; the key-value store
// persists attachments with the key writes that cause them.
//
// Ownership: the lessor borrows the clock and the backend; both must outlive
// it.
//
// Thread-safety: all methods are safe to call concurrently. Grant and Revoke
// call the backend without holding the lessor's lock, so the backend may call
// Attach/Detach; the owner serializes Grant/Revoke against key writes (the
// store calls them under its write lock).
// Lock order: the owner's lock (the store's write_mu_) -> mu_. Grant holds
// mu_ while it calls the backend's SaveLease, which must not call back.
//
// Errors (etcd's texts): NotFound "etcdserver: requested lease not found",
// FailedPrecondition "etcdserver: lease already exists", OutOfRange
// "etcdserver: too large lease TTL", NotLeader for KeepAlive on a demoted
// lessor.
#ifndef KPLANE_STORAGE_MVCC_LESSOR_H_
#define KPLANE_STORAGE_MVCC_LESSOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/statusor.h"

namespace kplane::mvcc {

// Seconds; etcd's limits.
inline constexpr int64_t kMinLeaseTTL = 2;
inline constexpr int64_t kMaxLeaseTTL = 9'000'000'000;

// What the lessor needs from the store that persists it.
class LeaseBackend {
 public:
  virtual ~LeaseBackend() = default;
  // Persists a newly granted lease.
  virtual Status SaveLease(int64_t id, int64_t ttl,
                           uint64_t consistent_index) = 0;
  // Deletes `keys` (sorted, all attached to the lease) in one revision (none
  // if empty) and the lease record, in one atomic write.
  virtual Status DeleteLeaseAndKeys(int64_t id,
                                    const std::vector<std::string>& keys,
                                    uint64_t consistent_index) = 0;
};

struct LeaseInfo {
  int64_t id = 0;
  int64_t ttl = 0;        // granted TTL, seconds
  int64_t remaining = 0;  // seconds left, truncated; ttl when not primary
  std::vector<std::string> keys;  // sorted; filled when asked for
};

class Lessor {
 public:
  // How long a lease reported by ExpiredLeases() is held back before it is
  // reported again (the revoke proposal may still be in flight), as etcd.
  static constexpr Duration kExpiredRetryInterval = seconds(3);

  Lessor(Clock* clock, LeaseBackend* backend);
  Lessor(const Lessor&) = delete;
  Lessor& operator=(const Lessor&) = delete;

  // Grants lease `id` (non-zero) with `ttl` seconds, raised to kMinLeaseTTL.
  // Returns the effective TTL.
  StatusOr<int64_t> Grant(int64_t id, int64_t ttl, uint64_t consistent_index)
      EXCLUDES(mu_);
  // Deletes the lease and every key attached to it.
  Status Revoke(int64_t id, uint64_t consistent_index) EXCLUDES(mu_);
  // Restarts the lease's countdown; returns its TTL. Primary only. An
  // expired lease that waits for its revoke is NotFound (etcd waits for the
  // revoke instead; we never block).
  StatusOr<int64_t> KeepAlive(int64_t id) EXCLUDES(mu_);

  bool Exists(int64_t id) const EXCLUDES(mu_);
  std::optional<LeaseInfo> Lookup(int64_t id, bool with_keys) const
      EXCLUDES(mu_);
  std::vector<int64_t> Leases() const EXCLUDES(mu_);  // sorted IDs

  // Key bookkeeping, called by the store after a write commits.
  void Attach(int64_t id, const std::string& key) EXCLUDES(mu_);
  void Detach(int64_t id, const std::string& key) EXCLUDES(mu_);

  // Startup: re-creates a persisted lease (demoted: no expiry).
  void Restore(int64_t id, int64_t ttl) EXCLUDES(mu_);

  void Promote(Duration extend) EXCLUDES(mu_);
  void Demote() EXCLUDES(mu_);
  bool IsPrimary() const EXCLUDES(mu_);

  // Leases whose expiry has passed (primary only), at most `limit`, soonest
  // first. Each is reported again only after kExpiredRetryInterval.
  std::vector<int64_t> ExpiredLeases(size_t limit) EXCLUDES(mu_);

  size_t NumLeases() const EXCLUDES(mu_);

 private:
  struct Lease {
    int64_t ttl = 0;
    std::optional<TimePoint> expiry;  // nullopt: forever (not primary)
    // When ExpiredLeases() may report it next: the expiry, pushed back by
    // kExpiredRetryInterval each time it is reported. Valid with expiry.
    TimePoint report_at;
    std::set<std::string> keys;
  };

  void SetExpiryLocked(int64_t id, Lease* l, std::optional<TimePoint> expiry)
      REQUIRES(mu_);

  Clock* const clock_;
  LeaseBackend* const backend_;

  mutable Mutex mu_;
  bool primary_ GUARDED_BY(mu_) = false;
  std::unordered_map<int64_t, Lease> leases_ GUARDED_BY(mu_);
  // (report_at, id) for every lease with an expiry, soonest first.
  std::set<std::pair<TimePoint, int64_t>> by_expiry_ GUARDED_BY(mu_);
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_LESSOR_H_
