#include "informer/workqueue.h"

#include <chrono>

namespace kplane::informer {

namespace {

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// client-go's buckets: 1e-8 s .. ~1e1 s by powers of ten.
std::vector<double> DurationBuckets() {
  return metrics::ExponentialBuckets(1e-8, 10, 10);
}

}  // namespace

struct WorkQueue::Metrics {
  metrics::Gauge* depth;
  metrics::Counter* adds;
  metrics::Histogram* queue_duration;
  metrics::Histogram* work_duration;
};

WorkQueue::WorkQueue(WorkQueueOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      registry_(options_.metrics != nullptr ? options_.metrics
                                            : metrics::Registry::Default()) {
  if (!options_.name.empty()) {
    const std::vector<std::string> label = {options_.name};
    metrics_ = std::make_unique<Metrics>(Metrics{
        .depth = registry_
                     ->NewGauge("workqueue_depth", "Current depth of workqueue",
                                {"name"})
                     ->With(label),
        .adds = registry_
                    ->NewCounter("workqueue_adds_total",
                                 "Total number of adds handled by workqueue",
                                 {"name"})
                    ->With(label),
        .queue_duration =
            registry_
                ->NewHistogram("workqueue_queue_duration_seconds",
                               "How long in seconds an item stays in "
                               "workqueue before being requested.",
                               {"name"}, DurationBuckets())
                ->With(label),
        .work_duration =
            registry_
                ->NewHistogram("workqueue_work_duration_seconds",
                               "How long in seconds processing an item from "
                               "workqueue takes.",
                               {"name"}, DurationBuckets())
                ->With(label),
    });
  }
}

WorkQueue::~WorkQueue() { WorkQueue::ShutDown(); }

void WorkQueue::Add(const std::string& key) {
  MutexLock l(&mu_);
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;  // already waiting
  if (metrics_) metrics_->adds->Inc();
  added_at_.emplace(key, clock_->Now());
  if (processing_.count(key) != 0) return;  // re-queued by Done()
  queue_.push_back(key);
  if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
  cv_.notify_one();
}

std::optional<std::string> WorkQueue::Get() {
  MutexLock l(&mu_);
  cv_.wait(l.native(),
           [&]() REQUIRES(mu_) { return !queue_.empty() || shutting_down_; });
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  const TimePoint now = clock_->Now();
  auto added = added_at_.find(key);
  if (added != added_at_.end()) {
    if (metrics_)
      metrics_->queue_duration->Observe(Seconds(now - added->second));
    added_at_.erase(added);
  }
  started_at_[key] = now;
  if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
  return key;
}

void WorkQueue::Done(const std::string& key) {
  MutexLock l(&mu_);
  if (processing_.erase(key) == 0) return;
  auto started = started_at_.find(key);
  if (started != started_at_.end()) {
    if (metrics_) {
      metrics_->work_duration->Observe(
          Seconds(clock_->Now() - started->second));
    }
    started_at_.erase(started);
  }
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    if (metrics_) metrics_->depth->Set(static_cast<double>(queue_.size()));
    cv_.notify_one();
  }
  if (processing_.empty()) drain_cv_.notify_all();
}

int WorkQueue::Len() const {
  MutexLock l(&mu_);
  return static_cast<int>(queue_.size());
}

void WorkQueue::ShutDown() {
  MutexLock l(&mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  MutexLock l(&mu_);
  shutting_down_ = true;
  cv_.notify_all();
  drain_cv_.wait(l.native(),
                 [&]() REQUIRES(mu_) { return processing_.empty(); });
}

bool WorkQueue::ShuttingDown() const {
  MutexLock l(&mu_);
  return shutting_down_;
}

// ---------------------------------------------------------------------------

DelayingQueue::DelayingQueue(WorkQueueOptions options)
    : WorkQueue(std::move(options)) {
  wait_thread_ = std::thread([this] { WaitLoop(); });
}

DelayingQueue::~DelayingQueue() { StopWaitLoop(); }

void DelayingQueue::AddAfter(const std::string& key, Duration delay) {
  if (ShuttingDown()) return;
  if (delay.count() <= 0) {
    Add(key);
    return;
  }
  // Held at the clock's end: a delay from an object's deadline (seconds a
  // client chose) may be too long to add.
  const TimePoint now = clock()->Now();
  const TimePoint due =
      delay >= TimePoint::max() - now ? TimePoint::max() : now + delay;
  MutexLock l(&wait_mu_);
  auto it = ready_at_.find(key);
  if (it != ready_at_.end()) {
    if (it->second <= due) return;  // already due sooner
    due_.erase({it->second, key});
    it->second = due;
  } else {
    ready_at_.emplace(key, due);
  }
  due_.insert({due, key});
  wait_cv_.notify_all();
}

int DelayingQueue::NumWaiting() const {
  MutexLock l(&wait_mu_);
  return static_cast<int>(ready_at_.size());
}

void DelayingQueue::WaitLoop() {
  MutexLock l(&wait_mu_);
  while (!stop_waiting_) {
    const TimePoint now = clock()->Now();
    while (!due_.empty() && due_.begin()->first <= now) {
      std::string key = due_.begin()->second;
      due_.erase(due_.begin());
      ready_at_.erase(key);
      // Lock order is wait_mu_ -> WorkQueue::mu_; the base never calls back.
      Add(key);
    }
    if (due_.empty()) {
      wait_cv_.wait(l.native(), [&]() REQUIRES(wait_mu_) {
        return stop_waiting_ || !due_.empty();
      });
      continue;
    }
    const std::pair<TimePoint, std::string> first = *due_.begin();
    // Wake for the deadline, for an earlier key, or to stop.
    clock()->WaitUntil(
        l.native(), wait_cv_, first.first, [&]() REQUIRES(wait_mu_) {
          return stop_waiting_ || due_.empty() || *due_.begin() != first;
        });
  }
}

void DelayingQueue::StopWaitLoop() {
  {
    MutexLock l(&wait_mu_);
    stop_waiting_ = true;
    ready_at_.clear();
    due_.clear();
  }
  wait_cv_.notify_all();
  if (wait_thread_.joinable()) wait_thread_.join();
}

void DelayingQueue::ShutDown() {
  WorkQueue::ShutDown();
  StopWaitLoop();
}

void DelayingQueue::ShutDownWithDrain() {
  StopWaitLoop();
  WorkQueue::ShutDownWithDrain();
}

// ---------------------------------------------------------------------------

RateLimitingQueue::RateLimitingQueue(WorkQueueOptions options,
                                     std::unique_ptr<RateLimiter> limiter)
    : DelayingQueue(std::move(options)), limiter_(std::move(limiter)) {
  if (limiter_ == nullptr) limiter_ = DefaultControllerRateLimiter(clock());
  if (!name().empty()) {
    retries_ = registry()
                   ->NewCounter("workqueue_retries_total",
                                "Total number of retries handled by workqueue",
                                {"name"})
                   ->With({name()});
  }
}

RateLimitingQueue::~RateLimitingQueue() = default;

void RateLimitingQueue::AddRateLimited(const std::string& key) {
  if (retries_ != nullptr) retries_->Inc();
  AddAfter(key, limiter_->When(key));
}

void RateLimitingQueue::Forget(const std::string& key) {
  limiter_->Forget(key);
}

int RateLimitingQueue::NumRequeues(const std::string& key) const {
  return limiter_->NumRequeues(key);
}

}  // namespace kplane::informer
