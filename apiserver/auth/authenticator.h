// Authentication: who sent a request, in kube-apiserver's order (k8s.io/
// apiserver/pkg/authentication/request/union):
//
//   1. an x509 client certificate the TLS layer verified against the
//      client CA (--client-ca-file): user = CN, groups = O;
//   2. a bearer token ("Authorization: Bearer <token>"), offered to each
//      token authenticator in turn: the static token file
//      (--token-auth-file), then ServiceAccount tokens;
//   3. no credentials at all: the anonymous user (system:anonymous, group
//      system:unauthenticated), when anonymous requests are allowed.
//
// A credential that is present but wrong is an error (401), never a fall
// through to anonymous: a typo in a token must not quietly downgrade the
// caller. Every authenticated user gets the group system:authenticated.
//
//   AuthenticatorChain chain({.tokens = {&token_file, &service_accounts},
//                             .anonymous = true});
//   StatusOr<UserInfo> who = chain.Authenticate(
//       {.authorization = header, .client_cert = cert_identity});
//   if (!who.ok()) ... 401 "Unauthorized" ...
//
// Thread-safety: Authenticate may run on many threads at once; token
// authenticators must allow that. Errors: kUnauthenticated with the reason
// (for the log; kube answers clients only "Unauthorized").
#ifndef KPLANE_APISERVER_AUTH_AUTHENTICATOR_H_
#define KPLANE_APISERVER_AUTH_AUTHENTICATOR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/auth/authorizer.h"
#include "base/statusor.h"

namespace kplane::apiserver::auth {

// What the TLS layer verified about the client's certificate.
struct ClientCertIdentity {
  std::string common_name;
  std::vector<std::string> organizations;
};

struct AuthnRequest {
  std::string_view authorization;  // the Authorization header, may be empty
  std::optional<ClientCertIdentity> client_cert;
};

// Checks one bearer token.
class TokenAuthenticator {
 public:
  virtual ~TokenAuthenticator() = default;
  // nullopt: not a token this authenticator knows (the next one may);
  // a user: authenticated; an error: a token of this kind that is invalid
  // (expired, bad signature, its ServiceAccount deleted).
  virtual StatusOr<std::optional<UserInfo>> AuthenticateToken(
      std::string_view token) const = 0;
  // The same for a TokenReview naming `audiences` (kube's
  // authenticator.Audiences): the token must be for one of them, and
  // *matched gets those it is for. This default serves tokens bound to no
  // audience (a static token file's): they are for the API server's own
  // audiences (`api_audiences`) only, as kube's WrapAudienceAgnosticToken;
  // for others they are not this authenticator's (nullopt).
  virtual StatusOr<std::optional<UserInfo>> AuthenticateTokenFor(
      std::string_view token, const std::vector<std::string>& audiences,
      const std::vector<std::string>& api_audiences,
      std::vector<std::string>* matched) const;
};

struct AuthenticatorChainOptions {
  bool client_certs = true;  // trust a verified certificate's CN/O
  std::vector<const TokenAuthenticator*> tokens;  // borrowed, in order
  bool anonymous = true;                          // --anonymous-auth
  std::vector<std::string> api_audiences;         // --api-audiences
};

class AuthenticatorChain {
 public:
  explicit AuthenticatorChain(AuthenticatorChainOptions options)
      : options_(std::move(options)) {}

  StatusOr<UserInfo> Authenticate(const AuthnRequest& req) const;
  // A TokenReview's: `token` for one of `audiences` (empty: the API
  // server's own); *matched gets the audiences it is for. kUnauthenticated
  // when no authenticator takes it.
  StatusOr<UserInfo> AuthenticateTokenFor(
      std::string_view token, const std::vector<std::string>& audiences,
      std::vector<std::string>* matched) const;

 private:
  AuthenticatorChainOptions options_;
};

// The token in "Bearer <token>" (the scheme case-insensitive, as kube), or
// nullopt when the header is absent, another scheme, or the token empty.
std::optional<std::string_view> BearerToken(std::string_view authorization);

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_AUTHENTICATOR_H_
