#include "cmd/kplane/cluster_pki.h"

#include <arpa/inet.h>

namespace kplane::cmd {
namespace {

bool IsSpecificIp(const std::string& address) {
  unsigned char buf[16];
  const bool v4 = inet_pton(AF_INET, address.c_str(), buf) == 1;
  const bool v6 = !v4 && inet_pton(AF_INET6, address.c_str(), buf) == 1;
  // 0.0.0.0 and :: listen everywhere; a certificate cannot name them.
  return (v4 || v6) && address != "0.0.0.0" && address != "::";
}

// localhost, 127.0.0.1 and the bind address when it names one interface.
net::CertificateRequest Serving(const std::string& common_name,
                                const std::string& bind_address,
                                std::vector<std::string> extra_dns = {}) {
  net::CertificateRequest req{.common_name = common_name,
                              .dns_names = {"localhost"},
                              .ip_addresses = {"127.0.0.1"},
                              .server_auth = true};
  for (std::string& d : extra_dns) req.dns_names.push_back(std::move(d));
  if (IsSpecificIp(bind_address) && bind_address != "127.0.0.1") {
    req.ip_addresses.push_back(bind_address);
  }
  return req;
}

net::CertificateRequest Client(const std::string& user,
                               std::vector<std::string> groups = {}) {
  return {.common_name = user,
          .organizations = std::move(groups),
          .client_auth = true};
}

}  // namespace

StatusOr<ClusterPki> EnsureClusterPki(const ClusterPkiOptions& options) {
  net::Pki pki({.dir = options.dir, .fs = options.fs, .clock = options.clock});
  ClusterPki out;
  out.dir = options.dir;
  ASSIGN_OR_RETURN(out.ca, pki.EnsureCa());
  // The names kube-apiserver's certificate carries (kubeadm's list) so that
  // in-cluster style clients verify it too.
  ASSIGN_OR_RETURN(
      out.apiserver,
      pki.EnsureCertificate(
          "apiserver",
          Serving("kube-apiserver", options.bind_address,
                  {"kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local"})));
  ASSIGN_OR_RETURN(
      out.admin, pki.EnsureCertificate(
                     "admin", Client("kubernetes-admin", {"system:masters"})));
  ASSIGN_OR_RETURN(
      out.controller_manager,
      pki.EnsureCertificate("controller-manager",
                            Client("system:kube-controller-manager")));
  ASSIGN_OR_RETURN(out.controller_manager_serving,
                   pki.EnsureCertificate("controller-manager-serving",
                                         Serving("kube-controller-manager",
                                                 options.bind_address)));
  ASSIGN_OR_RETURN(
      out.kubelet_serving,
      pki.EnsureCertificate("kubelet-serving", Serving("kplane-kubeletsim",
                                                       options.bind_address)));
  ASSIGN_OR_RETURN(out.apiserver_etcd_client,
                   pki.EnsureCertificate("apiserver-etcd-client",
                                         Client("kube-apiserver-etcd-client")));
  ASSIGN_OR_RETURN(
      out.apiserver_kubelet_client,
      pki.EnsureCertificate("apiserver-kubelet-client",
                            Client("kube-apiserver-kubelet-client")));
  for (const std::string& node : options.node_names) {
    ASSIGN_OR_RETURN(
        out.nodes[node],
        pki.EnsureCertificate("kubelet-" + node,
                              Client("system:node:" + node, {"system:nodes"})));
  }
  for (const std::string& member : options.store_members) {
    net::CertificateRequest server = Serving(member, options.bind_address);
    server.client_auth = true;  // etcd's gateway and probes reuse it
    RETURN_IF_ERROR(
        pki.EnsureCertificate("etcd-" + member + "-server", server).status());
    net::CertificateRequest peer = Serving(member, "127.0.0.1");
    peer.client_auth = true;  // a peer is both ends of raft's streams
    RETURN_IF_ERROR(
        pki.EnsureCertificate("etcd-" + member + "-peer", peer).status());
  }
  return out;
}

StatusOr<std::shared_ptr<const net::TlsContext>> ClusterPki::ServerContext(
    const net::KeyPair& pair, net::ClientAuth client_auth) const {
  net::TlsServerConfig config{.cert_pem = pair.cert_pem,
                              .key_pem = pair.key_pem,
                              .client_auth = client_auth,
                              .alpn = {"http/1.1"}};
  if (client_auth != net::ClientAuth::kNone) config.client_ca_pem = ca.cert_pem;
  return net::TlsContext::NewServer(config);
}

StatusOr<std::shared_ptr<const net::TlsContext>> ClusterPki::ClientContext(
    const net::KeyPair& pair) const {
  return net::TlsContext::NewClient({.ca_pem = ca.cert_pem,
                                     .cert_pem = pair.cert_pem,
                                     .key_pem = pair.key_pem,
                                     .alpn = {"http/1.1"}});
}

}  // namespace kplane::cmd
