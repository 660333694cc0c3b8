#include "apiserver/auth/authorizer.h"

#include <utility>

#include "base/strings.h"

namespace kplane::apiserver::auth {
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
  std::string m = "User " + GoQuote(a.user.name) + " cannot " + a.verb;
  if (a.resource_request) {
    std::string res = a.resource;
    if (!a.subresource.empty()) res += "/" + a.subresource;
    m += " resource " + GoQuote(res) + " in API group " + GoQuote(a.api_group);
    m += a.ns.empty() ? " at the cluster scope"
                      : " in the namespace " + GoQuote(a.ns);
  } else {
    m += " path " + GoQuote(a.path);
  }
  if (!reason.empty()) m += ": " + reason;
  return m;
}

}  // namespace kplane::apiserver::auth
