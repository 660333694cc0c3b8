// Continue tokens, byte for byte as kube-apiserver writes them
// (k8s.io/apiserver/pkg/storage/continue.go): unpadded base64url of the
// JSON {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key suffix>"}, with
// the key suffix escaped as Go's encoding/json escapes strings.
#include <rapidjson/document.h>

#include <cstdio>
#include <string>

#include "apiserver/storage/object_store.h"
#include "base/base64.h"
#include "base/json.h"
#include "base/json_escape.h"

namespace kplane::apiserver {
namespace {

constexpr std::string_view kTokenVersion = "meta.k8s.io/v1";
constexpr std::string_view kInvalid = "continue key is not valid";

std::string ToBase64Url(std::string_view in) {
  std::string s = Base64Encode(in);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

StatusOr<std::string> FromBase64Url(std::string_view in) {
  std::string s(in);
  for (char& c : s) {
    // RawURLEncoding knows neither the standard alphabet's +/ nor padding.
    if (c == '+' || c == '/' || c == '=') {
      return InvalidArgumentError(std::string(kInvalid) +
                                  ": illegal base64 data");
    }
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  StatusOr<std::string> out = Base64Decode(s);
  if (!out.ok()) {
    return InvalidArgumentError(std::string(kInvalid) +
                                ": illegal base64 data");
  }
  return out;
}

// True when "/" + start is already what Go's path.Clean makes of it: no
// empty, "." or ".." elements and no trailing slash. Such a suffix cannot
// climb out of the listed prefix.
bool IsCleanSuffix(std::string_view start) {
  std::string key = "/";
  key += start;
  if (key.size() > 1 && key.back() == '/') return false;
  size_t pos = 1;
  while (pos <= key.size()) {
    size_t next = key.find('/', pos);
    if (next == std::string::npos) next = key.size();
    std::string_view elem(key.data() + pos, next - pos);
    if (elem.empty() || elem == "." || elem == "..") {
      return key.size() == 1;  // "/" alone is clean
    }
    pos = next + 1;
  }
  return true;
}

}  // namespace

std::string EncodeContinueToken(int64_t revision, std::string_view start_key) {
  std::string json = "{\"v\":\"";
  json += kTokenVersion;
  json += "\",\"rv\":";
  json += std::to_string(revision);
  json += ",\"start\":";
  // encoding/json's escapes, except that bytes that are not UTF-8 stay as
  // they are (kube writes \ufffd; tokens from kplane keep the key).
  json += JsonQuote(start_key, {.short_escapes = "\n\r\t\b\f",
                                .html_safe = true,
                                .escape_line_separators = true});
  json += "}";
  return ToBase64Url(json);
}

StatusOr<std::pair<int64_t, std::string>> DecodeContinueToken(
    std::string_view token) {
  ASSIGN_OR_RETURN(std::string text, FromBase64Url(token));
  rapidjson::Document doc;
  const json::Outcome parsed = json::ParseDom(text, &doc);
  if (!parsed.ok()) {
    return InvalidArgumentError(std::string(kInvalid) + ": " +
                                parsed.Message());
  }
  if (!doc.IsObject()) {
    return InvalidArgumentError(std::string(kInvalid) +
                                ": json: cannot unmarshal into a token");
  }
  std::string version;
  int64_t rv = 0;
  std::string start;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    const rapidjson::Value& v = it->value;
    if (name == "v") {
      if (!v.IsString() && !v.IsNull()) {
        return InvalidArgumentError(std::string(kInvalid) +
                                    ": json: \"v\" is not a string");
      }
      if (v.IsString()) version.assign(v.GetString(), v.GetStringLength());
    } else if (name == "rv") {
      if (!v.IsInt64() && !v.IsNull()) {
        return InvalidArgumentError(std::string(kInvalid) +
                                    ": json: \"rv\" is not an int64");
      }
      if (v.IsInt64()) rv = v.GetInt64();
    } else if (name == "start") {
      if (!v.IsString() && !v.IsNull()) {
        return InvalidArgumentError(std::string(kInvalid) +
                                    ": json: \"start\" is not a string");
      }
      if (v.IsString()) start.assign(v.GetString(), v.GetStringLength());
    }
  }
  if (version != kTokenVersion) {
    return InvalidArgumentError(
        std::string(kInvalid) +
        ": server does not recognize this encoded version " + version);
  }
  if (rv == 0) {
    return InvalidArgumentError(
        std::string(kInvalid) +
        ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  }
  if (start.empty()) {
    return InvalidArgumentError(
        std::string(kInvalid) +
        ": encoded start key empty (version meta.k8s.io/v1)");
  }
  std::string suffix = start.front() == '/' ? start.substr(1) : start;
  if (!IsCleanSuffix(suffix)) {
    return InvalidArgumentError(std::string(kInvalid) + ": " + start);
  }
  return std::make_pair(rv, suffix);
}

std::string InconsistentContinueToken(std::string_view token) {
  StatusOr<std::pair<int64_t, std::string>> decoded =
      DecodeContinueToken(token);
  if (!decoded.ok()) return "";
  return EncodeContinueToken(-1, decoded->second);
}

}  // namespace kplane::apiserver
