// Prometheus' standard process metrics, the ones the Go client's process
// collector exports and therefore every etcd and Kubernetes component
// serves (dashboards and alerts expect them):
//
//   process_cpu_seconds_total         counter  user + system CPU time
//   process_open_fds                  gauge    open file descriptors
//   process_max_fds                   gauge    RLIMIT_NOFILE (soft)
//   process_virtual_memory_bytes      gauge    virtual memory size
//   process_virtual_memory_max_bytes  gauge    RLIMIT_AS (soft; -1 none)
//   process_resident_memory_bytes     gauge    resident set size
//   process_start_time_seconds        gauge    start, seconds since the epoch
//
// Values are read from /proc/self when /metrics is rendered (Linux),
// /proc/self/stat once per render for the CPU, virtual and resident series
// (so they describe one instant). A read that fails renders NaN rather
// than failing the scrape.
//
// Thread-safety: ParseProcStat is pure; the registered callbacks may run on
// any thread.
#ifndef KPLANE_BASE_PROCESS_METRICS_H_
#define KPLANE_BASE_PROCESS_METRICS_H_

#include <functional>
#include <string_view>

#include "base/metrics.h"
#include "base/statusor.h"

namespace kplane::metrics {

// What /proc/<pid>/stat says, in Prometheus' units.
struct ProcessStat {
  double cpu_seconds = 0;       // utime + stime
  double virtual_bytes = 0;     // vsize
  double resident_bytes = 0;    // rss pages * page size
  double start_time_ticks = 0;  // starttime: clock ticks after boot
};

// Parses one /proc/<pid>/stat line (proc(5)); the command name may hold
// spaces and parentheses. InvalidArgument for anything else.
StatusOr<ProcessStat> ParseProcStat(std::string_view stat,
                                    double ticks_per_second, double page_size);

// The boot time ("btime N" of /proc/stat), seconds since the epoch.
StatusOr<double> ParseBootTime(std::string_view proc_stat);

// Registers the metrics above on `registry`; Registry::Default() has them
// from its creation.
void RegisterProcessMetrics(Registry* registry);

// The same with `read_stat` standing for reading and parsing
// /proc/self/stat (a test seam): called once here (the start time) and
// once per Render, from the rendering thread.
void RegisterProcessMetrics(Registry* registry,
                            std::function<StatusOr<ProcessStat>()> read_stat);

}  // namespace kplane::metrics

#endif  // KPLANE_BASE_PROCESS_METRICS_H_
