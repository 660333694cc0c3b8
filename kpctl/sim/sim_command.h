// `kpctl sim`: drives a running kubeletsim fleet through its control
// endpoint (kubeletsim/control_server.h) with ControlClient
// (kubeletsim/control/control_client.h).
//
//   kpctl sim list                       table of nodes and their state
//   kpctl sim stop-node node-3 node-4    crash nodes' heartbeats
//   kpctl sim resume-node node-3
//   kpctl sim stop-all | resume-all      the whole fleet
//   --endpoint https://127.0.0.1:10250   (default; or $KPLANE_SIM_ENDPOINT)
//   --cacert/--cert/--key FILE           TLS for an https endpoint; default:
//                                        the kubeconfig's CA and user
//                                        certificate (--kubeconfig, else
//                                        kpctl's lookup)
//
// Output goes to `out`, errors to `err`. Returns the exit code: 0, 1 for a
// failed call (unknown node, unreachable fleet), 2 for bad usage.
#ifndef KPLANE_KPCTL_SIM_SIM_COMMAND_H_
#define KPLANE_KPCTL_SIM_SIM_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace kplane::kpctl {

int RunSim(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err);

}  // namespace kplane::kpctl

#endif  // KPLANE_KPCTL_SIM_SIM_COMMAND_H_
