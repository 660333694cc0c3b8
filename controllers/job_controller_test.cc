#include "controllers/job_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "controllers/test_objects.h"
#include "informer/event_recorder.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace testing;  // NOLINT: test builders

constexpr int64_t kNow = 1700000100;

class JobControllerTest : public ::testing::Test {
 protected:
  JobControllerTest()
      : controller_({.api = &fake_,
                     .jobs = &jobs_,
                     .pods = &pods_,
                     .clock = &clock_,
                     .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(kNow)));
    fake_.ReflectUpdates(JobsResource(), &jobs_);
  }

  std::shared_ptr<batchv1::Job> AddJob(int32_t parallelism,
                                       int32_t completions) {
    auto job = std::make_shared<batchv1::Job>();
    SetMeta(job->mutable_metadata(), "default", "pi");
    auto* spec = job->mutable_spec();
    spec->set_parallelism(parallelism);
    if (completions > 0) spec->set_completions(completions);
    spec->set_backofflimit(6);
    spec->set_completionmode("NonIndexed");
    spec->set_suspend(false);
    spec->set_podreplacementpolicy("TerminatingOrFailed");
    *spec->mutable_template_() = Template({{"job-name", "pi"}}, "perl");
    spec->mutable_template_()->mutable_spec()->set_restartpolicy("Never");
    jobs_.Upsert(job);
    return job;
  }
  // Re-reads the cached job (the fake reflects status writes into it).
  std::shared_ptr<const batchv1::Job> Job() {
    return std::static_pointer_cast<const batchv1::Job>(
        jobs_.Get("default/pi"));
  }
  void Update(const std::function<void(batchv1::Job*)>& f) {
    auto copy = std::make_shared<batchv1::Job>(*Job());
    f(copy.get());
    jobs_.Upsert(copy);
  }
  // A pod of the job, tracked (finalizer), in `phase`.
  std::shared_ptr<corev1::Pod> AddPod(const std::string& name,
                                      const std::string& phase,
                                      int exit_code = 0) {
    auto p = NewPod("default", name, {{"job-name", "pi"}});
    *p->mutable_metadata()->add_ownerreferences() =
        ControllerRefTo("batch/v1", "Job", Job()->metadata());
    p->mutable_metadata()->add_finalizers(kJobTrackingFinalizer);
    p->mutable_status()->set_phase(phase);
    if (phase == "Succeeded" || phase == "Failed") {
      auto* cs = p->mutable_status()->add_containerstatuses();
      cs->set_name("app");
      auto* t = cs->mutable_state()->mutable_terminated();
      t->set_exitcode(exit_code);
      objects::SetTime(t->mutable_finishedat(), kNow);
    }
    pods_.Upsert(p);
    return p;
  }
  bool HasCondition(const std::string& type, const std::string& reason = "") {
    for (const auto& c : Job()->status().conditions()) {
      if (c.type() == type && c.status() == "True" &&
          (reason.empty() || c.reason() == reason)) {
        return true;
      }
    }
    return false;
  }
  std::vector<std::shared_ptr<const corev1::Pod>> CreatedPods() {
    std::vector<std::shared_ptr<const corev1::Pod>> out;
    for (const auto& w : fake_.Written()) {
      if (auto* p = dynamic_cast<const corev1::Pod*>(w.get())) {
        if (p->metadata().resourceversion().empty()) {
          out.push_back(std::make_shared<corev1::Pod>(*p));
        }
      }
    }
    return out;
  }
  // Created pods become visible to the controller (the informer's add).
  void ObserveCreated() {
    for (const auto& p : CreatedPods()) {
      auto copy = std::make_shared<corev1::Pod>(*p);
      copy->mutable_metadata()->set_uid("uid-" + p->metadata().name());
      copy->mutable_metadata()->set_resourceversion("1");
      copy->mutable_status()->set_phase("Pending");
      pods_.Upsert(copy);
      controller_.OnPodEvent(*copy, true, false);
    }
  }

  // What the API server leaves after the controller's DELETE of pod `name`:
  // the last version the controller wrote of it (else the cached one), with
  // a deletionTimestamp; the informer then reports the update.
  void ObserveDeletion(const std::string& name) {
    std::shared_ptr<corev1::Pod> pod;
    for (const auto& w : fake_.Written()) {
      auto* p = dynamic_cast<const corev1::Pod*>(w.get());
      if (p != nullptr && p->metadata().name() == name) {
        pod = std::make_shared<corev1::Pod>(*p);
      }
    }
    if (pod == nullptr) {
      pod = std::make_shared<corev1::Pod>(
          *std::static_pointer_cast<const corev1::Pod>(
              pods_.Get("default/" + name)));
    }
    objects::SetTime(pod->mutable_metadata()->mutable_deletiontimestamp(),
                     clock_.WallNow());
    pods_.Upsert(pod);
    controller_.OnPodEvent(*pod, false, false);
  }
  // The pods the controller deleted, by name, in order.
  std::vector<std::string> DeletedPods() {
    std::vector<std::string> out;
    const std::string prefix = "delete pods default/";
    for (const auto& a : fake_.Actions()) {
      if (a.rfind(prefix, 0) == 0) out.push_back(a.substr(prefix.size()));
    }
    return out;
  }
  // Whether the controller released pod `name` (removed its finalizer)
  // before deleting it, as kube's deleteJobPods does.
  bool ReleasedBeforeDeleted(const std::string& name) {
    std::vector<std::string> actions = fake_.Actions();
    auto update = std::find(actions.begin(), actions.end(),
                            "update pods default/" + name);
    auto del = std::find(actions.begin(), actions.end(),
                         "delete pods default/" + name);
    return update != actions.end() && del != actions.end() && update < del;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer jobs_;
  informer::Indexer pods_;
  JobController controller_;
};

TEST_F(JobControllerTest, CreatesTrackedOwnedPodsUpToParallelism) {
  AddJob(2, 3);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create pods default/pi-", "create pods default/pi-",
                          "update-status jobs default/pi"));
  auto pods = CreatedPods();
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_TRUE(
      objects::HasFinalizer(pods[0]->metadata(), kJobTrackingFinalizer));
  const metav1::OwnerReference* ref =
      objects::ControllerRef(pods[0]->metadata());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind(), "Job");
  EXPECT_EQ(ref->apiversion(), "batch/v1");
  EXPECT_EQ(ref->uid(), "uid-pi");
  EXPECT_EQ(pods[0]->spec().restartpolicy(), "Never");
  EXPECT_EQ(Job()->status().active(), 2);
  EXPECT_EQ(objects::UnixSeconds(Job()->status().starttime()), kNow);

  // Until the creates are observed nothing more is created.
  fake_.Clear();
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
}

TEST_F(JobControllerTest, ASucceededPodIsCountedOnceThroughTheFinalizer) {
  AddJob(1, 2);
  AddPod("pi-a", "Succeeded");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  // Recorded as uncounted first, then released, then counted.
  EXPECT_THAT(
      fake_.Actions(),
      ElementsAre("update-status jobs default/pi", "update pods default/pi-a",
                  "create pods default/pi-", "update-status jobs default/pi"));
  auto written = fake_.Written();
  const auto& first = static_cast<const batchv1::Job&>(*written[0]);
  EXPECT_THAT(first.status().uncountedterminatedpods().succeeded(),
              ElementsAre("uid-pi-a"));
  EXPECT_EQ(first.status().succeeded(), 0);
  const auto& released = static_cast<const corev1::Pod&>(*written[1]);
  EXPECT_FALSE(
      objects::HasFinalizer(released.metadata(), kJobTrackingFinalizer));
  EXPECT_EQ(Job()->status().succeeded(), 1);
  EXPECT_THAT(Job()->status().uncountedterminatedpods().succeeded(), IsEmpty());

  // The pods cache still shows the pod with its finalizer (the update has
  // not come back yet): it must not be counted again.
  fake_.Clear();
  ObserveCreated();
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().succeeded(), 1);
  EXPECT_THAT(fake_.Actions(), Not(Contains("update pods default/pi-a")));
}

TEST_F(JobControllerTest, CompletesWithSuccessCriteriaMetThenComplete) {
  AddJob(1, 1);
  AddPod("pi-a", "Succeeded");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_TRUE(HasCondition("SuccessCriteriaMet", "CompletionsReached"));
  EXPECT_TRUE(HasCondition("Complete", "CompletionsReached"));
  ASSERT_EQ(Job()->status().conditions_size(), 2);
  EXPECT_EQ(Job()->status().conditions(0).type(), "SuccessCriteriaMet");
  EXPECT_EQ(objects::UnixSeconds(Job()->status().completiontime()), kNow);
  EXPECT_EQ(Job()->status().succeeded(), 1);
  EXPECT_EQ(Job()->status().active(), 0);
  EXPECT_THAT(CreatedPods(), IsEmpty());
}

TEST_F(JobControllerTest, FailsAfterBackoffLimitWithBackoffBetweenPods) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) { j->mutable_spec()->set_backofflimit(1); });
  AddPod("pi-a", "Failed", 1);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 1);
  // The replacement waits 10 s after the failure.
  EXPECT_THAT(CreatedPods(), IsEmpty());
  clock_.Advance(seconds(10));
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  ASSERT_EQ(CreatedPods().size(), 1u);
  EXPECT_FALSE(HasCondition("Failed"));

  AddPod("pi-b", "Failed", 1);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 2);
  EXPECT_TRUE(HasCondition("FailureTarget", "BackoffLimitExceeded"));
  EXPECT_TRUE(HasCondition("Failed", "BackoffLimitExceeded"));
  for (const auto& c : Job()->status().conditions()) {
    if (c.type() == "Failed") {
      EXPECT_EQ(c.message(), "Job has reached the specified backoff limit");
    }
  }
  EXPECT_FALSE(Job()->status().has_completiontime());
}

// kube's pastBackoffLimitOnFailure: with restartPolicy OnFailure the
// container restarts of Pending and Running pods fail the Job once they
// reach backoffLimit (>=, not >), apart from the failed-pods count.
TEST_F(JobControllerTest, OnFailureRestartsReachingTheBackoffLimitFailTheJob) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_backofflimit(1);
    j->mutable_spec()->mutable_template_()->mutable_spec()->set_restartpolicy(
        "OnFailure");
  });
  auto pod = AddPod("pi-a", "Running");
  auto* cs = pod->mutable_status()->add_containerstatuses();
  cs->set_name("app");
  cs->set_restartcount(1);
  pods_.Upsert(pod);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_TRUE(HasCondition("FailureTarget", "BackoffLimitExceeded"));
  EXPECT_THAT(DeletedPods(), ElementsAre("pi-a"));
  // Failed once the pod is gone.
  ObserveDeletion("pi-a");
  pods_.Delete("default/pi-a");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_TRUE(HasCondition("Failed", "BackoffLimitExceeded"));
}

// Init container restarts count too, and so do those of Pending pods.
TEST_F(JobControllerTest, OnFailureCountsInitContainerRestartsOfPendingPods) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_backofflimit(2);
    j->mutable_spec()->mutable_template_()->mutable_spec()->set_restartpolicy(
        "OnFailure");
  });
  auto pod = AddPod("pi-a", "Pending");
  auto* init = pod->mutable_status()->add_initcontainerstatuses();
  init->set_name("setup");
  init->set_restartcount(2);
  pods_.Upsert(pod);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_TRUE(HasCondition("FailureTarget", "BackoffLimitExceeded"));
}

// Failed pods and restarts are two separate limits (kube's
// exceedsBackoffLimit: failed > backoffLimit; pastBackoffLimitOnFailure:
// restarts >= backoffLimit), never one sum: 3 failed and 4 restarts are
// within a limit of 6.
TEST_F(JobControllerTest, FailedPodsAndRestartsAreNotAddedUp) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->mutable_template_()->mutable_spec()->set_restartpolicy(
        "OnFailure");
  });
  AddPod("pi-a", "Failed", 1);
  AddPod("pi-b", "Failed", 1);
  AddPod("pi-c", "Failed", 1);
  auto pod = AddPod("pi-d", "Running");
  auto* cs = pod->mutable_status()->add_containerstatuses();
  cs->set_name("app");
  cs->set_restartcount(4);
  pods_.Upsert(pod);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 3);
  EXPECT_FALSE(HasCondition("FailureTarget"));
  EXPECT_FALSE(HasCondition("Failed"));
  EXPECT_THAT(DeletedPods(), IsEmpty());
}

// The wait after many failures stays at the maximum (10 s doubled 30
// times overflowed and the wait went negative: no back-off at all).
TEST_F(JobControllerTest, BackoffAfterManyFailuresStaysAtTheMaximum) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) { j->mutable_spec()->set_backofflimit(100); });
  for (int i = 0; i < 40; ++i) {
    AddPod("pi-" + std::to_string(i), "Failed", 1);
  }
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 40);
  EXPECT_THAT(CreatedPods(), IsEmpty());
  clock_.Advance(seconds(359));
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_THAT(CreatedPods(), IsEmpty());
  clock_.Advance(seconds(1));  // kube's 6 min maximum
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(CreatedPods().size(), 1u);
}

TEST_F(JobControllerTest, PodFailurePolicyFailJobAndIgnore) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) {
    auto* rules = j->mutable_spec()->mutable_podfailurepolicy();
    auto* ignore = rules->add_rules();
    ignore->set_action("Ignore");
    ignore->mutable_onexitcodes()->set_operator_("In");
    ignore->mutable_onexitcodes()->add_values(7);
    auto* fail = rules->add_rules();
    fail->set_action("FailJob");
    fail->mutable_onexitcodes()->set_operator_("In");
    fail->mutable_onexitcodes()->add_values(42);
  });
  AddPod("pi-a", "Failed", 7);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 0);  // ignored
  EXPECT_FALSE(HasCondition("Failed"));
  AddPod("pi-b", "Failed", 42);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_TRUE(HasCondition("Failed", "PodFailurePolicy"));
  EXPECT_EQ(Job()->status().conditions(0).message(),
            "Container app for pod default/pi-b failed with exit code 42 "
            "matching FailJob rule at index 1");
}

TEST_F(JobControllerTest, ActiveDeadlineDeletesPodsAndFails) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_activedeadlineseconds(30);
    objects::SetTime(j->mutable_status()->mutable_starttime(), kNow);
  });
  AddPod("pi-a", "Running");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_FALSE(HasCondition("FailureTarget"));
  fake_.Clear();
  clock_.Advance(seconds(30));
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_THAT(fake_.Actions(), Contains("delete pods default/pi-a"));
  EXPECT_TRUE(HasCondition("FailureTarget", "DeadlineExceeded"));
  // Failed only once the pod is gone.
  EXPECT_FALSE(HasCondition("Failed"));
  auto gone = std::make_shared<corev1::Pod>(
      *std::static_pointer_cast<const corev1::Pod>(pods_.Get("default/pi-a")));
  objects::SetTime(gone->mutable_metadata()->mutable_deletiontimestamp(), kNow);
  gone->mutable_status()->set_phase("Failed");
  pods_.Upsert(gone);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_TRUE(HasCondition("Failed", "DeadlineExceeded"));
}

// kube bounds activeDeadlineSeconds only from below: the largest int64 is a
// deadline that never comes, not one that wrapped into the past.
TEST_F(JobControllerTest, AnActiveDeadlinePastTheClocksEndNeverExpires) {
  AddJob(1, 1);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_activedeadlineseconds(INT64_MAX);
    objects::SetTime(j->mutable_status()->mutable_starttime(), kNow);
  });
  AddPod("pi-a", "Running");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_FALSE(HasCondition("FailureTarget"));
  EXPECT_FALSE(HasCondition("Failed"));
}

TEST_F(JobControllerTest, IndexedJobStartsTheLowestMissingIndexes) {
  AddJob(2, 3);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_completionmode("Indexed");
  });
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  auto pods = CreatedPods();
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0]->metadata().generatename(), "pi-0-");
  EXPECT_EQ(pods[1]->metadata().generatename(), "pi-1-");
  EXPECT_EQ(
      objects::Annotation(pods[1]->metadata(), kJobCompletionIndexAnnotation),
      "1");
  EXPECT_EQ(pods[1]->metadata().labels().at(kJobCompletionIndexAnnotation),
            "1");
  EXPECT_EQ(pods[1]->spec().hostname(), "pi-1");
  const auto& env = pods[1]->spec().containers(0).env(0);
  EXPECT_EQ(env.name(), "JOB_COMPLETION_INDEX");
  EXPECT_EQ(env.valuefrom().fieldref().fieldpath(),
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");

  // Index 0 succeeds: index 2 starts; completedIndexes says "0".
  ObserveCreated();
  auto done = std::make_shared<corev1::Pod>(
      *std::static_pointer_cast<const corev1::Pod>(
          pods_.Get("default/pi-0-1")));
  done->mutable_status()->set_phase("Succeeded");
  pods_.Upsert(done);
  fake_.Clear();
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().completedindexes(), "0");
  EXPECT_EQ(Job()->status().succeeded(), 1);
  pods = CreatedPods();
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]->metadata().generatename(), "pi-2-");
}

// completedIndexes is read back from the status, which a client may write:
// a range far past the completions is cut at them, not expanded.
TEST_F(JobControllerTest, CompletedIndexesPastTheCompletionsAreIgnored) {
  AddJob(2, 3);
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_completionmode("Indexed");
    j->mutable_status()->set_completedindexes("1-9223372036854775806");
  });
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  auto pods = CreatedPods();
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]->metadata().generatename(), "pi-0-");
}

TEST_F(JobControllerTest, SuspendDeletesActivePodsAndResumeRestartsTheClock) {
  AddJob(1, 1);
  AddPod("pi-a", "Running");
  Update([](batchv1::Job* j) {
    j->mutable_spec()->set_suspend(true);
    objects::SetTime(j->mutable_status()->mutable_starttime(), kNow - 50);
  });
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_THAT(fake_.Actions(), Contains("delete pods default/pi-a"));
  EXPECT_TRUE(HasCondition("Suspended", "JobSuspended"));
  EXPECT_EQ(Job()->status().active(), 0);

  pods_.Delete("default/pi-a");
  clock_.Advance(seconds(100));
  Update([](batchv1::Job* j) { j->mutable_spec()->set_suspend(false); });
  fake_.Clear();
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_FALSE(HasCondition("Suspended"));
  EXPECT_EQ(Job()->status().conditions(0).reason(), "JobResumed");
  EXPECT_EQ(objects::UnixSeconds(Job()->status().starttime()), kNow + 100);
  EXPECT_EQ(CreatedPods().size(), 1u);
}

// Pods the controller deletes itself for a suspend are not failures:
// kube's deleteJobPods removes the tracking finalizer before the DELETE, so
// the terminating pod is never counted. They were counted (deleted before
// they succeeded): failed 2 > backoffLimit 1 failed the suspended Job.
TEST_F(JobControllerTest, PodsDeletedForSuspendAreNotCountedAsFailed) {
  AddJob(2, 2);
  Update([](batchv1::Job* j) { j->mutable_spec()->set_backofflimit(1); });
  AddPod("pi-a", "Running");
  AddPod("pi-b", "Running");
  Update([](batchv1::Job* j) { j->mutable_spec()->set_suspend(true); });
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  ASSERT_THAT(DeletedPods(), ::testing::UnorderedElementsAre("pi-a", "pi-b"));
  const bool released_a = ReleasedBeforeDeleted("pi-a");
  const bool released_b = ReleasedBeforeDeleted("pi-b");

  ObserveDeletion("pi-a");
  ObserveDeletion("pi-b");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 0);
  EXPECT_THAT(Job()->status().uncountedterminatedpods().failed(), IsEmpty());
  EXPECT_FALSE(HasCondition("FailureTarget"));
  EXPECT_FALSE(HasCondition("Failed"));
  EXPECT_TRUE(HasCondition("Suspended", "JobSuspended"));
  EXPECT_EQ(Job()->status().terminating(), 2);
  EXPECT_TRUE(released_a);
  EXPECT_TRUE(released_b);
}

// The same for the pods a lower parallelism deletes (kube's manageJob
// scales down through deleteJobPods too).
TEST_F(JobControllerTest, PodsDeletedForALowerParallelismAreNotCounted) {
  AddJob(3, 3);
  Update([](batchv1::Job* j) { j->mutable_spec()->set_backofflimit(1); });
  AddPod("pi-a", "Running");
  AddPod("pi-b", "Running");
  AddPod("pi-c", "Running");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  ASSERT_THAT(DeletedPods(), IsEmpty());
  Update([](batchv1::Job* j) { j->mutable_spec()->set_parallelism(1); });
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  const std::vector<std::string> deleted = DeletedPods();
  ASSERT_EQ(deleted.size(), 2u);
  for (const auto& name : deleted) {
    EXPECT_TRUE(ReleasedBeforeDeleted(name)) << name;
  }

  for (const auto& name : deleted) ObserveDeletion(name);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_EQ(Job()->status().failed(), 0);
  EXPECT_THAT(Job()->status().uncountedterminatedpods().failed(), IsEmpty());
  EXPECT_FALSE(HasCondition("FailureTarget"));
  EXPECT_FALSE(HasCondition("Failed"));
  EXPECT_EQ(Job()->status().active(), 1);
  EXPECT_EQ(Job()->status().terminating(), 2);
}

// A Job being deleted (foreground: the garbage collector is deleting its
// pods) starts no pods: kube calls manageJob only while
// job.DeletionTimestamp == nil.
TEST_F(JobControllerTest, AJobBeingDeletedCreatesNoPods) {
  AddJob(2, 2);
  Update([](batchv1::Job* j) {
    objects::SetTime(j->mutable_metadata()->mutable_deletiontimestamp(), kNow);
    j->mutable_metadata()->add_finalizers("foregroundDeletion");
  });
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  EXPECT_THAT(CreatedPods(), IsEmpty());
  EXPECT_EQ(Job()->status().active(), 0);
}

// A pod orphaned by kubectl delete job --cascade=orphan (the garbage
// collector removed its ownerReference) still holds the tracking finalizer:
// kube's addPod/updatePod/deletePod enqueue such an orphan so that the
// finalizer is removed. It was never enqueued and kept it forever.
TEST_F(JobControllerTest, TrackedPodOrphanedByTheGcIsReleased) {
  AddJob(1, 1);
  auto pod = NewPod("default", "pi-a", {{"job-name", "pi"}});
  pod->mutable_metadata()->add_finalizers(kJobTrackingFinalizer);
  objects::SetTime(pod->mutable_metadata()->mutable_deletiontimestamp(), kNow);
  pods_.Upsert(pod);
  controller_.OnPodEvent(*pod, false, false);
  EXPECT_EQ(controller_.QueueDepth(), 1);
  while (controller_.QueueDepth() > 0) {
    std::optional<std::string> key = controller_.queue().Get();
    controller_.queue().Done(*key);
  }
  ASSERT_TRUE(controller_.Sync("pod:default/pi-a").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update pods default/pi-a"));
  ASSERT_EQ(fake_.Written().size(), 1u);
  EXPECT_FALSE(objects::HasFinalizer(
      static_cast<const corev1::Pod&>(*fake_.Written()[0]).metadata(),
      kJobTrackingFinalizer));

  // A pod another kind of controller owns keeps its finalizers (kube's
  // syncOrphanPod leaves them alone).
  auto other = NewPod("default", "rs-a");
  OwnedBy(other->mutable_metadata(), "ReplicaSet", Job()->metadata());
  other->mutable_metadata()->add_finalizers(kJobTrackingFinalizer);
  pods_.Upsert(other);
  controller_.OnPodEvent(*other, false, false);
  EXPECT_EQ(controller_.QueueDepth(), 0);
}

TEST_F(JobControllerTest, TrackedPodOfAGoneJobIsReleased) {
  AddJob(1, 1);
  AddPod("pi-a", "Running");
  auto orphan =
      std::static_pointer_cast<const corev1::Pod>(pods_.Get("default/pi-a"));
  jobs_.Delete("default/pi");
  controller_.OnPodEvent(*orphan, false, false);
  ASSERT_TRUE(controller_.Sync("pod:default/pi-a").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update pods default/pi-a"));
}

TEST(TtlAfterFinishedTest, DeletesFinishedJobsWhenTheirTtlExpires) {
  FakeClock clock;
  clock.SetWall(WallTime(seconds(kNow)));
  metrics::Registry reg;
  FakeApiWriter fake;
  informer::Indexer jobs;
  TtlAfterFinishedController ttl(
      {.api = &fake, .jobs = &jobs, .clock = &clock, .metrics = &reg});
  auto job = std::make_shared<batchv1::Job>();
  SetMeta(job->mutable_metadata(), "default", "pi");
  job->mutable_spec()->set_ttlsecondsafterfinished(100);
  auto* c = job->mutable_status()->add_conditions();
  c->set_type("Complete");
  c->set_status("True");
  objects::SetTime(c->mutable_lasttransitiontime(), kNow);
  jobs.Upsert(job);
  ASSERT_TRUE(ttl.Sync("default/pi").ok());
  EXPECT_THAT(fake.Actions(), IsEmpty());
  clock.Advance(seconds(100));
  ASSERT_TRUE(ttl.Sync("default/pi").ok());
  EXPECT_THAT(fake.Actions(), ElementsAre("delete jobs default/pi"));
}

TEST_F(JobControllerTest, RecordsPodEventsAndTheOutcome) {
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  controller_.set_event_recorder(std::move(recorder));
  AddJob(1, 1);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  ASSERT_EQ(CreatedPods().size(), 1u);
  AddPod("pi-a", "Succeeded");
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  ASSERT_TRUE(HasCondition("Complete"));
  ASSERT_TRUE(controller_.Sync("default/pi").ok());  // once only
  EXPECT_THAT(events->Events(),
              ElementsAre("Normal SuccessfulCreate Created pod: " +
                              CreatedPods()[0]->metadata().name(),
                          "Normal Completed Job completed"));
}

TEST_F(JobControllerTest, RecordsBackoffLimitExceeded) {
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  controller_.set_event_recorder(std::move(recorder));
  AddJob(1, 1);
  Update([](batchv1::Job* j) { j->mutable_spec()->set_backofflimit(0); });
  AddPod("pi-a", "Failed", 1);
  ASSERT_TRUE(controller_.Sync("default/pi").ok());
  ASSERT_TRUE(HasCondition("Failed"));
  EXPECT_THAT(events->Events(),
              ElementsAre("Warning BackoffLimitExceeded Job has reached the "
                          "specified backoff limit"));
}

}  // namespace
}  // namespace kplane::controllers
