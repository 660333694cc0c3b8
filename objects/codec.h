// The descriptor-driven JSON codec for Kubernetes objects: any message from
// schemas/k8s/ to and from JSON (and YAML, through objects/yaml.h) following
// Kubernetes' JSON conventions, with no per-type code.
//
// Rules (details and deviations in objects/README.md):
//  - Member names are the proto field names (upstream uses the JSON names).
//  - int32/int64 are JSON numbers; bytes are standard base64; maps are JSON
//    objects written with sorted keys.
//  - Special messages: meta.v1.Time ("2026-11-29T08:37:42Z", null when zero),
//    MicroTime ("...42.123456Z"), meta.v1.Duration ("1m30s"), IntOrString
//    (number or string), Quantity (string; a number is accepted on input),
//    RawExtension and FieldsV1 (raw embedded JSON).
//  - Which fields are written follows Go's encoding/json on the upstream Go
//    types, recorded per field in schemas/k8s/options.proto: omitempty value
//    fields are written when non-zero, pointer fields whenever set, other
//    fields always (so `"items": []`, `"containers": []`, `"status": {}`).
//  - Output is compact, one line (watch events are newline-framed).
//  - Decoding: JSON null clears a field. Unknown members and duplicate
//    members are not errors: they are reported with their JSON paths
//    ("spec.foo", "spec.containers[0].bar") and the caller decides (the
//    apiserver warns, or rejects under fieldValidation=Strict). A value of
//    the wrong type is an error naming the path:
//    `spec.replicas: expected integer, got string`.
//  - "kind" and "apiVersion" are accepted on objects whose Go type embeds
//    TypeMeta; at the top level they are returned in DecodeResult. Encoding
//    writes them only when the caller passes a TypeMeta (list items omit
//    them, as kube-apiserver does).
//
// Performance: per-descriptor field tables are built once and cached; the
// decoder is a streaming (SAX) parser straight into the message.
//
// Thread-safety: all functions are safe to call concurrently (the table
// cache is internally synchronised). Errors: InvalidArgument for malformed
// JSON or type mismatches; the target message is then partially filled and
// should be discarded.
#ifndef KPLANE_OBJECTS_CODEC_H_
#define KPLANE_OBJECTS_CODEC_H_

#include <google/protobuf/message.h>
#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/statusor.h"

namespace kplane::objects {

// apiVersion and kind of a top-level object ("apps/v1", "Deployment").
struct TypeMeta {
  std::string api_version;
  std::string kind;
  bool empty() const { return api_version.empty() && kind.empty(); }
  friend bool operator==(const TypeMeta&, const TypeMeta&) = default;
};

struct DecodeResult {
  // The top-level "apiVersion" and "kind" members, if present.
  TypeMeta type_meta;
  // JSON paths of members the schema does not know, and of members that
  // appeared twice in one object (the last value wins, as in Go). Each list
  // is deduplicated and capped at 100 entries, as Kubernetes does.
  std::vector<std::string> unknown_fields;
  std::vector<std::string> duplicate_fields;

  bool strict_ok() const {
    return unknown_fields.empty() && duplicate_fields.empty();
  }
  // kube-apiserver's texts, one per field: `unknown field "spec.foo"`,
  // `duplicate field "metadata.name"` (used in Warning headers); the path
  // is quoted as Go's %q does, so control characters appear escaped.
  std::vector<std::string> Warnings() const;
  // The 400 message under fieldValidation=Strict: `strict decoding error:
  // unknown field "spec.foo", duplicate field "x"`.
  std::string StrictErrorMessage() const;
};

// Decodes a JSON document into `msg` (cleared first).
StatusOr<DecodeResult> DecodeJson(std::string_view json,
                                  google::protobuf::Message* msg);
// Decodes an already-parsed JSON value (e.g. one document of a YAML stream,
// or an item of a "kind: List"). Doubles with an integral value are accepted
// for integer fields here, because YAML's 1.0 reaches JSON as 1 in Go.
StatusOr<DecodeResult> DecodeJsonValue(const rapidjson::Value& value,
                                       google::protobuf::Message* msg);

// Encodes `msg` as one line of JSON. With a non-empty `type_meta`, "kind" and
// "apiVersion" are written first.
std::string EncodeJson(const google::protobuf::Message& msg,
                       const TypeMeta& type_meta = {});
// The same, into a caller's writer, so an object can be embedded in a list,
// Table or watch event being written without re-parsing.
void WriteJson(const google::protobuf::Message& msg,
               rapidjson::Writer<rapidjson::StringBuffer>* writer,
               const TypeMeta& type_meta = {});
void WriteJson(const google::protobuf::Message& msg,
               rapidjson::PrettyWriter<rapidjson::StringBuffer>* writer,
               const TypeMeta& type_meta = {});
// The same, as a DOM value allocated from `allocator`.
rapidjson::Value ToJsonValue(const google::protobuf::Message& msg,
                             rapidjson::MemoryPoolAllocator<>& allocator,
                             const TypeMeta& type_meta = {});

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_CODEC_H_
