// The certificates `kplane up` runs with (issue 18): a CA and, signed by it,
// every serving and client certificate of the control plane, kept in
// <data_dir>/pki by net::Pki and reused on restart, as kubeadm keeps
// /etc/kubernetes/pki and k3s server/tls.
//
//   ASSIGN_OR_RETURN(ClusterPki pki, EnsureClusterPki({
//       .dir = data_dir + "/pki", .bind_address = "127.0.0.1",
//       .node_names = {"node-0", "node-1"}, .store_members = {"kplane"}}));
//   ASSIGN_OR_RETURN(auto serving, pki.ServerContext(
//       pki.apiserver, net::ClientAuth::kRequest));
//   ASSIGN_OR_RETURN(auto admin, pki.ClientContext(pki.admin));
//
// Files (<dir>/<name>.crt and .key, 0600, the directory 0700):
//   ca                             the cluster CA (CN=kplane-ca)
//   apiserver                      serving: localhost, kubernetes,
//                                  kubernetes.default, ...svc,
//                                  ...svc.cluster.local, 127.0.0.1 and the
//                                  bind address when it is a specific IP
//   admin                          client: CN=kubernetes-admin,
//                                  O=system:masters (kubeadm's admin.conf)
//   controller-manager             client: CN=system:kube-controller-manager
//   controller-manager-serving     serving (10257)
//   kubelet-<node>                 client: CN=system:node:<node>,
//                                  O=system:nodes, one per simulated node
//   kubelet-serving                serving: the simulated nodes' control
//                                  endpoint (10250)
//   apiserver-etcd-client          client: CN=kube-apiserver-etcd-client
//   etcd-<member>-server,          the store members' client and peer
//   etcd-<member>-peer             certificates (serving and client usage,
//                                  as kubeadm's etcd/peer): the store's
//                                  client and peer ports
// Rotation: delete a certificate (or its key) and restart; it is issued
// again. The CA is never replaced automatically (net/pki.h).
//
// Thread-safety: EnsureClusterPki runs once at startup; a ClusterPki is
// immutable after and its methods may be called from any thread.
// Errors: net::Pki's (file system, a CA on disk that cannot be used:
// kFailedPrecondition), TlsContext's when a context is built.
#ifndef KPLANE_CMD_KPLANE_CLUSTER_PKI_H_
#define KPLANE_CMD_KPLANE_CLUSTER_PKI_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/file_system.h"
#include "base/statusor.h"
#include "net/pki.h"
#include "net/tls.h"

namespace kplane::cmd {

struct ClusterPkiOptions {
  std::string dir;           // created 0700 if missing
  std::string bind_address;  // an IP other than 0.0.0.0/:: joins the SANs
  std::vector<std::string> node_names;
  std::vector<std::string> store_members;
  FileSystem* fs = nullptr;  // nullptr: FileSystem::Default()
  Clock* clock = nullptr;    // nullptr: Clock::Real()
};

struct ClusterPki {
  std::string dir;
  net::KeyPair ca;
  net::KeyPair apiserver;
  net::KeyPair admin;
  net::KeyPair controller_manager;
  net::KeyPair controller_manager_serving;
  net::KeyPair kubelet_serving;
  net::KeyPair apiserver_etcd_client;
  // The API server as a client of the simulated kubelets' endpoint (kube's
  // --kubelet-client-certificate; kubeadm's apiserver-kubelet-client).
  net::KeyPair apiserver_kubelet_client;
  std::map<std::string, net::KeyPair> nodes;  // by node name

  std::string CaFile() const { return dir + "/ca.crt"; }

  // A server context presenting `pair` (ALPN http/1.1) that asks for
  // client certificates signed by the CA as `client_auth` says.
  StatusOr<std::shared_ptr<const net::TlsContext>> ServerContext(
      const net::KeyPair& pair, net::ClientAuth client_auth) const;
  // A client context trusting the CA and presenting `pair`.
  StatusOr<std::shared_ptr<const net::TlsContext>> ClientContext(
      const net::KeyPair& pair) const;
};

StatusOr<ClusterPki> EnsureClusterPki(const ClusterPkiOptions& options);

}  // namespace kplane::cmd

#endif  // KPLANE_CMD_KPLANE_CLUSTER_PKI_H_
