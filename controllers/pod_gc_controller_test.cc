#include "controllers/pod_gc_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "objects/time.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

class PodGCControllerTest : public ::testing::Test {
 protected:
  PodGCControllerTest()
      : controller_({.api = &fake_,
                     .pods = &pods_,
                     .clock = &clock_,
                     .metrics = &reg_}) {}

  // A pod on n1 deleted with `grace` seconds, due `due_in` from now.
  void AddTerminating(const std::string& name, int64_t grace, Duration due_in) {
    auto p = NewPod("default", name);
    RunOn(p.get(), "n1", true);
    objects::SetTime(p->mutable_metadata()->mutable_deletiontimestamp(),
                     clock_.WallNow() + due_in);
    p->mutable_metadata()->set_deletiongraceperiodseconds(grace);
    pods_.Upsert(p);
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer pods_;
  PodGCController controller_;
};

TEST_F(PodGCControllerTest, DeletesAPodOnlyOnceItsGracePeriodIsOver) {
  AddTerminating("web", 30, seconds(30));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  // Looked at again when the rest of the grace period is over.
  EXPECT_EQ(controller_.queue().NumWaiting(), 1);
  clock_.Advance(seconds(30));
  ASSERT_TRUE(controller_.Sync("default/web").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("delete pods default/web"));
}

TEST_F(PodGCControllerTest, LeavesPodsNotInAGracefulDeletion) {
  auto running = NewPod("default", "running");
  RunOn(running.get(), "n1", true);
  pods_.Upsert(running);
  // Deleted with grace 0 but held by a finalizer: not the kubelet's to end.
  AddTerminating("held", 0, -seconds(5));
  ASSERT_TRUE(controller_.Sync("default/running").ok());
  ASSERT_TRUE(controller_.Sync("default/held").ok());
  ASSERT_TRUE(controller_.Sync("default/gone").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre());
  EXPECT_EQ(controller_.queue().NumWaiting(), 0);
}

TEST_F(PodGCControllerTest, APodGoneOrReplacedMeanwhileIsNoError) {
  AddTerminating("web", 30, -seconds(1));
  fake_.FailNext("delete pods default/web", NotFoundError("gone"));
  EXPECT_TRUE(controller_.Sync("default/web").ok());
  // The uid precondition failed: a new pod of the same name.
  fake_.FailNext("delete pods default/web", ConflictError("uid differs"));
  EXPECT_TRUE(controller_.Sync("default/web").ok());
  fake_.FailNext("delete pods default/web", UnavailableError("down"));
  EXPECT_FALSE(controller_.Sync("default/web").ok());  // retried
}

}  // namespace
}  // namespace kplane::controllers
