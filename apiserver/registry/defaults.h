// Internal to apiserver/registry: Kubernetes 1.32 defaulting
// (pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go and the
// `+default=` markers of k8s.io/api), applied to our v1 protobuf objects.
// kube-apiserver runs these on every decoded request body; the strategies
// call them from Default().
//
// Pods get SetDefaults_Pod on top of the PodSpec defaults (enableServiceLinks,
// requests copied from limits, host ports under hostNetwork); pod templates
// in Deployments and ReplicaSets get only the PodSpec and container ones, as
// upstream.
//
// Thread-safety: pure functions on the caller's object.
#ifndef KPLANE_APISERVER_REGISTRY_DEFAULTS_H_
#define KPLANE_APISERVER_REGISTRY_DEFAULTS_H_

#include <string_view>

#include "objects/types.h"

namespace kplane::apiserver::defaults {

// imagePullPolicy of a container without one: Always for ":latest" or no
// tag (and no digest), IfNotPresent otherwise.
std::string_view DefaultPullPolicy(std::string_view image);

void DefaultPodSpec(objects::corev1::PodSpec* spec);
void DefaultPod(objects::corev1::Pod* pod);
// The v1 <-> internal conversion of PodStatus: podIP is authoritative when
// it disagrees with podIPs[0] (or podIPs is empty), and podIP is then
// podIPs[0]. Pods get it in DefaultPod; /status writes call it directly.
void NormalizePodIPs(objects::corev1::PodStatus* status);
void DefaultPodTemplate(objects::corev1::PodTemplateSpec* t);
void DefaultDeployment(objects::appsv1::Deployment* d);
void DefaultReplicaSet(objects::appsv1::ReplicaSet* rs);
void DefaultService(objects::corev1::Service* svc);
// Also folds stringData into data (the v1 -> internal conversion does it on
// every write; stringData wins on conflicts) and clears stringData.
void DefaultSecret(objects::corev1::Secret* s);
void DefaultNamespace(objects::corev1::Namespace* ns);
void DefaultNode(objects::corev1::Node* node);

}  // namespace kplane::apiserver::defaults

#endif  // KPLANE_APISERVER_REGISTRY_DEFAULTS_H_
