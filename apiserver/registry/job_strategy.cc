// The batch/v1 Job and CronJob strategies. Upstream models:
// pkg/registry/batch/job/ strategy.go (status cleared on create,
// generateSelector, generation), pkg/apis/batch/v1/defaults.go and
// pkg/apis/batch/validation of Kubernetes 1.32, for the fields kplane's Job
// controller implements (parallelism, completions, completionMode,
// backoffLimit, activeDeadlineSeconds, suspend, ttlSecondsAfterFinished, the
// basics of podFailurePolicy). backoffLimitPerIndex, maxFailedIndexes and
// successPolicy are stored and validated only as non-negative / immutable
// (see docs/controllers.md). CronJobs: pkg/registry/batch/cronjob, their
// defaults and ValidateCronJob (schedule through machinery::CronSchedule;
// timeZone only UTC / Etc/UTC: kplane computes schedules in UTC).
#include <algorithm>
#include <climits>
#include <set>

#include "apiserver/registry/defaults.h"
#include "apiserver/registry/pod_validation.h"
#include "apiserver/registry/printers.h"
#include "apiserver/registry/strategies.h"
#include "apiserver/registry/validation_util.h"
#include "base/strings.h"
#include "objects/batch_types.h"
#include "objects/machinery/cron.h"

namespace kplane::apiserver {

namespace {

using objects::batchv1::Job;
using objects::batchv1::JobSpec;
using objects::batchv1::JobStatus;
using validation::Append;
using validation::Forbidden;
using validation::GoLabelSelector;
using validation::Invalid;
using validation::InvalidInt;
using validation::NameRule;
using validation::Path;
using validation::Required;

// Labels the Job's pods carry and its generated selector uses
// (k8s.io/api/batch/v1 types.go).
constexpr char kControllerUidLabel[] = "batch.kubernetes.io/controller-uid";
constexpr char kLegacyControllerUidLabel[] = "controller-uid";
constexpr char kJobNameLabel[] = "batch.kubernetes.io/job-name";
constexpr char kLegacyJobNameLabel[] = "job-name";
// Indexed jobs: at most this many completions / parallelism.
constexpr int64_t kMaxParallelismForIndexedJob = 100000;
constexpr int64_t kMaxCompletionsForIndexedJob = 100000;
// podFailurePolicy limits (pkg/apis/batch/validation).
constexpr int kMaxPodFailurePolicyRules = 20;
constexpr int kMaxPodFailurePolicyOnExitCodesValues = 255;

void DefaultJobSpec(JobSpec* s) {
  if (!s->has_completions() && !s->has_parallelism()) {
    s->set_completions(1);
    s->set_parallelism(1);
  }
  if (!s->has_parallelism()) s->set_parallelism(1);
  if (!s->has_backofflimit()) {
    s->set_backofflimit(s->has_backofflimitperindex() ? INT32_MAX : 6);
  }
  if (!s->has_completionmode()) s->set_completionmode("NonIndexed");
  if (!s->has_suspend()) s->set_suspend(false);
  if (s->has_podfailurepolicy()) {
    for (auto& rule : *s->mutable_podfailurepolicy()->mutable_rules()) {
      for (auto& pattern : *rule.mutable_onpodconditions()) {
        if (pattern.status().empty()) pattern.set_status("True");
      }
    }
  }
  if (!s->has_podreplacementpolicy()) {
    s->set_podreplacementpolicy(
        s->has_podfailurepolicy() ? "Failed" : "TerminatingOrFailed");
  }
  defaults::DefaultPodTemplate(s->mutable_template_());
}

// kube's generateSelector: without manualSelector the selector is the
// controller-uid label and the template gets it and the job-name labels.
void GenerateSelector(Job* job) {
  auto* labels = job->mutable_spec()
                     ->mutable_template_()
                     ->mutable_metadata()
                     ->mutable_labels();
  for (const char* key : {kLegacyJobNameLabel, kJobNameLabel}) {
    if (!labels->contains(key)) (*labels)[key] = job->metadata().name();
  }
  for (const char* key : {kLegacyControllerUidLabel, kControllerUidLabel}) {
    if (!labels->contains(key)) (*labels)[key] = job->metadata().uid();
  }
  auto* match = job->mutable_spec()->mutable_selector()->mutable_matchlabels();
  if (!match->contains(kControllerUidLabel)) {
    (*match)[kControllerUidLabel] = job->metadata().uid();
  }
}

// ValidateGeneratedSelector: a generated selector must be the uid's.
FieldErrors ValidateGeneratedSelector(const Job& job) {
  FieldErrors errs;
  if (job.spec().manualselector()) return errs;
  const std::string& uid = job.metadata().uid();
  const auto& labels = job.spec().template_().metadata().labels();
  for (const char* key : {kControllerUidLabel, kLegacyControllerUidLabel}) {
    auto it = labels.find(key);
    if (it != labels.end() && it->second != uid) {
      errs.push_back(
          Invalid(Path("spec").Child("template", "metadata").Child("labels"),
                  validation::GoStringMap(labels), "must be '" + uid + "'"));
    }
  }
  const auto& match = job.spec().selector().matchlabels();
  if (job.spec().selector().matchexpressions_size() != 0 || match.size() != 1 ||
      !match.contains(kControllerUidLabel) ||
      match.at(kControllerUidLabel) != uid) {
    errs.push_back(Invalid(Path("spec").Child("selector"),
                           GoLabelSelector(job.spec().selector()),
                           "`selector` not auto-generated"));
  }
  return errs;
}

FieldErrors ValidatePodFailurePolicy(const JobSpec& spec, const Path& sp) {
  const Path p = sp.Child("podFailurePolicy");
  FieldErrors errs;
  const auto& policy = spec.podfailurepolicy();
  if (spec.template_().spec().restartpolicy() != "Never") {
    errs.push_back(Invalid(
        sp.Child("template", "spec").Child("restartPolicy"),
        GoQuote(spec.template_().spec().restartpolicy()),
        "only \"Never\" is supported when podFailurePolicy is specified"));
  }
  Path rules_path = p.Child("rules");
  if (policy.rules_size() > kMaxPodFailurePolicyRules) {
    errs.push_back(validation::TooMany(rules_path, policy.rules_size(),
                                       kMaxPodFailurePolicyRules));
  }
  for (int i = 0; i < policy.rules_size(); ++i) {
    const auto& rule = policy.rules(i);
    Path rp = rules_path.Index(i);
    static const std::vector<std::string> kActions = {"Count", "FailIndex",
                                                      "FailJob", "Ignore"};
    if (std::find(kActions.begin(), kActions.end(), rule.action()) ==
        kActions.end()) {
      errs.push_back(validation::NotSupportedString(rp.Child("action"),
                                                    rule.action(), kActions));
    } else if (rule.action() == "FailIndex" &&
               !spec.has_backofflimitperindex()) {
      errs.push_back(Forbidden(rp.Child("action"),
                               "requires the backoffLimitPerIndex to be set"));
    }
    const bool codes = rule.has_onexitcodes();
    const bool conditions = rule.onpodconditions_size() > 0;
    if (codes == conditions) {
      errs.push_back(Invalid(rp, "",
                             "specifying one of onExitCodes and "
                             "onPodConditions is required"));
    }
    if (codes) {
      const auto& req = rule.onexitcodes();
      Path cp = rp.Child("onExitCodes");
      if (req.operator_() != "In" && req.operator_() != "NotIn") {
        errs.push_back(validation::NotSupportedString(
            cp.Child("operator"), req.operator_(), {"In", "NotIn"}));
      }
      if (req.values_size() == 0) {
        errs.push_back(
            Required(cp.Child("values"), "at least one value is required"));
      } else if (req.values_size() > kMaxPodFailurePolicyOnExitCodesValues) {
        errs.push_back(
            validation::TooMany(cp.Child("values"), req.values_size(),
                                kMaxPodFailurePolicyOnExitCodesValues));
      }
      std::set<int32_t> seen;
      for (int j = 0; j < req.values_size(); ++j) {
        const int32_t v = req.values(j);
        Path vp = cp.Child("values").Index(j);
        if (req.operator_() == "In" && v == 0) {
          errs.push_back(
              InvalidInt(vp, v, "must not be 0 for the In operator"));
        }
        if (!seen.insert(v).second) {
          errs.push_back(validation::Duplicate(vp, std::to_string(v)));
        }
        if (j > 0 && req.values(j - 1) > v) {
          errs.push_back(InvalidInt(vp, v, "must be ordered"));
        }
      }
    }
    for (int j = 0; j < rule.onpodconditions_size(); ++j) {
      const auto& pat = rule.onpodconditions(j);
      Path pp = rp.Child("onPodConditions").Index(j);
      if (pat.status() != "True" && pat.status() != "False" &&
          pat.status() != "Unknown") {
        errs.push_back(validation::NotSupportedString(
            pp.Child("status"), pat.status(), {"False", "True", "Unknown"}));
      }
      Append(&errs,
             validation::ValidateQualifiedName(pat.type(), pp.Child("type")));
    }
  }
  return errs;
}

// ValidateJobSpec; `in_template`: a CronJob's jobTemplate, whose selector
// is made when its Jobs are (kube's validateJobTemplateSpec).
FieldErrors ValidateJobSpec(const JobSpec& spec, const Path& sp,
                            bool in_template) {
  FieldErrors errs;
  if (spec.has_parallelism()) {
    Append(&errs, validation::ValidateNonnegative(spec.parallelism(),
                                                  sp.Child("parallelism")));
  }
  if (spec.has_completions()) {
    Append(&errs, validation::ValidateNonnegative(spec.completions(),
                                                  sp.Child("completions")));
  }
  if (spec.has_activedeadlineseconds()) {
    Append(&errs,
           validation::ValidateNonnegative(spec.activedeadlineseconds(),
                                           sp.Child("activeDeadlineSeconds")));
  }
  if (spec.has_backofflimit()) {
    Append(&errs, validation::ValidateNonnegative(spec.backofflimit(),
                                                  sp.Child("backoffLimit")));
  }
  if (spec.has_backofflimitperindex()) {
    Append(&errs,
           validation::ValidateNonnegative(spec.backofflimitperindex(),
                                           sp.Child("backoffLimitPerIndex")));
  }
  if (spec.has_maxfailedindexes()) {
    Append(&errs, validation::ValidateNonnegative(
                      spec.maxfailedindexes(), sp.Child("maxFailedIndexes")));
  }
  if (spec.has_ttlsecondsafterfinished()) {
    Append(&errs, validation::ValidateNonnegative(
                      spec.ttlsecondsafterfinished(),
                      sp.Child("ttlSecondsAfterFinished")));
  }
  const std::string& mode = spec.completionmode();
  if (mode != "NonIndexed" && mode != "Indexed") {
    errs.push_back(validation::NotSupportedString(
        sp.Child("completionMode"), mode, {"NonIndexed", "Indexed"}));
  }
  if (mode == "Indexed") {
    if (!spec.has_completions()) {
      errs.push_back(
          Required(sp.Child("completions"), "when completion mode is Indexed"));
    } else if (spec.completions() > kMaxCompletionsForIndexedJob) {
      errs.push_back(InvalidInt(sp.Child("completions"), spec.completions(),
                                "must be less than or equal to 100000 when "
                                "completion mode is Indexed"));
    }
    if (spec.parallelism() > kMaxParallelismForIndexedJob) {
      errs.push_back(InvalidInt(sp.Child("parallelism"), spec.parallelism(),
                                "must be less than or equal to 100000 when "
                                "completion mode is Indexed"));
    }
  } else if (spec.has_backofflimitperindex()) {
    errs.push_back(Required(sp.Child("completionMode"),
                            "when backoffLimitPerIndex is specified, "
                            "completionMode must be Indexed"));
  }
  const std::string& replacement = spec.podreplacementpolicy();
  if (replacement != "TerminatingOrFailed" && replacement != "Failed") {
    errs.push_back(validation::NotSupportedString(
        sp.Child("podReplacementPolicy"), replacement,
        {"Failed", "TerminatingOrFailed"}));
  } else if (spec.has_podfailurepolicy() && replacement != "Failed") {
    errs.push_back(validation::NotSupportedString(
        sp.Child("podReplacementPolicy"), replacement, {"Failed"}));
  }
  if (spec.has_podfailurepolicy()) {
    Append(&errs, ValidatePodFailurePolicy(spec, sp));
  }

  // Selector and template (ValidateJobSpec / validateJobPodTemplate).
  if (in_template) {
    if (spec.manualselector()) {
      errs.push_back(validation::NotSupported(sp.Child("manualSelector"),
                                              "true", {"nil", "false"}));
    }
  } else if (!spec.has_selector()) {
    errs.push_back(Required(sp.Child("selector")));
  } else {
    Append(&errs, validation::ValidateLabelSelector(spec.selector(),
                                                    sp.Child("selector")));
  }
  auto sel =
      validation::AsSelector(spec.has_selector() ? &spec.selector() : nullptr);
  const auto& tmpl = spec.template_();
  Path tp = sp.Child("template");
  if (spec.has_selector() && sel && !sel->Empty() &&
      !sel->Matches(validation::ToLabels(tmpl.metadata().labels()))) {
    errs.push_back(Invalid(tp.Child("metadata", "labels"),
                           validation::GoStringMap(tmpl.metadata().labels()),
                           "`selector` does not match template `labels`"));
  }
  Append(&errs, podvalidation::ValidatePodTemplateSpec(tmpl, tp));
  const std::string& restart = tmpl.spec().restartpolicy();
  if (restart != "OnFailure" && restart != "Never") {
    if (restart.empty()) {
      errs.push_back(Required(tp.Child("spec", "restartPolicy"),
                              "valid values: \"OnFailure\", \"Never\""));
    } else {
      errs.push_back(validation::NotSupportedString(
          tp.Child("spec", "restartPolicy"), restart, {"OnFailure", "Never"}));
    }
  }
  return errs;
}

FieldErrors ValidateJob(const Job& job) {
  FieldErrors errs = validation::ValidateObjectMeta(
      job.metadata(), true, NameRule::kDNS1123Subdomain);
  Append(&errs, ValidateGeneratedSelector(job));
  Append(&errs, ValidateJobSpec(job.spec(), Path("spec"), false));
  return errs;
}

FieldErrors Immutable(const google::protobuf::Message& now,
                      const google::protobuf::Message& old, bool has_now,
                      bool has_old, const Path& p) {
  return validation::ValidateImmutable(
      has_now == has_old && validation::Equal(now, old), "", p);
}

// ValidateJobSpecUpdate: what a running Job cannot change.
FieldErrors ValidateJobSpecUpdate(const JobSpec& s, const JobSpec& old) {
  Path sp("spec");
  FieldErrors errs;
  auto immutable_int = [&](bool has, int64_t v, bool had, int64_t ov,
                           const char* name) {
    if (has != had || v != ov) {
      Append(&errs,
             validation::ValidateImmutable(
                 false, has ? std::to_string(v) : "nil", sp.Child(name)));
    }
  };
  // Elastic indexed jobs may scale completions along with parallelism.
  const bool elastic = s.completionmode() == "Indexed" &&
                       s.completions() == s.parallelism() &&
                       old.completions() == old.parallelism();
  if (!elastic) {
    immutable_int(s.has_completions(), s.completions(), old.has_completions(),
                  old.completions(), "completions");
  }
  immutable_int(s.has_backofflimitperindex(), s.backofflimitperindex(),
                old.has_backofflimitperindex(), old.backofflimitperindex(),
                "backoffLimitPerIndex");
  Append(&errs, Immutable(s.selector(), old.selector(), s.has_selector(),
                          old.has_selector(), sp.Child("selector")));
  // The pod template may change only while the Job is suspended.
  if (!(s.suspend() && old.suspend())) {
    Append(&errs, Immutable(s.template_(), old.template_(), true, true,
                            sp.Child("template")));
  }
  if (s.completionmode() != old.completionmode()) {
    Append(&errs,
           validation::ValidateImmutable(false, GoQuote(s.completionmode()),
                                         sp.Child("completionMode")));
  }
  Append(&errs, Immutable(s.podfailurepolicy(), old.podfailurepolicy(),
                          s.has_podfailurepolicy(), old.has_podfailurepolicy(),
                          sp.Child("podFailurePolicy")));
  Append(&errs, Immutable(s.successpolicy(), old.successpolicy(),
                          s.has_successpolicy(), old.has_successpolicy(),
                          sp.Child("successPolicy")));
  if (s.managedby() != old.managedby()) {
    Append(&errs, validation::ValidateImmutable(false, GoQuote(s.managedby()),
                                                sp.Child("managedBy")));
  }
  return errs;
}

FieldErrors ValidateJobStatus(const JobStatus& s) {
  Path p("status");
  FieldErrors errs;
  Append(&errs, validation::ValidateNonnegative(s.active(), p.Child("active")));
  Append(&errs,
         validation::ValidateNonnegative(s.succeeded(), p.Child("succeeded")));
  Append(&errs, validation::ValidateNonnegative(s.failed(), p.Child("failed")));
  if (s.has_ready()) {
    Append(&errs, validation::ValidateNonnegative(s.ready(), p.Child("ready")));
  }
  if (s.has_terminating()) {
    Append(&errs, validation::ValidateNonnegative(s.terminating(),
                                                  p.Child("terminating")));
  }
  return errs;
}

class JobStrategy : public TypedStrategy<Job> {
 public:
  using TypedStrategy::TypedStrategy;

  std::vector<std::string> SupportedFieldLabels() const override {
    return {"metadata.name", "metadata.namespace", "status.successful"};
  }
  std::vector<TableColumn> Columns() const override {
    return printers::JobColumns();
  }

 protected:
  void DefaultT(Job* job) const override {
    DefaultJobSpec(job->mutable_spec());
  }
  void CreateT(Job* job) const override {
    job->mutable_status()->Clear();
    job->mutable_metadata()->set_generation(1);
    if (!job->spec().manualselector()) GenerateSelector(job);
  }
  void UpdateT(Job* job, const Job& old) const override {
    *job->mutable_status() = old.status();
    if (!validation::Equal(job->spec(), old.spec())) {
      job->mutable_metadata()->set_generation(old.metadata().generation() + 1);
    }
  }
  void StatusUpdateT(Job* job, const Job& old) const override {
    *job->mutable_spec() = old.spec();
  }
  FieldErrors ValidateCreateT(const Job& job) const override {
    return ValidateJob(job);
  }
  FieldErrors ValidateUpdateT(const Job& job, const Job& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(job.metadata(), old.metadata());
    Append(&errs, ValidateJobSpec(job.spec(), Path("spec"), false));
    Append(&errs, ValidateJobSpecUpdate(job.spec(), old.spec()));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const Job& job,
                                    const Job& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(job.metadata(), old.metadata());
    Append(&errs, ValidateJobStatus(job.status()));
    return errs;
  }
  std::optional<std::string> FieldValueT(const Job& job,
                                         std::string_view f) const override {
    if (f == "status.successful") {
      return std::to_string(job.status().succeeded());
    }
    return std::nullopt;
  }
  std::vector<TableCell> RowT(const Job& job, WallTime now) const override {
    return printers::JobRow(job, now);
  }
};

// ============================== cronjobs ==============================

using objects::batchv1::CronJob;

// A CronJob's name leaves room for the Jobs' "-<minutes>" suffix.
constexpr size_t kMaxCronJobNameLength = 52;

void DefaultCronJob(CronJob* cj) {
  auto* spec = cj->mutable_spec();
  if (spec->concurrencypolicy().empty()) spec->set_concurrencypolicy("Allow");
  if (!spec->has_suspend()) spec->set_suspend(false);
  if (!spec->has_successfuljobshistorylimit()) {
    spec->set_successfuljobshistorylimit(3);
  }
  if (!spec->has_failedjobshistorylimit()) spec->set_failedjobshistorylimit(1);
  defaults::DefaultPodTemplate(
      spec->mutable_jobtemplate()->mutable_spec()->mutable_template_());
}

FieldErrors ValidateCronJobSpec(const CronJob& cj) {
  const auto& spec = cj.spec();
  Path sp("spec");
  FieldErrors errs;
  if (spec.schedule().empty()) {
    errs.push_back(Required(sp.Child("schedule")));
  } else if (auto parsed = machinery::CronSchedule::Parse(spec.schedule());
             !parsed.ok()) {
    errs.push_back(validation::InvalidString(
        sp.Child("schedule"), spec.schedule(), parsed.status().message()));
  }
  // kplane computes schedules in UTC only (docs/api.md).
  if (spec.has_timezone() && spec.timezone() != "UTC" &&
      spec.timezone() != "Etc/UTC") {
    errs.push_back(validation::InvalidString(
        sp.Child("timeZone"), spec.timezone(),
        "unknown time zone " + spec.timezone() +
            " (kplane supports only UTC and Etc/UTC)"));
  }
  const std::string& policy = spec.concurrencypolicy();
  if (policy != "Allow" && policy != "Forbid" && policy != "Replace") {
    errs.push_back(validation::NotSupportedString(
        sp.Child("concurrencyPolicy"), policy, {"Allow", "Forbid", "Replace"}));
  }
  if (spec.has_startingdeadlineseconds()) {
    Append(&errs, validation::ValidateNonnegative(
                      spec.startingdeadlineseconds(),
                      sp.Child("startingDeadlineSeconds")));
  }
  if (spec.has_successfuljobshistorylimit()) {
    Append(&errs, validation::ValidateNonnegative(
                      spec.successfuljobshistorylimit(),
                      sp.Child("successfulJobsHistoryLimit")));
  }
  if (spec.has_failedjobshistorylimit()) {
    Append(&errs,
           validation::ValidateNonnegative(spec.failedjobshistorylimit(),
                                           sp.Child("failedJobsHistoryLimit")));
  }
  Path tp = sp.Child("jobTemplate");
  Append(&errs,
         validation::ValidateLabels(spec.jobtemplate().metadata().labels(),
                                    tp.Child("metadata", "labels")));
  Append(&errs, validation::ValidateAnnotations(
                    spec.jobtemplate().metadata().annotations(),
                    tp.Child("metadata", "annotations")));
  JobSpec job_spec = spec.jobtemplate().spec();
  DefaultJobSpec(&job_spec);  // as its Jobs will be
  Append(&errs, ValidateJobSpec(job_spec, tp.Child("spec"), true));
  return errs;
}

FieldErrors ValidateCronJob(const CronJob& cj) {
  FieldErrors errs = validation::ValidateObjectMeta(
      cj.metadata(), true, NameRule::kDNS1123Subdomain);
  if (cj.metadata().name().size() > kMaxCronJobNameLength) {
    errs.push_back(validation::InvalidString(
        Path("metadata").Child("name"), cj.metadata().name(),
        "must be no more than 52 characters"));
  }
  Append(&errs, ValidateCronJobSpec(cj));
  return errs;
}

class CronJobStrategy : public TypedStrategy<CronJob> {
 public:
  using TypedStrategy::TypedStrategy;
  std::vector<TableColumn> Columns() const override {
    return printers::CronJobColumns();
  }

 protected:
  void DefaultT(CronJob* cj) const override { DefaultCronJob(cj); }
  void CreateT(CronJob* cj) const override {
    cj->mutable_status()->Clear();
    cj->mutable_metadata()->set_generation(1);
  }
  void UpdateT(CronJob* cj, const CronJob& old) const override {
    *cj->mutable_status() = old.status();
    if (!validation::Equal(cj->spec(), old.spec())) {
      cj->mutable_metadata()->set_generation(old.metadata().generation() + 1);
    }
  }
  void StatusUpdateT(CronJob* cj, const CronJob& old) const override {
    *cj->mutable_spec() = old.spec();
  }
  FieldErrors ValidateCreateT(const CronJob& cj) const override {
    return ValidateCronJob(cj);
  }
  FieldErrors ValidateUpdateT(const CronJob& cj,
                              const CronJob& old) const override {
    FieldErrors errs =
        validation::ValidateObjectMetaUpdate(cj.metadata(), old.metadata());
    Append(&errs, ValidateCronJobSpec(cj));
    return errs;
  }
  FieldErrors ValidateStatusUpdateT(const CronJob& cj,
                                    const CronJob& old) const override {
    return validation::ValidateObjectMetaUpdate(cj.metadata(), old.metadata());
  }
  std::vector<TableCell> RowT(const CronJob& cj, WallTime now) const override {
    return printers::CronJobRow(cj, now);
  }
};

}  // namespace

std::unique_ptr<Strategy> NewCronJobStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<CronJobStrategy>(r);
}

std::unique_ptr<Strategy> NewJobStrategy(const objects::ResourceInfo* r) {
  return std::make_unique<JobStrategy>(r);
}

}  // namespace kplane::apiserver
