// StatefulSetController: pods with stable identities for every apps/v1
// StatefulSet (Kubernetes' pkg/controller/statefulset, its
// StatefulSetControl in particular).
//
// A set "web" with replicas 3 (ordinals.start 0) owns pods web-0, web-1 and
// web-2, each labelled statefulset.kubernetes.io/pod-name=<pod>,
// apps.kubernetes.io/pod-index=<ordinal> and controller-revision-hash=
// <revision>, with spec.hostname <pod> and spec.subdomain serviceName.
//
// Revisions (kube's getStatefulSetRevisions, controllers/
// controller_history.h): every template the set has had is an apps/v1
// ControllerRevision "<set>-<hash>" (hash: kube's HashControllerRevision of
// the template patch and status.collisionCount), controlled by the set,
// numbered 1, 2, ... The update revision is the one of the current
// template: the newest revision when it holds that template; an older
// equal revision gets the next number (a rollback, `kubectl rollout
// undo`); otherwise a new revision is created (a name taken by other data
// bumps status.collisionCount and hashes again). status.currentRevision
// names the revision the set had before the rollout began. Pods are
// labelled controller-revision-hash=<revision name>; a pod recreated
// below the partition during a rollout gets the current revision's
// template. Revisions that neither status nor any pod uses are deleted,
// oldest first, beyond spec.revisionHistoryLimit (default 10).
//
// Sync("ns/name"), as kube's UpdateStatefulSet:
//  1. Claim: pods controlled by the set that still match its selector;
//     matching orphans named <set>-<n> are adopted, owned pods that no
//     longer match are released. The same for revisions (orphans matching
//     the selector are adopted).
//  2. Replicas [start, start+replicas) and condemned pods (every other
//     ordinal, highest first). Failed/Succeeded pods are deleted (and
//     recreated). Missing pods are created from the template.
//     podManagementPolicy OrderedReady: one at a time in ordinal order;
//     nothing further happens while a pod is missing, terminating or not
//     Running and Ready (Available with minReadySeconds); scale-down deletes
//     the highest condemned pod only when every other pod is healthy, one at
//     a time. Parallel: every missing pod is created (at most 500 a sync) and
//     every condemned pod deleted at once. Only the pods that exist take
//     memory, whatever spec.replicas says.
//  3. RollingUpdate: the pod with the highest ordinal >= partition whose
//     revision is not the update revision is deleted (and recreated at the
//     update revision by the next sync), one at a time, waiting for each
//     to be healthy. OnDelete: pods are only replaced when deleted.
//  4. Status: replicas (created pods), readyReplicas, availableReplicas,
//     currentReplicas / updatedReplicas (pods at either revision),
//     currentRevision, updateRevision, observedGeneration. Once every pod
//     is updated and ready, currentRevision becomes updateRevision.
// A set that is gone (confirmed by a live GET) has its pods and revisions
// deleted: the garbage collector only follows Deployments and ReplicaSets.
//
// Ownership: borrows the writer and the caches, which must outlive it.
// Thread-safety: as Controller. Errors: the first failed write (the key is
// retried with backoff); 404s on deletes and 409 AlreadyExists on creates
// (a cache behind our own writes) are not errors.
#ifndef KPLANE_CONTROLLERS_STATEFULSET_CONTROLLER_H_
#define KPLANE_CONTROLLERS_STATEFULSET_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/apps_workloads_types.h"

namespace kplane::controllers {

// The pod labels kube's StatefulSet controller sets.
inline constexpr char kStatefulSetPodNameLabel[] =
    "statefulset.kubernetes.io/pod-name";
inline constexpr char kPodIndexLabel[] = "apps.kubernetes.io/pod-index";
inline constexpr char kControllerRevisionHashLabel[] =
    "controller-revision-hash";

const objects::ResourceInfo& StatefulSetsResource();

// "<set>-<hash>": the name of the revision of the set's current template
// (with its status.collisionCount).
std::string StatefulSetRevision(const appsv1::StatefulSet& set);

struct StatefulSetControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* statefulsets = nullptr;
  const informer::Indexer* pods = nullptr;
  const informer::Indexer* revisions = nullptr;  // controllerrevisions
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class StatefulSetController : public Controller {
 public:
  explicit StatefulSetController(StatefulSetControllerOptions options);

  // Enqueues a set on its own events and on those of its pods and
  // revisions (and of orphans it may adopt).
  void RegisterHandlers(informer::SharedIndexInformer* statefulsets,
                        informer::SharedIndexInformer* pods,
                        informer::SharedIndexInformer* revisions);

  Status Sync(const std::string& key) override;

  // The handler body for pods (public for unit tests).
  void OnPod(const corev1::Pod& pod);

 private:
  void OnRevision(const appsv1::ControllerRevision& revision);

  StatefulSetControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_STATEFULSET_CONTROLLER_H_
