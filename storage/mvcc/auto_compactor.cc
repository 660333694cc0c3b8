#include "storage/mvcc/auto_compactor.h"

#include <algorithm>
#include <deque>

#include "base/logging.h"

namespace kplane::mvcc {

AutoCompactor::AutoCompactor(Clock* clock, AutoCompactionOptions options,
                             std::function<int64_t()> current_revision,
                             std::function<Status(int64_t)> compact)
    : clock_(clock),
      options_(options),
      current_revision_(std::move(current_revision)),
      compact_(std::move(compact)) {}

AutoCompactor::~AutoCompactor() { Stop(); }

void AutoCompactor::Start() {
  if (options_.mode == AutoCompactionMode::kNone) return;
  CHECK(!thread_.joinable());
  thread_ = std::thread([this] {
    if (options_.mode == AutoCompactionMode::kRevision) {
      RunRevision();
    } else {
      RunPeriodic();
    }
  });
}

void AutoCompactor::Stop() {
  {
    MutexLock l(&mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

int64_t AutoCompactor::ticks() const {
  MutexLock l(&mu_);
  return ticks_;
}

void AutoCompactor::WaitForTicks(int64_t n) const {
  MutexLock l(&mu_);
  cv_.wait(l.native(), [&]() REQUIRES(mu_) { return ticks_ >= n || stopped_; });
}

bool AutoCompactor::Wait(Duration d) {
  MutexLock l(&mu_);
  TimePoint deadline = clock_->Now() + d;
  clock_->WaitUntil(l.native(), cv_, deadline,
                    [&]() REQUIRES(mu_) { return stopped_; });
  return !stopped_;
}

void AutoCompactor::Tick() {
  MutexLock l(&mu_);
  ++ticks_;
  cv_.notify_all();
}

void AutoCompactor::RunRevision() {
  int64_t last = 0;
  while (Wait(options_.revision_interval)) {
    int64_t rev = current_revision_() - options_.retention_revisions;
    if (rev > 0 && rev != last) {
      Status st = compact_(rev);
      if (st.ok() || st.Is(StatusCode::kCompacted)) {
        last = rev;
        LOG(INFO) << "auto-compaction (revision mode) at revision " << rev;
      } else {
        LOG(WARNING) << "auto-compaction at revision " << rev
                     << " failed: " << st;
      }
    }
    Tick();
  }
}

void AutoCompactor::RunPeriodic() {
  const Duration period = options_.retention_period;
  const Duration compact_interval = std::min<Duration>(period, hours(1));
  const Duration retry_interval =
      std::max<Duration>(compact_interval / 10, milliseconds(1));
  // One sample per retry interval over one period: when a compaction is
  // due, revs.front() was sampled exactly `period` ago.
  const size_t retentions =
      std::max<size_t>(1, static_cast<size_t>(period / retry_interval));

  std::deque<int64_t> revs;
  TimePoint last_success = clock_->Now();
  Duration base_interval = period;
  while (true) {
    revs.push_back(current_revision_());
    if (revs.size() > retentions) revs.pop_front();
    if (!Wait(retry_interval)) return;
    if (clock_->Now() - last_success < base_interval) {
      Tick();
      continue;
    }
    // The first compaction waits a whole period; later ones come every
    // compact_interval.
    base_interval = compact_interval;
    int64_t rev = revs.front();
    Status st = rev > 0 ? compact_(rev) : Status::Ok();
    if (st.ok() || st.Is(StatusCode::kCompacted)) {
      last_success = clock_->Now();
      if (rev > 0) {
        LOG(INFO) << "auto-compaction (periodic mode) at revision " << rev;
      }
    } else {
      LOG(WARNING) << "auto-compaction at revision " << rev << " failed: " << st
                   << "; retrying";
    }
    Tick();
  }
}

}  // namespace kplane::mvcc
