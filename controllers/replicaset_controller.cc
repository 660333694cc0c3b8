#include "controllers/replicaset_controller.h"

#include <algorithm>

#include "base/logging.h"
#include "controllers/workload_pods.h"
#include "informer/api_errors.h"
#include "objects/label_selector.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

int32_t DesiredReplicas(const appsv1::ReplicaSet& rs) {
  return rs.spec().has_replicas() ? rs.spec().replicas() : 1;
}

int PhaseRank(const corev1::Pod& p) {
  const std::string& phase = p.status().phase();
  if (phase == "Pending" || phase.empty()) return 0;
  if (phase == "Running") return 2;
  return 1;  // Unknown
}

// Kubernetes' ActivePods ordering: the pod to delete first sorts first.
bool DeleteFirst(const PodPtr& a, const PodPtr& b) {
  bool a_bound = !a->spec().nodename().empty();
  bool b_bound = !b->spec().nodename().empty();
  if (a_bound != b_bound) return !a_bound;
  if (PhaseRank(*a) != PhaseRank(*b)) return PhaseRank(*a) < PhaseRank(*b);
  if (IsPodReady(*a) != IsPodReady(*b)) return !IsPodReady(*a);
  int64_t ca = objects::UnixSeconds(a->metadata().creationtimestamp());
  int64_t cb = objects::UnixSeconds(b->metadata().creationtimestamp());
  if (ca != cb) return ca > cb;  // newer first
  return a->metadata().name() < b->metadata().name();
}

bool HasAllLabels(const corev1::Pod& pod,
                  const google::protobuf::Map<std::string, std::string>& want) {
  for (const auto& [k, v] : want) {
    auto it = pod.metadata().labels().find(k);
    if (it == pod.metadata().labels().end() || it->second != v) return false;
  }
  return true;
}

void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

}  // namespace

ReplicaSetController::ReplicaSetController(ReplicaSetControllerOptions options)
    : Controller("replicaset", options.clock, options.metrics),
      options_(options),
      expectations_(clock_) {
  CHECK(options_.api != nullptr && options_.replicasets != nullptr &&
        options_.pods != nullptr);
}

void ReplicaSetController::RegisterHandlers(
    informer::SharedIndexInformer* replicasets,
    informer::SharedIndexInformer* pods) {
  OnObjectEvents(replicasets,
                 [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    switch (e.type) {
      case ObjectEvent::Type::kAdded:
        return OnPodAdd(e.As<corev1::Pod>());
      case ObjectEvent::Type::kUpdated:
        return OnPodUpdate(e.OldAs<corev1::Pod>(), e.As<corev1::Pod>());
      case ObjectEvent::Type::kDeleted:
        return OnPodDelete(e.As<corev1::Pod>());
    }
  });
}

std::string ReplicaSetController::OwnerKey(const corev1::Pod& pod) const {
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (ref == nullptr || ref->kind() != "ReplicaSet") return "";
  std::string key =
      informer::ObjectKey(pod.metadata().namespace_(), ref->name());
  ObjectPtr rs = options_.replicasets->Get(key);
  if (rs == nullptr || objects::Uid(*rs) != ref->uid()) return "";
  return key;
}

void ReplicaSetController::EnqueueMatching(const corev1::Pod& pod) {
  auto in_ns = options_.replicasets->ByIndex(informer::kNamespaceIndex,
                                             pod.metadata().namespace_());
  if (!in_ns.ok()) return;
  machinery::Labels labels = LabelMap(pod.metadata().labels());
  for (const ObjectPtr& o : *in_ns) {
    const auto& rs = static_cast<const appsv1::ReplicaSet&>(*o);
    StatusOr<machinery::LabelSelector> sel =
        objects::LabelSelectorAsSelector(rs.spec().selector());
    if (sel.ok() && !sel->Empty() && sel->Matches(labels)) {
      Enqueue(informer::ObjectKey(rs));
    }
  }
}

void ReplicaSetController::OnPodAdd(const corev1::Pod& pod) {
  if (IsPodTerminating(pod)) {
    OnPodDelete(pod);
    return;
  }
  std::string owner = OwnerKey(pod);
  if (!owner.empty()) {
    expectations_.CreationObserved(owner);
    Enqueue(owner);
  } else if (objects::ControllerRef(pod.metadata()) == nullptr) {
    EnqueueMatching(pod);
  }
}

void ReplicaSetController::OnPodUpdate(const corev1::Pod& old_pod,
                                       const corev1::Pod& new_pod) {
  if (old_pod.metadata().resourceversion() ==
      new_pod.metadata().resourceversion()) {
    return;  // periodic resync
  }
  std::string owner = OwnerKey(new_pod);
  if (IsPodTerminating(new_pod) && !IsPodTerminating(old_pod) &&
      !owner.empty()) {
    expectations_.DeletionObserved(owner, informer::ObjectKey(new_pod));
  }
  std::string old_owner = OwnerKey(old_pod);
  if (!old_owner.empty() && old_owner != owner) Enqueue(old_owner);
  if (!owner.empty()) {
    Enqueue(owner);
  } else if (objects::ControllerRef(new_pod.metadata()) == nullptr) {
    EnqueueMatching(new_pod);
  }
}

void ReplicaSetController::OnPodDelete(const corev1::Pod& pod) {
  std::string owner = OwnerKey(pod);
  if (owner.empty()) return;
  expectations_.DeletionObserved(owner, informer::ObjectKey(pod));
  Enqueue(owner);
}

Status ReplicaSetController::Sync(const std::string& key) {
  ObjectPtr obj = options_.replicasets->Get(key);
  if (obj == nullptr) {
    expectations_.Forget(key);
    return Status::Ok();
  }
  auto rs = std::static_pointer_cast<const appsv1::ReplicaSet>(obj);
  const metav1::ObjectMeta& meta = rs->metadata();
  ASSIGN_OR_RETURN(machinery::LabelSelector selector,
                   objects::LabelSelectorAsSelector(rs->spec().selector()));
  // Decide on the expectations before reading the pods, so that pods
  // observed in between are in the list we act on.
  bool satisfied = expectations_.Satisfied(key);
  Status first_error;

  // 1. Claim.
  ASSIGN_OR_RETURN(
      std::vector<PodPtr> owned,
      ClaimPods(
          options_.api, *options_.pods, meta, "ReplicaSet", selector,
          [](const corev1::Pod&) { return true; }, &first_error));
  std::vector<PodPtr> active;
  for (const PodPtr& p : owned) {
    if (IsPodActive(*p)) active.push_back(p);
  }

  // 2. Create or delete.
  if (satisfied && !objects::IsBeingDeleted(meta)) {
    int diff = static_cast<int>(active.size()) - DesiredReplicas(*rs);
    if (diff < 0) {
      int n = std::min(-diff, options_.burst_replicas);
      expectations_.ExpectCreations(key, n);
      corev1::Pod pod;
      metav1::ObjectMeta* pm = pod.mutable_metadata();
      pm->set_namespace_(meta.namespace_());
      pm->set_generatename(meta.name() + "-");
      *pm->mutable_labels() = rs->spec().template_().metadata().labels();
      *pm->mutable_annotations() =
          rs->spec().template_().metadata().annotations();
      *pm->add_ownerreferences() =
          ControllerRefTo("apps/v1", "ReplicaSet", meta);
      *pod.mutable_spec() = rs->spec().template_().spec();
      for (int i = 0; i < n; ++i) {
        StatusOr<ObjectPtr> created = options_.api->Create(PodsResource(), pod);
        Status s = created.status();
        if (s.ok()) {
          RecordEvent(*rs, informer::kEventNormal, "SuccessfulCreate",
                      "Created pod: " + objects::Name(**created));
        } else {
          RecordEvent(*rs, informer::kEventWarning, "FailedCreate",
                      "Error creating: " + s.message());
          // The failed one and those not attempted will never be seen.
          for (int j = i; j < n; ++j) expectations_.CreationFailed(key);
          Keep(&first_error, s);
          break;
        }
      }
    } else if (diff > 0) {
      int n = std::min(diff, options_.burst_replicas);
      std::sort(active.begin(), active.end(), DeleteFirst);
      std::set<std::string> doomed;
      for (int i = 0; i < n; ++i)
        doomed.insert(informer::ObjectKey(*active[i]));
      expectations_.ExpectDeletions(key, doomed);
      for (int i = 0; i < n; ++i) {
        const corev1::Pod& p = *active[i];
        Status s = options_.api->Delete(
            PodsResource(), p.metadata().namespace_(), p.metadata().name());
        if (s.ok()) {
          RecordEvent(*rs, informer::kEventNormal, "SuccessfulDelete",
                      "Deleted pod: " + p.metadata().name());
        } else {
          if (!informer::IsNotFound(s)) {
            RecordEvent(*rs, informer::kEventWarning, "FailedDelete",
                        "Error deleting: " + s.message());
          }
          expectations_.DeletionObserved(key, informer::ObjectKey(p));
          if (!informer::IsNotFound(s)) Keep(&first_error, s);
        }
      }
    }
  }

  // 3. Status.
  WallTime now = clock_->WallNow();
  int32_t min_ready = rs->spec().minreadyseconds();
  appsv1::ReplicaSetStatus status = rs->status();
  status.set_replicas(static_cast<int32_t>(active.size()));
  int32_t labeled = 0, ready = 0, available = 0;
  Duration next_available = Duration::max();
  for (const PodPtr& p : active) {
    if (HasAllLabels(*p, rs->spec().template_().metadata().labels())) ++labeled;
    if (!IsPodReady(*p)) continue;
    ++ready;
    if (IsPodAvailable(*p, min_ready, now)) {
      ++available;
    } else {
      const corev1::PodCondition* c = FindPodCondition(p->status(), "Ready");
      WallTime at = WallTime(
          seconds(objects::UnixSeconds(c->lasttransitiontime()) + min_ready));
      next_available = std::min<Duration>(next_available, at - now);
    }
  }
  status.set_fullylabeledreplicas(labeled);
  status.set_readyreplicas(ready);
  status.set_availablereplicas(available);
  status.set_observedgeneration(meta.generation());
  if (status.SerializeAsString() != rs->status().SerializeAsString()) {
    appsv1::ReplicaSet copy = *rs;
    *copy.mutable_status() = status;
    Status s = options_.api->UpdateStatus(ReplicaSetsResource(), copy).status();
    if (informer::IsConflict(s)) {
      // The cache is behind (a scale by the deployment controller, or our
      // previous status write): write the status onto the live object.
      StatusOr<ObjectPtr> live = options_.api->Get(
          ReplicaSetsResource(), meta.namespace_(), meta.name());
      if (live.ok() && objects::Uid(**live) == meta.uid()) {
        appsv1::ReplicaSet fresh =
            static_cast<const appsv1::ReplicaSet&>(**live);
        if (fresh.metadata().generation() == meta.generation()) {
          *fresh.mutable_status() = status;
          s = options_.api->UpdateStatus(ReplicaSetsResource(), fresh).status();
        }
      }
    }
    if (!informer::IsNotFound(s)) Keep(&first_error, s);
  }
  if (next_available != Duration::max()) {
    EnqueueAfter(key, std::max<Duration>(next_available, Duration(0)) +
                          milliseconds(100));
  }
  return first_error;
}

}  // namespace kplane::controllers
