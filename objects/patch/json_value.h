// JSON helpers shared by every patch flavour: parsing, deep equality with
// Go's `encoding/json` + `reflect.DeepEqual` semantics, Go's `%v` rendering of
// scalars (the sort key Kubernetes' strategic merge patch uses) and canonical
// serialization (object keys sorted, as Go marshals map[string]interface{}).
//
// Number model. Kubernetes decodes patches with k8s.io/apimachinery/pkg/util/
// json, which turns every whole number into int64 and everything else into
// float64. We mirror that: a number is "integral" when it is an int64/uint64
// or a double with no fractional part that fits in int64; 1 and 1.0 are equal,
// 1 and 1.5 are different kinds (so a patch turning one into the other is a
// replacement, exactly as upstream's reflect.TypeOf comparison behaves).
//
// Ownership: functions take rapidjson values by reference and never keep
// them. Values built by these helpers live in the allocator passed in.
// Thread-safety: stateless functions; safe to call concurrently on distinct
// documents. Errors: ParseJson returns InvalidArgument "invalid JSON document".
#ifndef KPLANE_OBJECTS_PATCH_JSON_VALUE_H_
#define KPLANE_OBJECTS_PATCH_JSON_VALUE_H_

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "base/statusor.h"

namespace kplane::patch {

using JsonValue = rapidjson::Value;
using JsonAllocator = rapidjson::Document::AllocatorType;

// The dynamic type of a decoded JSON value, as Go's reflect.TypeOf would
// report it after k8s json.Unmarshal (int64 vs float64).
enum class JsonKind { kNull, kBool, kInt, kFloat, kString, kObject, kArray };

JsonKind KindOf(const JsonValue& v);
// Human name used in error messages: "map", "slice", "string", ...
std::string_view KindName(JsonKind k);

// Deep equality: objects compare as unordered maps, arrays element-wise,
// numbers by value within their kind.
bool JsonEqual(const JsonValue& a, const JsonValue& b);

// Go's fmt "%v" of a decoded scalar: strings verbatim, integers in decimal,
// floats as %g with Go's exponent thresholds, "true"/"false", "<nil>".
// Objects and arrays render as "map[k:v ...]" / "[a b]" (only used in error
// messages and, like upstream, as a last-resort sort key).
std::string GoString(const JsonValue& v);

// Compact JSON with object keys sorted byte-wise (what Go's json.Marshal
// produces for a map[string]interface{}); integral doubles print as integers.
std::string CanonicalJson(const JsonValue& v);

// Compact JSON in member order (no sorting).
std::string CompactJson(const JsonValue& v);

// Parses one JSON text. InvalidArgument("invalid JSON document") on error.
Status ParseJson(std::string_view text, rapidjson::Document* out);

// Parses a JSON or YAML text (the body of an apply-patch+yaml request) into a
// JSON DOM. YAML scalars become strings unless they are plain (unquoted)
// null/true/false/numbers, like sigs.k8s.io/yaml's YAMLToJSON.
Status ParseJsonOrYaml(std::string_view text, rapidjson::Document* out);

// Member lookup that does not assert (rapidjson's operator[] does).
const JsonValue* FindMember(const JsonValue& obj, std::string_view key);
JsonValue* FindMember(JsonValue& obj, std::string_view key);
// Removes `key` from `obj` (an object) keeping the order of the others.
// Returns whether it was present.
bool RemoveMember(JsonValue& obj, std::string_view key);
// Sets obj[key] = value (value is moved from), replacing an existing member.
void SetMember(JsonValue& obj, std::string_view key, JsonValue& value,
               JsonAllocator& alloc);
void SetMember(JsonValue& obj, std::string_view key, JsonValue&& value,
               JsonAllocator& alloc);

inline JsonValue MakeString(std::string_view s, JsonAllocator& alloc) {
  return JsonValue(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}
inline std::string_view StringOf(const JsonValue& v) {
  return std::string_view(v.GetString(), v.GetStringLength());
}

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_JSON_VALUE_H_
