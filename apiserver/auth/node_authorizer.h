// The Node authorizer (kube-apiserver's --authorization-mode=Node,
// k8s.io/kubernetes/plugin/pkg/auth/authorizer/node), simplified: a kubelet
// authenticated as user system:node:<name> in group system:nodes may
//
//   read      nodes, pods, services, endpoints, namespaces (get/list/watch)
//   write     its own Node: get/update/patch/delete nodes/<name>, update/
//             patch nodes/<name>/status; create nodes (the name is in the
//             body: kube's NodeRestriction admission checks it, kplane's
//             ApiServer does the same for nodes)
//             its own Lease: leases/<name> in kube-node-lease (create
//             there, get/update/patch/delete by name)
//             the status of pods bound to it (spec.nodeName == <name>):
//             update/patch pods/<pod>/status; delete pods bound to it
//             events: create/update/patch (core and events.k8s.io)
//
// and nothing else through this authorizer (no opinion: RBAC may still
// allow). Unlike kube, Secrets, ConfigMaps and volumes referenced by the
// node's pods are not readable through it (kube walks a graph of pods and
// their references; kplane's simulated kubelets read none of them).
//
//   NodeAuthorizer node([&](std::string_view ns, std::string_view pod) {
//     return pods_node_name(ns, pod);   // nullopt: no such pod
//   });
//   node.Authorize(attributes, &reason);
//
// Thread-safety: Authorize is safe from many threads if the lookup is.
// Errors: none; a denial's reason says why, in kube's words ("no
// relationship found between node 'n1' and this object").
#ifndef KPLANE_APISERVER_AUTH_NODE_AUTHORIZER_H_
#define KPLANE_APISERVER_AUTH_NODE_AUTHORIZER_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "apiserver/auth/authorizer.h"

namespace kplane::apiserver::auth {

// The node a user is, as kube's NodeIdentifier: user "system:node:<name>"
// in group system:nodes. nullopt: not a node; "" : a node user without a
// name.
std::optional<std::string> NodeIdentity(const UserInfo& user);

class NodeAuthorizer final : public Authorizer {
 public:
  // The spec.nodeName of pod `name` in `ns`, or nullopt if it does not
  // exist.
  using PodNodeLookup = std::function<std::optional<std::string>(
      std::string_view ns, std::string_view name)>;
  explicit NodeAuthorizer(PodNodeLookup pod_node)
      : pod_node_(std::move(pod_node)) {}

  // kAllow for the rules above; kNoOpinion otherwise (with a reason for a
  // node's request), never kDeny.
  Decision Authorize(const Attributes& a, std::string* reason) const override;

 private:
  PodNodeLookup pod_node_;
};

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_NODE_AUTHORIZER_H_
