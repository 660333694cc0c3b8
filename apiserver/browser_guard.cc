#include "apiserver/browser_guard.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <string_view>

#include "base/strings.h"

namespace kplane::apiserver {
namespace {

// "host:port", "[v6]:port", "host" -> the host (brackets kept off).
std::string_view HostPart(std::string_view authority) {
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    return close == std::string_view::npos ? authority
                                           : authority.substr(1, close - 1);
  }
  const size_t colon = authority.rfind(':');
  return colon == std::string_view::npos ? authority
                                         : authority.substr(0, colon);
}

bool IsIpAddress(std::string_view host) {
  const std::string h(host);
  unsigned char buf[16];
  return ::inet_pton(AF_INET, h.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

const std::string& ThisHostsName() {
  static const std::string* const name = [] {
    char buf[256] = {};
    ::gethostname(buf, sizeof buf - 1);
    return new std::string(ToLower(buf));
  }();
  return *name;
}

}  // namespace

std::optional<std::string> UnauthenticatedBrowserRefusal(
    const net::HttpRequest& req) {
  const std::string host = ToLower(req.headers.Get("Host"));
  const std::string_view name = HostPart(host);
  // A rebinding attack needs a name its author controls: one with a dot
  // (single-label names, such as a container's service name, stay usable).
  if (name.find('.') != std::string_view::npos && !IsIpAddress(name) &&
      name != ThisHostsName()) {
    return "host " + GoQuote(name) +
           " refused: a server without authentication answers only requests "
           "for an IP address, a name without a dot, or this host's name";
  }
  if (!req.headers.Has("Origin")) return std::nullopt;
  const std::string origin = ToLower(req.headers.Get("Origin"));
  std::string_view authority = origin;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (authority.starts_with(scheme)) {
      authority.remove_prefix(scheme.size());
      break;
    }
  }
  if (authority == origin || authority != host) {
    return "cross-origin request from " + GoQuote(origin) +
           " refused: a server without authentication answers browsers only "
           "from its own pages";
  }
  return std::nullopt;
}

}  // namespace kplane::apiserver
