// A Swagger 2.0 JSON document (as OpenApiDocuments builds it) into gnostic's
// openapi_v2.Document protobuf (openapi_v2.proto), the form kubectl fetches
// from /openapi/v2. Covers the members kplane writes: swagger, info, paths
// (operations, body/query/path parameters, responses), definitions (schemas
// with $ref, type, format, required, items, additionalProperties,
// properties, allOf) and x-* vendor extensions, whose values become YAML
// (JSON) text in a NamedAny, as kube-openapi expects. Other members are
// dropped.
//
//   v2::Document d = SwaggerJsonToProto(doc);  d.definitions() ...
//
// Thread-safety: stateless. Errors: none (unexpected shapes are skipped).
#ifndef KPLANE_APISERVER_OPENAPI_V2_PROTO_H_
#define KPLANE_APISERVER_OPENAPI_V2_PROTO_H_

#include <rapidjson/document.h>

#include "apiserver/openapi/openapi_v2.pb.h"

namespace kplane::openapi {

v2::Document SwaggerJsonToProto(const rapidjson::Value& doc);

}  // namespace kplane::openapi

#endif  // KPLANE_APISERVER_OPENAPI_V2_PROTO_H_
