// The pieces of server-side apply (`application/apply-patch+yaml`) and of
// managedFields bookkeeping: field sets in the fieldsV1 format, computed from
// JSON objects, and an apply that strategic-merges the applied configuration
// into the live object while tracking which manager owns which field.
//
// fieldsV1 (a trie of path elements; "." marks the node itself as owned):
//   {"f:metadata":{"f:labels":{"f:app":{}}},
//    "f:spec":{"f:replicas":{},
//              "f:template":{"f:spec":{"f:containers":{
//                  "k:{\"name\":\"nginx\"}":{".":{},"f:image":{},
//                                             "f:name":{}}}}}}}
//   f:<name>   a field or map key      k:<json>  a list element by merge key
//   v:<json>   an element of a set     i:<n>     (parsed, never produced)
// Lists with a merge key are associative (one k: per element), merge lists of
// scalars are sets (v:), every other list is atomic (a leaf), as
// structured-merge-diff treats them. An associative list's keys are its
// PatchMeta::MapKeys(): the patchMergeKey, or all of upstream's
// x-kubernetes-list-map-keys where there are more (k:{"port":53,
// "protocol":"TCP"}, members sorted by name; an omitted key with a default
// is keyed by it), and the merge matches elements by all of them.
//
// Simplifications compared with Kubernetes (documented in README.md):
// the merge is a strategic merge of the applied object, not a typed
// structured merge; no per-version conversion of managed fields.
//
// Ownership: functions fill caller-provided outputs; JSON values live in the
// caller's allocator. Thread-safety: stateless. Errors: Conflict (HTTP 409,
// reason Conflict) when an apply would change fields another manager owns;
// the per-field causes (type FieldManagerConflict) are returned alongside;
// InvalidArgument for malformed managedFields or applied objects.
#ifndef KPLANE_OBJECTS_PATCH_APPLY_H_
#define KPLANE_OBJECTS_PATCH_APPLY_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "objects/patch/json_value.h"
#include "objects/patch/patch_meta.h"

namespace kplane::patch {

// A set of field paths, stored as the fieldsV1 trie.
struct FieldSet {
  bool member = false;  // this node's path itself is in the set
  std::map<std::string, FieldSet> children;

  bool Empty() const;
  FieldSet Union(const FieldSet& other) const;
  FieldSet Difference(const FieldSet& other) const;
  FieldSet Intersection(const FieldSet& other) const;
  // Every member path, depth first, as lists of path elements.
  std::vector<std::vector<std::string>> Paths() const;
  bool Has(const std::vector<std::string>& path) const;
  void Insert(const std::vector<std::string>& path);

  // fieldsV1 JSON (object keys sorted).
  JsonValue ToJson(JsonAllocator& alloc) const;
  std::string ToJsonString() const;
  static StatusOr<FieldSet> FromJson(const JsonValue& v);
  // Whether `key` is a fieldsV1 path element FromJson takes as a child
  // ("f:name", "k:{…}", "v:…", "i:3"; "." is the set's own membership).
  static bool IsPathElement(std::string_view key);

  friend bool operator==(const FieldSet& a, const FieldSet& b) {
    return a.member == b.member && a.children == b.children;
  }
};

// ".spec.containers[name=\"nginx\"].image", as Kubernetes prints a path in
// conflict messages.
std::string PathString(const std::vector<std::string>& path);

// The fields set in `obj` (a JSON object), walking `schema` for list types.
// Paths matching `ignored` (e.g. {{"f:status"}}) are left out, and so are the
// fields Kubernetes never tracks: apiVersion, kind, metadata.name/namespace/
// uid/resourceVersion/generation/creationTimestamp/managedFields/selfLink/
// deletionTimestamp/deletionGracePeriodSeconds.
FieldSet ComputeFieldSet(
    const JsonValue& obj, const PatchSchema& schema,
    const std::vector<std::vector<std::string>>& ignored = {});

// Leaf paths Kubernetes never records in managedFields (fieldmanager's
// strip set for every resource): apiVersion, kind and the metadata fields
// ComputeFieldSet leaves out.
const std::vector<std::vector<std::string>>& AlwaysIgnored();

// The value at `path` in `obj`; null when absent.
const JsonValue* ResolveFieldPath(const JsonValue& obj,
                                  const std::vector<std::string>& path);
// Removes the value at `path` from `obj`; false when absent.
bool RemoveFieldPath(JsonValue& obj, const std::vector<std::string>& path);

// One metadata.managedFields entry.
struct ManagedFieldsEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string time;  // RFC 3339, set by the caller's clock
  std::string subresource;
  FieldSet fields;
};

// Reads metadata.managedFields of `obj` (absent -> empty).
StatusOr<std::vector<ManagedFieldsEntry>> ReadManagedFields(
    const JsonValue& obj);
// Replaces metadata.managedFields of `obj` (removes it when `entries` is
// empty). Creates metadata when missing.
void WriteManagedFields(JsonValue& obj,
                        const std::vector<ManagedFieldsEntry>& entries,
                        JsonAllocator& alloc);

struct ApplyOptions {
  std::string manager;      // fieldManager query parameter (required)
  std::string api_version;  // e.g. "apps/v1", recorded in the entry
  std::string time;         // RFC 3339 timestamp for the entry
  bool force = false;       // force=true: take conflicting fields
  PatchSchema schema;       // the object's type
  // Extra paths not tracked, e.g. {{"f:status"}} for a main resource.
  std::vector<std::vector<std::string>> ignored;
  // The subresource written through ("status", "scale"; "" for the main
  // resource). Part of the writer's identity, as in kube's manager
  // identifier: its entry is (manager, operation, subresource), apart from
  // the same manager's entries through other subresources, which it never
  // prunes from nor updates.
  std::string subresource;
};

// A field another manager owns and the apply would change.
struct FieldConflict {
  std::string manager;  // printed: "\"kubectl-edit\" using apps/v1"
  std::string field;    // ".spec.replicas"
};

// Server-side apply. `live` is the stored object or null when it does not
// exist (then the result is `applied` with managedFields). On success
// *result holds the new object with updated metadata.managedFields. On
// Conflict, *conflicts lists the causes and the message is Kubernetes':
//   Apply failed with 1 conflict: conflict with "x" using v1: .spec.replicas
//
// Moving from client-side apply, as kube's lastAppliedManager and
// lastAppliedUpdater, for `opts.manager` "kubectl" only (any other name,
// e.g. "other", keeps every conflict and every annotation):
//   - unforced, a conflict (with any manager) on a field of the live
//     object's non-empty kubectl.kubernetes.io/last-applied-configuration
//     annotation whose live value is still the applied one (a leaf equal,
//     a list element or map present) is allowed, when the annotation is a
//     JSON object whose apiVersion is `opts.api_version`. All conflicts
//     allowed: the apply proceeds as if forced. Otherwise Conflict with
//     only the conflicts not allowed.
//   - on success, if *result has that annotation (non-empty), it becomes
//     the applied configuration without it (managedFields dropped; its
//     annotations object kept, even empty), as Go's json.Encoder writes it:
//     sorted keys, <, >, &, U+2028/9 escaped, final newline. The
//     annotation's owner in managedFields does not change.
Status ServerSideApply(const JsonValue* live, const JsonValue& applied,
                       const ApplyOptions& opts, JsonValue* result,
                       JsonAllocator& alloc,
                       std::vector<FieldConflict>* conflicts);

// managedFields bookkeeping for a non-apply write (create, update, patch):
// fields of `updated` that differ from `old` (null for a create) become owned
// by `opts.manager` with operation "Update" and are taken from other
// managers; fields that disappeared are dropped from every manager. Writes
// the entries into `updated`. Conflicts never occur.
Status UpdateManagedFields(const JsonValue* old, JsonValue& updated,
                           const ApplyOptions& opts, JsonAllocator& alloc);

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_APPLY_H_
