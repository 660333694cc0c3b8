// The one defence a server without authentication (--insecure-http) has
// against the browsers of the people who can reach it: every page a user
// visits can send requests to 127.0.0.1 (a POST needs no CORS preflight
// when its body has no Content-Type), and a page whose DNS name is made to
// resolve to 127.0.0.1 (DNS rebinding) can even read the answers. Neither
// is a danger when every request must carry credentials a browser does
// not add on its own (kplane's tokens and client certificates), so the
// guard runs only without authentication, as kubectl proxy's
// --accept-hosts does for its unauthenticated port.
//
// Refused: a Host that is a DNS name with a dot other than this host's own
// name (a rebound name; IP addresses, single-label names such as localhost
// or a container's service name, and the host's name pass), and an Origin
// header (what browsers
// send on cross-origin and non-GET requests and on WebSocket upgrades)
// naming another origin than the request's Host, or "null". kubectl and
// the client libraries send no Origin.
//
// Thread-safety: a pure function.
#ifndef KPLANE_APISERVER_BROWSER_GUARD_H_
#define KPLANE_APISERVER_BROWSER_GUARD_H_

#include <optional>
#include <string>

#include "net/http_message.h"

namespace kplane::apiserver {

// Why the request is refused (a 403's message), or nullopt.
std::optional<std::string> UnauthenticatedBrowserRefusal(
    const net::HttpRequest& req);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_BROWSER_GUARD_H_
