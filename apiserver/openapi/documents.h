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
// Resources served beside the Scheme (`extra`: the CustomResourceDefinition
// resource, whose objects are Unstructured) are published like built-ins
// when the model defines their kinds (apiextensions_definitions.h); kinds
// of apiextensions.k8s.io/v1 are named as kube names them
// ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.
// CustomResourceDefinition"). Their PATCH, like custom resources', takes no
// strategic merge patch (kplane answers it 415).
//
// Custom resources (CustomResourceDefinitions, apiextensions-apiserver's
// controller/openapi/builder): a documents object built from the built-in
// one and the served CRD versions adds, per version, the paths and two
// definitions named as kube names them (reversed group, version, kind:
// "io.example.v1.Widget" and "io.example.v1.WidgetList") to /openapi/v2,
// and a /openapi/v3/apis/<group>/<version> document (listed in the index
// with its hash). The CRD's openAPIV3Schema is published as kube does:
// metadata becomes a $ref to ObjectMeta, apiVersion and kind are added,
// the GVK extension set, x-kubernetes-embedded-resource objects get
// apiVersion/kind/metadata, x-kubernetes-int-or-string gets v3's anyOf;
// for v2 (ToStructuralOpenAPIV2) allOf/anyOf/oneOf/not are dropped, a
// nullable node loses its type, items and properties (and its parent's
// `required` of it), a x-kubernetes-preserve-unknown-fields node its items
// and properties, and a root that preserves unknown fields is just
// {"type":"object"} (else kubectl refuses its unknown fields).
//
//   auto builtin = std::make_shared<const OpenApiDocuments>(scheme, model);
//   OpenApiDocuments all(builtin, model, {{&widgets_v1, schema_json}});
//
// The built-in v3 documents are shared, not copied; the v2 document (JSON
// and protobuf) is the built-in one with the custom paths and definitions
// spliced in, so a rebuild costs the custom part plus one copy of v2.
//
// Thread-safety: immutable after construction.
#ifndef KPLANE_APISERVER_OPENAPI_DOCUMENTS_H_
#define KPLANE_APISERVER_OPENAPI_DOCUMENTS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/openapi/schema_model.h"
#include "objects/scheme.h"

namespace kplane::openapi {

struct ServedDocument {
  std::string json;
  std::string etag;  // unquoted
};

// One served version of a CustomResourceDefinition.
struct CustomResourceApi {
  // Its kind, list kind and subresources (status; scale's kind is the
  // built-in autoscaling/v1 Scale). Must outlive the documents' build.
  const objects::ResourceInfo* resource = nullptr;
  // spec.versions[].schema.openAPIV3Schema as JSON; "" when none.
  std::string schema_json;
};

// kube's definition name of a custom kind: reversed group, version, kind
// ("example.io", "v1", "Widget" -> "io.example.v1.Widget").
std::string CustomDefinitionName(const objects::GroupVersion& gv,
                                 std::string_view kind);

class OpenApiDocuments {
 public:
  // `extra`: resources served beside the Scheme's whose kinds `model`
  // defines (the CustomResourceDefinition resource, with
  // ApiExtensionsDefinitions()); each gets its paths in /openapi/v2 and
  // its group-version's /openapi/v3 document. They must outlive the
  // constructor only.
  OpenApiDocuments(const objects::Scheme& scheme, const SchemaModel& model,
                   const std::vector<const objects::ResourceInfo*>& extra = {});
  // `builtin`'s documents plus those of `custom` (see above); `model` is
  // the one `builtin` was built from (for ObjectMeta, Status, ...).
  OpenApiDocuments(std::shared_ptr<const OpenApiDocuments> builtin,
                   const SchemaModel& model,
                   const std::vector<CustomResourceApi>& custom);

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
  // Where custom paths and definitions are spliced into v2_.json: the
  // offsets of the closing braces of "paths" and "definitions".
  size_t v2_paths_end_ = 0, v2_definitions_end_ = 0;
  // The built-in documents V3() falls back to (custom documents only).
  std::shared_ptr<const OpenApiDocuments> builtin_;
};

}  // namespace kplane::openapi

#endif  // KPLANE_APISERVER_OPENAPI_DOCUMENTS_H_
