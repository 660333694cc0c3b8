#include "controllers/disruption_controller.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/apps_workloads_types.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

constexpr char kDisruptionAllowed[] = "DisruptionAllowed";

// meta.SetStatusCondition: the transition time moves only when the status
// does.
void SetCondition(google::protobuf::RepeatedPtrField<metav1::Condition>* all,
                  metav1::Condition want, WallTime now) {
  for (auto& c : *all) {
    if (c.type() != want.type()) continue;
    if (c.status() != want.status()) {
      objects::SetTime(want.mutable_lasttransitiontime(), now);
    } else {
      *want.mutable_lasttransitiontime() = c.lasttransitiontime();
    }
    c = std::move(want);
    return;
  }
  objects::SetTime(want.mutable_lasttransitiontime(), now);
  *all->Add() = std::move(want);
}

metav1::Condition Allowed(bool allowed, int64_t generation, std::string reason,
                          std::string message = "") {
  metav1::Condition c;
  c.set_type(kDisruptionAllowed);
  c.set_status(allowed ? "True" : "False");
  c.set_observedgeneration(generation);
  c.set_reason(std::move(reason));
  c.set_message(std::move(message));
  return c;
}

}  // namespace

const objects::ResourceInfo& PodDisruptionBudgetsResource() {
  static const objects::ResourceInfo* r =
      informer::RestClient::ResourceFor<policyv1::PodDisruptionBudget>();
  CHECK(r != nullptr);
  return *r;
}

bool BudgetSelectsPod(const policyv1::PodDisruptionBudget& pdb,
                      const corev1::Pod& pod) {
  if (!pdb.spec().has_selector()) return false;
  if (pdb.metadata().namespace_() != pod.metadata().namespace_()) return false;
  StatusOr<machinery::LabelSelector> selector =
      objects::LabelSelectorAsSelector(pdb.spec().selector());
  return selector.ok() && selector->Matches(LabelMap(pod.metadata().labels()));
}

DisruptionController::DisruptionController(DisruptionControllerOptions options)
    : Controller("disruption", options.clock, options.metrics),
      options_(std::move(options)) {
  CHECK(options_.api != nullptr && options_.pdbs != nullptr &&
        options_.pods != nullptr && options_.replicasets != nullptr &&
        options_.deployments != nullptr && options_.statefulsets != nullptr);
}

void DisruptionController::EnqueueBudgetsOf(const corev1::Pod& pod) {
  StatusOr<std::vector<informer::ObjectPtr>> pdbs = options_.pdbs->ByIndex(
      informer::kNamespaceIndex, pod.metadata().namespace_());
  if (!pdbs.ok()) return;
  for (const informer::ObjectPtr& obj : *pdbs) {
    const auto& pdb = static_cast<const policyv1::PodDisruptionBudget&>(*obj);
    if (BudgetSelectsPod(pdb, pod)) Enqueue(informer::ObjectKey(pdb));
  }
}

void DisruptionController::RegisterHandlers(
    informer::SharedIndexInformer* pdbs, informer::SharedIndexInformer* pods) {
  OnObjectEvents(pdbs, [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    EnqueueBudgetsOf(e.As<corev1::Pod>());
    if (e.old != nullptr) EnqueueBudgetsOf(e.OldAs<corev1::Pod>());
  });
}

StatusOr<int32_t> DisruptionController::ExpectedScale(
    const std::vector<const corev1::Pod*>& pods) {
  // Controller uid -> scale (a Deployment's ReplicaSets count as the
  // Deployment, once).
  std::map<std::string, int32_t> scales;
  for (const corev1::Pod* pod : pods) {
    const metav1::OwnerReference* ref = objects::ControllerRef(pod->metadata());
    // Unmanaged pods are left out (kube logs them and goes on).
    if (ref == nullptr) continue;
    const std::string& ns = pod->metadata().namespace_();
    const bool apps = ref->apiversion().rfind("apps/", 0) == 0;
    std::optional<std::pair<std::string, int32_t>> found;
    if (apps && ref->kind() == "ReplicaSet") {
      informer::ObjectPtr obj =
          options_.replicasets->Get(informer::ObjectKey(ns, ref->name()));
      if (obj != nullptr && objects::Uid(*obj) == ref->uid()) {
        const auto& rs = static_cast<const appsv1::ReplicaSet&>(*obj);
        const metav1::OwnerReference* dref =
            objects::ControllerRef(rs.metadata());
        if (dref == nullptr || dref->kind() != "Deployment") {
          found = {ref->uid(),
                   rs.spec().has_replicas() ? rs.spec().replicas() : 1};
        } else if (informer::ObjectPtr d = options_.deployments->Get(
                       informer::ObjectKey(ns, dref->name()));
                   d != nullptr && objects::Uid(*d) == dref->uid()) {
          const auto& dep = static_cast<const appsv1::Deployment&>(*d);
          found = {dref->uid(),
                   dep.spec().has_replicas() ? dep.spec().replicas() : 1};
        }
      }
    } else if (apps && ref->kind() == "StatefulSet") {
      informer::ObjectPtr obj =
          options_.statefulsets->Get(informer::ObjectKey(ns, ref->name()));
      if (obj != nullptr && objects::Uid(*obj) == ref->uid()) {
        const auto& sts = static_cast<const appsv1::StatefulSet&>(*obj);
        found = {ref->uid(),
                 sts.spec().has_replicas() ? sts.spec().replicas() : 1};
      }
    }
    if (!found) {
      return NotFoundError("found no controllers for pod \"" +
                           pod->metadata().name() + "\"");
    }
    scales[found->first] = found->second;
  }
  // Each scale is an int32 a user sets; their sum is held at int32's end.
  int64_t expected = 0;
  for (const auto& [uid, scale] : scales) expected += scale;
  return static_cast<int32_t>(std::min<int64_t>(expected, INT32_MAX));
}

Status DisruptionController::Sync(const std::string& key) {
  informer::ObjectPtr cached = options_.pdbs->Get(key);
  if (cached == nullptr) return Status::Ok();
  const auto& pdb = static_cast<const policyv1::PodDisruptionBudget&>(*cached);
  const WallTime now = clock_->WallNow();

  StatusOr<std::vector<informer::ObjectPtr>> in_ns = options_.pods->ByIndex(
      informer::kNamespaceIndex, pdb.metadata().namespace_());
  RETURN_IF_ERROR(in_ns.status());
  std::vector<const corev1::Pod*> pods;
  for (const informer::ObjectPtr& obj : *in_ns) {
    const auto& pod = static_cast<const corev1::Pod&>(*obj);
    if (BudgetSelectsPod(pdb, pod)) pods.push_back(&pod);
  }

  // getExpectedPodCount.
  const auto& spec = pdb.spec();
  int32_t expected = 0, desired = 0;
  Status failed;
  if (spec.has_maxunavailable()) {
    StatusOr<int32_t> scale = ExpectedScale(pods);
    if (scale.ok()) {
      expected = *scale;
      desired = std::max<int32_t>(
          0, expected - static_cast<int32_t>(ScaledValueFromIntOrPercent(
                            spec.maxunavailable(), expected, true)));
    } else {
      failed = scale.status();
    }
  } else if (spec.has_minavailable()) {
    if (spec.minavailable().type() != 1) {
      desired = spec.minavailable().intval();
      expected = static_cast<int32_t>(pods.size());
    } else {
      StatusOr<int32_t> scale = ExpectedScale(pods);
      if (scale.ok()) {
        expected = *scale;
        desired = static_cast<int32_t>(
            ScaledValueFromIntOrPercent(spec.minavailable(), expected, true));
      } else {
        failed = scale.status();
      }
    }
  }

  policyv1::PodDisruptionBudget next = pdb;
  auto* status = next.mutable_status();
  const int64_t generation = pdb.metadata().generation();
  if (!failed.ok()) {
    // failSafe: no disruptions while the budget cannot be computed.
    status->set_disruptionsallowed(0);
    SetCondition(status->mutable_conditions(),
                 Allowed(false, status->observedgeneration(), "SyncFailed",
                         failed.message()),
                 now);
  } else {
    // buildDisruptedPodMap and countHealthyPods.
    google::protobuf::Map<std::string, metav1::Time> disrupted;
    std::optional<WallTime> recheck;
    int32_t healthy = 0;
    for (const corev1::Pod* pod : pods) {
      if (objects::IsBeingDeleted(pod->metadata())) continue;
      auto it = pdb.status().disruptedpods().find(pod->metadata().name());
      if (it != pdb.status().disruptedpods().end()) {
        const WallTime deadline =
            objects::ToWallTime(it->second) + kDisruptedPodTimeout;
        if (deadline > now) {
          disrupted[it->first] = it->second;
          if (!recheck || deadline < *recheck) recheck = deadline;
          continue;
        }
        LOG(INFO) << "disruption: pod " << pod->metadata().name()
                  << " was expected to be deleted by " << key
                  << "'s eviction but it was not";
      }
      if (IsPodReady(*pod)) ++healthy;
    }
    if (recheck) {
      EnqueueAfter(key, std::chrono::duration_cast<Duration>(*recheck - now));
    }
    int32_t allowed = healthy - desired;
    if (expected <= 0 || allowed <= 0) allowed = 0;
    status->set_currenthealthy(healthy);
    status->set_desiredhealthy(desired);
    status->set_expectedpods(expected);
    status->set_disruptionsallowed(allowed);
    *status->mutable_disruptedpods() = std::move(disrupted);
    status->set_observedgeneration(generation);
    SetCondition(status->mutable_conditions(),
                 Allowed(allowed > 0, generation,
                         allowed > 0 ? "SufficientPods" : "InsufficientPods"),
                 now);
  }
  // After a failSafe the error is not retried (as kube): the next pod or
  // budget event syncs again.
  if (DeterministicBytes(next.status()) == DeterministicBytes(pdb.status())) {
    return Status::Ok();
  }
  return options_.api->UpdateStatus(PodDisruptionBudgetsResource(), next)
      .status();
}

}  // namespace kplane::controllers
