// Throughput of the patch paths the apiserver and kpctl run per request, on
// a Deployment-sized document (3 containers with env, ports, mounts).
//   build/objects/patch/patch_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <string>

#include "objects/patch/apply.h"
#include "objects/patch/json_patch.h"
#include "objects/patch/merge_patch.h"
#include "objects/patch/strategic.h"
#include "objects/patch/testdata/patchtest.pb.h"
#include "objects/patch/testdata/patchtest_table.h"

namespace kplane::patch {
namespace {

std::string Container(int i, const char* image) {
  std::string n = std::to_string(i);
  return R"({"name":"c)" + n + R"(","image":")" + image +
         R"(","ports":[{"containerPort":80)" + n +
         R"(}],"env":[)"
         R"({"name":"A","value":"1"},{"name":"B","value":"2"},)"
         R"({"name":"C","value":"3"}],"volumeMounts":[{"name":"v","mountPath":"/v)" +
         n + R"("}]})";
}

std::string Deployment(const char* image, int replicas) {
  std::string cs;
  for (int i = 0; i < 3; ++i) cs += (i ? "," : "") + Container(i, image);
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web",)"
         R"("labels":{"app":"web","tier":"fe"},"annotations":{"a":"b"}},)"
         R"("spec":{"replicas":)" +
         std::to_string(replicas) +
         R"(,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":)"
         R"({"labels":{"app":"web"}},"spec":{"containers":[)" +
         cs + R"(]}}}})";
}

PatchSchema Schema() {
  return PatchSchema(patchtest::Deployment::descriptor(), &PatchTestTable());
}

void BM_StrategicMergePatchApply(benchmark::State& state) {
  std::string live = Deployment("nginx:1.27", 3);
  std::string patch =
      R"({"spec":{"replicas":4,"template":{"spec":{"$setElementOrder/containers":)"
      R"([{"name":"c0"},{"name":"c1"},{"name":"c2"}],"containers":[{"name":"c1","image":"nginx:1.28"}]}}}})";
  for (auto _ : state) {
    auto r = StrategicMergePatchJson(live, patch, Schema());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_StrategicMergePatchApply);

void BM_ThreeWayDiff(benchmark::State& state) {
  std::string last = Deployment("nginx:1.27", 3);
  std::string modified = Deployment("nginx:1.28", 4);
  std::string live = Deployment("nginx:1.27", 3);
  for (auto _ : state) {
    auto r = CreateThreeWayMergePatchJson(last, modified, live, Schema(), true);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ThreeWayDiff);

void BM_MergePatchApply(benchmark::State& state) {
  std::string live = Deployment("nginx:1.27", 3);
  for (auto _ : state) {
    rapidjson::Document d, p;
    (void)ParseJson(live, &d);
    (void)ParseJson(R"({"metadata":{"labels":{"tier":null,"x":"y"}}})", &p);
    ApplyMergePatch(d, p, d.GetAllocator());
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_MergePatchApply);

void BM_ServerSideApplyUpdate(benchmark::State& state) {
  rapidjson::Document live, cfg;
  (void)ParseJson(Deployment("nginx:1.27", 3), &live);
  (void)ParseJson(Deployment("nginx:1.28", 4), &cfg);
  ApplyOptions o;
  o.manager = "kubectl";
  o.api_version = "apps/v1";
  o.schema = Schema();
  JsonValue first;
  std::vector<FieldConflict> conflicts;
  (void)ServerSideApply(&live, live, o, &first, live.GetAllocator(),
                        &conflicts);
  for (auto _ : state) {
    rapidjson::Document scratch;
    JsonValue out;
    Status st = ServerSideApply(&first, cfg, o, &out, scratch.GetAllocator(),
                                &conflicts);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_ServerSideApplyUpdate);

}  // namespace
}  // namespace kplane::patch

BENCHMARK_MAIN();
