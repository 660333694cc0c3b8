// Cost of the per-request strategy work on typical objects
// (objects/testdata/pod.json, ~4 KB; deployment.json): defaulting, create and
// update preparation, validation, a field-selector lookup and a Table row.
//
//   build/apiserver/registry/apiserver_registry_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "objects/codec.h"
#include "objects/scheme.h"
#include "apiserver/registry/strategy.h"

namespace kplane::apiserver {
namespace {

template <typename T>
T Load(const char* file) {
  std::ifstream in(std::string(KPLANE_OBJECTS_TESTDATA) + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  T obj;
  if (!objects::DecodeJson(ss.str(), &obj).ok()) std::abort();
  return obj;
}

const Strategy& StrategyOf(const char* group, const char* resource) {
  return StrategyFor(
      *objects::Scheme::Default().FindResource(group, "v1", resource));
}

void BM_PodCreate(benchmark::State& state) {
  const Strategy& s = StrategyOf("", "pods");
  const auto pod = Load<objects::corev1::Pod>("pod.json");
  for (auto _ : state) {
    objects::corev1::Pod p = pod;
    s.Default(&p);
    s.PrepareForCreate(&p);
    FieldErrors errs = s.ValidateCreate(p);
    if (!errs.empty()) std::abort();
    benchmark::DoNotOptimize(errs);
  }
}
BENCHMARK(BM_PodCreate);

void BM_PodUpdate(benchmark::State& state) {
  const Strategy& s = StrategyOf("", "pods");
  const auto old = Load<objects::corev1::Pod>("pod.json");
  for (auto _ : state) {
    objects::corev1::Pod p = old;
    (*p.mutable_metadata()->mutable_labels())["touched"] = "yes";
    s.Default(&p);
    s.PrepareForUpdate(&p, old);
    FieldErrors errs = s.ValidateUpdate(p, old);
    benchmark::DoNotOptimize(errs);
  }
}
BENCHMARK(BM_PodUpdate);

void BM_DeploymentUpdate(benchmark::State& state) {
  const Strategy& s = StrategyOf("apps", "deployments");
  const auto old = Load<objects::appsv1::Deployment>("deployment.json");
  for (auto _ : state) {
    objects::appsv1::Deployment d = old;
    d.mutable_spec()->set_replicas(5);
    s.Default(&d);
    s.PrepareForUpdate(&d, old);
    FieldErrors errs = s.ValidateUpdate(d, old);
    benchmark::DoNotOptimize(errs);
  }
}
BENCHMARK(BM_DeploymentUpdate);

void BM_PodFieldValue(benchmark::State& state) {
  const Strategy& s = StrategyOf("", "pods");
  const auto pod = Load<objects::corev1::Pod>("pod.json");
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.FieldValue(pod, "spec.nodeName"));
    benchmark::DoNotOptimize(s.FieldValue(pod, "status.phase"));
  }
}
BENCHMARK(BM_PodFieldValue);

void BM_PodRow(benchmark::State& state) {
  const Strategy& s = StrategyOf("", "pods");
  const auto pod = Load<objects::corev1::Pod>("pod.json");
  const WallTime now{std::chrono::seconds(1795941462 + 3600)};
  for (auto _ : state) benchmark::DoNotOptimize(s.Row(pod, now));
}
BENCHMARK(BM_PodRow);

}  // namespace
}  // namespace kplane::apiserver

BENCHMARK_MAIN();
