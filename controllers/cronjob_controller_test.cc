#include "controllers/cronjob_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "informer/event_recorder.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: test builders
namespace batchv1 = objects::batchv1;

// 2023-11-14T22:13:00Z: created then, "*/1 * * * *".
constexpr int64_t kCreated = 1700000000 - 1700000000 % 60 + 60 * 5;

class CronJobControllerTest : public ::testing::Test {
 protected:
  CronJobControllerTest()
      : controller_({.api = &fake_,
                     .cronjobs = &cronjobs_,
                     .jobs = &jobs_,
                     .clock = &clock_,
                     .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(kCreated + 30)));
    fake_.ReflectUpdates(CronJobsResource(), &cronjobs_);
    auto cj = std::make_shared<batchv1::CronJob>();
    SetMeta(cj->mutable_metadata(), "default", "tick");
    objects::SetTime(cj->mutable_metadata()->mutable_creationtimestamp(),
                     kCreated);
    cj->mutable_spec()->set_schedule("*/1 * * * *");
    cj->mutable_spec()->set_concurrencypolicy("Allow");
    cj->mutable_spec()->set_successfuljobshistorylimit(3);
    cj->mutable_spec()->set_failedjobshistorylimit(1);
    auto* tmpl = cj->mutable_spec()->mutable_jobtemplate();
    (*tmpl->mutable_metadata()->mutable_labels())["app"] = "tick";
    *tmpl->mutable_spec()->mutable_template_() = Template({}, "busybox");
    cronjobs_.Upsert(cj);
    auto recorder = std::make_unique<informer::FakeEventRecorder>();
    events_ = recorder.get();
    controller_.set_event_recorder(std::move(recorder));
  }
  std::shared_ptr<const batchv1::CronJob> Cj() {
    return std::static_pointer_cast<const batchv1::CronJob>(
        cronjobs_.Get("default/tick"));
  }
  void Update(const std::function<void(batchv1::CronJob*)>& f) {
    auto copy = std::make_shared<batchv1::CronJob>(*Cj());
    f(copy.get());
    cronjobs_.Upsert(copy);
  }
  // A Job of the CronJob, finished as `state` ("", Complete, Failed).
  void AddJob(const std::string& name, const std::string& state,
              int64_t started) {
    jobs_.Upsert(NewJob(name, state, started));
  }
  std::shared_ptr<batchv1::Job> NewJob(const std::string& name,
                                       const std::string& state,
                                       int64_t started) {
    auto job = std::make_shared<batchv1::Job>();
    SetMeta(job->mutable_metadata(), "default", name);
    *job->mutable_metadata()->add_ownerreferences() =
        ControllerRefTo("batch/v1", "CronJob", Cj()->metadata());
    objects::SetTime(job->mutable_status()->mutable_starttime(), started);
    if (!state.empty()) {
      auto* c = job->mutable_status()->add_conditions();
      c->set_type(state);
      c->set_status("True");
      if (state == "Complete") {
        objects::SetTime(job->mutable_status()->mutable_completiontime(),
                         started + 5);
      }
    }
    return job;
  }
  // The reference the controller records when it creates `job`.
  static corev1::ObjectReference RefOf(const batchv1::Job& job) {
    corev1::ObjectReference ref;
    ref.set_kind("Job");
    ref.set_namespace_(job.metadata().namespace_());
    ref.set_name(job.metadata().name());
    ref.set_uid(job.metadata().uid());
    ref.set_apiversion("batch/v1");
    ref.set_resourceversion(job.metadata().resourceversion());
    return ref;
  }
  std::vector<std::string> ActiveNames() {
    std::vector<std::string> names;
    for (const auto& ref : Cj()->status().active()) names.push_back(ref.name());
    return names;
  }
  std::string Minute(int64_t unix) { return std::to_string(unix / 60); }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer cronjobs_;
  informer::Indexer jobs_;
  CronJobController controller_;
  informer::FakeEventRecorder* events_ = nullptr;
};

TEST_F(CronJobControllerTest, AScheduleFiresOnTheFakeClock) {
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());  // the first minute is ahead
  clock_.Advance(seconds(30));              // kCreated + 60
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  const std::string name = "tick-" + Minute(kCreated + 60);
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create jobs default/" + name,
                          "update-status cronjobs default/tick"));
  const auto& job = static_cast<const batchv1::Job&>(*fake_.Written()[0]);
  EXPECT_EQ(job.metadata().labels().at("app"), "tick");
  EXPECT_EQ(
      objects::Annotation(job.metadata(), kCronJobScheduledTimestampAnnotation),
      objects::FormatRfc3339(kCreated + 60));
  EXPECT_EQ(objects::ControllerRef(job.metadata())->kind(), "CronJob");
  ASSERT_EQ(Cj()->status().active_size(), 1);
  EXPECT_EQ(Cj()->status().active(0).name(), name);
  EXPECT_EQ(objects::UnixSeconds(Cj()->status().lastscheduletime()),
            kCreated + 60);
  // Once only (the informer has seen the Job).
  jobs_.Upsert(fake_.Written()[0]);
  fake_.Clear();
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
}

// Forbid and Replace act on status.active, the Jobs this controller
// started (kube's syncCronJob).
TEST_F(CronJobControllerTest, ConcurrencyPolicies) {
  auto old = NewJob("tick-old", "", kCreated);
  jobs_.Upsert(old);
  clock_.Advance(seconds(30));
  Update([&](batchv1::CronJob* c) {
    c->mutable_spec()->set_concurrencypolicy("Forbid");
    *c->mutable_status()->add_active() = RefOf(*old);
  });
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
  EXPECT_FALSE(Cj()->status().has_lastscheduletime());
  EXPECT_THAT(events_->Events(),
              ElementsAre("Normal JobAlreadyActive Not starting job because "
                          "prior execution is running and concurrency "
                          "policy is Forbid"));

  fake_.Clear();
  events_->Clear();
  Update([](batchv1::CronJob* c) {
    c->mutable_spec()->set_concurrencypolicy("Replace");
  });
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  const std::string name = "tick-" + Minute(kCreated + 60);
  EXPECT_THAT(
      fake_.Actions(),
      ElementsAre("delete jobs default/tick-old", "create jobs default/" + name,
                  "update-status cronjobs default/tick"));
  EXPECT_THAT(ActiveNames(), ElementsAre(name));
  EXPECT_THAT(events_->Events(),
              ElementsAre("Normal SuccessfulDelete Deleted job tick-old",
                          "Normal SuccessfulCreate Created job " + name));
}

// `kubectl create job --from=cronjob/tick manual-1` makes a Job controlled
// by the CronJob that the controller did not start: a warning, but not
// active (not in ACTIVE, not deleted by Replace, no block under Forbid).
TEST_F(CronJobControllerTest, AManualJobFromTheCronJobIsNotActive) {
  auto manual = NewJob("manual-1", "", kCreated);
  (*manual->mutable_metadata()
        ->mutable_annotations())["cronjob.kubernetes.io/instantiate"] =
      "manual";
  jobs_.Upsert(manual);
  fake_.ServeLiveFrom(CronJobsResource(), &cronjobs_);
  for (const char* policy : {"Allow", "Forbid", "Replace"}) {
    SCOPED_TRACE(policy);
    Update([&](batchv1::CronJob* c) {
      c->mutable_spec()->set_concurrencypolicy(policy);
      c->clear_status();
    });
    clock_.SetWall(WallTime(seconds(kCreated + 60)));
    fake_.Clear();
    events_->Clear();
    ASSERT_TRUE(controller_.Sync("default/tick").ok());
    const std::string name = "tick-" + Minute(kCreated + 60);
    EXPECT_THAT(fake_.Actions(),
                ElementsAre("create jobs default/" + name,
                            "update-status cronjobs default/tick"));
    EXPECT_THAT(ActiveNames(), ElementsAre(name));
    EXPECT_THAT(events_->Events(),
                ElementsAre("Warning UnexpectedJob Saw a job that the "
                            "controller did not create or forgot: manual-1",
                            "Normal SuccessfulCreate Created job " + name));
  }
}

// status.active holds the reference taken when the Job was created; the
// Job's later updates (pods started, ready) do not rewrite the CronJob.
TEST_F(CronJobControllerTest, JobUpdatesDoNotRewriteStatus) {
  clock_.Advance(seconds(30));
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  ASSERT_EQ(fake_.Actions().size(), 2u);
  auto job = std::make_shared<batchv1::Job>(
      static_cast<const batchv1::Job&>(*fake_.Written()[0]));
  job->mutable_metadata()->set_uid("uid-created");
  job->mutable_metadata()->set_resourceversion("1");
  Update([&](batchv1::CronJob* c) {
    *c->mutable_status()->mutable_active(0) = RefOf(*job);
  });
  jobs_.Upsert(job);
  for (int rv = 2; rv <= 4; ++rv) {
    fake_.Clear();
    auto updated = std::make_shared<batchv1::Job>(*job);
    updated->mutable_metadata()->set_resourceversion(std::to_string(rv));
    updated->mutable_status()->set_active(1);
    updated->mutable_status()->set_ready(rv - 2);
    jobs_.Upsert(updated);
    ASSERT_TRUE(controller_.Sync("default/tick").ok());
    EXPECT_THAT(fake_.Actions(), IsEmpty()) << rv;
  }
  EXPECT_EQ(Cj()->status().active(0).resourceversion(), "1");
}

// Active Jobs that are gone leave status.active (MissingJob), finished
// ones too (SawCompletedJob, lastSuccessfulTime); a Job the cache shows
// before the CronJob's own status write is not "unexpected".
TEST_F(CronJobControllerTest, ActiveJobsGoneFinishedOrNotCachedYet) {
  auto done = NewJob("tick-done", "Complete", kCreated - 60);
  jobs_.Upsert(done);
  batchv1::Job gone;
  SetMeta(gone.mutable_metadata(), "default", "tick-gone");
  Update([&](batchv1::CronJob* c) {
    *c->mutable_status()->add_active() = RefOf(*done);
    *c->mutable_status()->add_active() = RefOf(gone);
  });
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update-status cronjobs default/tick"));
  EXPECT_THAT(ActiveNames(), IsEmpty());
  EXPECT_EQ(objects::UnixSeconds(Cj()->status().lastsuccessfultime()),
            kCreated - 60 + 5);
  EXPECT_THAT(
      events_->Events(),
      ElementsAre("Normal SawCompletedJob Saw completed job: tick-done, "
                  "condition: Complete",
                  "Normal MissingJob Active job went missing: tick-gone"));

  // The cache shows a new Job before the CronJob whose status lists it.
  fake_.Clear();
  events_->Clear();
  auto running = NewJob("tick-running", "", kCreated);
  jobs_.Upsert(running);
  auto live = std::make_shared<batchv1::CronJob>(*Cj());
  *live->mutable_status()->add_active() = RefOf(*running);
  live->mutable_metadata()->set_resourceversion("99");
  fake_.SetLive(CronJobsResource(), live);
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(), IsEmpty());
  EXPECT_THAT(events_->Events(), IsEmpty());
}

// Created, but the status write that should have listed it failed: the
// next run's create finds it and lists it then (kube 1.29+).
TEST_F(CronJobControllerTest,
       AJobCreatedButNotRecordedIsListedOnAlreadyExists) {
  clock_.Advance(seconds(30));
  const std::string name = "tick-" + Minute(kCreated + 60);
  auto job = NewJob(name, "", kCreated + 60);
  fake_.SetLive(JobsResource(), job);
  fake_.FailNext("create jobs",
                 AlreadyExistsError("jobs \"" + name + "\" already exists"));
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create jobs default/" + name,
                          "update-status cronjobs default/tick"));
  ASSERT_THAT(ActiveNames(), ElementsAre(name));
  EXPECT_EQ(Cj()->status().active(0).uid(), job->metadata().uid());
  EXPECT_EQ(objects::UnixSeconds(Cj()->status().lastscheduletime()),
            kCreated + 60);
}

TEST_F(CronJobControllerTest, MissedStartsAndStartingDeadline) {
  // 200 minutes missed: only the latest is started.
  clock_.Advance(minutes(200));
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  const int64_t latest = kCreated + 200 * 60;
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create jobs default/tick-" + Minute(latest),
                          "update-status cronjobs default/tick"));

  // 40 s into a minute with a 10 s deadline: too late, nothing starts.
  fake_.Clear();
  clock_.Advance(minutes(1) + seconds(10));
  Update([](batchv1::CronJob* c) {
    c->mutable_spec()->set_startingdeadlineseconds(10);
  });
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(), ::testing::Not(::testing::Contains(
                                   ::testing::StartsWith("create jobs"))));
}

// A CronJob far behind (lastScheduleTime two centuries ago, a Job that
// never finishes under Forbid keeps it there) finds its latest start time
// without walking every minute since; irregular schedules too.
TEST_F(CronJobControllerTest, FarBehindFindsTheLatestStartWithoutTheWalk) {
  const int64_t long_ago = -5000000000;  // 1811, clamped on the clock
  Update([&](batchv1::CronJob* c) {
    objects::SetTime(c->mutable_status()->mutable_lastscheduletime(), long_ago);
  });
  clock_.Advance(seconds(15));  // kCreated + 45
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("create jobs default/tick-" + Minute(kCreated),
                          "update-status cronjobs default/tick"));
  // Mondays at 09:00 only: the latest is up to a week back.
  for (int64_t ahead : {0, 3 * 86400, 6 * 86400 + 3600}) {
    fake_.Clear();
    Update([&](batchv1::CronJob* c) {
      c->mutable_spec()->set_schedule("0 9 * * 1");
      objects::SetTime(c->mutable_status()->mutable_lastscheduletime(),
                       long_ago);
      c->mutable_status()->clear_active();
    });
    clock_.SetWall(WallTime(seconds(kCreated + ahead)));
    ASSERT_TRUE(controller_.Sync("default/tick").ok());
    const int64_t now = kCreated + ahead;
    int64_t monday = now - ((now / 86400 + 3) % 7) * 86400;  // 1970-01-05
    monday = monday / 86400 * 86400 + 9 * 3600;
    if (monday > now) monday -= 7 * 86400;
    EXPECT_THAT(fake_.Actions(),
                ElementsAre("create jobs default/tick-" + Minute(monday),
                            "update-status cronjobs default/tick"))
        << ahead;
  }
}

TEST_F(CronJobControllerTest, HistoryLimitsAndSuspend) {
  for (int i = 0; i < 5; ++i) {
    AddJob("tick-ok" + std::to_string(i), "Complete", kCreated - 600 + i);
  }
  AddJob("tick-bad0", "Failed", kCreated - 900);
  AddJob("tick-bad1", "Failed", kCreated - 800);
  Update([](batchv1::CronJob* c) { c->mutable_spec()->set_suspend(true); });
  clock_.Advance(minutes(5));
  ASSERT_TRUE(controller_.Sync("default/tick").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("delete jobs default/tick-ok0",
                          "delete jobs default/tick-ok1",
                          "delete jobs default/tick-bad0",
                          "update-status cronjobs default/tick"));
  EXPECT_EQ(objects::UnixSeconds(Cj()->status().lastsuccessfultime()),
            kCreated - 600 + 4 + 5);
}

}  // namespace
}  // namespace kplane::controllers
