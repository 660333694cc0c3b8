// WorkerPool: a fixed set of threads running submitted tasks (the HTTP
// server's handler threads). SerialExecutor: runs tasks one at a time and in
// submission order on a WorkerPool, without owning a thread (the server keeps
// one per connection, so a connection's handler, body callbacks and close
// callback never run concurrently or out of order).
//
//   auto pool = std::make_shared<WorkerPool>(4, "http");
//   auto serial = std::make_shared<SerialExecutor>(pool);
//   serial->Post(a);  serial->Post(b);   // b starts after a returns
//
// Ownership: a SerialExecutor holds the pool by shared_ptr, so it may outlive
// whoever created the pool. Shutdown() runs every task already submitted
// (and any they submit in turn) and then joins; afterwards Submit() returns
// false and SerialExecutor::Post() runs the task inline on the caller's
// thread, so callbacks are never silently lost.
//
// Worker threads get an explicit kWorkerStackBytes stack. std::thread would
// take its size from the environment (RLIMIT_STACK; 2 MiB when that is
// unlimited), and handlers need a known budget: recursion over untrusted
// nesting runs at most base/deep_stack.h's kInlineDepth levels here.
//
// Thread-safety: all methods may be called from any thread, including from
// tasks running on the pool. Errors: none.
#ifndef KPLANE_NET_WORKER_POOL_H_
#define KPLANE_NET_WORKER_POOL_H_

#include <pthread.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace kplane::net {

inline constexpr size_t kWorkerStackBytes = size_t{8} << 20;

class WorkerPool {
 public:
  // Starts `threads` (>= 1) threads.
  WorkerPool(int threads, std::string name);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`. Returns false once Shutdown() has finished; the task is
  // then not run and the caller decides what to do instead.
  bool Submit(std::function<void()> task) EXCLUDES(mu_);
  // Runs all queued tasks, then joins the threads. Idempotent. Must not be
  // called from one of the pool's own tasks (it would join itself).
  void Shutdown() EXCLUDES(mu_);

  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Run() EXCLUDES(mu_);
  static void* ThreadMain(void* self);

  std::string name_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool draining_ GUARDED_BY(mu_) = false;
  bool joined_ GUARDED_BY(mu_) = false;
  std::vector<pthread_t> threads_;  // set by the constructor only
  int started_ GUARDED_BY(mu_) = 0;  // names the next thread
};

class SerialExecutor : public std::enable_shared_from_this<SerialExecutor> {
 public:
  explicit SerialExecutor(std::shared_ptr<WorkerPool> pool)
      : pool_(std::move(pool)) {}

  // Runs `task` after every task posted before it has returned.
  void Post(std::function<void()> task) EXCLUDES(mu_);

 private:
  void Drain() EXCLUDES(mu_);

  std::shared_ptr<WorkerPool> pool_;
  // Tasks run without it; Post and Drain take the pool's lock after
  // releasing it.
  Mutex mu_;
  // A vector rather than a deque: an idle connection's executor then
  // allocates nothing (libstdc++'s deque allocates 512 bytes up front).
  std::vector<std::function<void()>> pending_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_WORKER_POOL_H_
