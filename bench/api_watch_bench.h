// Watch fan-out through a Kubernetes apiserver: `watchers` watches of the
// pods of one namespace, each on its own HTTP/1.1 connection (as every
// informer has its own), all started at one resourceVersion; once every
// watch's response head has arrived (the apiserver sends it when the watch
// is registered), one writer creates `creates` pods in that namespace,
// paced at `creates_per_second`. Every ADDED event is matched to its create
// by resourceVersion, giving delivery latency from the POST's send and from
// its answer (an event that beats the answer counts as `before_ack` and
// records 0, as bench/watch_bench.h does for the store).
//
// Thread-safety: RunApiWatchBench blocks the caller; it runs one reader
// thread (epoll over every watch connection).
// Errors: kUnavailable if a watch cannot be opened or its head does not
// arrive within head_timeout, or a create fails; kInvalidArgument for bad
// options.
#ifndef KPLANE_BENCH_API_WATCH_BENCH_H_
#define KPLANE_BENCH_API_WATCH_BENCH_H_

#include <string>
#include <vector>

#include "bench/histogram.h"
#include "bench/load.h"

namespace kplane::bench {

struct ApiWatchBenchOptions {
  Endpoint server;
  std::string ns = "watchbench";
  std::string run = "w";  // pod name prefix, unique per run
  int watchers = 100;
  int creates = 100;
  double creates_per_second = 10;  // 0: unpaced
  Duration head_timeout = seconds(120);
  Duration drain_timeout = seconds(60);
  // Server processes (same machine) whose RSS is read before the watches
  // open and once all are registered: memory per watcher.
  std::vector<int> server_pids;
};

struct ApiWatchBenchResult {
  int64_t expected_events = 0;   // watchers * creates
  int64_t delivered_events = 0;  // ADDED events of our pods received
  int64_t before_ack = 0;
  LatencyHistogram from_send;       // POST sent -> event received
  LatencyHistogram from_ack;        // POST answered -> event received (>= 0)
  LatencyHistogram create_latency;  // the writer's creates
  double setup_seconds = 0;         // opening every watch
  double writer_seconds = 0;
  double events_per_second = 0;  // first create .. last event
  double client_cpu_seconds = 0;
  int64_t server_rss_growth_bytes = 0;
};

StatusOr<ApiWatchBenchResult> RunApiWatchBench(const ApiWatchBenchOptions& o);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_API_WATCH_BENCH_H_
