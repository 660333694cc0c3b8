#include "apiserver/watch_budget.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace kplane::apiserver {

WatchBufferBudget::WatchBufferBudget(size_t max_total_bytes,
                                     metrics::Counter* closed)
    : max_total_(max_total_bytes), closed_(closed) {}

uint64_t WatchBufferBudget::Add(std::shared_ptr<net::Responder> member) {
  MutexLock l(&mu_);
  const uint64_t id = next_id_++;
  members_.emplace(id, std::move(member));
  return id;
}

void WatchBufferBudget::Remove(uint64_t id) {
  std::shared_ptr<net::Responder> gone;
  MutexLock l(&mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return;
  gone = std::move(it->second);
  members_.erase(it);
}

void WatchBufferBudget::Charge(size_t bytes) {
  if (max_total_ == 0) return;
  const size_t charged = charged_.fetch_add(bytes) + bytes;
  if (last_total_.load() + charged <= max_total_) return;
  Rebalance();
}

void WatchBufferBudget::Rebalance() {
  std::vector<std::shared_ptr<net::Responder>> victims;
  {
    MutexLock l(&mu_);
    // Re-check under the lock: another thread may have just summed.
    if (last_total_.load() + charged_.load() <= max_total_) return;
    charged_.store(0);
    std::vector<std::pair<size_t, net::Responder*>> sizes;
    sizes.reserve(members_.size());
    size_t total = 0;
    for (const auto& [id, r] : members_) {
      const size_t n = r->BufferedBytes();
      total += n;
      if (n > 0) sizes.emplace_back(n, r.get());
    }
    if (total > max_total_) {
      std::sort(sizes.begin(), sizes.end(),
                [](const auto& a, const auto& b) { return a.first > b.first; });
      std::unordered_map<net::Responder*, uint64_t> ids;
      for (const auto& [id, r] : members_) ids.emplace(r.get(), id);
      for (const auto& [n, r] : sizes) {
        if (total <= max_total_) break;
        total -= n;
        auto it = members_.find(ids[r]);
        victims.push_back(std::move(it->second));
        members_.erase(it);
      }
    }
    last_total_.store(total);
  }
  for (const std::shared_ptr<net::Responder>& r : victims) {
    r->Close();  // its OnClose ends the watch
    if (closed_ != nullptr) closed_->Inc();
  }
}

}  // namespace kplane::apiserver
