// kpctl's kubectl-like commands (get, describe, apply, create, delete,
// scale, rollout, label, annotate, patch, edit, wait, version, config,
// api-resources) against kplane's API server. docs/kpctl.md describes each
// command, its flags and how it differs from kubectl.
//
//   KubeIo io{&std::cin, &std::cout, &std::cerr};
//   int code = RunKubeCommand("get", {"pods", "-n", "kube-system"}, io);
//
// Output goes to io.out, errors (kubectl's "Error from server (NotFound):
// pods \"x\" not found" and "error: ..." lines) and warnings to io.err.
// Exit codes: 0 success, 1 any error (a server error, a timed-out wait,
// bad flags).
//
// Thread-safety: one command per call; calls may run concurrently when
// their KubeIo streams are distinct. The environment is read through
// io.getenv (KUBECONFIG, HOME, KUBE_EDITOR/EDITOR), time through io.clock.
#ifndef KPLANE_KPCTL_KUBE_KUBE_COMMAND_H_
#define KPLANE_KPCTL_KUBE_KUBE_COMMAND_H_

#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "kpctl/kube/kubeconfig.h"

namespace kplane::kpctl::kube {

struct KubeIo {
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  GetEnvFn getenv;         // empty: ::getenv
  Clock* clock = nullptr;  // nullptr: Clock::Real()
};

// Runs `kpctl <command> <args...>` and returns its exit code.
int RunKubeCommand(std::string_view command,
                   const std::vector<std::string>& args, KubeIo& io);

struct KubeCommandInfo {
  const char* name;
  const char* help;
};
// Every command RunKubeCommand knows, for kpctl's usage text.
const std::vector<KubeCommandInfo>& KubeCommands();

}  // namespace kplane::kpctl::kube

#endif  // KPLANE_KPCTL_KUBE_KUBE_COMMAND_H_
