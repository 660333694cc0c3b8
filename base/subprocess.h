// Subprocess: start, signal and reap a child process.
//
// Used by `kplane up --store-nodes 3` to run store members as separate
// processes, and by end-to-end tests to run real binaries (our own and
// Debian's etcd) on loopback. A Subprocess that is destroyed while its child
// still runs kills it (SIGKILL) and reaps it, so a failing test never leaves
// processes behind. Children also get PR_SET_PDEATHSIG=SIGKILL: if the parent
// dies, so do they. Every fork runs on one internal thread that lives as long
// as the process (the kernel sends PDEATHSIG when the forking *thread* ends),
// so a Subprocess may be started from any thread, short-lived ones included,
// and still gets SIGTERM and its grace period from Stop().
//
//   Subprocess p({"/usr/bin/etcd", "--data-dir", dir}, {.log_path = log});
//   RETURN_IF_ERROR(p.Start());
//   ...
//   p.Signal(SIGTERM); int code = p.Wait();
//
// Thread-safety: not thread-safe; one owner.
#ifndef KPLANE_BASE_SUBPROCESS_H_
#define KPLANE_BASE_SUBPROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kplane {

struct SubprocessOptions {
  // stdout and stderr are appended to this file; empty = inherit ours.
  std::string log_path;
  // Extra environment variables ("NAME=value"), added to ours.
  std::vector<std::string> env;
  std::string working_dir;
};

class Subprocess {
 public:
  Subprocess(std::vector<std::string> argv, SubprocessOptions options = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  Subprocess(Subprocess&& other) noexcept;

  Status Start();
  pid_t pid() const { return pid_; }
  bool running();  // reaps without blocking
  Status Signal(int sig);
  // Blocks until the child exits; returns its exit code, or 128+signal.
  int Wait();
  // SIGTERM, wait up to `grace_ms`, then SIGKILL. Returns the exit code.
  int Stop(int grace_ms = 5000);

  const std::vector<std::string>& argv() const { return argv_; }

 private:
  std::vector<std::string> argv_;
  SubprocessOptions options_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// Path of the running executable's directory (for finding sibling binaries).
std::string SelfExeDir();

}  // namespace kplane

#endif  // KPLANE_BASE_SUBPROCESS_H_
