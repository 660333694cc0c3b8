#include "apiserver/auth/token_file.h"

#include <openssl/crypto.h>

#include <map>
#include <utility>

namespace kplane::apiserver::auth {
namespace {

// One CSV record per line (RFC 4180, as Go's encoding/csv reads it: a
// quoted field may hold commas, newlines and doubled quotes; a quote inside
// an unquoted field is an error; blank lines are skipped).
StatusOr<std::vector<std::vector<std::string>>> ParseCsv(std::string_view in) {
  std::vector<std::vector<std::string>> records;
  size_t i = 0;
  int line = 1;
  while (i < in.size()) {
    if (in[i] == '\n' || (in[i] == '\r' && i + 1 < in.size() &&
                          in[i + 1] == '\n')) {  // blank line
      i += in[i] == '\r' ? 2 : 1;
      ++line;
      continue;
    }
    std::vector<std::string> fields;
    for (;;) {
      std::string field;
      if (i < in.size() && in[i] == '"') {
        ++i;
        for (;;) {
          if (i >= in.size()) {
            return InvalidArgumentError("line " + std::to_string(line) +
                                        ": extraneous or missing \" in "
                                        "quoted-field");
          }
          if (in[i] == '"') {
            if (i + 1 < in.size() && in[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (in[i] == '\n') ++line;
          field += in[i++];
        }
        if (i < in.size() && in[i] != ',' && in[i] != '\n' && in[i] != '\r') {
          return InvalidArgumentError("line " + std::to_string(line) +
                                      ": extraneous or missing \" in "
                                      "quoted-field");
        }
      } else {
        while (i < in.size() && in[i] != ',' && in[i] != '\n' &&
               !(in[i] == '\r' && i + 1 < in.size() && in[i + 1] == '\n')) {
          if (in[i] == '"') {
            return InvalidArgumentError("line " + std::to_string(line) +
                                        ": bare \" in non-quoted-field");
          }
          field += in[i++];
        }
      }
      fields.push_back(std::move(field));
      if (i < in.size() && in[i] == ',') {
        ++i;
        continue;
      }
      break;
    }
    if (i < in.size() && in[i] == '\r') ++i;
    if (i < in.size() && in[i] == '\n') ++i;
    ++line;
    records.push_back(std::move(fields));
  }
  return records;
}

std::vector<std::string> SplitGroups(const std::string& s) {
  std::vector<std::string> groups;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string g = s.substr(start, comma - start);
    if (!g.empty()) groups.push_back(std::move(g));
    start = comma + 1;
  }
  return groups;
}

}  // namespace

StatusOr<std::unique_ptr<TokenFileAuthenticator>> TokenFileAuthenticator::Parse(
    std::string_view csv, std::string_view name,
    std::vector<std::string>* warnings) {
  StatusOr<std::vector<std::vector<std::string>>> records = ParseCsv(csv);
  if (!records.ok()) {
    return InvalidArgumentError("token file '" + std::string(name) +
                                "': " + records.status().message());
  }
  auto out =
      std::unique_ptr<TokenFileAuthenticator>(new TokenFileAuthenticator);
  std::map<std::string, size_t> index;  // token -> position in records_
  int n = 0;
  for (std::vector<std::string>& r : *records) {
    ++n;
    if (r.size() < 3) {
      return InvalidArgumentError(
          "token file '" + std::string(name) +
          "' must have at least 3 columns (token, user name, user uid), "
          "found " +
          std::to_string(r.size()));
    }
    if (r[0].empty()) {
      warnings->push_back("empty token has been found in token file '" +
                          std::string(name) + "', record " + std::to_string(n));
      continue;
    }
    Record rec{.token = r[0], .user = {.name = r[1], .uid = r[2]}};
    if (r.size() >= 4) rec.user.groups = SplitGroups(r[3]);
    auto it = index.find(rec.token);
    if (it != index.end()) {
      warnings->push_back("duplicate token has been found in token file '" +
                          std::string(name) + "', record " + std::to_string(n));
      out->records_[it->second] = std::move(rec);
      continue;
    }
    index.emplace(rec.token, out->records_.size());
    out->records_.push_back(std::move(rec));
  }
  return out;
}

StatusOr<std::unique_ptr<TokenFileAuthenticator>> TokenFileAuthenticator::Load(
    FileSystem* fs, const std::string& path,
    std::vector<std::string>* warnings) {
  StatusOr<std::string> csv = ReadFile(fs, path);
  if (!csv.ok()) return csv.status();
  return Parse(*csv, path, warnings);
}

StatusOr<std::optional<UserInfo>> TokenFileAuthenticator::AuthenticateToken(
    std::string_view token) const {
  // Every record is compared, each in constant time, so the answer's timing
  // says nothing about how much of a token matched.
  const Record* found = nullptr;
  for (const Record& r : records_) {
    bool same = r.token.size() == token.size() &&
                CRYPTO_memcmp(r.token.data(), token.data(), token.size()) == 0;
    if (same) found = &r;
  }
  if (found == nullptr) return std::optional<UserInfo>();
  return std::optional<UserInfo>(found->user);
}

}  // namespace kplane::apiserver::auth
