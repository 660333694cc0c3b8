// The patch metadata of the test-only kplane.patchtest types: the same tags
// Kubernetes puts on the types these messages imitate.
#ifndef KPLANE_OBJECTS_PATCH_TESTDATA_PATCHTEST_TABLE_H_
#define KPLANE_OBJECTS_PATCH_TESTDATA_PATCHTEST_TABLE_H_

#include "objects/patch/patch_meta.h"

namespace kplane::patch {

inline const PatchMetaTable& PatchTestTable() {
  static const PatchMetaTable* t = [] {
    auto* t = new PatchMetaTable();
    const std::string p = "kplane.patchtest.";
    (*t).Add(p + "ObjectMeta", "ownerReferences", "merge", "uid")
        .Add(p + "ObjectMeta", "finalizers", "merge")
        .Add(p + "PodSpec", "volumes", "merge,retainKeys", "name")
        .Add(p + "PodSpec", "initContainers", "merge", "name")
        .Add(p + "PodSpec", "containers", "merge", "name")
        .Add(p + "PodSpec", "ephemeralContainers", "merge", "name")
        .Add(p + "PodSpec", "hostAliases", "merge", "ip")
        .Add(p + "PodSpec", "imagePullSecrets", "merge", "name")
        .Add(p + "Container", "ports", "merge", "containerPort")
        .Add(p + "Container", "env", "merge", "name")
        .Add(p + "Container", "volumeMounts", "merge", "mountPath")
        .Add(p + "EphemeralContainerCommon", "env", "merge", "name")
        .Add(p + "PodStatus", "conditions", "merge", "type")
        .Add(p + "PodStatus", "podIPs", "merge", "ip")
        .Add(p + "DeploymentSpec", "strategy", "retainKeys")
        .Add(p + "PodDisruptionBudgetSpec", "selector", "replace")
        .AddInline(p + "Volume", "volumeSource")
        .AddInline(p + "EphemeralContainer", "ephemeralContainerCommon");
    return t;
  }();
  return *t;
}

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_TESTDATA_PATCHTEST_TABLE_H_
