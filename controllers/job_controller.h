// JobController: runs a batch/v1 Job's pods to completion (Kubernetes 1.32's
// pkg/controller/job, the parts kplane supports), and TtlAfterFinished-
// Controller: deletes finished Jobs once their ttlSecondsAfterFinished has
// passed (pkg/controller/ttlafterfinished).
//
// Sync("ns/name") of a Job:
//  1. Its pods are those whose controllerRef is the Job (orphans are not
//     adopted: the selector kube generates names the Job's uid).
//  2. Pod tracking without double counting (kube's finalizer tracking):
//     every pod is created with the finalizer batch.kubernetes.io/
//     job-tracking. A pod that ended (Succeeded, Failed, or deleted before
//     it ended: a failure) is first recorded by uid in
//     status.uncountedTerminatedPods (a status write), then its finalizer
//     is removed, then the uid moves into status.succeeded / failed. A
//     pod without the finalizer is never recorded, a recorded uid is moved
//     once, and every status write carries the Job's resourceVersion, so a
//     stale cache cannot count a pod twice (it gets 409 and retries).
//  3. Failure, in kube's order: a podFailurePolicy rule (FailJob fails the
//     Job, Ignore does not count the pod, Count counts it; onExitCodes and
//     onPodConditions), failed > backoffLimit (with restartPolicy
//     OnFailure the containers' restarts count too), activeDeadlineSeconds
//     since startTime. The Job gets FailureTarget, its active pods are
//     deleted, and once none is left Failed (reason BackoffLimitExceeded,
//     DeadlineExceeded or PodFailurePolicy).
//  4. Success: succeeded >= completions (Indexed: every index in
//     completedIndexes; no completions: one pod succeeded and none is
//     active) gives SuccessCriteriaMet, then Complete with completionTime
//     once no pod is left running, as kube 1.32 orders them.
//  5. suspend: active pods are deleted, condition Suspended True
//     (JobSuspended); on resume Suspended False (JobResumed) and startTime
//     starts again. Pods deleted for suspend or a lower parallelism lose the
//     tracking finalizer first (kube's deleteJobPods): they are never
//     counted as failed. A Job being deleted (deletionTimestamp) creates
//     and deletes no pods, as kube runs manageJob only without one.
//  6. Otherwise pods are created up to parallelism, bounded by the
//     completions left. Indexed Jobs create the lowest missing indexes, as
//     "<job>-<index>-xxxxx" with the annotation and label batch.kubernetes.io/
//     job-completion-index, hostname "<job>-<index>" and the env var
//     JOB_COMPLETION_INDEX. After failures new pods wait
//     pod_failure_backoff * 2^(failures-1), at most max_pod_failure_backoff,
//     since the last failure (kube keeps a per-Job backoff record; this is
//     computed from the counts). podReplacementPolicy Failed waits for
//     terminating pods to be gone first.
//  A finished Job's remaining active pods are deleted; pods whose Job is
//  gone (or replaced by a new uid), and tracked pods with no controller
//  (orphaned by --cascade=orphan), lose the tracking finalizer.
//
// Ownership: borrows the writer and caches, which must outlive it.
// Thread-safety: as Controller. Errors: API errors retry the key.
#ifndef KPLANE_CONTROLLERS_JOB_CONTROLLER_H_
#define KPLANE_CONTROLLERS_JOB_CONTROLLER_H_

#include <map>
#include <set>
#include <string>

#include "base/mutex.h"
#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "controllers/expectations.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/batch_types.h"

namespace kplane::controllers {

namespace batchv1 = objects::batchv1;

inline constexpr char kJobTrackingFinalizer[] =
    "batch.kubernetes.io/job-tracking";
inline constexpr char kJobCompletionIndexAnnotation[] =
    "batch.kubernetes.io/job-completion-index";

struct JobControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* jobs = nullptr;
  const informer::Indexer* pods = nullptr;
  // kube's DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff.
  Duration pod_failure_backoff = seconds(10);
  Duration max_pod_failure_backoff = minutes(6);
  int burst_pods = 500;  // pods created per sync at most
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class JobController : public Controller {
 public:
  explicit JobController(JobControllerOptions options);

  void RegisterHandlers(informer::SharedIndexInformer* jobs,
                        informer::SharedIndexInformer* pods);
  Status Sync(const std::string& key) override;

  // Handler bodies (public for unit tests, which have no informers).
  void OnPodEvent(const corev1::Pod& pod, bool added, bool deleted);

 private:
  // Keys of the form "pod:<ns>/<name>": a tracked pod whose Job is gone,
  // or that has no controller.
  Status ReleaseOrphan(const std::string& pod_key);
  std::string OwnerKey(const corev1::Pod& pod) const;

  JobControllerOptions options_;
  ControllerExpectations expectations_;
  // Uids of pods whose finalizer this controller removed after counting
  // them, until the cache shows the pod without it (or gone): a stale pod
  // in the cache must not be recorded again.
  Mutex mu_;
  std::set<std::string> finalizer_removed_ GUARDED_BY(mu_);
};

struct TtlAfterFinishedOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* jobs = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

// Deletes (propagationPolicy Foreground, uid precondition) every Job with
// ttlSecondsAfterFinished whose Complete/Failed condition is that old;
// re-queues the others for when they expire.
class TtlAfterFinishedController : public Controller {
 public:
  explicit TtlAfterFinishedController(TtlAfterFinishedOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* jobs);
  Status Sync(const std::string& key) override;

 private:
  TtlAfterFinishedOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_JOB_CONTROLLER_H_
