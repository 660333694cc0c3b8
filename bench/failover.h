// Leader failover benchmark, the same procedure as the etcd figures in
// reference/etcd-on-this-machine.md §6: one client does sequential puts
// (each with a short timeout, moving to the next endpoint on failure); after
// `kill_after` the leader's process is sent SIGKILL; the result is the time
// from the kill to the first successful put that was sent after it.
//
// The leader is found through /v3/maintenance/status (works on our store and
// on etcd alike); `pids[i]` must be the process serving `endpoints[i]`.
#ifndef KPLANE_BENCH_FAILOVER_H_
#define KPLANE_BENCH_FAILOVER_H_

#include <vector>

#include "bench/load.h"

namespace kplane::bench {

struct FailoverOptions {
  std::vector<Endpoint> endpoints;
  std::vector<int> pids;
  Duration kill_after = seconds(3);
  Duration op_timeout = milliseconds(100);
  Duration give_up_after = seconds(30);
};

struct FailoverResult {
  int killed_pid = 0;
  int killed_endpoint = -1;
  double kill_to_first_write_ms = 0;
  double longest_gap_ms = 0;  // between two successful puts, whole run
  int64_t failed_puts = 0;
};

StatusOr<FailoverResult> RunFailover(const FailoverOptions& o);

// Index of the endpoint whose member is the leader (by /v3/maintenance/
// status), or an error.
StatusOr<int> FindLeaderEndpoint(const std::vector<Endpoint>& endpoints);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_FAILOVER_H_
