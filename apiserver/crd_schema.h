// The structural schema of a CRD version (spec.versions[].schema.
// openAPIV3Schema, a JSONSchemaProps) as a model parsed once per CRD
// version, and what kube's apiextensions-apiserver does with it to custom
// resources: validation (kube-openapi's validator), pruning of unknown
// fields and defaulting (apiextensions' structural pruning/defaulting).
//
//   FieldErrors errs;
//   std::shared_ptr<const CrdSchema> s = CrdSchema::Build(
//       props, validation::Path("spec.versions[0].schema.openAPIV3Schema"),
//       &errs);                              // errs: not structural, ...
//   std::vector<std::string> unknown = s->PruneAndDefault(&cr);
//   FieldErrors invalid = s->Validate(cr);  // "spec.replicas: Invalid ..."
//
// What is modelled: type (object, array, string, integer, number, boolean),
// nullable, required, enum, format (date-time, date, byte, uuid, ipv4,
// ipv6, cidr, hostname, int32, int64; other formats are accepted as kube
// accepts unknown ones), minimum/maximum/exclusiveMinimum/
// exclusiveMaximum/multipleOf, minLength/maxLength/pattern, minItems/
// maxItems, minProperties/maxProperties, properties, additionalProperties
// (a schema or true), items, default, x-kubernetes-preserve-unknown-fields,
// x-kubernetes-int-or-string, x-kubernetes-embedded-resource,
// x-kubernetes-list-type (atomic, set, map) and -list-map-keys. Not
// modelled: allOf/anyOf/oneOf/not (value validations only in kube; they
// are ignored here), x-kubernetes-validations (CEL), x-kubernetes-map-type.
//
// Patterns are compiled with RE2 (the regular-expression library gRPC
// already brings into the tree): Go's regexp syntax, which is what kube
// uses, matching in time linear in the input; a pattern's compiled program
// is capped at kMaxPatternProgramBytes.
//
// Bounds: a schema nested deeper than kMaxCrdSchemaDepth or with more than
// kMaxCrdSchemaNodes schemas is refused by Build (field errors naming the
// limit); walks over objects follow the schema, so they are as deep as it
// at most.
//
// Thread-safety: a built CrdSchema is immutable; all methods are const.
// Errors: Build reports field errors with kube's texts (paths below the
// given one) and still returns a usable model of what it understood;
// Validate returns kube's field errors (paths such as "spec.items[0].name").
#ifndef KPLANE_APISERVER_CRD_SCHEMA_H_
#define KPLANE_APISERVER_CRD_SCHEMA_H_

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/registry/strategy.h"
#include "apiserver/registry/validation_util.h"
#include "objects/unstructured.h"

namespace re2 {
class RE2;
}

namespace kplane::apiserver {

inline constexpr int kMaxCrdSchemaDepth = 64;
inline constexpr int kMaxCrdSchemaNodes = 100000;
// The memory one compiled `pattern` may take (RE2's max_mem: its programs
// and the DFA caches matching grows), and what each is given: 64 bytes per
// instruction of its program (RE2 takes ~9 bytes per instruction, and
// limits the forward program to a quarter of two thirds of max_mem, 48
// bytes per instruction) plus kPatternDfaBytes for the DFA caches, at most
// kMaxPatternProgramBytes. A name pattern is ~30 instructions (~66 KiB);
// `\pL{50}` is ~60,000 (RE2 spells out the class), and takes the cap.
inline constexpr int kMaxPatternProgramBytes = 1 << 20;
inline constexpr int64_t kPatternBytesPerInstruction = 64;
inline constexpr int64_t kPatternDfaBytes = 64 << 10;
// What all `pattern`s of one schema may take together, each distinct
// pattern counted once at its max_mem above. Kubernetes has no such bound (Go's
// regexp keeps a Unicode class as one instruction and grows no DFA); without it
// a 3 MiB CRD of 65,000 `\pL{50}` patterns would take tens of GB; and matching
// grows each pattern's DFA caches up to its max_mem, so they count too.
inline constexpr int64_t kMaxCrdPatternBytes = int64_t{64} << 20;

// The canonical JSON of a value: object members sorted by name, integral
// numbers written as integers (1 and 1.0 are one value). Two values are
// equal as kube's apiequality.Semantic.DeepEqual judges JSON (member order
// ignored) when their canonical forms are.
std::string Canonical(const rapidjson::Value& v);

// One JSONSchemaProps.
struct CrdSchemaNode {
  CrdSchemaNode();
  ~CrdSchemaNode();
  CrdSchemaNode(const CrdSchemaNode&) = delete;
  CrdSchemaNode& operator=(const CrdSchemaNode&) = delete;

  std::string type;  // "" (any), "object", "array", "string", ...
  std::string format;
  bool nullable = false;
  std::vector<std::string> required;
  // The enum values, and each one's canonical JSON (sorted keys) to compare.
  rapidjson::Document enum_values;
  std::vector<std::string> enum_keys;
  std::optional<double> minimum, maximum, multiple_of;
  bool exclusive_minimum = false, exclusive_maximum = false;
  std::optional<int64_t> min_length, max_length, min_items, max_items,
      min_properties, max_properties;
  std::string pattern;
  // Null when absent or invalid; shared by the nodes of a schema that have
  // the same pattern (compiled and counted once).
  std::shared_ptr<const re2::RE2> pattern_re;
  std::map<std::string, std::unique_ptr<CrdSchemaNode>> properties;
  std::unique_ptr<CrdSchemaNode> items;
  std::unique_ptr<CrdSchemaNode> additional_properties;  // a schema
  bool additional_properties_any = false;  // additionalProperties: true
  std::optional<rapidjson::Document> default_value;
  bool preserve_unknown_fields = false;
  bool int_or_string = false;
  bool embedded_resource = false;
  std::string list_type;  // "", "atomic", "set", "map"
  std::vector<std::string> list_map_keys;
};

class CrdSchema {
 public:
  // Parses `props` (an openAPIV3Schema) found at `path` of the CRD. Field
  // errors for what kube refuses (not structural: a missing type,
  // metadata beyond name/generateName, properties with
  // additionalProperties, uniqueItems; bad list types, patterns, defaults;
  // kplane's depth and size limits) go to `errs` (may be null). Never
  // null.
  static std::shared_ptr<const CrdSchema> Build(const rapidjson::Value& props,
                                                const validation::Path& path,
                                                FieldErrors* errs);

  const CrdSchemaNode& root() const { return *root_; }

  // kube's decoding of a custom resource: drops the members the schema
  // does not know (unless x-kubernetes-preserve-unknown-fields) and
  // returns their paths ("spec.foo", for fieldValidation Strict and Warn),
  // then drops null members that are not nullable and have no default, and
  // sets the defaults of absent members. apiVersion, kind and metadata are
  // the apiserver's and left alone.
  std::vector<std::string> PruneAndDefault(objects::Unstructured* u) const;
  // The same over a JSON object holding the whole resource (or its content).
  std::vector<std::string> PruneAndDefault(
      rapidjson::Value* obj, rapidjson::Document::AllocatorType& a) const;

  // kube-openapi's validation of the resource against the schema: its
  // metadata's name and generateName (all of metadata a schema may
  // constrain: "metadata.name: Too long: ..."), then its content
  // (everything but apiVersion, kind and metadata).
  FieldErrors Validate(const objects::Unstructured& u) const;
  FieldErrors Validate(const rapidjson::Value& obj) const;

 private:
  CrdSchema() = default;
  std::unique_ptr<CrdSchemaNode> root_;
};

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_CRD_SCHEMA_H_
