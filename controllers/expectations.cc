#include "controllers/expectations.h"

namespace kplane::controllers {

void ControllerExpectations::SetExpectations(
    const std::string& key, int creations,
    const std::set<std::string>& dependent_keys) {
  MutexLock l(&mu_);
  // Replaced, not added to (kube's SetExpectations): callers set them only
  // once the previous ones are met or expired, and what an expired round
  // never saw must not be owed by the next.
  entries_[key] = Entry{
      .adds = creations, .deletes = dependent_keys, .set_at = clock_->Now()};
}

void ControllerExpectations::CreationObserved(const std::string& key) {
  MutexLock l(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.adds > 0) --it->second.adds;
}

void ControllerExpectations::DeletionObserved(
    const std::string& key, const std::string& dependent_key) {
  MutexLock l(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) it->second.deletes.erase(dependent_key);
}

bool ControllerExpectations::Satisfied(const std::string& key) const {
  MutexLock l(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return true;
  const Entry& e = it->second;
  if (e.adds <= 0 && e.deletes.empty()) return true;
  return clock_->Now() - e.set_at >= timeout_;
}

void ControllerExpectations::Forget(const std::string& key) {
  MutexLock l(&mu_);
  entries_.erase(key);
}

}  // namespace kplane::controllers
