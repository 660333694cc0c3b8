#include "controllers/job_controller.h"

#include <algorithm>
#include <optional>

#include "base/logging.h"
#include "base/strings.h"
#include "informer/api_errors.h"
#include "informer/rest_client.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {

namespace {

using PodPtr = std::shared_ptr<const corev1::Pod>;

constexpr char kPodKeyPrefix[] = "pod:";
constexpr char kCompletionIndexEnv[] = "JOB_COMPLETION_INDEX";

void Keep(Status* first, const Status& s) {
  if (first->ok() && !s.ok()) *first = s;
}

const batchv1::JobCondition* FindCondition(const batchv1::JobStatus& s,
                                           std::string_view type) {
  for (const auto& c : s.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool HasTrueCondition(const batchv1::JobStatus& s, std::string_view type) {
  const batchv1::JobCondition* c = FindCondition(s, type);
  return c != nullptr && c->status() == "True";
}

bool IsFinished(const batchv1::JobStatus& s) {
  return HasTrueCondition(s, "Complete") || HasTrueCondition(s, "Failed");
}

// Sets a condition; its lastTransitionTime moves only when its status does
// (kube's updateConditionsIfNeeded / newCondition).
void SetCondition(batchv1::JobStatus* s, const std::string& type,
                  const std::string& status, const std::string& reason,
                  const std::string& message, WallTime now) {
  batchv1::JobCondition* c = nullptr;
  for (auto& existing : *s->mutable_conditions()) {
    if (existing.type() == type) c = &existing;
  }
  if (c != nullptr && c->status() == status && c->reason() == reason &&
      c->message() == message) {
    return;
  }
  if (c == nullptr) {
    c = s->add_conditions();
    c->set_type(type);
  }
  if (c->status() != status) {
    objects::SetTime(c->mutable_lasttransitiontime(), now);
  }
  c->set_status(status);
  c->set_reason(reason);
  c->set_message(message);
  objects::SetTime(c->mutable_lastprobetime(), now);
}

// kube's isPodFailed: Failed, or deleted before it succeeded (with a
// podFailurePolicy only the Failed phase counts).
bool IsPodFailed(const corev1::Pod& pod, const batchv1::Job& job) {
  if (pod.status().phase() == "Failed") return true;
  if (job.spec().has_podfailurepolicy()) return false;
  return objects::IsBeingDeleted(pod.metadata()) &&
         pod.status().phase() != "Succeeded";
}

// kube's pastBackoffLimitOnFailure: with restartPolicy OnFailure the
// containers' `restarts` (summed over Pending and Running pods) reach
// backoffLimit -- a limit apart from the failed pods' (failed >
// backoffLimit), never added to it; with a limit of 0 any restart.
bool PastBackoffLimitOnFailure(const batchv1::JobSpec& spec, int32_t restarts) {
  if (spec.template_().spec().restartpolicy() != "OnFailure") return false;
  if (spec.backofflimit() == 0) return restarts > 0;
  return restarts >= spec.backofflimit();
}

std::optional<int> CompletionIndex(const corev1::Pod& pod) {
  std::string_view v =
      objects::Annotation(pod.metadata(), kJobCompletionIndexAnnotation);
  std::optional<int64_t> i = ParseInt64(v);
  if (!i || *i < 0 || *i > INT32_MAX) return std::nullopt;
  return static_cast<int>(*i);
}

// "1,3-5,7" <-> {1, 3, 4, 5, 7} (kube's completedIndexes format), only the
// indexes below `completions`: the status is anyone's with update on
// jobs/status, and "0-9223372036854775806" must not fill memory.
std::set<int> ParseIndexes(std::string_view s, int64_t completions) {
  std::set<int> out;
  for (std::string_view part : StrSplit(s, ',')) {
    if (part.empty()) continue;
    size_t dash = part.find('-');
    auto lo = ParseInt64(part.substr(0, dash));
    auto hi =
        dash == std::string_view::npos ? lo : ParseInt64(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo) continue;
    const int64_t last = std::min(*hi, completions - 1);
    for (int64_t i = *lo; i <= last; ++i) out.insert(static_cast<int>(i));
  }
  return out;
}

std::string FormatIndexes(const std::set<int>& indexes) {
  std::string out;
  for (auto it = indexes.begin(); it != indexes.end();) {
    int lo = *it, hi = *it;
    for (++it; it != indexes.end() && *it == hi + 1; ++it) hi = *it;
    if (!out.empty()) out += ",";
    out += std::to_string(lo);
    if (hi > lo) out += "-" + std::to_string(hi);
  }
  return out;
}

// The podFailurePolicy rule a failed pod matches: its action and index, or
// nullopt (the failure counts). kube's matchPodFailurePolicy.
struct RuleMatch {
  std::string action;
  std::string message;
};
std::optional<RuleMatch> MatchPodFailurePolicy(const batchv1::Job& job,
                                               const corev1::Pod& pod) {
  if (!job.spec().has_podfailurepolicy()) return std::nullopt;
  const auto& rules = job.spec().podfailurepolicy().rules();
  for (int i = 0; i < rules.size(); ++i) {
    const auto& rule = rules.Get(i);
    if (rule.has_onexitcodes()) {
      const auto& req = rule.onexitcodes();
      for (const auto& cs : pod.status().containerstatuses()) {
        if (!req.containername().empty() && req.containername() != cs.name()) {
          continue;
        }
        if (!cs.state().has_terminated()) continue;
        const int32_t code = cs.state().terminated().exitcode();
        if (code == 0) continue;
        const bool in = std::find(req.values().begin(), req.values().end(),
                                  code) != req.values().end();
        if (in == (req.operator_() == "In")) {
          return RuleMatch{
              rule.action(),
              "Container " + cs.name() + " for pod " +
                  pod.metadata().namespace_() + "/" + pod.metadata().name() +
                  " failed with exit code " + std::to_string(code) +
                  " matching " + rule.action() + " rule at index " +
                  std::to_string(i)};
        }
      }
    }
    for (const auto& pattern : rule.onpodconditions()) {
      for (const auto& c : pod.status().conditions()) {
        if (c.type() == pattern.type() && c.status() == pattern.status()) {
          return RuleMatch{rule.action(),
                           "Pod " + pod.metadata().namespace_() + "/" +
                               pod.metadata().name() + " has condition " +
                               c.type() + " matching " + rule.action() +
                               " rule at index " + std::to_string(i)};
        }
      }
    }
  }
  return std::nullopt;
}

// When the pod ended: its containers' latest finishedAt, else its
// deletion time, else `fallback`.
WallTime FinishTime(const corev1::Pod& pod, WallTime fallback) {
  std::optional<WallTime> latest;
  for (const auto& cs : pod.status().containerstatuses()) {
    if (!cs.state().has_terminated()) continue;
    WallTime t = objects::ToWallTime(cs.state().terminated().finishedat());
    if (!latest || t > *latest) latest = t;
  }
  if (latest) return *latest;
  if (objects::IsBeingDeleted(pod.metadata())) {
    return objects::ToWallTime(pod.metadata().deletiontimestamp());
  }
  return fallback;
}

corev1::Pod PodFromTemplate(const batchv1::Job& job, std::optional<int> index) {
  const metav1::ObjectMeta& meta = job.metadata();
  const corev1::PodTemplateSpec& tmpl = job.spec().template_();
  corev1::Pod pod;
  metav1::ObjectMeta* pm = pod.mutable_metadata();
  pm->set_namespace_(meta.namespace_());
  *pm->mutable_labels() = tmpl.metadata().labels();
  *pm->mutable_annotations() = tmpl.metadata().annotations();
  pm->add_finalizers(kJobTrackingFinalizer);
  *pm->add_ownerreferences() = ControllerRefTo("batch/v1", "Job", meta);
  *pod.mutable_spec() = tmpl.spec();
  if (!index) {
    pm->set_generatename(meta.name() + "-");
    return pod;
  }
  const std::string i = std::to_string(*index);
  pm->set_generatename(meta.name() + "-" + i + "-");
  (*pm->mutable_annotations())[kJobCompletionIndexAnnotation] = i;
  (*pm->mutable_labels())[kJobCompletionIndexAnnotation] = i;
  if (pod.spec().hostname().empty()) {
    pod.mutable_spec()->set_hostname(meta.name() + "-" + i);
  }
  auto add_env = [](corev1::Container* c) {
    corev1::EnvVar* e = c->add_env();
    e->set_name(kCompletionIndexEnv);
    e->mutable_valuefrom()->mutable_fieldref()->set_fieldpath(
        std::string("metadata.annotations['") + kJobCompletionIndexAnnotation +
        "']");
  };
  for (auto& c : *pod.mutable_spec()->mutable_initcontainers()) add_env(&c);
  for (auto& c : *pod.mutable_spec()->mutable_containers()) add_env(&c);
  return pod;
}

}  // namespace

// ---------------------------------------------------------------------------
// JobController

JobController::JobController(JobControllerOptions options)
    : Controller("job", options.clock, options.metrics),
      options_(options),
      expectations_(clock_) {
  CHECK(options_.api != nullptr && options_.jobs != nullptr &&
        options_.pods != nullptr);
}

void JobController::RegisterHandlers(informer::SharedIndexInformer* jobs,
                                     informer::SharedIndexInformer* pods) {
  OnObjectEvents(jobs, [this](const ObjectEvent& e) { Enqueue(e.Key()); });
  OnObjectEvents(pods, [this](const ObjectEvent& e) {
    OnPodEvent(e.As<corev1::Pod>(), e.type == ObjectEvent::Type::kAdded,
               e.deleted());
  });
}

std::string JobController::OwnerKey(const corev1::Pod& pod) const {
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (ref == nullptr || ref->kind() != "Job" ||
      ref->apiversion() != "batch/v1") {
    return "";
  }
  std::string key =
      informer::ObjectKey(pod.metadata().namespace_(), ref->name());
  ObjectPtr job = options_.jobs->Get(key);
  if (job == nullptr || objects::Uid(*job) != ref->uid()) return "";
  return key;
}

void JobController::OnPodEvent(const corev1::Pod& pod, bool added,
                               bool deleted) {
  const bool tracked =
      objects::HasFinalizer(pod.metadata(), kJobTrackingFinalizer);
  if (deleted || !tracked) {
    MutexLock l(&mu_);
    finalizer_removed_.erase(pod.metadata().uid());
  }
  std::string owner = OwnerKey(pod);
  if (!owner.empty()) {
    if (added) expectations_.CreationObserved(owner);
    Enqueue(owner);
    return;
  }
  // A tracked pod whose Job is gone, or an orphan (no controllerRef: the
  // garbage collector removed it for a --cascade=orphan deletion), is
  // released: kube's addPod/updatePod/deletePod enqueue both for
  // syncOrphanPod. A deleted pod is out of the cache, nothing to release.
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (!deleted && tracked && (ref == nullptr || ref->kind() == "Job")) {
    Enqueue(kPodKeyPrefix + informer::ObjectKey(pod));
  }
}

Status JobController::ReleaseOrphan(const std::string& pod_key) {
  ObjectPtr obj = options_.pods->Get(pod_key);
  if (obj == nullptr) return Status::Ok();
  const auto& pod = static_cast<const corev1::Pod&>(*obj);
  if (!objects::HasFinalizer(pod.metadata(), kJobTrackingFinalizer)) {
    return Status::Ok();
  }
  const metav1::OwnerReference* ref = objects::ControllerRef(pod.metadata());
  if (ref != nullptr &&
      (ref->kind() != "Job" || ref->apiversion() != "batch/v1")) {
    // Adopted by another kind of controller since it was queued: not ours
    // to release (kube's syncOrphanPod).
    return Status::Ok();
  }
  if (ref != nullptr) {
    // The cache can lag behind a create: confirm the Job is gone.
    StatusOr<ObjectPtr> live = options_.api->Get(
        JobsResource(), pod.metadata().namespace_(), ref->name());
    if (live.ok() && objects::Uid(**live) == ref->uid()) return Status::Ok();
    if (!live.ok() && !informer::IsNotFound(live.status())) {
      return live.status();
    }
  }
  corev1::Pod copy = pod;
  objects::RemoveFinalizer(copy.mutable_metadata(), kJobTrackingFinalizer);
  Status s = options_.api->Update(PodsResource(), copy).status();
  return informer::IsNotFound(s) ? Status::Ok() : s;
}

Status JobController::Sync(const std::string& key) {
  if (key.rfind(kPodKeyPrefix, 0) == 0) {
    return ReleaseOrphan(key.substr(sizeof(kPodKeyPrefix) - 1));
  }
  ObjectPtr obj = options_.jobs->Get(key);
  if (obj == nullptr) {
    expectations_.Forget(key);
    return Status::Ok();
  }
  auto job = std::static_pointer_cast<const batchv1::Job>(obj);
  const metav1::ObjectMeta& meta = job->metadata();
  const batchv1::JobSpec& spec = job->spec();
  const bool indexed = spec.completionmode() == "Indexed";
  const bool satisfied = expectations_.Satisfied(key);
  const WallTime now = clock_->WallNow();

  std::vector<PodPtr> owned;
  StatusOr<std::vector<ObjectPtr>> in_ns =
      options_.pods->ByIndex(informer::kNamespaceIndex, meta.namespace_());
  RETURN_IF_ERROR(in_ns.status());
  for (const ObjectPtr& o : *in_ns) {
    auto pod = std::static_pointer_cast<const corev1::Pod>(o);
    const metav1::OwnerReference* ref = objects::ControllerRef(pod->metadata());
    if (ref != nullptr && ref->uid() == meta.uid()) owned.push_back(pod);
  }

  // --- 1. Record the pods that ended, then release them. ---
  batchv1::JobStatus status = job->status();
  status.mutable_uncountedterminatedpods();  // kube always writes {}
  auto* uncounted = status.mutable_uncountedterminatedpods();
  std::set<std::string> uncounted_ok(uncounted->succeeded().begin(),
                                     uncounted->succeeded().end());
  std::set<std::string> uncounted_failed(uncounted->failed().begin(),
                                         uncounted->failed().end());
  std::set<int> completed =
      ParseIndexes(status.completedindexes(), indexed ? spec.completions() : 0);
  std::optional<RuleMatch> fail_job;
  bool recorded = false;
  std::vector<PodPtr> release;
  const bool was_finished = IsFinished(status);
  for (const PodPtr& pod : owned) {
    const std::string& uid = pod->metadata().uid();
    if (!objects::HasFinalizer(pod->metadata(), kJobTrackingFinalizer)) {
      continue;
    }
    {
      MutexLock l(&mu_);
      if (finalizer_removed_.count(uid) != 0) continue;
    }
    if (uncounted_ok.count(uid) != 0 || uncounted_failed.count(uid) != 0) {
      release.push_back(pod);
      continue;
    }
    const bool ok = pod->status().phase() == "Succeeded";
    const bool failed = !ok && IsPodFailed(*pod, *job);
    if (!ok && !failed) {
      // Still running; a finished Job's leftovers are released uncounted.
      if (was_finished && objects::IsBeingDeleted(pod->metadata())) {
        release.push_back(pod);
      }
      continue;
    }
    release.push_back(pod);
    if (was_finished) continue;
    if (ok) {
      if (indexed) {
        std::optional<int> i = CompletionIndex(*pod);
        if (!i || *i >= spec.completions() || completed.count(*i) != 0) {
          continue;  // a duplicate or stray index counts for nothing
        }
        completed.insert(*i);
      }
      uncounted_ok.insert(uid);
      recorded = true;
      continue;
    }
    std::optional<RuleMatch> match = MatchPodFailurePolicy(*job, *pod);
    if (match && match->action == "Ignore") continue;
    if (match && match->action == "FailJob" && !fail_job) fail_job = match;
    uncounted_failed.insert(uid);
    recorded = true;
  }
  auto write_uncounted = [&] {
    uncounted->clear_succeeded();
    uncounted->clear_failed();
    for (const auto& u : uncounted_ok) uncounted->add_succeeded(u);
    for (const auto& u : uncounted_failed) uncounted->add_failed(u);
    if (indexed) status.set_completedindexes(FormatIndexes(completed));
  };
  write_uncounted();
  if (recorded) {
    batchv1::Job copy = *job;
    *copy.mutable_status() = status;
    StatusOr<ObjectPtr> written =
        options_.api->UpdateStatus(JobsResource(), copy);
    if (!written.ok()) {
      return informer::IsNotFound(written.status()) ? Status::Ok()
                                                    : written.status();
    }
    job = std::static_pointer_cast<const batchv1::Job>(*written);
  }
  Status first_error;
  std::set<std::string> released;
  for (const PodPtr& pod : release) {
    corev1::Pod copy = *pod;
    objects::RemoveFinalizer(copy.mutable_metadata(), kJobTrackingFinalizer);
    Status s = options_.api->Update(PodsResource(), copy).status();
    if (s.ok() || informer::IsNotFound(s)) {
      released.insert(pod->metadata().uid());
      MutexLock l(&mu_);
      finalizer_removed_.insert(pod->metadata().uid());
    } else {
      Keep(&first_error, s);
    }
  }
  // Recorded uids whose pods no longer hold the finalizer move into the
  // counters.
  std::set<std::string> still_tracked;
  for (const PodPtr& pod : owned) {
    if (objects::HasFinalizer(pod->metadata(), kJobTrackingFinalizer) &&
        released.count(pod->metadata().uid()) == 0) {
      still_tracked.insert(pod->metadata().uid());
    }
  }
  for (auto* set : {&uncounted_ok, &uncounted_failed}) {
    for (auto it = set->begin(); it != set->end();) {
      if (still_tracked.count(*it) != 0) {
        ++it;
        continue;
      }
      if (set == &uncounted_ok) {
        status.set_succeeded(status.succeeded() + 1);
      } else {
        status.set_failed(status.failed() + 1);
      }
      it = set->erase(it);
    }
  }
  write_uncounted();
  if (indexed) {
    status.set_succeeded(static_cast<int32_t>(completed.size()));
  }

  // --- 2. Where the Job stands. ---
  std::vector<PodPtr> active;
  int32_t terminating = 0, ready = 0, restarts = 0;
  std::optional<WallTime> last_failure;
  for (const PodPtr& pod : owned) {
    // kube's pastBackoffLimitOnFailure: the restarts of the init and
    // regular containers of every Pending or Running pod.
    if (pod->status().phase() == "Pending" ||
        pod->status().phase() == "Running") {
      for (const auto& cs : pod->status().initcontainerstatuses()) {
        restarts += cs.restartcount();
      }
      for (const auto& cs : pod->status().containerstatuses()) {
        restarts += cs.restartcount();
      }
    }
    if (IsPodActive(*pod)) {
      active.push_back(pod);
      if (IsPodReady(*pod)) ++ready;
    } else if (objects::IsBeingDeleted(pod->metadata()) &&
               pod->status().phase() != "Succeeded" &&
               pod->status().phase() != "Failed") {
      ++terminating;
    }
    if (IsPodFailed(*pod, *job)) {
      WallTime t = FinishTime(*pod, now);
      if (!last_failure || t > *last_failure) last_failure = t;
    }
  }
  const int32_t succeeded =
      status.succeeded() + static_cast<int32_t>(uncounted_ok.size());
  const int32_t failed =
      status.failed() + static_cast<int32_t>(uncounted_failed.size());

  // `release`: remove the tracking finalizer before the DELETE, as kube's
  // deleteJobPods does, so that a pod deleted for a suspend or a lower
  // parallelism is never recorded (it would count as a failure: deleted
  // before it succeeded). Pods of a Job that failed or succeeded keep it
  // until they are recorded: kube counts them as failed once it finishes.
  auto delete_pods = [&](const std::vector<PodPtr>& pods, bool release) {
    for (const PodPtr& p : pods) {
      if (objects::IsBeingDeleted(p->metadata())) continue;
      if (release &&
          objects::HasFinalizer(p->metadata(), kJobTrackingFinalizer)) {
        corev1::Pod copy = *p;
        objects::RemoveFinalizer(copy.mutable_metadata(),
                                 kJobTrackingFinalizer);
        Status s = options_.api->Update(PodsResource(), copy).status();
        if (informer::IsNotFound(s)) continue;
        if (!s.ok()) {
          // Not deleted while it would still count (kube's failDelete).
          Keep(&first_error, s);
          continue;
        }
        MutexLock l(&mu_);
        finalizer_removed_.insert(p->metadata().uid());
      }
      Status s = options_.api->Delete(
          PodsResource(), p->metadata().namespace_(), p->metadata().name());
      if (s.ok()) {
        RecordEvent(*job, informer::kEventNormal, "SuccessfulDelete",
                    "Deleted pod: " + p->metadata().name());
      }
      if (!s.ok() && !informer::IsNotFound(s)) Keep(&first_error, s);
    }
  };

  int32_t active_count = static_cast<int32_t>(active.size());
  if (IsFinished(status)) {
    delete_pods(active, /*release=*/false);
    active_count = 0;
  } else {
    if (!spec.suspend() && !status.has_starttime()) {
      objects::SetTime(status.mutable_starttime(), now);
    }
    std::string fail_reason, fail_message;
    if (const batchv1::JobCondition* c = FindCondition(status, "FailureTarget");
        c != nullptr && c->status() == "True") {
      fail_reason = c->reason();
      fail_message = c->message();
    } else if (fail_job) {
      fail_reason = "PodFailurePolicy";
      fail_message = fail_job->message;
    } else if (failed > spec.backofflimit() ||
               PastBackoffLimitOnFailure(spec, restarts)) {
      fail_reason = "BackoffLimitExceeded";
      fail_message = "Job has reached the specified backoff limit";
    } else if (spec.has_activedeadlineseconds() && status.has_starttime() &&
               !spec.suspend()) {
      WallTime deadline = AddSeconds(objects::ToWallTime(status.starttime()),
                                     spec.activedeadlineseconds());
      if (now >= deadline) {
        fail_reason = "DeadlineExceeded";
        fail_message = "Job was active longer than specified deadline";
      } else {
        EnqueueAfter(key, deadline - now);
      }
    }
    bool complete = HasTrueCondition(status, "SuccessCriteriaMet");
    if (!complete) {
      if (indexed) {
        complete = static_cast<int32_t>(completed.size()) >= spec.completions();
      } else if (spec.has_completions()) {
        complete = succeeded >= spec.completions();
      } else {
        complete = succeeded > 0 && active_count == 0;
      }
    }
    if (!fail_reason.empty()) {
      SetCondition(&status, "FailureTarget", "True", fail_reason, fail_message,
                   now);
      delete_pods(active, /*release=*/false);
      if (active_count == 0 && terminating == 0) {
        SetCondition(&status, "Failed", "True", fail_reason, fail_message, now);
      }
      active_count = 0;
    } else if (complete) {
      constexpr char kReason[] = "CompletionsReached";
      constexpr char kMessage[] = "Reached expected number of succeeded pods";
      SetCondition(&status, "SuccessCriteriaMet", "True", kReason, kMessage,
                   now);
      delete_pods(active, /*release=*/false);
      if (active_count == 0 && terminating == 0) {
        SetCondition(&status, "Complete", "True", kReason, kMessage, now);
        objects::SetTime(status.mutable_completiontime(), now);
      }
      active_count = 0;
    } else if (objects::IsBeingDeleted(meta)) {
      // Being deleted (foreground: the garbage collector is deleting its
      // pods): kube calls manageJob, and changes Suspended, only while
      // job.DeletionTimestamp == nil, so no pod is created or deleted.
    } else if (spec.suspend()) {
      SetCondition(&status, "Suspended", "True", "JobSuspended",
                   "Job suspended", now);
      delete_pods(active, /*release=*/true);
      active_count = 0;
    } else {
      if (HasTrueCondition(status, "Suspended")) {
        SetCondition(&status, "Suspended", "False", "JobResumed", "Job resumed",
                     now);
        objects::SetTime(status.mutable_starttime(), now);
      }
      // --- 3. Pods to create (or, when parallelism shrank, to delete). ---
      std::set<int> running_indexes;
      for (const PodPtr& p : active) {
        if (auto i = CompletionIndex(*p)) running_indexes.insert(*i);
      }
      int32_t want;
      std::vector<int> missing;  // Indexed: indexes to start, lowest first
      if (indexed) {
        for (int i = 0; i < spec.completions(); ++i) {
          if (completed.count(i) == 0 && running_indexes.count(i) == 0) {
            missing.push_back(i);
          }
        }
        want = std::min<int32_t>(
            spec.parallelism(),
            spec.completions() - static_cast<int32_t>(completed.size()));
      } else if (spec.has_completions()) {
        want = std::min(spec.parallelism(), spec.completions() - succeeded);
      } else {
        want = succeeded > 0 ? std::min(active_count, spec.parallelism())
                             : spec.parallelism();
      }
      want = std::max(want, 0);
      int32_t occupied = active_count;
      if (spec.podreplacementpolicy() == "Failed") occupied += terminating;
      if (satisfied && active_count > want) {
        std::vector<PodPtr> extra = active;
        std::sort(
            extra.begin(), extra.end(), [](const PodPtr& a, const PodPtr& b) {
              return objects::UnixSeconds(a->metadata().creationtimestamp()) >
                     objects::UnixSeconds(b->metadata().creationtimestamp());
            });
        extra.resize(active_count - want);
        delete_pods(extra, /*release=*/true);
      } else if (satisfied && occupied < want) {
        int32_t n = std::min(want - occupied, options_.burst_pods);
        if (indexed) n = std::min<int32_t>(n, missing.size());
        Duration wait(0);
        if (failed > 0 && last_failure) {
          // Doubled until past the maximum (kube's
          // getRemainingTimeForFailuresCount): 10 s << 30 would overflow.
          Duration backoff = options_.pod_failure_backoff;
          for (int i = 1; i < failed && backoff > Duration(0) &&
                          backoff < options_.max_pod_failure_backoff;
               ++i) {
            backoff *= 2;
          }
          backoff = std::min(backoff, options_.max_pod_failure_backoff);
          wait = *last_failure + backoff - now;
        }
        if (wait > Duration(0)) {
          EnqueueAfter(key, wait);
        } else if (n > 0) {
          expectations_.ExpectCreations(key, n);
          for (int32_t i = 0; i < n; ++i) {
            std::optional<int> index;
            if (indexed) index = missing[i];
            StatusOr<ObjectPtr> created = options_.api->Create(
                PodsResource(), PodFromTemplate(*job, index));
            Status s = created.status();
            if (s.ok()) {
              RecordEvent(*job, informer::kEventNormal, "SuccessfulCreate",
                          "Created pod: " + objects::Name(**created));
            } else {
              RecordEvent(*job, informer::kEventWarning, "FailedCreate",
                          "Error creating: " + s.message());
              for (int32_t j = i; j < n; ++j) expectations_.CreationFailed(key);
              Keep(&first_error, s);
              break;
            }
            ++active_count;
          }
        }
      }
    }
  }

  // --- 4. Status. ---
  // While our creates are not all seen, the cache undercounts: keep the
  // count the last sync wrote rather than flap it down and up.
  if (!satisfied && !IsFinished(status)) {
    active_count = std::max(active_count, job->status().active());
  }
  status.set_active(active_count);
  status.set_ready(ready);
  status.set_terminating(terminating);
  if (DeterministicBytes(status) != DeterministicBytes(job->status())) {
    batchv1::Job copy = *job;
    *copy.mutable_status() = status;
    Status s = options_.api->UpdateStatus(JobsResource(), copy).status();
    if (!informer::IsNotFound(s)) Keep(&first_error, s);
    if (s.ok() && IsFinished(status) && !IsFinished(job->status())) {
      // kube's recordJobFinished, once the terminal condition is stored.
      if (const batchv1::JobCondition* c = FindCondition(status, "Failed");
          c != nullptr && c->status() == "True") {
        RecordEvent(*job, informer::kEventWarning, c->reason(), c->message());
      } else {
        RecordEvent(*job, informer::kEventNormal, "Completed", "Job completed");
      }
    }
  }
  return first_error;
}

// ---------------------------------------------------------------------------
// TtlAfterFinishedController

TtlAfterFinishedController::TtlAfterFinishedController(
    TtlAfterFinishedOptions options)
    : Controller("ttlafterfinished", options.clock, options.metrics),
      options_(options) {
  CHECK(options_.api != nullptr && options_.jobs != nullptr);
}

void TtlAfterFinishedController::RegisterHandlers(
    informer::SharedIndexInformer* jobs) {
  OnObjectEvents(jobs, [this](const ObjectEvent& e) {
    if (e.deleted()) return;
    const auto& job = e.As<batchv1::Job>();
    if (job.spec().has_ttlsecondsafterfinished() && IsFinished(job.status())) {
      Enqueue(e.Key());
    }
  });
}

Status TtlAfterFinishedController::Sync(const std::string& key) {
  ObjectPtr obj = options_.jobs->Get(key);
  if (obj == nullptr) return Status::Ok();
  const auto& job = static_cast<const batchv1::Job&>(*obj);
  if (!job.spec().has_ttlsecondsafterfinished() ||
      objects::IsBeingDeleted(job.metadata())) {
    return Status::Ok();
  }
  std::optional<WallTime> finished;
  for (const char* type : {"Complete", "Failed"}) {
    const batchv1::JobCondition* c = FindCondition(job.status(), type);
    if (c != nullptr && c->status() == "True") {
      finished = objects::ToWallTime(c->lasttransitiontime());
    }
  }
  if (!finished) return Status::Ok();
  const WallTime expires =
      *finished + seconds(job.spec().ttlsecondsafterfinished());
  const WallTime now = clock_->WallNow();
  if (now < expires) {
    EnqueueAfter(key, expires - now);
    return Status::Ok();
  }
  LOG(INFO) << "ttlafterfinished: deleting job " << key;
  metav1::DeleteOptions opts;
  opts.set_propagationpolicy("Foreground");
  opts.mutable_preconditions()->set_uid(job.metadata().uid());
  Status s = options_.api->Delete(JobsResource(), job.metadata().namespace_(),
                                  job.metadata().name(), opts);
  return informer::IsNotFound(s) || informer::IsConflict(s) ? Status::Ok() : s;
}

}  // namespace kplane::controllers
