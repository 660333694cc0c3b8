// `kplane controller-manager`: flags -> ControllerManagerOptions, then runs
// until SIGINT/SIGTERM (exit 0) or until it loses leadership (exit 1, as
// kube-controller-manager does; a supervisor restarts it).
//
// Thread-safety: call from main only. Errors: bad flags exit 2.
#ifndef KPLANE_CMD_KPLANE_CONTROLLER_MANAGER_COMMAND_H_
#define KPLANE_CMD_KPLANE_CONTROLLER_MANAGER_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::cmd {

// `args` excludes the program and subcommand names.
int RunControllerManagerCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_CONTROLLER_MANAGER_COMMAND_H_
