#include "apiserver/auth/node_authorizer.h"

#include <algorithm>

namespace kplane::apiserver::auth {
namespace {

bool IsRead(const std::string& verb) {
  return verb == "get" || verb == "list" || verb == "watch";
}

bool In(const std::string& v, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

}  // namespace

std::optional<std::string> NodeIdentity(const UserInfo& user) {
  if (std::find(user.groups.begin(), user.groups.end(), kNodesGroup) ==
      user.groups.end()) {
    return std::nullopt;
  }
  std::string_view prefix = kNodeUserPrefix;
  if (user.name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return user.name.substr(prefix.size());
}

Decision NodeAuthorizer::Authorize(const Attributes& a,
                                   std::string* reason) const {
  std::optional<std::string> node = NodeIdentity(a.user);
  if (!node.has_value()) return Decision::kNoOpinion;
  if (node->empty()) {
    *reason = "unknown node for user \"" + a.user.name + "\"";
    return Decision::kNoOpinion;
  }
  if (!a.resource_request) return Decision::kNoOpinion;
  const std::string& g = a.api_group;
  const std::string& r = a.resource;
  const std::string& sub = a.subresource;
  const std::string& verb = a.verb;
  const std::string no_relationship =
      "no relationship found between node '" + *node + "' and this object";

  if (g.empty() && r == "nodes") {
    if (sub.empty() && IsRead(verb)) return Decision::kAllow;
    if (sub.empty() && verb == "create") return Decision::kAllow;
    const bool own = a.name == *node;
    if (sub.empty() && own && In(verb, {"update", "patch", "delete"})) {
      return Decision::kAllow;
    }
    if (sub == "status" && own && In(verb, {"get", "update", "patch"})) {
      return Decision::kAllow;
    }
    *reason = "node '" + *node + "' cannot modify node '" + a.name + "'";
    return Decision::kNoOpinion;
  }
  if (g == "coordination.k8s.io" && r == "leases" && sub.empty()) {
    // A create's name is not checked here (kube's authorizeLease: a POST
    // names none), but in admission (ApiServer's AdmitWrite, kube's
    // NodeRestriction).
    if (a.ns == "kube-node-lease" &&
        (verb == "create" ||
         (a.name == *node && In(verb, {"get", "update", "patch", "delete"})))) {
      return Decision::kAllow;
    }
    *reason =
        "can only access node lease with the same name as the "
        "requesting node";
    return Decision::kNoOpinion;
  }
  if (g.empty() && r == "pods") {
    if (sub.empty() && IsRead(verb)) return Decision::kAllow;
    const bool status_write =
        sub == "status" && In(verb, {"get", "update", "patch"});
    const bool delete_pod = sub.empty() && verb == "delete";
    if ((status_write || delete_pod) && !a.name.empty()) {
      std::optional<std::string> bound = pod_node_(a.ns, a.name);
      if (bound.has_value() && *bound == *node) return Decision::kAllow;
    }
    *reason = no_relationship;
    return Decision::kNoOpinion;
  }
  if (g.empty() && sub.empty() &&
      In(r, {"services", "endpoints", "namespaces"}) && IsRead(verb)) {
    return Decision::kAllow;
  }
  if ((g.empty() || g == "events.k8s.io") && r == "events" && sub.empty() &&
      In(verb, {"create", "update", "patch"})) {
    return Decision::kAllow;
  }
  return Decision::kNoOpinion;
}

}  // namespace kplane::apiserver::auth
