#include "apiserver/auth/authorizer.h"

#include <utility>

namespace kplane::apiserver::auth {
namespace {

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

Decision AuthorizerChain::Authorize(const Attributes& a,
                                    std::string* reason) const {
  std::string reasons;
  for (const Authorizer* z : chain_) {
    std::string why;
    Decision d = z->Authorize(a, &why);
    if (d != Decision::kNoOpinion) {
      *reason = std::move(why);
      return d;
    }
    if (!why.empty()) {
      if (!reasons.empty()) reasons += ", ";
      reasons += why;
    }
  }
  *reason = std::move(reasons);
  return Decision::kDeny;
}

std::string ForbiddenMessage(const Attributes& a, const std::string& reason) {
  std::string m = "User " + Quote(a.user.name) + " cannot " + a.verb;
  if (a.resource_request) {
    std::string res = a.resource;
    if (!a.subresource.empty()) res += "/" + a.subresource;
    m += " resource " + Quote(res) + " in API group " + Quote(a.api_group);
    m += a.ns.empty() ? " at the cluster scope"
                      : " in the namespace " + Quote(a.ns);
  } else {
    m += " path " + Quote(a.path);
  }
  if (!reason.empty()) m += ": " + reason;
  return m;
}

}  // namespace kplane::apiserver::auth
