// Static bearer tokens from a CSV file, kube-apiserver's --token-auth-file
// (k8s.io/apiserver/plugin/pkg/authenticator/token/tokenfile):
//
//   31ada4fd-adec-460c-809a-9e56ceb75269,alice,1001,"dev,ops"
//   8f1c2d90,ci-bot,1002
//
// one record per line: token, user name, uid, and optionally the groups in
// one (quoted) comma-separated field. Fields are CSV (RFC 4180 quoting).
// Tokens are compared in constant time; a record with an empty token is
// skipped and a repeated token keeps its last record, both with a warning,
// as kube.
//
// Thread-safety: immutable after Parse; safe for concurrent use. Errors:
// Parse/Load fail with kInvalidArgument on a record with fewer than three
// fields or bad quoting (kube's message: "token file '<f>' must have at
// least 3 columns (token, user name, user uid), found N"), Load with the
// file's read error.
#ifndef KPLANE_APISERVER_AUTH_TOKEN_FILE_H_
#define KPLANE_APISERVER_AUTH_TOKEN_FILE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/auth/authenticator.h"
#include "base/file_system.h"
#include "base/statusor.h"

namespace kplane::apiserver::auth {

class TokenFileAuthenticator final : public TokenAuthenticator {
 public:
  // `name` is the file's name for messages.
  static StatusOr<std::unique_ptr<TokenFileAuthenticator>> Parse(
      std::string_view csv, std::string_view name,
      std::vector<std::string>* warnings);
  static StatusOr<std::unique_ptr<TokenFileAuthenticator>> Load(
      FileSystem* fs, const std::string& path,
      std::vector<std::string>* warnings);

  StatusOr<std::optional<UserInfo>> AuthenticateToken(
      std::string_view token) const override;

  size_t size() const { return records_.size(); }

 private:
  struct Record {
    std::string token;
    UserInfo user;
  };
  std::vector<Record> records_;
};

}  // namespace kplane::apiserver::auth

#endif  // KPLANE_APISERVER_AUTH_TOKEN_FILE_H_
