// TLS for kplane's own HTTP server and client (OpenSSL 3 from Debian).
//
// TlsContext holds what both ends of many connections share: the
// certificate chain and key, the CAs trusted for the peer, the client
// certificate policy and the ALPN protocols. TlsSession is one connection
// over a non-blocking socket: the caller drives Handshake/Read/Write and
// waits for the socket when they answer kWantRead or kWantWrite, so an
// event loop serves many handshakes on one thread (net/http_server.cc) and
// a blocking client polls (net/http_client.cc).
//
//   TlsServerConfig sc{.cert_file = dir + "/apiserver.crt",
//                      .key_file = dir + "/apiserver.key",
//                      .client_ca_file = dir + "/ca.crt",
//                      .client_auth = ClientAuth::kRequest,
//                      .alpn = {"http/1.1"}};
//   ASSIGN_OR_RETURN(auto server_ctx, TlsContext::NewServer(sc));
//   TlsClientConfig cc{.ca_file = dir + "/ca.crt",
//                      .cert_file = dir + "/admin.crt",
//                      .key_file = dir + "/admin.key"};
//   ASSIGN_OR_RETURN(auto client_ctx, TlsContext::NewClient(cc));
//
// Policy (the same as Go's crypto/tls defaults, which kube-apiserver and
// etcd use): TLS 1.2 and 1.3 only; OpenSSL's default cipher lists at
// security level 2 (>= 112-bit keys, no RC4/3DES/MD5-signed certificates);
// no renegotiation; no compression. A client verifies the server's chain
// and its name (DNS SAN, or IP SAN for an IP literal) unless told to skip
// it. Client certificates, as etcd's --client-cert-auth and kube's
// --client-ca-file:
//   kNone              none asked for.
//   kRequest           asked for; a connection without one is accepted, and
//                      so is one whose certificate does not verify (kube's
//                      RequestClientCert: the authenticator, not TLS,
//                      rejects it) -- TlsConnectionInfo says which.
//   kRequireAndVerify  a certificate signed by client_ca is required, or
//                      the handshake fails (etcd's --client-cert-auth).
//
// Ownership: contexts are shared (shared_ptr) by the server or client and
// every session made from them; a session borrows its socket (never closes
// it). Thread-safety: a TlsContext is immutable once built and may be used
// from any thread. A TlsSession is not thread-safe: one caller at a time
// (a Read and a Write must not overlap; callers hold a lock).
// Errors: Status, never exceptions. Building a context: kNotFound (a file
// is missing), kInvalidArgument (bad PEM, a key that does not match the
// certificate, a missing half of a pair). Sessions: kUnavailable for a
// failed handshake or a broken connection, with OpenSSL's reason and, for
// a certificate that did not verify, which check failed ("certificate has
// expired", "certificate is not yet valid", "signed by an unknown
// authority", "not valid for <name>").
#ifndef KPLANE_NET_TLS_H_
#define KPLANE_NET_TLS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/statusor.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace kplane::net {

enum class ClientAuth { kNone, kRequest, kRequireAndVerify };

// Each PEM input is given as a file path or as PEM text (not both).
struct TlsServerConfig {
  std::string cert_file;  // the server's certificate, then intermediates
  std::string key_file;
  std::string cert_pem;
  std::string key_pem;
  // CAs that sign client certificates (needed unless client_auth is kNone).
  std::string client_ca_file;
  std::string client_ca_pem;
  ClientAuth client_auth = ClientAuth::kNone;
  // Protocols offered through ALPN, in the server's order of preference
  // ("h2", "http/1.1"). A client offering none of them is refused (RFC
  // 7301); a client offering no ALPN at all is accepted. Empty: no ALPN.
  std::vector<std::string> alpn;
};

struct TlsClientConfig {
  // CAs trusted for the server. Both empty: the system's trust store.
  std::string ca_file;
  std::string ca_pem;
  // The client certificate (both halves or neither).
  std::string cert_file;
  std::string key_file;
  std::string cert_pem;
  std::string key_pem;
  // The name the server's certificate must carry, and the SNI sent; empty:
  // the host the caller connects to.
  std::string server_name;
  // Accept any server certificate (tests and bootstrap only, as kubectl's
  // --insecure-skip-tls-verify).
  bool insecure_skip_verify = false;
  std::vector<std::string> alpn;  // offered, in order; empty: no ALPN
};

// Who a certificate names. For a Kubernetes client certificate CN is the
// user and O the groups.
struct CertificateIdentity {
  std::string common_name;
  std::vector<std::string> organizations;
  std::vector<std::string> dns_names;     // subjectAltName DNS entries
  std::vector<std::string> ip_addresses;  // subjectAltName IPs, as text
};

// A parsed certificate (net/pki.h uses it; tests inspect with it).
struct CertificateInfo {
  CertificateIdentity identity;
  std::string issuer_common_name;
  WallTime not_before;
  WallTime not_after;
  bool is_ca = false;
  bool server_auth = false;  // extendedKeyUsage serverAuth
  bool client_auth = false;  // extendedKeyUsage clientAuth
};

// The first certificate in `pem`. kInvalidArgument if there is none.
StatusOr<CertificateInfo> ParseCertificatePem(std::string_view pem);

// What a finished handshake agreed on.
struct TlsConnectionInfo {
  std::string version;  // "TLSv1.3"
  std::string cipher;   // "TLS_AES_256_GCM_SHA384"
  std::string alpn;     // the chosen protocol, "" if none
  // The peer sent a certificate (servers always do).
  bool peer_certificate = false;
  // ... and it verified against the trusted CAs. Only then is `peer` set.
  bool peer_verified = false;
  std::string peer_verify_error;  // why not, when a certificate was sent
  CertificateIdentity peer;
};

class TlsContext {
 public:
  static StatusOr<std::shared_ptr<const TlsContext>> NewServer(
      const TlsServerConfig& config);
  static StatusOr<std::shared_ptr<const TlsContext>> NewClient(
      const TlsClientConfig& config);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  bool is_server() const { return server_; }
  ClientAuth client_auth() const { return client_auth_; }
  const std::string& server_name() const { return server_name_; }
  bool insecure_skip_verify() const { return insecure_skip_verify_; }
  ssl_ctx_st* native() const { return ctx_; }

 private:
  TlsContext() = default;

  ssl_ctx_st* ctx_ = nullptr;
  bool server_ = false;
  ClientAuth client_auth_ = ClientAuth::kNone;
  std::string server_name_;
  bool insecure_skip_verify_ = false;
  std::vector<unsigned char> alpn_wire_;  // server: accepted list
};

// One TLS connection on a non-blocking socket owned by the caller.
class TlsSession {
 public:
  enum class Result {
    kOk,         // done (Read/Write: *n bytes moved)
    kWantRead,   // call again once the socket is readable
    kWantWrite,  // call again once the socket is writable
    kClosed,     // the peer ended the TLS stream (close_notify) or the TCP one
    kError,      // see error()
  };

  // `host` (client): the name or IP literal connected to, verified against
  // the certificate unless the context names another or skips verification.
  static StatusOr<std::unique_ptr<TlsSession>> NewServer(
      std::shared_ptr<const TlsContext> ctx, int fd);
  static StatusOr<std::unique_ptr<TlsSession>> NewClient(
      std::shared_ptr<const TlsContext> ctx, int fd, std::string_view host);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  Result Handshake();
  bool handshake_done() const { return handshake_done_; }
  // Reads up to `n` decrypted bytes. With n >= 16 KiB one call takes a
  // whole TLS record, so nothing decrypted is left inside the session and
  // the socket's readiness tells the whole story (see http_server.cc).
  Result Read(char* buf, size_t n, size_t* got);
  // Writes up to `n` bytes; *written may be less (partial writes are on).
  // After kWantWrite, call again with at least the same bytes (the buffer
  // may move).
  Result Write(const char* data, size_t n, size_t* written);
  // Decrypted bytes buffered inside the session.
  size_t Pending() const;
  // Sends close_notify, best effort, without waiting for the peer's.
  void SendCloseNotify();

  // After kError: why (kUnavailable, message as in the file comment).
  const Status& error() const { return error_; }
  // The handshake failed because the peer sent plaintext HTTP (a request
  // line where a TLS record should be).
  bool peer_sent_http() const { return peer_sent_http_; }
  // Valid once handshake_done().
  TlsConnectionInfo Info() const;

 private:
  TlsSession() = default;
  Result Fail(int ssl_result, std::string_view what);

  std::shared_ptr<const TlsContext> ctx_;
  ssl_st* ssl_ = nullptr;
  std::string peer_name_;  // for messages
  bool handshake_done_ = false;
  bool peer_sent_http_ = false;
  Status error_;
};

// Go's answer to plaintext HTTP on a TLS port (net/http's server writes it
// raw on the socket and closes; kube-apiserver and etcd answer the same).
inline constexpr std::string_view kPlainHttpToTlsResponse =
    "HTTP/1.0 400 Bad Request\r\n\r\n"
    "Client sent an HTTP request to an HTTPS server.\n";

}  // namespace kplane::net

#endif  // KPLANE_NET_TLS_H_
