// Strategic-merge-patch metadata: which lists merge (and by which key), which
// maps are replaced whole, which objects retain only their patched keys.
//
// Kubernetes keeps this in Go struct tags (`patchStrategy:"merge"
// patchMergeKey:"name"`). We keep it in a PatchMetaTable keyed by protobuf
// message full name + JSON field name, and walk JSON documents alongside the
// protobuf Descriptor of their type (field name == JSON name, map fields are
// JSON objects, message fields recurse):
//
//   table {"k8s.io.api.core.v1.PodSpec","containers"} -> merge, key "name"
//   PatchSchema(Pod descriptor)
//     .Field("spec")               -> {no meta, schema(PodSpec)}
//     .Field("containers")         -> {merge/"name", schema(Container)}
//     .Field("env")                -> {merge/"name", schema(EnvVar)}
//
// Go's embedded structs appear inline in JSON but as a message field in the
// proto (core/v1 Volume.volumeSource, EphemeralContainer.
// ephemeralContainerCommon); the table lists them as inline fields and the
// walker looks through them when a name is not a direct field.
//
// Unknown names yield an empty schema: no metadata below that point, so lists
// there are replaced and maps merged (upstream errors instead; being lenient
// keeps unknown/extension fields patchable).
//
// Ownership: a PatchSchema is a small value holding raw pointers to a
// Descriptor (owned by the protobuf pool, immortal) and a PatchMetaTable that
// must outlive it. Thread-safety: tables are immutable after construction and
// safe to share; KubernetesPatchMetaTable() is a process-wide constant.
#ifndef KPLANE_OBJECTS_PATCH_PATCH_META_H_
#define KPLANE_OBJECTS_PATCH_PATCH_META_H_

#include <google/protobuf/descriptor.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kplane::patch {

// The patch strategy of one field, as in the Go tags.
struct PatchMeta {
  // Any of "merge", "replace", "retainKeys" (at most one besides retainKeys).
  std::vector<std::string> strategies;
  std::string merge_key;  // for lists of objects with strategy merge
  // Server-side apply's keys of the list (x-kubernetes-list-map-keys), when
  // upstream's OpenAPI has more than merge_key (+listMapKey tags): all of
  // them, in the OpenAPI's order, e.g. {"port", "protocol"}. Empty: the
  // list's only key is merge_key. Strategic merge patch keeps merge_key.
  std::vector<std::string> list_map_keys;
  // OpenAPI defaults (+default) of key fields, string values only:
  // {"protocol", "TCP"}. Apply keys an element omitting such a field by
  // its default, as structured-merge-diff does.
  std::vector<std::pair<std::string, std::string>> key_defaults;

  // The keys of server-side apply: list_map_keys, else merge_key alone
  // (none when there is no merge_key).
  std::vector<std::string> MapKeys() const;
  bool Has(std::string_view s) const;
  bool IsMerge() const { return Has("merge"); }
  bool IsReplace() const { return Has("replace"); }
  bool RetainKeys() const { return Has("retainKeys"); }
  bool empty() const { return strategies.empty() && merge_key.empty(); }
};

// Patch metadata keyed by (message full name, JSON field name), plus the set
// of inline (Go-embedded) fields.
class PatchMetaTable {
 public:
  // `strategy` is the Go tag text: "merge", "merge,retainKeys", "replace".
  PatchMetaTable& Add(std::string message, std::string field,
                      std::string_view strategy, std::string merge_key = "");
  PatchMetaTable& AddInline(std::string message, std::string field);
  // Sets list_map_keys and key_defaults of a field Add()ed before.
  PatchMetaTable& AddListMapKeys(
      std::string_view message, std::string_view field,
      std::vector<std::string> keys,
      std::vector<std::pair<std::string, std::string>> key_defaults = {});

  // Null when the field has no metadata.
  const PatchMeta* Find(std::string_view message, std::string_view field) const;
  bool IsInline(std::string_view message, std::string_view field) const;
  // Inline fields of `message`, in insertion order.
  std::vector<std::string> InlineFields(std::string_view message) const;

 private:
  std::map<std::pair<std::string, std::string>, PatchMeta, std::less<>> meta_;
  std::vector<std::pair<std::string, std::string>> inline_;
};

// The table for Kubernetes' built-in types (core/v1, apps/v1, batch/v1,
// policy/v1, networking/v1, meta/v1), generated from the patchStrategy/
// patchMergeKey tags of kubernetes/api and apimachinery (see README.md),
// with the +listMapKey lists that have more keys than the patchMergeKey
// (Service and container ports, topology spread constraints, volume health
// conditions).
const PatchMetaTable& KubernetesPatchMetaTable();

// A position in a document's type: the metadata lookups for the members of
// one JSON object. Default-constructed = schemaless.
class PatchSchema {
 public:
  struct Field;

  PatchSchema() = default;
  PatchSchema(const google::protobuf::Descriptor* message,
              const PatchMetaTable* table)
      : message_(message), table_(table) {}

  // Metadata and element/value schema of member `name`. For a list the
  // schema describes its elements; for a protobuf map field it describes
  // the map (whose every key leads to the value type).
  Field Lookup(std::string_view name) const;

  // This schema with every list that has several list_map_keys merged by
  // the member kListMapKeyMember instead of its merge_key (in its own and
  // every nested schema): server-side apply puts each element's key there
  // so that strategic merge matches elements by all their keys.
  PatchSchema MergingByListMapKeys() const {
    PatchSchema s = *this;
    s.by_list_map_keys_ = true;
    return s;
  }

  // Upstream's schema.Name(), for error messages.
  std::string Name() const;
  bool known() const { return message_ != nullptr; }
  const google::protobuf::Descriptor* message() const { return message_; }

 private:
  const google::protobuf::Descriptor* message_ = nullptr;
  const PatchMetaTable* table_ = nullptr;
  // Set for a protobuf map<string, Message>: every key has schema of message_.
  bool map_of_messages_ = false;
  bool by_list_map_keys_ = false;  // MergingByListMapKeys()

  Field LookupField(std::string_view name) const;
};

// The member MergingByListMapKeys() merges lists with several keys by. Its
// '$' keeps it apart from data: apply escapes the data's names beginning
// with '$' ("$x" is "$$x" during the merge).
inline constexpr std::string_view kListMapKeyMember = "$kplaneListMapKey";

struct PatchSchema::Field {
  PatchMeta meta;
  PatchSchema schema;
};

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_PATCH_META_H_
