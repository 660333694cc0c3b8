#include "base/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "base/mutex.h"
#include "base/strings.h"

namespace kplane::metrics {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool ParseNumber(std::string_view s, double* out) {
  if (s.empty() || s.size() > 24) return false;
  double v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

StatusOr<ProcessStat> ReadSelfStat() {
  ASSIGN_OR_RETURN(std::string stat,
                   ReadFile(FileSystem::Default(), "/proc/self/stat"));
  return ParseProcStat(stat, static_cast<double>(sysconf(_SC_CLK_TCK)),
                       static_cast<double>(sysconf(_SC_PAGESIZE)));
}

double OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return kNaN;
  double n = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory stream's own descriptor
}

double SoftLimit(int resource) {
  rlimit r;
  if (getrlimit(resource, &r) != 0) return kNaN;
  return r.rlim_cur == RLIM_INFINITY ? -1 : static_cast<double>(r.rlim_cur);
}

// One /proc/self/stat reading shared by the CPU, virtual and resident
// series, so that a scrape reads the file once and the three describe one
// instant. Registry::Render calls each callback once per render, one
// render at a time, in an order not relied on here: the first of the
// three to run reads, the others take that reading; a series whose field
// was already taken is the first of the next render.
class StatReading {
 public:
  explicit StatReading(std::function<StatusOr<ProcessStat>()> read)
      : read_(std::move(read)) {}

  // `field` of this render's reading; NaN if the read failed.
  double Take(double ProcessStat::*field) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    const bool already_taken =
        std::find(taken_.begin(), taken_.end(), field) != taken_.end();
    if (already_taken || taken_.empty()) {
      taken_.clear();
      StatusOr<ProcessStat> s = read_();
      stat_ = s.ok() ? std::optional<ProcessStat>(*s) : std::nullopt;
    }
    taken_.push_back(field);
    return stat_ ? (*stat_).*field : kNaN;
  }

 private:
  const std::function<StatusOr<ProcessStat>()> read_;
  Mutex mu_;
  std::optional<ProcessStat> stat_ GUARDED_BY(mu_);
  // The fields taken from `stat_` so far.
  std::vector<double ProcessStat::*> taken_ GUARDED_BY(mu_);
};

}  // namespace

StatusOr<ProcessStat> ParseProcStat(std::string_view stat,
                                    double ticks_per_second, double page_size) {
  // "pid (comm) state ppid ...": comm is whatever the process named itself,
  // so the fields start after the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) {
    return InvalidArgumentError("not a /proc/<pid>/stat line");
  }
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  // fields[0] is proc(5)'s field 3 (state): field n is fields[n - 3].
  auto field = [&](int n, double* out) {
    return static_cast<size_t>(n - 3) < fields.size() &&
           ParseNumber(fields[n - 3], out);
  };
  double utime, stime, start, vsize, rss;
  if (!field(14, &utime) || !field(15, &stime) || !field(22, &start) ||
      !field(23, &vsize) || !field(24, &rss)) {
    return InvalidArgumentError("/proc/<pid>/stat: missing or bad fields");
  }
  return ProcessStat{.cpu_seconds = (utime + stime) / ticks_per_second,
                     .virtual_bytes = vsize,
                     .resident_bytes = rss * page_size,
                     .start_time_ticks = start};
}

StatusOr<double> ParseBootTime(std::string_view proc_stat) {
  for (std::string_view line : StrSplit(proc_stat, '\n')) {
    if (!line.starts_with("btime ")) continue;
    double v;
    if (ParseNumber(line.substr(6), &v)) return v;
  }
  return InvalidArgumentError("/proc/stat: no btime line");
}

void RegisterProcessMetrics(Registry* registry) {
  RegisterProcessMetrics(registry, ReadSelfStat);
}

void RegisterProcessMetrics(Registry* registry,
                            std::function<StatusOr<ProcessStat>()> read_stat) {
  auto reading = std::make_shared<StatReading>(read_stat);
  // A callback rendering one field of the render's reading.
  auto from_reading = [reading](double ProcessStat::*field) {
    return [reading, field] { return reading->Take(field); };
  };
  registry->NewCallbackCounter(
      "process_cpu_seconds_total",
      "Total user and system CPU time spent in seconds.",
      from_reading(&ProcessStat::cpu_seconds));
  registry->NewCallbackGauge("process_open_fds",
                             "Number of open file descriptors.", OpenFds);
  registry->NewCallbackGauge("process_max_fds",
                             "Maximum number of open file descriptors.",
                             [] { return SoftLimit(RLIMIT_NOFILE); });
  registry->NewCallbackGauge("process_virtual_memory_bytes",
                             "Virtual memory size in bytes.",
                             from_reading(&ProcessStat::virtual_bytes));
  registry->NewCallbackGauge(
      "process_virtual_memory_max_bytes",
      "Maximum amount of virtual memory available in bytes.",
      [] { return SoftLimit(RLIMIT_AS); });
  registry->NewCallbackGauge("process_resident_memory_bytes",
                             "Resident memory size in bytes.",
                             from_reading(&ProcessStat::resident_bytes));
  // Fixed for the process's life: computed once. Whole seconds, so the
  // text format prints every digit.
  double start_time = kNaN;
  StatusOr<std::string> proc_stat =
      ReadFile(FileSystem::Default(), "/proc/stat");
  StatusOr<ProcessStat> self = read_stat();
  if (proc_stat.ok() && self.ok()) {
    StatusOr<double> boot = ParseBootTime(*proc_stat);
    if (boot.ok()) {
      start_time =
          std::floor(*boot + self->start_time_ticks / sysconf(_SC_CLK_TCK));
    }
  }
  registry->NewCallbackGauge(
      "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds.",
      [start_time] { return start_time; });
}

}  // namespace kplane::metrics
