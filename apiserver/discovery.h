// Discovery, version and OpenAPI documents, computed once from the Scheme
// (objects/scheme.h) when the server starts (the model is
// k8s.io/apiserver/pkg/endpoints/discovery and .../server/routes/openapi).
//
//   GET /api                 APIVersions {"versions":["v1"], ...}
//   GET /apis                APIGroupList (core v1 is not listed there)
//   GET /api/v1, /apis/g/v   APIResourceList: name, singularName, namespaced,
//                            kind, verbs, shortNames, categories,
//                            storageVersionHash, and one entry per
//                            subresource ("deployments/scale" with group
//                            autoscaling, version v1, kind Scale)
//   GET /apis/g              APIGroup
//   aggregated v2            APIGroupDiscoveryList for /api and /apis, only
//                            when the Accept header asks for it exactly
//   GET /version             v1.32.4 (kubectl's dispatcher picks its binary
//                            from "minor")
//   GET /openapi/v3          {"paths":{"api/v1":{"serverRelativeURL":
//                            "/openapi/v3/api/v1?hash=..."}, ...}}
//   GET /openapi/v3/apis/g/v one PATCH (and PUT, POST) operation per kind
//                            declaring the fieldValidation parameter, so
//                            kubectl hands validation to the server
//                            (?fieldValidation=Strict); components.schemas is
//                            empty, so kubectl computes strategic merge
//                            patches from its compiled-in types.
//
// The hash in each serverRelativeURL is a digest of the document, so a
// changed document gets a new URL (kubectl's HTTP cache keys on it).
//
// Thread-safety: immutable after construction.
#ifndef KPLANE_APISERVER_DISCOVERY_H_
#define KPLANE_APISERVER_DISCOVERY_H_

#include <map>
#include <optional>
#include <string>

#include "objects/scheme.h"

namespace kplane::apiserver {

class Discovery {
 public:
  // `server_address` is "host:port" for /api's serverAddressByClientCIDRs.
  Discovery(const objects::Scheme& scheme, std::string server_address);

  const std::string& ApiVersions() const { return api_versions_; }
  const std::string& ApiGroupList() const { return api_group_list_; }
  const std::string& AggregatedCore() const { return aggregated_core_; }
  const std::string& AggregatedGroups() const { return aggregated_groups_; }
  // nullptr when the group or group-version is not served.
  const std::string* ApiGroup(std::string_view group) const;
  const std::string* ResourceList(std::string_view group,
                                  std::string_view version) const;

  const std::string& Version() const { return version_; }
  const std::string& OpenApiIndex() const { return openapi_index_; }
  // By path after /openapi/v3/: "api/v1", "apis/apps/v1".
  const std::string* OpenApiDocument(std::string_view path) const;
  // "/" : {"paths":[...]}.
  const std::string& RootPaths() const { return root_paths_; }

  // Stable opaque hashes (storageVersionHash, OpenAPI hash).
  static std::string Hash64(std::string_view data);

 private:
  std::string api_versions_, api_group_list_, aggregated_core_,
      aggregated_groups_, version_, openapi_index_, root_paths_;
  std::map<std::string, std::string, std::less<>> groups_;
  std::map<std::string, std::string, std::less<>> resource_lists_;  // "g/v"
  std::map<std::string, std::string, std::less<>> openapi_docs_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_DISCOVERY_H_
