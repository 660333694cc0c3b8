// Prometheus-style metrics: counters, gauges and histograms with labels, and
// the text exposition format (version 0.0.4) served on /metrics.
//
//   auto* requests = metrics::Registry::Default()->NewCounter(
//       "apiserver_request_total", "Requests by verb and code.",
//       {"verb", "code"});
//   requests->With({"GET", "200"})->Inc();
//
//   auto* fsync = registry->NewHistogram("wal_fsync_duration_seconds", "...",
//       {}, metrics::ExponentialBuckets(0.0001, 2, 16));
//   fsync->With({})->Observe(0.00042);
//
// Families and their children live as long as the registry; the pointers
// returned are stable. Registering the same name twice returns the first
// family (so two components of one process can share a metric).
//
// Thread-safety: everything is safe to call concurrently. Inc/Set/Observe are
// lock-free on the hot path once a child exists.
#ifndef KPLANE_BASE_METRICS_H_
#define KPLANE_BASE_METRICS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace kplane::metrics {

class Counter {
 public:
  void Inc(double v = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1.0);
  void Dec(double v = 1.0) { Inc(-v); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  // Snapshot for rendering and tests: cumulative counts per bound (+Inf last).
  std::vector<uint64_t> CumulativeCounts() const;
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

std::vector<double> ExponentialBuckets(double start, double factor, int count);
std::vector<double> LinearBuckets(double start, double width, int count);
// Kubernetes' request-latency buckets (seconds).
std::vector<double> DefaultLatencyBuckets();

template <typename T>
class Family {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;
  Family(std::string name, std::string help, std::vector<std::string> labels,
         Factory factory)
      : name_(std::move(name)),
        help_(std::move(help)),
        labels_(std::move(labels)),
        factory_(std::move(factory)) {}

  // The child for these label values (one per label name, in order).
  T* With(const std::vector<std::string>& values) EXCLUDES(mu_);

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return labels_; }
  // Calls fn(label values, child) for every child, in label order.
  void ForEach(const std::function<void(const std::vector<std::string>&,
                                        const T&)>& fn) const EXCLUDES(mu_);

 private:
  std::string name_, help_;
  std::vector<std::string> labels_;
  Factory factory_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_
      GUARDED_BY(mu_);
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  static Registry* Default();

  Family<Counter>* NewCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> labels = {})
      EXCLUDES(mu_);
  Family<Gauge>* NewGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> labels = {}) EXCLUDES(mu_);
  Family<Histogram>* NewHistogram(const std::string& name,
                                  const std::string& help,
                                  std::vector<std::string> labels,
                                  std::vector<double> buckets) EXCLUDES(mu_);
  // A gauge whose value is computed when /metrics is rendered.
  void NewCallbackGauge(const std::string& name, const std::string& help,
                        std::function<double()> fn) EXCLUDES(mu_);
  // The same for a counter (a total kept elsewhere, e.g. by the kernel).
  void NewCallbackCounter(const std::string& name, const std::string& help,
                          std::function<double()> fn) EXCLUDES(mu_);

  // The Prometheus text format, families sorted by name.
  std::string Render() const EXCLUDES(mu_);

 private:
  // Lock order: mu_ -> a family's mu_ (Render walks the families).
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Family<Counter>>> counters_
      GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Family<Gauge>>> gauges_ GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Family<Histogram>>> histograms_
      GUARDED_BY(mu_);
  struct Callback {
    std::string help;
    const char* type;  // "gauge" or "counter"
    std::function<double()> fn;
  };
  std::map<std::string, Callback> callbacks_ GUARDED_BY(mu_);
};

// Measures the time from construction to destruction into a histogram, in
// seconds, on the real monotonic clock (metrics are observations, not logic).
class ScopedTimer {
 public:
  explicit ScopedTimer(Histogram* h);
  ~ScopedTimer();

 private:
  Histogram* h_;
  int64_t start_ns_;
};

template <typename T>
T* Family<T>::With(const std::vector<std::string>& values) {
  MutexLock l(&mu_);
  auto it = children_.find(values);
  if (it == children_.end()) {
    it = children_.emplace(values, factory_()).first;
  }
  return it->second.get();
}

template <typename T>
void Family<T>::ForEach(
    const std::function<void(const std::vector<std::string>&, const T&)>& fn)
    const {
  MutexLock l(&mu_);
  for (const auto& [k, v] : children_) fn(k, *v);
}

}  // namespace kplane::metrics

#endif  // KPLANE_BASE_METRICS_H_
