#include "storage/server/leader_required_streams.h"

#include <utility>

namespace kplane::storage {

LeaderRequiredStreams::Id LeaderRequiredStreams::Add(
    std::function<void()> end) {
  MutexLock l(&mu_);
  const Id id = next_id_++;
  ends_.emplace(id, std::move(end));
  return id;
}

void LeaderRequiredStreams::Remove(Id id) {
  MutexLock l(&mu_);
  ends_.erase(id);
}

size_t LeaderRequiredStreams::EndAll() {
  std::map<Id, std::function<void()>> ends;
  {
    MutexLock l(&mu_);
    ends.swap(ends_);
  }
  for (auto& [id, end] : ends) end();
  return ends.size();
}

size_t LeaderRequiredStreams::size() const {
  MutexLock l(&mu_);
  return ends_.size();
}

}  // namespace kplane::storage
