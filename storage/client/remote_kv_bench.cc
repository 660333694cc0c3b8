// Google Benchmark of RemoteKV against a real store started for the run:
// Debian's etcd 3.4 (default) or `kplane store` (KPLANE_BENCH_STORE=kplane),
// one member, or three with KPLANE_BENCH_MEMBERS=3.
//
//   build/storage/client/remote_kv_bench --benchmark_min_time=5s
//   KPLANE_BENCH_STORE=kplane build/storage/client/remote_kv_bench
//
// Every thread of a multi-threaded run shares one RemoteKV, so the figures
// include its connection pool. Puts write 256-byte values to keys drawn
// from 100,000, like the etcd figures in shared/reference.
#include <benchmark/benchmark.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <random>

#include "base/mutex.h"
#include "storage/client/local_cluster.h"
#include "storage/client/remote_kv.h"

namespace kplane::storage {
namespace {

LocalCluster* cluster = nullptr;
RemoteKV* kv = nullptr;

void PutLoop(benchmark::State& state) {
  std::mt19937_64 rng(state.thread_index() + 1);
  const std::string value(256, 'v');
  etcdserverpb::PutRequest p;
  p.set_value(value);
  int64_t errors = 0;
  for (auto _ : state) {
    p.set_key("/registry/configmaps/default/key-" +
              std::to_string(rng() % 100000));
    if (!kv->Put(p).ok()) ++errors;
  }
  state.counters["errors"] = static_cast<double>(errors);
  state.SetItemsProcessed(state.iterations());
}

void RangeOne(benchmark::State& state) {
  etcdserverpb::PutRequest p;
  p.set_key("/bench/one");
  p.set_value(std::string(256, 'v'));
  if (state.thread_index() == 0) (void)kv->Put(p);
  etcdserverpb::RangeRequest r;
  r.set_key("/bench/one");
  r.set_serializable(state.range(0) == 1);
  for (auto _ : state) {
    auto resp = kv->Range(r);
    benchmark::DoNotOptimize(resp);
  }
  state.SetItemsProcessed(state.iterations());
}

// Put -> watch callback latency, one put at a time.
void WatchLatency(benchmark::State& state) {
  Mutex mu;
  std::condition_variable cv;
  int64_t seen = 0;
  etcdserverpb::WatchCreateRequest w;
  w.set_key("/bench/watch");
  auto watch = kv->StartWatch(w, [&](const etcdserverpb::WatchResponse& r) {
    MutexLock l(&mu);
    for (const auto& e : r.events()) seen = e.kv().mod_revision();
    cv.notify_all();
  });
  if (!watch.ok()) {
    state.SkipWithError(watch.status().ToString().c_str());
    return;
  }
  etcdserverpb::PutRequest p;
  p.set_key("/bench/watch");
  p.set_value("x");
  for (auto _ : state) {
    auto resp = kv->Put(p);
    if (!resp.ok()) continue;
    MutexLock l(&mu);
    cv.wait(l.native(), [&] { return seen >= resp->header().revision(); });
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace
}  // namespace kplane::storage

int main(int argc, char** argv) {
  using namespace kplane::storage;
  benchmark::Initialize(&argc, argv);
  const char* kind = std::getenv("KPLANE_BENCH_STORE");
  const char* members = std::getenv("KPLANE_BENCH_MEMBERS");
  LocalClusterOptions o;
  o.kind = kind && std::string(kind) == "kplane" ? StoreKind::kKplane
                                                 : StoreKind::kEtcd;
  o.members = members ? std::atoi(members) : 1;
  auto c = LocalCluster::Start(o);
  if (!c.ok()) {
    std::fprintf(stderr, "cannot start the store: %s\n",
                 c.status().ToString().c_str());
    return 1;
  }
  RemoteKVOptions ko;
  ko.endpoints = (*c)->client_urls();
  auto k = RemoteKV::Create(ko);
  if (!k.ok()) return 1;
  cluster = c->get();
  kv = k->get();
  benchmark::AddCustomContext(
      "store", o.kind == StoreKind::kEtcd ? "etcd 3.4" : "kplane store");
  benchmark::AddCustomContext("members", std::to_string(o.members));
  benchmark::RegisterBenchmark("Put256B", PutLoop)
      ->Threads(1)
      ->Threads(16)
      ->UseRealTime();
  benchmark::RegisterBenchmark("RangeOneKey", RangeOne)
      ->Arg(0)
      ->Arg(1)
      ->ArgName("serializable")
      ->Threads(16)
      ->UseRealTime();
  benchmark::RegisterBenchmark("PutToWatchEvent", WatchLatency)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
