#include "net/worker_pool.h"

#include <pthread.h>

#include "base/logging.h"

namespace kplane::net {

WorkerPool::WorkerPool(int threads, std::string name) : name_(std::move(name)) {
  CHECK_GE(threads, 1);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] {
      std::string tname = (name_ + "-w" + std::to_string(i)).substr(0, 15);
      pthread_setname_np(pthread_self(), tname.c_str());
      Run();
    });
  }
}

WorkerPool::~WorkerPool() { Shutdown(); }

bool WorkerPool::Submit(std::function<void()> task) {
  {
    MutexLock l(&mu_);
    if (joined_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Run() {
  MutexLock l(&mu_);
  for (;;) {
    cv_.wait(l.native(),
             [&]() REQUIRES(mu_) { return !tasks_.empty() || draining_; });
    if (tasks_.empty()) return;  // draining and nothing left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    l.Unlock();
    task();
    task = nullptr;  // destroy captures outside the lock
    l.Lock();
  }
}

void WorkerPool::Shutdown() {
  {
    MutexLock l(&mu_);
    if (draining_) {
      // A concurrent or repeated Shutdown: the first caller joins.
      return;
    }
    draining_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    CHECK(t.get_id() != std::this_thread::get_id())
        << "WorkerPool::Shutdown called from its own task";
    t.join();
  }
  // A task submitted from outside after the last worker left is run here,
  // so none is lost between the workers exiting and joined_ being set.
  MutexLock l(&mu_);
  joined_ = true;
  while (!tasks_.empty()) {
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    l.Unlock();
    task();
    l.Lock();
  }
}

void SerialExecutor::Post(std::function<void()> task) {
  {
    MutexLock l(&mu_);
    pending_.push_back(std::move(task));
    if (running_) return;
    running_ = true;
  }
  auto self = shared_from_this();
  if (!pool_->Submit([self] { self->Drain(); })) Drain();
}

void SerialExecutor::Drain() {
  // Runs a bounded batch, then yields the worker so that one busy connection
  // cannot starve the others.
  constexpr int kBatch = 64;
  std::vector<std::function<void()>> batch;
  int ran = 0;
  for (;;) {
    {
      MutexLock l(&mu_);
      if (pending_.empty()) {
        running_ = false;
        if (pending_.capacity() > 16) pending_.shrink_to_fit();
        return;
      }
      if (ran >= kBatch) break;
      batch.swap(pending_);
    }
    for (auto& t : batch) {
      t();
      t = nullptr;
      ++ran;
    }
    batch.clear();
  }
  auto self = shared_from_this();
  if (!pool_->Submit([self] { self->Drain(); })) Drain();
}

}  // namespace kplane::net
