#include "objects/envelope.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "objects/types.h"

namespace kplane::objects {

bool HasEnvelopeMagic(std::string_view data) {
  return data.substr(0, kEnvelopeMagic.size()) == kEnvelopeMagic;
}

std::string SerializeDeterministic(const google::protobuf::Message& msg) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    msg.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string EncodeEnvelope(const google::protobuf::Message& obj,
                           const TypeMeta& type_meta) {
  runtimepb::Unknown unknown;
  unknown.mutable_typemeta()->set_apiversion(type_meta.api_version);
  unknown.mutable_typemeta()->set_kind(type_meta.kind);
  unknown.set_raw(SerializeDeterministic(obj));
  unknown.set_contentencoding("");
  unknown.set_contenttype("");
  std::string out(kEnvelopeMagic);
  unknown.AppendToString(&out);
  return out;
}

StatusOr<Envelope> DecodeEnvelope(std::string_view data) {
  if (!HasEnvelopeMagic(data)) {
    return Status(StatusCode::kCorruption,
                  "protobuf object lacks the \"k8s\\x00\" prefix");
  }
  data.remove_prefix(kEnvelopeMagic.size());
  runtimepb::Unknown unknown;
  if (!unknown.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return Status(StatusCode::kCorruption, "malformed protobuf envelope");
  }
  Envelope env;
  env.type_meta.api_version = unknown.typemeta().apiversion();
  env.type_meta.kind = unknown.typemeta().kind();
  env.raw = std::move(*unknown.mutable_raw());
  env.content_encoding = unknown.contentencoding();
  env.content_type = unknown.contenttype();
  return env;
}

StatusOr<TypeMeta> DecodeEnvelopeInto(std::string_view data,
                                      google::protobuf::Message* obj,
                                      bool discard_unknown) {
  ASSIGN_OR_RETURN(Envelope env, DecodeEnvelope(data));
  if (!env.content_encoding.empty() ||
      (!env.content_type.empty() &&
       env.content_type != "application/vnd.kubernetes.protobuf")) {
    return InvalidArgumentError("unsupported envelope content \"" +
                                env.content_type + "\" encoding \"" +
                                env.content_encoding + "\"");
  }
  obj->Clear();
  if (!obj->ParseFromString(env.raw)) {
    return Status(StatusCode::kCorruption,
                  "malformed protobuf " + obj->GetDescriptor()->full_name());
  }
  if (discard_unknown) obj->DiscardUnknownFields();
  return env.type_meta;
}

}  // namespace kplane::objects
