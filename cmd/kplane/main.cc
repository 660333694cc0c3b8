// kplane: the control-plane binary. Each subcommand is a library call; this
// file only dispatches.
#include <iostream>
#include <string>
#include <vector>

#include "base/abseil_mutex_mode.h"
#include "base/heap_tuning.h"
#include "cmd/kplane/apiserver_command.h"
#include "cmd/kplane/controller_manager_command.h"
#include "cmd/kplane/kubeletsim_command.h"
#include "cmd/kplane/store_command.h"
#include "cmd/kplane/up_command.h"

namespace {

constexpr char kUsage[] =
    "Usage: kplane <command> [flags]\n"
    "\n"
    "Commands:\n"
    "  up         Run a whole control plane here (store, API server,\n"
    "             controllers, simulated nodes) and write a kubeconfig.\n"
    "  store      Run one member of the replicated store (our etcd);\n"
    "             `store gateway start`: etcd's TCP gateway to a cluster;\n"
    "             `store grpc-proxy start`: etcd's gRPC proxy.\n"
    "  apiserver  Run the Kubernetes API server.\n"
    "  controller-manager\n"
    "             Run the controllers (replicaset, deployment, scheduler,\n"
    "             node lifecycle, garbage collector).\n"
    "  kubeletsim Run a fleet of simulated nodes (kubelets).\n"
    "\n"
    "Run `kplane <command> --help` for the flags of a command.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" ||
      std::string(argv[1]) == "-h" || std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  // Every command is a server: its heap keeps what bursts of requests
  // free instead of faulting it in again (base/heap_tuning.h).
  kplane::KeepFreedHeapMemory();
  // gRPC's mutexes without Debian's debug-mode lock-order graph
  // (base/abseil_mutex_mode.h).
  kplane::StopAbseilDeadlockDetection();
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "up") return kplane::cmd::RunUpCommand(args);
  if (cmd == "store") return kplane::cmd::RunStoreCommand(args);
  if (cmd == "apiserver") return kplane::cmd::RunApiServerCommand(args);
  if (cmd == "controller-manager") {
    return kplane::cmd::RunControllerManagerCommand(args);
  }
  if (cmd == "kubeletsim") return kplane::cmd::RunKubeletSimCommand(args);
  std::cerr << "kplane: unknown command \"" << cmd << "\"\n\n" << kUsage;
  return 2;
}
