// Authorization's vocabulary: who asks (UserInfo, what authentication
// found), what they ask for (Attributes, from the request's RequestInfo), and
// the answer (Decision). The model is k8s.io/apiserver/pkg/authorization/
// authorizer: an authorizer allows, denies, or has no opinion, and a chain
// asks each in turn until one decides (kube-apiserver's
// --authorization-mode=Node,RBAC).
//
//   Attributes a{.user = {.name = "alice", .groups = {"dev"}},
//                .verb = "list", .resource_request = true,
//                .resource = "pods", .ns = "default"};
//   AuthorizerChain chain({&node_authorizer, &rbac});
//   Decision d = chain.Authorize(a, &reason);
//   if (d != Decision::kAllow) ... ForbiddenMessage(a, reason) ...
//
// Thread-safety: the types are values; an Authorizer is called from many
// request threads at once and must be safe for that. Errors: an authorizer
// that cannot evaluate (a missing role) has no opinion and says why in
// `reason`, as kube's RBAC does ("RBAC: clusterrole ... not found").
#ifndef KPLANE_APISERVER_AUTH_AUTHORIZER_H_
#define KPLANE_APISERVER_AUTH_AUTHORIZER_H_

#include <string>
#include <vector>

namespace kplane::apiserver::auth {

// The groups every authenticated user has, and the anonymous identity
// (k8s.io/apiserver/pkg/authentication/user).
inline constexpr char kAllAuthenticated[] = "system:authenticated";
inline constexpr char kAllUnauthenticated[] = "system:unauthenticated";
inline constexpr char kAnonymousUser[] = "system:anonymous";
inline constexpr char kSystemMasters[] = "system:masters";
inline constexpr char kNodesGroup[] = "system:nodes";
inline constexpr char kNodeUserPrefix[] = "system:node:";
inline constexpr char kServiceAccountUserPrefix[] = "system:serviceaccount:";

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
};

struct Attributes {
  UserInfo user;
  // get, list, watch, create, update, patch, delete, deletecollection
  // (resource requests); get, post, put, ... lower-cased HTTP methods
  // (non-resource requests), as kube.
  std::string verb;
  bool resource_request = false;
  std::string api_group;  // "" is the core group
  std::string resource;
  std::string subresource;
  std::string ns;    // "" for cluster-scoped resources and all-namespace lists
  std::string name;  // "" for list, watch of a collection, create
  std::string path;  // the URL path, for non-resource requests
};

enum class Decision { kDeny, kAllow, kNoOpinion };

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  // Decides `a`. `reason` (never null) gets why, when there is something
  // to say (an allow's rule, a deny's cause, an evaluation error).
  virtual Decision Authorize(const Attributes& a,
                             std::string* reason) const = 0;
};

// Asks each authorizer in order; the first allow or deny decides. No
// opinion from every one is a deny, with their reasons joined by ", ".
// Borrows the authorizers.
class AuthorizerChain final : public Authorizer {
 public:
  explicit AuthorizerChain(std::vector<const Authorizer*> chain)
      : chain_(std::move(chain)) {}
  Decision Authorize(const Attributes& a, std::string* reason) const override;

 private:
  std::vector<const Authorizer*> chain_;
};

// kube-apiserver's message for a denied request, without the resource
// prefix the API error adds: `User "alice" cannot list resource "pods" in
// API group "" in the namespace "default"`, `... at the cluster scope`,
// `User "bob" cannot get path "/metrics"`, then ": <reason>" if any.
std::string ForbiddenMessage(const Attributes& a, const std::string& reason);

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_AUTHORIZER_H_
