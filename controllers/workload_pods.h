// What the statefulset and daemonset controllers do alike with the pods of
// their sets: claim them (kube's PodControllerRefManager), delete them
// safely, and clean up after a set that is gone.
//
//   std::vector<PodPtr> owned = ClaimPods(api, pods, set.metadata(),
//       "StatefulSet", selector, may_adopt, &first_error);
//
// Thread-safety: pure functions over the caller's writer and cache.
// Errors: as the ApiWriter; 404s (and 409s of a uid precondition) are not
// errors.
#ifndef KPLANE_CONTROLLERS_WORKLOAD_PODS_H_
#define KPLANE_CONTROLLERS_WORKLOAD_PODS_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/api_writer.h"
#include "informer/api_errors.h"
#include "informer/indexer.h"
#include "objects/machinery/labels.h"

namespace kplane::controllers {

using PodPtr = std::shared_ptr<const corev1::Pod>;

// Keeps the first error of a sync.
inline void KeepFirstError(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

// The pods of `owner` (an apps/v1 `kind`) in its namespace: those it
// controls that match `selector`. Controlled pods that no longer match are
// released (their owner reference removed); orphans that match and pass
// `may_adopt` are adopted unless the owner is being deleted. Write errors
// go to `first_error`.
StatusOr<std::vector<PodPtr>> ClaimPods(
    ApiWriter* api, const informer::Indexer& pods,
    const metav1::ObjectMeta& owner, std::string_view kind,
    const machinery::LabelSelector& selector,
    const std::function<bool(const corev1::Pod&)>& may_adopt,
    Status* first_error);

// DELETE with the pod's uid as precondition, so that a stale cache never
// deletes a pod that replaced it under the same name. `grace_zero` forces
// the deletion (no kubelet left to confirm it).
Status DeletePodOnce(ApiWriter* api, const corev1::Pod& pod,
                     bool grace_zero = false);

// After the set `key` ("ns/name") left the cache: once a live GET of
// `owner_resource` confirms it is gone (or replaced: another uid), deletes
// the pods the cache shows still controlled by it, each with its cached uid
// and resourceVersion as preconditions, so that a pod changed since (the
// garbage collector orphaned it: `--cascade=orphan`) is left alone (409
// Conflict, not an error).
Status DeletePodsOfGoneOwner(ApiWriter* api, const informer::Indexer& pods,
                             const objects::ResourceInfo& owner_resource,
                             std::string_view kind, const std::string& key);

// Enqueues (through `enqueue`) the key of every set in `sets` that lives
// in namespace `ns`: the sets that may adopt an orphan pod there.
void EnqueueSetsIn(const informer::Indexer& sets, const std::string& ns,
                   const std::function<void(const std::string&)>& enqueue);

// Counts a Ready pod towards `available` when it has been ready for
// `min_ready_seconds` at `now`; otherwise lowers `*recheck_after` to when
// it will be (plus 100 ms), for the caller's EnqueueAfter.
void CountAvailable(const corev1::Pod& ready_pod, int32_t min_ready_seconds,
                    WallTime now, int32_t* available, Duration* recheck_after);

// PUT /status with `status` when it differs from `set`'s (404 is fine: the
// set is gone). A 409 means the cache is behind (our previous status
// write, a scale): the status goes onto the live object when its
// generation is the one the status was computed for.
template <typename Set, typename SetStatus>
Status UpdateStatusIfChanged(ApiWriter* api,
                             const objects::ResourceInfo& resource,
                             const Set& set, const SetStatus& status) {
  if (DeterministicBytes(status) == DeterministicBytes(set.status())) {
    return Status::Ok();
  }
  Set copy = set;
  *copy.mutable_status() = status;
  Status s = api->UpdateStatus(resource, copy).status();
  if (informer::IsConflict(s)) {
    StatusOr<ObjectPtr> live =
        api->Get(resource, set.metadata().namespace_(), set.metadata().name());
    if (!live.ok())
      return informer::IsNotFound(live.status()) ? Status::Ok() : live.status();
    copy = static_cast<const Set&>(**live);
    if (copy.metadata().uid() != set.metadata().uid() ||
        copy.metadata().generation() != set.metadata().generation()) {
      return s;  // changed meanwhile: the next sync recomputes
    }
    *copy.mutable_status() = status;
    s = api->UpdateStatus(resource, copy).status();
  }
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_WORKLOAD_PODS_H_
