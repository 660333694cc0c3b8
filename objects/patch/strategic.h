// Strategic merge patch (`application/strategic-merge-patch+json`), as
// Kubernetes' k8s.io/apimachinery/pkg/util/strategicpatch implements it, and
// the two- and three-way diffs `kubectl apply` computes client-side.
//
// Semantics (PatchMeta from the schema decides per field):
//  - objects merge recursively; a null value deletes the key;
//  - a list with strategy "merge" and a merge key merges element-wise by
//    that key; a "merge" list of scalars is a set union; other lists, and
//    maps with strategy "replace", are replaced whole;
//  - directives: {"$patch":"replace"} (replace this object / list),
//    {"$patch":"delete", <key>:v} (delete that element / this object),
//    "$setElementOrder/<list>": [...] (order of the merged list),
//    "$deleteFromPrimitiveList/<list>": [...] (remove scalars),
//    "$retainKeys": [...] (drop every other key of this object).
//
// Worked example (PodSpec.containers merges by "name"):
//   original {"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}
//   patch    {"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],
//             "containers":[{"name":"a","image":"z"}]}
//   result   {"containers":[{"name":"b","image":"y"},{"name":"a","image":"z"}]}
//
// Diffs: CreateTwoWayMergePatch(original, modified) is the patch that turns
// original into modified; CreateThreeWayMergePatch(original=last-applied,
// modified=new manifest, current=live) is kubectl apply's patch: additions
// and changes relative to the live object, deletions only of fields the user
// had applied before. Patches serialize with sorted keys (CanonicalJson), so
// they are byte-identical to kubectl's.
//
// Ownership: results are built in the caller's allocator; inputs are copied
// before they are modified. Thread-safety: stateless.
// Errors (Kubernetes' messages): InvalidArgument for malformed patches
// ("unknown patch type: ...", "map: ... does not contain declared merge key:
// name", "invalid patch format of setElementOrder list", ...); Conflict for a
// three-way conflict when overwrite is false; FailedPrecondition when a
// precondition rejects the computed patch.
#ifndef KPLANE_OBJECTS_PATCH_STRATEGIC_H_
#define KPLANE_OBJECTS_PATCH_STRATEGIC_H_

#include <string>
#include <string_view>
#include <vector>

#include "objects/patch/json_value.h"
#include "objects/patch/merge_patch.h"
#include "objects/patch/patch_meta.h"

namespace kplane::patch {

// Applies `patch` to `object` in place (StrategicMergeMapPatch). Both must be
// JSON objects (or null, read as {}). On error `object` is unchanged. Of two
// members of one name in an object of the patch, the last counts (the patch
// decodes as map[string]interface{}).
Status StrategicMergePatch(JsonValue& object, const JsonValue& patch,
                           const PatchSchema& schema, JsonAllocator& alloc);

// Text convenience: parses both, patches, returns compact JSON in member
// order. InvalidArgument("invalid JSON document") on unparsable input.
StatusOr<std::string> StrategicMergePatchJson(std::string_view original,
                                              std::string_view patch,
                                              const PatchSchema& schema);

// The patch from `original` to `modified` (CreateTwoWayMergePatch), written
// to *patch (an object, possibly empty).
Status CreateTwoWayMergePatch(
    const JsonValue& original, const JsonValue& modified,
    const PatchSchema& schema, JsonValue* patch, JsonAllocator& alloc,
    const std::vector<Precondition>& preconditions = {});

// kubectl apply's three-way patch (CreateThreeWayMergePatch). With
// overwrite=false a patch that conflicts with changes made from original to
// current returns Conflict. kubectl passes overwrite=true and the
// preconditions RequireKeyUnchanged("apiVersion"), RequireKeyUnchanged(
// "kind"), RequireMetadataKeyUnchanged("name").
Status CreateThreeWayMergePatch(
    const JsonValue& original, const JsonValue& modified,
    const JsonValue& current, const PatchSchema& schema, bool overwrite,
    JsonValue* patch, JsonAllocator& alloc,
    const std::vector<Precondition>& preconditions = {});

// Text convenience for the three-way patch; returns CanonicalJson(patch).
StatusOr<std::string> CreateThreeWayMergePatchJson(
    std::string_view original, std::string_view modified,
    std::string_view current, const PatchSchema& schema, bool overwrite,
    const std::vector<Precondition>& preconditions = {});

// Do two patches set some field to different values (MergingMapsHaveConflicts)?
StatusOr<bool> MergingMapsHaveConflicts(const JsonValue& left,
                                        const JsonValue& right,
                                        const PatchSchema& schema);

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_STRATEGIC_H_
