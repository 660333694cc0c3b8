// metrics.k8s.io/v1beta1 (apiserver/resource_metrics.h): the simulated
// usage function, then the API over HTTP against a real ApiServer.
#include "apiserver/resource_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "apiserver/test_server.h"
#include "objects/time.h"

namespace kplane::apiserver {
namespace {

using ::testing::HasSubstr;
using testing::Response;
using testing::TestServer;
namespace corev1 = objects::corev1;

constexpr int64_t kMi = 1024 * 1024;
constexpr int64_t kStart = 1796000000;  // 2026-11-30

corev1::Pod MakePod(
    std::string uid, std::vector<std::pair<std::string, std::string>> requests,
    std::vector<std::pair<std::string, std::string>> limits = {},
    int containers = 1) {
  corev1::Pod p;
  p.mutable_metadata()->set_name("p-" + uid);
  p.mutable_metadata()->set_namespace_("default");
  p.mutable_metadata()->set_uid(uid);
  p.mutable_spec()->set_nodename("node-1");
  p.mutable_status()->set_phase("Running");
  objects::SetTime(p.mutable_status()->mutable_starttime(), kStart);
  for (int i = 0; i < containers; ++i) {
    corev1::Container* c = p.mutable_spec()->add_containers();
    c->set_name("c" + std::to_string(i));
    for (const auto& [k, v] : requests) {
      (*c->mutable_resources()->mutable_requests())[k].set_string(v);
    }
    for (const auto& [k, v] : limits) {
      (*c->mutable_resources()->mutable_limits())[k].set_string(v);
    }
  }
  return p;
}

ResourceUsage Only(const corev1::Pod& p, int64_t at) {
  auto u = SimulatedPodUsage(p, at);
  EXPECT_EQ(u.size(), 1u);
  return u.empty() ? ResourceUsage{} : u.front().second;
}

TEST(SimulatedUsageTest, WobblesWithinBoundsAroundTheRequests) {
  corev1::Pod p = MakePod("u1", {{"cpu", "100m"}, {"memory", "64Mi"}});
  std::set<int64_t> cpus;
  for (int64_t at = kStart + 60; at < kStart + 60 + 3600; at += 15) {
    ResourceUsage u = Only(p, at);
    EXPECT_GE(u.cpu_nanocores, 50'000'000) << at;
    EXPECT_LE(u.cpu_nanocores, 110'000'000) << at;
    EXPECT_GE(u.memory_bytes, 64 * kMi * 75 / 100) << at;
    EXPECT_LE(u.memory_bytes, 64 * kMi * 95 / 100 + 1) << at;
    cpus.insert(u.cpu_nanocores);
  }
  EXPECT_GT(cpus.size(), 100u) << "the usage should move with time";
}

TEST(SimulatedUsageTest, IsAFunctionOfPodAndTime) {
  corev1::Pod p = MakePod("u1", {{"cpu", "100m"}});
  EXPECT_EQ(Only(p, kStart + 300).cpu_nanocores,
            Only(MakePod("u1", {{"cpu", "100m"}}), kStart + 300).cpu_nanocores);
  // Another pod (uid) has another phase.
  int differ = 0;
  for (int64_t at = kStart; at < kStart + 600; at += 15) {
    differ += Only(p, at).cpu_nanocores !=
              Only(MakePod("u2", {{"cpu", "100m"}}), at).cpu_nanocores;
  }
  EXPECT_GT(differ, 30);
}

TEST(SimulatedUsageTest, LimitsCapAndDefaultTheBase) {
  // Request above the limit's share: capped at the limit.
  for (int64_t at = kStart + 60; at < kStart + 1000; at += 15) {
    ResourceUsage u = Only(MakePod("u", {{"cpu", "1"}, {"memory", "1Gi"}},
                                   {{"cpu", "600m"}, {"memory", "800Mi"}}),
                           at);
    EXPECT_LE(u.cpu_nanocores, 600'000'000);
    EXPECT_LE(u.memory_bytes, 800 * kMi);
    // Limits only: around half the limit.
    ResourceUsage half =
        Only(MakePod("u", {}, {{"cpu", "2"}, {"memory", "1Gi"}}), at);
    EXPECT_GE(half.cpu_nanocores, 500'000'000);
    EXPECT_LE(half.cpu_nanocores, 1'100'000'000);
    EXPECT_LE(half.memory_bytes, 512 * kMi);
    // Nothing: 2m and 16Mi.
    ResourceUsage none = Only(MakePod("u", {}), at);
    EXPECT_GE(none.cpu_nanocores, 1'000'000);
    EXPECT_LE(none.cpu_nanocores, 2'200'000);
    EXPECT_LE(none.memory_bytes, 16 * kMi);
    EXPECT_GE(none.memory_bytes, 12 * kMi);
  }
}

TEST(SimulatedUsageTest, MemoryRampsUpOverTheFirstMinute) {
  corev1::Pod p = MakePod("u1", {{"memory", "100Mi"}});
  const int64_t at_start = Only(p, kStart).memory_bytes;
  const int64_t later = Only(p, kStart + 60).memory_bytes;
  EXPECT_LE(at_start, 100 * kMi * 48 / 100);
  EXPECT_GE(later, 100 * kMi * 75 / 100);
}

TEST(SimulatedUsageTest, AnnotationsFixThePodsUsage) {
  corev1::Pod p = MakePod("u1", {{"cpu", "100m"}}, {}, 2);
  (*p.mutable_metadata()->mutable_annotations())[kCpuUsageAnnotation] = "301m";
  (*p.mutable_metadata()->mutable_annotations())[kMemoryUsageAnnotation] =
      "100Mi";
  auto u = SimulatedPodUsage(p, kStart + 1000);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].first, "c0");
  EXPECT_EQ(u[0].second.cpu_nanocores, 150'500'000);
  EXPECT_EQ(u[1].second.cpu_nanocores, 150'500'000);
  EXPECT_EQ(u[0].second.memory_bytes + u[1].second.memory_bytes, 100 * kMi);
  // A malformed value is ignored: the simulation answers.
  (*p.mutable_metadata()->mutable_annotations())[kCpuUsageAnnotation] = "lots";
  u = SimulatedPodUsage(p, kStart + 1000);
  EXPECT_LE(u[0].second.cpu_nanocores, 110'000'000);
}

TEST(SimulatedUsageTest, NodeIsItsPodsPlusTheSystemShare) {
  corev1::Node n;
  n.mutable_metadata()->set_name("node-1");
  n.mutable_metadata()->set_uid("n1");
  corev1::Pod a = MakePod("a", {{"cpu", "1"}, {"memory", "1Gi"}});
  corev1::Pod b = MakePod("b", {{"cpu", "1"}, {"memory", "1Gi"}});
  const int64_t at = kStart + 120;
  const ResourceUsage idle = SimulatedNodeUsage(n, {}, at);
  EXPECT_GE(idle.cpu_nanocores, 25'000'000);
  EXPECT_LE(idle.cpu_nanocores, 55'000'000);
  const ResourceUsage busy = SimulatedNodeUsage(n, {&a, &b}, at);
  EXPECT_EQ(busy.cpu_nanocores, idle.cpu_nanocores + Only(a, at).cpu_nanocores +
                                    Only(b, at).cpu_nanocores);
  EXPECT_EQ(busy.memory_bytes, idle.memory_bytes + Only(a, at).memory_bytes +
                                   Only(b, at).memory_bytes);
  (*n.mutable_metadata()->mutable_annotations())[kCpuUsageAnnotation] = "3";
  EXPECT_EQ(SimulatedNodeUsage(n, {&a}, at).cpu_nanocores, 3'000'000'000);
}

// Quantities near their ends (8E cores is 8 * 10^27 nanocores) are held at
// int64's end, alone and in a node's sum, where they overflowed (UB).
TEST(SimulatedUsageTest, HugeQuantitiesSaturate) {
  corev1::Pod a = MakePod("a", {{"cpu", "8E"}, {"memory", "8E"}});
  corev1::Pod b = MakePod("b", {{"cpu", "1"}});
  (*b.mutable_metadata()->mutable_annotations())[kCpuUsageAnnotation] = "8E";
  (*b.mutable_metadata()->mutable_annotations())[kMemoryUsageAnnotation] = "7E";
  const int64_t at = kStart + 120;
  EXPECT_EQ(Only(b, at).cpu_nanocores, INT64_MAX);
  corev1::Node n;
  n.mutable_metadata()->set_name("node-1");
  n.mutable_metadata()->set_uid("n1");
  const ResourceUsage u = SimulatedNodeUsage(n, {&a, &b}, at);
  EXPECT_EQ(u.cpu_nanocores, INT64_MAX);
  EXPECT_EQ(u.memory_bytes, INT64_MAX);
  (*n.mutable_metadata()->mutable_annotations())[kCpuUsageAnnotation] = "9E";
  EXPECT_EQ(SimulatedNodeUsage(n, {}, at).cpu_nanocores, INT64_MAX);
}

TEST(SimulatedUsageTest, WhatHasMetrics) {
  corev1::Pod p = MakePod("u", {});
  EXPECT_TRUE(PodHasMetrics(p));
  p.mutable_status()->set_phase("Pending");
  EXPECT_FALSE(PodHasMetrics(p));
  p.mutable_status()->set_phase("Running");
  p.mutable_spec()->clear_nodename();
  EXPECT_FALSE(PodHasMetrics(p));
  corev1::Node n;
  EXPECT_FALSE(NodeHasMetrics(n));
  corev1::NodeCondition* c = n.mutable_status()->add_conditions();
  c->set_type("Ready");
  c->set_status("Unknown");
  EXPECT_FALSE(NodeHasMetrics(n));
  c->set_status("True");
  EXPECT_TRUE(NodeHasMetrics(n));
}

// ---------------------------------------------------------------------------
// Over HTTP

constexpr char kMetrics[] = "/apis/metrics.k8s.io/v1beta1";

void ReadyNode(TestServer& s, const std::string& name, const char* ready) {
  Response r = s.Post("/api/v1/nodes", R"({"metadata":{"name":")" + name +
                                           R"(","labels":{"zone":"a"}}})");
  ASSERT_EQ(r.code, 201) << r.body;
  r = s.Put(
      "/api/v1/nodes/" + name + "/status",
      R"({"metadata":{"name":")" + name +
          R"(","labels":{"zone":"a"}},"status":{"conditions":[{"type":"Ready","status":")" +
          ready + R"("}]}})");
  ASSERT_EQ(r.code, 200) << r.body;
}

void Pod(TestServer& s, const std::string& ns, const std::string& name,
         const std::string& phase, const std::string& annotations = "{}") {
  if (ns != "default") {
    s.Post("/api/v1/namespaces", R"({"metadata":{"name":")" + ns + R"("}})");
  }
  const std::string path = "/api/v1/namespaces/" + ns + "/pods";
  const std::string body = R"({"metadata":{"name":")" + name +
                           R"(","labels":{"app":")" + name +
                           R"("},"annotations":)" + annotations +
                           R"(},"spec":{"nodeName":"node-1","containers":[
      {"name":"app","image":"nginx","resources":{"requests":{"cpu":"100m",
      "memory":"64Mi"}}},{"name":"side","image":"busybox"}]},
      "status":{"phase":")" +
                           phase + R"("}})";
  Response r = s.Post(path, body);
  ASSERT_EQ(r.code, 201) << r.body;
  r = s.Put(path + "/" + name + "/status", body);
  ASSERT_EQ(r.code, 200) << r.body;
}

// A consistent list makes the watch caches catch up with the writes, so
// the metrics (served from the caches as they are) see them.
void CatchUp(TestServer& s) {
  ASSERT_EQ(s.Get("/api/v1/pods").code, 200);
  ASSERT_EQ(s.Get("/api/v1/nodes").code, 200);
}

std::vector<std::string> Names(const Response& r) {
  std::vector<std::string> out;
  const rapidjson::Value* items = r.At({"items"});
  if (items == nullptr || !items->IsArray()) return out;
  for (const auto& i : items->GetArray()) {
    std::string ns = i["metadata"].HasMember("namespace")
                         ? i["metadata"]["namespace"].GetString()
                         : "";
    out.push_back((ns.empty() ? "" : ns + "/") +
                  i["metadata"]["name"].GetString());
  }
  return out;
}

TEST(MetricsApiTest, DiscoveryListsTheGroupAsMetricsServerDoes) {
  TestServer s;
  Response groups = s.Get("/apis");
  ASSERT_EQ(groups.code, 200);
  EXPECT_THAT(groups.body, HasSubstr(R"("name":"metrics.k8s.io")"));
  Response list = s.Get(kMetrics);
  ASSERT_EQ(list.code, 200) << list.body;
  EXPECT_EQ(list.Str({"groupVersion"}), "metrics.k8s.io/v1beta1");
  EXPECT_THAT(
      list.body,
      HasSubstr(R"("name":"nodes","singularName":"","namespaced":)"
                R"(false,"kind":"NodeMetrics","verbs":["get","list"])"));
  EXPECT_THAT(list.body,
              HasSubstr(R"("name":"pods","singularName":"","namespaced":)"
                        R"(true,"kind":"PodMetrics","verbs":["get","list"])"));
  Response agg = s.Get("/apis",
                       "application/json;g=apidiscovery.k8s.io;v=v2;"
                       "as=APIGroupDiscoveryList");
  ASSERT_EQ(agg.code, 200);
  EXPECT_THAT(agg.body, HasSubstr(R"("name":"metrics.k8s.io")"));
  EXPECT_THAT(agg.body, HasSubstr(R"("kind":"PodMetrics")"));
}

TEST(MetricsApiTest, NodesAndPods) {
  TestServer s;
  ReadyNode(s, "node-1", "True");
  ReadyNode(s, "node-2", "False");  // unreachable: no metrics
  Pod(s, "default", "web", "Running");
  Pod(s, "default", "pending", "Pending");
  Pod(s, "other", "db", "Running",
      R"({"kubeletsim.kplane.io/cpu-usage":"500m"})");
  CatchUp(s);

  Response nodes = s.Get(std::string(kMetrics) + "/nodes");
  ASSERT_EQ(nodes.code, 200) << nodes.body;
  EXPECT_EQ(nodes.Str({"kind"}), "NodeMetricsList");
  EXPECT_EQ(nodes.Str({"apiVersion"}), "metrics.k8s.io/v1beta1");
  ASSERT_THAT(Names(nodes), ::testing::ElementsAre("node-1")) << nodes.body;
  const rapidjson::Value& n = nodes.json["items"][0];
  EXPECT_EQ(std::string(n["window"].GetString()), "15s");
  EXPECT_EQ(std::string(n["metadata"]["labels"]["zone"].GetString()), "a");
  StatusOr<objects::Timestamp> ts =
      objects::ParseRfc3339(n["timestamp"].GetString());
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(ts->seconds % kMetricsResolutionSeconds, 0);
  // At least the db pod's 500m plus the system share and web's.
  const std::string cpu = n["usage"]["cpu"].GetString();
  ASSERT_EQ(cpu.back(), 'n');
  EXPECT_GT(std::stoll(cpu), 500'000'000 + 25'000'000 + 50'000'000);
  EXPECT_THAT(std::string(n["usage"]["memory"].GetString()), HasSubstr("Ki"));

  Response one = s.Get(std::string(kMetrics) + "/nodes/node-1");
  ASSERT_EQ(one.code, 200) << one.body;
  EXPECT_EQ(one.Str({"kind"}), "NodeMetrics");
  Response notready = s.Get(std::string(kMetrics) + "/nodes/node-2");
  EXPECT_EQ(notready.code, 404);
  EXPECT_EQ(notready.Str({"message"}),
            R"(nodes.metrics.k8s.io "node-2" not found)");
  Response missing = s.Get(std::string(kMetrics) + "/nodes/node-9");
  EXPECT_EQ(missing.code, 404);
  EXPECT_EQ(missing.Str({"message"}), R"(nodes "node-9" not found)");

  Response all = s.Get(std::string(kMetrics) + "/pods");
  ASSERT_EQ(all.code, 200) << all.body;
  EXPECT_EQ(all.Str({"kind"}), "PodMetricsList");
  EXPECT_THAT(Names(all), ::testing::ElementsAre("default/web", "other/db"));
  Response ns = s.Get(std::string(kMetrics) + "/namespaces/other/pods");
  EXPECT_THAT(Names(ns), ::testing::ElementsAre("other/db"));
  Response selected =
      s.Get(std::string(kMetrics) + "/pods?labelSelector=app%3Dweb");
  EXPECT_THAT(Names(selected), ::testing::ElementsAre("default/web"));
  Response by_field = s.Get(std::string(kMetrics) +
                            "/pods?fieldSelector=metadata.namespace%3Dother");
  EXPECT_THAT(Names(by_field), ::testing::ElementsAre("other/db"));

  Response db = s.Get(std::string(kMetrics) + "/namespaces/other/pods/db");
  ASSERT_EQ(db.code, 200) << db.body;
  EXPECT_EQ(db.Str({"kind"}), "PodMetrics");
  ASSERT_EQ(db.json["containers"].Size(), 2u);
  EXPECT_EQ(std::string(db.json["containers"][0]["name"].GetString()), "app");
  EXPECT_EQ(std::string(db.json["containers"][0]["usage"]["cpu"].GetString()),
            "250000000n");
  EXPECT_EQ(std::string(db.json["containers"][1]["usage"]["cpu"].GetString()),
            "250000000n");

  Response pending =
      s.Get(std::string(kMetrics) + "/namespaces/default/pods/pending");
  EXPECT_EQ(pending.code, 404);
  EXPECT_EQ(pending.Str({"message"}),
            R"(pods.metrics.k8s.io "default/pending" not found)");
  Response gone = s.Get(std::string(kMetrics) + "/namespaces/default/pods/x");
  EXPECT_EQ(gone.code, 404);
  EXPECT_EQ(gone.Str({"message"}), R"(pods "x" not found)");
}

TEST(MetricsApiTest, ReadOnly) {
  TestServer s;
  Response post = s.Post(std::string(kMetrics) + "/namespaces/default/pods",
                         R"({"metadata":{"name":"x"}})");
  EXPECT_EQ(post.code, 405) << post.body;
  Response del = s.Delete(std::string(kMetrics) + "/nodes/n");
  EXPECT_EQ(del.code, 405) << del.body;
  Response watch = s.Get(std::string(kMetrics) + "/pods?watch=true");
  EXPECT_EQ(watch.code, 405) << watch.body;
  EXPECT_EQ(s.Get(std::string(kMetrics) + "/deployments").code, 404);
  EXPECT_EQ(s.Get("/apis/metrics.k8s.io/v1/nodes").code, 404);
  EXPECT_EQ(s.Get(std::string(kMetrics) + "/namespaces/default/nodes").code,
            404);
  EXPECT_EQ(s.Get(std::string(kMetrics) + "/pods?labelSelector=%3D%3D").code,
            400);
}

}  // namespace
}  // namespace kplane::apiserver
