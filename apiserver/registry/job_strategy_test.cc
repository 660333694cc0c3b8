// The batch/v1 Job strategy: kube 1.32's defaults, generated selector,
// validation of the fields kplane supports, immutability and printing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "apiserver/registry/printers.h"
#include "apiserver/registry/test_util.h"
#include "objects/batch_types.h"

namespace kplane::apiserver {
namespace {

using objects::batchv1::Job;
using testing::Decode;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::StrategyOf;
using testing::Texts;

// What `kubectl create job pi --image=perl -- perl -e 1` posts.
constexpr char kKubectlJob[] = R"({"metadata":{"name":"pi",
  "namespace":"default"},"spec":{"template":{"metadata":{},"spec":{
  "containers":[{"name":"pi","image":"perl","command":["perl","-e","1"],
  "resources":{}}],"restartPolicy":"Never"}}},"status":{}})";

// The job as the API server stores it: defaulted, uid set, prepared.
Job Created(std::string_view json = kKubectlJob) {
  const Strategy& s = StrategyOf("batch", "jobs");
  Job job = Decode<Job>(json);
  s.Default(&job);
  job.mutable_metadata()->set_uid("0b6e6a3f-uid");
  s.PrepareForCreate(&job);
  return job;
}

TEST(JobStrategyTest, DefaultsAndGeneratedSelector) {
  const Strategy& s = StrategyOf("batch", "jobs");
  Job job = Created();
  const auto& spec = job.spec();
  EXPECT_EQ(spec.completions(), 1);
  EXPECT_EQ(spec.parallelism(), 1);
  EXPECT_EQ(spec.backofflimit(), 6);
  EXPECT_EQ(spec.completionmode(), "NonIndexed");
  EXPECT_TRUE(spec.has_suspend());
  EXPECT_FALSE(spec.suspend());
  EXPECT_EQ(spec.podreplacementpolicy(), "TerminatingOrFailed");
  EXPECT_EQ(
      spec.selector().matchlabels().at("batch.kubernetes.io/controller-uid"),
      "0b6e6a3f-uid");
  const auto& labels = spec.template_().metadata().labels();
  EXPECT_EQ(labels.at("batch.kubernetes.io/job-name"), "pi");
  EXPECT_EQ(labels.at("job-name"), "pi");
  EXPECT_EQ(labels.at("controller-uid"), "0b6e6a3f-uid");
  EXPECT_EQ(job.metadata().generation(), 1);
  EXPECT_THAT(Texts(s.ValidateCreate(job)), IsEmpty());

  // Parallelism alone leaves completions unset.
  Job work = Decode<Job>(R"({"metadata":{"name":"w","namespace":"d"},
    "spec":{"parallelism":3,"template":{"spec":{"containers":[{"name":"c",
    "image":"busybox"}],"restartPolicy":"OnFailure"}}}})");
  s.Default(&work);
  EXPECT_FALSE(work.spec().has_completions());
  EXPECT_EQ(work.spec().parallelism(), 3);
}

TEST(JobStrategyTest, ValidationRejectsWhatKubeRejects) {
  const Strategy& s = StrategyOf("batch", "jobs");
  Job always = Created();
  always.mutable_spec()->mutable_template_()->mutable_spec()->set_restartpolicy(
      "Always");
  EXPECT_THAT(Texts(s.ValidateCreate(always)),
              ElementsAre("spec.template.spec.restartPolicy: Unsupported "
                          "value: \"Always\": supported values: "
                          "\"OnFailure\", \"Never\""));

  Job indexed = Created();
  indexed.mutable_spec()->set_completionmode("Indexed");
  indexed.mutable_spec()->clear_completions();
  indexed.mutable_spec()->set_backofflimit(-1);
  EXPECT_THAT(Texts(s.ValidateCreate(indexed)),
              ElementsAre("spec.backoffLimit: Invalid value: -1: must be "
                          "greater than or equal to 0",
                          "spec.completions: Required value: when completion "
                          "mode is Indexed"));

  // A selector that is not the generated one.
  Job stolen = Created();
  (*stolen.mutable_spec()->mutable_selector()->mutable_matchlabels())["app"] =
      "x";
  EXPECT_THAT(Texts(s.ValidateCreate(stolen)),
              ElementsAre(::testing::HasSubstr("`selector` not auto-generated"),
                          ::testing::HasSubstr(
                              "`selector` does not match template `labels`")));
}

TEST(JobStrategyTest, PodFailurePolicyRules) {
  const Strategy& s = StrategyOf("batch", "jobs");
  Job job = Created(R"({"metadata":{"name":"p","namespace":"d"},"spec":{
    "podFailurePolicy":{"rules":[
      {"action":"FailJob","onExitCodes":{"operator":"In","values":[0,42]}},
      {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]},
      {"action":"Retry","onExitCodes":{"operator":"NotIn","values":[3,1]}}]},
    "template":{"spec":{"containers":[{"name":"c","image":"busybox"}],
    "restartPolicy":"OnFailure"}}}})");
  EXPECT_EQ(job.spec().podfailurepolicy().rules(1).onpodconditions(0).status(),
            "True");  // defaulted
  EXPECT_EQ(job.spec().podreplacementpolicy(), "Failed");
  EXPECT_THAT(
      Texts(s.ValidateCreate(job)),
      ElementsAre(
          "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": "
          "only \"Never\" is supported when podFailurePolicy is specified",
          "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid "
          "value: 0: must not be 0 for the In operator",
          "spec.podFailurePolicy.rules[2].action: Unsupported value: "
          "\"Retry\": supported values: \"Count\", \"FailIndex\", "
          "\"FailJob\", \"Ignore\"",
          "spec.podFailurePolicy.rules[2].onExitCodes.values[1]: Invalid "
          "value: 1: must be ordered"));
}

TEST(JobStrategyTest, UpdatesKeepWhatARunningJobCannotChange) {
  const Strategy& s = StrategyOf("batch", "jobs");
  Job old = Created();
  old.mutable_metadata()->set_resourceversion("5");
  Job scaled = old;
  scaled.mutable_spec()->set_parallelism(4);
  s.PrepareForUpdate(&scaled, old);
  EXPECT_THAT(Texts(s.ValidateUpdate(scaled, old)), IsEmpty());
  EXPECT_EQ(scaled.metadata().generation(), 2);

  Job more = old;
  more.mutable_spec()->set_completions(5);
  s.PrepareForUpdate(&more, old);
  EXPECT_THAT(Texts(s.ValidateUpdate(more, old)),
              ElementsAre("spec.completions: Invalid value: 5: field is "
                          "immutable"));

  Job image = old;
  image.mutable_spec()
      ->mutable_template_()
      ->mutable_spec()
      ->mutable_containers(0)
      ->set_image("perl:5");
  s.PrepareForUpdate(&image, old);
  EXPECT_THAT(
      Texts(s.ValidateUpdate(image, old)),
      ElementsAre(::testing::StartsWith("spec.template: Invalid value: ")));

  // A status write keeps the spec.
  Job status = old;
  status.mutable_spec()->set_parallelism(9);
  status.mutable_status()->set_succeeded(1);
  s.PrepareForStatusUpdate(&status, old);
  EXPECT_EQ(status.spec().parallelism(), 1);
  EXPECT_EQ(status.status().succeeded(), 1);
  EXPECT_THAT(Texts(s.ValidateStatusUpdate(status, old)), IsEmpty());
  EXPECT_EQ(s.FieldValue(status, "status.successful"), "1");
}

TEST(JobStrategyTest, PrinterColumnsAsKubectl132) {
  std::vector<std::string> names;
  for (const auto& c : printers::JobColumns()) {
    if (c.priority == 0) names.push_back(c.name);
  }
  EXPECT_THAT(names,
              ElementsAre("Name", "Status", "Completions", "Duration", "Age"));
  Job job = Created();
  auto* meta = job.mutable_metadata();
  objects::SetTime(meta->mutable_creationtimestamp(), testing::At(1000));
  objects::SetTime(job.mutable_status()->mutable_starttime(),
                   testing::At(1000));
  auto row = printers::JobRow(job, testing::At(1065));
  ASSERT_EQ(row.size(), 8u);
  EXPECT_EQ(row[1].str, "Running");
  EXPECT_EQ(row[2].str, "0/1");
  EXPECT_EQ(row[3].str, "65s");
  EXPECT_EQ(row[7].str, "batch.kubernetes.io/controller-uid=0b6e6a3f-uid");

  job.mutable_status()->set_succeeded(1);
  objects::SetTime(job.mutable_status()->mutable_completiontime(),
                   testing::At(1012));
  auto* c = job.mutable_status()->add_conditions();
  c->set_type("Complete");
  c->set_status("True");
  row = printers::JobRow(job, testing::At(4000));
  EXPECT_EQ(row[1].str, "Complete");
  EXPECT_EQ(row[2].str, "1/1");
  EXPECT_EQ(row[3].str, "12s");
  EXPECT_EQ(row[4].str, "50m");

  Job work = Created(R"({"metadata":{"name":"w","namespace":"d"},
    "spec":{"parallelism":3,"template":{"spec":{"containers":[{"name":"c",
    "image":"busybox"}],"restartPolicy":"OnFailure"}}}})");
  EXPECT_EQ(printers::JobRow(work, testing::At(0))[2].str, "0/1 of 3");
}

// What `kubectl create cronjob tick --image=busybox --schedule='*/1 * * * *'`
// posts.
constexpr char kKubectlCronJob[] = R"({"metadata":{"name":"tick",
  "namespace":"default"},"spec":{"schedule":"*/1 * * * *","jobTemplate":{
  "metadata":{"name":"tick"},"spec":{"template":{"metadata":{},"spec":{
  "containers":[{"name":"tick","image":"busybox","resources":{}}],
  "restartPolicy":"OnFailure"}}}}},"status":{}})";

TEST(CronJobStrategyTest, DefaultsValidationAndPrinter) {
  const Strategy& s = StrategyOf("batch", "cronjobs");
  auto cj = Decode<objects::batchv1::CronJob>(kKubectlCronJob);
  s.Default(&cj);
  EXPECT_EQ(cj.spec().concurrencypolicy(), "Allow");
  EXPECT_EQ(cj.spec().successfuljobshistorylimit(), 3);
  EXPECT_EQ(cj.spec().failedjobshistorylimit(), 1);
  EXPECT_FALSE(cj.spec().suspend());
  s.PrepareForCreate(&cj);
  EXPECT_THAT(Texts(s.ValidateCreate(cj)), IsEmpty());

  auto bad = cj;
  bad.mutable_spec()->set_schedule("* * * *");
  bad.mutable_spec()->set_timezone("Europe/Paris");
  bad.mutable_spec()->set_concurrencypolicy("Sometimes");
  bad.mutable_spec()
      ->mutable_jobtemplate()
      ->mutable_spec()
      ->mutable_template_()
      ->mutable_spec()
      ->set_restartpolicy("Always");
  EXPECT_THAT(
      Texts(s.ValidateCreate(bad)),
      ElementsAre(
          "spec.schedule: Invalid value: \"* * * *\": expected exactly 5 "
          "fields, found 4: [* * * *]",
          "spec.timeZone: Invalid value: \"Europe/Paris\": unknown time zone "
          "Europe/Paris (kplane supports only UTC and Etc/UTC)",
          "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": "
          "supported values: \"Allow\", \"Forbid\", \"Replace\"",
          "spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported "
          "value: \"Always\": supported values: \"OnFailure\", \"Never\""));

  std::vector<std::string> names;
  for (const auto& c : printers::CronJobColumns()) {
    if (c.priority == 0) names.push_back(c.name);
  }
  EXPECT_THAT(names, ElementsAre("Name", "Schedule", "Timezone", "Suspend",
                                 "Active", "Last Schedule", "Age"));
  objects::SetTime(cj.mutable_metadata()->mutable_creationtimestamp(),
                   testing::At(1000));
  auto row = printers::CronJobRow(cj, testing::At(1100));
  EXPECT_EQ(row[1].str, "*/1 * * * *");
  EXPECT_EQ(row[2].str, "<none>");
  EXPECT_EQ(row[3].str, "False");
  EXPECT_EQ(row[4].num, 0);
  EXPECT_EQ(row[5].str, "<none>");
  objects::SetTime(cj.mutable_status()->mutable_lastscheduletime(),
                   testing::At(1080));
  EXPECT_EQ(printers::CronJobRow(cj, testing::At(1100))[5].str, "20s");
}

}  // namespace
}  // namespace kplane::apiserver
