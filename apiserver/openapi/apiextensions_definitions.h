// The OpenAPI definitions of apiextensions.k8s.io/v1 (the
// CustomResourceDefinition type itself), which kube-apiserver publishes in
// /openapi/v2 and /openapi/v3/apis/apiextensions.k8s.io/v1 under Go's
// package names ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.
// CustomResourceDefinition"). kplane stores CRDs as Unstructured objects
// (no protobuf message, so SchemaModel cannot derive them): the schemas are
// written out here, field for field as apiextensions' Go types serialize,
// with the same `required` lists, so that
//   - `kubectl explain crd.spec.versions.schema` works (v3 in 1.27+, v2 in
//     older kubectls and with --output=plaintext-openapiv2), and
//   - kubectl 1.20's client-side validation (from /openapi/v2) checks a CRD
//     manifest as against kube-apiserver: unknown fields and missing
//     required ones are refused on the client.
// JSONSchemaProps refers to itself (properties, items, allOf...); the
// "any JSON" types (JSON, JSONSchemaPropsOrArray, ...OrBool,
// ...OrStringArray) have no type, as in kube, so clients accept any value.
//
//   SchemaModel model(scheme, ApiExtensionsDefinitions());
//   model.Find(std::string(kApiExtensionsV1) + "CustomResourceDefinition")
//
// Thread-safety: a pure function.
#ifndef KPLANE_APISERVER_OPENAPI_APIEXTENSIONS_DEFINITIONS_H_
#define KPLANE_APISERVER_OPENAPI_APIEXTENSIONS_DEFINITIONS_H_

#include <map>
#include <string>

#include "apiserver/openapi/schema_model.h"

namespace kplane::openapi {

// The prefix of apiextensions.k8s.io/v1's definition names.
inline constexpr char kApiExtensionsV1[] =
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.";

// Every definition of apiextensions.k8s.io/v1, by name. They refer to
// meta/v1's ObjectMeta, ListMeta and Time, which the built-in model has.
std::map<std::string, Schema, std::less<>> ApiExtensionsDefinitions();

}  // namespace kplane::openapi

#endif  // KPLANE_APISERVER_OPENAPI_APIEXTENSIONS_DEFINITIONS_H_
