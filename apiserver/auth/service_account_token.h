// ServiceAccount tokens: JSON Web Tokens (RFC 7519) signed RS256 by the API
// server, as kube's bound tokens (k8s.io/kubernetes/pkg/serviceaccount):
//
//   header  {"alg":"RS256","kid":"<base64url(sha256(DER public key))>"}
//   claims  {"aud":["<audience>",...],"exp":<s>,"iat":<s>,"nbf":<s>,
//            "iss":"<issuer>","sub":"system:serviceaccount:<ns>:<name>",
//            "kubernetes.io":{"namespace":"<ns>",
//                             "serviceaccount":{"name":"<name>",
//                                               "uid":"<uid>"},
//                             "pod":{"name":"<pod>","uid":"<uid>"}}}
//   ("pod", or "secret", only in a token bound to that object: TokenRequest's
//   spec.boundObjectRef)
//
// The issuer signs with --service-account-signing-key-file; the
// authenticator verifies with every key of --service-account-key-file (so a
// key can be rotated: verify with old and new, sign with new; only the key
// the header's kid names when it names one, as kube: net::JwsKeySet),
// checks the issuer (--service-account-issuer; a token of another issuer is
// not this authenticator's), the audiences (--api-audiences, default the
// issuer), the validity window (60 s of leeway, as go-jose's), and that the
// ServiceAccount still exists with the same uid (a deleted and recreated
// account's old tokens stop working), and so does the object the token is
// bound to, if any.
//
// The user: "system:serviceaccount:<ns>:<name>", uid the account's, groups
// "system:serviceaccounts" and "system:serviceaccounts:<ns>".
//
//   auto issuer = ServiceAccountTokenIssuer::Create(key_pem, issuer_url);
//   std::string jwt = *(*issuer)->Issue({"default", "builder", uid},
//                                       {issuer_url}, now, hours(1));
//   ServiceAccountTokenAuthenticator authn({...});
//   authn.AuthenticateToken(jwt);
//
// Thread-safety: both are immutable after Create and safe for concurrent
// use (OpenSSL key objects are only read). Errors: Create fails with
// kInvalidArgument on unreadable key material; AuthenticateToken returns
// kUnauthenticated with the reason for a token of this issuer that fails a
// check, and no user (nullopt) for anything else.
#ifndef KPLANE_APISERVER_AUTH_SERVICE_ACCOUNT_TOKEN_H_
#define KPLANE_APISERVER_AUTH_SERVICE_ACCOUNT_TOKEN_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/auth/authenticator.h"
#include "base/clock.h"
#include "base/statusor.h"
#include "net/jws.h"

namespace kplane::apiserver::auth {

struct ServiceAccountRef {
  std::string ns;
  std::string name;
  std::string uid;
};

// An object a token is bound to (TokenRequest's spec.boundObjectRef, in the
// token's namespace): the token stops working when the object is gone or
// replaced by one with another uid.
struct BoundObjectRef {
  std::string kind;  // "Pod" or "Secret"
  std::string name;
  std::string uid;
};

// Where the authenticator looks the account up (the API server's cache).
class ServiceAccountLookup {
 public:
  virtual ~ServiceAccountLookup() = default;
  // The account's uid, nullopt if it does not exist.
  virtual std::optional<std::string> Uid(const std::string& ns,
                                         const std::string& name) const = 0;
  // The uid of the object of `kind` ("Pod", "Secret") a token is bound to,
  // nullopt if it does not exist. The default knows none, so that a lookup
  // that cannot tell refuses every bound token.
  virtual std::optional<std::string> BoundObjectUid(
      const std::string& ns, const std::string& kind,
      const std::string& name) const {
    return std::nullopt;
  }
  // When the object of `kind` ("ServiceAccount", "Pod", "Secret") began to
  // be deleted (its deletionTimestamp, Unix seconds); nullopt when it is
  // not being deleted. Tokens of an object deleted more than a minute ago
  // are refused though it lingers (a finalizer, a node that is gone), as
  // kube's validator does.
  virtual std::optional<int64_t> DeletionStarted(
      const std::string& ns, const std::string& kind,
      const std::string& name) const {
    return std::nullopt;
  }
};

// A new RSA 2048 private key, PEM (PKCS#8): kplane up's signing key.
StatusOr<std::string> GenerateServiceAccountKeyPem();

class ServiceAccountTokenIssuer {
 public:
  // `private_key_pem`: an RSA private key (PKCS#1 or PKCS#8 PEM).
  static StatusOr<std::unique_ptr<ServiceAccountTokenIssuer>> Create(
      std::string_view private_key_pem, std::string issuer);
  ~ServiceAccountTokenIssuer();

  // kInvalidArgument for a bound object of a kind other than Pod or Secret.
  StatusOr<std::string> Issue(
      const ServiceAccountRef& sa, const std::vector<std::string>& audiences,
      WallTime now, Duration ttl,
      const std::optional<BoundObjectRef>& bound = std::nullopt) const;

 private:
  ServiceAccountTokenIssuer() = default;
  std::shared_ptr<const net::JwsKey> key_;
  std::string kid_;
  std::string issuer_;
};

struct ServiceAccountTokenAuthenticatorOptions {
  // PEM blocks: public keys, RSA private keys (their public half is used),
  // or certificates; several may be concatenated.
  std::vector<std::string> key_pems;
  std::vector<std::string> issuers;              // accepted "iss" values
  std::vector<std::string> audiences;            // one must be in "aud"
  const ServiceAccountLookup* lookup = nullptr;  // borrowed; required
  const Clock* clock = nullptr;                  // borrowed; required
};

class ServiceAccountTokenAuthenticator final : public TokenAuthenticator {
 public:
  static StatusOr<std::unique_ptr<ServiceAccountTokenAuthenticator>> Create(
      ServiceAccountTokenAuthenticatorOptions options);
  ~ServiceAccountTokenAuthenticator() override;

  StatusOr<std::optional<UserInfo>> AuthenticateToken(
      std::string_view token) const override;
  // For `audiences` rather than the configured ones (a TokenReview's).
  StatusOr<std::optional<UserInfo>> AuthenticateTokenFor(
      std::string_view token, const std::vector<std::string>& audiences,
      const std::vector<std::string>& api_audiences,
      std::vector<std::string>* matched) const override;

 private:
  ServiceAccountTokenAuthenticator() = default;
  StatusOr<std::optional<UserInfo>> Verify(
      std::string_view token, const std::vector<std::string>& audiences,
      std::vector<std::string>* matched) const;
  ServiceAccountTokenAuthenticatorOptions options_;
  net::JwsKeySet keys_;
};

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_SERVICE_ACCOUNT_TOKEN_H_
