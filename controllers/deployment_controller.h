// DeploymentController: rolls Deployments out through ReplicaSets
// (Kubernetes' pkg/controller/deployment).
//
// Sync("ns/name"):
//  - Claims ReplicaSets (controllerRef to the deployment; adopts matching
//    orphans). The "new" RS is the one whose template equals the
//    deployment's, ignoring the pod-template-hash label; it is created as
//    <deploy>-<pod-template-hash> when missing, with the hash in its
//    labels, selector and template, and the revision annotation
//    `deployment.kubernetes.io/revision` = max(old revisions) + 1 (also
//    when an old RS becomes new again: a rollback by template change).
//    An existing new RS follows the deployment's minReadySeconds (also
//    while paused).
//  - RollingUpdate (maxSurge / maxUnavailable, ints or percentages of
//    spec.replicas, default 25% each; surge rounds up, unavailable down,
//    both 0 means unavailable 1):
//      scale the new RS up to at most  desired + maxSurge - (pods of all
//      RSs), never above desired;
//      scale old RSs down so that available pods stay >= desired -
//      maxUnavailable: first their unavailable pods, then the oldest RS
//      first.
//    Worked example, desired 4, surge 1, unavailable 1, old RS 4/4 ready:
//      new 0->1 (5 pods)  old 4->3 (min available 3)
//      new 1 ready: new 1->2, old 3->2 ... until new 4, old 0.
//  - Recreate: old RSs to 0; once no old pod runs, new RS to desired
//    (kube's oldPodsRunning: an old RS's spec or status replicas, or any
//    pod it controls not Failed/Succeeded, terminating ones included; the
//    RS status stops counting a pod once it is marked for deletion). A
//    deleted pod enqueues its Recreate deployment.
//  - Paused: no rollout step; a resize reaches the new RS when no old RS
//    is active.
//  - Keeps at most revisionHistoryLimit (default 10) old RSs at 0 replicas.
//  - Status: replicas, updatedReplicas, readyReplicas, availableReplicas,
//    unavailableReplicas, observedGeneration and the conditions
//    `kubectl rollout status` reads: Available (MinimumReplicasAvailable /
//    MinimumReplicasUnavailable) and Progressing (NewReplicaSetCreated,
//    ReplicaSetUpdated, NewReplicaSetAvailable when complete,
//    ProgressDeadlineExceeded after progressDeadlineSeconds without
//    progress). Once complete (NewReplicaSetAvailable, and every pod the
//    new RS's) Progressing is left as it is, as in kube: losing
//    availability later is no stalled rollout.
//
// Pods are counted from the RSs' status: a pod is counted for an RS as
// long as its spec or its status says so (max of the two), so a new pod
// is never created before the RS controller has deleted the one it
// replaces. Kubernetes counts spec only.
//
// Ownership: borrows the writer and caches (deployments, replicasets,
// pods; all required). Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_DEPLOYMENT_CONTROLLER_H_
#define KPLANE_CONTROLLERS_DEPLOYMENT_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"

namespace kplane::controllers {

inline constexpr char kRevisionAnnotation[] =
    "deployment.kubernetes.io/revision";
inline constexpr char kPodTemplateHashLabel[] = "pod-template-hash";

// Kubernetes' ComputeHash: FNV-32a of the template, as a safe string.
std::string ComputePodTemplateHash(const corev1::PodTemplateSpec& tmpl);

struct DeploymentControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* deployments = nullptr;
  const informer::Indexer* replicasets = nullptr;
  const informer::Indexer* pods = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class DeploymentController : public Controller {
 public:
  explicit DeploymentController(DeploymentControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* deployments,
                        informer::SharedIndexInformer* replicasets,
                        informer::SharedIndexInformer* pods);
  Status Sync(const std::string& key) override;

  // Handler body (public for unit tests).
  void OnReplicaSetEvent(const appsv1::ReplicaSet& rs);
  // A Recreate deployment waits for its old pods to be gone: their
  // deletion enqueues it.
  void OnPodDeleted(const corev1::Pod& pod);

 private:
  DeploymentControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_DEPLOYMENT_CONTROLLER_H_
