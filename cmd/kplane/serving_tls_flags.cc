#include "cmd/kplane/serving_tls_flags.h"

#include <utility>

namespace kplane::cmd {

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

ServingTlsFlags::ServingTlsFlags(FlagSet& flags, ServingTlsSpec spec)
    : client_auth_(spec.client_auth) {
  flags.String("tls-cert-file", &cert_file_,
               "Serve " + spec.served +
                   " over HTTPS with this certificate (PEM, then "
                   "intermediates; " +
                   spec.origin + " flag). Needs --tls-private-key-file.");
  flags.String("tls-private-key-file", &key_file_,
               "The serving certificate's private key (PEM).");
  switch (spec.client_auth) {
    case net::ClientAuth::kNone:
      break;
    case net::ClientAuth::kRequest:
      flags.String("client-ca-file", &client_ca_file_,
                   "CAs whose client certificates identify users (CN = user, "
                   "O = groups). Certificates are requested, not required: a "
                   "client without one is anonymous (" +
                       spec.origin + " flag).");
      break;
    case net::ClientAuth::kRequireAndVerify:
      flags.String("client-ca-file", &client_ca_file_,
                   "Require client certificates signed by these CAs on " +
                       spec.served + " (" + spec.origin +
                       " x509 authentication).");
      break;
  }
}

StatusOr<std::shared_ptr<const net::TlsContext>> ServingTlsFlags::Context()
    const {
  return ServingTlsFromFlags(cert_file_, key_file_, client_ca_file_,
                             client_auth_);
}

}  // namespace kplane::cmd
