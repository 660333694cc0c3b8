// Development front for bench/: `kplane_bench_tool store ...` until the
// benchmark commands live in kpctl.
#include <iostream>
#include <string>
#include <vector>

#include "base/abseil_mutex_mode.h"
#include "bench/store_bench_command.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "store") {
    std::cerr << "usage: kplane_bench_tool store [flags]  (--help)\n";
    return 2;
  }
  // As kpctl's: its gRPC client without Debian's debug-mode lock-order graph.
  kplane::StopAbseilDeadlockDetection();
  return kplane::bench::RunStoreBenchCommand(
      std::vector<std::string>(argv + 2, argv + argc));
}
