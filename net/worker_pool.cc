#include "net/worker_pool.h"

#include <pthread.h>

#include <cstring>

#include "base/logging.h"

namespace kplane::net {

WorkerPool::WorkerPool(int threads, std::string name) : name_(std::move(name)) {
  CHECK_GE(threads, 1);
  threads_.reserve(threads);
  pthread_attr_t attr;
  CHECK_EQ(pthread_attr_init(&attr), 0);
  CHECK_EQ(pthread_attr_setstacksize(&attr, kWorkerStackBytes), 0);
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    const int rc = pthread_create(&t, &attr, &WorkerPool::ThreadMain, this);
    CHECK_EQ(rc, 0) << "cannot start worker thread: " << std::strerror(rc);
    threads_.push_back(t);
  }
  pthread_attr_destroy(&attr);
}

void* WorkerPool::ThreadMain(void* self) {
  auto* pool = static_cast<WorkerPool*>(self);
  int index;
  {
    MutexLock l(&pool->mu_);
    index = pool->started_++;
  }
  std::string tname =
      (pool->name_ + "-w" + std::to_string(index)).substr(0, 15);
  pthread_setname_np(pthread_self(), tname.c_str());
  pool->Run();
  return nullptr;
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
  for (pthread_t t : threads_) {
    CHECK(!pthread_equal(t, pthread_self()))
        << "WorkerPool::Shutdown called from its own task";
    pthread_join(t, nullptr);
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
