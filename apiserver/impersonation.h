// Kubernetes' user impersonation (the Impersonate-User, Impersonate-Uid,
// Impersonate-Group and Impersonate-Extra-<key> headers; kubectl --as,
// --as-group, --as-uid): an authenticated requester acts as another user,
// each part of which it must be allowed to `impersonate` (kube's
// WithImpersonation filter):
//
//   Impersonate-User: jane           -> impersonate users "jane"
//   Impersonate-User: system:serviceaccount:ns:sa
//                                    -> impersonate serviceaccounts "sa" in ns
//   Impersonate-Group: dev           -> impersonate groups "dev"
//   Impersonate-Uid: 1234            -> impersonate uids "1234"
//                                       (group authentication.k8s.io)
//   Impersonate-Extra-scopes: view   -> impersonate userextras/scopes "view"
//                                       (authentication.k8s.io)
//
// The user then is the impersonated name, uid and groups, plus
// system:authenticated unless it or system:unauthenticated is among them
// (system:anonymous: plus system:unauthenticated); a ServiceAccount without
// impersonated groups gets its own groups. An empty Impersonate-User is no
// impersonation (kube's: the header's value must be non-empty). Extras
// are authorized but carried no further: no authorizer here reads them.
//
// Thread-safety: pure functions. Errors: ParseImpersonation returns
// kInvalidArgument for groups, a uid or extras without a user (kube answers
// that with an internal error, 500, "requested [...] without impersonating
// a user"), and for an extra key that does not percent-decode.
#ifndef KPLANE_APISERVER_IMPERSONATION_H_
#define KPLANE_APISERVER_IMPERSONATION_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apiserver/auth/authorizer.h"
#include "base/statusor.h"
#include "net/http_message.h"

namespace kplane::apiserver {

struct Impersonation {
  std::string user;
  std::optional<std::string> uid;
  std::vector<std::string> groups;
  std::vector<std::pair<std::string, std::string>> extras;  // key, value
};

// The request's impersonation, or nullopt when it asks for none.
StatusOr<std::optional<Impersonation>> ParseImpersonation(
    const net::HttpHeaders& headers);

// The `impersonate` checks `requester` must pass, in kube's order (user or
// service account, groups, extras, uid).
std::vector<auth::Attributes> ImpersonationChecks(
    const auth::UserInfo& requester, const Impersonation& imp);

// The user the request then acts as.
auth::UserInfo ImpersonatedUser(const Impersonation& imp);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_IMPERSONATION_H_
