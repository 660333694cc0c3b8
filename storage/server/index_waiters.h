// IndexWaiters: callbacks waiting, each for at most `max_wait`, until a
// member has applied a raft index, without a thread held per waiter.
//
// For etcd's simple auth tokens ("<prefix>.<raft index>", auth_store.h): a
// member that has not applied the index of a token's Authenticate yet (a
// follower behind the leader that answered the login) waits for it before
// looking the token up, as etcd does. Anyone can send a token naming an
// index far ahead, so a request must not hold a thread while it waits (the
// JSON gateway's I/O thread, a gRPC callback thread): the fronts hand the
// request to Await and go on with it when it is called back.
//
//   IndexWaiters w({.clock = clock, .max_wait = seconds(2)});
//   w.Await(7, [] { /* 7 applied, or 2 s passed: look the token up */ });
//   w.Reached(7);  // as the member applies: the callback above runs
//
// Ownership: owns its thread, started by the first Await and joined by the
// destructor, which drops (does not call) what still waits.
// Thread-safety: every method from any thread. Callbacks run on the
// waiters' thread (Release's caller's for those it releases), outside
// every lock here, each exactly once: keep them short (hand the work to a
// pool).
#ifndef KPLANE_STORAGE_SERVER_INDEX_WAITERS_H_
#define KPLANE_STORAGE_SERVER_INDEX_WAITERS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"

namespace kplane::storage {

class IndexWaiters {
 public:
  struct Options {
    Clock* clock = Clock::Real();
    // How long a callback waits for its index at most.
    Duration max_wait = seconds(2);
    // Callbacks waiting at once at most; Await refuses more.
    int max_waiters = 64;
  };
  explicit IndexWaiters(Options options);
  ~IndexWaiters();
  IndexWaiters(const IndexWaiters&) = delete;
  IndexWaiters& operator=(const IndexWaiters&) = delete;

  // Arranges for `ready` to be called once `index` is Reached or max_wait
  // has passed, and returns true. Returns false, and never calls `ready`,
  // if `index` is reached already, max_waiters wait already, or Release()
  // was called: the caller goes on at once.
  bool Await(uint64_t index, std::function<void()> ready) EXCLUDES(mu_);
  // The applied index is now `index` (smaller values are ignored). Cheap
  // when nothing waits: two atomic operations.
  void Reached(uint64_t index) EXCLUDES(mu_);
  uint64_t reached() const { return reached_.load(); }
  // Blocks (real time, at most `timeout`) until at least `n` callbacks
  // wait; false on timeout. For tests.
  bool WaitForWaiters(size_t n, Duration timeout) EXCLUDES(mu_);
  // Calls every waiting callback now; Await refuses from now on. For a
  // front that stops: a gRPC server's shutdown waits for the calls held.
  void Release() EXCLUDES(mu_);

 private:
  struct Waiter {
    uint64_t index;
    TimePoint deadline;
    std::function<void()> ready;
  };
  void Run() EXCLUDES(mu_);
  void UpdateNextIndex() REQUIRES(mu_);

  const Options options_;
  std::atomic<uint64_t> reached_{0};
  // The smallest index waited for (UINT64_MAX: none), read without mu_ by
  // Reached: the thread wakes only when a waiter's index is reached.
  std::atomic<uint64_t> next_index_{UINT64_MAX};
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool released_ GUARDED_BY(mu_) = false;
  // In deadline order: max_wait is the same for all, so oldest first.
  std::deque<Waiter> waiters_ GUARDED_BY(mu_);
  std::thread thread_ GUARDED_BY(mu_);
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_INDEX_WAITERS_H_
