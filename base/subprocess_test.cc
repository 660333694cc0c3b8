#include "base/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

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

// PR_SET_PDEATHSIG fires when the *thread* that forked ends: a child
// started from a thread that has since ended must still be running, and
// Stop must still give it SIGTERM (here: trapped, exit 42), not SIGKILL.
TEST(SubprocessTest, ChildOutlivesTheThreadThatStartedIt) {
  const std::string ready =
      "/tmp/kplane-subprocess-test-ready-" + std::to_string(::getpid());
  std::remove(ready.c_str());
  Subprocess p({"/bin/sh", "-c",
                "trap 'exit 42' TERM; touch " + ready +
                    "; while :; do sleep 0.05; done"});
  // The thread ends once the child runs its script (PR_SET_PDEATHSIG set,
  // the trap set: the file exists).
  std::thread([&] {
    ASSERT_TRUE(p.Start().ok());
    for (int i = 0; i < 2000 && !std::ifstream(ready); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }).join();
  ASSERT_TRUE(std::ifstream(ready).good());
  EXPECT_TRUE(p.running());
  EXPECT_EQ(p.Stop(), 42);
  std::remove(ready.c_str());
}

TEST(SubprocessTest, MissingBinaryExits127) {
  Subprocess p({"/nonexistent/binary"});
  ASSERT_TRUE(p.Start().ok());
  EXPECT_EQ(p.Wait(), 127);
}

}  // namespace
}  // namespace kplane
