// `kplane up`: the whole control plane in one process (ControlPlane,
// control_plane.h), configured by flags, until SIGINT/SIGTERM.
//
//   kplane up --data-dir ~/.kplane --nodes 3
//
// Thread-safety: call from main only, before other threads start. Errors:
// bad flags or a control plane that could not start exit 2.
#ifndef KPLANE_CMD_KPLANE_UP_COMMAND_H_
#define KPLANE_CMD_KPLANE_UP_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::cmd {

// Runs until SIGINT/SIGTERM; returns the exit code. `args` excludes the
// program and subcommand names.
int RunUpCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_UP_COMMAND_H_
