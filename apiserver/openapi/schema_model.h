// The OpenAPI schema model of the built-in API: one JSON-schema definition
// per protobuf message reachable from the Scheme's kinds, generated at start
// from the compiled-in descriptors (schemas/k8s/*.proto) and the JSON
// codec's field tables (objects/field_table.h), so a schema says exactly
// what the decoder accepts, and a resource added to the Scheme appears here
// with no code of its own.
//
// Kubernetes' conventions (k8s.io/kube-openapi, as kube-apiserver publishes
// /openapi/v2 and /openapi/v3):
//   names      proto k8s.io.api.core.v1.Pod -> "io.k8s.api.core.v1.Pod"
//   scalars    int32/int64 -> integer + int32/int64, bool -> boolean,
//              double/float -> number + double, bytes -> string + byte
//   specials   meta.v1.Time, MicroTime -> string + date-time; Duration ->
//              string; IntOrString -> string + int-or-string (v3: oneOf
//              integer|string) with x-kubernetes-int-or-string; Quantity ->
//              string (v3: oneOf string|number); RawExtension, FieldsV1 ->
//              object
//   fields     JSON names (== proto names), Go-embedded (json_inline) members
//              at the enclosing level, "apiVersion"/"kind" on TypeMeta kinds;
//              maps -> additionalProperties, repeated -> array;
//              `required` = members Go writes without omitempty that are not
//              structs (the (kplane.schema.json_emit) = EMIT_ALWAYS option)
//   extensions x-kubernetes-group-version-kind on every registered kind (all
//              its registrations); x-kubernetes-patch-strategy/-merge-key
//              from the strategic-merge-patch table (objects/patch/
//              patch_meta.h); x-kubernetes-list-type map + list-map-keys for
//              lists with a merge key and set for merge lists of scalars, as
//              server-side apply (objects/patch/apply.h) treats them.
// Proto comments are not carried (the compiled-in descriptors hold no source
// info), so definitions have no descriptions.
//
//   const SchemaModel& m = SchemaModel::Default();
//   const Schema* pod = m.Find("io.k8s.api.core.v1.Pod");
//   pod->Property("spec")->ref == "io.k8s.api.core.v1.PodSpec"
//   std::string json = ToJson(*pod, Dialect::kSwagger2);
//
// Reusable beyond the built-ins (custom resources can build Schema values
// and write them with the same ToJson/WriteSchema).
//
// Thread-safety: a SchemaModel is immutable after construction; Default()
// is built once on first use. Errors: none (a descriptor the codec accepts
// always has a schema).
#ifndef KPLANE_APISERVER_OPENAPI_SCHEMA_MODEL_H_
#define KPLANE_APISERVER_OPENAPI_SCHEMA_MODEL_H_

#include <google/protobuf/descriptor.h>
#include <rapidjson/document.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "objects/scheme.h"

namespace kplane::openapi {

// Which OpenAPI a schema is written for: `$ref` prefixes and the v3-only
// oneOf of IntOrString and Quantity differ.
enum class Dialect { kSwagger2, kOpenApi3 };

struct GroupVersionKind {
  std::string group, version, kind;
};

struct SchemaProperty;  // a property's name and schema, below

// One JSON-schema node: the subset Kubernetes' built-in definitions use.
struct Schema {
  std::string ref;  // a definition name, without "#/definitions/"
  std::string type;
  std::string format;
  std::string description;
  // In Go order. (Not a std::pair<std::string, Schema>: a pair of the
  // incomplete Schema is refused by clang with libstdc++.)
  std::vector<SchemaProperty> properties;
  std::vector<std::string> required;
  std::shared_ptr<const Schema> items;                  // type array
  std::shared_ptr<const Schema> additional_properties;  // maps
  // v3 only: IntOrString, Quantity.
  std::vector<std::string> one_of_types;
  bool int_or_string = false;  // x-kubernetes-int-or-string
  std::vector<GroupVersionKind> gvks;
  std::string patch_strategy;   // "merge", "merge,retainKeys", ...
  std::string patch_merge_key;  // "name"
  std::string list_type;        // "map", "set"
  std::vector<std::string> list_map_keys;

  const Schema* Property(std::string_view name) const;
};

struct SchemaProperty {
  std::string name;
  Schema schema;
};

class SchemaModel {
 public:
  // Definitions of every kind of Scheme::Default() and what they reference.
  static const SchemaModel& Default();
  explicit SchemaModel(const objects::Scheme& scheme);
  // Also `extra` definitions for kinds the Scheme does not hold as protobuf
  // messages (apiextensions_definitions.h); a name the Scheme's kinds
  // already define keeps the Scheme's definition.
  SchemaModel(const objects::Scheme& scheme,
              std::map<std::string, Schema, std::less<>> extra);

  // By definition name; nullptr when unknown.
  const Schema* Find(std::string_view name) const;
  const std::map<std::string, Schema, std::less<>>& definitions() const {
    return definitions_;
  }
  // The definition name of a message type ("io.k8s.api.core.v1.Pod").
  static std::string DefinitionName(const google::protobuf::Descriptor* d);
  // `roots` and every definition they reference, transitively.
  std::set<std::string> Closure(const std::vector<std::string>& roots) const;

 private:
  void AddMessage(const google::protobuf::Descriptor* d);
  std::map<std::string, Schema, std::less<>> definitions_;
};

// The schema as a JSON value in `alloc` (object members in model order).
rapidjson::Value ToJsonValue(const Schema& s, Dialect dialect,
                             rapidjson::Document::AllocatorType& alloc);
// "#/definitions/<name>" or "#/components/schemas/<name>".
std::string RefPath(std::string_view name, Dialect dialect);

}  // namespace kplane::openapi

#endif  // KPLANE_APISERVER_OPENAPI_SCHEMA_MODEL_H_
