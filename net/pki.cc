#include "net/pki.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>

#include "base/logging.h"
#include "net/tls.h"

namespace kplane::net {

namespace {

struct Free {
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(X509_NAME* n) const { X509_NAME_free(n); }
  void operator()(BIGNUM* b) const { BN_free(b); }
};
template <typename T>
using Ptr = std::unique_ptr<T, Free>;

Status OpenSslError(std::string_view what) {
  std::string why;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!why.empty()) why += "; ";
    why += buf;
  }
  return InternalError(std::string(what) + ": " + why);
}

StatusOr<std::string> PemOf(X509* x) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(bio.get(), x) != 1) return OpenSslError("PEM cert");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

StatusOr<std::string> PemOf(EVP_PKEY* k) {
  Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr,
                               nullptr) != 1) {
    return OpenSslError("PEM key");
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

StatusOr<Ptr<X509>> ReadCert(std::string_view pem) {
  Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  if (x == nullptr) {
    ERR_clear_error();
    return InvalidArgumentError("no PEM certificate");
  }
  return Ptr<X509>(x);
}

StatusOr<Ptr<EVP_PKEY>> ReadKey(std::string_view pem) {
  Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (k == nullptr) {
    ERR_clear_error();
    return InvalidArgumentError("no PEM private key");
  }
  return Ptr<EVP_PKEY>(k);
}

StatusOr<Ptr<EVP_PKEY>> NewKey() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (k == nullptr) return OpenSslError("EC P-256 key generation");
  return Ptr<EVP_PKEY>(k);
}

// A name a SAN or a subject can carry without being read as something else
// by X509V3_EXT_conf's "DNS:a,DNS:b" syntax.
bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != ',' && c != ':' && c != '\\';
  });
}

Status AddExtension(X509* cert, X509V3_CTX* ctx, int nid,
                    const std::string& value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslError("certificate extension " + value);
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return OpenSslError("X509_add_ext");
  return Status::Ok();
}

// A certificate for `key`, signed by `signer_key` with `issuer` as its
// issuer (nullptr: self-signed).
StatusOr<Ptr<X509>> BuildCert(EVP_PKEY* key, X509* issuer, EVP_PKEY* signer_key,
                              const CertificateRequest& req, bool ca,
                              WallTime now) {
  Ptr<X509> x(X509_new());
  X509_set_version(x.get(), 2);  // v3
  // A random positive 127-bit serial (RFC 5280 4.1.2.2: unique per CA,
  // at most 20 octets).
  Ptr<BIGNUM> bn(BN_new());
  if (BN_rand(bn.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1) {
    return OpenSslError("serial number");
  }
  BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x.get()));
  const time_t start = std::chrono::system_clock::to_time_t(
      now - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                kClockSkewAllowance));
  const time_t end = std::chrono::system_clock::to_time_t(
      now + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                req.validity));
  if (ASN1_TIME_set(X509_getm_notBefore(x.get()), start) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(x.get()), end) == nullptr) {
    return OpenSslError("validity");
  }
  X509_set_pubkey(x.get(), key);

  X509_NAME* name = X509_get_subject_name(x.get());
  for (const std::string& o : req.organizations) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(o.data()),
                               static_cast<int>(o.size()), -1, 0);
  }
  X509_NAME_add_entry_by_txt(
      name, "CN", MBSTRING_UTF8,
      reinterpret_cast<const unsigned char*>(req.common_name.data()),
      static_cast<int>(req.common_name.size()), -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  if (ca) {
    RETURN_IF_ERROR(
        AddExtension(x.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE"));
    RETURN_IF_ERROR(AddExtension(x.get(), &ctx, NID_key_usage,
                                 "critical,digitalSignature,keyCertSign,"
                                 "cRLSign"));
    RETURN_IF_ERROR(
        AddExtension(x.get(), &ctx, NID_subject_key_identifier, "hash"));
  } else {
    RETURN_IF_ERROR(AddExtension(x.get(), &ctx, NID_basic_constraints,
                                 "critical,CA:FALSE"));
    RETURN_IF_ERROR(AddExtension(x.get(), &ctx, NID_key_usage,
                                 "critical,digitalSignature"));
    std::string eku;
    if (req.server_auth) eku = "serverAuth";
    if (req.client_auth) eku += eku.empty() ? "clientAuth" : ",clientAuth";
    if (!eku.empty()) {
      RETURN_IF_ERROR(AddExtension(x.get(), &ctx, NID_ext_key_usage, eku));
    }
    std::string san;
    for (const std::string& d : req.dns_names) {
      san += (san.empty() ? "DNS:" : ",DNS:") + d;
    }
    for (const std::string& ip : req.ip_addresses) {
      san += (san.empty() ? "IP:" : ",IP:") + ip;
    }
    if (!san.empty()) {
      RETURN_IF_ERROR(AddExtension(x.get(), &ctx, NID_subject_alt_name, san));
    }
    RETURN_IF_ERROR(
        AddExtension(x.get(), &ctx, NID_authority_key_identifier, "keyid"));
  }
  if (X509_sign(x.get(), signer_key, EVP_sha256()) == 0) {
    return OpenSslError("signing the certificate");
  }
  return x;
}

Status ValidateRequest(const CertificateRequest& req) {
  if (req.common_name.empty()) {
    return InvalidArgumentError("certificate request: common name is empty");
  }
  for (const std::string& d : req.dns_names) {
    if (!PlainName(d)) {
      return InvalidArgumentError("certificate request: bad DNS name \"" + d +
                                  "\"");
    }
  }
  for (const std::string& ip : req.ip_addresses) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip.c_str(), buf) != 1 &&
        inet_pton(AF_INET6, ip.c_str(), buf) != 1) {
      return InvalidArgumentError("certificate request: not an IP address: \"" +
                                  ip + "\"");
    }
  }
  if (req.validity <= Duration::zero()) {
    return InvalidArgumentError("certificate request: validity must be > 0");
  }
  return Status::Ok();
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// IPs in canonical text (inet_ntop's), for comparing a request with what a
// certificate says ("::0:1" and "::1" are one address).
std::vector<std::string> CanonicalIps(const std::vector<std::string>& ips) {
  std::vector<std::string> out;
  for (const std::string& ip : ips) {
    unsigned char buf[16];
    char text[INET6_ADDRSTRLEN] = {};
    if (inet_pton(AF_INET, ip.c_str(), buf) == 1) {
      inet_ntop(AF_INET, buf, text, sizeof(text));
    } else if (inet_pton(AF_INET6, ip.c_str(), buf) == 1) {
      inet_ntop(AF_INET6, buf, text, sizeof(text));
    } else {
      out.push_back(ip);
      continue;
    }
    out.push_back(text);
  }
  return Sorted(out);
}

// Why the pair on disk cannot serve `req` ("" if it can).
std::string ReuseProblem(const KeyPair& pair, const KeyPair& ca,
                         const CertificateRequest& req, WallTime now) {
  StatusOr<Ptr<X509>> cert = ReadCert(pair.cert_pem);
  StatusOr<Ptr<EVP_PKEY>> key = ReadKey(pair.key_pem);
  StatusOr<Ptr<X509>> ca_cert = ReadCert(ca.cert_pem);
  if (!cert.ok() || !key.ok() || !ca_cert.ok()) return "unreadable PEM";
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return "the key does not match the certificate";
  }
  EVP_PKEY* ca_pub = X509_get0_pubkey(ca_cert->get());
  if (ca_pub == nullptr || X509_verify(cert->get(), ca_pub) != 1) {
    ERR_clear_error();
    return "not signed by the current CA";
  }
  StatusOr<CertificateInfo> info = ParseCertificatePem(pair.cert_pem);
  if (!info.ok()) return "unreadable certificate";
  if (now < info->not_before || now >= info->not_after) {
    return "outside its validity period";
  }
  const CertificateIdentity& id = info->identity;
  if (id.common_name != req.common_name ||
      Sorted(id.organizations) != Sorted(req.organizations) ||
      Sorted(id.dns_names) != Sorted(req.dns_names) ||
      CanonicalIps(id.ip_addresses) != CanonicalIps(req.ip_addresses) ||
      info->server_auth != req.server_auth ||
      info->client_auth != req.client_auth) {
    return "it names other subjects or usages than requested";
  }
  return "";
}

}  // namespace

StatusOr<KeyPair> GenerateCa(std::string_view common_name, WallTime now,
                             Duration validity) {
  CertificateRequest req{.common_name = std::string(common_name),
                         .validity = validity};
  RETURN_IF_ERROR(ValidateRequest(req));
  ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, NewKey());
  ASSIGN_OR_RETURN(Ptr<X509> cert, BuildCert(key.get(), nullptr, key.get(), req,
                                             /*ca=*/true, now));
  KeyPair out;
  ASSIGN_OR_RETURN(out.cert_pem, PemOf(cert.get()));
  ASSIGN_OR_RETURN(out.key_pem, PemOf(key.get()));
  return out;
}

StatusOr<KeyPair> IssueCertificate(const KeyPair& ca,
                                   const CertificateRequest& req,
                                   WallTime now) {
  RETURN_IF_ERROR(ValidateRequest(req));
  StatusOr<Ptr<X509>> ca_cert = ReadCert(ca.cert_pem);
  if (!ca_cert.ok()) return InvalidArgumentError("CA: no PEM certificate");
  StatusOr<Ptr<EVP_PKEY>> ca_key = ReadKey(ca.key_pem);
  if (!ca_key.ok()) return InvalidArgumentError("CA: no PEM private key");
  ASSIGN_OR_RETURN(Ptr<EVP_PKEY> key, NewKey());
  ASSIGN_OR_RETURN(Ptr<X509> cert,
                   BuildCert(key.get(), ca_cert->get(), ca_key->get(), req,
                             /*ca=*/false, now));
  KeyPair out;
  ASSIGN_OR_RETURN(out.cert_pem, PemOf(cert.get()));
  ASSIGN_OR_RETURN(out.key_pem, PemOf(key.get()));
  return out;
}

// ---------------------------------------------------------------------------

Pki::Pki(PkiOptions options)
    : opts_(std::move(options)),
      fs_(opts_.fs ? opts_.fs : FileSystem::Default()),
      clock_(opts_.clock ? opts_.clock : Clock::Real()) {}

std::string Pki::CertPath(std::string_view name) const {
  return opts_.dir + "/" + std::string(name) + ".crt";
}

std::string Pki::KeyPath(std::string_view name) const {
  return opts_.dir + "/" + std::string(name) + ".key";
}

Status Pki::WritePair(std::string_view name, const KeyPair& pair) {
  RETURN_IF_ERROR(CreateDirAll(fs_, opts_.dir, kPrivateDirMode));
  // The key first: a crash before the certificate leaves an old or absent
  // certificate that does not match it, which the next start replaces.
  RETURN_IF_ERROR(WriteFileAtomically(fs_, KeyPath(name), pair.key_pem));
  return WriteFileAtomically(fs_, CertPath(name), pair.cert_pem);
}

StatusOr<KeyPair> Pki::EnsureCa() {
  if (have_ca_) return ca_;
  const bool has_cert = fs_->Exists(CertPath("ca"));
  const bool has_key = fs_->Exists(KeyPath("ca"));
  if (has_cert || has_key) {
    if (!has_cert || !has_key) {
      return FailedPreconditionError(
          "PKI in " + opts_.dir +
          ": ca.crt and ca.key must both exist (one is missing); "
          "restore it or remove both to start a new CA");
    }
    KeyPair ca;
    ASSIGN_OR_RETURN(ca.cert_pem, ReadFile(fs_, CertPath("ca")));
    ASSIGN_OR_RETURN(ca.key_pem, ReadFile(fs_, KeyPath("ca")));
    StatusOr<Ptr<X509>> cert = ReadCert(ca.cert_pem);
    StatusOr<Ptr<EVP_PKEY>> key = ReadKey(ca.key_pem);
    if (!cert.ok() || !key.ok() ||
        X509_check_private_key(cert->get(), key->get()) != 1) {
      ERR_clear_error();
      return FailedPreconditionError("PKI in " + opts_.dir +
                                     ": ca.key does not match ca.crt");
    }
    ASSIGN_OR_RETURN(CertificateInfo info, ParseCertificatePem(ca.cert_pem));
    const WallTime now = clock_->WallNow();
    if (!info.is_ca || now >= info.not_after || now < info.not_before) {
      return FailedPreconditionError(
          "PKI in " + opts_.dir +
          ": ca.crt is not a CA valid now; renew it (every issued "
          "certificate and kubeconfig changes)");
    }
    ca_ = std::move(ca);
    have_ca_ = true;
    return ca_;
  }
  ASSIGN_OR_RETURN(KeyPair ca,
                   GenerateCa(opts_.ca_common_name, clock_->WallNow()));
  RETURN_IF_ERROR(WritePair("ca", ca));
  LOG(INFO) << "PKI: created a new CA in " << opts_.dir;
  ca_ = std::move(ca);
  have_ca_ = true;
  return ca_;
}

StatusOr<KeyPair> Pki::EnsureCertificate(std::string_view name,
                                         const CertificateRequest& req) {
  if (!PlainName(name) || name.find('/') != std::string_view::npos ||
      name == "ca") {
    return InvalidArgumentError("PKI: bad certificate name \"" +
                                std::string(name) + "\"");
  }
  RETURN_IF_ERROR(ValidateRequest(req));
  ASSIGN_OR_RETURN(KeyPair ca, EnsureCa());
  const WallTime now = clock_->WallNow();
  if (fs_->Exists(CertPath(name)) && fs_->Exists(KeyPath(name))) {
    KeyPair pair;
    ASSIGN_OR_RETURN(pair.cert_pem, ReadFile(fs_, CertPath(name)));
    ASSIGN_OR_RETURN(pair.key_pem, ReadFile(fs_, KeyPath(name)));
    std::string problem = ReuseProblem(pair, ca, req, now);
    if (problem.empty()) return pair;
    LOG(INFO) << "PKI: reissuing " << name << ".crt: " << problem;
  }
  ASSIGN_OR_RETURN(KeyPair pair, IssueCertificate(ca, req, now));
  RETURN_IF_ERROR(WritePair(name, pair));
  return pair;
}

}  // namespace kplane::net
