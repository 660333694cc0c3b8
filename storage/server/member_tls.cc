#include "storage/server/member_tls.h"

#include <arpa/inet.h>

#include <algorithm>

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

}  // namespace

StatusOr<std::shared_ptr<const net::TlsContext>> NewMemberServerTls(
    const MemberTlsFiles& files, std::vector<std::string> alpn) {
  RETURN_IF_ERROR(CheckPair(files));
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
  return net::TlsContext::NewServer(sc);
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
  return net::TlsContext::NewClient(cc);
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
