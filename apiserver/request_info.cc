#include "apiserver/request_info.h"

#include "base/strings.h"

namespace kplane::apiserver {

namespace {

// Subresources of a namespace object addressed as
// /namespaces/{name}/{sub} rather than as a resource inside the namespace.
bool IsNamespaceSubresource(std::string_view s) {
  return s == "status" || s == "finalize";
}

}  // namespace

StatusOr<RequestInfo> ParseRequestInfo(const net::HttpRequest& req) {
  RequestInfo info;
  std::vector<std::string> parts;
  for (std::string& p : StrSplit(req.path, '/')) {
    if (!p.empty()) parts.push_back(std::move(p));
  }
  if (parts.empty() || (parts[0] != "api" && parts[0] != "apis")) {
    info.parts = std::move(parts);
    return info;
  }
  info.api_prefix = parts[0];
  size_t i = 1;
  if (info.api_prefix == "apis") {
    if (parts.size() < 3) {
      info.parts = std::move(parts);
      return info;
    }
    info.group = parts[1];
    info.version = parts[2];
    i = 3;
  } else {
    if (parts.size() < 2) {
      info.parts = std::move(parts);
      return info;
    }
    info.version = parts[1];
    i = 2;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i),
                                parts.end());
  info.parts = parts;
  if (rest.empty()) return info;  // /api/v1, /apis/apps/v1: discovery
  info.is_resource_request = true;

  bool legacy_watch = false;
  if (rest[0] == "watch") {
    legacy_watch = true;
    rest.erase(rest.begin());
    if (rest.empty()) {
      info.is_resource_request = false;
      return info;
    }
  }

  if (rest[0] == "namespaces") {
    if (rest.size() > 1) {
      info.ns = rest[1];
      if (rest.size() > 2 && !IsNamespaceSubresource(rest[2])) {
        rest.erase(rest.begin(), rest.begin() + 2);
      }
    }
  }
  info.resource = rest[0];
  if (rest.size() >= 2) info.name = rest[1];
  if (rest.size() >= 3) info.subresource = rest[2];
  if (info.resource == "namespaces") {
    // /api/v1/namespaces/{name}: the namespace object is the name, not a
    // namespace scope.
    info.name = info.ns;
    info.ns.clear();
  }
  for (size_t k = 3; k < rest.size(); ++k) {
    // Deeper paths (pods/x/proxy/..., status/extra) name no subresource we
    // serve; keeping the whole tail makes them 404.
    info.subresource += "/" + rest[k];
  }

  bool watch = legacy_watch;
  if (req.HasQueryParam("watch")) {
    std::string_view w = req.QueryParam("watch");
    std::optional<bool> b = ParseBool(w);
    if (!b) {
      return InvalidArgumentError("invalid value for watch: \"" +
                                  std::string(w) + "\"");
    }
    watch = watch || *b;
  }
  const std::string& m = req.method;
  if (m == "GET" || m == "HEAD") {
    if (info.name.empty()) {
      info.verb = watch ? "watch" : "list";
    } else {
      info.verb = watch ? "watch" : "get";
    }
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  } else {
    info.verb = ToLower(m);
  }
  // A watch of one named object (/watch/namespaces/d/pods/x) is a watch with
  // a name field selector; handlers read `name` for that.
  return info;
}

}  // namespace kplane::apiserver
