#include "apiserver/auth/authenticator.h"

#include <algorithm>

#include "base/strings.h"

namespace kplane::apiserver::auth {
namespace {

// kube's AuthenticatedGroupAdder.
UserInfo WithAuthenticatedGroup(UserInfo u) {
  if (std::find(u.groups.begin(), u.groups.end(), kAllAuthenticated) ==
      u.groups.end()) {
    u.groups.push_back(kAllAuthenticated);
  }
  return u;
}

}  // namespace

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  std::string_view h = StripWhitespace(authorization);
  size_t sp = h.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  if (ToLower(h.substr(0, sp)) != "bearer") return std::nullopt;
  std::string_view token = h.substr(sp + 1);
  // "Bearer a b": kube takes the second space-separated part only.
  token = token.substr(0, token.find(' '));
  if (token.empty()) return std::nullopt;
  return token;
}

StatusOr<UserInfo> AuthenticatorChain::Authenticate(
    const AuthnRequest& req) const {
  if (options_.client_certs && req.client_cert.has_value() &&
      !req.client_cert->common_name.empty()) {
    return WithAuthenticatedGroup(
        UserInfo{.name = req.client_cert->common_name,
                 .groups = req.client_cert->organizations});
  }
  std::optional<std::string_view> token = BearerToken(req.authorization);
  if (token.has_value()) {
    for (const TokenAuthenticator* t : options_.tokens) {
      StatusOr<std::optional<UserInfo>> who = t->AuthenticateToken(*token);
      if (!who.ok()) return who.status();
      if (who->has_value()) return WithAuthenticatedGroup(**who);
    }
    return Status(StatusCode::kUnauthenticated, "invalid bearer token");
  }
  if (options_.anonymous) {
    return UserInfo{.name = kAnonymousUser, .groups = {kAllUnauthenticated}};
  }
  return Status(StatusCode::kUnauthenticated,
                "no credentials and anonymous requests are off");
}

}  // namespace kplane::apiserver::auth
