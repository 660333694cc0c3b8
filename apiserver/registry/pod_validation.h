// Internal to apiserver/registry: Pod and pod-template validation
// (pkg/apis/core/validation ValidatePodSpec, ValidatePodCreate,
// ValidatePodUpdate, ValidatePodStatusUpdate, ValidatePodTemplateSpec) and
// the QoS class computation, shared by the pod, deployment and replicaset
// strategies.
//
// Coverage: object metadata, containers and init containers (names,
// images, ports, env, envFrom, resources, volume mounts and devices,
// probes, lifecycle, pull and termination-message policies, security
// context), volumes (name, exactly one source; emptyDir, hostPath, secret,
// configMap, persistentVolumeClaim, nfs, downwardAPI, projected, csi, image
// sources checked), restart and DNS policies, DNS config, nodeSelector,
// tolerations, affinity node-selector terms, topology spread constraints,
// host aliases, readiness and scheduling gates, pod security context, and
// the single-field checks of PodSpec. Not covered: seccomp/AppArmor
// annotation-vs-field agreement, Windows and sysctl specifics.
//
// Thread-safety: pure functions.
#ifndef KPLANE_APISERVER_REGISTRY_POD_VALIDATION_H_
#define KPLANE_APISERVER_REGISTRY_POD_VALIDATION_H_

#include <string>

#include "objects/machinery/labels.h"
#include "objects/types.h"
#include "apiserver/registry/strategy.h"
#include "apiserver/registry/validation_util.h"

namespace kplane::apiserver::podvalidation {

// `resource_is_pod` tightens the hostNetwork/hostPort rule (templates may
// leave hostPort 0).
FieldErrors ValidatePodSpec(const objects::corev1::PodSpec& spec,
                            const validation::Path& p, bool resource_is_pod);
FieldErrors ValidatePodTemplateSpec(const objects::corev1::PodTemplateSpec& t,
                                    const validation::Path& p);
// ValidatePodTemplateSpecForReplicaSet: labels must match `selector`,
// restartPolicy Always, no activeDeadlineSeconds. `owner_kind` names the
// owning kind in the activeDeadlineSeconds message ("ReplicaSet").
FieldErrors ValidatePodTemplateForController(
    const objects::corev1::PodTemplateSpec& t,
    const machinery::LabelSelector& selector, const validation::Path& p,
    std::string_view owner_kind);

FieldErrors ValidatePodCreate(const objects::corev1::Pod& pod);
FieldErrors ValidatePodUpdate(const objects::corev1::Pod& pod,
                              const objects::corev1::Pod& old);
FieldErrors ValidatePodStatusUpdate(const objects::corev1::Pod& pod,
                                    const objects::corev1::Pod& old);

// "Guaranteed", "Burstable" or "BestEffort" (qos.ComputePodQOS).
std::string ComputeQOS(const objects::corev1::Pod& pod);

}  // namespace kplane::apiserver::podvalidation

#endif  // KPLANE_APISERVER_REGISTRY_POD_VALIDATION_H_
