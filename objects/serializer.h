// Request and response bodies in the three media types kube-apiserver
// speaks: application/json, application/yaml and
// application/vnd.kubernetes.protobuf (kubectl >= 1.32 POSTs protobuf for
// `kubectl create configmap|secret|namespace|deployment`).
//
// Content negotiation (Accept lists, ";as=Table" and friends) belongs to the
// apiserver; this layer only maps one media type to the right codec.
//
// Thread-safety: pure functions. Errors: ParseMediaType returns
// InvalidArgument for anything else (the apiserver answers 415); decoding
// errors are as in objects/codec.h and objects/envelope.h.
#ifndef KPLANE_OBJECTS_SERIALIZER_H_
#define KPLANE_OBJECTS_SERIALIZER_H_

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "objects/codec.h"
#include "base/statusor.h"

namespace kplane::objects {

enum class MediaType { kJson, kYaml, kProtobuf };

inline constexpr std::string_view kJsonMediaType = "application/json";
inline constexpr std::string_view kYamlMediaType = "application/yaml";
inline constexpr std::string_view kProtobufMediaType =
    "application/vnd.kubernetes.protobuf";

// "application/json; charset=utf-8" -> kJson. Parameters are ignored, the
// type is case-insensitive; an empty Content-Type means JSON.
StatusOr<MediaType> ParseMediaType(std::string_view content_type);
std::string_view MediaTypeName(MediaType type);

// Decodes a body into `obj`. For protobuf the returned type_meta comes from
// the envelope; unknown/duplicate fields are reported only for JSON and YAML
// (protobuf drops unknown fields silently, as Kubernetes does).
StatusOr<DecodeResult> DecodeBody(MediaType type, std::string_view body,
                                  google::protobuf::Message* obj);
// Encodes `obj` for a response.
std::string EncodeBody(MediaType type, const google::protobuf::Message& obj,
                       const TypeMeta& type_meta);

}  // namespace kplane::objects

#endif  // KPLANE_OBJECTS_SERIALIZER_H_
