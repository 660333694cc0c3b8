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
// documents. Errors: ParseJson returns InvalidArgument "invalid JSON document"
// or "exceeded max depth of 10000"; CheckBounds TooLarge / InvalidArgument.
#ifndef KPLANE_OBJECTS_PATCH_JSON_VALUE_H_
#define KPLANE_OBJECTS_PATCH_JSON_VALUE_H_

#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/json.h"
#include "base/statusor.h"

namespace kplane::patch {

// Kubernetes' limit on the operations of one JSON patch (the apiserver's
// maxJSONPatchOperations); more is 413 RequestEntityTooLarge.
inline constexpr size_t kMaxJsonPatchOperations = 10000;
// The apiserver's default request body limit (3 MiB).
inline constexpr size_t kDefaultMaxPatchBytes = size_t{3} << 20;

// Bounds on what a patch may produce, for every patch flavour.
struct PatchLimits {
  size_t max_operations = kMaxJsonPatchOperations;  // JSON patch only
  // A patched document's size (json::Measure's estimate); for JSON patch
  // also the total that "copy" operations may add (Kubernetes'
  // JSONPatchMaxCopyBytes, which defaults to the body limit too).
  size_t max_bytes = kDefaultMaxPatchBytes;
  int max_depth = json::kMaxDepth;
};

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
// CanonicalJson as Go's encoding/json writes it: '<', '>', '&' as \u003c,
// \u003e, \u0026 and U+2028/U+2029 as \u2028/\u2029 (no final newline). The
// text kubectl and kube-apiserver store in last-applied-configuration:
// byte-identical, or each tool would see the other's apply as a change.
std::string GoCanonicalJson(const JsonValue& v);

// Compact JSON in member order (no sorting).
std::string CompactJson(const JsonValue& v);

// Parses one JSON text, without recursion and at most json::kMaxDepth deep.
// InvalidArgument("invalid JSON document") on a syntax error,
// InvalidArgument("exceeded max depth of 10000") when too deep.
Status ParseJson(std::string_view text, rapidjson::Document* out);

// Checks a patch result (or input) against `limits`: TooLarge
// "<what> is larger than N bytes" past max_bytes, InvalidArgument
// "<what>: exceeded max depth of 10000" past max_depth. Stops measuring
// once max_bytes is passed.
Status CheckBounds(const JsonValue& v, const PatchLimits& limits,
                   std::string_view what);

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

// The members of an object for a loop that finds, removes and sets many
// of them (a merge or strategic merge of a patch of many keys): with many
// members, names are found through an index built once and removals are
// marked and done in one pass by Compact(), order kept, where a scan per
// key and an erase that moved the rest made a patch of 200,000 labels
// quadratic. With few, the plain scans (no index to build). Compact()
// must run before `obj` is read by other means.
class IndexedMembers {
 public:
  // `patch_members`: how many members the caller will look up.
  IndexedMembers(JsonValue& obj, size_t patch_members, JsonAllocator& a);
  JsonValue* Find(std::string_view k);
  // As RemoveMember.
  void Remove(std::string_view k);
  // As SetMember: assigns (moves) `v` to member `k`, added last if absent.
  void Set(std::string_view k, JsonValue& v);
  // Drops the members Remove() marked, keeping the others' order.
  void Compact();

 private:
  JsonValue& obj_;
  JsonAllocator& a_;
  bool indexed_ = false;
  std::unordered_map<std::string, rapidjson::SizeType> at_;
  std::vector<bool> removed_;
};

// Members given twice in one object. RapidJSON keeps both; Go's
// encoding/json, decoding into a map, keeps the last, and Kubernetes decodes
// merge and strategic merge patches into map[string]interface{} (and a JSON
// patch operation into a map). These walk `v` recursively: run them on a
// deep stack (base/deep_stack.h) for documents nested past kInlineDepth.
//
// Whether some object in `v`, at any depth, has a member name twice.
bool HasDuplicateMembers(const JsonValue& v);
// Drops from every object in `v`, at any depth, each member whose name
// comes again later in the same object; the others keep their order.
void KeepLastMembers(JsonValue& v);

// The strict decoding findings of sigs.k8s.io/json's UnmarshalStrict, which
// kube-apiserver reports as warnings under fieldValidation=Warn and as one
// error under Strict: `unknown field "<path>"`, `duplicate field "<path>"`,
// the path quoted as Go's %q. In the order found, each once, at most 100.
class StrictFindings {
 public:
  // `path` as sigs.k8s.io/json writes it: "spec.containers[0].image".
  void Unknown(std::string_view path);
  void Duplicate(std::string_view path);
  // The duplicates in `v` decoded into interface{} at `path` ("" for a
  // whole body): every member repeated in one object, at any depth.
  void DuplicatesIn(const JsonValue& v, std::string_view path);
  // The texts, each after `prefix` (kube's "json patch " for a JSON patch).
  std::vector<std::string> Texts(std::string_view prefix = {}) const;

 private:
  void Add(std::string_view what, std::string_view path);
  void Walk(const JsonValue& v, std::string& path, bool nested);
  std::vector<std::string> texts_;
};

// The findings of a merge or strategic merge patch body, decoded into
// map[string]interface{}: its duplicate members, e.g. `duplicate field
// "data"` for {"data":{"a":"1"},"data":{"b":"2"}}.
std::vector<std::string> DuplicateFieldErrors(const JsonValue& body);

inline JsonValue MakeString(std::string_view s, JsonAllocator& alloc) {
  return JsonValue(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}
inline std::string_view StringOf(const JsonValue& v) {
  return std::string_view(v.GetString(), v.GetStringLength());
}

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_JSON_VALUE_H_
