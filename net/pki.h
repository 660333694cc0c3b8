// A small PKI for kplane's own TLS (issue 18): a CA, server certificates
// with DNS and IP SANs, client certificates with CN = user and O = groups
// (Kubernetes' x509 authentication convention), kept as PEM files in a
// directory and reused on the next start, as k3s and kubeadm keep theirs.
//
//   Pki pki({.dir = data_dir + "/pki"});
//   ASSIGN_OR_RETURN(KeyPair ca, pki.EnsureCa());
//   ASSIGN_OR_RETURN(KeyPair api, pki.EnsureCertificate("apiserver",
//       {.common_name = "kube-apiserver", .dns_names = {"localhost"},
//        .ip_addresses = {"127.0.0.1"}, .server_auth = true}));
//   ASSIGN_OR_RETURN(KeyPair admin, pki.EnsureCertificate("admin",
//       {.common_name = "admin", .organizations = {"system:masters"},
//        .client_auth = true}));
//   // dir/ca.crt dir/ca.key dir/apiserver.crt dir/apiserver.key ...
//
// Why here (net/) and not a security/ folder: this is TLS material, made
// with the same OpenSSL as net/tls.h and checked by its parser, and
// net/ is the one library that links OpenSSL; the authenticators and
// authorizers that read the identities are apiserver-level rooms of their
// own.
//
// Keys are EC P-256 (ECDSA with SHA-256), as k3s generates by default:
// generating one takes well under a millisecond (RSA 2048: ~50-100 ms,
// many certificates per `kplane up`), handshakes sign faster, and Go
// (kubectl, client-go, etcd), curl and Python all accept them. Validity:
// the CA 10 years, leaf certificates 1 year (kubeadm's and k3s's periods),
// both starting 5 minutes before the injected clock's wall time so that a
// peer whose clock is a little behind does not see "not yet valid".
//
// Files: <name>.crt and <name>.key, written through the FileSystem seam
// (base/file_system.h): atomically (temp file, fsync, rename, directory
// fsync) and private (0600; the directory 0700). A key is written before
// its certificate, so a crash between leaves a pair that fails to load and
// is issued again.
//
// Reuse: EnsureCa() loads ca.crt/ca.key when both exist (and fails, never
// overwrites, if they do not belong together or the CA expired: replacing
// a CA invalidates every kubeconfig handed out). EnsureCertificate() loads
// a pair when it belongs together, is signed by the CA, is valid now and
// names exactly what was asked (CN, O, SANs, usages); otherwise it issues a
// new one over it (a new IP for the apiserver gets a new certificate, as
// k3s's dynamic listener does).
//
// Thread-safety: a Pki is used by one thread at a time (startup). The free
// functions are thread-safe.
// Errors: kInvalidArgument for a bad request (an IP that is not one, a
// name with characters a SAN cannot hold), kFailedPrecondition for a CA on
// disk that cannot be used, file-system codes from the seam, kInternal if
// OpenSSL refuses.
#ifndef KPLANE_NET_PKI_H_
#define KPLANE_NET_PKI_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/file_system.h"
#include "base/statusor.h"

namespace kplane::net {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8 ("BEGIN PRIVATE KEY")
};

struct CertificateRequest {
  std::string common_name;                 // CN: the user for a client
  std::vector<std::string> organizations;  // O: the groups for a client
  std::vector<std::string> dns_names;      // SAN DNS entries
  std::vector<std::string> ip_addresses;   // SAN IPs ("127.0.0.1", "::1")
  bool server_auth = false;                // extendedKeyUsage serverAuth
  bool client_auth = false;                // extendedKeyUsage clientAuth
  Duration validity = hours(24 * 365);
};

inline constexpr Duration kCaValidity = hours(24 * 365 * 10);
// How far before "now" a new certificate's validity starts.
inline constexpr Duration kClockSkewAllowance = minutes(5);

// A self-signed CA (CN = common_name), valid from now - 5 min.
StatusOr<KeyPair> GenerateCa(std::string_view common_name, WallTime now,
                             Duration validity = kCaValidity);
// A certificate for `req` signed by `ca`, valid from now - 5 min.
StatusOr<KeyPair> IssueCertificate(const KeyPair& ca,
                                   const CertificateRequest& req, WallTime now);

struct PkiOptions {
  std::string dir;           // created (0700) if missing
  FileSystem* fs = nullptr;  // nullptr: FileSystem::Default()
  Clock* clock = nullptr;    // nullptr: Clock::Real(); WallNow() is used
  std::string ca_common_name = "kplane-ca";
};

class Pki {
 public:
  explicit Pki(PkiOptions options);

  // dir/ca.crt and dir/ca.key: loaded if present, else created.
  StatusOr<KeyPair> EnsureCa();
  // dir/<name>.crt and dir/<name>.key for `req`, signed by the CA
  // (EnsureCa() is called if it was not yet).
  StatusOr<KeyPair> EnsureCertificate(std::string_view name,
                                      const CertificateRequest& req);

  std::string CertPath(std::string_view name) const;
  std::string KeyPath(std::string_view name) const;

 private:
  Status WritePair(std::string_view name, const KeyPair& pair);

  PkiOptions opts_;
  FileSystem* fs_;
  Clock* clock_;
  KeyPair ca_;
  bool have_ca_ = false;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_PKI_H_
