#include "kubeletsim/timer_queue.h"

#include <utility>

namespace kplane::kubeletsim {

TimerQueue::TimerQueue(Clock* clock)
    : clock_(clock != nullptr ? clock : Clock::Real()) {
  thread_ = std::thread([this] { Run(); });
}

TimerQueue::~TimerQueue() { Stop(); }

TimerId TimerQueue::Schedule(TimePoint due, std::function<void(TimePoint)> fn) {
  MutexLock l(&mu_);
  if (stopped_) return 0;
  TimerId id = next_seq_++;
  live_.insert(id);
  bool earliest = heap_.empty() || due < heap_.top().due;
  heap_.push(Entry{due, id, std::move(fn)});
  if (earliest) {
    ++changes_;
    cv_.notify_all();
  }
  return id;
}

void TimerQueue::Cancel(TimerId id) {
  if (id == 0) return;
  MutexLock l(&mu_);
  if (live_.erase(id) > 0) DropCancelledTop();
  idle_cv_.notify_all();
}

void TimerQueue::DropCancelledTop() {
  while (!heap_.empty()) {
    if (live_.count(heap_.top().seq) > 0) return;
    heap_.pop();
  }
}

size_t TimerQueue::Pending() const {
  MutexLock l(&mu_);
  return live_.size();
}

TimePoint TimerQueue::NextDue() const {
  MutexLock l(&mu_);
  return heap_.empty() ? TimePoint::max() : heap_.top().due;
}

void TimerQueue::WaitIdle() const {
  MutexLock l(&mu_);
  idle_cv_.wait(l.native(), [&]() REQUIRES(mu_) {
    return stopped_ ||
           (!firing_ && (heap_.empty() || heap_.top().due > clock_->Now()));
  });
}

void TimerQueue::Stop() {
  {
    MutexLock l(&mu_);
    stopped_ = true;
    cv_.notify_all();
    idle_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  MutexLock l(&mu_);
  heap_ = {};
  live_.clear();
}

void TimerQueue::Run() {
  MutexLock l(&mu_);
  while (!stopped_) {
    DropCancelledTop();
    if (heap_.empty() || heap_.top().due > clock_->Now()) {
      idle_cv_.notify_all();
    }
    if (heap_.empty()) {
      cv_.wait(l.native(),
               [&]() REQUIRES(mu_) { return stopped_ || !heap_.empty(); });
      continue;
    }
    TimePoint due = heap_.top().due;
    if (clock_->Now() < due) {
      uint64_t seen = changes_;
      clock_->WaitUntil(l.native(), cv_, due, [&]() REQUIRES(mu_) {
        return stopped_ || changes_ != seen;
      });
      continue;  // re-evaluate: woken by time, a new earlier timer or Stop
    }
    Entry e = std::move(const_cast<Entry&>(heap_.top()));
    heap_.pop();
    live_.erase(e.seq);
    firing_ = true;
    l.Unlock();
    e.fn(e.due);
    l.Lock();
    firing_ = false;
  }
}

}  // namespace kplane::kubeletsim
