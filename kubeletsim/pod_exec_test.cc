#include "kubeletsim/pod_exec.h"

#include <gtest/gtest.h>

#include <memory>

namespace kplane::kubeletsim {
namespace {

ShellEnv Env() {
  return {.hostname = "web-0",
          .env = {{"GREETING", "hello"}, {"EMPTY", ""}},
          .now = [] { return FakeClock::DefaultWall(); }};
}

std::string Stdout(const ShellResult& r) {
  std::string s;
  for (const ShellAction& a : r.actions) {
    if (a.kind == ShellAction::kStdout) s += a.text;
  }
  return s;
}
std::string Stderr(const ShellResult& r) {
  std::string s;
  for (const ShellAction& a : r.actions) {
    if (a.kind == ShellAction::kStderr) s += a.text;
  }
  return s;
}

TEST(SimShell, Commands) {
  ShellEnv env = Env();
  EXPECT_EQ(Stdout(RunCommand(env, {"echo", "hi", "there"}, 0)), "hi there\n");
  EXPECT_EQ(Stdout(RunCommand(env, {"/bin/echo", "-n", "x"}, 0)), "x");
  EXPECT_EQ(Stdout(RunCommand(env, {"hostname"}, 0)), "web-0\n");
  EXPECT_EQ(Stdout(RunCommand(env, {"cat", "/etc/hostname"}, 0)), "web-0\n");
  EXPECT_EQ(Stdout(RunCommand(env, {"env"}, 0)),
            "GREETING=hello\nEMPTY=\nHOSTNAME=web-0\n");
  EXPECT_EQ(Stdout(RunCommand(env, {"printenv", "GREETING"}, 0)), "hello\n");
  EXPECT_EQ(RunCommand(env, {"printenv", "NOPE"}, 0).status, 1);
  EXPECT_NE(Stdout(RunCommand(env, {"ls"}, 0)).find("etc\n"),
            std::string::npos);
  EXPECT_EQ(Stdout(RunCommand(env, {"date"}, 0)),
            "Thu Jan  1 00:00:00 UTC 2026\n");
  ShellResult missing = RunCommand(env, {"cat", "/nope"}, 0);
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(Stderr(missing),
            "cat: can't open '/nope': No such file or directory\n");
  ShellResult unknown = RunCommand(env, {"nosuch", "x"}, 0);
  EXPECT_EQ(unknown.status, 127);
  EXPECT_EQ(Stderr(unknown), "nosuch: command not found\n");
  EXPECT_TRUE(Stdout(unknown).empty());
}

TEST(SimShell, Scripts) {
  ShellEnv env = Env();
  ShellResult r = RunScript(env,
                            "echo \"$GREETING, world\"; echo '$GREETING'"
                            "; false; echo $?; exit 3; echo never",
                            0);
  EXPECT_EQ(Stdout(r), "hello, world\n$GREETING\n1\n");
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 3);
  // sh -c: the inner exit ends the inner shell only.
  ShellResult c = RunCommand(env, {"sh", "-c", "echo a; exit 4"}, 0);
  EXPECT_EQ(Stdout(c), "a\n");
  EXPECT_EQ(c.status, 4);
  EXPECT_FALSE(c.exited);
  EXPECT_EQ(RunScript(env, "echo 'open", 0).status, 2);
  EXPECT_EQ(RunCommand(env, {"exit", "300"}, 0).status, 300 & 0xFF);
  ShellResult sleep = RunScript(env, "sleep 99999; echo after", 0);
  ASSERT_EQ(sleep.actions.size(), 2u);
  EXPECT_EQ(sleep.actions[0].kind, ShellAction::kSleep);
  EXPECT_EQ(sleep.actions[0].sleep, kMaxSleep);  // bounded
  EXPECT_EQ(RunScript(env, std::string(kMaxScript + 1, 'a'), 0).status, 2);
}

// What a pod's env can make of a short line stays bounded: expansions, the
// output of many commands, and a variable that runs itself.
TEST(SimShell, ExpansionOutputAndNestingAreBounded) {
  ShellEnv env = Env();
  env.env.emplace_back("BIG", std::string(1 << 20, 'x'));
  env.env.emplace_back("SELF", "sh -c \"$SELF\"");
  env.env.emplace_back("K", std::string(60 * 1024, 'k'));
  std::string line = "echo";
  for (int i = 0; i < 2048; ++i) line += " $BIG";
  ShellResult big = RunScript(env, line, 0);
  EXPECT_EQ(big.status, 2);
  EXPECT_EQ(Stderr(big), "sh: variables expand to over 65536 bytes\n");
  EXPECT_TRUE(Stdout(big).empty());
  EXPECT_EQ(Stderr(RunScript(env, "echo 'open", 0)),
            "sh: syntax error: unterminated quoted string\n");
  // Each command within the expansion bound, many of them: cut at 1 MiB.
  std::string many;
  for (int i = 0; i < 100; ++i) many += "echo $K;";
  ShellResult lots = RunScript(env, many, 0);
  EXPECT_EQ(lots.status, 2);
  EXPECT_LE(Stdout(lots).size(), kMaxScriptOutput + 64 * 1024);
  EXPECT_GT(Stdout(lots).size(), kMaxScriptOutput);
  EXPECT_EQ(Stderr(lots), "sh: output over 1048576 bytes\n");
  // ... also through shells inside shells.
  std::string nested;
  for (int i = 0; i < 10; ++i) nested += "sh -c '" + many + "';";
  ShellResult inner = RunScript(env, nested, 0);
  EXPECT_GT(Stdout(inner).size(), kMaxScriptOutput);
  EXPECT_LE(Stdout(inner).size(), 2 * (kMaxScriptOutput + 64 * 1024));
  ShellResult self = RunScript(env, "sh -c \"$SELF\"", 0);
  EXPECT_EQ(self.status, 2);
  EXPECT_EQ(Stderr(self), "sh: shells nested over 8 deep\n");
  ShellResult sleep = RunCommand(env, {"sleep", "9223372036854775807"}, 0);
  ASSERT_EQ(sleep.actions.size(), 1u);
  EXPECT_EQ(sleep.actions[0].sleep, kMaxSleep);
}

TEST(SimShell, ExitStatusJsonIsKubelets) {
  EXPECT_EQ(ExecStatusJson({"ls"}, 0), R"({"metadata":{},"status":"Success"})");
  EXPECT_EQ(
      ExecStatusJson({"sh", "-c", "exit 3"}, 3),
      R"({"metadata":{},"status":"Failure","message":"command terminated with )"
      R"(non-zero exit code: error executing command [sh -c exit 3], exit )"
      R"(code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":)"
      R"("ExitCode","message":"3"}]}})");
}

// A session with its output collected.
struct SessionRun {
  FakeClock clock;
  TimerQueue timers{&clock};
  std::string out, err;
  std::optional<int> code;
  std::shared_ptr<ExecSession> session;

  explicit SessionRun(ExecCommand cmd) {
    session = std::make_shared<ExecSession>(
        Env(), std::move(cmd), &timers,
        [this](uint8_t ch, std::string s) { (ch == 1 ? out : err) += s; },
        [this](int c) {
          EXPECT_FALSE(code.has_value()) << "done twice";
          code = c;
        });
  }
  ~SessionRun() { timers.Stop(); }
};

TEST(ExecSession, OneCommand) {
  SessionRun r({.argv = {"sh", "-c", "echo hi; nosuch; exit 5"}});
  r.session->Start();
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_EQ(r.err, "nosuch: command not found\n");
  EXPECT_EQ(r.code, 5);
}

TEST(ExecSession, SleepWaitsOnTheTimers) {
  SessionRun r({.argv = {"sh", "-c", "echo a; sleep 5; echo b"}});
  r.session->Start();
  EXPECT_EQ(r.out, "a\n");
  EXPECT_FALSE(r.code.has_value());
  r.clock.Advance(std::chrono::seconds(5));
  r.timers.WaitIdle();
  EXPECT_EQ(r.out, "a\nb\n");
  EXPECT_EQ(r.code, 0);
}

TEST(ExecSession, InteractiveShellReadsLines) {
  SessionRun r({.argv = {"sh"}, .stdin = true});
  r.session->Start();
  r.session->OnStdin("echo one\nech", false);
  EXPECT_EQ(r.out, "one\n");
  r.session->OnStdin("o two; false\nhostname", false);
  EXPECT_EQ(r.out, "one\ntwo\n");
  EXPECT_FALSE(r.code.has_value());
  r.session->OnStdin("", true);  // the last line has no newline
  EXPECT_EQ(r.out, "one\ntwo\nweb-0\n");
  EXPECT_EQ(r.code, 0);
}

TEST(ExecSession, InteractiveExitAndTtyPrompt) {
  SessionRun r({.argv = {"/bin/sh"}, .stdin = true, .tty = true});
  r.session->Start();
  EXPECT_EQ(r.out, "/ # ");
  r.session->OnStdin("exit 7\nnot run\n", false);
  EXPECT_EQ(r.out, "/ # exit 7\r\n");
  EXPECT_EQ(r.code, 7);
  r.session->OnStdin("echo late\n", true);  // after the end: nothing
  EXPECT_EQ(r.out, "/ # exit 7\r\n");
}

TEST(ExecSession, CatCopiesStdin) {
  SessionRun r({.argv = {"cat"}, .stdin = true});
  r.session->Start();
  r.session->OnStdin("abc", false);
  r.session->OnStdin("def", true);
  EXPECT_EQ(r.out, "abcdef");
  EXPECT_EQ(r.code, 0);
}

TEST(ExecSession, InputIsBounded) {
  SessionRun r({.argv = {"sh"}, .stdin = true});
  r.session->Start();
  r.session->OnStdin("sleep 10\n", false);
  r.session->OnStdin(std::string(kMaxPendingInput + 1, 'x'), false);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "sh: too much input waiting\n");
}

TEST(ExecSession, CancelStopsOutput) {
  SessionRun r({.argv = {"sh", "-c", "sleep 1; echo b"}});
  r.session->Start();
  r.session->Cancel();
  r.clock.Advance(std::chrono::seconds(2));
  r.timers.WaitIdle();
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(r.code.has_value());
}

}  // namespace
}  // namespace kplane::kubeletsim
