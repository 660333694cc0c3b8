// JSON patch (RFC 6902, `application/json-patch+json`) with JSON pointers
// (RFC 6901: "/a~1b/0" addresses key "a/b", then element 0; "~0" is "~").
//
//   doc   {"spec":{"ports":[80]}}
//   patch [{"op":"add","path":"/spec/ports/-","value":443},
//          {"op":"test","path":"/spec/ports/0","value":80}]
//   ->    {"spec":{"ports":[80,443]}}
//
// Operations apply in order to a working copy; on the first failure nothing
// is written back (the document is unchanged), as the RFC requires.
// Ownership: the caller's allocator. Thread-safety: stateless.
// Errors: InvalidArgument for a malformed patch document (apiserver: 400);
// FailedPrecondition when an operation does not apply to the document — a
// missing path, a failed test (apiserver: 422 Unprocessable Entity).
//
// Limits (PatchLimits, checked as each operation applies, so a patch that
// copies a value into itself fails before memory grows): more than
// max_operations operations is TooLarge "The allowed maximum operations in a
// JSON patch is 10000, got N" (Kubernetes: 413); copies adding more than
// max_bytes in total is FailedPrecondition "unable to copy, the accumulated
// size increase of copy is N, exceeding the limit M" (evanphx/json-patch's
// words; Kubernetes: 422); a document growing past max_bytes is TooLarge; a
// value placed deeper than max_depth is InvalidArgument "exceeded max depth
// of 10000".
#ifndef KPLANE_OBJECTS_PATCH_JSON_PATCH_H_
#define KPLANE_OBJECTS_PATCH_JSON_PATCH_H_

#include <string>
#include <string_view>
#include <vector>

#include "objects/patch/json_value.h"

namespace kplane::patch {

// Splits a JSON pointer into unescaped reference tokens. "" -> {} (the whole
// document). InvalidArgument when it does not start with '/' or has a bad
// escape.
StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// Escapes one reference token ("a/b" -> "a~1b").
std::string EscapeJsonPointerToken(std::string_view token);

// Applies the operations of `patch` (a JSON array) to `doc`. An operation
// decodes as evanphx/json-patch's map[string]*json.RawMessage: of "op",
// "path", "from" or "value" given twice, the last counts.
Status ApplyJsonPatch(JsonValue& doc, const JsonValue& patch,
                      JsonAllocator& alloc, const PatchLimits& limits = {});

// What kube-apiserver's strict decoding of a JSON patch into its
// []jsonPatchOp{op, path, from, value} finds (the patch is applied all the
// same): `json patch unknown field "[0].foo"` for a member of no such name,
// `json patch duplicate field "[1].path"` for one given twice, and
// `json patch duplicate field "[2].value.k"` for a member repeated inside a
// value. In the order found, each once, at most 100. Walks values
// recursively (see KeepLastMembers).
std::vector<std::string> JsonPatchStrictErrors(const JsonValue& patch);

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_JSON_PATCH_H_
