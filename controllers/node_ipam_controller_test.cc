#include "controllers/node_ipam_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/test_objects.h"
#include "controllers/util.h"
#include "informer/api_errors.h"

namespace kplane::controllers {
namespace {

using ::testing::ElementsAre;
using namespace testing;  // NOLINT: test builders

class NodeIpamControllerTest : public ::testing::Test {
 protected:
  NodeIpamControllerTest() { fake_.ReflectUpdates(NodesResource(), &nodes_); }
  ~NodeIpamControllerTest() override {
    if (controller_) controller_->Stop();
  }

  // A controller over a /22 cut into /24s: 4 node CIDRs. Run() occupies
  // what the cache holds, as after a (re)start; no worker gets a key, the
  // test calls Sync itself.
  void Start(const std::string& cluster = "10.0.0.0/22", int mask = 24) {
    auto c = NodeIpamController::New({.api = &fake_,
                                      .nodes = &nodes_,
                                      .cluster_cidr = cluster,
                                      .node_cidr_mask_size = mask,
                                      .clock = &clock_,
                                      .metrics = &reg_});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    controller_ = std::move(*c);
    auto recorder = std::make_unique<informer::FakeEventRecorder>();
    events_ = recorder.get();
    controller_->set_event_recorder(std::move(recorder));
    controller_->Run(1);
  }

  void AddNode(const std::string& name, const std::string& cidr = "") {
    auto n = NewNode(name);
    if (!cidr.empty()) {
      n->mutable_spec()->set_podcidr(cidr);
      n->mutable_spec()->add_podcidrs(cidr);
    }
    nodes_.Upsert(n);
  }
  std::string CidrOf(const std::string& name) {
    auto n = std::static_pointer_cast<const corev1::Node>(nodes_.Get(name));
    if (n == nullptr || n->spec().podcidrs().empty()) return "";
    EXPECT_EQ(n->spec().podcidr(), n->spec().podcidrs(0));
    return n->spec().podcidrs(0);
  }

  FakeClock clock_;
  metrics::Registry reg_;
  FakeApiWriter fake_;
  informer::Indexer nodes_;
  std::unique_ptr<NodeIpamController> controller_;
  informer::FakeEventRecorder* events_ = nullptr;
};

TEST_F(NodeIpamControllerTest, GivesEachNodeTheNextFreeCidr) {
  Start();
  AddNode("a");
  AddNode("b");
  ASSERT_TRUE(controller_->Sync("a").ok());
  ASSERT_TRUE(controller_->Sync("b").ok());
  EXPECT_EQ(CidrOf("a"), "10.0.0.0/24");
  EXPECT_EQ(CidrOf("b"), "10.0.1.0/24");
  // A node that has one is left alone.
  ASSERT_TRUE(controller_->Sync("a").ok());
  EXPECT_THAT(fake_.Actions(), ElementsAre("update nodes a", "update nodes b"));
  EXPECT_EQ(controller_->used(), 2);
}

TEST_F(NodeIpamControllerTest, ARestartReadsTheExistingAssignmentsFirst) {
  // What a previous manager handed out, seen in the cache at start.
  AddNode("old0", "10.0.0.0/24");
  AddNode("old2", "10.0.2.0/24");
  AddNode("new");
  Start();
  EXPECT_EQ(controller_->used(), 2);
  ASSERT_TRUE(controller_->Sync("new").ok());
  EXPECT_EQ(CidrOf("new"), "10.0.1.0/24");
  AddNode("newer");
  ASSERT_TRUE(controller_->Sync("newer").ok());
  EXPECT_EQ(CidrOf("newer"), "10.0.3.0/24");
}

TEST_F(NodeIpamControllerTest, ExhaustionIsAnEventAndARetryUntilANodeGoes) {
  Start("10.0.0.0/23", 24);  // two node CIDRs
  for (const char* n : {"a", "b", "c"}) AddNode(n);
  ASSERT_TRUE(controller_->Sync("a").ok());
  ASSERT_TRUE(controller_->Sync("b").ok());
  Status s = controller_->Sync("c");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(CidrOf("c"), "");
  EXPECT_THAT(events_->Events(),
              ElementsAre("Normal CIDRNotAvailable Node c status is now: "
                          "CIDRNotAvailable"));
  // Node a is deleted: its CIDR goes back, and c's retry gets it.
  nodes_.Delete("a");
  ASSERT_TRUE(controller_->Sync("a").ok());
  EXPECT_EQ(controller_->used(), 1);
  ASSERT_TRUE(controller_->Sync("c").ok());
  EXPECT_EQ(CidrOf("c"), "10.0.0.0/24");
}

TEST_F(NodeIpamControllerTest, AConflictRetriesWithTheSameCidrAFailureFreesIt) {
  Start();
  AddNode("a");
  fake_.FailNext("update nodes a", ConflictError("stale"));
  EXPECT_FALSE(controller_->Sync("a").ok());
  EXPECT_EQ(controller_->used(), 1);  // kept for the retry
  ASSERT_TRUE(controller_->Sync("a").ok());
  EXPECT_EQ(CidrOf("a"), "10.0.0.0/24");
  EXPECT_EQ(controller_->used(), 1);

  AddNode("b");
  // A refusal (4xx): the server did not apply it.
  metav1::Status invalid;
  invalid.set_reason("Invalid");
  invalid.set_code(422);
  fake_.FailNext("update nodes b", informer::StatusFromApiStatus(invalid, 422));
  EXPECT_FALSE(controller_->Sync("b").ok());
  EXPECT_EQ(controller_->used(), 1);  // released
  EXPECT_THAT(events_->Events(),
              ElementsAre("Normal CIDRAssignmentFailed Node b status is now: "
                          "CIDRAssignmentFailed"));
}

// kube's updateCIDRsAllocation: a PUT that got no answer may have been
// applied, so its CIDR must not go to another node.
TEST_F(NodeIpamControllerTest, ATimeoutKeepsTheCidrForTheRetry) {
  Start();
  AddNode("a");
  fake_.FailNext("update nodes a", DeadlineExceededError("no answer"));
  EXPECT_FALSE(controller_->Sync("a").ok());
  EXPECT_EQ(controller_->used(), 1);  // kept
  AddNode("b");
  ASSERT_TRUE(controller_->Sync("b").ok());
  EXPECT_EQ(CidrOf("b"), "10.0.1.0/24");
  ASSERT_TRUE(controller_->Sync("a").ok());
  EXPECT_EQ(CidrOf("a"), "10.0.0.0/24");
  EXPECT_EQ(controller_->used(), 2);
}

TEST_F(NodeIpamControllerTest, BadFlagsAreRefused) {
  EXPECT_EQ(NodeIpamController::New({.api = &fake_,
                                     .nodes = &nodes_,
                                     .cluster_cidr = "10.0.0.0/8",
                                     .node_cidr_mask_size = 28})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kplane::controllers
