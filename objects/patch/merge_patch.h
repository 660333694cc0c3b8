// JSON merge patch (RFC 7386, `application/merge-patch+json`) and the patch
// builders kubectl uses for types without strategic-merge metadata (CRDs):
// two-way CreateMergePatch and CreateThreeWayJsonMergePatch.
//
//   target {"a":1,"b":{"c":2,"d":3}} + patch {"b":{"c":null,"e":4},"f":[1]}
//   -> {"a":1,"b":{"d":3,"e":4},"f":[1]}
//
// Ownership: results are built in the caller's allocator. Thread-safety:
// stateless. Errors: Conflict for a three-way conflict, FailedPrecondition
// when a precondition rejects the patch (Kubernetes' ErrPreconditionFailed).
#ifndef KPLANE_OBJECTS_PATCH_MERGE_PATCH_H_
#define KPLANE_OBJECTS_PATCH_MERGE_PATCH_H_

#include <functional>
#include <string_view>
#include <vector>

#include "objects/patch/json_value.h"

namespace kplane::patch {

// Applies `patch` to `target` in place (RFC 7386 MergePatch). A non-object
// patch replaces the target; a non-object target becomes {} first. Of two
// members of one name in an object of the patch, the last counts (Go's
// map decoding, as Kubernetes reads the patch).
void ApplyMergePatch(JsonValue& target, const JsonValue& patch,
                     JsonAllocator& alloc);

// The merge patch that turns `original` into `modified`: changed or added
// keys carry the new value (objects recursively), removed keys carry null,
// arrays are replaced whole when they differ. Both must be objects.
JsonValue CreateMergePatch(const JsonValue& original, const JsonValue& modified,
                           JsonAllocator& alloc);

// A check on a computed patch (mergepatch.PreconditionFunc).
using Precondition = std::function<bool(const JsonValue& patch)>;
// The patch may not contain top-level `key` (e.g. "apiVersion", "kind").
Precondition RequireKeyUnchanged(std::string key);
// The patch may not contain metadata.<key> (e.g. "name").
Precondition RequireMetadataKeyUnchanged(std::string key);

// kubectl's three-way JSON merge patch (k8s.io/apimachinery/pkg/util/
// jsonmergepatch.CreateThreeWayJSONMergePatch): additions and changes are
// computed against `current`, deletions against `original` (last applied);
// a key deleted by the user and changed since in `current` is a conflict.
StatusOr<std::string> CreateThreeWayJsonMergePatch(
    const JsonValue& original, const JsonValue& modified,
    const JsonValue& current,
    const std::vector<Precondition>& preconditions = {});

// mergepatch.HasConflicts: do two patches set some common path differently?
bool JsonPatchesHaveConflicts(const JsonValue& left, const JsonValue& right);

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_MERGE_PATCH_H_
