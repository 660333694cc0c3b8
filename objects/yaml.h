// YAML to and from JSON, the way kubectl and kube-apiserver convert it
// (sigs.k8s.io/yaml over go-yaml v2), so a manifest means the same thing here
// as there.
//
// Input: each YAML document becomes a JSON DOM. Plain (unquoted) scalars are
// typed with go-yaml v2's YAML 1.1 rules: null/Null/NULL/~/empty are null;
// true/false/yes/no/on/off/y/n (in their three capitalisations) are booleans;
// decimal, 0x hex, 0o / leading-0 octal and 0b binary integers (underscores
// allowed) are numbers, and so are floats; a date "2024-01-02" becomes the
// time string "2024-01-02T00:00:00Z". Quoted scalars and !!str stay strings.
// A float with an integral value becomes an integer (Go writes 1.0 as 1).
// Map keys become strings (yes: -> "true", 1: -> "1"). Anchors, aliases and
// merge keys (<<) are expanded. Empty documents in a stream are skipped, as
// kubectl does. NaN and infinities are rejected (JSON cannot carry them).
//
// This is the project's one YAML reader, so its limits hold everywhere
// (docs/limits.md). Each document is measured before anything is expanded:
//   - an alias inside its own anchor is refused ("yaml: anchor 'a' value
//     contains itself", go-yaml's words) instead of recursing forever;
//   - go-yaml v3's "excessive aliasing" rule: aliases may produce at most
//     99% of a document's nodes, falling to 10% between 400,000 and
//     4,000,000 nodes (checked once past 100 alias nodes and 1,000 nodes);
//   - what aliases add to a stream is at most as many bytes as the input,
//     at least 1 MiB and at most 8 MiB ("yaml: document contains excessive
//     aliasing (aliases expand to more than N bytes)");
//   - the expanded document nests at most 10,000 levels ("yaml: exceeded
//     max depth of 10000"); yaml-cpp's parser itself stops at 500 levels of
//     the text.
// Nothing here recurses over the document, so no input reaches the stack.
//
// Output: block style with sorted keys, sequences not indented under their
// key, and strings quoted whenever a YAML 1.1 reader would otherwise retype
// them ("true", "1", "~", "") — the layout of `kubectl get -o yaml`.
//
// Thread-safety: all functions are reentrant. Errors: InvalidArgument with
// the parser's line and column.
#ifndef KPLANE_OBJECTS_YAML_H_
#define KPLANE_OBJECTS_YAML_H_

#include <google/protobuf/message.h>
#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

#include "objects/codec.h"
#include "base/statusor.h"

namespace kplane::objects {

// Every non-empty document of a YAML stream ("---"-separated).
StatusOr<std::vector<rapidjson::Document>> ParseYamlStream(
    std::string_view yaml);
// Exactly one document (a request body); an empty or multi-document input is
// an error.
StatusOr<rapidjson::Document> ParseYamlDocument(std::string_view yaml);

// A server-side apply body, which kubectl sends as JSON or YAML: JSON when
// the text starts with '{' or '[' and parses (within base/json.h's depth
// limit; a JSON text that is too deep is refused as such), else one YAML
// document.
StatusOr<rapidjson::Document> ParseJsonOrYaml(std::string_view text);

// One YAML document (no leading "---"), ending in a newline.
std::string JsonToYaml(const rapidjson::Value& value);

// YAML (one document) into a message, with the codec's rules and reports.
StatusOr<DecodeResult> DecodeYaml(std::string_view yaml,
                                  google::protobuf::Message* msg);
// A message as YAML.
std::string EncodeYaml(const google::protobuf::Message& msg,
                       const TypeMeta& type_meta = {});

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_YAML_H_
