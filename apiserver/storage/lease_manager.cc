#include "apiserver/storage/lease_manager.h"

#include <algorithm>

namespace kplane::apiserver {

LeaseManager::LeaseManager(storage::KV* kv, Clock* clock,
                           int64_t max_extra_seconds, double extra_fraction)
    : kv_(kv),
      clock_(clock),
      max_extra_seconds_(max_extra_seconds),
      extra_fraction_(extra_fraction) {}

int64_t LeaseManager::ExtraSeconds(int64_t ttl) const {
  return std::min(max_extra_seconds_,
                  static_cast<int64_t>(extra_fraction_ * ttl));
}

StatusOr<int64_t> LeaseManager::GetLease(int64_t ttl_seconds) {
  MutexLock l(&mu_);
  const TimePoint now = clock_->Now();
  const int64_t extra = ExtraSeconds(ttl_seconds);
  auto it = by_ttl_.find(ttl_seconds);
  if (it != by_ttl_.end()) {
    const Granted& g = it->second;
    bool outlives = now + seconds(ttl_seconds) < g.expires;
    bool not_too_long = now + seconds(ttl_seconds + extra) > g.expires;
    if (outlives && not_too_long) return g.id;
  }
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds + extra);
  ASSIGN_OR_RETURN(etcdserverpb::LeaseGrantResponse resp, kv_->LeaseGrant(req));
  if (!resp.error().empty()) return InternalError(resp.error());
  by_ttl_[ttl_seconds] = Granted{resp.id(), now + seconds(ttl_seconds + extra)};
  return resp.id();
}

}  // namespace kplane::apiserver
