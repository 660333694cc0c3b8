#include "net/router.h"

#include <algorithm>

#include "base/strings.h"

namespace kplane::net {

void Router::Add(Route route) { routes_.push_back(std::move(route)); }

RouteMatch Router::Find(std::string_view method, std::string_view path) const {
  // The most specific path level with any route: exact beats prefix, a
  // longer prefix beats a shorter one.
  const Route* best = nullptr;
  for (const Route& r : routes_) {
    bool matches =
        r.prefix ? path.substr(0, r.path.size()) == r.path : path == r.path;
    if (!matches) continue;
    if (best == nullptr || (best->prefix && !r.prefix) ||
        (best->prefix == r.prefix && r.path.size() > best->path.size())) {
      best = &r;
    }
  }
  RouteMatch m;
  if (best == nullptr) return m;
  const Route* any = nullptr;
  const Route* get = nullptr;
  std::vector<std::string> allow;
  for (const Route& r : routes_) {
    if (r.prefix != best->prefix || r.path != best->path) continue;
    if (r.method == method) {
      m.route = &r;
      return m;
    }
    if (r.method.empty()) any = &r;
    if (r.method == "GET") get = &r;
    if (!r.method.empty()) allow.push_back(r.method);
  }
  if (any != nullptr) {
    m.route = any;
    return m;
  }
  if (method == "HEAD" && get != nullptr) {
    m.route = get;
    return m;
  }
  if (get != nullptr) allow.push_back("HEAD");
  std::sort(allow.begin(), allow.end());
  allow.erase(std::unique(allow.begin(), allow.end()), allow.end());
  m.allow = StrJoin(allow, ", ");
  return m;
}

}  // namespace kplane::net
