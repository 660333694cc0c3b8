// EventWindow: the last N changes of a resource, a ring buffer, answering
// "every event after revision R" for watchers that resume (internal to the
// watch cache; the model is kube-apiserver's watchCache cyclic buffer).
//
// A watcher may resume from R when every event after R is still here. Right
// after a (re)list at revision L the window is empty and covers everything
// after L; once the ring has dropped events, it covers everything after the
// newest dropped revision D:
//
//   capacity 3, relist at L = 10:      resumable from >= 10
//   push 11, 12, 12 (a txn of 2 keys): [11 12 12]        resumable >= 10
//   push 13: drops 11                  [12 12 13]  D=11  resumable >= 11
//   push 14: drops one 12              [12 13 14]  D=12  resumable >= 12
//   Since(11) -> 410: an event of revision 12 is gone, though one is left
//   Since(12) -> [13 14];  Since(14) -> [];  Since(20) -> []
//
// Age bound (optional, kube's eventFreshDuration): Expire(now) drops the
// oldest events recorded more than `max_age` before `now`, but never below
// `min_events` events. A burst (2,000 pods starting: ~10,000 events of
// full objects) is kept while watchers may still resume into it, and then
// let go instead of staying until `capacity` newer events push it out,
// which for a resource that goes quiet is never. Dropping by age moves
// resumable_from() exactly as dropping by capacity does.
//
// Thread-safety: none; the cache guards it with its lock.
#ifndef KPLANE_APISERVER_CACHER_EVENT_WINDOW_H_
#define KPLANE_APISERVER_CACHER_EVENT_WINDOW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "apiserver/cacher/cache_event.h"
#include "base/clock.h"
#include "base/logging.h"

namespace kplane::apiserver::internal {

class EventWindow {
 public:
  // `capacity`: at most this many events. `max_age` zero: no age bound.
  explicit EventWindow(size_t capacity, size_t min_events = 0,
                       Duration max_age = Duration(0))
      : ring_(capacity ? capacity : 1),
        min_events_(min_events),
        max_age_(max_age) {}

  // Empties the window after a list at `list_revision`.
  void Reset(int64_t list_revision) {
    for (size_t i = 0; i < size_; ++i)
      ring_[(start_ + i) % ring_.size()].reset();
    start_ = 0;
    size_ = 0;
    resumable_from_ = list_revision;
  }

  // Appends an event (revisions never decrease), dropping the oldest one
  // when full.
  void Push(CacheEventPtr e) {
    DCHECK(size_ == 0 || At(size_ - 1)->revision <= e->revision);
    if (size_ == ring_.size()) {
      resumable_from_ = std::max(resumable_from_, ring_[start_]->revision);
      ring_[start_] = std::move(e);
      start_ = (start_ + 1) % ring_.size();
      return;
    }
    ring_[(start_ + size_) % ring_.size()] = std::move(e);
    ++size_;
  }

  // Drops the oldest events recorded before `now - max_age` while more than
  // `min_events` are left. Returns how many it dropped.
  size_t Expire(TimePoint now) {
    if (max_age_ <= Duration(0)) return 0;
    size_t dropped = 0;
    while (size_ > min_events_ && now - ring_[start_]->recorded > max_age_) {
      resumable_from_ = std::max(resumable_from_, ring_[start_]->revision);
      ring_[start_].reset();
      start_ = (start_ + 1) % ring_.size();
      --size_;
      ++dropped;
    }
    return dropped;
  }

  // The smallest revision a watcher can resume from.
  int64_t resumable_from() const { return resumable_from_; }
  size_t size() const { return size_; }

  // Events with revision > `revision`, oldest first. Requires revision >=
  // resumable_from().
  std::vector<CacheEventPtr> Since(int64_t revision) const {
    // Binary search for the first event newer than `revision`.
    size_t lo = 0, hi = size_;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (At(mid)->revision > revision) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    std::vector<CacheEventPtr> out;
    out.reserve(size_ - lo);
    for (size_t i = lo; i < size_; ++i) out.push_back(At(i));
    return out;
  }

 private:
  const CacheEventPtr& At(size_t i) const {
    return ring_[(start_ + i) % ring_.size()];
  }

  std::vector<CacheEventPtr> ring_;
  size_t start_ = 0;
  size_t size_ = 0;
  const size_t min_events_;
  const Duration max_age_;
  int64_t resumable_from_ = 0;
};

}  // namespace kplane::apiserver::internal

#endif  // KPLANE_APISERVER_CACHER_EVENT_WINDOW_H_
