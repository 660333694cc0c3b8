// kplane: the control-plane binary. Each subcommand is a library call; this
// file only dispatches.
#include <iostream>
#include <string>
#include <vector>

#include "apiserver/apiserver_command.h"
#include "controllers/controller_manager_command.h"
#include "kubeletsim/kubeletsim_command.h"
#include "storage/server/store_command.h"
#include "up/control_plane.h"

namespace {

constexpr char kUsage[] =
    "Usage: kplane <command> [flags]\n"
    "\n"
    "Commands:\n"
    "  up         Run a whole control plane here (store, API server,\n"
    "             controllers, simulated nodes) and write a kubeconfig.\n"
    "  store      Run one member of the replicated store (our etcd).\n"
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
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "up") return kplane::up::RunUpCommand(args);
  if (cmd == "store") return kplane::storage::RunStoreCommand(args);
  if (cmd == "apiserver") return kplane::apiserver::RunApiServerCommand(args);
  if (cmd == "controller-manager") {
    return kplane::controllers::RunControllerManagerCommand(args);
  }
  if (cmd == "kubeletsim")
    return kplane::kubeletsim::RunKubeletSimCommand(args);
  std::cerr << "kplane: unknown command \"" << cmd << "\"\n\n" << kUsage;
  return 2;
}
