#include "objects/patch/patch_meta.h"

#include <gtest/gtest.h>

#include "objects/patch/test_util.h"

namespace kplane::patch {
namespace {

TEST(PatchMetaTableTest, ParsesStrategies) {
  PatchMetaTable t;
  t.Add("m.A", "x", "merge,retainKeys", "name").Add("m.A", "y", "replace");
  const PatchMeta* x = t.Find("m.A", "x");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(x->IsMerge());
  EXPECT_TRUE(x->RetainKeys());
  EXPECT_FALSE(x->IsReplace());
  EXPECT_EQ(x->merge_key, "name");
  EXPECT_TRUE(t.Find("m.A", "y")->IsReplace());
  EXPECT_EQ(t.Find("m.A", "z"), nullptr);
  EXPECT_EQ(t.Find("m.B", "x"), nullptr);
}

TEST(PatchSchemaTest, WalksDescriptorsAlongJsonNames) {
  PatchSchema pod = PodSchema();
  EXPECT_EQ(pod.Name(), "kplane.patchtest.Pod");
  PatchSchema::Field spec = pod.Lookup("spec");
  EXPECT_TRUE(spec.meta.empty());
  ASSERT_TRUE(spec.schema.known());
  EXPECT_EQ(spec.schema.Name(), "kplane.patchtest.PodSpec");

  PatchSchema::Field containers = spec.schema.Lookup("containers");
  EXPECT_TRUE(containers.meta.IsMerge());
  EXPECT_EQ(containers.meta.merge_key, "name");
  EXPECT_EQ(containers.schema.Name(), "kplane.patchtest.Container");
  PatchSchema::Field ports = containers.schema.Lookup("ports");
  EXPECT_EQ(ports.meta.merge_key, "containerPort");

  // Scalars and scalar maps have no sub-schema.
  EXPECT_FALSE(spec.schema.Lookup("nodeName").schema.known());
  EXPECT_FALSE(spec.schema.Lookup("nodeSelector").schema.known());
  // Unknown names are schemaless, not errors.
  PatchSchema::Field unknown = spec.schema.Lookup("noSuchField");
  EXPECT_FALSE(unknown.schema.known());
  EXPECT_TRUE(unknown.meta.empty());
}

TEST(PatchSchemaTest, LooksThroughInlineFields) {
  PatchSchema spec = PodSchema().Lookup("spec").schema;
  PatchSchema volume = spec.Lookup("volumes").schema;
  EXPECT_EQ(volume.Name(), "kplane.patchtest.Volume");
  PatchSchema::Field cm = volume.Lookup("configMap");
  EXPECT_EQ(cm.schema.Name(), "kplane.patchtest.ConfigMapVolumeSource");
  PatchSchema eph = spec.Lookup("ephemeralContainers").schema;
  PatchSchema::Field env = eph.Lookup("env");
  EXPECT_TRUE(env.meta.IsMerge());
  EXPECT_EQ(env.meta.merge_key, "name");
}

TEST(PatchSchemaTest, MapOfMessagesLeadsToValueType) {
  PatchSchema spec = PodSchema().Lookup("spec").schema;
  PatchSchema::Field sidecars = spec.Lookup("sidecars");
  ASSERT_TRUE(sidecars.schema.known());
  PatchSchema::Field entry = sidecars.schema.Lookup("any-key");
  EXPECT_EQ(entry.schema.Name(), "kplane.patchtest.Container");
  EXPECT_EQ(entry.schema.Lookup("env").meta.merge_key, "name");
}

TEST(KubernetesPatchMetaTableTest, HasUpstreamTags) {
  const PatchMetaTable& t = KubernetesPatchMetaTable();
  struct C {
    const char* msg;
    const char* field;
    const char* strategy;
    const char* key;
  } cases[] = {
      {"k8s.io.api.core.v1.PodSpec", "containers", "merge", "name"},
      {"k8s.io.api.core.v1.PodSpec", "initContainers", "merge", "name"},
      {"k8s.io.api.core.v1.PodSpec", "ephemeralContainers", "merge", "name"},
      {"k8s.io.api.core.v1.PodSpec", "volumes", "merge", "name"},
      {"k8s.io.api.core.v1.PodSpec", "imagePullSecrets", "merge", "name"},
      {"k8s.io.api.core.v1.PodSpec", "hostAliases", "merge", "ip"},
      {"k8s.io.api.core.v1.PodSpec", "topologySpreadConstraints", "merge",
       "topologyKey"},
      {"k8s.io.api.core.v1.Container", "env", "merge", "name"},
      {"k8s.io.api.core.v1.Container", "ports", "merge", "containerPort"},
      {"k8s.io.api.core.v1.Container", "volumeMounts", "merge", "mountPath"},
      {"k8s.io.api.core.v1.EphemeralContainerCommon", "env", "merge", "name"},
      {"k8s.io.api.core.v1.ServiceSpec", "ports", "merge", "port"},
      {"k8s.io.api.core.v1.NodeStatus", "conditions", "merge", "type"},
      {"k8s.io.api.core.v1.NodeStatus", "addresses", "merge", "type"},
      {"k8s.io.api.core.v1.PodStatus", "conditions", "merge", "type"},
      {"k8s.io.api.core.v1.PodStatus", "podIPs", "merge", "ip"},
      {"k8s.io.api.apps.v1.DeploymentStatus", "conditions", "merge", "type"},
      {"k8s.io.api.apps.v1.DeploymentSpec", "strategy", "retainKeys", ""},
      {"k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences",
       "merge", "uid"},
      {"k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "merge",
       ""},
      {"k8s.io.api.policy.v1.PodDisruptionBudgetSpec", "selector", "replace",
       ""},
  };
  for (const auto& c : cases) {
    const PatchMeta* m = t.Find(c.msg, c.field);
    ASSERT_NE(m, nullptr) << c.msg << "." << c.field;
    EXPECT_TRUE(m->Has(c.strategy)) << c.msg << "." << c.field;
    EXPECT_EQ(m->merge_key, c.key) << c.msg << "." << c.field;
  }
  EXPECT_TRUE(t.Find("k8s.io.api.core.v1.PodSpec", "volumes")->RetainKeys());
  // Tolerations carry no patch strategy upstream: they are replaced.
  EXPECT_EQ(t.Find("k8s.io.api.core.v1.PodSpec", "tolerations"), nullptr);
  EXPECT_TRUE(t.IsInline("k8s.io.api.core.v1.Volume", "volumeSource"));
}

}  // namespace
}  // namespace kplane::patch
