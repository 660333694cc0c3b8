// The OpenAPI documents kube-apiserver serves, built from the Scheme and the
// SchemaModel (schema_model.h):
//
//   /openapi/v2                 one Swagger 2.0 document: every definition
//                               and every path; as JSON, or as gnostic's
//                               openapi_v2.Document protobuf (openapi_v2.proto)
//   /openapi/v3                 the index: {"paths":{"api/v1":
//                               {"serverRelativeURL":"/openapi/v3/api/v1?hash=<etag>"}}}
//   /openapi/v3/apis/apps/v1    one OpenAPI 3.0 document per group-version:
//                               its paths and the definitions they reach
//
// Paths carry kube's operations (list, read, create, replace, patch, delete,
// deletecollection and the subresources' read/replace/patch), with
// operationIds as kube names them (readCoreV1NamespacedPod), the
// x-kubernetes-action and x-kubernetes-group-version-kind extensions and the
// query parameters, among them fieldValidation on POST, PUT and PATCH, which
// kubectl >= 1.27 looks for to hand validation to the server.
//
// Each document has an ETag: the uppercase hex SHA-512 of its JSON, as
// kube-openapi computes it; a v3 document's ETag is also the `hash` of its
// index URL (served immutable when it matches).
//
//   OpenApiDocuments docs(objects::Scheme::Default(), SchemaModel::Default());
//   docs.V3("apis/apps/v1")->json   // nullptr for unknown group-versions
//
// Thread-safety: immutable after construction.
#ifndef KPLANE_APISERVER_OPENAPI_DOCUMENTS_H_
#define KPLANE_APISERVER_OPENAPI_DOCUMENTS_H_

#include <map>
#include <string>
#include <string_view>

#include "apiserver/openapi/schema_model.h"
#include "objects/scheme.h"

namespace kplane::openapi {

struct ServedDocument {
  std::string json;
  std::string etag;  // unquoted
};

class OpenApiDocuments {
 public:
  OpenApiDocuments(const objects::Scheme& scheme, const SchemaModel& model);

  const ServedDocument& V2() const { return v2_; }
  // gnostic openapi_v2.Document bytes of V2(), and their ETag.
  const std::string& V2Proto() const { return v2_proto_; }
  const std::string& V2ProtoEtag() const { return v2_proto_etag_; }
  const ServedDocument& V3Index() const { return v3_index_; }
  // By path after "/openapi/v3/": "api/v1", "apis/apps/v1".
  const ServedDocument* V3(std::string_view path) const;

  // Uppercase hex SHA-512, kube-openapi's ETag.
  static std::string Etag(std::string_view data);

 private:
  ServedDocument v2_, v3_index_;
  std::string v2_proto_, v2_proto_etag_;
  std::map<std::string, ServedDocument, std::less<>> v3_;
};

}  // namespace kplane::openapi

#endif  // KPLANE_APISERVER_OPENAPI_DOCUMENTS_H_
