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

StatusOr<std::shared_ptr<const net::TlsContext>> ServingTlsFromFlags(
    const std::string& cert_file, const std::string& key_file,
    const std::string& client_ca_file, net::ClientAuth client_auth) {
  if (cert_file.empty() != key_file.empty()) {
    return InvalidArgumentError(
        "--tls-cert-file and --tls-private-key-file go together");
  }
  if (cert_file.empty()) {
    if (!client_ca_file.empty()) {
      return InvalidArgumentError(
          "--client-ca-file needs --tls-cert-file and --tls-private-key-file "
          "(client certificates only exist over TLS)");
    }
    return std::shared_ptr<const net::TlsContext>();
  }
  return net::TlsContext::NewServer({.cert_file = cert_file,
                                     .key_file = key_file,
                                     .client_ca_file = client_ca_file,
                                     .client_auth = client_ca_file.empty()
                                                        ? net::ClientAuth::kNone
                                                        : client_auth,
                                     .alpn = {"http/1.1"}});
}

}  // namespace kplane::cmd
