#include "controllers/util.h"

#include <algorithm>
#include <cmath>

#include "base/logging.h"
#include "base/saturating.h"
#include "base/strings.h"
#include "informer/rest_client.h"
#include "objects/batch_types.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {
const objects::ResourceInfo& Must(const objects::ResourceInfo* r) {
  CHECK(r != nullptr);
  return *r;
}
}  // namespace

const objects::ResourceInfo& PodsResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<corev1::Pod>());
  return r;
}
const objects::ResourceInfo& NodesResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<corev1::Node>());
  return r;
}
const objects::ResourceInfo& JobsResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<objects::batchv1::Job>());
  return r;
}

const objects::ResourceInfo& CronJobsResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<objects::batchv1::CronJob>());
  return r;
}

const objects::ResourceInfo& ReplicaSetsResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<appsv1::ReplicaSet>());
  return r;
}
const objects::ResourceInfo& DeploymentsResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<appsv1::Deployment>());
  return r;
}
const objects::ResourceInfo& NamespacesResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<corev1::Namespace>());
  return r;
}
const objects::ResourceInfo& LeasesResource() {
  static const objects::ResourceInfo& r =
      Must(informer::RestClient::ResourceFor<coordinationv1::Lease>());
  return r;
}

machinery::Labels LabelMap(
    const google::protobuf::Map<std::string, std::string>& m) {
  return machinery::Labels(m.begin(), m.end());
}

metav1::OwnerReference ControllerRefTo(std::string_view api_version,
                                       std::string_view kind,
                                       const metav1::ObjectMeta& owner) {
  metav1::OwnerReference ref;
  ref.set_apiversion(std::string(api_version));
  ref.set_kind(std::string(kind));
  ref.set_name(owner.name());
  ref.set_uid(owner.uid());
  ref.set_controller(true);
  ref.set_blockownerdeletion(true);
  return ref;
}

bool IsPodTerminating(const corev1::Pod& pod) {
  return objects::IsBeingDeleted(pod.metadata());
}

bool IsPodActive(const corev1::Pod& pod) {
  const std::string& phase = pod.status().phase();
  return phase != "Succeeded" && phase != "Failed" && !IsPodTerminating(pod);
}

const corev1::PodCondition* FindPodCondition(const corev1::PodStatus& status,
                                             std::string_view type) {
  for (const corev1::PodCondition& c : status.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

const corev1::NodeCondition* FindNodeCondition(const corev1::NodeStatus& status,
                                               std::string_view type) {
  for (const corev1::NodeCondition& c : status.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsPodReady(const corev1::Pod& pod) {
  const corev1::PodCondition* c = FindPodCondition(pod.status(), "Ready");
  return c != nullptr && c->status() == "True";
}

bool IsPodAvailable(const corev1::Pod& pod, int32_t min_ready_seconds,
                    WallTime now) {
  const corev1::PodCondition* c = FindPodCondition(pod.status(), "Ready");
  if (c == nullptr || c->status() != "True") return false;
  if (min_ready_seconds <= 0) return true;
  if (objects::IsZero(c->lasttransitiontime())) return false;
  int64_t since = objects::UnixSeconds(c->lasttransitiontime());
  int64_t now_s =
      std::chrono::duration_cast<seconds>(now.time_since_epoch()).count();
  return since + min_ready_seconds <= now_s;
}

bool Tolerates(const corev1::Toleration& t, const corev1::Taint& taint) {
  if (!t.effect().empty() && t.effect() != taint.effect()) return false;
  if (!t.key().empty() && t.key() != taint.key()) return false;
  if (t.operator_() == "Exists") return true;
  // "" or "Equal": an empty key with Equal matches nothing (invalid).
  if (t.key().empty()) return false;
  return t.value() == taint.value();
}

bool ToleratesAll(
    const corev1::PodSpec& spec,
    const google::protobuf::RepeatedPtrField<corev1::Taint>& taints,
    std::string_view effect) {
  for (const corev1::Taint& taint : taints) {
    if (taint.effect() != effect) continue;
    bool ok = false;
    for (const corev1::Toleration& t : spec.tolerations()) {
      if (Tolerates(t, taint)) {
        ok = true;
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

bool IsNodeReady(const corev1::Node& node) {
  const corev1::NodeCondition* c = FindNodeCondition(node.status(), "Ready");
  return c != nullptr && c->status() == "True";
}

std::vector<std::string> PodNodeIndexFunc(
    const google::protobuf::Message& obj) {
  const auto& pod = static_cast<const corev1::Pod&>(obj);
  if (pod.spec().nodename().empty()) return {};
  return {pod.spec().nodename()};
}

std::vector<std::string> ControllerUidIndexFunc(
    const google::protobuf::Message& obj) {
  const metav1::ObjectMeta* meta = objects::GetObjectMeta(obj);
  if (meta == nullptr) return {};
  const metav1::OwnerReference* ref = objects::ControllerRef(*meta);
  if (ref == nullptr) return {};
  return {ref->uid()};
}

std::string DeterministicBytes(const google::protobuf::Message& m) {
  return objects::SerializeDeterministic(m);
}

WallTime AddSeconds(WallTime t, int64_t seconds) {
  return SaturatingAdd(t, SaturatingSeconds(seconds));
}

int64_t ScaledValueFromIntOrPercent(const objects::intstr::IntOrString& v,
                                    int64_t total, bool round_up) {
  if (v.type() != 1) return v.intval();
  const std::string& s = v.strval();
  // kube: "invalid value for IntOrString: invalid type: string is not a
  // percentage" (validation refuses such values before they get here).
  if (s.empty() || s.back() != '%') return 0;
  const double scaled =
      static_cast<double>(ParseInt64(s.substr(0, s.size() - 1)).value_or(0)) *
      static_cast<double>(total) / 100.0;
  // Held within int32 (every caller narrows to it): validation bounds a
  // percentage only for some fields (maxSurge "5000000000%" is valid, as in
  // kube), and a double beyond the target type is undefined behaviour to
  // convert.
  return static_cast<int64_t>(std::clamp(
      round_up ? std::ceil(scaled) : std::floor(scaled),
      static_cast<double>(INT32_MIN), static_cast<double>(INT32_MAX)));
}

}  // namespace kplane::controllers
