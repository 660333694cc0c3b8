#include "storage/server/member_tls.h"

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

StatusOr<std::shared_ptr<const net::TlsContext>> NewMemberPeerClientTls(
    const MemberTlsFiles& files) {
  net::TlsClientConfig cc;
  if (!files.empty()) {
    RETURN_IF_ERROR(CheckPair(files));
    cc.cert_file = files.cert_file;
    cc.key_file = files.key_file;
  }
  cc.ca_file = files.trusted_ca_file;
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
