#include "controllers/replicaset_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "informer/event_recorder.h"
#include "objects/meta.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using namespace testing;  // NOLINT: test builders

class ReplicaSetTest : public ::testing::Test {
 protected:
  ReplicaSetTest()
      : rs_controller_({.api = &fake_,
                        .replicasets = &replicasets_,
                        .pods = &pods_,
                        .clock = &clock_,
                        .metrics = &reg_}) {
    clock_.SetWall(WallTime(seconds(1700000100)));
    fake_.ReflectUpdates(ReplicaSetsResource(), &replicasets_);
  }
  std::shared_ptr<appsv1::ReplicaSet> AddRs(int32_t replicas) {
    auto rs = NewReplicaSet("default", "web", replicas, {{"app", "web"}});
    replicasets_.Upsert(rs);
    return rs;
  }
  std::shared_ptr<corev1::Pod> AddPod(const std::string& name,
                                      const appsv1::ReplicaSet* owner) {
    auto p = NewPod("default", name, {{"app", "web"}});
    if (owner != nullptr)
      OwnedBy(p->mutable_metadata(), "ReplicaSet", owner->metadata());
    pods_.Upsert(p);
    return p;
  }
  const appsv1::ReplicaSetStatus* LastStatus() {
    auto w = fake_.Written();
    for (auto it = w.rbegin(); it != w.rend(); ++it) {
      if (auto* rs = dynamic_cast<const appsv1::ReplicaSet*>(it->get())) {
        return &rs->status();
      }
    }
    return nullptr;
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer replicasets_;
  informer::Indexer pods_;
  ReplicaSetController rs_controller_;
};

TEST_F(ReplicaSetTest, TableOfSyncs) {
  struct Case {
    std::string name;
    int32_t replicas;
    // Pods: name -> "owned" | "orphan" | "other" | "owned-terminating" |
    // "owned-running" | "owned-unlabeled"
    std::vector<std::pair<std::string, std::string>> pods;
    std::vector<std::string> actions;
  };
  std::vector<Case> cases = {
      {"creates the missing pods",
       3,
       {{"a", "owned"}},
       {"create pods default/web-", "create pods default/web-",
        "update-status replicasets default/web"}},
      {"nothing to do when in sync",
       1,
       {{"a", "owned"}},
       {"update-status replicasets default/web"}},
      {"deletes pending before running",
       1,
       {{"a", "owned-running"}, {"b", "owned"}},
       {"delete pods default/b", "update-status replicasets default/web"}},
      {"adopts a matching orphan",
       1,
       {{"o", "orphan"}},
       {"update pods default/o", "update-status replicasets default/web"}},
      {"leaves other controllers' pods alone",
       1,
       {{"x", "other"}},
       {"create pods default/web-", "update-status replicasets default/web"}},
      {"replaces a terminating pod",
       1,
       {{"t", "owned-terminating"}},
       {"create pods default/web-", "update-status replicasets default/web"}},
      {"releases a pod that no longer matches",
       0,
       {{"u", "owned-unlabeled"}},
       {"update pods default/u", "update-status replicasets default/web"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fake_.Clear();
    pods_.Replace({});
    replicasets_.Replace({});
    rs_controller_.expectations().Forget("default/web");
    auto rs = AddRs(c.replicas);
    appsv1::ReplicaSet other =
        *NewReplicaSet("default", "other", 1, {{"app", "web"}});
    for (const auto& [name, kind] : c.pods) {
      auto p = NewPod("default", name, {{"app", "web"}});
      if (kind.rfind("owned", 0) == 0) {
        OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
      }
      if (kind == "other")
        OwnedBy(p->mutable_metadata(), "ReplicaSet", other.metadata());
      if (kind == "owned-running") RunOn(p.get(), "n1", true);
      if (kind == "owned-terminating") {
        objects::SetTime(p->mutable_metadata()->mutable_deletiontimestamp(),
                         int64_t{1700000050});
      }
      if (kind == "owned-unlabeled")
        p->mutable_metadata()->mutable_labels()->clear();
      pods_.Upsert(p);
    }
    ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
    EXPECT_THAT(fake_.Actions(), ElementsAreArray(c.actions));
  }
}

TEST_F(ReplicaSetTest, CreatedPodsCarryTemplateAndControllerRef) {
  auto rs = AddRs(1);
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  auto pod = std::dynamic_pointer_cast<const corev1::Pod>(fake_.Written()[0]);
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->metadata().generatename(), "web-");
  EXPECT_EQ(pod->metadata().labels().at("app"), "web");
  EXPECT_EQ(pod->spec().containers(0).image(), "nginx");
  const metav1::OwnerReference* ref = objects::ControllerRef(pod->metadata());
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->kind(), "ReplicaSet");
  EXPECT_EQ(ref->uid(), "uid-web");
  EXPECT_TRUE(ref->blockownerdeletion());
}

TEST_F(ReplicaSetTest, ExpectationsPreventDoubleCreate) {
  AddRs(2);
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_EQ(fake_.Actions().size(), 3u);  // 2 creates + status
  fake_.Clear();
  // The cache has not seen the pods yet: a second sync must not create.
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // The informer delivers both pods: expectations are met, nothing missing.
  auto rs = std::static_pointer_cast<const appsv1::ReplicaSet>(
      replicasets_.Get("default/web"));
  rs_controller_.OnPodAdd(*AddPod("web-1", rs.get()));
  EXPECT_FALSE(rs_controller_.expectations().Satisfied("default/web"));
  rs_controller_.OnPodAdd(*AddPod("web-2", rs.get()));
  EXPECT_TRUE(rs_controller_.expectations().Satisfied("default/web"));
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update-status replicasets default/web"));
  fake_.Clear();
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());  // status already current
  // Expectations also expire, so a lost event cannot wedge the RS.
  rs_controller_.expectations().ExpectCreations("default/web", 1);
  EXPECT_FALSE(rs_controller_.expectations().Satisfied("default/web"));
  clock_.Advance(minutes(5));
  EXPECT_TRUE(rs_controller_.expectations().Satisfied("default/web"));
}

TEST_F(ReplicaSetTest, FailedCreateLowersExpectationsAndRetries) {
  AddRs(2);
  fake_.FailNext("create pods", UnavailableError("apiserver down"));
  Status s = rs_controller_.Sync("default/web");
  EXPECT_FALSE(s.ok());
  // The failed create and the one not attempted will never be observed.
  EXPECT_TRUE(rs_controller_.expectations().Satisfied("default/web"));
  fake_.Clear();
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("create pods default/web-",
                                           "create pods default/web-"));
}

TEST_F(ReplicaSetTest, DeletionObservedOnceByKey) {
  auto rs = AddRs(0);
  auto p = AddPod("a", rs.get());
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_EQ(fake_.Actions()[0], "delete pods default/a");
  EXPECT_FALSE(rs_controller_.expectations().Satisfied("default/web"));
  corev1::Pod terminating = *p;
  objects::SetTime(terminating.mutable_metadata()->mutable_deletiontimestamp(),
                   int64_t{1700000100});
  terminating.mutable_metadata()->set_resourceversion("2");
  rs_controller_.OnPodUpdate(*p, terminating);
  EXPECT_TRUE(rs_controller_.expectations().Satisfied("default/web"));
}

TEST_F(ReplicaSetTest, StatusCountsReadyAndAvailableWithMinReadySeconds) {
  auto rs = NewReplicaSet("default", "web", 3, {{"app", "web"}});
  rs->mutable_spec()->set_minreadyseconds(60);
  rs->mutable_metadata()->set_generation(4);
  replicasets_.Upsert(rs);
  auto a = NewPod("default", "a", {{"app", "web"}});
  auto b = NewPod("default", "b", {{"app", "web"}});
  auto c = NewPod("default", "c", {{"app", "web"}});
  for (auto* p : {a.get(), b.get(), c.get()}) {
    OwnedBy(p->mutable_metadata(), "ReplicaSet", rs->metadata());
  }
  RunOn(a.get(), "n1", true, 1700000000);  // ready 100 s: available
  RunOn(b.get(), "n1", true, 1700000080);  // ready 20 s: not yet
  RunOn(c.get(), "n1", false);
  for (auto& p : {a, b, c}) pods_.Upsert(p);
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  const appsv1::ReplicaSetStatus* st = LastStatus();
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->replicas(), 3);
  EXPECT_EQ(st->fullylabeledreplicas(), 3);
  EXPECT_EQ(st->readyreplicas(), 2);
  EXPECT_EQ(st->availablereplicas(), 1);
  EXPECT_EQ(st->observedgeneration(), 4);
  // b becomes available in 40 s: the key is queued for then.
  EXPECT_EQ(rs_controller_.queue().NumWaiting(), 1);
}

TEST_F(ReplicaSetTest, StatusConflictIsWrittenOntoTheLiveObject) {
  auto rs = AddRs(0);
  auto live = std::make_shared<appsv1::ReplicaSet>(*rs);
  live->mutable_metadata()->set_resourceversion("7");
  fake_.SetLive(ReplicaSetsResource(), live);
  fake_.FailNext("update-status",
                 ConflictError("the object has been modified"));
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(),
              ElementsAre("update-status replicasets default/web",
                          "update-status replicasets default/web"));
  auto written = std::dynamic_pointer_cast<const appsv1::ReplicaSet>(
      fake_.Written().back());
  EXPECT_EQ(written->status().observedgeneration(), 1);
  // A spec change in between (new generation) is not papered over.
  fake_.Clear();
  replicasets_.Delete("default/web");
  rs = AddRs(0);
  rs->mutable_status()->set_replicas(5);  // force a status write
  replicasets_.Upsert(rs);
  live->mutable_metadata()->set_generation(2);
  fake_.FailNext("update-status",
                 ConflictError("the object has been modified"));
  EXPECT_FALSE(rs_controller_.Sync("default/web").ok());
  EXPECT_EQ(fake_.Actions().size(), 1u);
}

TEST_F(ReplicaSetTest, RecordsKubesPodControlEvents) {
  auto recorder = std::make_unique<informer::FakeEventRecorder>();
  informer::FakeEventRecorder* events = recorder.get();
  rs_controller_.set_event_recorder(std::move(recorder));
  auto rs = AddRs(2);
  fake_.FailNext("create pods", InternalError("quota"));
  ASSERT_FALSE(rs_controller_.Sync("default/web").ok());
  rs_controller_.expectations().Forget("default/web");
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(events->Events(),
              ElementsAre("Warning FailedCreate Error creating: quota",
                          "Normal SuccessfulCreate Created pod: web-2",
                          "Normal SuccessfulCreate Created pod: web-3"));
  events->Clear();
  rs->mutable_spec()->set_replicas(0);
  replicasets_.Upsert(rs);
  rs_controller_.expectations().Forget("default/web");
  AddPod("a", rs.get());
  ASSERT_TRUE(rs_controller_.Sync("default/web").ok());
  EXPECT_THAT(events->Events(),
              ElementsAre("Normal SuccessfulDelete Deleted pod: a"));
}

}  // namespace
}  // namespace kplane::controllers
