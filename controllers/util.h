// Shared helpers of the controllers: resources, selectors, owner references,
// pod readiness and availability, taints and tolerations. Modelled on
// Kubernetes' pkg/controller, pkg/api/v1/pod and component-helpers.
//
// Thread-safety: pure functions. Errors: none (selectors convert through
// objects::LabelSelectorAsSelector, objects/label_selector.h).
#ifndef KPLANE_CONTROLLERS_UTIL_H_
#define KPLANE_CONTROLLERS_UTIL_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/statusor.h"
#include "objects/machinery/labels.h"
#include "objects/scheme.h"
#include "objects/types.h"

namespace kplane::controllers {

namespace corev1 = objects::corev1;
namespace appsv1 = objects::appsv1;
namespace metav1 = objects::metav1;
namespace coordinationv1 = objects::coordinationv1;

// The served resources the controllers use (CHECKed to exist).
const objects::ResourceInfo& PodsResource();
const objects::ResourceInfo& NodesResource();
const objects::ResourceInfo& ReplicaSetsResource();
const objects::ResourceInfo& DeploymentsResource();
const objects::ResourceInfo& NamespacesResource();
const objects::ResourceInfo& LeasesResource();
const objects::ResourceInfo& JobsResource();      // batch/v1
const objects::ResourceInfo& CronJobsResource();  // batch/v1

machinery::Labels LabelMap(
    const google::protobuf::Map<std::string, std::string>& m);

// An owner reference with controller=true and blockOwnerDeletion=true.
metav1::OwnerReference ControllerRefTo(std::string_view api_version,
                                       std::string_view kind,
                                       const metav1::ObjectMeta& owner);

// Pod state. Active: not terminating and not Succeeded/Failed.
bool IsPodActive(const corev1::Pod& pod);
bool IsPodTerminating(const corev1::Pod& pod);
bool IsPodReady(const corev1::Pod& pod);
// Ready for at least `min_ready_seconds` at `now` (wall clock).
bool IsPodAvailable(const corev1::Pod& pod, int32_t min_ready_seconds,
                    WallTime now);
const corev1::PodCondition* FindPodCondition(const corev1::PodStatus& status,
                                             std::string_view type);
const corev1::NodeCondition* FindNodeCondition(const corev1::NodeStatus& status,
                                               std::string_view type);

// A toleration matches a taint (key/operator/value/effect as in
// v1.Toleration.ToleratesTaint).
bool Tolerates(const corev1::Toleration& t, const corev1::Taint& taint);
// Every taint with `effect` is tolerated by some toleration.
bool ToleratesAll(
    const corev1::PodSpec& spec,
    const google::protobuf::RepeatedPtrField<corev1::Taint>& taints,
    std::string_view effect);

// Node readiness as the scheduler sees it: condition Ready=True.
bool IsNodeReady(const corev1::Node& node);

// The index "node" on pods: spec.nodeName (unbound pods are not filed).
inline constexpr char kPodNodeIndex[] = "node";
std::vector<std::string> PodNodeIndexFunc(const google::protobuf::Message& obj);
// The index "controller-uid": the controllerRef uid of any object.
inline constexpr char kControllerUidIndex[] = "controller-uid";
std::vector<std::string> ControllerUidIndexFunc(
    const google::protobuf::Message& obj);

// intstr.GetScaledValueFromIntOrPercent: an integer as is, "N%" of
// `total` rounded up or down, held within int32 (a string that is not a
// percentage counts as 0%).
int64_t ScaledValueFromIntOrPercent(const objects::intstr::IntOrString& v,
                                    int64_t total, bool round_up);

// The bytes of `m` with map fields in key order (for equality and hashes).
std::string DeterministicBytes(const google::protobuf::Message& m);

// t + `seconds`, held at WallTime's ends instead of overflowing: deadlines
// from a spec's int64 seconds (activeDeadlineSeconds,
// startingDeadlineSeconds), which kube bounds only from below.
WallTime AddSeconds(WallTime t, int64_t seconds);

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_UTIL_H_
