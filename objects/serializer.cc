#include "objects/serializer.h"

#include "objects/envelope.h"
#include "objects/yaml.h"
#include "base/strings.h"

namespace kplane::objects {

StatusOr<MediaType> ParseMediaType(std::string_view content_type) {
  std::string type =
      ToLower(StripWhitespace(content_type.substr(0, content_type.find(';'))));
  if (type.empty() || type == kJsonMediaType) return MediaType::kJson;
  if (type == kYamlMediaType) return MediaType::kYaml;
  if (type == kProtobufMediaType) return MediaType::kProtobuf;
  return InvalidArgumentError("unsupported media type \"" + type + "\"");
}

std::string_view MediaTypeName(MediaType type) {
  switch (type) {
    case MediaType::kJson:
      return kJsonMediaType;
    case MediaType::kYaml:
      return kYamlMediaType;
    case MediaType::kProtobuf:
      return kProtobufMediaType;
  }
  return kJsonMediaType;
}

StatusOr<DecodeResult> DecodeBody(MediaType type, std::string_view body,
                                  google::protobuf::Message* obj) {
  switch (type) {
    case MediaType::kJson:
      return DecodeJson(body, obj);
    case MediaType::kYaml:
      return DecodeYaml(body, obj);
    case MediaType::kProtobuf: {
      ASSIGN_OR_RETURN(TypeMeta tm, DecodeEnvelopeInto(body, obj));
      DecodeResult result;
      result.type_meta = std::move(tm);
      return result;
    }
  }
  return InvalidArgumentError("unknown media type");
}

std::string EncodeBody(MediaType type, const google::protobuf::Message& obj,
                       const TypeMeta& type_meta) {
  switch (type) {
    case MediaType::kJson:
      return EncodeJson(obj, type_meta);
    case MediaType::kYaml:
      return EncodeYaml(obj, type_meta);
    case MediaType::kProtobuf:
      return EncodeEnvelope(obj, type_meta);
  }
  return EncodeJson(obj, type_meta);
}

}  // namespace kplane::objects
