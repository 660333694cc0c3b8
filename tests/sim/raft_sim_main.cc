// raft_sim: replays one seeded cluster simulation (see tests/sim/cluster.h).
//   raft_sim --seed=N [--nodes=3|5] [--steps=K] [--verbose] [--seeds=M]
// --seeds=M runs seeds N..N+M-1 (the soak script uses it). Exit status 1 if
// any run fails; the failing seed's replay command is printed.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "base/logging.h"
#include "base/strings.h"
#include "tests/sim/cluster.h"

int main(int argc, char** argv) {
  kplane::sim::SimOptions o;
  int64_t seeds = 1;
  // The core logs refused proposals at INFO; a simulation makes many.
  // KPLANE_LOG_LEVEL=DEBUG shows the core's own log while replaying.
  if (std::getenv("KPLANE_LOG_LEVEL") == nullptr) {
    kplane::SetMinLogLevel(kplane::LogLevel::kWarning);
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<int64_t> {
      std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) != 0) return std::nullopt;
      return kplane::ParseInt64(a.substr(prefix.size()));
    };
    if (auto v = value("--seed")) {
      o.seed = *v;
    } else if (auto v = value("--nodes")) {
      o.nodes = static_cast<int>(*v);
    } else if (auto v = value("--steps")) {
      o.steps = static_cast<int>(*v);
    } else if (auto v = value("--seeds")) {
      seeds = *v;
    } else if (a == "--verbose") {
      o.verbose = true;
    } else {
      std::cerr << "usage: raft_sim --seed=N [--nodes=3|5] [--steps=K] "
                   "[--seeds=M] [--verbose]\n";
      return 2;
    }
  }
  int failures = 0;
  uint64_t first = o.seed;
  for (int64_t s = 0; s < seeds; ++s) {
    o.seed = first + s;
    kplane::sim::SimResult r = kplane::sim::RunSimulation(o);
    if (!r.ok) {
      ++failures;
      std::cout << "FAIL seed=" << o.seed << ": " << r.failure << "\n"
                << "replay: " << kplane::sim::ReplayCommand(o)
                << " --verbose\n";
    } else if (seeds == 1 || o.verbose) {
      std::cout << "ok seed=" << o.seed << " nodes=" << o.nodes
                << " steps=" << o.steps << " " << r.stats << "\n";
    }
  }
  if (seeds > 1) {
    std::cout << seeds - failures << " passed, " << failures << " failed\n";
  }
  return failures == 0 ? 0 : 1;
}
