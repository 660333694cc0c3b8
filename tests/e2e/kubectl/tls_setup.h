// Test support for the suites that run a `kplane apiserver` process over
// HTTPS (the kubectl and kpctl suites): a PKI as `kplane up` issues it (a
// CA, the apiserver's serving certificate for localhost/127.0.0.1, the
// admin's client certificate CN=kubernetes-admin O=system:masters) in
// <dir>/pki, the apiserver flags that serve with it, and kubeconfigs that
// carry it either as *-data fields (kubeadm's admin.conf, `kplane up`'s
// kubeconfig) or as file paths relative to the kubeconfig.
//
//   ASSERT_OK_AND_ASSIGN(TestPki pki, MakeTestPki(dir));
//   Process api(ApiserverArgv(KPLANE_BINARY, dir, pki), {}, log);
//   std::ofstream(dir + "/kubeconfig") << KubeconfigWithData(url,
//   pki.ca.cert_pem, pki.admin);
//
// Thread-safety: plain functions. Errors: net::Pki's.
#ifndef KPLANE_TESTS_E2E_KUBECTL_TLS_SETUP_H_
#define KPLANE_TESTS_E2E_KUBECTL_TLS_SETUP_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/base64.h"
#include "base/statusor.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::e2e {

struct TestPki {
  std::string dir;  // <dir>/pki
  net::KeyPair ca;
  net::KeyPair admin;
};

inline StatusOr<TestPki> MakeTestPki(const std::string& dir) {
  TestPki out{.dir = dir + "/pki"};
  net::Pki pki({.dir = out.dir});
  ASSIGN_OR_RETURN(out.ca, pki.EnsureCa());
  RETURN_IF_ERROR(
      pki.EnsureCertificate("apiserver", {.common_name = "kube-apiserver",
                                          .dns_names = {"localhost"},
                                          .ip_addresses = {"127.0.0.1"},
                                          .server_auth = true})
          .status());
  ASSIGN_OR_RETURN(out.admin, pki.EnsureCertificate(
                                  "admin", {.common_name = "kubernetes-admin",
                                            .organizations = {"system:masters"},
                                            .client_auth = true}));
  return out;
}

// kube-apiserver's flags serving with the PKI, client certificates
// requested and verified against its CA.
inline std::vector<std::string> ApiserverTlsFlags(const TestPki& pki) {
  return {"--tls-cert-file",        pki.dir + "/apiserver.crt",
          "--tls-private-key-file", pki.dir + "/apiserver.key",
          "--client-ca-file",       pki.dir + "/ca.crt"};
}

// `kplane apiserver` as the suites run it: any free port (it prints
// "serving on https://127.0.0.1:<port>"), the embedded store in <dir>/data,
// warnings only, ApiserverTlsFlags, and every request allowed: the suites'
// clients carry certificates without RBAC roles of their own.
inline std::vector<std::string> ApiserverArgv(const std::string& kplane_binary,
                                              const std::string& dir,
                                              const TestPki& pki) {
  std::vector<std::string> argv = {kplane_binary, "apiserver",  "--port",
                                   "0",           "--data-dir", dir + "/data",
                                   "--log-level", "warning"};
  for (std::string& f : ApiserverTlsFlags(pki)) argv.push_back(std::move(f));
  argv.push_back("--authorization-mode=AlwaysAllow");
  return argv;
}

// One cluster/context/user; `cluster_tls` and `user_tls` are the YAML
// lines (4-space indented) under cluster: and user:.
inline std::string Kubeconfig(const std::string& server,
                              const std::string& cluster_tls,
                              const std::string& user_tls) {
  return "apiVersion: v1\nkind: Config\n"
         "clusters:\n- name: kplane\n  cluster:\n    server: " +
         server + "\n" + cluster_tls +
         "contexts:\n- name: kplane\n  context:\n"
         "    cluster: kplane\n    user: admin\n"
         "current-context: kplane\n"
         "users:\n- name: admin\n  user:\n" +
         user_tls;
}

// The CA and the admin's pair inline, base64 (as `kplane up` writes).
inline std::string KubeconfigWithData(const std::string& server,
                                      const std::string& ca_pem,
                                      const net::KeyPair& user) {
  return Kubeconfig(
      server, "    certificate-authority-data: " + Base64Encode(ca_pem) + "\n",
      "    client-certificate-data: " + Base64Encode(user.cert_pem) +
          "\n    client-key-data: " + Base64Encode(user.key_pem) + "\n");
}

// The PKI's files by path relative to a kubeconfig in pki.dir's parent
// (kubectl resolves them against the kubeconfig's directory).
inline std::string KubeconfigWithRelativeFiles(const std::string& server) {
  return Kubeconfig(server, "    certificate-authority: pki/ca.crt\n",
                    "    client-certificate: pki/admin.crt\n"
                    "    client-key: pki/admin.key\n");
}

// A client context for the suites' own requests, as the admin.
inline StatusOr<std::shared_ptr<const net::TlsContext>> AdminTls(
    const TestPki& pki) {
  return net::TlsContext::NewClient({.ca_pem = pki.ca.cert_pem,
                                     .cert_pem = pki.admin.cert_pem,
                                     .key_pem = pki.admin.key_pem});
}

}  // namespace kplane::e2e

#endif  // KPLANE_TESTS_E2E_KUBECTL_TLS_SETUP_H_
