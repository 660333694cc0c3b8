// `kplane store`: runs one member of the replicated store with etcd's flags.
//
//   kplane store --name n1 --data-dir /var/lib/kplane/n1
//     --listen-client-urls http://127.0.0.1:2379
//     --listen-peer-urls http://127.0.0.1:2380
//     --initial-cluster n1=http://127.0.0.1:2380,n2=...,n3=...
//
// The flags, their defaults and their meaning are etcd 3.4's (docs/store.md
// lists them), so scripts written for etcd work with few changes.
// `kplane store gateway start ...` is etcd's TCP gateway
// (gateway_command.h); `grpc-proxy` is refused with a clear error.
#ifndef KPLANE_CMD_KPLANE_STORE_COMMAND_H_
#define KPLANE_CMD_KPLANE_STORE_COMMAND_H_

#include <string>
#include <vector>

namespace kplane::cmd {

// Runs until SIGINT/SIGTERM; returns the process exit code. `args` excludes
// the program and subcommand names.
int RunStoreCommand(const std::vector<std::string>& args);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_STORE_COMMAND_H_
