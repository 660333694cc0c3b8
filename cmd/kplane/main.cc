// kplane: the control-plane binary. Each subcommand is a library call; this
// file only dispatches.
#include <iostream>
#include <string>
#include <vector>

#include "apiserver/apiserver_command.h"
#include "storage/server/store_command.h"

namespace {

constexpr char kUsage[] =
    "Usage: kplane <command> [flags]\n"
    "\n"
    "Commands:\n"
    "  store      Run one member of the replicated store (our etcd).\n"
    "  apiserver  Run the Kubernetes API server.\n"
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
  if (cmd == "store") return kplane::storage::RunStoreCommand(args);
  if (cmd == "apiserver") return kplane::apiserver::RunApiServerCommand(args);
  std::cerr << "kplane: unknown command \"" << cmd << "\"\n\n" << kUsage;
  return 2;
}
