#include "controllers/cronjob_controller.h"

#include <algorithm>
#include <set>

#include "base/logging.h"
#include "informer/api_errors.h"
#include "objects/machinery/cron.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

namespace batchv1 = objects::batchv1;
using JobPtr = std::shared_ptr<const batchv1::Job>;

void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

// "Complete", "Failed" or "" (running).
std::string Finished(const batchv1::Job& job) {
  for (const auto& c : job.status().conditions()) {
    if ((c.type() == "Complete" || c.type() == "Failed") &&
        c.status() == "True") {
      return c.type();
    }
  }
  return "";
}

WallTime StartOf(const batchv1::Job& job) {
  return objects::ToWallTime(job.status().has_starttime()
                                 ? job.status().starttime()
                                 : job.metadata().creationtimestamp());
}

// The reference status.active keeps, taken once, from the Job the create
// returned (kube's getRef); later updates of the Job do not refresh it.
corev1::ObjectReference RefTo(const batchv1::Job& job) {
  corev1::ObjectReference ref;
  ref.set_kind("Job");
  ref.set_namespace_(job.metadata().namespace_());
  ref.set_name(job.metadata().name());
  ref.set_uid(job.metadata().uid());
  ref.set_apiversion("batch/v1");
  ref.set_resourceversion(job.metadata().resourceversion());
  return ref;
}

bool InActive(const batchv1::CronJobStatus& status, std::string_view uid) {
  for (const auto& ref : status.active()) {
    if (ref.uid() == uid) return true;
  }
  return false;
}

bool InActiveByName(const batchv1::CronJobStatus& status,
                    std::string_view name) {
  for (const auto& ref : status.active()) {
    if (ref.name() == name) return true;
  }
  return false;
}

// Removes the reference to `uid`; whether there was one.
bool RemoveFromActive(batchv1::CronJobStatus* status, std::string_view uid) {
  auto* active = status->mutable_active();
  const int before = active->size();
  active->erase(
      std::remove_if(active->begin(), active->end(),
                     [&](const auto& ref) { return ref.uid() == uid; }),
      active->end());
  return active->size() != before;
}

}  // namespace

CronJobController::CronJobController(CronJobControllerOptions options)
    : Controller("cronjob", options.clock, options.metrics), options_(options) {
  CHECK(options_.api != nullptr && options_.cronjobs != nullptr &&
        options_.jobs != nullptr);
}

void CronJobController::RegisterHandlers(
    informer::SharedIndexInformer* cronjobs,
    informer::SharedIndexInformer* jobs) {
  OnObjectEvents(cronjobs, [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(jobs, [this](const ObjectEvent& e) {
    const metav1::OwnerReference* ref =
        objects::ControllerRef(*objects::GetObjectMeta(e.object));
    if (ref != nullptr && ref->kind() == "CronJob") {
      Enqueue(informer::ObjectKey(objects::Namespace(e.object), ref->name()));
    }
  });
}

Status CronJobController::Sync(const std::string& key) {
  ObjectPtr obj = options_.cronjobs->Get(key);
  if (obj == nullptr) return Status::Ok();
  const auto& cj = static_cast<const batchv1::CronJob&>(*obj);
  const metav1::ObjectMeta& meta = cj.metadata();
  const batchv1::CronJobSpec& spec = cj.spec();
  const WallTime now = clock_->WallNow();
  Status first_error;

  std::vector<JobPtr> owned;
  ASSIGN_OR_RETURN(
      std::vector<ObjectPtr> in_ns,
      options_.jobs->ByIndex(informer::kNamespaceIndex, meta.namespace_()));
  for (const ObjectPtr& o : in_ns) {
    auto job = std::static_pointer_cast<const batchv1::Job>(o);
    const metav1::OwnerReference* ref = objects::ControllerRef(job->metadata());
    if (ref != nullptr && ref->uid() == meta.uid()) owned.push_back(job);
  }

  // 1. status.active lists the Jobs this controller started (kube's
  // syncCronJob): finished ones leave it (lastSuccessfulTime follows the
  // newest Complete Job, listed or not), gone ones too. An unfinished Job
  // it controls but did not list (`kubectl create job --from=cronjob/...`,
  // or one created before a lost status write) only draws a warning: it is
  // not active, so Forbid and Replace leave it alone.
  batchv1::CronJobStatus status = cj.status();
  std::set<std::string> owned_uids;
  std::vector<JobPtr> succeeded, failed;
  bool live_read = false;
  for (const JobPtr& job : owned) {
    const std::string& uid = job->metadata().uid();
    owned_uids.insert(uid);
    const std::string done = Finished(*job);
    if (done.empty()) {
      if (InActive(status, uid)) continue;
      if (!live_read) {
        // As kube: the cache may show the Job before the CronJob status
        // write that listed it. If the live CronJob lists it, this cache
        // is behind, and the CronJob's watch event syncs it again.
        StatusOr<ObjectPtr> live = options_.api->Get(
            CronJobsResource(), meta.namespace_(), meta.name());
        if (!live.ok()) {
          return informer::IsNotFound(live.status()) ? Status::Ok()
                                                     : live.status();
        }
        const auto& live_cj = static_cast<const batchv1::CronJob&>(**live);
        if (live_cj.metadata().uid() != meta.uid()) return Status::Ok();
        for (const JobPtr& j : owned) {
          if (Finished(*j).empty() && !InActive(status, j->metadata().uid()) &&
              InActive(live_cj.status(), j->metadata().uid())) {
            return Status::Ok();
          }
        }
        live_read = true;
      }
      RecordEvent(cj, informer::kEventWarning, "UnexpectedJob",
                  "Saw a job that the controller did not create or forgot: " +
                      job->metadata().name());
      continue;
    }
    if (RemoveFromActive(&status, uid)) {
      RecordEvent(cj, informer::kEventNormal, "SawCompletedJob",
                  "Saw completed job: " + job->metadata().name() +
                      ", condition: " + done);
    }
    if (done == "Complete") {
      succeeded.push_back(job);
      if (job->status().has_completiontime() &&
          (!status.has_lastsuccessfultime() ||
           objects::ToWallTime(job->status().completiontime()) >
               objects::ToWallTime(status.lastsuccessfultime()))) {
        *status.mutable_lastsuccessfultime() = job->status().completiontime();
      }
    } else {
      failed.push_back(job);
    }
  }

  // A listed Job the cache does not show stays listed unless a live read
  // says it is gone (kube's MissingJob).
  for (const auto& ref : cj.status().active()) {
    if (owned_uids.count(ref.uid()) != 0) continue;
    StatusOr<ObjectPtr> live =
        options_.api->Get(JobsResource(), meta.namespace_(), ref.name());
    if (!live.ok() && !informer::IsNotFound(live.status())) {
      return live.status();
    }
    if (live.ok() && objects::Uid(**live) == ref.uid()) continue;
    RecordEvent(cj, informer::kEventNormal, "MissingJob",
                "Active job went missing: " + ref.name());
    RemoveFromActive(&status, ref.uid());
  }

  // 2. History limits: the oldest finished Jobs go.
  auto prune = [&](std::vector<JobPtr>& jobs, int32_t limit) {
    if (static_cast<int32_t>(jobs.size()) <= limit) return;
    std::sort(jobs.begin(), jobs.end(), [](const JobPtr& a, const JobPtr& b) {
      return StartOf(*a) < StartOf(*b);
    });
    for (size_t i = 0; i + limit < jobs.size(); ++i) {
      if (objects::IsBeingDeleted(jobs[i]->metadata())) continue;
      metav1::DeleteOptions opts;
      opts.set_propagationpolicy("Background");
      Status s = options_.api->Delete(JobsResource(), meta.namespace_(),
                                      jobs[i]->metadata().name(), opts);
      if (s.ok()) {
        RecordEvent(cj, informer::kEventNormal, "SuccessfulDelete",
                    "Deleted job " + jobs[i]->metadata().name());
      }
      if (!s.ok() && !informer::IsNotFound(s)) Keep(&first_error, s);
    }
  };
  if (spec.has_successfuljobshistorylimit()) {
    prune(succeeded, spec.successfuljobshistorylimit());
  }
  if (spec.has_failedjobshistorylimit()) {
    prune(failed, spec.failedjobshistorylimit());
  }

  auto write_status = [&]() -> Status {
    if (DeterministicBytes(status) == DeterministicBytes(cj.status())) {
      return Status::Ok();
    }
    batchv1::CronJob copy = cj;
    *copy.mutable_status() = status;
    Status s = options_.api->UpdateStatus(CronJobsResource(), copy).status();
    return informer::IsNotFound(s) ? Status::Ok() : s;
  };
  StatusOr<machinery::CronSchedule> schedule =
      machinery::CronSchedule::Parse(spec.schedule());
  if (objects::IsBeingDeleted(meta) || spec.suspend() || !schedule.ok()) {
    if (!schedule.ok()) {
      LOG(WARNING) << "cronjob " << key << ": unparseable schedule "
                   << spec.schedule() << ": " << schedule.status();
    }
    Keep(&first_error, write_status());
    return first_error;
  }
  auto requeue = [&] {
    WallTime next = schedule->Next(now);
    if (next != WallTime::max()) EnqueueAfter(key, next - now + seconds(1));
  };

  // 3. The latest start time that has passed, once.
  WallTime earliest = objects::ToWallTime(status.has_lastscheduletime()
                                              ? status.lastscheduletime()
                                              : meta.creationtimestamp());
  if (spec.has_startingdeadlineseconds()) {
    earliest = std::max(
        earliest,
        AddSeconds(now, -std::max<int64_t>(spec.startingdeadlineseconds(), 0)));
  }
  std::optional<WallTime> scheduled;
  int64_t missed = 0;
  for (WallTime t = schedule->Next(earliest);
       t <= now && missed <= kTooManyMissedTimes; t = schedule->Next(t)) {
    scheduled = t;
    ++missed;
  }
  if (missed > kTooManyMissedTimes) {
    // Far behind (a lastScheduleTime years ago with a schedule of every
    // minute was a hundred million steps each sync): look back from now,
    // doubling, for the window holding the latest start time, and take it
    // from there.
    for (Duration back = std::chrono::minutes(1);; back *= 2) {
      const WallTime from = now - earliest <= back ? earliest : now - back;
      const WallTime first = schedule->Next(from);
      if (first <= now || from == earliest) {
        for (WallTime t = first; t <= now; t = schedule->Next(t)) {
          scheduled = t;
        }
        break;
      }
    }
    LOG(WARNING) << "cronjob " << key << ": too many missed start times (over "
                 << kTooManyMissedTimes << "); starting the latest. Set or "
                 << "decrease .spec.startingDeadlineSeconds or check clock "
                 << "skew";
  }
  if (!scheduled) {
    requeue();
    Keep(&first_error, write_status());
    return first_error;
  }
  const int64_t unix =
      std::chrono::duration_cast<seconds>(scheduled->time_since_epoch())
          .count();
  const std::string name = meta.name() + "-" + std::to_string(unix / 60);
  auto finish = [&](const Status& error) {
    requeue();
    Keep(&first_error, error);
    Keep(&first_error, write_status());
    return first_error;
  };
  if (spec.has_startingdeadlineseconds() &&
      AddSeconds(*scheduled, spec.startingdeadlineseconds()) < now) {
    LOG(INFO) << "cronjob " << key << ": missed the start at "
              << objects::FormatRfc3339(unix)
              << " by more than startingDeadlineSeconds";
    return finish(Status::Ok());
  }
  if (InActiveByName(status, name) ||
      (status.has_lastscheduletime() &&
       objects::ToWallTime(status.lastscheduletime()) == *scheduled)) {
    return finish(Status::Ok());  // started already
  }
  const std::string& policy = spec.concurrencypolicy();
  if (policy == "Forbid" && status.active_size() > 0) {
    RecordEvent(cj, informer::kEventNormal, "JobAlreadyActive",
                "Not starting job because prior execution is running and "
                "concurrency policy is Forbid");
    return finish(Status::Ok());
  }
  if (policy == "Replace") {
    const auto active = status.active();
    for (const auto& ref : active) {
      metav1::DeleteOptions opts;
      opts.set_propagationpolicy("Background");
      Status s = options_.api->Delete(JobsResource(), meta.namespace_(),
                                      ref.name(), opts);
      if (!s.ok() && !informer::IsNotFound(s)) {
        RecordEvent(cj, informer::kEventWarning, "FailedDelete",
                    "Deleted job: " + std::string(s.message()));
        return finish(s);
      }
      RemoveFromActive(&status, ref.uid());
      if (s.ok()) {
        RecordEvent(cj, informer::kEventNormal, "SuccessfulDelete",
                    "Deleted job " + ref.name());
      }
    }
  }
  batchv1::Job job;
  metav1::ObjectMeta* jm = job.mutable_metadata();
  jm->set_name(name);
  jm->set_namespace_(meta.namespace_());
  *jm->mutable_labels() = spec.jobtemplate().metadata().labels();
  *jm->mutable_annotations() = spec.jobtemplate().metadata().annotations();
  (*jm->mutable_annotations())[kCronJobScheduledTimestampAnnotation] =
      objects::FormatRfc3339(unix);
  *jm->add_ownerreferences() = ControllerRefTo("batch/v1", "CronJob", meta);
  *job.mutable_spec() = spec.jobtemplate().spec();
  StatusOr<ObjectPtr> created = options_.api->Create(JobsResource(), job);
  if (created.ok()) {
    RecordEvent(cj, informer::kEventNormal, "SuccessfulCreate",
                "Created job " + objects::Name(**created));
  } else if (informer::IsAlreadyExists(created.status())) {
    // Created earlier, but the status write that should have listed it
    // failed (kube 1.29+): list it now if it is ours and not listed.
    created = options_.api->Get(JobsResource(), meta.namespace_(), name);
    if (!created.ok()) return finish(created.status());
    const metav1::OwnerReference* ref =
        objects::ControllerRef(*objects::GetObjectMeta(**created));
    if (ref == nullptr || ref->uid() != meta.uid() ||
        InActive(status, objects::Uid(**created))) {
      return finish(Status::Ok());
    }
    LOG(INFO) << "cronjob " << key << ": job " << name << " already exists";
  } else {
    RecordEvent(
        cj, informer::kEventWarning, "FailedCreate",
        "Error creating job: " + std::string(created.status().message()));
    return finish(created.status());
  }
  *status.add_active() = RefTo(static_cast<const batchv1::Job&>(**created));
  objects::SetTime(status.mutable_lastscheduletime(), *scheduled);
  return finish(Status::Ok());
}

}  // namespace kplane::controllers
