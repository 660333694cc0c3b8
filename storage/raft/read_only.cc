#include "storage/raft/read_only.h"

#include "base/logging.h"

namespace kplane::raft {

void ReadOnly::AddRequest(uint64_t index, const raftpb::Message& m) {
  const std::string& ctx = m.entries(0).data();
  if (pending_.count(ctx)) return;
  pending_[ctx] = ReadIndexStatus{m, index, {}};
  queue_.push_back(ctx);
}

const std::map<uint64_t, bool>* ReadOnly::RecvAck(uint64_t id,
                                                  const std::string& ctx) {
  auto it = pending_.find(ctx);
  if (it == pending_.end()) return nullptr;
  it->second.acks[id] = true;
  return &it->second.acks;
}

std::vector<ReadIndexStatus> ReadOnly::Advance(const std::string& ctx) {
  std::vector<ReadIndexStatus> out;
  size_t i = 0;
  bool found = false;
  for (; i < queue_.size(); ++i) {
    auto it = pending_.find(queue_[i]);
    CHECK(it != pending_.end()) << "cannot find corresponding read state";
    if (queue_[i] == ctx) {
      found = true;
      ++i;
      break;
    }
  }
  if (!found) return out;
  for (size_t k = 0; k < i; ++k) {
    auto it = pending_.find(queue_.front());
    out.push_back(std::move(it->second));
    pending_.erase(it);
    queue_.pop_front();
  }
  return out;
}

std::string ReadOnly::LastPendingRequestCtx() const {
  return queue_.empty() ? std::string() : queue_.back();
}

}  // namespace kplane::raft
