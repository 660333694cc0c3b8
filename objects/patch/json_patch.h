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

// Applies the operations of `patch` (a JSON array) to `doc`.
Status ApplyJsonPatch(JsonValue& doc, const JsonValue& patch,
                      JsonAllocator& alloc);

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_JSON_PATCH_H_
