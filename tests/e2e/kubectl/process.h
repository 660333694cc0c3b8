// Test support for the kubectl suite: run a program to completion and
// capture its output, or run one in the background and read its stdout
// line by line (for `kubectl get -w` and for the apiserver's "serving on"
// line). Reads wait on the pipes with poll(), never sleep; deadlines only
// turn a hang into a failure. Children die with the test process
// (PR_SET_PDEATHSIG) and are killed and reaped by the destructor.
//
// Thread-safety: one owner per object.
#ifndef KPLANE_TESTS_E2E_KUBECTL_PROCESS_H_
#define KPLANE_TESTS_E2E_KUBECTL_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/logging.h"

namespace kplane::e2e {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class Process {
 public:
  // `stderr_path`: append the child's stderr to this file instead of a
  // pipe (for a long-running server whose logs nobody reads).
  Process(std::vector<std::string> argv, std::vector<std::string> env = {},
          std::string stderr_path = "")
      : argv_(std::move(argv)),
        env_(std::move(env)),
        stderr_path_(std::move(stderr_path)) {}
  ~Process() { Kill(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void Start() {
    int out[2], err[2];
    CHECK(pipe2(out, O_CLOEXEC) == 0);
    CHECK(pipe2(err, O_CLOEXEC) == 0);
    const pid_t parent = getpid();
    pid_ = fork();
    CHECK(pid_ >= 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      dup2(out[1], 1);
      if (!stderr_path_.empty()) {
        int fd =
            open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) dup2(fd, 2);
      } else {
        dup2(err[1], 2);
      }
      for (const std::string& e : env_) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (std::string& a : argv_) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
  }

  // The next stdout line (without '\n'); nullopt on EOF or timeout.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t nl = out_.find('\n');
      if (nl != std::string::npos) {
        std::string line = out_.substr(0, nl);
        out_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !Pump(left)) return std::nullopt;
    }
  }

  // Reads both pipes until EOF, then reaps.
  RunResult Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        Kill();
        break;
      }
      Pump(left);
    }
    RunResult r;
    r.out = std::move(out_);
    r.err = std::move(err_);
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
      r.exit_code =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return r;
  }

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  // The child's pid while it runs (not yet reaped); -1 otherwise.
  pid_t pid() const { return pid_; }

  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    CloseFd(&out_fd_);
    CloseFd(&err_fd_);
  }

 private:
  static void CloseFd(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  // Waits for output on either pipe and appends it; false at EOF of stdout
  // with nothing left, or on timeout.
  bool Pump(std::chrono::milliseconds timeout) {
    pollfd p[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (out_fd_ < 0 && err_fd_ < 0) return false;
    int n = poll(p, 2, static_cast<int>(timeout.count()));
    if (n <= 0) return false;
    char buf[65536];
    bool any = false;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        continue;
      }
      ssize_t got = read(p[i].fd, buf, sizeof(buf));
      if (got <= 0) {
        CloseFd(i == 0 ? &out_fd_ : &err_fd_);
        continue;
      }
      (i == 0 ? out_ : err_).append(buf, static_cast<size_t>(got));
      any = true;
    }
    return any || out_fd_ >= 0 || err_fd_ >= 0;
  }

  std::vector<std::string> argv_;
  std::vector<std::string> env_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
};

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_KUBECTL_PROCESS_H_
