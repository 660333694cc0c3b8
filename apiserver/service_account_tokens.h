// ServiceAccountTokens: the API server's side of ServiceAccount tokens.
//
//  - CreateToken: the TokenRequest subresource,
//    POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token, as
//    kube-apiserver's pkg/registry/core/serviceaccount/storage/token.go:
//    the account must exist (404 `serviceaccounts "x" not found`);
//    spec.audiences defaults to the API server's audiences and
//    spec.expirationSeconds to 3600 and must be >= 600 (422); an optional
//    spec.boundObjectRef names a Pod (that runs as this account) or a Secret
//    of the namespace, whose deletion ends the token. The answer is the
//    request with metadata.name/namespace/creationTimestamp and
//    status.token (an RS256 JWT, apiserver/auth/service_account_token.h)
//    and status.expirationTimestamp filled.
//  - authenticator(): the ServiceAccount token authenticator for the
//    AuthenticatorChain, looking accounts and bound objects up in the API
//    server's watch caches (a miss is read from the store, so that an
//    account created a moment ago is found).
//
//   ServiceAccountTokens tokens({.signing_key_pem = pem,
//                                .issuers = {"https://kubernetes.default.svc"},
//                                .serviceaccounts = sa_rest, .pods = ...});
//   ApiResult<TokenRequestPtr> r = tokens.CreateToken("default", "builder",
//                                                      std::move(request));
//
// Without a signing key nothing is issued (CreateToken answers 404, as
// kube-apiserver without an issuer serves no token subresource); without
// any key there is no authenticator (nullptr).
//
// Ownership: borrows the ResourceStores and the clock, which must outlive
// it. Thread-safety: immutable after Create; every method may be called
// from any thread. Errors: Create returns kInvalidArgument for unreadable or
// non-RSA key material and for keys without an issuer.
#ifndef KPLANE_APISERVER_SERVICE_ACCOUNT_TOKENS_H_
#define KPLANE_APISERVER_SERVICE_ACCOUNT_TOKENS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/auth/service_account_token.h"
#include "apiserver/errors.h"
#include "apiserver/query_params.h"
#include "apiserver/resource_store.h"
#include "base/clock.h"
#include "base/statusor.h"
#include "objects/serviceaccount_types.h"

namespace kplane::apiserver {

inline constexpr char kDefaultServiceAccountIssuer[] =
    "https://kubernetes.default.svc.cluster.local";
inline constexpr int64_t kDefaultTokenExpirationSeconds = 3600;

struct ServiceAccountTokensOptions {
  // PEM of the RSA private key that signs (--service-account-signing-key-
  // file); empty: no tokens are issued.
  std::string signing_key_pem;
  // PEM texts whose keys verify tokens (--service-account-key-file); the
  // signing key's public half is always added.
  std::vector<std::string> verification_key_pems;
  // --service-account-issuer: the first is written into tokens ("iss"),
  // all are accepted.
  std::vector<std::string> issuers = {kDefaultServiceAccountIssuer};
  // --api-audiences: a token must name one; TokenRequest's default. Empty:
  // the issuers.
  std::vector<std::string> audiences;
  ResourceStore* serviceaccounts = nullptr;  // required
  ResourceStore* pods = nullptr;             // required
  ResourceStore* secrets = nullptr;          // required
  Clock* clock = nullptr;                    // required
};

using TokenRequestPtr =
    std::unique_ptr<objects::authenticationv1::TokenRequest>;

class ServiceAccountTokens {
 public:
  static StatusOr<std::unique_ptr<ServiceAccountTokens>> Create(
      ServiceAccountTokensOptions options);
  ~ServiceAccountTokens();

  // `request` is the decoded body; the answer is it, completed.
  ApiResult<TokenRequestPtr> CreateToken(std::string_view ns,
                                         std::string_view name,
                                         TokenRequestPtr request) const;

  // Null without verification keys.
  const auth::TokenAuthenticator* authenticator() const {
    return authenticator_.get();
  }

 private:
  class CacheLookup;
  explicit ServiceAccountTokens(ServiceAccountTokensOptions options);

  ServiceAccountTokensOptions options_;
  std::unique_ptr<CacheLookup> lookup_;
  std::unique_ptr<auth::ServiceAccountTokenIssuer> issuer_;
  std::unique_ptr<auth::ServiceAccountTokenAuthenticator> authenticator_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_SERVICE_ACCOUNT_TOKENS_H_
