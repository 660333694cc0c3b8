#include "base/metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "base/process_metrics.h"

namespace kplane::metrics {
namespace {

void AtomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

std::string EscapeLabel(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelString(const std::vector<std::string>& names,
                        const std::vector<std::string>& values,
                        const std::string& extra_name = "",
                        const std::string& extra_value = "") {
  std::string s;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!s.empty()) s += ",";
    s += names[i] + "=\"" + EscapeLabel(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    if (!s.empty()) s += ",";
    s += extra_name + "=\"" + extra_value + "\"";
  }
  return s.empty() ? "" : "{" + s + "}";
}

}  // namespace

void Counter::Inc(double v) { AtomicAdd(value_, v); }
void Gauge::Inc(double v) { AtomicAdd(value_, v); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  std::sort(bounds_.begin(), bounds_.end());
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i] = 0;
}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) -
             bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, v);
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    acc += buckets_[i].load(std::memory_order_relaxed);
    out[i] = acc;
  }
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor,
                                       int count) {
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i) b.push_back(start + width * i);
  return b;
}

std::vector<double> DefaultLatencyBuckets() {
  return {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5,
          2,     3,     4,    5,   6,   8,   10,  15,  20,  30,   45, 60};
}

Registry* Registry::Default() {
  // A process's registry carries the process metrics, as the Prometheus Go
  // client's default registerer does.
  static Registry* const kDefault = [] {
    auto* r = new Registry();
    RegisterProcessMetrics(r);
    return r;
  }();
  return kDefault;
}

Family<Counter>* Registry::NewCounter(const std::string& name,
                                      const std::string& help,
                                      std::vector<std::string> labels) {
  MutexLock l(&mu_);
  auto& slot = counters_[name];
  if (!slot) {
    slot = std::make_unique<Family<Counter>>(
        name, help, std::move(labels),
        [] { return std::make_unique<Counter>(); });
  }
  return slot.get();
}

Family<Gauge>* Registry::NewGauge(const std::string& name,
                                  const std::string& help,
                                  std::vector<std::string> labels) {
  MutexLock l(&mu_);
  auto& slot = gauges_[name];
  if (!slot) {
    slot = std::make_unique<Family<Gauge>>(
        name, help, std::move(labels),
        [] { return std::make_unique<Gauge>(); });
  }
  return slot.get();
}

Family<Histogram>* Registry::NewHistogram(const std::string& name,
                                          const std::string& help,
                                          std::vector<std::string> labels,
                                          std::vector<double> buckets) {
  MutexLock l(&mu_);
  auto& slot = histograms_[name];
  if (!slot) {
    slot = std::make_unique<Family<Histogram>>(
        name, help, std::move(labels),
        [buckets] { return std::make_unique<Histogram>(buckets); });
  }
  return slot.get();
}

void Registry::NewCallbackGauge(const std::string& name,
                                const std::string& help,
                                std::function<double()> fn) {
  MutexLock l(&mu_);
  callbacks_[name] = {help, "gauge", std::move(fn)};
}

void Registry::NewCallbackCounter(const std::string& name,
                                  const std::string& help,
                                  std::function<double()> fn) {
  MutexLock l(&mu_);
  callbacks_[name] = {help, "counter", std::move(fn)};
}

std::string Registry::Render() const {
  // Collect each family's text under its name so the output is sorted.
  std::map<std::string, std::string> blocks;
  MutexLock l(&mu_);
  for (const auto& entry : counters_) {
    // Not a structured binding: clang 14 cannot capture those in a lambda
    // (P1091R3 came with clang 16).
    const std::string& name = entry.first;
    const auto& fam = entry.second;
    std::string& out = blocks[name];
    out += "# HELP " + name + " " + fam->help() + "\n# TYPE " + name +
           " counter\n";
    fam->ForEach([&](const std::vector<std::string>& lv, const Counter& c) {
      out += name + LabelString(fam->label_names(), lv) + " " +
             FormatValue(c.Value()) + "\n";
    });
  }
  for (const auto& entry : gauges_) {
    // Not a structured binding: clang 14 cannot capture those in a lambda
    // (P1091R3 came with clang 16).
    const std::string& name = entry.first;
    const auto& fam = entry.second;
    std::string& out = blocks[name];
    out += "# HELP " + name + " " + fam->help() + "\n# TYPE " + name +
           " gauge\n";
    fam->ForEach([&](const std::vector<std::string>& lv, const Gauge& g) {
      out += name + LabelString(fam->label_names(), lv) + " " +
             FormatValue(g.Value()) + "\n";
    });
  }
  for (const auto& [name, cb] : callbacks_) {
    std::string& out = blocks[name];
    out += "# HELP " + name + " " + cb.help + "\n# TYPE " + name + " " +
           cb.type + "\n" + name + " " + FormatValue(cb.fn()) + "\n";
  }
  for (const auto& entry : histograms_) {
    // Not a structured binding: clang 14 cannot capture those in a lambda
    // (P1091R3 came with clang 16).
    const std::string& name = entry.first;
    const auto& fam = entry.second;
    std::string& out = blocks[name];
    out += "# HELP " + name + " " + fam->help() + "\n# TYPE " + name +
           " histogram\n";
    fam->ForEach([&](const std::vector<std::string>& lv, const Histogram& h) {
      std::vector<uint64_t> cum = h.CumulativeCounts();
      for (size_t i = 0; i < cum.size(); ++i) {
        std::string le = i < h.bounds().size() ? FormatValue(h.bounds()[i])
                                               : std::string("+Inf");
        out += name + "_bucket" +
               LabelString(fam->label_names(), lv, "le", le) + " " +
               std::to_string(cum[i]) + "\n";
      }
      out += name + "_sum" + LabelString(fam->label_names(), lv) + " " +
             FormatValue(h.Sum()) + "\n";
      out += name + "_count" + LabelString(fam->label_names(), lv) + " " +
             std::to_string(h.Count()) + "\n";
    });
  }
  std::string all;
  for (const auto& [name, text] : blocks) all += text;
  return all;
}

ScopedTimer::ScopedTimer(Histogram* h)
    : h_(h),
      start_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count()) {}

ScopedTimer::~ScopedTimer() {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  h_->Observe((now - start_ns_) / 1e9);
}

}  // namespace kplane::metrics
