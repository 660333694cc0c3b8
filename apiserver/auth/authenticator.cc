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

StatusOr<std::optional<UserInfo>> TokenAuthenticator::AuthenticateTokenFor(
    std::string_view token, const std::vector<std::string>& audiences,
    const std::vector<std::string>& api_audiences,
    std::vector<std::string>* matched) const {
  std::vector<std::string> both;
  for (const std::string& a : audiences) {
    if (std::find(api_audiences.begin(), api_audiences.end(), a) !=
        api_audiences.end()) {
      both.push_back(a);
    }
  }
  if (both.empty()) return std::optional<UserInfo>();
  StatusOr<std::optional<UserInfo>> who = AuthenticateToken(token);
  if (who.ok() && who->has_value() && matched != nullptr) {
    *matched = std::move(both);
  }
  return who;
}

StatusOr<UserInfo> AuthenticatorChain::AuthenticateTokenFor(
    std::string_view token, const std::vector<std::string>& audiences,
    std::vector<std::string>* matched) const {
  const std::vector<std::string>& wanted =
      audiences.empty() ? options_.api_audiences : audiences;
  for (const TokenAuthenticator* t : options_.tokens) {
    StatusOr<std::optional<UserInfo>> who =
        t->AuthenticateTokenFor(token, wanted, options_.api_audiences, matched);
    if (!who.ok()) return who.status();
    if (who->has_value()) return WithAuthenticatedGroup(**who);
  }
  return Status(StatusCode::kUnauthenticated, "invalid bearer token");
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
