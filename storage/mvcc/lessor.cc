#include "storage/mvcc/lessor.h"

#include <algorithm>

#include "base/logging.h"

namespace kplane::mvcc {
namespace {

Status LeaseNotFound() {
  return NotFoundError("etcdserver: requested lease not found");
}

// Go's int64(d.Seconds()): truncation toward zero.
int64_t TruncatedSeconds(Duration d) {
  return std::chrono::duration_cast<seconds>(d).count();
}

}  // namespace

Lessor::Lessor(Clock* clock, LeaseBackend* backend)
    : clock_(clock), backend_(backend) {}

void Lessor::SetExpiryLocked(int64_t id, Lease* l,
                             std::optional<TimePoint> expiry) {
  if (l->expiry) by_expiry_.erase({l->report_at, id});
  l->expiry = expiry;
  if (l->expiry) {
    l->report_at = *expiry;
    by_expiry_.insert({l->report_at, id});
  }
}

StatusOr<int64_t> Lessor::Grant(int64_t id, int64_t ttl,
                                uint64_t consistent_index) {
  if (id == 0) return LeaseNotFound();
  if (ttl > kMaxLeaseTTL) {
    return OutOfRangeError("etcdserver: too large lease TTL");
  }
  ttl = std::max(ttl, kMinLeaseTTL);
  // The backend's SaveLease never calls back into the lessor, so holding the
  // lock across it makes check-and-insert atomic.
  MutexLock l(&mu_);
  if (leases_.count(id) != 0) {
    return FailedPreconditionError("etcdserver: lease already exists");
  }
  RETURN_IF_ERROR(backend_->SaveLease(id, ttl, consistent_index));
  Lease& lease = leases_[id];
  lease.ttl = ttl;
  if (primary_) {
    SetExpiryLocked(id, &lease, clock_->Now() + seconds(ttl));
  }
  return ttl;
}

Status Lessor::Revoke(int64_t id, uint64_t consistent_index) {
  std::vector<std::string> keys;
  {
    MutexLock l(&mu_);
    auto it = leases_.find(id);
    if (it == leases_.end()) return LeaseNotFound();
    // Sorted, so every replica deletes in the same order (same sub
    // revisions, same hash).
    keys.assign(it->second.keys.begin(), it->second.keys.end());
  }
  // Without the lock: the backend detaches each deleted key.
  RETURN_IF_ERROR(backend_->DeleteLeaseAndKeys(id, keys, consistent_index));
  MutexLock l(&mu_);
  auto it = leases_.find(id);
  if (it != leases_.end()) {
    SetExpiryLocked(id, &it->second, std::nullopt);
    leases_.erase(it);
  }
  return Status::Ok();
}

StatusOr<int64_t> Lessor::KeepAlive(int64_t id) {
  MutexLock l(&mu_);
  if (!primary_) return NotLeaderError(0);
  auto it = leases_.find(id);
  if (it == leases_.end()) return LeaseNotFound();
  Lease& lease = it->second;
  TimePoint now = clock_->Now();
  if (lease.expiry && *lease.expiry <= now) return LeaseNotFound();
  SetExpiryLocked(id, &lease, now + seconds(lease.ttl));
  return lease.ttl;
}

bool Lessor::Exists(int64_t id) const {
  MutexLock l(&mu_);
  return leases_.count(id) != 0;
}

std::optional<LeaseInfo> Lessor::Lookup(int64_t id, bool with_keys) const {
  MutexLock l(&mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) return std::nullopt;
  const Lease& lease = it->second;
  LeaseInfo info;
  info.id = id;
  info.ttl = lease.ttl;
  info.remaining = lease.expiry
                       ? TruncatedSeconds(*lease.expiry - clock_->Now())
                       : lease.ttl;
  if (with_keys) info.keys.assign(lease.keys.begin(), lease.keys.end());
  return info;
}

std::vector<int64_t> Lessor::Leases() const {
  MutexLock l(&mu_);
  std::vector<int64_t> ids;
  ids.reserve(leases_.size());
  for (const auto& [id, lease] : leases_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void Lessor::Attach(int64_t id, const std::string& key) {
  MutexLock l(&mu_);
  auto it = leases_.find(id);
  // The store checks existence under its write lock before writing, so a
  // missing lease here is a broken invariant.
  CHECK(it != leases_.end()) << "attach to unknown lease " << id;
  it->second.keys.insert(key);
}

void Lessor::Detach(int64_t id, const std::string& key) {
  MutexLock l(&mu_);
  auto it = leases_.find(id);
  if (it != leases_.end()) it->second.keys.erase(key);
}

void Lessor::Restore(int64_t id, int64_t ttl) {
  MutexLock l(&mu_);
  Lease& lease = leases_[id];
  lease.ttl = ttl;
  SetExpiryLocked(id, &lease,
                  primary_
                      ? std::optional<TimePoint>(clock_->Now() + seconds(ttl))
                      : std::nullopt);
}

void Lessor::Promote(Duration extend) {
  MutexLock l(&mu_);
  primary_ = true;
  TimePoint now = clock_->Now();
  for (auto& [id, lease] : leases_) {
    SetExpiryLocked(id, &lease, now + seconds(lease.ttl) + extend);
  }
}

void Lessor::Demote() {
  MutexLock l(&mu_);
  primary_ = false;
  for (auto& [id, lease] : leases_) SetExpiryLocked(id, &lease, std::nullopt);
}

bool Lessor::IsPrimary() const {
  MutexLock l(&mu_);
  return primary_;
}

std::vector<int64_t> Lessor::ExpiredLeases(size_t limit) {
  MutexLock l(&mu_);
  std::vector<int64_t> due;
  if (!primary_) return due;
  TimePoint now = clock_->Now();
  while (due.size() < limit && !by_expiry_.empty() &&
         by_expiry_.begin()->first <= now) {
    int64_t id = by_expiry_.begin()->second;
    due.push_back(id);
    Lease& lease = leases_.at(id);
    // The expiry stays in the past (KeepAlive refuses, TimeToLive reports
    // it); only the next report moves.
    by_expiry_.erase(by_expiry_.begin());
    lease.report_at = now + kExpiredRetryInterval;
    by_expiry_.insert({lease.report_at, id});
  }
  return due;
}

size_t Lessor::NumLeases() const {
  MutexLock l(&mu_);
  return leases_.size();
}

}  // namespace kplane::mvcc
