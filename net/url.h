// URL helpers: percent-encoding and decoding, query strings, and splitting an
// "http://host:port/path?query" URL into parts.
//
//   StatusOr<Url> u = ParseUrl("http://127.0.0.1:2379/v3/kv/range?x=1");
//   // u->host == "127.0.0.1", u->port == 2379, u->path == "/v3/kv/range",
//   // u->raw_query == "x=1"
//
//   BuildQuery({{"labelSelector", "app=web,tier in (a,b)"}, {"watch", "1"}})
//   // == "labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&watch=1"
//
// Escaping follows Go's net/url (what Kubernetes clients and servers use):
// QueryEscape keeps [A-Za-z0-9-_.~] and turns space into '+'; PathEscape
// additionally keeps the sub-delims and ':' '@' that are legal in a path
// segment, and escapes '/'.
//
// Thread-safety: pure functions. Errors: kInvalidArgument for malformed
// input (a bad %xx escape, a URL that is not http://).
#ifndef KPLANE_NET_URL_H_
#define KPLANE_NET_URL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/statusor.h"

namespace kplane::net {

// Decodes %xx escapes. With `plus_is_space`, '+' decodes to ' ' (query
// strings); otherwise '+' is kept (paths).
StatusOr<std::string> PercentDecode(std::string_view s, bool plus_is_space);

// Escapes a query key or value ("a b&c" -> "a+b%26c").
std::string QueryEscape(std::string_view s);
// Escapes one path segment ("a b/c" -> "a%20b%2Fc").
std::string PathEscape(std::string_view s);

// Parses "a=1&b=x+y&a=2" into {a:1, a:2, b:"x y"}. Pairs without '=' get an
// empty value; empty pairs ("a=1&&b=2") are skipped.
StatusOr<std::multimap<std::string, std::string>> ParseQuery(
    std::string_view raw_query);

// Builds "k=v&k2=v2" with QueryEscape applied to keys and values, in the
// given order.
std::string BuildQuery(
    const std::vector<std::pair<std::string, std::string>>& params);
std::string BuildQueryFromMap(
    const std::multimap<std::string, std::string>& params);

struct Url {
  std::string scheme;     // "http"
  std::string host;       // "127.0.0.1", "localhost", "::1" (no brackets)
  uint16_t port = 0;      // explicit port, else 80
  std::string path;       // "/v3/kv/range" ("/" when absent), still escaped
  std::string raw_query;  // "x=1" (no '?')

  // "host:port" ("[::1]:2379" for IPv6), as used in a Host header.
  std::string HostPort() const;
  // path plus "?query" when there is one.
  std::string PathAndQuery() const;
};

enum class UrlSchemes { kHttpOnly, kHttpOrHttps };

// Parses an absolute http URL. A URL without a scheme ("127.0.0.1:2379") is
// taken as http. https is rejected unless `schemes` allows it (a caller
// that accepts https must also speak TLS: HttpClient::ForUrl does; the
// servers' flags are not wired to TLS yet, so they keep refusing it).
// The default port is 80 for http, 443 for https.
StatusOr<Url> ParseUrl(std::string_view url,
                       UrlSchemes schemes = UrlSchemes::kHttpOnly);

// Go's net.SplitHostPort for listen and dial addresses: "host:port" or
// "[v6]:port" ("::1:80" is refused: too many colons). The port must be
// decimal digits naming 0..65535 (`allow_zero`: port 0 asks for any) or
// 1..65535. kInvalidArgument: "missing port", "too many colons (an IPv6
// address needs [])", "bad port \"x\"", "port N out of range".
Status SplitHostPort(const std::string& s, bool allow_zero, std::string* host,
                     uint16_t* port);

}  // namespace kplane::net

#endif  // KPLANE_NET_URL_H_
