// MemberTlsFiles: one side (clients or peers) of a store member's TLS, as
// etcd 3.4's transport.TLSInfo: the flags --cert-file, --key-file,
// --trusted-ca-file, --client-cert-auth (and their --peer-* twins).
// `kplane store` builds its listeners' and its peer client's contexts here,
// and so can any other code that runs a member (control_plane.cc's
// embedded one) from the same files.
//
//   MemberTlsFiles peer{.cert_file = pki + "/peer.crt",
//                       .key_file = pki + "/peer.key",
//                       .trusted_ca_file = pki + "/ca.crt",
//                       .client_cert_auth = true};
//   ASSIGN_OR_RETURN(MemberTls tls, NewMemberTls(client_files, peer));
//   // or one at a time:
//   ASSIGN_OR_RETURN(auto server_ctx, NewMemberServerTls(peer));
//   ASSIGN_OR_RETURN(auto dial_ctx, NewMemberPeerClientTls(peer));
//   HttpServerOptions o;  o.tls = server_ctx;          // the peer listener
//   PeerTransportOptions t;  t.client_tls = dial_ctx;  // to other members
//
// Meaning, as etcd's (pkg/transport/listener.go):
//  - Server side (TLSInfo.ServerConfig): serve cert_file/key_file; a client
//    certificate is required and verified against trusted_ca_file when
//    trusted_ca_file is given OR client_cert_auth is on (etcd requires client
//    certificates as soon as a trusted CA file is set). Unlike etcd,
//    client_cert_auth without trusted_ca_file is refused rather than
//    verifying clients against the system's roots.
//  - Peer client side (TLSInfo.ClientConfig): present cert_file/key_file to
//    the other members and verify theirs against trusted_ca_file (the
//    system's roots when it is empty), by the host dialed.
//
//  - crl_file applies to the server side, the name filters and
//    cipher_suites to both (see the fields).
//
// Thread-safety: free functions, no shared state. Errors: kInvalidArgument
// with etcd's text when only one of cert and key is given ("KeyFile and
// CertFile must both be present[key: K, cert: C]"), or when no pair is given
// to a server; net/tls.h's codes (kNotFound for a missing file,
// kInvalidArgument for bad PEM or a key that does not match).
#ifndef KPLANE_STORAGE_SERVER_MEMBER_TLS_H_
#define KPLANE_STORAGE_SERVER_MEMBER_TLS_H_

#include <memory>
#include <string>
#include <vector>

#include "base/statusor.h"
#include "net/tls.h"

namespace kplane::storage {

struct MemberTlsFiles {
  std::string cert_file;
  std::string key_file;
  std::string trusted_ca_file;
  bool client_cert_auth = false;
  // etcd's --auto-tls / --peer-auto-tls (TLSInfo.selfCert): cert_file and
  // key_file are a pair EnsureSelfSignedPair generates (and reuses), and
  // whoever dials with these files does not verify the server's certificate
  // (etcd's InsecureSkipVerify for self-signed peers): encryption without
  // authentication, as etcd documents it.
  bool self_signed = false;
  // The names the generated certificate holds (the listen URLs' hosts).
  std::vector<std::string> self_signed_hosts;
  // etcd's --client-crl-file / --peer-crl-file (TLSInfo.CRLFile): a CRL,
  // PEM or DER; a server refuses a handshake whose certificate chain holds a
  // serial number the CRL lists. As etcd's checkCRL, only the list of
  // serials counts: neither the CRL's signature nor its dates are checked.
  std::string crl_file;
  // etcd's --cipher-suites (TLSInfo.CipherSuites), by Go's names
  // ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"): the TLS 1.2 suites a server
  // and a peer client allow (TLS 1.3's are not configurable, as in Go).
  // Empty: OpenSSL's defaults. An unknown name is kInvalidArgument with
  // etcd's words ("unexpected TLS cipher suite \"X\"").
  std::vector<std::string> cipher_suites;
  // etcd's --peer-cert-allowed-cn (TLSInfo.AllowedCN): a server accepts
  // only client certificates whose subject CommonName is exactly this, and
  // --peer-cert-allowed-hostname / --client-cert-allowed-hostname
  // (AllowedHostname): only those valid for this host name (SAN, as Go's
  // VerifyHostname). Refused: handshake alert bad_certificate. Need client
  // certificate authentication; mutually exclusive, as etcd's. As etcd's
  // (baseConfig), a peer client checks the other member's server
  // certificate the same way.
  std::string allowed_cn;
  std::string allowed_hostname;

  // etcd's TLSInfo.Empty(): no certificate and no key.
  bool empty() const { return cert_file.empty() && key_file.empty(); }
  // Whether a server built from these files requires client certificates.
  bool requires_client_certs() const {
    return !trusted_ca_file.empty() || client_cert_auth;
  }
};

// A server context for a member's listener (clients or peers). ALPN: the
// protocols offered: the peer listener speaks http/1.1 only; the client
// listener also offers h2, whose connections go to the gRPC front
// (NewMemberTls does that).
StatusOr<std::shared_ptr<const net::TlsContext>> NewMemberServerTls(
    const MemberTlsFiles& files, std::vector<std::string> alpn = {"http/1.1"});

// etcd's transport.SelfCert for files.self_signed (nothing otherwise):
// files.cert_file and files.key_file are loaded if they hold a valid pair
// for the hosts, else generated there (EC P-256, 1 year, serverAuth and
// clientAuth, the hosts as IP or DNS SANs; net/pki.h, which also writes the
// issuing CA beside them as ca.crt/ca.key: the pair's directory must be
// theirs alone). Files 0600, the directory 0700.
Status EnsureSelfSignedPair(const MemberTlsFiles& files);

// The context a member dials its peers with (the peer files).
StatusOr<std::shared_ptr<const net::TlsContext>> NewMemberPeerClientTls(
    const MemberTlsFiles& files);

// Everything a member's TLS needs, from etcd's two TLSInfos. A context is
// null where its side has no files (that side's URLs must be http://);
// peer_client is built when the peer side has a pair or a CA.
struct MemberTls {
  std::shared_ptr<const net::TlsContext> client_server;  // https client URLs
  std::shared_ptr<const net::TlsContext> peer_server;    // https peer URLs
  std::shared_ptr<const net::TlsContext> peer_client;    // HttpPeerTransport
};
StatusOr<MemberTls> NewMemberTls(const MemberTlsFiles& client,
                                 const MemberTlsFiles& peer);

// OpenSSL's cipher list ("A:B") for Go's TLS 1.2 suite names, as etcd's
// --cipher-suites takes them. kInvalidArgument for a name Go does not have
// ("unexpected TLS cipher suite \"X\"", etcd's words).
StatusOr<std::string> OpenSslCipherList(
    const std::vector<std::string>& go_names);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_MEMBER_TLS_H_
