#include "informer/envtest.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "informer/api_errors.h"
#include "informer/dynamic_informer.h"
#include "informer/test_util.h"
#include "kpctl/kube/kubeconfig.h"

namespace kplane::informer::envtest {
namespace {

const GroupVersionResource kConfigMaps{"", "v1", "configmaps"};

// A temporary directory for manifest files, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/kplane-envtest-test-XXXXXX";
    CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, std::string_view text) {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(EnvtestTest, StartsAppliesManifestsAndStops) {
  TempDir dir;
  dir.Write("01-namespace.yaml",
            "apiVersion: v1\nkind: Namespace\n"
            "metadata: {name: team-a}\n");
  dir.Write("02-configs.yaml", R"(
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: one, namespace: team-a}
  data: {k: "1"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: two, namespace: team-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: no-namespace}
)");
  dir.Write("README.md", "not a manifest");
  auto env = Environment::Start({.manifest_paths = {dir.path()}});
  ASSERT_TRUE(env.ok()) << env.status();
  DynamicClient* dyn = (*env)->dynamic();
  StatusOr<UnstructuredList> team =
      dyn->Resource(kConfigMaps).Namespace("team-a").List();
  ASSERT_TRUE(team.ok()) << team.status();
  ASSERT_EQ(team->items.size(), 2u);
  EXPECT_EQ(team->items[0].NestedString({"data", "k"}), "1");
  // A namespaced object without a namespace lands in "default".
  EXPECT_TRUE(
      dyn->Resource(kConfigMaps).Namespace("default").Get("no-namespace").ok());

  // Applying again updates what exists.
  StatusOr<std::vector<Unstructured>> again = (*env)->ApplyYaml(
      "apiVersion: v1\nkind: ConfigMap\n"
      "metadata: {name: one, namespace: team-a}\ndata: {k: \"2\"}\n");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].NestedString({"data", "k"}), "2");

  // The typed client sees the same server.
  auto typed =
      (*env)->client()->Get<objects::corev1::ConfigMap>("team-a", "one");
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ((*typed)->data().at("k"), "2");

  // The kubeconfig is one kubectl's rules read (kpctl's loader).
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  ASSERT_TRUE((*env)->WriteKubeconfig(kubeconfig).ok());
  auto loaded = kpctl::kube::LoadKubeconfig(
      kubeconfig, [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto config = kpctl::kube::ResolveClientConfig(*loaded, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, (*env)->server());

  // Stop ends the servers: a client made from rest_options() finds nobody.
  RestClientOptions ro = (*env)->rest_options();
  ro.max_retries = 0;
  (*env)->Stop();
  auto client = RestClient::New(ro);
  ASSERT_TRUE(client.ok());
  Status after =
      (*client)->Get<objects::corev1::ConfigMap>("team-a", "one").status();
  EXPECT_EQ(after.code(), StatusCode::kUnavailable) << after;
}

TEST(EnvtestTest, ManifestErrorsNameTheirFile) {
  TempDir dir;
  std::string bad = dir.Write("bad.yaml", "kind: ConfigMap\nmetadata: {}\n");
  StatusOr<std::vector<Unstructured>> r = ReadManifests({bad});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("bad.yaml"), std::string::npos)
      << r.status();
  EXPECT_TRUE(IsNotFound(ReadManifests({dir.path() + "/missing"}).status()));
  std::string unparsable = dir.Write("broken.yaml", "a: [\n");
  EXPECT_EQ(ReadManifests({unparsable}).status().code(),
            StatusCode::kInvalidArgument);
  auto env = Environment::Start({.manifest_paths = {bad}});
  EXPECT_EQ(env.status().code(), StatusCode::kInvalidArgument);
}

constexpr std::string_view kWidgetCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
)";

bool CrdsServed(Environment* env) {
  return env->dynamic()
      ->MapKind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
      .ok();
}

// Without CustomResourceDefinitions on the server the wait (and a manifest
// with a CRD in it) fails at once, saying so.
TEST(EnvtestTest, CrdWaitFailsClearlyWhenCrdsAreNotServed) {
  auto env = Environment::Start();
  ASSERT_TRUE(env.ok()) << env.status();
  if (CrdsServed(env->get())) {
    GTEST_SKIP() << "this API server serves CustomResourceDefinitions";
  }
  Status wait = (*env)->WaitForCRD("widgets.example.com", seconds(5));
  EXPECT_EQ(wait.code(), StatusCode::kFailedPrecondition) << wait;
  EXPECT_EQ(wait.message(),
            "the API server does not serve CustomResourceDefinitions "
            "(apiextensions.k8s.io/v1): no matches for kind "
            "\"CustomResourceDefinition\" in version "
            "\"apiextensions.k8s.io/v1\"");
  StatusOr<std::vector<Unstructured>> applied = (*env)->ApplyYaml(kWidgetCrd);
  EXPECT_EQ(applied.status().code(), StatusCode::kFailedPrecondition);
  TempDir dir;
  std::string crd =
      dir.Write("crd.yaml", kWidgetCrd.substr(0, kWidgetCrd.find("---")));
  auto with_crds = Environment::Start({.crd_paths = {crd}});
  EXPECT_EQ(with_crds.status().code(), StatusCode::kFailedPrecondition);
}

// With CustomResourceDefinitions served: the CRD is installed first and
// waited for, then its custom resource is created; the dynamic informer
// caches it. Runs once the API server serves CRDs.
TEST(EnvtestTest, InstallsCrdsThenTheirResources) {
  auto probe = Environment::Start();
  ASSERT_TRUE(probe.ok()) << probe.status();
  if (!CrdsServed(probe->get())) {
    GTEST_SKIP() << "this API server does not serve CustomResourceDefinitions";
  }
  probe->reset();
  TempDir dir;
  std::string crd =
      dir.Write("crd.yaml", kWidgetCrd.substr(0, kWidgetCrd.find("---")));
  std::string widget =
      dir.Write("widget.yaml", kWidgetCrd.substr(kWidgetCrd.find("---")));
  const auto started = std::chrono::steady_clock::now();
  auto env =
      Environment::Start({.crd_paths = {crd}, .manifest_paths = {widget}});
  ASSERT_TRUE(env.ok()) << env.status();
  // Reported, not asserted (docs/informer.md quotes it).
  std::printf(
      "envtest start to CRD served and custom resource created: "
      "%.1f ms\n",
      std::chrono::duration<double, std::milli>(
          std::chrono::steady_clock::now() - started)
          .count());
  const GroupVersionResource widgets{"example.com", "v1", "widgets"};
  StatusOr<Unstructured> w1 =
      (*env)->dynamic()->Resource(widgets).Namespace("default").Get("w1");
  ASSERT_TRUE(w1.ok()) << w1.status();
  EXPECT_EQ(w1->NestedInt64({"spec", "size"}), 3);
  EXPECT_TRUE((*env)->WaitForCRD("widgets.example.com", seconds(5)).ok());
  // A CRD that never appears: the wait ends at its deadline, saying why.
  Status never = (*env)->WaitForCRD("gadgets.example.com", milliseconds(300));
  EXPECT_EQ(never.code(), StatusCode::kDeadlineExceeded) << never;
  EXPECT_EQ(never.message(),
            "CustomResourceDefinition gadgets.example.com not Established "
            "within 300 ms (not found)");

  DynamicSharedInformerFactory factory((*env)->dynamic());
  factory.ForResource(widgets);
  factory.Start();
  ASSERT_TRUE(factory.WaitForCacheSync(testing::kTestDeadline));
  StatusOr<ObjectPtr> cached =
      factory.ListerFor(widgets).ByNamespace("default").Get("w1");
  ASSERT_TRUE(cached.ok()) << cached.status();
  factory.Shutdown();
}

}  // namespace
}  // namespace kplane::informer::envtest
