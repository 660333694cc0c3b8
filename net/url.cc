#include "net/url.h"

#include "base/strings.h"

namespace kplane::net {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
}

// Characters Go's url.PathEscape leaves alone besides the unreserved ones.
bool IsPathSegmentSafe(unsigned char c) {
  switch (c) {
    case '$':
    case '&':
    case '+':
    case ',':
    case ';':
    case '=':
    case ':':
    case '@':
      return true;
    default:
      return IsUnreserved(c);
  }
}

constexpr char kHexDigits[] = "0123456789ABCDEF";

template <typename Keep>
std::string Escape(std::string_view s, bool space_as_plus, Keep keep) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (keep(c)) {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ' && space_as_plus) {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(kHexDigits[c >> 4]);
      out.push_back(kHexDigits[c & 15]);
    }
  }
  return out;
}

}  // namespace

StatusOr<std::string> PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) {
        return InvalidArgumentError("truncated percent escape");
      }
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) {
        return InvalidArgumentError("invalid percent escape");
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string QueryEscape(std::string_view s) {
  return Escape(s, /*space_as_plus=*/true, IsUnreserved);
}

std::string PathEscape(std::string_view s) {
  return Escape(s, /*space_as_plus=*/false, IsPathSegmentSafe);
}

StatusOr<std::multimap<std::string, std::string>> ParseQuery(
    std::string_view raw_query) {
  std::multimap<std::string, std::string> out;
  while (!raw_query.empty()) {
    size_t amp = raw_query.find('&');
    std::string_view pair = raw_query.substr(0, amp);
    raw_query = amp == std::string_view::npos ? std::string_view()
                                              : raw_query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    ASSIGN_OR_RETURN(std::string k, PercentDecode(key, true));
    ASSIGN_OR_RETURN(std::string v, PercentDecode(value, true));
    out.emplace(std::move(k), std::move(v));
  }
  return out;
}

std::string BuildQuery(
    const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out.push_back('&');
    out += QueryEscape(k);
    out.push_back('=');
    out += QueryEscape(v);
  }
  return out;
}

std::string BuildQueryFromMap(
    const std::multimap<std::string, std::string>& params) {
  return BuildQuery(std::vector<std::pair<std::string, std::string>>(
      params.begin(), params.end()));
}

std::string Url::HostPort() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string Url::PathAndQuery() const {
  return raw_query.empty() ? path : path + "?" + raw_query;
}

StatusOr<Url> ParseUrl(std::string_view url, UrlSchemes schemes) {
  Url u;
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    u.scheme = "http";
  } else {
    u.scheme = ToLower(url.substr(0, scheme_end));
    url.remove_prefix(scheme_end + 3);
  }
  if (u.scheme != "http" &&
      !(u.scheme == "https" && schemes == UrlSchemes::kHttpOrHttps)) {
    return InvalidArgumentError("unsupported URL scheme \"" + u.scheme + "\"");
  }
  size_t auth_end = url.find_first_of("/?#");
  std::string_view authority = url.substr(0, auth_end);
  std::string_view rest = auth_end == std::string_view::npos
                              ? std::string_view()
                              : url.substr(auth_end);
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgumentError("user info in URLs is not supported");
  }
  std::string_view port_text;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("unterminated IPv6 literal in URL");
    }
    u.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return InvalidArgumentError("bad URL authority");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos)
      port_text = authority.substr(colon + 1);
  }
  if (u.host.empty()) return InvalidArgumentError("URL has no host");
  if (port_text.empty()) {
    u.port = u.scheme == "https" ? 443 : 80;
  } else {
    std::optional<int64_t> p = ParseInt64(port_text);
    if (!p || *p <= 0 || *p > 65535) {
      return InvalidArgumentError("bad port in URL");
    }
    u.port = static_cast<uint16_t>(*p);
  }
  size_t hash = rest.find('#');
  if (hash != std::string_view::npos) rest = rest.substr(0, hash);
  size_t q = rest.find('?');
  u.path = std::string(rest.substr(0, q));
  if (q != std::string_view::npos)
    u.raw_query = std::string(rest.substr(q + 1));
  if (u.path.empty()) u.path = "/";
  return u;
}

Status SplitHostPort(const std::string& s, bool allow_zero, std::string* host,
                     uint16_t* port) {
  std::string h, p;
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() ||
        s[close + 1] != ':') {
      return InvalidArgumentError("missing port");
    }
    h = s.substr(1, close - 1);
    p = s.substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos) return InvalidArgumentError("missing port");
    h = s.substr(0, colon);
    p = s.substr(colon + 1);
    if (h.find(':') != std::string::npos) {
      return InvalidArgumentError("too many colons (an IPv6 address needs [])");
    }
  }
  if (p.empty() || p.size() > 5 ||
      p.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError("bad port \"" + p + "\"");
  }
  const int n = std::stoi(p);
  if (n > 65535 || (n == 0 && !allow_zero)) {
    return InvalidArgumentError("port " + p + " out of range");
  }
  *host = h;
  *port = static_cast<uint16_t>(n);
  return Status::Ok();
}

}  // namespace kplane::net
