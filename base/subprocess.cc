#include "base/subprocess.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

extern char** environ;

namespace kplane {
namespace {

// Runs every fork on one thread that lives as long as the process.
// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not
// the process: a child forked on a short-lived thread (a supervisor's
// restart loop, a startup thread) would be SIGKILLed when that thread is
// joined, without the SIGTERM and grace period Stop() gives. Forked here,
// "parent death" means the death of the process, as intended.
class Forker {
 public:
  static Forker& Get() {
    static Forker* forker = new Forker();  // never destroyed, as its thread
    return *forker;
  }

  // Runs `fork_fn` (which forks and returns the pid, or -1 with errno) on
  // the forker thread; returns its result with its errno.
  pid_t Run(const std::function<pid_t()>& fork_fn, int* err) {
    Task task{.fn = &fork_fn};
    std::unique_lock<std::mutex> l(mu_);
    queue_.push_back(&task);
    cv_.notify_all();
    cv_.wait(l, [&] { return task.done; });
    *err = task.err;
    return task.pid;
  }

 private:
  struct Task {
    const std::function<pid_t()>* fn;
    pid_t pid = -1;
    int err = 0;
    bool done = false;
  };

  Forker() {
    // Detached and never joined: it must outlive every Subprocess, up to
    // the process's exit. It blocks every signal, so that none meant for
    // the process (SIGINT a command sigwaits for) is delivered to it; the
    // children unblock them again.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread([this] { Loop(); }).detach();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [&] { return !queue_.empty(); });
      Task* t = queue_.front();
      queue_.erase(queue_.begin());
      errno = 0;
      t->pid = (*t->fn)();
      t->err = errno;
      t->done = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Task*> queue_;
};

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv, SubprocessOptions options)
    : argv_(std::move(argv)), options_(std::move(options)) {}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : argv_(std::move(other.argv_)),
      options_(std::move(other.options_)),
      pid_(other.pid_),
      exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
}

Status Subprocess::Start() {
  if (argv_.empty()) return InvalidArgumentError("empty argv");
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  for (const auto& e : options_.env) env_storage.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int log_fd = -1;
  if (!options_.log_path.empty()) {
    log_fd = ::open(options_.log_path.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return IOError("open " + options_.log_path + ": " + strerror(errno));
    }
  }
  const pid_t parent = ::getpid();
  auto fork_fn = [&]() -> pid_t {
    pid_t pid = ::fork();
    if (pid != 0) return pid;
    // The child: PR_SET_PDEATHSIG ties it to the forker thread, which ends
    // only with the process.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    ::setpgid(0, 0);
    // A new program starts with no signal blocked (as posix_spawn with
    // POSIX_SPAWN_SETSIGMASK, Go's os/exec), whatever the forker blocks.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (log_fd >= 0) {
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!options_.working_dir.empty() &&
        ::chdir(options_.working_dir.c_str()) != 0) {
      _exit(126);
    }
    ::execve(args[0], args.data(), envp.data());
    // execve only returns on failure; try PATH lookup.
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  };
  int fork_errno = 0;
  const pid_t pid = Forker::Get().Run(fork_fn, &fork_errno);
  if (pid < 0) {
    if (log_fd >= 0) ::close(log_fd);
    return IOError(std::string("fork: ") + strerror(fork_errno));
  }
  if (log_fd >= 0) ::close(log_fd);
  pid_ = pid;
  exit_code_.reset();
  return Status::Ok();
}

bool Subprocess::running() {
  if (pid_ <= 0 || exit_code_) return false;
  int status;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

Status Subprocess::Signal(int sig) {
  if (pid_ <= 0 || exit_code_) return FailedPreconditionError("not running");
  if (::kill(pid_, sig) != 0) {
    return IOError(std::string("kill: ") + strerror(errno));
  }
  return Status::Ok();
}

int Subprocess::Wait() {
  if (exit_code_) return *exit_code_;
  if (pid_ <= 0) return -1;
  int status;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return *exit_code_;
}

int Subprocess::Stop(int grace_ms) {
  if (!running()) return exit_code_.value_or(-1);
  ::kill(pid_, SIGTERM);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  // Polling here waits on another process, which offers no event to await
  // short of a pidfd; 5 ms steps keep shutdown prompt.
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (running()) ::kill(pid_, SIGKILL);
  return Wait();
}

std::string SelfExeDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace kplane
