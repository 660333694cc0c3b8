// Watch fan-out benchmark over etcd's v3 JSON API, the same procedure as
// the etcd figures in reference/etcd-on-this-machine.md §5: `watchers`
// watchers on one prefix, carried by `streams` /v3/watch streams (each
// stream's create requests are sent in one request body; etcd's gateway and
// our store both read a stream of JSON objects), spread over the endpoints.
//
// Against etcd use one watcher per stream (streams == watchers, as etcd's
// own clients give each watcher its gRPC stream): etcd's gateway runs on Go's
// HTTP/1 server, which stops reading a request body once the response has
// started, so of several create requests in one body the later ones are
// lost now and then (seen: 903 and 922 of 1,000 watchers created over 10
// streams, and 9 of 12 over 3).
// Once every watcher is created, `writers` closed-loop writers make `puts`
// puts under the prefix to endpoints[0] (writer k makes puts k, k+K, ...),
// paced together at `puts_per_second` (0: each as fast as it can; one
// sequential writer cannot reach 1,000 puts/s against a replicated store).
// Every event is matched to its put by mod_revision, giving delivery latency
// from the put's send and from its acknowledgement.
//
// Events that arrive before the writer has its put's answer count as
// `before_ack` and record 0 in `from_ack` (the reference figures report
// them as negative values).
//
// Thread-safety: RunWatchBench blocks the caller; it runs one reader thread
// and writers - 1 writer threads (the caller is writer 0). It raises its
// soft open-file limit to the hard limit when the streams need it.
// A put answered with an error (an overloaded etcd times requests out) is
// counted in put_errors and left out of expected_events; its events, if it
// was committed after all, are not counted.
//
// Errors: kUnavailable if a stream cannot be opened, not every watcher is
// created within create_timeout, or every put fails; kInvalidArgument for
// bad options.
#ifndef KPLANE_BENCH_WATCH_BENCH_H_
#define KPLANE_BENCH_WATCH_BENCH_H_

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/histogram.h"
#include "bench/load.h"

namespace kplane::bench {

struct WatchBenchOptions {
  std::vector<Endpoint> endpoints;
  int watchers = 100;
  int streams = 10;
  int puts = 1000;
  int writers = 1;               // concurrent writers sharing the puts
  double puts_per_second = 100;  // 0: unpaced; else the total rate
  int value_size = 256;
  std::string prefix = "/registry/configmaps/watchbench/";
  Duration create_timeout = seconds(120);  // until every watcher is created
  Duration drain_timeout = seconds(60);
  // Server processes (same machine) whose RSS is read before the streams
  // open and once every watcher is created: memory per watcher.
  std::vector<int> server_pids;
};

struct WatchBenchResult {
  int64_t expected_events = 0;   // watchers * acknowledged puts
  int64_t delivered_events = 0;  // events of acknowledged puts received
  int put_errors = 0;            // puts answered with an error
  std::string last_put_error;
  int64_t before_ack = 0;        // events seen before their put's answer
  LatencyHistogram from_send;    // put sent -> event received
  LatencyHistogram from_ack;     // put answered -> event received (>= 0)
  LatencyHistogram put_latency;  // the writer's puts
  double events_per_second = 0;  // first put .. last event
  double writer_seconds = 0;
  double client_cpu_seconds = 0;
  // Summed over server_pids: RSS growth from opening the watchers.
  int64_t server_rss_growth_bytes = 0;
};

StatusOr<WatchBenchResult> RunWatchBench(const WatchBenchOptions& o);

// Matches each received event, (revision, arrival ns), to the write that
// made it, revision -> (sent ns, answered ns), and records the delivery
// latencies into `res`: delivered_events, from_send, and from_ack with an
// event that beat its write's answer counted in before_ack and recorded as
// 0. Arrivals of revisions not in `writes` (not ours) are skipped. Serves
// both the store's and the apiserver's watch benchmarks.
template <typename Result>
void RecordDeliveries(
    const std::vector<std::pair<int64_t, int64_t>>& arrivals,
    const std::unordered_map<int64_t, std::pair<int64_t, int64_t>>& writes,
    Result* res) {
  res->delivered_events = 0;
  for (const auto& [rev, at] : arrivals) {
    auto it = writes.find(rev);
    if (it == writes.end()) continue;
    ++res->delivered_events;
    const auto [sent, acked] = it->second;
    res->from_send.Record(at - sent);
    if (at < acked) {
      ++res->before_ack;
      res->from_ack.Record(0);
    } else {
      res->from_ack.Record(at - acked);
    }
  }
}

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_WATCH_BENCH_H_
