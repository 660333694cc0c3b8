// The kinds of auth token a member hands out, as etcd 3.4's --auth-token
// (auth/store.go NewTokenProvider, auth/jwt.go, auth/options.go):
//
//   simple   random "<16 letters>.<raft index>" tokens the members remember
//            (AuthStore keeps them; the default);
//   jwt,pub-key=<path>,priv-key=<path>,sign-method=<alg>,ttl=<duration>
//            JSON Web Tokens: stateless, any member holding the key checks
//            them without having seen them issued.
//
// A JWT's claims are etcd's, {"exp":<unix s>,"revision":<auth revision>,
// "username":"<name>"}, signed with sign-method (RS256/384/512,
// PS256/384/512, ES256/384/512, HS256/384/512; net/jws.h). priv-key signs
// (for HS*, the file's bytes are the shared secret); pub-key alone makes a
// verify-only member (RS, PS, ES), which checks tokens but refuses
// Authenticate, as etcd's. ttl (Go duration, default 5m) is how long a
// token lives from its issue; unlike simple tokens, using it does not
// extend it (--auth-token-ttl is for simple tokens only, as in etcd).
//
// Thread-safety: a TokenProvider is immutable; every method may be called
// from any thread. Errors: see each function.
#ifndef KPLANE_STORAGE_SERVER_AUTH_TOKEN_H_
#define KPLANE_STORAGE_SERVER_AUTH_TOKEN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/statusor.h"
#include "net/jws.h"

namespace kplane::storage {

// Who a token names, and the auth store revision it was issued at.
struct AuthTokenInfo {
  std::string user;
  uint64_t revision = 0;
};

// A stateless token kind: what AuthStore asks of it instead of keeping its
// own table (simple tokens are AuthStore's own state, not a provider).
class TokenProvider {
 public:
  virtual ~TokenProvider() = default;
  // False on a verify-only member.
  virtual bool can_assign() const = 0;
  // A token for `user` at auth revision `revision`, issued at `now`.
  virtual StatusOr<std::string> Assign(std::string_view user, uint64_t revision,
                                       WallTime now) const = 0;
  // What `token` says, if it is genuine and unexpired at `now`;
  // Unauthenticated (with the reason, for logs) otherwise.
  virtual StatusOr<AuthTokenInfo> Info(std::string_view token,
                                       WallTime now) const = 0;
};

// etcd's tokenJWT.
class JwtTokenProvider : public TokenProvider {
 public:
  JwtTokenProvider(std::shared_ptr<const net::JwsKey> key, Duration ttl)
      : key_(std::move(key)), ttl_(ttl) {}
  bool can_assign() const override { return key_->can_sign(); }
  StatusOr<std::string> Assign(std::string_view user, uint64_t revision,
                               WallTime now) const override;
  StatusOr<AuthTokenInfo> Info(std::string_view token,
                               WallTime now) const override;
  Duration ttl() const { return ttl_; }
  net::JwsAlg alg() const { return key_->alg(); }

 private:
  const std::shared_ptr<const net::JwsKey> key_;
  const Duration ttl_;
};

// etcd's default JWT ttl, and our bound (etcd has none).
inline constexpr Duration kDefaultJwtTtl = minutes(5);
inline constexpr Duration kMaxJwtTtl = hours(24 * 366);

// The text of a file (the key files named by the options).
using ReadFileFn = std::function<StatusOr<std::string>(const std::string&)>;

// Reads an --auth-token value: null for "simple", the JWT provider for
// "jwt,...". InvalidArgument with the reason: an unknown token type, an
// option not "k=v" or given twice, an unknown option, an unknown
// sign-method, a bad ttl, a key file that cannot be read or parsed, a
// missing key, keys that do not match. (etcd answers most of these with
// "auth: invalid auth options"; we say which.)
StatusOr<std::shared_ptr<const TokenProvider>> ParseAuthTokenOption(
    std::string_view value, const ReadFileFn& read_file);

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_AUTH_TOKEN_H_
