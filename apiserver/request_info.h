// RequestInfo: what an /api or /apis request addresses, parsed from its
// method and path (the model is k8s.io/apiserver/pkg/endpoints/request.
// RequestInfoFactory).
//
//   GET    /api/v1/namespaces/default/pods            list pods in default
//   GET    /api/v1/pods?watch=true                    watch pods everywhere
//   PATCH  /apis/apps/v1/namespaces/d/deployments/w/scale
//                                                     patch deployments/scale
//   GET    /api/v1/namespaces/default                 get namespace default
//   PUT    /api/v1/namespaces/default/status          update namespaces/status
//   GET    /api/v1/watch/namespaces/d/pods            (legacy) watch pods
//   DELETE /api/v1/namespaces/d/configmaps            deletecollection
//
// Verbs: get, list, watch, create, update, patch, delete, deletecollection.
// Paths with fewer than three segments (/api, /api/v1, /apis/apps) are not
// resource requests (discovery).
//
// Thread-safety: pure function. Errors: BadRequest for an unparsable
// boolean in ?watch=.
#ifndef KPLANE_APISERVER_REQUEST_INFO_H_
#define KPLANE_APISERVER_REQUEST_INFO_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"
#include "net/http_message.h"

namespace kplane::apiserver {

struct RequestInfo {
  bool is_resource_request = false;
  std::string api_prefix;  // "api" or "apis"
  std::string group;       // "" for core
  std::string version;
  std::string verb;
  std::string ns;  // namespace
  std::string resource;
  std::string subresource;
  std::string name;
  // The path segments after the prefix ("apis/apps/v1" removed), for
  // discovery and error messages.
  std::vector<std::string> parts;
};

StatusOr<RequestInfo> ParseRequestInfo(const net::HttpRequest& req);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_REQUEST_INFO_H_
