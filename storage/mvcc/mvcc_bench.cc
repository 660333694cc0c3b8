// mvcc_bench: Google Benchmark figures for the MVCC store (in-process, no
// network, no raft): put (with and without the key index; and in write
// groups, as the replicated apply path, with and without an index on the
// group's batch), txn
// (compare-and-swap as the apiserver does, with and without keeping the
// key's lease), range of 1 key and of a
// 1,000-key prefix (current and historical), paged ranges and counts over
// 50,000 pods with and without the key index and its memory, watch
// fan-out and catch-up, compaction of 100,000 revisions (and reads during
// it), and Open() of a store holding 1,000,000 revisions.
//
//   mvcc_bench [--benchmark_filter=...] [google benchmark flags]
//
// Stores live under $KPLANE_BENCH_DIR (default /tmp). The 1M-revision
// stores are built once (about half a minute each) and kept for later runs.
// Rates use wall-clock time; the CPU column is the whole process's.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "base/logging.h"
#include "storage/mvcc/key_index.h"
#include "storage/mvcc/store.h"
#include "storage/mvcc/txn_rules.h"

namespace kplane::mvcc {
namespace {

std::string BenchDir(const std::string& name) {
  const char* base = std::getenv("KPLANE_BENCH_DIR");
  return std::string(base ? base : "/tmp") + "/kplane_mvcc_bench_" + name;
}

std::unique_ptr<Store> Fresh(const std::string& name, bool sync = false,
                             bool key_index = true,
                             bool index_every_write = false) {
  std::string dir = BenchDir(name);
  std::filesystem::remove_all(dir);
  Options o;
  o.dir = dir;
  o.sync_writes = sync;
  o.key_index = key_index;
  o.index_every_staged_write = index_every_write;
  auto s = Store::Open(o);
  CHECK(s.ok()) << s.status();
  return std::move(*s);
}

std::string Value(std::mt19937_64* rng, size_t n = 256) {
  std::string v(n, ' ');
  for (char& c : v) c = static_cast<char>('a' + (*rng)() % 26);
  return v;
}

etcdserverpb::PutRequest Put(const std::string& k, const std::string& v) {
  etcdserverpb::PutRequest r;
  r.set_key(k);
  r.set_value(v);
  return r;
}

std::string Key(const char* prefix, int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%08d", prefix, i);
  return buf;
}

// PUT 256 B to random keys of 100,000 (etcd anchor's workload), one writer.
// Args: fsync per write; key index (0: previous versions read from RocksDB).
void BM_Put(benchmark::State& state) {
  const bool sync = state.range(0) != 0;
  const bool key_index = state.range(1) != 0;
  auto store = Fresh("put", sync, key_index);
  std::mt19937_64 rng(1);
  const std::string value = Value(&rng);
  for (auto _ : state) {
    auto r = store->Put(
        Put(Key("/registry/configmaps/default/key-", rng() % 100000), value));
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(sync ? "fsync per write" : "no fsync") +
                 (key_index ? ", key index" : ", no key index"));
}
BENCHMARK(BM_Put)
    ->Args({0, 1})
    ->Args({0, 0})
    ->Args({1, 1})
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// The replicated server's apply path: puts of 256 B to random keys of
// 100,000 (the profile_put.sh workload's key shape), applied in write
// groups of `n` entries with a consistent index each, as the raft loop
// applies a committed batch (~18 entries at 64 clients). Args: n; index
// every staged record (1: a WriteBatchWithIndex insert per record, the
// store before staged_batch.h; 0: the group's batch is indexed only if a
// write reads it, which these puts never do).
void BM_PutGroup(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool index_every_write = state.range(1) != 0;
  auto store = Fresh("putgroup", false, true, index_every_write);
  std::mt19937_64 rng(1);
  const std::string value = Value(&rng);
  uint64_t index = 0;
  for (auto _ : state) {
    store->BeginWriteGroup();
    for (int i = 0; i < n; ++i) {
      auto r = store->Put(
          Put(Key("/registry/configmaps/default/key-", rng() % 100000), value),
          ++index);
      benchmark::DoNotOptimize(r);
    }
    store->EndWriteGroup();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(index_every_write ? "batch indexed" : "plain batch");
}
BENCHMARK(BM_PutGroup)
    ->Args({16, 0})
    ->Args({16, 1})
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// The apiserver's GuaranteedUpdate: if mod_revision == known then put else
// get, on 1,000 keys. Arg 1: the put keeps the key's lease (ignore_lease),
// as the apiserver's update from a cached object -- every Lease renewal --
// sends it.
void BM_TxnCompareAndSwap(benchmark::State& state) {
  const bool keep_lease = state.range(0) != 0;
  auto store = Fresh("txn");
  std::mt19937_64 rng(2);
  const std::string value = Value(&rng);
  std::vector<int64_t> mod(1000);
  for (int i = 0; i < 1000; ++i) {
    mod[i] = store->Put(Put(Key("/registry/pods/ns/p", i), value))
                 ->header()
                 .revision();
  }
  for (auto _ : state) {
    int i = static_cast<int>(rng() % 1000);
    etcdserverpb::TxnRequest t;
    auto* c = t.add_compare();
    c->set_key(Key("/registry/pods/ns/p", i));
    c->set_target(etcdserverpb::Compare::MOD);
    c->set_result(etcdserverpb::Compare::EQUAL);
    c->set_mod_revision(mod[i]);
    auto* put = t.add_success()->mutable_request_put();
    *put = Put(c->key(), value);
    put->set_ignore_lease(keep_lease);
    t.add_failure()->mutable_request_range()->set_key(c->key());
    auto r = store->Txn(t);
    CHECK(r.ok() && r->succeeded());
    mod[i] = r->header().revision();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TxnCompareAndSwap)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// The duplicate-key check of a txn whose nested txn deletes N keys one by
// one and which then puts N other keys (txn_rules.h): every put is checked
// against the deletes. The op budget is raised so that one level holds N
// ops (with --max-txn-ops 128 nested txns reach ~43,000 ops this way).
void BM_CheckTxnDuplicateKeys(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  etcdserverpb::TxnRequest t;
  etcdserverpb::TxnRequest* deletes = t.add_success()->mutable_request_txn();
  for (int i = 0; i < n; ++i) {
    deletes->add_success()->mutable_request_delete_range()->set_key(
        "/registry/pods/default/deleted-" + std::to_string(i));
    auto* put = t.add_success()->mutable_request_put();
    put->set_key("/registry/pods/default/put-" + std::to_string(i));
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(CheckTxnRequest(t, 1 << 30));
  }
}
BENCHMARK(BM_CheckTxnDuplicateKeys)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);

// One store with 1,000 keys x `versions` versions of 256 B under a prefix,
// plus one single key; shared by the range benchmarks.
Store* RangeStore(int versions) {
  static std::map<int, std::unique_ptr<Store>> stores;
  auto& s = stores[versions];
  if (!s) {
    s = Fresh("range" + std::to_string(versions));
    std::mt19937_64 rng(3);
    CHECK(s->Put(Put("/registry/single", Value(&rng))).ok());
    for (int v = 0; v < versions; ++v) {
      for (int i = 0; i < 1000; ++i) {
        CHECK(
            s->Put(Put(Key("/registry/configmaps/range1000/", i), Value(&rng)))
                .ok());
      }
    }
    CHECK(s->Defrag().ok());  // read from SST files, not the memtable
  }
  return s.get();
}

void BM_Range1Key(benchmark::State& state) {
  Store* s = RangeStore(1);
  etcdserverpb::RangeRequest r;
  r.set_key("/registry/single");
  for (auto _ : state) {
    auto resp = s->Range(r);
    CHECK(resp.ok() && resp->kvs_size() == 1);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Range1Key)->UseRealTime()->MeasureProcessCPUTime();

// Range of a 1,000-key prefix. Arg 0: 1 version per key. Arg 1: 100
// versions per key, read at the current revision. Arg 2: the same store
// read at the revision of the first version (oldest history).
void BM_RangePrefix1000(benchmark::State& state) {
  const int mode = static_cast<int>(state.range(0));
  Store* s = RangeStore(mode == 0 ? 1 : 100);
  etcdserverpb::RangeRequest r;
  r.set_key("/registry/configmaps/range1000/");
  r.set_range_end("/registry/configmaps/range10000");
  if (mode == 2) r.set_revision(1001);  // every key's first version
  for (auto _ : state) {
    auto resp = s->Range(r);
    CHECK(resp.ok() && resp->kvs_size() == 1000) << resp.status();
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  state.SetLabel(mode == 0   ? "1 version/key"
                 : mode == 1 ? "100 versions/key, current"
                             : "100 versions/key, oldest revision");
}
BENCHMARK(BM_RangePrefix1000)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

// 50,000 pods of 1 KiB, each written twice (created, then a status update),
// built once under $KPLANE_BENCH_DIR and kept; opened with or without the
// key index (one open store at a time).
constexpr int kPods = 50'000;
constexpr int64_t kPodsFirstPassRevision = 1 + kPods;  // every pod created

Store* PodStore(bool key_index) {
  static std::unique_ptr<Store> open;
  static bool open_with_index = false;
  if (open != nullptr && open_with_index == key_index) return open.get();
  open.reset();
  const std::string dir = BenchDir("pods50k");
  const std::string marker = dir + ".done";
  if (!std::filesystem::exists(marker)) {
    auto s = Fresh("pods50k");
    std::mt19937_64 rng(5);
    const std::string value = Value(&rng, 1024);
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < kPods; ++i) {
        CHECK(s->Put(Put(Key("/registry/pods/default/pod-", i), value)).ok());
      }
    }
    CHECK(s->Defrag().ok());
    s->Close();
    std::ofstream(marker) << "done\n";
  }
  Options o;
  o.dir = dir;
  o.key_index = key_index;
  auto s = Store::Open(o);
  CHECK(s.ok()) << s.status();
  open = std::move(*s);
  open_with_index = key_index;
  return open.get();
}

// What the apiserver sends for a LIST of 50,000 pods. Args: key index;
// mode 0: the first page (limit 500: 500 rows, count, more), 1: a later
// page at the first pass's revision (a continue token's), 2: count_only
// (kubectl get --chunk-size=0 -o name does not, but quota and metrics do).
void BM_RangePods50k(benchmark::State& state) {
  const bool key_index = state.range(0) != 0;
  const int mode = static_cast<int>(state.range(1));
  Store* s = PodStore(key_index);
  etcdserverpb::RangeRequest r;
  r.set_key(mode == 1 ? Key("/registry/pods/default/pod-", 25'000)
                      : "/registry/pods/");
  r.set_range_end("/registry/pods0");
  if (mode == 2) {
    r.set_count_only(true);
  } else {
    r.set_limit(500);
  }
  if (mode == 1) r.set_revision(kPodsFirstPassRevision);
  for (auto _ : state) {
    auto resp = s->Range(r);
    CHECK(resp.ok()) << resp.status();
    CHECK_EQ(resp->count(), mode == 1 ? kPods / 2 : kPods);
  }
  state.SetLabel(std::string(key_index ? "key index, " : "no key index, ") +
                 (mode == 0   ? "first page of 500"
                  : mode == 1 ? "page of 500 at an older revision"
                              : "count_only"));
}
BENCHMARK(BM_RangePods50k)
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({1, 2})
    ->Args({0, 2})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

// Memory of the key index: heap in use by a KeyIndex of 50,000 pod keys
// (as the 50,000-pod store's: "/registry/pods/default/pod-NNNNNNNN", two
// versions each) per key. (Measured on the index alone: a store opened
// with the index has also filled its block cache while rebuilding it.)
void BM_KeyIndexMemory(benchmark::State& state) {
  for (auto _ : state) {
    const size_t before = mallinfo2().uordblks;
    auto index = std::make_unique<KeyIndex>();
    for (int i = 0; i < kPods; ++i) {
      const std::string key = Key("/registry/pods/default/pod-", i);
      index->Put(key, 2 + i, 0, 2 + i, 1, 0);
      index->Put(key, 2 + kPods + i, 0, 2 + i, 2, 0);
    }
    const size_t after = mallinfo2().uordblks;
    state.counters["bytes_per_key"] =
        (static_cast<double>(after) - static_cast<double>(before)) / kPods;
    state.counters["key_bytes"] =
        static_cast<double>(Key("/registry/pods/default/pod-", 0).size());
  }
}
BENCHMARK(BM_KeyIndexMemory)->Iterations(1)->Unit(benchmark::kMillisecond);

// Live fan-out: one put under a prefix watched by N watchers (10 per
// stream); each iteration writes and pops every response. Items = events
// delivered.
void BM_WatchFanOut(benchmark::State& state) {
  const int watchers = static_cast<int>(state.range(0));
  auto store = Fresh("watch");
  std::vector<std::unique_ptr<WatchStream>> streams;
  for (int i = 0; i < watchers; ++i) {
    if (i % 10 == 0) streams.push_back(store->NewWatchStream());
    etcdserverpb::WatchCreateRequest w;
    w.set_key("/registry/pods/");
    w.set_range_end("/registry/pods0");
    CHECK(streams.back()->Watch(w).ok());
  }
  std::mt19937_64 rng(4);
  const std::string value = Value(&rng);
  int64_t delivered = 0;
  for (auto _ : state) {
    CHECK(
        store->Put(Put(Key("/registry/pods/ns/p", rng() % 1000), value)).ok());
    for (auto& s : streams) {
      while (auto r = s->TryPop()) delivered += r->events_size();
    }
  }
  CHECK_EQ(delivered, state.iterations() * watchers);
  state.SetItemsProcessed(delivered);
}
BENCHMARK(BM_WatchFanOut)
    ->Arg(1)
    ->Arg(100)
    ->Arg(1000)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Catch-up: a watcher created at revision 1 of a 10,000-revision history;
// time until it has received every event. Items = events.
void BM_WatchCatchUp(benchmark::State& state) {
  auto store = Fresh("watch_catchup");
  std::mt19937_64 rng(5);
  const std::string value = Value(&rng);
  for (int i = 0; i < 10000; ++i) {
    CHECK(store->Put(Put(Key("/registry/pods/ns/p", i % 1000), value)).ok());
  }
  for (auto _ : state) {
    auto stream = store->NewWatchStream();
    etcdserverpb::WatchCreateRequest w;
    w.set_key("/registry/pods/");
    w.set_range_end("/registry/pods0");
    w.set_start_revision(1);
    CHECK(stream->Watch(w).ok());
    int64_t got = 0;
    while (got < 10000) {
      auto r = stream->Next(Clock::Real()->Now() + seconds(30));
      CHECK(r.has_value());
      got += r->events_size();
    }
  }
  state.SetItemsProcessed(state.iterations() * 10000);
}
BENCHMARK(BM_WatchCatchUp)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond);

// Compact(current) of a history of K keys x V versions (256 B values,
// written round-robin: key 0..K-1, V times), until the background deletion
// has finished. Setup is not timed (manual time). Counters: the 1,000-key
// range at the current revision before and after the compaction (ms per
// range, mean of 20), so the read cost of what compaction leaves behind
// (RocksDB deletion markers) is visible, then the time of a Defrag() and
// the range after it.
double MeanRangeMillis(Store* s, int keys) {
  etcdserverpb::RangeRequest r;
  r.set_key("/registry/configmaps/compact/");
  r.set_range_end("/registry/configmaps/compact0");
  r.set_limit(1000);
  constexpr int kReads = 20;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kReads; ++i) {
    auto resp = s->Range(r);
    CHECK(resp.ok() && resp->kvs_size() == std::min(keys, 1000))
        << resp.status();
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count() / kReads;
}

void BM_Compact(benchmark::State& state) {
  const int keys = static_cast<int>(state.range(0));
  const int versions = static_cast<int>(state.range(1));
  std::mt19937_64 rng(7);
  const std::string value = Value(&rng);
  double before_ms = 0, after_ms = 0, cpu_ms = 0, defrag_ms = 0,
         defragged_ms = 0;
  for (auto _ : state) {
    auto store = Fresh("compact");
    for (int v = 0; v < versions; ++v) {
      for (int k = 0; k < keys; ++k) {
        CHECK(
            store->Put(Put(Key("/registry/configmaps/compact/key-", k), value))
                .ok());
      }
    }
    before_ms = MeanRangeMillis(store.get(), keys);
    const int64_t target = store->CurrentRevision();
    const std::clock_t c0 = std::clock();
    auto t0 = std::chrono::steady_clock::now();
    CHECK(store->Compact(target).ok());
    CHECK(store->WaitForCompaction(target).ok());
    auto t1 = std::chrono::steady_clock::now();
    cpu_ms += 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    after_ms = MeanRangeMillis(store.get(), keys);
    // Defrag (RocksDB full compaction) drops the deletion markers.
    auto d0 = std::chrono::steady_clock::now();
    CHECK(store->Defrag().ok());
    auto d1 = std::chrono::steady_clock::now();
    defrag_ms += std::chrono::duration<double, std::milli>(d1 - d0).count();
    defragged_ms = MeanRangeMillis(store.get(), keys);
    store->Close();
  }
  // The process's CPU during Compact + WaitForCompaction (the CPU column of
  // a manual-time benchmark would include the untimed setup).
  state.counters["compact_cpu_ms"] =
      cpu_ms / static_cast<double>(state.iterations());
  state.counters["range_before_ms"] = before_ms;
  state.counters["range_after_ms"] = after_ms;
  state.counters["defrag_ms"] =
      defrag_ms / static_cast<double>(state.iterations());
  state.counters["range_after_defrag_ms"] = defragged_ms;
  state.SetItemsProcessed(state.iterations() * keys * versions);
}
BENCHMARK(BM_Compact)
    ->Args({1000, 100})
    ->Args({10000, 10})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// Reads while a compaction of K keys x V versions runs: 1-key ranges in a
// loop until the compaction has finished. Counters: their mean and worst
// latency (RocksDB rebuilds its view of range deletions after each
// compaction batch; this shows what readers pay for it).
void BM_ReadDuringCompact(benchmark::State& state) {
  const int keys = static_cast<int>(state.range(0));
  const int versions = static_cast<int>(state.range(1));
  std::mt19937_64 rng(8);
  const std::string value = Value(&rng);
  double sum_us = 0, max_us = 0;
  int64_t reads = 0;
  for (auto _ : state) {
    auto store = Fresh("read_during_compact");
    for (int v = 0; v < versions; ++v) {
      for (int k = 0; k < keys; ++k) {
        CHECK(
            store->Put(Put(Key("/registry/configmaps/compact/key-", k), value))
                .ok());
      }
    }
    const int64_t target = store->CurrentRevision();
    auto t0 = std::chrono::steady_clock::now();
    CHECK(store->Compact(target).ok());
    etcdserverpb::RangeRequest r;
    while (store->FinishedCompactRevision() < target) {
      r.set_key(Key("/registry/configmaps/compact/key-", rng() % keys));
      auto r0 = std::chrono::steady_clock::now();
      CHECK(store->Range(r).ok());
      const double us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - r0)
                            .count();
      sum_us += us;
      max_us = std::max(max_us, us);
      ++reads;
    }
    auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    store->Close();
  }
  state.counters["reads"] = static_cast<double>(reads);
  state.counters["read_mean_us"] = reads ? sum_us / reads : 0;
  state.counters["read_max_us"] = max_us;
}
BENCHMARK(BM_ReadDuringCompact)
    ->Args({1000, 100})
    ->Args({10000, 10})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// A store holding 1,000,000 revisions (1,000 keys x 1,000 versions, 100 B
// values, never compacted), built once. `flushed`: closed cleanly; else
// closed without flushing, as a crash leaves it (the newest writes only in
// the WAL, up to one 64 MiB memtable).
std::string MillionRevisionStore(bool flushed) {
  const std::string dir = BenchDir(flushed ? "1m" : "1m_unflushed");
  const std::string marker = dir + "/.complete";
  if (!std::filesystem::exists(marker)) {
    std::filesystem::remove_all(dir);
    Options o;
    o.dir = dir;
    o.flush_on_close = flushed;
    auto s = Store::Open(o);
    CHECK(s.ok()) << s.status();
    std::mt19937_64 rng(6);
    const std::string value = Value(&rng, 100);
    for (int i = 0; i < 1'000'000; ++i) {
      CHECK(
          (*s)->Put(Put(Key("/registry/leases/node-", i % 1000), value)).ok());
    }
    (*s)->Close();
    std::ofstream(marker) << "1000000\n";
  }
  return dir;
}

// Open() of the 1M-revision store. Arg 0: after a clean close. Arg 1: after
// an unflushed close (a fresh copy each time, so every Open replays the WAL,
// as after a crash).
void BM_OpenWith1MRevisions(benchmark::State& state) {
  const bool crashed = state.range(0) != 0;
  const std::string src = MillionRevisionStore(!crashed);
  const std::string copy = BenchDir("1m_copy");
  int64_t db_size = 0, wal = 0;
  for (auto _ : state) {
    std::string dir = src;
    if (crashed) {
      std::filesystem::remove_all(copy);
      std::filesystem::copy(src, copy);
      dir = copy;
      wal = 0;
      for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() == ".log") wal += e.file_size();
      }
    }
    Options o;
    o.dir = dir;
    auto t0 = std::chrono::steady_clock::now();
    auto s = Store::Open(o);
    auto t1 = std::chrono::steady_clock::now();
    CHECK(s.ok()) << s.status();
    CHECK_EQ((*s)->CurrentRevision(), Store::kInitialRevision + 1'000'000);
    db_size = (*s)->DbSize();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    (*s)->Close();
  }
  std::filesystem::remove_all(copy);
  state.counters["db_MiB"] = static_cast<double>(db_size) / (1 << 20);
  state.counters["wal_MiB"] = static_cast<double>(wal) / (1 << 20);
  state.SetLabel(crashed ? "after unflushed close (WAL replay)"
                         : "after clean close");
}
BENCHMARK(BM_OpenWith1MRevisions)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kplane::mvcc

int main(int argc, char** argv) {
  kplane::SetMinLogLevel(kplane::LogLevel::kWarning);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
