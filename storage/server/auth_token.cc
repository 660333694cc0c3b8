#include "storage/server/auth_token.h"

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/json_escape.h"
#include "base/strings.h"

namespace kplane::storage {

namespace {

Status Invalid(std::string_view why) {
  return Status(StatusCode::kUnauthenticated, std::string(why));
}

int64_t UnixSeconds(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
      .count();
}

// A JSON number claim as jwt-go reads it (float64), if it is a whole
// number; NumericDate claims (exp, nbf) may be negative.
std::optional<int64_t> WholeNumber(const rapidjson::Value& v) {
  if (v.IsInt64()) return v.GetInt64();
  if (v.IsDouble()) {
    double d = v.GetDouble();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

}  // namespace

StatusOr<std::string> JwtTokenProvider::Assign(std::string_view user,
                                               uint64_t revision,
                                               WallTime now) const {
  if (!key_->can_sign()) {
    // etcd's ErrVerifyOnly, which reaches gRPC clients as Unknown.
    return Status(StatusCode::kUnknown,
                  "auth: token signing attempted with verify-only key");
  }
  // etcd's claims; the keys in Go's map order (sorted).
  const int64_t exp = UnixSeconds(now + ttl_);
  std::string claims = "{\"exp\":" + std::to_string(exp) +
                       ",\"revision\":" + std::to_string(revision) +
                       ",\"username\":" + JsonQuote(user, kGoJsonEscape) + "}";
  return key_->Sign(claims);
}

StatusOr<AuthTokenInfo> JwtTokenProvider::Info(std::string_view token,
                                               WallTime now) const {
  StatusOr<std::string> payload = key_->Verify(token);
  if (!payload.ok()) return payload.status();
  rapidjson::Document c;
  if (!json::ParseDom(*payload, &c, /*max_depth=*/8).ok() || !c.IsObject()) {
    return Invalid("jwt: the claims are not a JSON object");
  }
  auto user = c.FindMember("username");
  auto rev = c.FindMember("revision");
  auto exp = c.FindMember("exp");
  if (user == c.MemberEnd() || !user->value.IsString()) {
    return Invalid("jwt: no username claim");
  }
  std::optional<int64_t> revision;
  if (rev != c.MemberEnd()) revision = WholeNumber(rev->value);
  if (!revision || *revision < 0) return Invalid("jwt: no revision claim");
  // etcd's tokens always carry exp; one without would never expire.
  std::optional<int64_t> expires;
  if (exp != c.MemberEnd()) expires = WholeNumber(exp->value);
  if (!expires) return Invalid("jwt: no exp claim");
  const int64_t now_s = UnixSeconds(now);
  if (now_s > *expires) return Invalid("jwt: the token has expired");
  if (auto nbf = c.FindMember("nbf"); nbf != c.MemberEnd()) {
    std::optional<int64_t> not_before = WholeNumber(nbf->value);
    if (!not_before || now_s < *not_before) {
      return Invalid("jwt: the token is not valid yet");
    }
  }
  return AuthTokenInfo{
      .user =
          std::string(user->value.GetString(), user->value.GetStringLength()),
      .revision = static_cast<uint64_t>(*revision),
  };
}

StatusOr<std::shared_ptr<const TokenProvider>> ParseAuthTokenOption(
    std::string_view value, const ReadFileFn& read_file) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("--auth-token=" + std::string(value) + ": " +
                                why);
  };
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t comma = value.find(',', start);
    parts.push_back(value.substr(start, comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  const std::string_view type = parts[0];
  if (type == "simple") {
    if (parts.size() > 1) return bad("simple tokens take no options");
    return std::shared_ptr<const TokenProvider>();
  }
  if (type != "jwt") {
    return bad("unknown token type \"" + std::string(type) +
               "\" (simple or jwt)");
  }
  std::map<std::string, std::string, std::less<>> opts;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view p = parts[i];
    const size_t eq = p.find('=');
    // etcd splits on '=' and wants exactly two pieces.
    if (eq == std::string_view::npos ||
        p.find('=', eq + 1) != std::string_view::npos) {
      return bad("option \"" + std::string(p) + "\" is not <name>=<value>");
    }
    std::string name(p.substr(0, eq));
    if (name != "pub-key" && name != "priv-key" && name != "sign-method" &&
        name != "ttl") {
      return bad("unknown option \"" + name +
                 "\" (pub-key, priv-key, sign-method, ttl)");
    }
    if (!opts.emplace(name, std::string(p.substr(eq + 1))).second) {
      return bad("option \"" + name + "\" given twice");
    }
  }
  Duration ttl = kDefaultJwtTtl;
  if (auto it = opts.find("ttl"); it != opts.end() && !it->second.empty()) {
    std::optional<int64_t> ns = ParseGoDuration(it->second);
    if (!ns || *ns <= 0) {
      return bad("ttl \"" + it->second +
                 "\" is not a positive duration (e.g. 5m, 30s)");
    }
    // exp = now + ttl must stay far from the clock's range.
    if (*ns > std::chrono::nanoseconds(kMaxJwtTtl).count()) {
      return bad("ttl \"" + it->second + "\" is longer than a year");
    }
    ttl = nanoseconds(*ns);
  }
  const std::string method =
      opts.count("sign-method") ? opts["sign-method"] : "";
  std::optional<net::JwsAlg> alg = net::ParseJwsAlg(method);
  if (!alg) {
    return bad("sign-method \"" + method +
               "\" is not one of RS256, RS384, RS512, PS256, PS384, PS512, "
               "ES256, ES384, ES512, HS256, HS384, HS512");
  }
  std::string key_text[2];  // private, public
  const char* names[2] = {"priv-key", "pub-key"};
  for (int i = 0; i < 2; ++i) {
    auto it = opts.find(names[i]);
    if (it == opts.end() || it->second.empty()) continue;
    StatusOr<std::string> text = read_file(it->second);
    if (!text.ok()) {
      return bad(std::string(names[i]) + " " + it->second + ": " +
                 text.status().message());
    }
    if (text->empty()) {
      return bad(std::string(names[i]) + " " + it->second + " is empty");
    }
    key_text[i] = std::move(*text);
  }
  const bool hmac = method.starts_with("HS");
  if (hmac && key_text[0].empty()) {
    return bad(method +
               " needs priv-key, the file whose bytes are the shared secret");
  }
  if (!hmac && key_text[0].empty() && key_text[1].empty()) {
    return bad(method +
               " needs priv-key (to issue tokens) or pub-key (to only "
               "check them), or both");
  }
  StatusOr<std::shared_ptr<const net::JwsKey>> key =
      hmac ? net::JwsKey::Hmac(*alg, std::move(key_text[0]))
           : net::JwsKey::FromPem(*alg, key_text[0], key_text[1]);
  if (!key.ok()) return bad(key.status().message());
  return std::shared_ptr<const TokenProvider>(
      std::make_shared<JwtTokenProvider>(std::move(*key), ttl));
}

}  // namespace kplane::storage
