// WatchBufferBudget: one ceiling on the bytes that all watch streams of an
// ApiServer hold in their connections' output buffers together.
//
// Each watch is paced to a small buffer of its own (HttpWatchSink), but
// thousands of watches that never read would still add up. When the
// watches' buffers together pass `max_total_bytes`, the budget closes the
// watches holding the most unsent bytes until the total is back under it.
// Why those: a client that reads keeps its buffer near empty, one that
// stopped reading keeps it full, so the biggest buffers belong to the
// clients furthest behind, and closing them frees the most memory while
// well-behaved watches go on. (Refusing to buffer more instead would stall
// every reader behind the stuck clients until those time out.) A closed
// client sees its connection end and re-watches from its last
// resourceVersion, or relists, as after any dropped watch.
//
// Cost: members' buffer sizes are only summed when the bytes written since
// the last sum could have passed the ceiling, so a server far below it
// never scans, and one near it scans once per (ceiling - total) bytes.
//
// Ownership: members are Responders shared with their HTTP exchange; the
// budget holds them from Add to Remove.
// Thread-safety: all methods may be called from any thread.
#ifndef KPLANE_APISERVER_WATCH_BUDGET_H_
#define KPLANE_APISERVER_WATCH_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "base/metrics.h"
#include "base/mutex.h"
#include "net/http_server.h"

namespace kplane::apiserver {

class WatchBufferBudget {
 public:
  // max_total_bytes 0: no ceiling. `closed` (may be null) counts the
  // watches closed for the budget.
  WatchBufferBudget(size_t max_total_bytes, metrics::Counter* closed);

  uint64_t Add(std::shared_ptr<net::Responder> member) EXCLUDES(mu_);
  void Remove(uint64_t id) EXCLUDES(mu_);
  // A member queued `bytes` more; may close members (never the caller's
  // thread's locks: Responder::Close only schedules work).
  void Charge(size_t bytes) EXCLUDES(mu_);

  size_t max_total_bytes() const { return max_total_; }

 private:
  void Rebalance() EXCLUDES(mu_);

  const size_t max_total_;
  metrics::Counter* const closed_;
  // Bytes charged since the last sum; with last_total_ an upper bound of
  // the real total (buffers only shrink between charges).
  std::atomic<size_t> charged_{0};
  std::atomic<size_t> last_total_{0};

  Mutex mu_;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::unordered_map<uint64_t, std::shared_ptr<net::Responder>> members_
      GUARDED_BY(mu_);
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_WATCH_BUDGET_H_
