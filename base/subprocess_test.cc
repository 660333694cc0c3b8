#include "base/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

namespace kplane {
namespace {

TEST(SubprocessTest, ExitCodeAndLog) {
  std::string log = "/tmp/kplane-subprocess-test.log";
  std::remove(log.c_str());
  Subprocess p({"/bin/sh", "-c", "echo hello; exit 3"}, {.log_path = log});
  ASSERT_TRUE(p.Start().ok());
  EXPECT_EQ(p.Wait(), 3);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "hello\n");
}

TEST(SubprocessTest, StopSendsTermThenKill) {
  Subprocess p({"/bin/sleep", "60"});
  ASSERT_TRUE(p.Start().ok());
  EXPECT_TRUE(p.running());
  EXPECT_EQ(p.Stop(), 128 + SIGTERM);
  EXPECT_FALSE(p.running());
}

TEST(SubprocessTest, DestructorKillsChild) {
  pid_t pid;
  {
    Subprocess p({"/bin/sleep", "60"});
    ASSERT_TRUE(p.Start().ok());
    pid = p.pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);  // reaped and gone
}

TEST(SubprocessTest, MissingBinaryExits127) {
  Subprocess p({"/nonexistent/binary"});
  ASSERT_TRUE(p.Start().ok());
  EXPECT_EQ(p.Wait(), 127);
}

}  // namespace
}  // namespace kplane
