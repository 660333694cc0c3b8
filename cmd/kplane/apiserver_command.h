// `kplane apiserver`: runs kplane's kube-apiserver over HTTPS.
//
//   kplane apiserver --storage-backend=embedded --data-dir /tmp/kp
//       --bind-address 127.0.0.1 --secure-port 6443
//       --tls-cert-file pki/apiserver.crt --tls-private-key-file
//       pki/apiserver.key --client-ca-file pki/ca.crt
//   kplane apiserver --storage-backend=remote
//       --etcd-servers=http://127.0.0.1:2379,http://127.0.0.1:22379
//
// embedded runs a single-member store (storage::StoreServer) in the same
// process, with periodic compaction every --etcd-compaction-interval (what
// kube-apiserver's compactor asks of etcd); remote speaks etcd's v3 JSON API
// to `kplane store` members or a real etcd 3.4. Several apiservers may share
// one store. The flags' names and defaults are kube-apiserver's where one
// exists (docs/api.md lists them). Without a serving certificate it refuses
// to start unless --insecure-http says plain HTTP is meant
// (docs/security.md).
#ifndef KPLANE_CMD_KPLANE_APISERVER_COMMAND_H_
#define KPLANE_CMD_KPLANE_APISERVER_COMMAND_H_

#include <memory>
#include <string>
#include <vector>

#include "base/statusor.h"
#include "net/tls.h"

namespace kplane::cmd {

// Runs until SIGINT/SIGTERM; returns the exit code. `args` excludes the
// program and subcommand names.
int RunApiServerCommand(const std::vector<std::string>& args);

// The API server's serving context from kube-apiserver's flags: the pair
// (both or neither), and the client CA (client certificates requested, as
// kube's RequestClientCert: ClientAuth::kRequest). Neither half of the pair:
// nullptr (plain HTTP) if `insecure_http`, else kInvalidArgument saying
// what to pass; a client CA without the pair is kInvalidArgument too.
// Bad files: TlsContext::NewServer's errors.
StatusOr<std::shared_ptr<const net::TlsContext>> ServingTlsContext(
    const std::string& cert_file, const std::string& key_file,
    const std::string& client_ca_file, bool insecure_http);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_APISERVER_COMMAND_H_
