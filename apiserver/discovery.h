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
//   GET /openapi/v2, /openapi/v3[/<group-version>]
//                            the OpenAPI documents with the schemas of every
//                            kind (apiserver/openapi/documents.h), built on
//                            first use (OpenApi()) so start-up does not pay
//                            for them; the built-in part once per process,
//                            the custom resources' part per Discovery (that
//                            is, when CRDs change).
//
// Thread-safety: immutable after construction (OpenApi() builds its
// documents once, under std::call_once).
#ifndef KPLANE_APISERVER_DISCOVERY_H_
#define KPLANE_APISERVER_DISCOVERY_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/openapi/documents.h"
#include "objects/scheme.h"

namespace kplane::apiserver {

class Discovery {
 public:
  // `server_address` is "host:port" for /api's serverAddressByClientCIDRs.
  // `extra` resources (served by CustomResourceDefinitions) are listed
  // after the scheme's, their group-versions after the scheme's in the
  // order given; they must outlive the Discovery. The OpenAPI documents
  // describe the scheme (built once per process and shared by every
  // Discovery) plus `custom_openapi` (the served CRD versions with their
  // schemas, whose resources `keep_alive` keeps alive).
  Discovery(const objects::Scheme& scheme, std::string server_address,
            std::vector<const objects::ResourceInfo*> extra = {},
            std::vector<openapi::CustomResourceApi> custom_openapi = {},
            std::shared_ptr<const void> keep_alive = nullptr);

  const std::string& ApiVersions() const { return api_versions_; }
  const std::string& ApiGroupList() const { return api_group_list_; }
  const std::string& AggregatedCore() const { return aggregated_core_; }
  const std::string& AggregatedGroups() const { return aggregated_groups_; }
  // nullptr when the group or group-version is not served.
  const std::string* ApiGroup(std::string_view group) const;
  const std::string* ResourceList(std::string_view group,
                                  std::string_view version) const;

  const std::string& Version() const { return version_; }
  // The /openapi/v2 and /openapi/v3 documents, built on first use.
  const openapi::OpenApiDocuments& OpenApi() const;
  const std::string& OpenApiIndex() const { return OpenApi().V3Index().json; }
  // By path after /openapi/v3/: "api/v1", "apis/apps/v1".
  const std::string* OpenApiDocument(std::string_view path) const;
  // "/" : {"paths":[...]}.
  const std::string& RootPaths() const { return root_paths_; }

  // Stable opaque hashes (storageVersionHash, OpenAPI hash).
  static std::string Hash64(std::string_view data);

 private:
  const objects::Scheme* scheme_;
  std::string api_versions_, api_group_list_, aggregated_core_,
      aggregated_groups_, version_, root_paths_;
  std::map<std::string, std::string, std::less<>> groups_;
  std::map<std::string, std::string, std::less<>> resource_lists_;  // "g/v"
  std::vector<openapi::CustomResourceApi> custom_openapi_;
  std::shared_ptr<const void> keep_alive_;
  mutable std::once_flag openapi_once_;
  mutable std::shared_ptr<const openapi::OpenApiDocuments> openapi_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_DISCOVERY_H_
