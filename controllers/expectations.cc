#include "controllers/expectations.h"

namespace kplane::controllers {

void ControllerExpectations::ExpectCreations(const std::string& key,
                                             int count) {
  MutexLock l(&mu_);
  Entry& e = entries_[key];
  e.adds += count;
  e.set_at = clock_->Now();
}

void ControllerExpectations::ExpectDeletions(
    const std::string& key, const std::set<std::string>& dependent_keys) {
  MutexLock l(&mu_);
  Entry& e = entries_[key];
  e.deletes.insert(dependent_keys.begin(), dependent_keys.end());
  e.set_at = clock_->Now();
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
