// ObjectStore over a real single-member embedded store (raft + RocksDB) in a
// temporary directory:
//   build/apiserver/storage/apiserver_storage_bench
// Create/Update are raft proposals (one fsync each); Get is a linearizable
// read; List decodes every object of a page.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>

#include "apiserver/storage/object_store.h"
#include "base/heap_tuning.h"
#include "base/logging.h"
#include "objects/meta.h"
#include "objects/scheme.h"
#include "objects/types.h"
#include "storage/server/store_server.h"

namespace kplane::apiserver {
namespace {

objects::corev1::Pod MakePod(const std::string& name) {
  objects::corev1::Pod pod;
  pod.mutable_metadata()->set_namespace_("default");
  pod.mutable_metadata()->set_name(name);
  pod.mutable_metadata()->set_uid("uid-" + name);
  (*pod.mutable_metadata()->mutable_labels())["app"] = "web";
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("main");
  c->set_image("nginx:1.27");
  pod.mutable_spec()->set_nodename("node-1");
  pod.mutable_status()->set_phase("Running");
  return pod;
}

class Fixture {
 public:
  Fixture() {
    char tmpl[] = "/tmp/kplane-apistore-bench-XXXXXX";
    dir_ = mkdtemp(tmpl);
    storage::StoreConfig config;
    config.data_dir = dir_ + "/data";
    config.peer_urls = {"http://127.0.0.1:2380"};
    config.heartbeat_interval = milliseconds(10);
    config.election_timeout = milliseconds(100);
    config.corrupt_check_interval = Duration(0);
    config.metrics = &metrics_;
    auto s = storage::StoreServer::Open(config);
    CHECK(s.ok()) << s.status();
    server_ = std::move(*s);
    CHECK(server_->Start(nullptr).ok());
    CHECK(server_->WaitForLeader(seconds(10)));
    store_ = std::make_unique<ObjectStore>(
        server_.get(), objects::Scheme::Default().FindResource("", "v1", "pods"),
        ObjectStoreOptions{.metrics = &metrics_});
  }
  ~Fixture() {
    store_.reset();
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  ObjectStore* store() { return store_.get(); }

 private:
  std::string dir_;
  metrics::Registry metrics_;
  std::unique_ptr<storage::StoreServer> server_;
  std::unique_ptr<ObjectStore> store_;
};

void BM_Create(benchmark::State& state) {
  Fixture f;
  int i = 0;
  for (auto _ : state) {
    auto r = f.store()->Create(MakePod("pod-" + std::to_string(i++)));
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Create)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Get(benchmark::State& state) {
  Fixture f;
  CHECK(f.store()->Create(MakePod("web")).ok());
  for (auto _ : state) {
    auto r = f.store()->Get("default", "web");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Get)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_GuaranteedUpdate(benchmark::State& state) {
  Fixture f;
  CHECK(f.store()->Create(MakePod("web")).ok());
  int64_t n = 0;
  auto bump =
      [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
    MutableObject next(cur->New());
    next->CopyFrom(*cur);
    (*objects::MutableObjectMeta(next.get())->mutable_annotations())["n"] =
        std::to_string(++n);
    return next;
  };
  for (auto _ : state) {
    auto r = f.store()->GuaranteedUpdate("default", "web", {}, bump);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GuaranteedUpdate)->UseRealTime()->Unit(benchmark::kMicrosecond);

// A paginated LIST of 1,000 pods in pages of state.range(0).
void BM_ListPaginated(benchmark::State& state) {
  Fixture f;
  for (int i = 0; i < 1000; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "pod-%04d", i);
    CHECK(f.store()->Create(MakePod(name)).ok());
  }
  for (auto _ : state) {
    ListOptions opts{.limit = state.range(0)};
    size_t n = 0;
    do {
      auto page = f.store()->List("default", opts);
      CHECK(page.ok()) << page.status();
      n += page->items.size();
      opts.continue_token = page->continue_token;
    } while (!opts.continue_token.empty());
    CHECK_EQ(n, 1000u);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_ListPaginated)
    ->Arg(100)
    ->Arg(500)
    ->Arg(900)
    ->Arg(1000)
    ->Arg(1100)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kplane::apiserver

// As `kplane` does (cmd/kplane/main.cc): the heap keeps what a page frees.
// KPLANE_MALLOC_DEFAULTS=1 measures glibc's defaults instead
// (base/heap_tuning.h).
int main(int argc, char** argv) {
  kplane::KeepFreedHeapMemory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
