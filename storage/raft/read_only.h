// ReadIndex bookkeeping on the leader (internal; Raft thesis §6.4).
//
// A read request gets the leader's commit index at arrival as its read
// index. With ReadOnlySafe the leader then broadcasts a heartbeat carrying
// the request's context; once a quorum acks that heartbeat, the leader knows
// it was still the leader when the request arrived, and every request queued
// up to and including that one is released. Example: requests "a" (index 7)
// and "b" (index 9) are queued; acks for "b" from a quorum release both "a"
// and "b" (in order), because "a" arrived earlier.
//
// Not thread-safe (owned by one Raft).
#ifndef KPLANE_STORAGE_RAFT_READ_ONLY_H_
#define KPLANE_STORAGE_RAFT_READ_ONLY_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "schemas/raft.pb.h"

namespace kplane::raft {

enum class ReadOnlyOption {
  // Confirm leadership with a quorum round trip (heartbeat) per batch.
  kSafe,
  // Trust the leader lease (needs check_quorum and bounded clock drift).
  kLeaseBased,
};

struct ReadIndexStatus {
  raftpb::Message req;
  uint64_t index = 0;
  std::map<uint64_t, bool> acks;
};

class ReadOnly {
 public:
  explicit ReadOnly(ReadOnlyOption option) : option_(option) {}

  // Queues a request (deduplicated by context) with its read index.
  void AddRequest(uint64_t index, const raftpb::Message& m);
  // Records an ack from id for the request with `ctx`; returns its acks, or
  // nullptr if no such request is pending.
  const std::map<uint64_t, bool>* RecvAck(uint64_t id, const std::string& ctx);
  // Releases every request queued up to and including the one with the
  // context of `m`, in arrival order.
  std::vector<ReadIndexStatus> Advance(const std::string& ctx);
  // The context of the newest pending request, or "" if none.
  std::string LastPendingRequestCtx() const;

  ReadOnlyOption option() const { return option_; }
  size_t PendingCount() const { return queue_.size(); }

 private:
  ReadOnlyOption option_;
  std::unordered_map<std::string, ReadIndexStatus> pending_;
  std::deque<std::string> queue_;
};

}  // namespace kplane::raft

#endif  // KPLANE_STORAGE_RAFT_READ_ONLY_H_
