// Google Benchmark of the client stack's hot paths (figures in
// docs/informer.md):
//   build/informer/informer_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <atomic>
#include <condition_variable>

#include "base/file_system.h"
#include "base/mutex.h"
#include "examples/controllers/annotate_controller.h"
#include "informer/dynamic_informer.h"
#include "informer/envtest.h"
#include "informer/fake_api_server.h"
#include "informer/fake_list_watcher.h"
#include "informer/indexer.h"
#include "informer/rest_client.h"
#include "informer/shared_informer.h"
#include "informer/unstructured.h"
#include "informer/workqueue.h"
#include "objects/codec.h"
#include "objects/meta.h"

namespace kplane::informer {
namespace {

const objects::ResourceInfo* Pods() {
  return objects::Scheme::Default().FindResource("", "v1", "pods");
}

// A pod of typical size (~1.5 KB of JSON): labels, two containers with
// resources, a status with conditions.
objects::corev1::Pod TypicalPod(int i) {
  objects::corev1::Pod pod;
  auto* m = pod.mutable_metadata();
  m->set_namespace_("ns-" + std::to_string(i % 10));
  m->set_name("web-" + std::to_string(i));
  m->set_uid("0b5e3c1a-6d0e-4f0e-9d52-" + std::to_string(100000000 + i));
  m->set_resourceversion(std::to_string(1000 + i));
  (*m->mutable_labels())["app"] = "web";
  (*m->mutable_labels())["pod-template-hash"] = "5d8f9c7b6";
  auto* owner = m->add_ownerreferences();
  owner->set_apiversion("apps/v1");
  owner->set_kind("ReplicaSet");
  owner->set_name("web-5d8f9c7b6");
  owner->set_uid("6f1c9a2e-0d2b-4a8e-b3e1-4c0d9f7a1b2c");
  owner->set_controller(true);
  auto* spec = pod.mutable_spec();
  spec->set_nodename("node-" + std::to_string(i % 100));
  for (int c = 0; c < 2; ++c) {
    auto* ct = spec->add_containers();
    ct->set_name(c == 0 ? "app" : "sidecar");
    ct->set_image("registry.example/web:1.2." + std::to_string(c));
    (*ct->mutable_resources()->mutable_requests())["cpu"].set_string("100m");
    (*ct->mutable_resources()->mutable_requests())["memory"].set_string(
        "128Mi");
  }
  auto* status = pod.mutable_status();
  status->set_phase("Running");
  status->set_podip("10.0." + std::to_string(i % 250) + ".7");
  for (const char* type :
       {"Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    auto* cond = status->add_conditions();
    cond->set_type(type);
    cond->set_status("True");
  }
  return pod;
}

// Watch events decoded into messages of `kind`.
void WatchDecodeJson(benchmark::State& state, const objects::KindInfo* kind) {
  std::string body;
  constexpr int kEvents = 1000;
  for (int i = 0; i < kEvents; ++i) {
    body += "{\"type\":\"MODIFIED\",\"object\":" +
            objects::EncodeJson(TypicalPod(i), {"v1", "Pod"}) + "}\n";
  }
  for (auto _ : state) {
    WatchDecoder dec(kind);
    std::vector<WatchEvent> events;
    events.reserve(kEvents);
    // 16 KiB reads, as a socket would deliver them.
    for (size_t off = 0; off < body.size(); off += 16384) {
      benchmark::DoNotOptimize(
          dec.Feed(std::string_view(body).substr(off, 16384), &events));
    }
    benchmark::DoNotOptimize(events.data());
  }
  state.SetItemsProcessed(state.iterations() * kEvents);
  state.SetBytesProcessed(state.iterations() * body.size());
}
void BM_WatchDecodeJson(benchmark::State& state) {
  WatchDecodeJson(state, Pods()->kind);
}
BENCHMARK(BM_WatchDecodeJson);

// The same events for a dynamic informer: metadata decoded, the object's
// JSON kept (unstructured.h).
void BM_WatchDecodeJsonUnstructured(benchmark::State& state) {
  static const objects::KindInfo kind = MakeUnstructuredKind({"", "v1"});
  WatchDecodeJson(state, &kind);
}
BENCHMARK(BM_WatchDecodeJsonUnstructured);

Indexers NodeIndexed() {
  Indexers ix = DefaultIndexers();
  ix["node"] = [](const google::protobuf::Message& m) {
    return std::vector<std::string>{
        static_cast<const objects::corev1::Pod&>(m).spec().nodename()};
  };
  return ix;
}

void BM_IndexerUpsert(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<ObjectPtr> pods;
  for (int i = 0; i < n; ++i) {
    pods.push_back(std::make_shared<objects::corev1::Pod>(TypicalPod(i)));
  }
  Indexer ix(NodeIndexed());
  for (const ObjectPtr& p : pods) ix.Upsert(p);
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ix.Upsert(pods[i]));
    i = (i + 1) % n;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IndexerUpsert)->Arg(10000);

void BM_ListerByIndex(benchmark::State& state) {
  Indexer ix(NodeIndexed());
  for (int i = 0; i < 10000; ++i) {
    ix.Upsert(std::make_shared<objects::corev1::Pod>(TypicalPod(i)));
  }
  int i = 0;
  for (auto _ : state) {
    auto pods = ix.ByIndex("node", "node-" + std::to_string(i++ % 100));
    benchmark::DoNotOptimize(pods);
  }
  state.SetItemsProcessed(state.iterations());  // 100 pods per lookup
}
BENCHMARK(BM_ListerByIndex);

void BM_WorkQueueAddGetDone(benchmark::State& state) {
  WorkQueue q;
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("ns/key-" + std::to_string(i));
  size_t i = 0;
  for (auto _ : state) {
    q.Add(keys[i++ % keys.size()]);
    std::optional<std::string> k = q.Get();
    q.Done(*k);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WorkQueueAddGetDone);

// Server-side write -> reflector -> cache -> handler, in memory (no HTTP).
void BM_InformerDelivery(benchmark::State& state) {
  auto fake = std::make_shared<FakeListerWatcher>(Pods()->kind);
  SharedIndexInformer informer(fake);
  Mutex mu;
  std::condition_variable cv;
  int64_t delivered = 0;
  informer.AddEventHandler(
      EventHandlerFuncs{.on_add =
                            [&](const ObjectPtr&, bool) {
                              MutexLock l(&mu);
                              ++delivered;
                              cv.notify_all();
                            },
                        .on_update =
                            [&](const ObjectPtr&, const ObjectPtr&) {
                              MutexLock l(&mu);
                              ++delivered;
                              cv.notify_all();
                            }});
  informer.Start();
  informer.WaitForCacheSync();
  fake->WaitForWatchCalls(1);
  std::vector<objects::corev1::Pod> pods;
  for (int i = 0; i < 1000; ++i) pods.push_back(TypicalPod(i));
  int64_t sent = 0;
  bool created = false;
  for (auto _ : state) {
    for (auto& p : pods) {
      p.mutable_metadata()->clear_resourceversion();
      if (created) {
        (void)fake->Update(p);
      } else {
        (void)fake->Create(p);
      }
    }
    created = true;
    sent += static_cast<int64_t>(pods.size());
    MutexLock l(&mu);
    cv.wait(l.native(), [&] { return delivered >= sent; });
    l.Unlock();
    fake->Compact();  // keep the fake's history bounded
  }
  state.SetItemsProcessed(sent);
  informer.Stop();
}
BENCHMARK(BM_InformerDelivery)->UseRealTime();

struct HttpFixture {
  HttpFixture() {
    (void)server.Start();
    client = std::move(*RestClient::New({.server = server.Url()}));
    (void)server.Resource(*Pods())->Create(TypicalPod(1));
  }
  FakeApiServer server;
  std::unique_ptr<RestClient> client;
};

HttpFixture* Http() {
  static HttpFixture* const kFixture = new HttpFixture();
  return kFixture;
}

// GET of one pod over loopback HTTP from 1..8 threads sharing the client.
void BM_RestClientGet(benchmark::State& state) {
  HttpFixture* f = Http();
  objects::corev1::Pod pod = TypicalPod(1);
  for (auto _ : state) {
    auto got = f->client->Get<objects::corev1::Pod>(pod.metadata().namespace_(),
                                                    pod.metadata().name());
    if (!got.ok()) state.SkipWithError(got.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RestClientGet)->Threads(1)->Threads(8)->UseRealTime();

// Events through a real watch connection: server-side writes, JSON over
// loopback, decoded by the client.
void BM_RestClientWatchEvents(benchmark::State& state) {
  HttpFixture* f = Http();
  FakeListerWatcher* fake = f->server.Resource(*Pods());
  auto w = f->client->Watch(*Pods(), "", {.resource_version = ""});
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  objects::corev1::Pod pod = TypicalPod(1);
  int64_t n = 0;
  for (auto _ : state) {
    for (int i = 0; i < 100; ++i) {
      pod.mutable_metadata()->clear_resourceversion();
      (void)fake->Update(pod);
    }
    WatchEvent ev;
    for (int i = 0; i < 100; ++i) (*w)->Next(&ev);
    n += 100;
    fake->Compact();
  }
  (*w)->Stop();
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_RestClientWatchEvents)->UseRealTime();

// envtest (envtest.h): from Environment::Start to the example controller's
// first reconcile written back (store, API server, a ConfigMap applied, a
// dynamic informer synced, one merge patch), as a controller test sees it.
void BM_EnvtestFirstReconcile(benchmark::State& state) {
  for (auto _ : state) {
    auto env = envtest::Environment::Start();
    if (!env.ok()) {
      state.SkipWithError(env.status().ToString().c_str());
      return;
    }
    (void)(*env)->ApplyYaml(
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: settings, namespace: default}\ndata: {a: \"1\"}\n");
    Mutex mu;
    std::condition_variable cv;
    bool wrote = false;
    DynamicSharedInformerFactory factory((*env)->dynamic());
    examples::AnnotateController controller(
        (*env)->dynamic(), &factory,
        {.on_reconciled = [&](const std::string&, bool w) {
          MutexLock l(&mu);
          wrote = wrote || w;
          cv.notify_all();
        }});
    factory.Start();
    factory.WaitForCacheSync();
    controller.Start();
    {
      MutexLock l(&mu);
      cv.wait(l.native(), [&]() REQUIRES(mu) { return wrote; });
    }
    state.PauseTiming();  // teardown is not part of the figure
    controller.Stop();
    factory.Shutdown();
    env->reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_EnvtestFirstReconcile)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// envtest from start to a custom resource (issue 19, next to
// scripts/bench/crd_startup.sh's `kplane up` figure): Environment::Start,
// a CRD applied and waited for (Established, then discovery), a Widget of
// it created -- one ApplyYaml, as a controller test installs its CRDs.
void BM_EnvtestCrdToCustomResource(benchmark::State& state) {
  StatusOr<std::string> crd =
      ReadFile(FileSystem::Default(), KPLANE_TESTDATA "/crd/widgets.yaml");
  if (!crd.ok()) {
    state.SkipWithError(crd.status().ToString().c_str());
    return;
  }
  const std::string crd_and_widget = *crd + R"(---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 1}
)";
  for (auto _ : state) {
    auto env = envtest::Environment::Start();
    if (!env.ok()) {
      state.SkipWithError(env.status().ToString().c_str());
      return;
    }
    auto applied = (*env)->ApplyYaml(crd_and_widget);
    if (!applied.ok() || applied->size() != 2) {
      state.SkipWithError(applied.ok() ? "not two objects applied"
                                       : applied.status().ToString().c_str());
      return;
    }
    state.PauseTiming();  // teardown is not part of the figure
    env->reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_EnvtestCrdToCustomResource)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kplane::informer

BENCHMARK_MAIN();
