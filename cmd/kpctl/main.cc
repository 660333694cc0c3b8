// kpctl: kplane's command-line client. `kpctl store ...` is the etcdctl
// work-alike (kpctl/store); more command groups are added to kGroups.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "base/abseil_mutex_mode.h"
#include "bench/api_bench_command.h"
#include "bench/store_bench_command.h"
#include "kpctl/kube/flags.h"
#include "kpctl/kube/kube_command.h"
#include "kpctl/sim/sim_command.h"
#include "kpctl/store/store_command.h"

namespace {

struct Group {
  const char* name;
  const char* help;
  int (*run)(const std::vector<std::string>& args);
};

int RunStoreGroup(const std::vector<std::string>& args) {
  kplane::kpctl::StoreIo io;
  io.in = &std::cin;
  io.out = &std::cout;
  io.err = &std::cerr;
  io.bench = kplane::bench::RunStoreBenchCommand;  // kpctl store bench
  int code = kplane::kpctl::RunStore(args, io);
  std::cout.flush();
  return code;
}

// The kubectl-like commands (kpctl/kube), one entry each.
template <const char* kName>
int RunKubeGroup(const std::vector<std::string>& args) {
  kplane::kpctl::kube::KubeIo io;
  io.in = &std::cin;
  io.out = &std::cout;
  io.err = &std::cerr;
  int code = kplane::kpctl::kube::RunKubeCommand(kName, args, io);
  std::cout.flush();
  return code;
}
constexpr char kGet[] = "get";
constexpr char kDescribe[] = "describe";
constexpr char kApply[] = "apply";
constexpr char kCreate[] = "create";
constexpr char kDelete[] = "delete";
constexpr char kScale[] = "scale";
constexpr char kRollout[] = "rollout";
constexpr char kLabel[] = "label";
constexpr char kAnnotate[] = "annotate";
constexpr char kEdit[] = "edit";
constexpr char kPatch[] = "patch";
constexpr char kWait[] = "wait";
constexpr char kVersion[] = "version";
constexpr char kConfig[] = "config";
constexpr char kApiResources[] = "api-resources";

const Group kGroups[] = {
    {"store", "etcd-compatible store client (etcdctl work-alike)",
     RunStoreGroup},
    {"sim", "drive a kubeletsim fleet (stop-node, resume-node, list)",
     [](const std::vector<std::string>& a) {
       return kplane::kpctl::RunSim(a, std::cout, std::cerr);
     }},
    {"bench",
     "load benchmarks: bench api <create|get|update|list|delete|watch>",
     kplane::bench::RunBenchCommand},
    {kGet, "display one or many resources", RunKubeGroup<kGet>},
    {kDescribe, "show details of resources", RunKubeGroup<kDescribe>},
    {kApply, "apply manifests (-f FILE|DIR|-)", RunKubeGroup<kApply>},
    {kCreate, "create resources from manifests", RunKubeGroup<kCreate>},
    {kDelete, "delete resources", RunKubeGroup<kDelete>},
    {kScale, "set the size of a deployment", RunKubeGroup<kScale>},
    {kRollout, "rollout status|history|undo|restart", RunKubeGroup<kRollout>},
    {kLabel, "update labels", RunKubeGroup<kLabel>},
    {kAnnotate, "update annotations", RunKubeGroup<kAnnotate>},
    {kEdit, "edit a resource in $EDITOR", RunKubeGroup<kEdit>},
    {kPatch, "patch a resource (strategic, merge, json)", RunKubeGroup<kPatch>},
    {kWait, "wait for a condition or deletion", RunKubeGroup<kWait>},
    {kVersion, "client and server versions", RunKubeGroup<kVersion>},
    {kConfig, "kubeconfig: view, current-context", RunKubeGroup<kConfig>},
    {kApiResources, "the API's resource types", RunKubeGroup<kApiResources>},
};

int Usage(FILE* to) {
  std::fprintf(to, "Usage: kpctl <command> [arguments]\n\nCommands:\n");
  for (const Group& g : kGroups)
    std::fprintf(to, "  %-14s %s\n", g.name, g.help);
  std::fprintf(to, "\nRun 'kpctl <command> --help' for more.\n");
  return to == stdout ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(stderr);
  // Its gRPC client (kpctl store, the load tool) without Debian's debug-mode
  // lock-order graph (base/abseil_mutex_mode.h).
  kplane::StopAbseilDeadlockDetection();
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words[0] == "-h" || words[0] == "--help" || words[0] == "help") {
    return Usage(stdout);
  }
  // kubectl's habit: global flags before the command.
  kplane::StatusOr<std::vector<std::string>> hoisted =
      kplane::kpctl::kube::HoistGlobalFlags(words);
  if (!hoisted.ok()) {
    std::fprintf(stderr, "error: %s\n", hoisted.status().message().c_str());
    return 1;
  }
  words = std::move(*hoisted);
  const std::string cmd = words[0];
  for (const Group& g : kGroups) {
    if (cmd == g.name) {
      return g.run(std::vector<std::string>(words.begin() + 1, words.end()));
    }
  }
  std::fprintf(stderr, "Error: unknown command \"%s\" for \"kpctl\"\n",
               cmd.c_str());
  return Usage(stderr);
}
