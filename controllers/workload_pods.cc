#include "controllers/workload_pods.h"

#include "informer/api_errors.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

StatusOr<std::vector<PodPtr>> ClaimPods(
    ApiWriter* api, const informer::Indexer& pods,
    const metav1::ObjectMeta& owner, std::string_view kind,
    const machinery::LabelSelector& selector,
    const std::function<bool(const corev1::Pod&)>& may_adopt,
    Status* first_error) {
  std::vector<PodPtr> owned;
  StatusOr<std::vector<ObjectPtr>> in_ns =
      pods.ByIndex(informer::kNamespaceIndex, owner.namespace_());
  RETURN_IF_ERROR(in_ns.status());
  for (const ObjectPtr& o : *in_ns) {
    auto pod = std::static_pointer_cast<const corev1::Pod>(o);
    const metav1::OwnerReference* ref = objects::ControllerRef(pod->metadata());
    bool matches = !selector.Empty() &&
                   selector.Matches(LabelMap(pod->metadata().labels()));
    if (ref != nullptr) {
      if (ref->uid() != owner.uid()) continue;
      if (matches) {
        owned.push_back(pod);
        continue;
      }
      if (IsPodTerminating(*pod)) continue;
      corev1::Pod copy = *pod;
      auto* refs = copy.mutable_metadata()->mutable_ownerreferences();
      for (int i = 0; i < refs->size(); ++i) {
        if (refs->Get(i).uid() == owner.uid()) {
          refs->DeleteSubrange(i, 1);
          break;
        }
      }
      Status s = api->Update(PodsResource(), copy).status();
      if (!informer::IsNotFound(s)) KeepFirstError(first_error, s);
      continue;
    }
    if (!matches || IsPodTerminating(*pod) || objects::IsBeingDeleted(owner) ||
        !may_adopt(*pod)) {
      continue;
    }
    corev1::Pod copy = *pod;
    *copy.mutable_metadata()->add_ownerreferences() =
        ControllerRefTo("apps/v1", kind, owner);
    StatusOr<ObjectPtr> adopted = api->Update(PodsResource(), copy);
    if (adopted.ok()) {
      owned.push_back(std::static_pointer_cast<const corev1::Pod>(*adopted));
    } else if (!informer::IsNotFound(adopted.status())) {
      KeepFirstError(first_error, adopted.status());
    }
  }
  return owned;
}

Status DeletePodOnce(ApiWriter* api, const corev1::Pod& pod, bool grace_zero) {
  metav1::DeleteOptions opts;
  opts.mutable_preconditions()->set_uid(pod.metadata().uid());
  if (grace_zero) opts.set_graceperiodseconds(0);
  Status s = api->Delete(PodsResource(), pod.metadata().namespace_(),
                         pod.metadata().name(), opts);
  if (informer::IsNotFound(s) || informer::IsConflict(s)) return Status::Ok();
  return s;
}

Status DeletePodsOfGoneOwner(ApiWriter* api, const informer::Indexer& pods,
                             const objects::ResourceInfo& owner_resource,
                             std::string_view kind, const std::string& key) {
  auto [ns, name] = informer::SplitObjectKey(key);
  StatusOr<std::vector<ObjectPtr>> in_ns =
      pods.ByIndex(informer::kNamespaceIndex, ns);
  RETURN_IF_ERROR(in_ns.status());
  std::vector<PodPtr> left;
  for (const ObjectPtr& o : *in_ns) {
    auto pod = std::static_pointer_cast<const corev1::Pod>(o);
    const metav1::OwnerReference* ref = objects::ControllerRef(pod->metadata());
    if (ref != nullptr && ref->kind() == kind && ref->name() == name &&
        !IsPodTerminating(*pod)) {
      left.push_back(pod);
    }
  }
  if (left.empty()) return Status::Ok();
  // The cache may lag behind a create: only the server says gone.
  StatusOr<ObjectPtr> live = api->Get(owner_resource, ns, name);
  std::string live_uid;
  if (live.ok()) {
    live_uid = objects::Uid(**live);
  } else if (!informer::IsNotFound(live.status())) {
    return live.status();
  }
  Status first_error;
  for (const PodPtr& p : left) {
    if (objects::ControllerRef(p->metadata())->uid() == live_uid) continue;
    // The cached version, as a precondition: the cache may also lag behind
    // the garbage collector orphaning the pod (`--cascade=orphan` removes
    // the ownerReferences before the set goes). A changed pod answers 409
    // Conflict, skipped: its update event brings the current references.
    metav1::DeleteOptions opts;
    opts.mutable_preconditions()->set_uid(p->metadata().uid());
    if (!p->metadata().resourceversion().empty()) {
      opts.mutable_preconditions()->set_resourceversion(
          p->metadata().resourceversion());
    }
    Status s = api->Delete(PodsResource(), p->metadata().namespace_(),
                           p->metadata().name(), opts);
    if (!informer::IsNotFound(s) && !informer::IsConflict(s)) {
      KeepFirstError(&first_error, s);
    }
  }
  return first_error;
}

void EnqueueSetsIn(const informer::Indexer& sets, const std::string& ns,
                   const std::function<void(const std::string&)>& enqueue) {
  auto in_ns = sets.ByIndex(informer::kNamespaceIndex, ns);
  if (!in_ns.ok()) return;
  for (const ObjectPtr& o : *in_ns) enqueue(informer::ObjectKey(*o));
}

void CountAvailable(const corev1::Pod& ready_pod, int32_t min_ready_seconds,
                    WallTime now, int32_t* available, Duration* recheck_after) {
  if (IsPodAvailable(ready_pod, min_ready_seconds, now)) {
    ++*available;
    return;
  }
  const corev1::PodCondition* c = FindPodCondition(ready_pod.status(), "Ready");
  if (c == nullptr) return;
  WallTime at = WallTime(seconds(objects::UnixSeconds(c->lasttransitiontime()) +
                                 min_ready_seconds));
  Duration wait = std::max<Duration>(at - now, Duration(0)) + milliseconds(100);
  *recheck_after = std::min(*recheck_after, wait);
}

}  // namespace kplane::controllers
