#include "storage/server/member_tls.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/file_system.h"
#include "base/strings.h"
#include "net/pki.h"

namespace kplane::storage {
namespace {

// etcd's TLSInfo.baseConfig check, with its words.
Status CheckPair(const MemberTlsFiles& f) {
  if (f.cert_file.empty() || f.key_file.empty()) {
    return InvalidArgumentError(
        "KeyFile and CertFile must both be present[key: " + f.key_file +
        ", cert: " + f.cert_file + "]");
  }
  return Status::Ok();
}

// Go's TLS 1.2 cipher suite names (crypto/tls, as etcd's --cipher-suites
// takes them) to OpenSSL's.
const std::map<std::string, std::string, std::less<>>& GoCipherSuites() {
  static const auto* m = new std::map<std::string, std::string, std::less<>>{
      {"TLS_RSA_WITH_RC4_128_SHA", "RC4-SHA"},
      {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
      {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
      {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
      {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
      {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "ECDHE-ECDSA-RC4-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
      {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA"},
      {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
       "ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
       "ECDHE-ECDSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
       "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
       "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
       "ECDHE-ECDSA-CHACHA20-POLY1305"},
  };
  return *m;
}

}  // namespace

StatusOr<std::string> OpenSslCipherList(
    const std::vector<std::string>& go_names) {
  std::vector<std::string> openssl_names;
  for (const std::string& name : go_names) {
    auto it = GoCipherSuites().find(name);
    if (it == GoCipherSuites().end()) {
      return InvalidArgumentError("unexpected TLS cipher suite \"" + name +
                                  "\"");
    }
    openssl_names.push_back(it->second);
  }
  return StrJoin(openssl_names, ":");
}

namespace {

Status RestrictCipherSuites(const std::vector<std::string>& go_names,
                            const net::TlsContext& ctx) {
  if (go_names.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(std::string list, OpenSslCipherList(go_names));
  // Suites this OpenSSL no longer has (RC4) are skipped by it; none left
  // fails here.
  if (SSL_CTX_set_cipher_list(ctx.native(), list.c_str()) != 1) {
    return InvalidArgumentError(
        "none of the TLS cipher suites is available in this OpenSSL: " +
        StrJoin(go_names, ","));
  }
  return Status::Ok();
}

// The serial numbers a CRL lists (big-endian bytes, as Go's
// big.Int.Bytes()).
using RevokedSerials = std::set<std::string>;

std::string SerialBytes(const ASN1_INTEGER* serial) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(serial, nullptr);
  if (bn == nullptr) return "";
  std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

void AddRevoked(X509_CRL* crl, RevokedSerials* serials) {
  STACK_OF(X509_REVOKED)* revoked = X509_CRL_get_REVOKED(crl);
  for (int i = 0; i < sk_X509_REVOKED_num(revoked); ++i) {
    serials->insert(SerialBytes(
        X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(revoked, i))));
  }
}

// PEM (one or more CRLs) or DER (one), as Go's x509.ParseCRL.
StatusOr<RevokedSerials> ReadCrl(const std::string& path) {
  ASSIGN_OR_RETURN(std::string data, ReadFile(FileSystem::Default(), path));
  RevokedSerials serials;
  int crls = 0;
  if (data.starts_with("-----BEGIN")) {
    BIO* bio = BIO_new_mem_buf(data.data(), static_cast<int>(data.size()));
    while (X509_CRL* crl =
               PEM_read_bio_X509_CRL(bio, nullptr, nullptr, nullptr)) {
      ++crls;
      AddRevoked(crl, &serials);
      X509_CRL_free(crl);
    }
    BIO_free(bio);
  } else {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    if (X509_CRL* crl =
            d2i_X509_CRL(nullptr, &p, static_cast<long>(data.size()))) {
      ++crls;
      AddRevoked(crl, &serials);
      X509_CRL_free(crl);
    }
  }
  ERR_clear_error();  // the read that ended the loop, or the DER error
  if (crls == 0) {
    return InvalidArgumentError("no X509 CRL (PEM or DER) in " + path);
  }
  return serials;
}

// What a context checks after the chain verifies (etcd's TLSInfo checks):
// owned by the SSL_CTX, freed with it through the ex_data index.
struct CertChecks {
  RevokedSerials revoked;
  std::string allowed_cn;
  std::string allowed_hostname;
};

int CertChecksIndex() {
  static const int index = SSL_CTX_get_ex_new_index(
      0, nullptr, nullptr, nullptr,
      [](void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
        delete static_cast<CertChecks*>(ptr);
      });
  return index;
}

int Reject(X509_STORE_CTX* store_ctx, X509* cert, int error) {
  X509_STORE_CTX_set_current_cert(store_ctx, cert);
  X509_STORE_CTX_set_error(store_ctx, error);
  return 0;
}

// The chain verification, then etcd's checks: no certificate of the
// presented chain revoked (checkCRL, servers), the leaf's CommonName equal to
// the allowed one (--peer-cert-allowed-cn), the leaf valid for the allowed host
// name (--*-cert-allowed-hostname, x509's VerifyHostname). A name refused
// is X509_V_ERR_CERT_REJECTED, which OpenSSL alerts as bad_certificate, as
// Go's server does when etcd's VerifyPeerCertificate fails.
int VerifyThenCheck(X509_STORE_CTX* store_ctx, void* arg) {
  const int ok = X509_verify_cert(store_ctx);
  if (ok <= 0) return ok;
  const auto* checks = static_cast<const CertChecks*>(arg);
  STACK_OF(X509)* presented = X509_STORE_CTX_get0_untrusted(store_ctx);
  X509* leaf = X509_STORE_CTX_get0_cert(store_ctx);
  if (!checks->revoked.empty()) {
    if (checks->revoked.count(SerialBytes(X509_get0_serialNumber(leaf)))) {
      return Reject(store_ctx, leaf, X509_V_ERR_CERT_REVOKED);
    }
    for (int i = 0; i < sk_X509_num(presented); ++i) {
      X509* cert = sk_X509_value(presented, i);
      if (checks->revoked.count(SerialBytes(X509_get0_serialNumber(cert)))) {
        return Reject(store_ctx, cert, X509_V_ERR_CERT_REVOKED);
      }
    }
  }
  if (!checks->allowed_cn.empty()) {
    char cn[256] = {0};
    const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(leaf),
                                            NID_commonName, cn, sizeof(cn));
    if (n < 0 ||
        checks->allowed_cn != std::string(cn, static_cast<size_t>(n))) {
      return Reject(store_ctx, leaf, X509_V_ERR_CERT_REJECTED);
    }
  }
  if (!checks->allowed_hostname.empty() &&
      X509_check_host(leaf, checks->allowed_hostname.data(),
                      checks->allowed_hostname.size(), 0, nullptr) != 1) {
    return Reject(store_ctx, leaf, X509_V_ERR_CERT_REJECTED);
  }
  return 1;
}

// `with_crl`: a server (etcd checks the CRL in its listener only); the
// name filters apply to servers and peer clients alike (etcd's baseConfig
// sets VerifyPeerCertificate for both).
Status AddCertChecks(const MemberTlsFiles& files, const net::TlsContext& ctx,
                     bool with_crl) {
  if (!files.allowed_cn.empty() && !files.allowed_hostname.empty()) {
    return InvalidArgumentError(
        "AllowedCN and AllowedHostname are mutually exclusive (cn=\"" +
        files.allowed_cn + "\", hostname=\"" + files.allowed_hostname + "\")");
  }
  if ((!with_crl || files.crl_file.empty()) && files.allowed_cn.empty() &&
      files.allowed_hostname.empty()) {
    return Status::Ok();
  }
  auto checks = std::make_unique<CertChecks>();
  if (with_crl && !files.crl_file.empty()) {
    StatusOr<RevokedSerials> serials = ReadCrl(files.crl_file);
    if (!serials.ok()) return serials.status().Annotate("--crl-file");
    checks->revoked = std::move(*serials);
  }
  checks->allowed_cn = files.allowed_cn;
  checks->allowed_hostname = files.allowed_hostname;
  CertChecks* owned = checks.release();
  SSL_CTX_set_ex_data(ctx.native(), CertChecksIndex(), owned);
  SSL_CTX_set_cert_verify_callback(ctx.native(), VerifyThenCheck, owned);
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<const net::TlsContext>> NewMemberServerTls(
    const MemberTlsFiles& files, std::vector<std::string> alpn) {
  RETURN_IF_ERROR(CheckPair(files));
  if ((!files.allowed_cn.empty() || !files.allowed_hostname.empty()) &&
      !files.requires_client_certs()) {
    return InvalidArgumentError(
        "a certificate name filter (--peer-cert-allowed-cn, "
        "--*-cert-allowed-hostname) needs client certificate authentication "
        "(--*client-cert-auth with --*trusted-ca-file)");
  }
  net::TlsServerConfig sc;
  sc.cert_file = files.cert_file;
  sc.key_file = files.key_file;
  sc.alpn = std::move(alpn);
  if (files.requires_client_certs()) {
    if (files.trusted_ca_file.empty()) {
      return InvalidArgumentError(
          "client certificate authentication needs a trusted CA file "
          "(--trusted-ca-file / --peer-trusted-ca-file): kplane does not "
          "verify client certificates against the system's roots");
    }
    sc.client_ca_file = files.trusted_ca_file;
    sc.client_auth = net::ClientAuth::kRequireAndVerify;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const net::TlsContext> ctx,
                   net::TlsContext::NewServer(sc));
  RETURN_IF_ERROR(RestrictCipherSuites(files.cipher_suites, *ctx));
  RETURN_IF_ERROR(AddCertChecks(files, *ctx, /*with_crl=*/true));
  return ctx;
}

Status EnsureSelfSignedPair(const MemberTlsFiles& files) {
  if (!files.self_signed) return Status::Ok();
  const std::string suffix = ".crt";
  const size_t slash = files.cert_file.rfind('/');
  if (slash == std::string::npos || !files.cert_file.ends_with(suffix) ||
      files.key_file !=
          files.cert_file.substr(0, files.cert_file.size() - suffix.size()) +
              ".key") {
    return InvalidArgumentError(
        "a self-signed pair is <dir>/<name>.crt and <dir>/<name>.key, not " +
        files.cert_file + " and " + files.key_file);
  }
  const std::string dir = files.cert_file.substr(0, slash);
  const std::string name = files.cert_file.substr(
      slash + 1, files.cert_file.size() - slash - 1 - suffix.size());
  net::CertificateRequest req{
      .common_name = "kplane-store", .server_auth = true, .client_auth = true};
  for (const std::string& h : files.self_signed_hosts) {
    unsigned char buf[16];
    const bool ip = inet_pton(AF_INET, h.c_str(), buf) == 1 ||
                    inet_pton(AF_INET6, h.c_str(), buf) == 1;
    std::vector<std::string>& into = ip ? req.ip_addresses : req.dns_names;
    if (!h.empty() && std::find(into.begin(), into.end(), h) == into.end()) {
      into.push_back(h);
    }
  }
  net::Pki pki({.dir = dir, .ca_common_name = "kplane-store-auto-tls"});
  StatusOr<net::KeyPair> pair = pki.EnsureCertificate(name, req);
  if (!pair.ok()) {
    return pair.status().Annotate("generating the self-signed pair in " + dir);
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<const net::TlsContext>> NewMemberPeerClientTls(
    const MemberTlsFiles& files) {
  net::TlsClientConfig cc;
  if (!files.empty()) {
    RETURN_IF_ERROR(CheckPair(files));
    cc.cert_file = files.cert_file;
    cc.key_file = files.key_file;
  }
  cc.ca_file = files.trusted_ca_file;
  cc.insecure_skip_verify = files.self_signed;
  cc.alpn = {"http/1.1"};
  ASSIGN_OR_RETURN(std::shared_ptr<const net::TlsContext> ctx,
                   net::TlsContext::NewClient(cc));
  RETURN_IF_ERROR(RestrictCipherSuites(files.cipher_suites, *ctx));
  RETURN_IF_ERROR(AddCertChecks(files, *ctx, /*with_crl=*/false));
  return ctx;
}

StatusOr<MemberTls> NewMemberTls(const MemberTlsFiles& client,
                                 const MemberTlsFiles& peer) {
  MemberTls tls;
  if (!client.empty()) {
    // Both, in the server's order of preference (OpenSSL picks the first of
    // ours the client offers): an HTTP client that can speak http/1.1
    // (curl, browsers, Python; curl offers h2 too) gets it and the JSON
    // gateway; gRPC clients offer h2 alone (grpc-go: etcdctl, clientv3;
    // grpc-js) or with grpc-exp (gRPC C-core) and go to the gRPC front.
    // etcd tells the two apart per HTTP/2 request by content type; our gRPC
    // server owns whole connections, so the choice is made per connection.
    ASSIGN_OR_RETURN(tls.client_server,
                     NewMemberServerTls(client, {"http/1.1", "h2"}));
  }
  if (!peer.empty()) {
    ASSIGN_OR_RETURN(tls.peer_server, NewMemberServerTls(peer));
  }
  if (!peer.empty() || !peer.trusted_ca_file.empty()) {
    ASSIGN_OR_RETURN(tls.peer_client, NewMemberPeerClientTls(peer));
  }
  return tls;
}

}  // namespace kplane::storage
