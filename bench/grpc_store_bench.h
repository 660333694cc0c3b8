// The store benchmarks over etcd's v3 gRPC API (etcdserverpb.KV and Watch,
// the stubs of schemas/grpc/rpc_services.proto), so that one tool drives
// kplane and a real etcd each over its native protocol. The same workloads
// (bench/store_workloads.h: put, range, cas, fill) and the same results
// (LoadResult, WatchBenchResult) as the JSON mode, so `kpctl store bench
// --protocol grpc` prints the same table and RESULT lines.
//
// Connections: like etcd's benchmark tool (`--conns`, `--clients`), N
// clients share M gRPC channels (each its own TCP connection, HTTP/2
// multiplexing the clients' calls); client i uses channel i % M, channel j
// goes to endpoint j % E. DefaultGrpcConns gives one channel per 10 clients
// (etcd's documented runs use --conns=100 --clients=1000).
//
// RunGrpcLoad: a closed loop; every client has one call in flight (send,
// wait for the answer, send the next), driven by `threads` completion-queue
// threads. With max_operations the budget is taken when an operation
// starts and given back when it fails, so a run without errors makes
// exactly max_operations operations (the smoke test relies on it).
//
// RunGrpcWatchBench: the procedure of RunWatchBench (bench/watch_bench.h)
// over gRPC: `watchers` watchers on the prefix spread over `streams`
// bidirectional Watch streams (many watchers per stream, as etcd's clients
// multiplex them), the streams over `conns` channels; once every watcher is
// created, `writers` writers make `puts` unary Puts to endpoints[0], paced
// at puts_per_second in total; each event is matched to its put by
// mod_revision. One reader thread per stream.
//
// Thread-safety: every function blocks its caller and owns the threads and
// channels it starts. Errors: kInvalidArgument for bad options,
// kUnavailable when a channel does not connect within its timeout, a
// watcher is not created in time, or every watch put fails.
#ifndef KPLANE_BENCH_GRPC_STORE_BENCH_H_
#define KPLANE_BENCH_GRPC_STORE_BENCH_H_

#include <string>
#include <vector>

#include "base/statusor.h"
#include "bench/load.h"
#include "bench/store_workloads.h"
#include "bench/watch_bench.h"

namespace kplane::bench {

struct GrpcLoadOptions {
  std::vector<Endpoint> endpoints;
  StoreWorkload workload;  // put | range | cas
  int clients = 1;
  int conns = 1;    // gRPC channels (TCP connections) the clients share
  int threads = 1;  // completion-queue threads
  Duration duration = seconds(10);
  Duration warmup = Duration(0);
  int64_t max_operations = 0;  // 0: run for `duration`
  // With max_operations: give up after this long. 0: no limit.
  Duration time_limit = Duration(0);
  Duration request_timeout = seconds(10);  // each call's deadline
  Duration connect_timeout = seconds(10);  // each channel's
};

StatusOr<LoadResult> RunGrpcLoad(const GrpcLoadOptions& o);

// Writes StoreKey(prefix, 0..count-1) once each with `clients` writers over
// `conns` channels (range fixtures, as FillStore does over JSON).
Status GrpcFillStore(const std::vector<Endpoint>& endpoints,
                     const std::string& prefix, int64_t count, int value_size,
                     int clients, int conns);

// `conns` channels carry the streams (stream s on channel s % conns);
// o.endpoints[c % E] is channel c's endpoint.
StatusOr<WatchBenchResult> RunGrpcWatchBench(const WatchBenchOptions& o,
                                             int conns);

// One channel per 10 clients (or streams), at least one.
int DefaultGrpcConns(int clients);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_GRPC_STORE_BENCH_H_
