// --max-watchers-per-stream, as `kplane store` and `kplane store grpc-proxy
// start` declare and read it: one help text and one check, so the two
// commands cannot drift apart. The bound itself is
// etcdjson::CheckWatcherLimit's (storage/etcdjson/etcd_json.h).
#ifndef KPLANE_CMD_KPLANE_WATCH_LIMIT_FLAG_H_
#define KPLANE_CMD_KPLANE_WATCH_LIMIT_FLAG_H_

#include <cstddef>
#include <cstdint>

#include "base/statusor.h"

namespace kplane::cmd {

inline constexpr char kMaxWatchersPerStreamHelp[] =
    "Most watchers open at once on one client Watch stream; a create past "
    "it is refused (created and canceled, with the reason) and the stream "
    "goes on (0: no cap).";

// The bound a flag value gives: 0 (no cap) or more; a negative value is
// kInvalidArgument with the text both commands print.
inline StatusOr<size_t> MaxWatchersPerStreamFromFlag(int64_t value) {
  if (value < 0) {
    return InvalidArgumentError(
        "--max-watchers-per-stream must not be negative (0: no cap)");
  }
  return static_cast<size_t>(value);
}

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_WATCH_LIMIT_FLAG_H_
