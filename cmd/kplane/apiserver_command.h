// `kplane apiserver`: runs kplane's kube-apiserver over plain HTTP.
//
//   kplane apiserver --storage-backend=embedded --data-dir /tmp/kp
//       --bind-address 127.0.0.1 --port 6443
//   kplane apiserver --storage-backend=remote
//       --etcd-servers=http://127.0.0.1:2379,http://127.0.0.1:22379
//
// embedded runs a single-member store (storage::StoreServer) in the same
// process, with periodic compaction every --etcd-compaction-interval (what
// kube-apiserver's compactor asks of etcd); remote speaks etcd's v3 JSON API
// to `kplane store` members or a real etcd 3.4. Several apiservers may share
// one store. The flags' names and defaults are kube-apiserver's where one
// exists (docs/api.md lists them).
#ifndef KPLANE_CMD_KPLANE_APISERVER_COMMAND_H_
#define KPLANE_CMD_KPLANE_APISERVER_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::cmd {

// Runs until SIGINT/SIGTERM; returns the exit code. `args` excludes the
// program and subcommand names.
int RunApiServerCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_APISERVER_COMMAND_H_
