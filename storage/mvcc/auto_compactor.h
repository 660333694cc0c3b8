// AutoCompactor: decides when to compact and to which revision, as etcd's
// --auto-compaction-mode, on the injected Clock. It calls a caller-supplied
// function to compact, so the standalone store can compact itself while the
// replicated server proposes the compaction through raft (every replica must
// compact at the same revision).
//
//   revision  every `revision_interval` (etcd: 5 min), compact to
//             current - retention_revisions, if that moved since last time.
//   periodic  sample the revision every period/10 (at most every 6 min); once
//             a period has passed since the start or the last success,
//             compact to the revision sampled `period` ago, then again every
//             min(period, 1 h). Example, period 1 h: at t=1h compact to the
//             revision of t=0, at t=2h to that of t=1h, ...
//
// Compacted answers (somebody compacted further already) count as success.
//
// Thread-safety: Start/Stop from the owner; the loop runs on its own thread.
#ifndef KPLANE_STORAGE_MVCC_AUTO_COMPACTOR_H_
#define KPLANE_STORAGE_MVCC_AUTO_COMPACTOR_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"

namespace kplane::mvcc {

enum class AutoCompactionMode { kNone, kRevision, kPeriodic };

struct AutoCompactionOptions {
  AutoCompactionMode mode = AutoCompactionMode::kNone;
  int64_t retention_revisions = 0;          // kRevision: keep the last N
  Duration retention_period = hours(1);     // kPeriodic: keep this window
  Duration revision_interval = minutes(5);  // kRevision: how often to look
};

class AutoCompactor {
 public:
  AutoCompactor(Clock* clock, AutoCompactionOptions options,
                std::function<int64_t()> current_revision,
                std::function<Status(int64_t)> compact);
  ~AutoCompactor();

  void Start();
  void Stop() EXCLUDES(mu_);

  // Number of wake-ups handled so far; tests await a count instead of
  // sleeping.
  int64_t ticks() const EXCLUDES(mu_);
  void WaitForTicks(int64_t n) const EXCLUDES(mu_);

 private:
  void RunRevision();
  void RunPeriodic();
  // Waits `d` on the clock; false when stopped.
  bool Wait(Duration d) EXCLUDES(mu_);
  void Tick() EXCLUDES(mu_);

  Clock* const clock_;
  const AutoCompactionOptions options_;
  const std::function<int64_t()> current_revision_;
  const std::function<Status(int64_t)> compact_;

  mutable Mutex mu_;
  mutable std::condition_variable cv_;
  bool stopped_ GUARDED_BY(mu_) = false;
  int64_t ticks_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_AUTO_COMPACTOR_H_
