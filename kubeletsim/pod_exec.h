// The simulated kubelet's exec: `kubectl exec` into a pod on a simulated
// node runs a tiny simulated shell here. No process is ever started; every
// command is a few lines of C++ over the pod's spec.
//
//   ExecSession s(env, {.argv = {"sh", "-c", "echo hi; exit 3"}}, &timers,
//                 emit, done);
//   s.Start();  // emit(1, "hi\n"), then done(3)
//
// Commands (argv[0]; a path's last element counts: /bin/echo is echo):
//   echo [-n] ARGS   env, printenv [NAME]  (the container's env: value only;
//   valueFrom is shown empty)   hostname (the pod's name)   ls [-l] [PATH]
//   (a fixed root listing)   cat FILE (/etc/hostname, /etc/os-release;
//   others: "No such file or directory", 1)   cat (no file: copies stdin)
//   date   pwd   whoami   id   true   false   sleep N (seconds, at most
//   kMaxSleep; on the fleet's timers)   exit [N]   sh|bash -c 'SCRIPT'
//   sh|bash (no -c): reads lines from stdin and runs each as a script,
//   with a "/ # " prompt under a TTY, until `exit` or the end of stdin.
//   Anything else: "<name>: command not found" on stderr, status 127.
// A script is `;`-separated simple commands; words split on blanks with
// '...' and "..." quoting and backslash escapes; $NAME, ${NAME} and $? are
// expanded (from the container's env). No pipes, redirections or globbing.
//
// Bounds: a stdin line of at most kMaxLine bytes (longer: cut there), at
// most kMaxPendingInput bytes of stdin waiting while a command sleeps (more
// ends the session with status 1), a script of at most kMaxScript bytes
// whose variables expand to at most kMaxExpansion bytes per command list
// and whose commands write at most kMaxScriptOutput bytes (past either:
// status 2 and a message on stderr), `sh -c` nested at most kMaxShellDepth
// deep (a variable may hold `sh -c "$SELF"`).
//
// Thread-safety: ExecSession's methods may be called from any thread (one
// mutex); `emit` and `done` are called without it held, in order, never
// after done. RunScript/RunCommand are pure.
#ifndef KPLANE_KUBELETSIM_POD_EXEC_H_
#define KPLANE_KUBELETSIM_POD_EXEC_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "kubeletsim/timer_queue.h"

namespace kplane::kubeletsim {

inline constexpr Duration kMaxSleep = std::chrono::seconds(3600);
inline constexpr size_t kMaxLine = 4096;
inline constexpr size_t kMaxPendingInput = 64 * 1024;
inline constexpr size_t kMaxScript = 64 * 1024;
inline constexpr size_t kMaxExpansion = 64 * 1024;
inline constexpr size_t kMaxScriptOutput = 1024 * 1024;
inline constexpr int kMaxShellDepth = 8;

// What the shell sees of its container.
struct ShellEnv {
  std::string hostname;  // the pod's name
  std::vector<std::pair<std::string, std::string>> env;
  std::function<WallTime()> now;  // for date; unset: the real time
};

struct ShellAction {
  enum Kind { kStdout, kStderr, kSleep } kind;
  std::string text;
  Duration sleep{};
};
struct ShellResult {
  std::vector<ShellAction> actions;
  int status = 0;       // of the last command
  bool exited = false;  // `exit` ran: the shell ends with `status`
};

// One command with its words (exec's command); `last_status` is $?.
// `depth` counts the `sh -c` levels around it.
ShellResult RunCommand(const ShellEnv& env,
                       const std::vector<std::string>& argv, int last_status,
                       int depth = 0);
// A script line (see the file comment).
ShellResult RunScript(const ShellEnv& env, std::string_view script,
                      int last_status, int depth = 0);

// The exec of one command, as the kubelet's remotecommand server runs it.
struct ExecCommand {
  std::vector<std::string> argv;  // never empty
  bool stdin = false;
  bool tty = false;
};

// kube's exit status on the error channel: {"status":"Success"} or the
// NonZeroExitCode Status with details.causes[{reason: ExitCode}].
std::string ExecStatusJson(const std::vector<std::string>& argv, int code);

// Owned by a shared_ptr (timers hold weak references).
class ExecSession : public std::enable_shared_from_this<ExecSession> {
 public:
  // emit(channel, bytes): 1 stdout, 2 stderr (stdout under a TTY).
  // done(code): the command ended (once).
  ExecSession(ShellEnv env, ExecCommand cmd, TimerQueue* timers,
              std::function<void(uint8_t, std::string)> emit,
              std::function<void(int)> done);
  ~ExecSession();
  ExecSession(const ExecSession&) = delete;
  ExecSession& operator=(const ExecSession&) = delete;

  void Start() EXCLUDES(mu_, deliver_mu_);
  // Stdin bytes; eof: the client closed stdin.
  void OnStdin(std::string_view data, bool eof) EXCLUDES(mu_, deliver_mu_);
  // The client left: no more emit/done; a pending sleep is cancelled.
  void Cancel() EXCLUDES(mu_);

 private:
  enum class Mode { kOnce, kShell, kCat };
  struct Out {
    uint8_t channel;
    std::string text;
  };
  // Plays queued actions until a sleep or the end; collects the output
  // and the end into *out / *end for the caller to deliver unlocked.
  void PlayLocked(std::vector<Out>* out, std::optional<int>* end) REQUIRES(mu_);
  // Calls emit/done (deliver_mu_ held by the caller since before it
  // computed `out`, so outputs leave in the order they were made).
  void Deliver(std::vector<Out> out, std::optional<int> end)
      REQUIRES(deliver_mu_) EXCLUDES(mu_);
  void Wake() EXCLUDES(mu_, deliver_mu_);
  std::string Tty(std::string s) const;

  const ShellEnv env_;
  const ExecCommand cmd_;
  TimerQueue* const timers_;
  const std::function<void(uint8_t, std::string)> emit_;
  const std::function<void(int)> done_;
  Mode mode_ = Mode::kOnce;

  Mutex deliver_mu_ ACQUIRED_BEFORE(mu_);  // keeps emit/done in order
  Mutex mu_;
  std::deque<ShellAction> actions_ GUARDED_BY(mu_);
  std::string input_ GUARDED_BY(mu_);  // stdin not yet run
  bool input_eof_ GUARDED_BY(mu_) = false;
  int status_ GUARDED_BY(mu_) = 0;
  bool exit_after_actions_ GUARDED_BY(mu_) = false;
  bool sleeping_ GUARDED_BY(mu_) = false;
  TimerId timer_ GUARDED_BY(mu_) = 0;
  bool finished_ GUARDED_BY(mu_) = false;
  bool cancelled_ GUARDED_BY(mu_) = false;
};

}  // namespace kplane::kubeletsim

#endif  // KPLANE_KUBELETSIM_POD_EXEC_H_
