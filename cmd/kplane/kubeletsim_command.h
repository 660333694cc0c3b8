// `kplane kubeletsim`: runs a fleet of simulated kubelets (fleet.h) against
// an API server until SIGINT/SIGTERM.
//
//   kplane kubeletsim --server http://127.0.0.1:6443 --nodes 1000
//       --node-labels zone=a --register-with-taints dedicated=sim:NoSchedule
//   kplane kubeletsim --nodes 10 --stop-nodes node-3 --stop-after 30s
//       --resume-after 2m            # scripted crash and recovery
//
// Flags are listed by --help and in docs/kubeletsim.md.
#ifndef KPLANE_CMD_KPLANE_KUBELETSIM_COMMAND_H_
#define KPLANE_CMD_KPLANE_KUBELETSIM_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::cmd {

// `args` excludes the program and subcommand names. Returns the exit code.
int RunKubeletSimCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_KUBELETSIM_COMMAND_H_
