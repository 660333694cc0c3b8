#include "apiserver/impersonation.h"

#include <algorithm>

#include "base/strings.h"
#include "net/url.h"

namespace kplane::apiserver {
namespace {

constexpr std::string_view kExtraPrefix = "impersonate-extra-";
constexpr char kAuthenticationGroup[] = "authentication.k8s.io";

// "system:serviceaccount:<ns>:<name>" -> {ns, name}, else nullopt.
std::optional<std::pair<std::string, std::string>> ServiceAccountOf(
    std::string_view user) {
  if (!user.starts_with(auth::kServiceAccountUserPrefix)) return std::nullopt;
  user.remove_prefix(std::string_view(auth::kServiceAccountUserPrefix).size());
  const size_t colon = user.find(':');
  if (colon == std::string_view::npos || colon == 0 ||
      colon + 1 == user.size() ||
      user.find(':', colon + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return std::make_pair(std::string(user.substr(0, colon)),
                        std::string(user.substr(colon + 1)));
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

StatusOr<std::optional<Impersonation>> ParseImpersonation(
    const net::HttpHeaders& headers) {
  Impersonation imp;
  bool user = false, other = false;
  std::string requested;  // kube's %v of the requests, for the error
  for (const auto& [name, value] : headers) {
    const std::string lower = ToLower(name);
    if (lower == "impersonate-user") {
      // Empty is no user, as kube reads the header (len > 0): not the
      // user "".
      if (value.empty()) continue;
      imp.user = value;
      user = true;
    } else if (lower == "impersonate-group") {
      imp.groups.push_back(value);
      other = true;
      requested += (requested.empty() ? "" : " ") + std::string("group ") +
                   GoQuote(value);
    } else if (lower == "impersonate-uid") {
      imp.uid = value;
      other = true;
      requested += (requested.empty() ? "" : " ") + std::string("uid ") +
                   GoQuote(value);
    } else if (lower.starts_with(kExtraPrefix)) {
      StatusOr<std::string> key = net::PercentDecode(
          std::string_view(lower).substr(kExtraPrefix.size()), false);
      if (!key.ok() || key->empty()) {
        return InvalidArgumentError("invalid impersonation extra key " +
                                    GoQuote(name));
      }
      imp.extras.emplace_back(*key, value);
      other = true;
      requested += (requested.empty() ? "" : " ") + std::string("extra ") +
                   GoQuote(*key) + "=" + GoQuote(value);
    }
  }
  if (!user && other) {
    return InvalidArgumentError("requested [" + requested +
                                "] without impersonating a user");
  }
  if (!user) return std::optional<Impersonation>();
  return std::optional<Impersonation>(std::move(imp));
}

std::vector<auth::Attributes> ImpersonationChecks(
    const auth::UserInfo& requester, const Impersonation& imp) {
  std::vector<auth::Attributes> out;
  auto check = [&](std::string group, std::string resource,
                   std::string subresource, std::string ns, std::string name) {
    out.push_back({.user = requester,
                   .verb = "impersonate",
                   .resource_request = true,
                   .api_group = std::move(group),
                   .resource = std::move(resource),
                   .subresource = std::move(subresource),
                   .ns = std::move(ns),
                   .name = std::move(name)});
  };
  if (auto sa = ServiceAccountOf(imp.user)) {
    check("", "serviceaccounts", "", sa->first, sa->second);
  } else {
    check("", "users", "", "", imp.user);
  }
  for (const std::string& g : imp.groups) check("", "groups", "", "", g);
  for (const auto& [key, value] : imp.extras) {
    check(kAuthenticationGroup, "userextras", key, "", value);
  }
  if (imp.uid) check(kAuthenticationGroup, "uids", "", "", *imp.uid);
  return out;
}

auth::UserInfo ImpersonatedUser(const Impersonation& imp) {
  auth::UserInfo u;
  u.name = imp.user;
  u.uid = imp.uid.value_or("");
  u.groups = imp.groups;
  if (imp.groups.empty()) {
    if (auto sa = ServiceAccountOf(imp.user)) {
      u.groups = {"system:serviceaccounts",
                  "system:serviceaccounts:" + sa->first};
    }
  }
  if (imp.user == "system:anonymous") {
    if (!Contains(u.groups, "system:unauthenticated")) {
      u.groups.push_back("system:unauthenticated");
    }
  } else if (!Contains(u.groups, "system:authenticated") &&
             !Contains(u.groups, "system:unauthenticated")) {
    // Kube's rule: a user impersonated into system:unauthenticated is not
    // made authenticated as well.
    u.groups.push_back("system:authenticated");
  }
  return u;
}

}  // namespace kplane::apiserver
