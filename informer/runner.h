// Runner: N worker threads running a controller's Sync(key) over a
// rate-limited work queue (the loop every client-go controller writes by
// hand: processNextWorkItem / handleErr).
//
//   RateLimitingQueue queue({.name = "deployment", .clock = clock});
//   Runner runner(&queue, [&](const std::string& key) { return Sync(key); },
//                 {.name = "deployment", .workers = 5, .max_retries = 15});
//   informer->AddEventHandler(... queue.Add(ObjectKey(*obj)) ...);
//   factory.WaitForCacheSync();
//   runner.Start();
//   ...
//   runner.Stop();   // shuts the queue down and joins the workers
//
// Per key: Sync OK -> Forget (its failure count resets); Sync error ->
// AddRateLimited (per-key exponential backoff, overall bucket); after
// `max_retries` consecutive failures (0 = never) the key is dropped and
// forgotten, logged, until something adds it again. Done() always follows,
// so the queue never hands one key to two workers at once: Sync(key) is
// never run concurrently for the same key.
//
// Ownership: borrows the queue, which must outlive the runner.
// Thread-safety: Start/Stop from the owner; stats() from any thread. Sync
// runs on the worker threads, concurrently for different keys.
#ifndef KPLANE_INFORMER_RUNNER_H_
#define KPLANE_INFORMER_RUNNER_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "informer/workqueue.h"

namespace kplane::informer {

using SyncFunc = std::function<Status(const std::string& key)>;

struct RunnerOptions {
  std::string name = "runner";
  int workers = 1;
  int max_retries = 0;  // 0: retry forever
};

class Runner {
 public:
  struct Stats {
    int64_t synced = 0;   // Sync returned OK
    int64_t failed = 0;   // Sync returned an error
    int64_t dropped = 0;  // gave up after max_retries
  };

  Runner(RateLimitingQueue* queue, SyncFunc sync, RunnerOptions options = {});
  ~Runner();  // Stop()s
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  void Start();
  // Shuts the queue down, lets the workers finish what is queued and
  // running, and joins them.
  void Stop();
  Stats stats() const;

 private:
  void Work();

  RateLimitingQueue* const queue_;
  const SyncFunc sync_;
  const RunnerOptions options_;
  std::vector<std::thread> workers_;
  std::atomic<int64_t> synced_{0}, failed_{0}, dropped_{0};
};

}  // namespace kplane::informer

#endif  // KPLANE_INFORMER_RUNNER_H_
