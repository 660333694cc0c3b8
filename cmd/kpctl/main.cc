// kpctl: kplane's command-line client. `kpctl store ...` is the etcdctl
// work-alike (kpctl/store); more command groups are added to kGroups.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

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
  int code = kplane::kpctl::RunStore(args, io);
  std::cout.flush();
  return code;
}

const Group kGroups[] = {
    {"store", "etcd-compatible store client (etcdctl work-alike)",
     RunStoreGroup},
};

int Usage(FILE* to) {
  std::fprintf(to, "Usage: kpctl <command> [arguments]\n\nCommands:\n");
  for (const Group& g : kGroups)
    std::fprintf(to, "  %-8s %s\n", g.name, g.help);
  std::fprintf(to, "\nRun 'kpctl <command> --help' for more.\n");
  return to == stdout ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(stderr);
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") return Usage(stdout);
  for (const Group& g : kGroups) {
    if (cmd == g.name) {
      return g.run(std::vector<std::string>(argv + 2, argv + argc));
    }
  }
  std::fprintf(stderr, "Error: unknown command \"%s\" for \"kpctl\"\n",
               cmd.c_str());
  return Usage(stderr);
}
