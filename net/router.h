// Router: maps (method, path) to a handler for HttpServer.
//
// Routes are exact paths or prefixes. Lookup picks the most specific path
// that has any route (an exact match, else the longest matching prefix),
// then dispatches on the method within it:
//
//   Add({"GET",  "/v3/kv/range", exact})   Add({"",  "/v3/", prefix})
//   Add({"POST", "/v3/kv/range", exact})   Add({"GET", "/", prefix})
//   Find("POST", "/v3/kv/range") -> the POST route
//   Find("PUT",  "/v3/kv/range") -> no route, allow = "GET, HEAD, POST" (405)
//   Find("PUT",  "/v3/watch")    -> the "" (any method) /v3/ prefix route
//   Find("PUT",  "/metrics")     -> no route, allow = "GET, HEAD" (405)
//   Find("GET",  "/x") with no "/" route at all -> no route, allow "" (404)
//
// A GET route also answers HEAD unless a HEAD route exists.
//
// Thread-safety: Add() before use; Find() is const and may run concurrently.
// Errors: none; Find() reports 404/405 through RouteMatch.
#ifndef KPLANE_NET_ROUTER_H_
#define KPLANE_NET_ROUTER_H_

#include <string>
#include <string_view>
#include <vector>

#include "net/http_server.h"

namespace kplane::net {

struct Route {
  std::string method;  // "" = any method
  std::string path;    // exact path or prefix
  bool prefix = false;
  HttpHandler handler;
  RouteOptions options;
};

struct RouteMatch {
  const Route* route = nullptr;
  // When route is null: the methods the path does allow ("GET, POST"), or
  // "" when no route matches the path at all.
  std::string allow;
};

class Router {
 public:
  void Add(Route route);
  RouteMatch Find(std::string_view method, std::string_view path) const;

 private:
  std::vector<Route> routes_;
};

}  // namespace kplane::net

#endif  // KPLANE_NET_ROUTER_H_
