// CronJobController: creates a batch/v1 Job from a CronJob's jobTemplate at
// each time its schedule names (Kubernetes 1.32's pkg/controller/cronjob,
// cronjob_controllerv2), in UTC.
//
// Sync("ns/name"):
//  1. status.active lists the Jobs this controller started, each by the
//     reference taken when it created it (not refreshed as the Job
//     changes): finished Jobs leave it (event SawCompletedJob), Jobs a
//     live GET says are gone too (MissingJob). An unfinished Job the
//     CronJob controls but did not list (`kubectl create job
//     --from=cronjob/x`, annotation cronjob.kubernetes.io/instantiate=manual)
//     gets a Warning UnexpectedJob and is not listed (kube's syncCronJob);
//     when the live CronJob lists it, the cache is behind and the sync
//     waits for the CronJob's event. lastSuccessfulTime follows the newest
//     Complete Job, listed or not.
//  2. History: the oldest finished Jobs beyond successfulJobsHistoryLimit
//     (Complete) and failedJobsHistoryLimit (Failed) are deleted
//     (propagationPolicy Background).
//  3. Unless suspended or being deleted: the latest scheduled time since
//     lastScheduleTime (else creationTimestamp; with
//     startingDeadlineSeconds, at most that long ago) that has passed is
//     started, once: more than 100 missed times are logged as a warning
//     (kube's TooManyMissedTimes) and only the latest is started; a time
//     older than startingDeadlineSeconds is skipped. concurrencyPolicy
//     Forbid skips it while status.active is not empty (JobAlreadyActive),
//     Replace deletes the Jobs status.active lists first. The Job is
//     "<cronjob>-<scheduled unix minutes>" with the annotation
//     batch.kubernetes.io/cronjob-scheduled-timestamp, the template's labels
//     and annotations and a controllerRef; then status.active and
//     lastScheduleTime are written. A create that finds the Job already
//     there (made before a status write that failed) lists it if the
//     CronJob controls it.
//  4. The key is re-queued for the next scheduled time.
//
// Ownership: borrows writer and caches. Thread-safety: as Controller.
#ifndef KPLANE_CONTROLLERS_CRONJOB_CONTROLLER_H_
#define KPLANE_CONTROLLERS_CRONJOB_CONTROLLER_H_

#include <string>

#include "controllers/api_writer.h"
#include "controllers/controller.h"
#include "informer/indexer.h"
#include "informer/shared_informer.h"
#include "objects/batch_types.h"

namespace kplane::controllers {

inline constexpr char kCronJobScheduledTimestampAnnotation[] =
    "batch.kubernetes.io/cronjob-scheduled-timestamp";
// Missed start times above which a warning is logged.
inline constexpr int kTooManyMissedTimes = 100;

struct CronJobControllerOptions {
  ApiWriter* api = nullptr;
  const informer::Indexer* cronjobs = nullptr;
  const informer::Indexer* jobs = nullptr;
  Clock* clock = nullptr;
  metrics::Registry* metrics = nullptr;
};

class CronJobController : public Controller {
 public:
  explicit CronJobController(CronJobControllerOptions options);
  void RegisterHandlers(informer::SharedIndexInformer* cronjobs,
                        informer::SharedIndexInformer* jobs);
  Status Sync(const std::string& key) override;

 private:
  CronJobControllerOptions options_;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_CRONJOB_CONTROLLER_H_
