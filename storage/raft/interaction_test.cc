// Runs the scripted scenarios in storage/raft/testdata/*.txt through the
// InteractionEnv. Regenerate expected output with KPLANE_REWRITE=1 and
// review the diff.
#include <filesystem>

#include "gtest/gtest.h"
#include "storage/raft/datadriven.h"
#include "storage/raft/interaction_env.h"

namespace kplane::raft {
namespace {

class InteractionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InteractionTest, Scenario) {
  InteractionEnv env;
  datadriven::RunTest(
      std::string(KPLANE_RAFT_TESTDATA) + "/" + GetParam(),
      [&](const datadriven::TestData& d) { return env.Handle(d); });
}

std::vector<std::string> Scenarios() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(KPLANE_RAFT_TESTDATA)) {
    if (e.path().extension() == ".txt") {
      out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Testdata, InteractionTest,
                         ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n =
                               i.param.substr(0, i.param.size() - 4);
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace kplane::raft
