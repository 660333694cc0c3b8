// How `kplane controller-manager` and `kplane kubeletsim` reach the API
// server, from kube's flags: --kubeconfig FILE (its current context's
// server, CA, client certificate and token, read as kubectl reads them:
// kpctl/kube/kubeconfig.h) and --master URL (replaces the kubeconfig's
// server, as kube-controller-manager's --master does).
//
//   ASSIGN_OR_RETURN(ApiClientSettings api,
//                    ApiClientFromFlags("/root/.kplane/kubeconfig", ""));
//   options.server = api.server;  options.tls = api.tls;
//
// Thread-safety: a pure function. Errors: NotFound for a missing
// kubeconfig, the kubeconfig's validation errors (InvalidArgument), and
// TlsContext's for certificates that do not load; InvalidArgument for an
// https --master without a kubeconfig (nothing to trust).
#ifndef KPLANE_CMD_KPLANE_KUBECONFIG_FLAGS_H_
#define KPLANE_CMD_KPLANE_KUBECONFIG_FLAGS_H_

#include <memory>
#include <string>

#include "base/statusor.h"
#include "net/tls.h"

namespace kplane::cmd {

struct ApiClientSettings {
  std::string server;                          // "https://host:port"
  std::shared_ptr<const net::TlsContext> tls;  // null for http://
  std::string bearer_token;                    // "" = none
};

// `kubeconfig` "" : `master` alone (an http:// URL).
StatusOr<ApiClientSettings> ApiClientFromFlags(const std::string& kubeconfig,
                                               const std::string& master);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_KUBECONFIG_FLAGS_H_
