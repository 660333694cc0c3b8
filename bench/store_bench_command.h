// `kpctl store bench` (for now also `kplane_bench_tool store`): drives an
// etcd v3 JSON endpoint list with one of the store workloads at several
// client counts and prints one table row per count, plus a machine-readable
// `RESULT ...` line, so scripts/bench can collect figures for kplane and for
// a real etcd alike.
#ifndef KPLANE_BENCH_STORE_BENCH_COMMAND_H_
#define KPLANE_BENCH_STORE_BENCH_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::bench {

int RunStoreBenchCommand(const std::vector<std::string>& args);

}  // namespace kplane::bench

#endif  // KPLANE_BENCH_STORE_BENCH_COMMAND_H_
