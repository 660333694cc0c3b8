// How `kplane apiserver`, `kplane controller-manager` and `kplane
// kubeletsim` serve TLS, from kube's flags: --tls-cert-file and
// --tls-private-key-file (the serving pair) and, where the component checks
// client certificates, --client-ca-file.
//
//   FlagSet flags("kplane kubeletsim", "...");
//   ServingTlsFlags serving(flags, {.served = "the control endpoint",
//                                   .origin = "the kubelet's",
//                                   .client_auth =
//                                   ClientAuth::kRequireAndVerify});
//   ... flags.Parse(args) ...
//   ASSIGN_OR_RETURN(options.serving_tls, serving.Context());  // null: HTTP
//
// The help texts are written from `served` and `origin`, so the three
// components describe their flags alike. Thread-safety: single-threaded use,
// as FlagSet. Errors: see ServingTlsFromFlags.
#ifndef KPLANE_CMD_KPLANE_SERVING_TLS_FLAGS_H_
#define KPLANE_CMD_KPLANE_SERVING_TLS_FLAGS_H_

#include <memory>
#include <string>

#include "base/flags.h"
#include "base/statusor.h"
#include "net/tls.h"

namespace kplane::cmd {

// A component's serving context from kube's --tls-cert-file,
// --tls-private-key-file and --client-ca-file: nullptr (plain HTTP) when no
// pair is given; with a client CA, client certificates are checked against
// it as `client_auth` says (kRequireAndVerify: the kubelet's x509
// authentication; kRequest: kube-apiserver's). kInvalidArgument for half a
// pair or a CA without one; TlsContext::NewServer's errors for bad files.
StatusOr<std::shared_ptr<const net::TlsContext>> ServingTlsFromFlags(
    const std::string& cert_file, const std::string& key_file,
    const std::string& client_ca_file, net::ClientAuth client_auth);

struct ServingTlsSpec {
  // What is served, for the help texts: "the API", "/healthz and /metrics".
  std::string served;
  // Whose flags these are: "kube-apiserver's", "the kubelet's".
  std::string origin;
  // How client certificates are checked; kNone declares no --client-ca-file.
  net::ClientAuth client_auth = net::ClientAuth::kNone;
};

// The serving flags declared on one FlagSet, which keeps pointers to the
// members: declare it next to the FlagSet and do not move it.
class ServingTlsFlags {
 public:
  ServingTlsFlags(FlagSet& flags, ServingTlsSpec spec);
  ServingTlsFlags(const ServingTlsFlags&) = delete;
  ServingTlsFlags& operator=(const ServingTlsFlags&) = delete;

  const std::string& cert_file() const { return cert_file_; }
  const std::string& key_file() const { return key_file_; }
  const std::string& client_ca_file() const { return client_ca_file_; }

  // After parsing: ServingTlsFromFlags of the flags' values.
  StatusOr<std::shared_ptr<const net::TlsContext>> Context() const;

 private:
  net::ClientAuth client_auth_;
  std::string cert_file_, key_file_, client_ca_file_;
};

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_SERVING_TLS_FLAGS_H_
