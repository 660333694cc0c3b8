// The watch cache's two hot paths, with the storage replaced by an
// in-memory fake so that only the cache is measured:
//   build/apiserver/cacher/apiserver_cacher_bench
//
// BM_ListFromCache: a LIST (resourceVersion=0) of 10,000 pods, all
//   namespaces or one namespace of 100.
// BM_FanOut: storage watch events (pre-encoded pod values, one per
//   revision) through decode -> store/window -> dispatch to W watchers whose
//   sinks only count. per_delivery = real time / (events x receiving
//   watchers): the dispatch cost per event per watcher once the fixed
//   per-event cost (decode, apply, thread hand-off: see W=1) is spread over
//   W; per_event = real time / events. cpu_per_delivery_ns and
//   cpu_per_event_us divide the CPU time of all threads instead (the
//   machine's load inflates real time, much less CPU time).
#include <benchmark/benchmark.h>
#include <time.h>

#include <condition_variable>
#include <map>

#include "base/mutex.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/types.h"
#include "apiserver/cacher/cacher.h"
#include "base/logging.h"

namespace kplane::apiserver {
namespace {

using objects::corev1::Pod;

// Just enough of the KV for a cacher: ranges over a map at one revision and
// a watch whose events the benchmark injects.
class FakeKV : public storage::KV {
 public:
  void Add(const std::string& key, std::string value) {
    ++revision_;
    mvccpb::KeyValue kv;
    kv.set_key(key);
    kv.set_value(std::move(value));
    kv.set_create_revision(revision_);
    kv.set_mod_revision(revision_);
    kvs_[key] = kv;
  }
  int64_t NextRevision() { return ++revision_; }

  StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& req) override {
    etcdserverpb::RangeResponse resp;
    resp.mutable_header()->set_revision(revision_);
    int64_t count = 0;
    for (auto it = kvs_.lower_bound(req.key());
         it != kvs_.end() && it->first < req.range_end(); ++it) {
      ++count;
      if (req.limit() <= 0 || resp.kvs_size() < req.limit()) {
        *resp.add_kvs() = it->second;
      }
    }
    resp.set_count(count);
    resp.set_more(req.limit() > 0 && count > req.limit());
    return resp;
  }
  StatusOr<std::unique_ptr<storage::Watch>> StartWatch(
      const etcdserverpb::WatchCreateRequest&,
      storage::WatchCallback cb) override {
    MutexLock l(&mu_);
    callback_ = std::move(cb);
    cv_.notify_all();
    struct NoopWatch : storage::Watch {
      void RequestProgress() override {}
      bool ProgressOrdered() const override { return true; }
    };
    return std::unique_ptr<storage::Watch>(new NoopWatch);
  }
  void Inject(const etcdserverpb::WatchResponse& r) {
    MutexLock l(&mu_);
    cv_.wait(l.native(),
             [&]() REQUIRES(mu_) { return static_cast<bool>(callback_); });
    auto cb = callback_;
    l.Unlock();
    cb(r);
  }

#define KPLANE_UNUSED_KV(Resp, Name, Req)                                \
  StatusOr<etcdserverpb::Resp> Name(const etcdserverpb::Req&) override { \
    return UnimplementedError(#Name);                                    \
  }
  KPLANE_UNUSED_KV(PutResponse, Put, PutRequest)
  KPLANE_UNUSED_KV(DeleteRangeResponse, DeleteRange, DeleteRangeRequest)
  KPLANE_UNUSED_KV(TxnResponse, Txn, TxnRequest)
  KPLANE_UNUSED_KV(CompactionResponse, Compact, CompactionRequest)
  KPLANE_UNUSED_KV(LeaseGrantResponse, LeaseGrant, LeaseGrantRequest)
  KPLANE_UNUSED_KV(LeaseRevokeResponse, LeaseRevoke, LeaseRevokeRequest)
  KPLANE_UNUSED_KV(LeaseKeepAliveResponse, LeaseKeepAlive,
                   LeaseKeepAliveRequest)
  KPLANE_UNUSED_KV(LeaseTimeToLiveResponse, LeaseTimeToLive,
                   LeaseTimeToLiveRequest)
  KPLANE_UNUSED_KV(LeaseLeasesResponse, LeaseLeases, LeaseLeasesRequest)
#undef KPLANE_UNUSED_KV
  StatusOr<etcdserverpb::StatusResponse> MemberStatus() override {
    return UnimplementedError("MemberStatus");
  }

 private:
  std::map<std::string, mvccpb::KeyValue> kvs_;
  int64_t revision_ = 1;
  Mutex mu_;
  std::condition_variable cv_;
  storage::WatchCallback callback_;
};

const objects::ResourceInfo* Pods() {
  return objects::Scheme::Default().FindResource("", "v1", "pods");
}

// A realistic pod of about 1 KB stored.
Pod MakePod(const std::string& ns, const std::string& name, int i) {
  Pod pod;
  auto* m = pod.mutable_metadata();
  m->set_namespace_(ns);
  m->set_name(name);
  m->set_uid("8f0c2d3e-5b9a-4c1d-9e2f-" + std::to_string(100000000000 + i));
  (*m->mutable_labels())["app"] = (i % 2) ? "web" : "db";
  (*m->mutable_labels())["pod-template-hash"] = "5d4f8c7b9";
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("main");
  c->set_image("registry.example.com/team/web:1.27.3");
  c->add_args("--port=8080");
  pod.mutable_spec()->set_nodename("node-" + std::to_string(i % 100));
  pod.mutable_spec()->set_restartpolicy("Always");
  pod.mutable_status()->set_phase("Running");
  pod.mutable_status()->set_podip("10.0." + std::to_string(i % 250) + ".7");
  return pod;
}

std::string Encode(const Pod& pod) {
  return objects::EncodeEnvelope(pod, Pods()->kind->type_meta());
}

struct Harness {
  explicit Harness(int pods, int namespaces) {
    for (int i = 0; i < pods; ++i) {
      std::string ns = "ns-" + std::to_string(i % namespaces);
      std::string name = "pod-" + std::to_string(i);
      kv.Add("/registry/pods/" + ns + "/" + name, Encode(MakePod(ns, name, i)));
    }
    store = std::make_unique<ObjectStore>(
        &kv, Pods(), ObjectStoreOptions{.metrics = &metrics});
    cacher = std::make_unique<Cacher>(store.get(),
                                      CacherOptions{.metrics = &metrics});
    CHECK(cacher->Start().ok());
    CHECK(cacher->WaitReady(seconds(60)));
  }
  ~Harness() { cacher->Stop(); }
  metrics::Registry metrics;
  FakeKV kv;
  std::unique_ptr<ObjectStore> store;
  std::unique_ptr<Cacher> cacher;
};

void BM_ListFromCache(benchmark::State& state) {
  Harness h(10000, 100);
  const std::string ns = state.range(0) ? "ns-7" : "";
  size_t n = 0;
  for (auto _ : state) {
    auto r = h.cacher->List(ns, 0, false, {});
    n = r->items.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["objects"] = static_cast<double>(n);
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ListFromCache)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

class CountingSink : public WatchSink {
 public:
  CountingSink(std::atomic<int64_t>* total, std::atomic<int64_t>* target,
               Mutex* mu, std::condition_variable* cv)
      : total_(total), target_(target), mu_(mu), cv_(cv) {}
  bool Send(const WatchEventPtr&) override {
    if (total_->fetch_add(1, std::memory_order_relaxed) + 1 ==
        target_->load(std::memory_order_relaxed)) {
      MutexLock l(mu_);
      cv_->notify_all();
    }
    return true;
  }
  void Close(const Status&) override {}

 private:
  std::atomic<int64_t>* total_;
  std::atomic<int64_t>* target_;
  Mutex* mu_;
  std::condition_variable* cv_;
};

// Args: watchers, namespaces the watchers spread over (0: all watch every
// namespace), with a label predicate (0/1).
void BM_FanOut(benchmark::State& state) {
  const int watchers = static_cast<int>(state.range(0));
  const int spread = static_cast<int>(state.range(1));
  const bool selector = state.range(2) != 0;
  constexpr int kPods = 1000;
  constexpr int kBatch = 100;  // events per iteration, one response each
  Harness h(kPods, 1);         // every pod in ns-0
  std::atomic<int64_t> total{0}, target{0};
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<WatchHandle>> handles;
  for (int i = 0; i < watchers; ++i) {
    WatchOptions o;
    if (spread > 0) o.ns = "ns-" + std::to_string(i % spread);
    if (selector) {
      o.predicate = [](const google::protobuf::Message& m) {
        return objects::Label(*objects::GetObjectMeta(m), "app") == "web";
      };
    }
    auto handle = h.cacher->Watch(
        o, std::make_shared<CountingSink>(&total, &target, &mu, &cv));
    CHECK(handle.ok()) << handle.status();
    handles.push_back(std::move(*handle));
  }
  // Watchers that see the events of ns-0 (all of them unless spread), and
  // how many deliveries one batch makes.
  const int receivers =
      spread > 0 ? (watchers + spread - 1) / spread : watchers;
  // Modifications of pods that keep their app label: a selector passes
  // half the pods, so half the events reach a selecting watcher.
  std::vector<std::string> values;
  for (int i = 0; i < kPods; ++i) {
    Pod p = MakePod("ns-0", "pod-" + std::to_string(i), i);
    (*p.mutable_metadata()->mutable_annotations())["touched"] = "yes";
    values.push_back(Encode(p));
  }
  int next = 0;
  int64_t deliveries_per_batch = 0;
  for (int b = 0; b < kBatch; ++b) {
    bool web = ((next + b) % kPods) % 2 == 1;
    deliveries_per_batch += (!selector || web) ? receivers : 0;
  }
  const double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    target.store(total.load() + deliveries_per_batch);
    for (int b = 0; b < kBatch; ++b) {
      int i = next++ % kPods;
      etcdserverpb::WatchResponse r;
      auto* ev = r.add_events();
      ev->set_type(mvccpb::Event::PUT);
      auto* kv = ev->mutable_kv();
      kv->set_key("/registry/pods/ns-0/pod-" + std::to_string(i));
      kv->set_value(values[i]);
      kv->set_mod_revision(h.kv.NextRevision());
      r.mutable_header()->set_revision(kv->mod_revision());
      h.kv.Inject(r);
    }
    MutexLock l(&mu);
    cv.wait(l.native(), [&] { return total.load() >= target.load(); });
  }
  const double cpu = ProcessCpuSeconds() - cpu_start;
  state.SetItemsProcessed(state.iterations() * deliveries_per_batch);
  // CPU of every thread (decode, apply, dispatch), which the machine's
  // load does not inflate the way it inflates real time.
  state.counters["cpu_per_delivery_ns"] =
      cpu * 1e9 /
      static_cast<double>(state.iterations() * deliveries_per_batch);
  state.counters["cpu_per_event_us"] =
      cpu * 1e6 / static_cast<double>(state.iterations() * kBatch);
  state.counters["per_delivery"] = benchmark::Counter(
      static_cast<double>(state.iterations() * deliveries_per_batch),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["per_event"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kBatch),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["receivers"] = receivers;
}
BENCHMARK(BM_FanOut)
    ->Args({1, 0, 0})
    ->Args({1000, 0, 0})
    ->Args({10000, 0, 0})
    ->Args({1000, 0, 1})
    ->Args({10000, 0, 1})
    ->Args({10000, 1000, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kplane::apiserver

BENCHMARK_MAIN();
