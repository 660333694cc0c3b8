#include "net/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/file_system.h"
#include "base/logging.h"

namespace kplane::net {

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// An alert the other side sent, in Go's words ("remote error: tls: bad
// certificate"), as etcd and its tools print it; empty for other errors.
std::string GoRemoteAlert(unsigned long err) {
  if (ERR_GET_LIB(err) != ERR_LIB_SSL ||
      ERR_GET_REASON(err) < SSL_AD_REASON_OFFSET) {
    return "";
  }
  switch (ERR_GET_REASON(err) - SSL_AD_REASON_OFFSET) {
    case SSL_AD_HANDSHAKE_FAILURE:
      return "remote error: tls: handshake failure";
    case SSL_AD_BAD_CERTIFICATE:
      return "remote error: tls: bad certificate";
    case SSL_AD_CERTIFICATE_REVOKED:
      return "remote error: tls: revoked certificate";
    case SSL_AD_CERTIFICATE_EXPIRED:
      return "remote error: tls: expired certificate";
    case SSL_AD_UNKNOWN_CA:
      return "remote error: tls: unknown certificate authority";
    case SSL_AD_CERTIFICATE_REQUIRED:
      return "remote error: tls: certificate required";
    default:
      return "";
  }
}

// OpenSSL's queued errors as one line (and the queue emptied).
std::string DrainErrors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    // "error:0A000086:SSL routines::certificate verify failed": keep the
    // reason, the part after the last ':'.
    std::string_view s(buf);
    size_t colon = s.rfind(':');
    if (colon != std::string_view::npos) s.remove_prefix(colon + 1);
    if (!out.empty()) out += "; ";
    out.append(s);
  }
  return out;
}

// The PEM text from `file` or `pem`, whichever is set; "" if neither.
StatusOr<std::string> PemInput(const std::string& file, const std::string& pem,
                               std::string_view what) {
  if (!file.empty() && !pem.empty()) {
    return InvalidArgumentError(std::string(what) +
                                ": give a file or PEM text, not both");
  }
  if (pem.empty() && file.empty()) return std::string();
  if (!pem.empty()) return pem;
  StatusOr<std::string> data = ReadFile(FileSystem::Default(), file);
  if (!data.ok()) {
    return Status(data.status().code(),
                  std::string(what) + " " + file + ": " +
                      std::string(data.status().message()));
  }
  if (data->empty()) {
    return InvalidArgumentError(std::string(what) + " " + file + " is empty");
  }
  return *data;
}

std::string Source(const std::string& file, std::string_view what) {
  return file.empty() ? std::string(what) + " (PEM text)"
                      : std::string(what) + " " + file;
}

// Every certificate in `pem`, in order.
StatusOr<std::vector<X509Ptr>> ParseCertificates(std::string_view pem,
                                                 const std::string& source) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<X509Ptr> certs;
  for (;;) {
    X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (x == nullptr) break;
    certs.emplace_back(x);
  }
  ERR_clear_error();  // the read past the last certificate
  if (certs.empty()) {
    return InvalidArgumentError(source + ": no PEM certificate found");
  }
  return certs;
}

StatusOr<PkeyPtr> ParseKey(std::string_view pem, const std::string& source) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (k == nullptr) {
    std::string why = DrainErrors();
    return InvalidArgumentError(source + ": no PEM private key found" +
                                (why.empty() ? "" : " (" + why + ")"));
  }
  return PkeyPtr(k);
}

// Installs a certificate chain and its key on `ctx`.
Status UseKeyPair(SSL_CTX* ctx, const std::string& cert_file,
                  const std::string& cert_pem, const std::string& key_file,
                  const std::string& key_pem, std::string_view role) {
  const std::string cert_what = std::string(role) + " certificate";
  const std::string key_what = std::string(role) + " key";
  ASSIGN_OR_RETURN(std::string cert, PemInput(cert_file, cert_pem, cert_what));
  ASSIGN_OR_RETURN(std::string key, PemInput(key_file, key_pem, key_what));
  if (cert.empty() != key.empty()) {
    return InvalidArgumentError(std::string(role) +
                                ": a certificate needs its key and a key "
                                "its certificate");
  }
  if (cert.empty()) return Status::Ok();
  const std::string cert_src = Source(cert_file, cert_what);
  ASSIGN_OR_RETURN(std::vector<X509Ptr> chain,
                   ParseCertificates(cert, cert_src));
  ASSIGN_OR_RETURN(PkeyPtr pkey, ParseKey(key, Source(key_file, key_what)));
  if (SSL_CTX_use_certificate(ctx, chain[0].get()) != 1) {
    return InvalidArgumentError(cert_src + ": " + DrainErrors());
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return InvalidArgumentError(cert_src + ": " + DrainErrors());
    }
  }
  // SSL_CTX_use_PrivateKey checks the pair too, but says only "key values
  // mismatch"; a mismatch is the common mistake, so name it plainly.
  if (X509_check_private_key(chain[0].get(), pkey.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError(Source(key_file, key_what) +
                                " does not match " + cert_src);
  }
  if (SSL_CTX_use_PrivateKey(ctx, pkey.get()) != 1) {
    return InvalidArgumentError(Source(key_file, key_what) + ": " +
                                DrainErrors());
  }
  return Status::Ok();
}

// Trusts the CAs in file/pem (for verifying the peer). Returns the subject
// names (a server sends them as the acceptable client CAs).
StatusOr<STACK_OF(X509_NAME) *> TrustCas(SSL_CTX* ctx, const std::string& file,
                                         const std::string& pem,
                                         std::string_view what) {
  ASSIGN_OR_RETURN(std::string text, PemInput(file, pem, what));
  const std::string src = Source(file, what);
  ASSIGN_OR_RETURN(std::vector<X509Ptr> cas, ParseCertificates(text, src));
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  for (const X509Ptr& ca : cas) {
    if (X509_STORE_add_cert(store, ca.get()) != 1) {
      sk_X509_NAME_pop_free(names, X509_NAME_free);
      return InvalidArgumentError(src + ": " + DrainErrors());
    }
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca.get())));
  }
  return names;
}

// ALPN wire format: each name prefixed by its length.
StatusOr<std::vector<unsigned char>> AlpnWire(
    const std::vector<std::string>& protos) {
  std::vector<unsigned char> out;
  for (const std::string& p : protos) {
    if (p.empty() || p.size() > 255) {
      return InvalidArgumentError("ALPN protocol names are 1..255 bytes");
    }
    out.push_back(static_cast<unsigned char>(p.size()));
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen,
               const unsigned char* in, unsigned int inlen, void* arg) {
  const auto* wire = static_cast<const std::vector<unsigned char>*>(arg);
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, wire->data(),
                            static_cast<unsigned int>(wire->size()), in,
                            inlen) != OPENSSL_NPN_NEGOTIATED) {
    // RFC 7301 3.2: no overlap is a fatal no_application_protocol alert.
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// kRequest: the handshake goes on whatever the verification says; the
// result stays readable (SSL_get_verify_result) for TlsConnectionInfo.
int AcceptAnyCertificate(int, X509_STORE_CTX*) { return 1; }

StatusOr<SSL_CTX*> NewCtx(bool server) {
  SSL_CTX* ctx =
      SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return InternalError("SSL_CTX_new: " + DrainErrors());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_security_level(ctx, 2);
  // A peer that closes TCP without close_notify reads as an ordinary end:
  // HTTP's own framing (Content-Length, chunks) detects truncation, and
  // curl and Go clients often skip close_notify.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Partial writes and a moving buffer: the server's output buffer grows
  // between retries. Released buffers: an idle stream (a watch) keeps no
  // 2 x 16 KiB of record buffers.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}

bool IsIpLiteral(std::string_view host) {
  std::string h(host);
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

std::string Utf8(const ASN1_STRING* s) {
  unsigned char* out = nullptr;
  int n = ASN1_STRING_to_UTF8(&out, s);
  if (n < 0) return "";
  std::string r(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  OPENSSL_free(out);
  return r;
}

std::vector<std::string> NameEntries(const X509_NAME* name, int nid) {
  std::vector<std::string> out;
  for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, nid, i)) {
    out.push_back(Utf8(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i))));
  }
  return out;
}

WallTime AsnTime(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return WallTime();
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

CertificateIdentity IdentityOf(X509* cert) {
  CertificateIdentity id;
  const X509_NAME* subject = X509_get_subject_name(cert);
  std::vector<std::string> cn = NameEntries(subject, NID_commonName);
  if (!cn.empty()) id.common_name = cn.back();
  id.organizations = NameEntries(subject, NID_organizationName);
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS) {
        id.dns_names.push_back(Utf8(g->d.dNSName));
      } else if (g->type == GEN_IPADD) {
        const ASN1_OCTET_STRING* ip = g->d.iPAddress;
        char text[INET6_ADDRSTRLEN] = {};
        int len = ASN1_STRING_length(ip);
        int family = len == 4 ? AF_INET : len == 16 ? AF_INET6 : -1;
        if (family >= 0 &&
            inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof(text))) {
          id.ip_addresses.push_back(text);
        }
      }
    }
    GENERAL_NAMES_free(sans);
  }
  return id;
}

std::string DescribeVerifyError(long v, const std::string& name) {
  const std::string detail = X509_verify_cert_error_string(v);
  switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return "certificate has expired";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "certificate is not yet valid";
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      // Go's words, which kubectl users know.
      return "certificate signed by an unknown authority (" + detail + ")";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return "certificate is not valid for " + name + " (" + detail + ")";
    case X509_V_ERR_CERT_REJECTED:
      // A name check of ours refused it (the store's --*-cert-allowed-cn /
      // -hostname): etcd's words, which its users and tests look for
      // ("client certificate authentication failed").
      return "certificate authentication failed (" + detail + ")";
    default:
      return detail;
  }
}

// A socket BIO of our own: OpenSSL's writes with write(2), which raises
// SIGPIPE when the peer is gone (kplane does not ignore SIGPIPE; every
// send in net/ passes MSG_NOSIGNAL, and so does this one).
struct SocketBioState {
  int fd;
  bool eof = false;
};

int SocketBioWrite(BIO* b, const char* data, size_t len, size_t* written) {
  auto* st = static_cast<SocketBioState*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  ssize_t n;
  do {
    n = ::send(st->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) {
    *written = static_cast<size_t>(n);
    return 1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
  return 0;
}

int SocketBioRead(BIO* b, char* data, size_t len, size_t* got) {
  auto* st = static_cast<SocketBioState*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  ssize_t n;
  do {
    n = ::recv(st->fd, data, len, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    *got = static_cast<size_t>(n);
    return 1;
  }
  if (n == 0) {
    st->eof = true;  // BIO_eof() tells OpenSSL it was an end, not an error
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    BIO_set_retry_read(b);
  }
  return 0;
}

long SocketBioCtrl(BIO* b, int cmd, long, void*) {
  auto* st = static_cast<SocketBioState*>(BIO_get_data(b));
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_EOF:
      return st != nullptr && st->eof ? 1 : 0;
    default:
      return 0;
  }
}

int SocketBioDestroy(BIO* b) {
  delete static_cast<SocketBioState*>(BIO_get_data(b));
  BIO_set_data(b, nullptr);
  return 1;
}

BIO_METHOD* SocketBioMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(
        BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
        "kplane socket");
    CHECK(m != nullptr);
    BIO_meth_set_write_ex(m, SocketBioWrite);
    BIO_meth_set_read_ex(m, SocketBioRead);
    BIO_meth_set_ctrl(m, SocketBioCtrl);
    BIO_meth_set_destroy(m, SocketBioDestroy);
    return m;
  }();
  return method;
}

// Gives `ssl` a BIO on `fd` (which it does not own).
Status AttachSocket(SSL* ssl, int fd) {
  BIO* bio = BIO_new(SocketBioMethod());
  if (bio == nullptr) return InternalError("BIO_new: " + DrainErrors());
  BIO_set_data(bio, new SocketBioState{fd});
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);  // one reference, for both directions
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------

StatusOr<CertificateInfo> ParseCertificatePem(std::string_view pem) {
  ASSIGN_OR_RETURN(std::vector<X509Ptr> certs,
                   ParseCertificates(pem, "certificate"));
  X509* x = certs[0].get();
  CertificateInfo info;
  info.identity = IdentityOf(x);
  std::vector<std::string> issuer =
      NameEntries(X509_get_issuer_name(x), NID_commonName);
  if (!issuer.empty()) info.issuer_common_name = issuer.back();
  info.not_before = AsnTime(X509_get0_notBefore(x));
  info.not_after = AsnTime(X509_get0_notAfter(x));
  info.is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
  const uint32_t xku = X509_get_extended_key_usage(x);
  if ((X509_get_extension_flags(x) & EXFLAG_XKUSAGE) != 0) {
    info.server_auth = (xku & XKU_SSL_SERVER) != 0;
    info.client_auth = (xku & XKU_SSL_CLIENT) != 0;
  }
  return info;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

StatusOr<std::shared_ptr<const TlsContext>> TlsContext::NewServer(
    const TlsServerConfig& config) {
  std::shared_ptr<TlsContext> c(new TlsContext());
  c->server_ = true;
  c->client_auth_ = config.client_auth;
  ASSIGN_OR_RETURN(c->ctx_, NewCtx(/*server=*/true));
  if (config.cert_file.empty() && config.cert_pem.empty()) {
    return InvalidArgumentError("TLS server: a certificate and key are needed");
  }
  RETURN_IF_ERROR(UseKeyPair(c->ctx_, config.cert_file, config.cert_pem,
                             config.key_file, config.key_pem, "server"));
  const bool has_ca =
      !config.client_ca_file.empty() || !config.client_ca_pem.empty();
  if (config.client_auth != ClientAuth::kNone) {
    if (!has_ca) {
      return InvalidArgumentError(
          "TLS server: client certificates need a client CA");
    }
    ASSIGN_OR_RETURN(STACK_OF(X509_NAME) * names,
                     TrustCas(c->ctx_, config.client_ca_file,
                              config.client_ca_pem, "client CA"));
    SSL_CTX_set_client_CA_list(c->ctx_, names);  // takes ownership
    // A server that asks for client certificates must name its sessions'
    // context, or OpenSSL fails every resumed handshake ("session id
    // context uninitialized"): browsers resume on their second connection
    // (issue 21's web view: chromium's parallel fetches failed). Sessions
    // belong to this SSL_CTX's cache, so one fixed name is enough.
    static constexpr unsigned char kSessionContext[] = "kplane";
    SSL_CTX_set_session_id_context(c->ctx_, kSessionContext,
                                   sizeof(kSessionContext) - 1);
    if (config.client_auth == ClientAuth::kRequireAndVerify) {
      SSL_CTX_set_verify(
          c->ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    } else {
      SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, AcceptAnyCertificate);
    }
  } else if (has_ca) {
    return InvalidArgumentError(
        "TLS server: a client CA was given but client_auth is kNone");
  }
  if (!config.alpn.empty()) {
    ASSIGN_OR_RETURN(c->alpn_wire_, AlpnWire(config.alpn));
    SSL_CTX_set_alpn_select_cb(c->ctx_, SelectAlpn, &c->alpn_wire_);
  }
  return std::shared_ptr<const TlsContext>(std::move(c));
}

StatusOr<std::shared_ptr<const TlsContext>> TlsContext::NewClient(
    const TlsClientConfig& config) {
  std::shared_ptr<TlsContext> c(new TlsContext());
  c->server_ = false;
  c->server_name_ = config.server_name;
  c->insecure_skip_verify_ = config.insecure_skip_verify;
  ASSIGN_OR_RETURN(c->ctx_, NewCtx(/*server=*/false));
  RETURN_IF_ERROR(UseKeyPair(c->ctx_, config.cert_file, config.cert_pem,
                             config.key_file, config.key_pem, "client"));
  if (!config.ca_file.empty() || !config.ca_pem.empty()) {
    ASSIGN_OR_RETURN(STACK_OF(X509_NAME) * names,
                     TrustCas(c->ctx_, config.ca_file, config.ca_pem, "CA"));
    sk_X509_NAME_pop_free(names, X509_NAME_free);
  } else if (SSL_CTX_set_default_verify_paths(c->ctx_) != 1) {
    return InternalError("TLS client: cannot load the system's CAs: " +
                         DrainErrors());
  }
  SSL_CTX_set_verify(
      c->ctx_, config.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
      nullptr);
  if (!config.alpn.empty()) {
    ASSIGN_OR_RETURN(std::vector<unsigned char> wire, AlpnWire(config.alpn));
    // Returns 0 on success (unlike most of OpenSSL).
    if (SSL_CTX_set_alpn_protos(c->ctx_, wire.data(),
                                static_cast<unsigned int>(wire.size())) != 0) {
      return InternalError("SSL_CTX_set_alpn_protos failed");
    }
  }
  return std::shared_ptr<const TlsContext>(std::move(c));
}

// ---------------------------------------------------------------------------

TlsSession::~TlsSession() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

StatusOr<std::unique_ptr<TlsSession>> TlsSession::NewServer(
    std::shared_ptr<const TlsContext> ctx, int fd) {
  CHECK(ctx->is_server());
  std::unique_ptr<TlsSession> s(new TlsSession());
  s->ssl_ = SSL_new(ctx->native());
  if (s->ssl_ == nullptr) return InternalError("SSL_new: " + DrainErrors());
  s->ctx_ = std::move(ctx);
  RETURN_IF_ERROR(AttachSocket(s->ssl_, fd));
  SSL_set_accept_state(s->ssl_);
  s->peer_name_ = "client";
  return s;
}

StatusOr<std::unique_ptr<TlsSession>> TlsSession::NewClient(
    std::shared_ptr<const TlsContext> ctx, int fd, std::string_view host) {
  CHECK(!ctx->is_server());
  std::unique_ptr<TlsSession> s(new TlsSession());
  s->ssl_ = SSL_new(ctx->native());
  if (s->ssl_ == nullptr) return InternalError("SSL_new: " + DrainErrors());
  const std::string name =
      ctx->server_name().empty() ? std::string(host) : ctx->server_name();
  s->peer_name_ = name;
  RETURN_IF_ERROR(AttachSocket(s->ssl_, fd));
  SSL_set_connect_state(s->ssl_);
  const bool ip = IsIpLiteral(name);
  if (!ip && !name.empty()) {
    // SNI carries names only, never IP literals (RFC 6066 3).
    SSL_set_tlsext_host_name(s->ssl_, name.c_str());
  }
  if (!ctx->insecure_skip_verify() && !name.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(s->ssl_);
    X509_VERIFY_PARAM_set_hostflags(param,
                                    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                : X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    if (ok != 1) {
      return InvalidArgumentError("TLS: cannot verify against name " + name);
    }
  }
  s->ctx_ = std::move(ctx);
  return s;
}

TlsSession::Result TlsSession::Fail(int ret, std::string_view what) {
  const int err = SSL_get_error(ssl_, ret);
  const int saved_errno = errno;
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return Result::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Result::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      ERR_clear_error();
      return Result::kClosed;
    case SSL_ERROR_SYSCALL: {
      std::string why = DrainErrors();
      if (why.empty()) {
        why =
            saved_errno != 0 ? std::strerror(saved_errno) : "connection closed";
      }
      if (!handshake_done_ && saved_errno == 0) {
        error_ = UnavailableError("TLS " + std::string(what) + " with " +
                                  peer_name_ + " failed: connection closed");
        return Result::kError;
      }
      error_ = UnavailableError("TLS " + std::string(what) + " with " +
                                peer_name_ + " failed: " + why);
      return Result::kError;
    }
    default: {
      const unsigned long last = ERR_peek_last_error();
      if (ERR_GET_LIB(last) == ERR_LIB_SSL &&
          ERR_GET_REASON(last) == SSL_R_HTTP_REQUEST) {
        peer_sent_http_ = true;
      }
      const std::string alert = GoRemoteAlert(last);
      std::string why = DrainErrors();
      if (!alert.empty()) why += " (" + alert + ")";
      const long verify = SSL_get_verify_result(ssl_);
      if (!handshake_done_ && verify != X509_V_OK) {
        why = (ctx_->is_server() ? "client " : "server ") +
              DescribeVerifyError(verify, peer_name_);
      }
      if (why.empty()) why = "error " + std::to_string(err);
      error_ = UnavailableError("TLS " + std::string(what) + " with " +
                                peer_name_ + " failed: " + why);
      return Result::kError;
    }
  }
}

TlsSession::Result TlsSession::Handshake() {
  if (handshake_done_) return Result::kOk;
  ERR_clear_error();
  errno = 0;
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    handshake_done_ = true;
    return Result::kOk;
  }
  Result r = Fail(rc, "handshake");
  if (r != Result::kClosed) return r;
  error_ = UnavailableError("TLS handshake with " + peer_name_ +
                            " failed: connection closed");
  return Result::kError;
}

TlsSession::Result TlsSession::Read(char* buf, size_t n, size_t* got) {
  *got = 0;
  ERR_clear_error();
  errno = 0;
  size_t done = 0;
  int rc = SSL_read_ex(ssl_, buf, n, &done);
  if (rc == 1) {
    *got = done;
    return Result::kOk;
  }
  return Fail(0, "read");
}

TlsSession::Result TlsSession::Write(const char* data, size_t n,
                                     size_t* written) {
  *written = 0;
  ERR_clear_error();
  errno = 0;
  size_t done = 0;
  int rc = SSL_write_ex(ssl_, data, n, &done);
  if (rc == 1) {
    *written = done;
    return Result::kOk;
  }
  Result r = Fail(0, "write");
  if (r != Result::kClosed) return r;
  error_ = UnavailableError("TLS write to " + peer_name_ +
                            " failed: connection closed");
  return Result::kError;
}

size_t TlsSession::Pending() const {
  int n = SSL_pending(ssl_);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

void TlsSession::SendCloseNotify() {
  if (!handshake_done_) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // non-blocking: one attempt
  ERR_clear_error();
}

TlsConnectionInfo TlsSession::Info() const {
  TlsConnectionInfo info;
  info.version = SSL_get_version(ssl_);
  if (const char* c = SSL_get_cipher_name(ssl_)) info.cipher = c;
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(ssl_, &alpn, &alpn_len);
  if (alpn != nullptr) {
    info.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
  }
  X509Ptr peer(SSL_get1_peer_certificate(ssl_));
  if (peer) {
    info.peer_certificate = true;
    const long v = SSL_get_verify_result(ssl_);
    if (v == X509_V_OK) {
      info.peer_verified = true;
      info.peer = IdentityOf(peer.get());
    } else {
      info.peer_verify_error = DescribeVerifyError(v, peer_name_);
    }
  }
  return info;
}

}  // namespace kplane::net
