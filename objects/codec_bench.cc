// Encode/decode cost of a typical Pod (testdata/pod.json, ~4 KB of JSON):
// JSON through the descriptor-driven codec, protobuf through the generated
// code, and the stored form (envelope).
//
//   build/objects/objects_codec_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/types.h"
#include "objects/yaml.h"

namespace kplane::objects {
namespace {

std::string PodJson() {
  std::ifstream in(std::string(KPLANE_OBJECTS_TESTDATA) + "/pod.json");
  std::stringstream ss;
  ss << in.rdbuf();
  corev1::Pod pod;
  if (!DecodeJson(ss.str(), &pod).ok()) std::abort();
  return EncodeJson(pod, {"v1", "Pod"});  // compact, as served
}

const TypeMeta kPodType{"v1", "Pod"};

void BM_DecodeJsonPod(benchmark::State& state) {
  const std::string json = PodJson();
  corev1::Pod pod;
  for (auto _ : state) {
    benchmark::DoNotOptimize(DecodeJson(json, &pod).ok());
  }
  state.SetBytesProcessed(state.iterations() * json.size());
}
BENCHMARK(BM_DecodeJsonPod);

void BM_EncodeJsonPod(benchmark::State& state) {
  corev1::Pod pod;
  const std::string json = PodJson();
  (void)DecodeJson(json, &pod);
  for (auto _ : state) {
    benchmark::DoNotOptimize(EncodeJson(pod, kPodType));
  }
  state.SetBytesProcessed(state.iterations() * json.size());
}
BENCHMARK(BM_EncodeJsonPod);

void BM_ParseProtobufPod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  const std::string bytes = SerializeDeterministic(pod);
  for (auto _ : state) {
    corev1::Pod p;
    benchmark::DoNotOptimize(p.ParseFromString(bytes));
  }
  state.SetBytesProcessed(state.iterations() * bytes.size());
}
BENCHMARK(BM_ParseProtobufPod);

void BM_SerializeProtobufPod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  for (auto _ : state) {
    benchmark::DoNotOptimize(SerializeDeterministic(pod));
  }
}
BENCHMARK(BM_SerializeProtobufPod);

void BM_EncodeEnvelopePod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  for (auto _ : state) {
    benchmark::DoNotOptimize(EncodeEnvelope(pod, kPodType));
  }
}
BENCHMARK(BM_EncodeEnvelopePod);

// A client's protobuf body: unknown fields are dropped (a reflection walk).
void BM_DecodeEnvelopePod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  const std::string stored = EncodeEnvelope(pod, kPodType);
  for (auto _ : state) {
    corev1::Pod p;
    benchmark::DoNotOptimize(DecodeEnvelopeInto(stored, &p).ok());
  }
}
BENCHMARK(BM_DecodeEnvelopePod);

// A value read back from our own store: nothing to drop.
void BM_DecodeStoredPod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  const std::string stored = EncodeEnvelope(pod, kPodType);
  for (auto _ : state) {
    corev1::Pod p;
    benchmark::DoNotOptimize(
        DecodeEnvelopeInto(stored, &p, /*discard_unknown=*/false).ok());
  }
}
BENCHMARK(BM_DecodeStoredPod);

// The apiserver's read path for a watch event: stored bytes -> JSON line.
void BM_StoredToJsonPod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  const std::string stored = EncodeEnvelope(pod, kPodType);
  for (auto _ : state) {
    corev1::Pod p;
    (void)DecodeEnvelopeInto(stored, &p, /*discard_unknown=*/false);
    benchmark::DoNotOptimize(EncodeJson(p, kPodType));
  }
}
BENCHMARK(BM_StoredToJsonPod);

void BM_DecodeYamlPod(benchmark::State& state) {
  corev1::Pod pod;
  (void)DecodeJson(PodJson(), &pod);
  const std::string yaml = EncodeYaml(pod, kPodType);
  for (auto _ : state) {
    corev1::Pod p;
    benchmark::DoNotOptimize(DecodeYaml(yaml, &p).ok());
  }
  state.SetBytesProcessed(state.iterations() * yaml.size());
}
BENCHMARK(BM_DecodeYamlPod);

}  // namespace
}  // namespace kplane::objects

BENCHMARK_MAIN();
