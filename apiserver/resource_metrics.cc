#include "apiserver/resource_metrics.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>

#include "base/saturating.h"
#include "objects/machinery/quantity.h"
#include "objects/time.h"
#include "objects/unstructured.h"

namespace kplane::apiserver {

namespace {

namespace corev1 = objects::corev1;
using machinery::Quantity;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr int64_t kNanocoresPerCore = 1000000000;
constexpr int64_t kMi = 1024 * 1024;
constexpr int64_t kDefaultCpuNanocores = 2000000;  // 2m
constexpr int64_t kDefaultMemoryBytes = 16 * kMi;
constexpr int64_t kSystemCpuNanocores = 50000000;  // 50m
constexpr int64_t kSystemMemoryBytes = 256 * kMi;
constexpr double kMemoryRampSeconds = 60;

// FNV-1a: a hash that is the same in every build, so the simulated usage
// of a pod at a time is too.
uint64_t StableHash(std::string_view a, std::string_view b) {
  uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](std::string_view s) {
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  };
  mix(a);
  h = (h ^ 0xff) * 1099511628211ULL;
  mix(b);
  return h;
}

// A phase in [0, 2pi) from 16 bits of the hash.
double Phase(uint64_t h, int which) {
  return static_cast<double>((h >> (16 * which)) & 0xffff) / 65536.0 * 2 *
         std::numbers::pi;
}

// Periods between 2 and 10 minutes, so usage moves visibly from one
// 15-second sample to the next but does not jump around.
double Angle(uint64_t h, int which, int64_t at) {
  const double period = 120 + static_cast<double>((h >> (8 * which)) % 480);
  return Phase(h, which) +
         2 * std::numbers::pi * static_cast<double>(at) / period;
}

// `v` rounded, held at int64's ends (quantities up to 8E cores times 10^9
// nanocores are far past them; converting those was undefined).
int64_t RoundSaturating(double v) {
  constexpr double kEnd = 9.2233720368547748e18;  // 2^63, as a double
  if (!(v < kEnd)) return std::numeric_limits<int64_t>::max();  // and NaN
  if (v <= -kEnd) return std::numeric_limits<int64_t>::min();
  return std::llround(v);
}

// The amount of `resource` ("cpu" in nanocores, "memory" in bytes) in a
// requests or limits map, 0 when absent or malformed.
int64_t Amount(
    const google::protobuf::Map<std::string, objects::resourcepb::Quantity>& m,
    const std::string& resource) {
  auto it = m.find(resource);
  if (it == m.end()) return 0;
  StatusOr<Quantity> q = Quantity::Parse(it->second.string());
  if (!q.ok() || q->Sign() <= 0) return 0;
  if (resource == "cpu") {
    return RoundSaturating(q->AsApproximateDouble() * kNanocoresPerCore);
  }
  return q->Value();
}

// An annotation's quantity, if present and valid.
std::optional<Quantity> AnnotatedQuantity(const objects::metav1::ObjectMeta& m,
                                          const char* key) {
  auto it = m.annotations().find(key);
  if (it == m.annotations().end()) return std::nullopt;
  StatusOr<Quantity> q = Quantity::Parse(it->second);
  if (!q.ok() || q->Sign() < 0) return std::nullopt;
  return *q;
}

// The wobbling usage around `cpu_base`/`memory_base`, capped at the limits
// (0: none). `ramp` scales memory (a container that just started).
ResourceUsage Wobble(uint64_t h, int64_t at, int64_t cpu_base,
                     int64_t cpu_limit, int64_t memory_base,
                     int64_t memory_limit, double ramp) {
  const double cpu_factor = 0.8 + 0.25 * std::sin(Angle(h, 0, at)) +
                            0.05 * std::sin(Angle(h, 1, at) * 7);
  const double memory_factor = (0.85 + 0.1 * std::sin(Angle(h, 2, at))) * ramp;
  ResourceUsage u;
  u.cpu_nanocores = std::max<int64_t>(
      1, RoundSaturating(static_cast<double>(cpu_base) * cpu_factor));
  u.memory_bytes = std::max<int64_t>(
      4096, RoundSaturating(static_cast<double>(memory_base) * memory_factor));
  if (cpu_limit > 0) u.cpu_nanocores = std::min(u.cpu_nanocores, cpu_limit);
  if (memory_limit > 0) u.memory_bytes = std::min(u.memory_bytes, memory_limit);
  return u;
}

int64_t Base(int64_t request, int64_t limit, int64_t fallback) {
  if (request > 0) return request;
  if (limit > 0) return limit / 2;
  return fallback;
}

// "1234n" and "1234Ki", the units metrics-server's quantities print in.
std::string CpuString(int64_t nanocores) {
  return std::to_string(nanocores) + "n";
}
std::string MemoryString(int64_t bytes) {
  return std::to_string(bytes / 1024) + "Ki";
}

void Str(Writer* w, std::string_view s) {
  w->String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
void Key(Writer* w, std::string_view k) {
  w->Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}

void WriteUsage(Writer* w, const ResourceUsage& u) {
  Key(w, "usage");
  w->StartObject();
  Key(w, "cpu");
  Str(w, CpuString(u.cpu_nanocores));
  Key(w, "memory");
  Str(w, MemoryString(u.memory_bytes));
  w->EndObject();
}

// metadata, timestamp and window, as metrics-server writes them (the
// object is made now: creationTimestamp is the time of the answer).
void WriteHead(Writer* w, std::string_view kind,
               const objects::metav1::ObjectMeta& of,
               const std::string& timestamp, const std::string& created) {
  Key(w, "kind");
  Str(w, kind);
  Key(w, "apiVersion");
  Str(w, "metrics.k8s.io/v1beta1");
  Key(w, "metadata");
  w->StartObject();
  Key(w, "name");
  Str(w, of.name());
  if (!of.namespace_().empty()) {
    Key(w, "namespace");
    Str(w, of.namespace_());
  }
  Key(w, "creationTimestamp");
  Str(w, created);
  if (!of.labels().empty()) {
    Key(w, "labels");
    w->StartObject();
    std::map<std::string, std::string> sorted(of.labels().begin(),
                                              of.labels().end());
    for (const auto& [k, v] : sorted) {
      Key(w, k);
      Str(w, v);
    }
    w->EndObject();
  }
  w->EndObject();
  Key(w, "timestamp");
  Str(w, timestamp);
  Key(w, "window");
  Str(w, std::to_string(kMetricsResolutionSeconds) + "s");
}

void WritePodMetrics(Writer* w, const corev1::Pod& pod,
                     const std::string& timestamp, const std::string& created,
                     int64_t at) {
  w->StartObject();
  WriteHead(w, "PodMetrics", pod.metadata(), timestamp, created);
  Key(w, "containers");
  w->StartArray();
  for (const auto& [name, usage] : SimulatedPodUsage(pod, at)) {
    w->StartObject();
    Key(w, "name");
    Str(w, name);
    WriteUsage(w, usage);
    w->EndObject();
  }
  w->EndArray();
  w->EndObject();
}

void WriteNodeMetrics(Writer* w, const corev1::Node& node,
                      const std::vector<const corev1::Pod*>& pods,
                      const std::string& timestamp, const std::string& created,
                      int64_t at) {
  w->StartObject();
  WriteHead(w, "NodeMetrics", node.metadata(), timestamp, created);
  WriteUsage(w, SimulatedNodeUsage(node, pods, at));
  w->EndObject();
}

void StartList(Writer* w, std::string_view kind) {
  w->StartObject();
  Key(w, "kind");
  Str(w, kind);
  Key(w, "apiVersion");
  Str(w, "metrics.k8s.io/v1beta1");
  Key(w, "metadata");
  w->StartObject();
  w->EndObject();
  Key(w, "items");
  w->StartArray();
}

void EndList(Writer* w) {
  w->EndArray();
  w->EndObject();
}

std::string Body(const rapidjson::StringBuffer& b) {
  return std::string(b.GetString(), b.GetSize());
}

const objects::ResourceInfo& MakeResource(bool nodes) {
  auto* kind = new objects::KindInfo;
  kind->gv = {kMetricsGroup, "v1beta1"};
  kind->kind = nodes ? "NodeMetrics" : "PodMetrics";
  kind->descriptor = objects::Unstructured::descriptor();
  kind->prototype = &objects::Unstructured::default_instance();
  auto* list_kind = new objects::KindInfo(*kind);
  list_kind->kind = kind->kind + "List";
  list_kind->descriptor = objects::UnstructuredList::descriptor();
  list_kind->prototype = &objects::UnstructuredList::default_instance();
  auto* r = new objects::ResourceInfo;
  r->gv = kind->gv;
  r->resource = nodes ? "nodes" : "pods";
  r->singular = "";  // as metrics-server's discovery lists them
  r->namespaced = !nodes;
  r->kind = kind;
  r->list_kind = list_kind;
  r->verbs = {"get", "list"};
  return *r;
}

}  // namespace

bool PodHasMetrics(const corev1::Pod& pod) {
  return pod.status().phase() == "Running" && !pod.spec().nodename().empty();
}

bool NodeHasMetrics(const corev1::Node& node) {
  for (const corev1::NodeCondition& c : node.status().conditions()) {
    if (c.type() == "Ready") return c.status() == "True";
  }
  return false;
}

std::vector<std::pair<std::string, ResourceUsage>> SimulatedPodUsage(
    const corev1::Pod& pod, int64_t at) {
  std::vector<std::pair<std::string, ResourceUsage>> out;
  const int n = pod.spec().containers_size();
  if (n == 0) return out;
  double ramp = 1;
  if (pod.status().has_starttime()) {
    const double age =
        static_cast<double>(at - pod.status().starttime().seconds());
    ramp = std::clamp(0.5 + 0.5 * age / kMemoryRampSeconds, 0.5, 1.0);
  }
  for (const corev1::Container& c : pod.spec().containers()) {
    const auto& req = c.resources().requests();
    const auto& lim = c.resources().limits();
    const int64_t cpu_limit = Amount(lim, "cpu");
    const int64_t memory_limit = Amount(lim, "memory");
    out.emplace_back(
        c.name(),
        Wobble(StableHash(pod.metadata().uid(), c.name()), at,
               Base(Amount(req, "cpu"), cpu_limit, kDefaultCpuNanocores),
               cpu_limit,
               Base(Amount(req, "memory"), memory_limit, kDefaultMemoryBytes),
               memory_limit, ramp));
  }
  // The annotations fix the pod's total; the first container takes the
  // remainder of the even split.
  if (std::optional<Quantity> cpu =
          AnnotatedQuantity(pod.metadata(), kCpuUsageAnnotation)) {
    const int64_t total =
        RoundSaturating(cpu->AsApproximateDouble() * kNanocoresPerCore);
    for (auto& [name, u] : out) u.cpu_nanocores = total / n;
    out.front().second.cpu_nanocores += total % n;
  }
  if (std::optional<Quantity> memory =
          AnnotatedQuantity(pod.metadata(), kMemoryUsageAnnotation)) {
    const int64_t total = memory->Value();
    for (auto& [name, u] : out) u.memory_bytes = total / n;
    out.front().second.memory_bytes += total % n;
  }
  return out;
}

ResourceUsage SimulatedNodeUsage(const corev1::Node& node,
                                 const std::vector<const corev1::Pod*>& pods,
                                 int64_t at) {
  ResourceUsage u = Wobble(StableHash(node.metadata().uid(), ""), at,
                           kSystemCpuNanocores, 0, kSystemMemoryBytes, 0, 1);
  for (const corev1::Pod* p : pods) {
    for (const auto& [name, c] : SimulatedPodUsage(*p, at)) {
      u.cpu_nanocores = SaturatingAdd(u.cpu_nanocores, c.cpu_nanocores);
      u.memory_bytes = SaturatingAdd(u.memory_bytes, c.memory_bytes);
    }
  }
  if (std::optional<Quantity> cpu =
          AnnotatedQuantity(node.metadata(), kCpuUsageAnnotation)) {
    u.cpu_nanocores =
        RoundSaturating(cpu->AsApproximateDouble() * kNanocoresPerCore);
  }
  if (std::optional<Quantity> memory =
          AnnotatedQuantity(node.metadata(), kMemoryUsageAnnotation)) {
    u.memory_bytes = memory->Value();
  }
  return u;
}

const objects::ResourceInfo& NodeMetricsResource() {
  static const objects::ResourceInfo& r = MakeResource(true);
  return r;
}

const objects::ResourceInfo& PodMetricsResource() {
  static const objects::ResourceInfo& r = MakeResource(false);
  return r;
}

ApiResult<std::string> MetricsApi::Serve(const MetricsRequest& r) const {
  const int64_t at =
      r.now_unix_seconds - r.now_unix_seconds % kMetricsResolutionSeconds;
  const std::string timestamp = objects::FormatRfc3339(at);
  if (r.resource == "pods") return ServePods(r, timestamp, at);
  return ServeNodes(r, timestamp, at);
}

ApiResult<std::string> MetricsApi::ServePods(const MetricsRequest& r,
                                             const std::string& timestamp,
                                             int64_t at) const {
  const std::string created = objects::FormatRfc3339(r.now_unix_seconds);
  rapidjson::StringBuffer b;
  Writer w(b);
  if (!r.name.empty()) {
    StatusOr<ObjectPtr> got = pods_->Get(r.ns, r.name);
    if (!got.ok() && got.status().Is(StatusCode::kNotFound)) {
      return ApiError::NotFound(
          *objects::Scheme::Default().FindResource("", "v1", "pods"), r.name);
    }
    if (!got.ok()) return ApiError::FromStatus(got.status());
    const auto& pod = static_cast<const corev1::Pod&>(**got);
    if (!PodHasMetrics(pod)) {
      return ApiError::NotFound(PodMetricsResource(),
                                std::string(r.ns) + "/" + std::string(r.name));
    }
    WritePodMetrics(&w, pod, timestamp, created, at);
    return Body(b);
  }
  ListOptions lo;
  lo.predicate = [&r](const google::protobuf::Message& m) {
    return PodHasMetrics(static_cast<const corev1::Pod&>(m)) &&
           (r.pod_predicate == nullptr || r.pod_predicate(m));
  };
  StatusOr<ListResult> pods = pods_->List(r.ns, 0, false, lo);
  if (!pods.ok()) return ApiError::FromStatus(pods.status());
  StartList(&w, "PodMetricsList");
  for (const ObjectPtr& p : pods->items) {
    WritePodMetrics(&w, static_cast<const corev1::Pod&>(*p), timestamp, created,
                    at);
  }
  EndList(&w);
  return Body(b);
}

ApiResult<std::string> MetricsApi::ServeNodes(const MetricsRequest& r,
                                              const std::string& timestamp,
                                              int64_t at) const {
  const std::string created = objects::FormatRfc3339(r.now_unix_seconds);
  std::vector<ObjectPtr> nodes;
  if (!r.name.empty()) {
    StatusOr<ObjectPtr> got = nodes_->Get("", r.name);
    if (!got.ok() && got.status().Is(StatusCode::kNotFound)) {
      return ApiError::NotFound(
          *objects::Scheme::Default().FindResource("", "v1", "nodes"), r.name);
    }
    if (!got.ok()) return ApiError::FromStatus(got.status());
    if (!NodeHasMetrics(static_cast<const corev1::Node&>(**got))) {
      return ApiError::NotFound(NodeMetricsResource(), r.name);
    }
    nodes.push_back(*got);
  } else {
    ListOptions lo;
    lo.predicate = [&r](const google::protobuf::Message& m) {
      return NodeHasMetrics(static_cast<const corev1::Node&>(m)) &&
             (r.node_predicate == nullptr || r.node_predicate(m));
    };
    StatusOr<ListResult> listed = nodes_->List("", 0, false, lo);
    if (!listed.ok()) return ApiError::FromStatus(listed.status());
    nodes = std::move(listed->items);
  }
  // The running pods by node, in one pass over the pod cache; the pod
  // objects stay alive in `pods` while their pointers are used.
  std::map<std::string, const corev1::Node*, std::less<>> wanted;
  for (const ObjectPtr& n : nodes) {
    const auto& node = static_cast<const corev1::Node&>(*n);
    wanted.emplace(node.metadata().name(), &node);
  }
  ListOptions lo;
  lo.predicate = [&wanted](const google::protobuf::Message& m) {
    const auto& pod = static_cast<const corev1::Pod&>(m);
    return PodHasMetrics(pod) && wanted.count(pod.spec().nodename()) > 0;
  };
  StatusOr<ListResult> pods = pods_->List("", 0, false, lo);
  if (!pods.ok()) return ApiError::FromStatus(pods.status());
  std::map<std::string, std::vector<const corev1::Pod*>, std::less<>> by_node;
  for (const ObjectPtr& p : pods->items) {
    const auto& pod = static_cast<const corev1::Pod&>(*p);
    by_node[pod.spec().nodename()].push_back(&pod);
  }
  static const std::vector<const corev1::Pod*> kNone;
  auto pods_of =
      [&by_node](
          const std::string& node) -> const std::vector<const corev1::Pod*>& {
    auto it = by_node.find(node);
    return it == by_node.end() ? kNone : it->second;
  };
  rapidjson::StringBuffer b;
  Writer w(b);
  if (!r.name.empty()) {
    const auto& node = static_cast<const corev1::Node&>(*nodes.front());
    WriteNodeMetrics(&w, node, pods_of(node.metadata().name()), timestamp,
                     created, at);
    return Body(b);
  }
  StartList(&w, "NodeMetricsList");
  for (const ObjectPtr& n : nodes) {
    const auto& node = static_cast<const corev1::Node&>(*n);
    WriteNodeMetrics(&w, node, pods_of(node.metadata().name()), timestamp,
                     created, at);
  }
  EndList(&w);
  return Body(b);
}

}  // namespace kplane::apiserver
