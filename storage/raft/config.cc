#include "storage/raft/config.h"

namespace kplane::raft {

Status Config::Validate() const {
  if (id == 0) return InvalidArgumentError("raft config: id must not be 0");
  if (heartbeat_tick <= 0) {
    return InvalidArgumentError("raft config: heartbeat_tick must be > 0");
  }
  if (election_tick <= heartbeat_tick) {
    return InvalidArgumentError(
        "raft config: election_tick must be > heartbeat_tick");
  }
  if (max_inflight_msgs <= 0) {
    return InvalidArgumentError("raft config: max_inflight_msgs must be > 0");
  }
  if (max_inflight_bytes != 0 && max_inflight_bytes < max_size_per_msg) {
    return InvalidArgumentError(
        "raft config: max_inflight_bytes must be >= max_size_per_msg");
  }
  if (read_only_option == ReadOnlyOption::kLeaseBased && !check_quorum) {
    return InvalidArgumentError(
        "raft config: check_quorum must be on for lease-based reads");
  }
  return Status::Ok();
}

}  // namespace kplane::raft
