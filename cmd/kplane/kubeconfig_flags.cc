#include "cmd/kplane/kubeconfig_flags.h"

#include <cstdlib>

#include "kpctl/kube/kubeconfig.h"

namespace kplane::cmd {

StatusOr<ApiClientSettings> ApiClientFromFlags(const std::string& kubeconfig,
                                               const std::string& master) {
  if (kubeconfig.empty()) {
    if (master.rfind("https://", 0) == 0) {
      return InvalidArgumentError(
          "--master " + master +
          " is https: pass --kubeconfig with the CA to trust and the "
          "client certificate to present");
    }
    return ApiClientSettings{.server = master};
  }
  ASSIGN_OR_RETURN(kpctl::kube::Kubeconfig config,
                   kpctl::kube::LoadKubeconfig(kubeconfig, [](const char* n) {
                     return static_cast<const char*>(std::getenv(n));
                   }));
  ASSIGN_OR_RETURN(
      kpctl::kube::ClientConfig resolved,
      kpctl::kube::ResolveClientConfig(config, {.server = master}));
  ApiClientSettings out{.server = resolved.server,
                        .bearer_token = resolved.token};
  ASSIGN_OR_RETURN(out.tls, kpctl::kube::ClientTlsContext(resolved));
  return out;
}

}  // namespace kplane::cmd
