// `kpctl bench api <create|get|update|list|delete|watch> --server URL ...`:
// drives a Kubernetes apiserver with the REST workloads of
// bench/api_workloads.h (or the watch fan-out of bench/api_watch_bench.h)
// at several client counts, printing one table row and one machine-readable
// `RESULT key=value ...` line per count (the same shape as `kpctl store
// bench`, so scripts/bench/apiserver.sh can put both side by side).
// `kpctl bench store ...` is `kpctl store bench ...`.
//
// Returns a process exit code: 0 success, 1 the run failed (or a watch
// lost events), 2 usage error.
#ifndef KPLANE_BENCH_API_BENCH_COMMAND_H_
#define KPLANE_BENCH_API_BENCH_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::bench {

// `kpctl bench <api|store> ...`.
int RunBenchCommand(const std::vector<std::string>& args);
// `kpctl bench api ...` (args after "api").
int RunApiBenchCommand(const std::vector<std::string>& args);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_API_BENCH_COMMAND_H_
