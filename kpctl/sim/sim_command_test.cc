// kpctl sim against a ControlServer whose handlers record what they are
// asked (the fleet behind it is tested in kubeletsim/fleet_test.cc).
#include "kpctl/sim/sim_command.h"

#include <gtest/gtest.h>

#include <sstream>

#include "base/logging.h"
#include "base/mutex.h"
#include "kubeletsim/control_server.h"

namespace kplane::kpctl {
namespace {

class SimCommandTest : public ::testing::Test {
 protected:
  SimCommandTest() {
    kubeletsim::ControlServer::Handlers h;
    h.stop_node = [this](const std::string& n) { return Record("stop " + n); };
    h.resume_node = [this](const std::string& n) {
      return Record("resume " + n);
    };
    h.stop_all = [this] { (void)Record("stop-all"); };
    h.resume_all = [this] { (void)Record("resume-all"); };
    h.list = [] {
      kubeletsim::NodeInfo a{.name = "node-0",
                             .registered = true,
                             .pods = 2,
                             .lease_renewals = 7,
                             .last_lag_seconds = 0.012};
      kubeletsim::NodeInfo b{
          .name = "node-1", .stopped = true, .registered = true};
      return std::vector<kubeletsim::NodeInfo>{a, b};
    };
    h.metrics = &metrics_;
    server_ = std::make_unique<kubeletsim::ControlServer>(h);
    CHECK(server_->Start("127.0.0.1", 0).ok());
    endpoint_ =
        "--endpoint=http://127.0.0.1:" + std::to_string(server_->port());
  }
  Status Record(const std::string& call) {
    MutexLock l(&mu_);
    calls_.push_back(call);
    if (call.find("ghost") != std::string::npos) {
      return NotFoundError("no simulated node ghost");
    }
    return Status::Ok();
  }
  int Run(std::vector<std::string> args) {
    args.push_back(endpoint_);
    out_.str("");
    err_.str("");
    return RunSim(args, out_, err_);
  }

  metrics::Registry metrics_;
  std::unique_ptr<kubeletsim::ControlServer> server_;
  std::string endpoint_;
  Mutex mu_;
  std::vector<std::string> calls_ GUARDED_BY(mu_);
  std::ostringstream out_, err_;
};

TEST_F(SimCommandTest, List) {
  ASSERT_EQ(Run({"list"}), 0) << err_.str();
  std::string out = out_.str();
  EXPECT_NE(out.find("NAME"), std::string::npos);
  EXPECT_NE(out.find("node-0"), std::string::npos);
  EXPECT_NE(out.find("Running"), std::string::npos);
  EXPECT_NE(out.find("0.012s"), std::string::npos);
  EXPECT_NE(out.find("Stopped"), std::string::npos);
}

TEST_F(SimCommandTest, StopResume) {
  EXPECT_EQ(Run({"stop-node", "node-3", "node-4"}), 0);
  EXPECT_EQ(out_.str(), "node/node-3 stopped\nnode/node-4 stopped\n");
  EXPECT_EQ(Run({"resume-node", "node-3"}), 0);
  EXPECT_EQ(Run({"stop-all"}), 0);
  EXPECT_EQ(Run({"resume-all"}), 0);
  EXPECT_EQ(Run({"stop-node", "ghost"}), 1);
  EXPECT_NE(err_.str().find("no simulated node ghost"), std::string::npos);
  MutexLock l(&mu_);
  EXPECT_EQ(calls_, (std::vector<std::string>{"stop node-3", "stop node-4",
                                              "resume node-3", "stop-all",
                                              "resume-all", "stop ghost"}));
}

TEST_F(SimCommandTest, Usage) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({"stop-node"}), 2);
  EXPECT_EQ(Run({"explode"}), 2);
  EXPECT_EQ(RunSim({"list", "--endpoint=http://127.0.0.1:1"}, out_, err_), 1);
}

}  // namespace
}  // namespace kplane::kpctl
