// Fuzzes the Kubernetes protobuf codec (objects/envelope.h,
// objects/serializer.h) as the apiserver reads an
// application/vnd.kubernetes.protobuf body: the "k8s\0" envelope, then the
// object's bytes into the kind the envelope names (a Pod when it names
// none we know), unknown fields dropped; then the object written as JSON
// (raw RawExtension / FieldsV1 bytes from protobuf are copied into JSON).
//
// Checked: no crash or sanitizer report; the JSON written for a decoded
// object decodes again.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/scheme.h"
#include "objects/serializer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& scheme = kplane::objects::Scheme::Default();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto env = kplane::objects::DecodeEnvelope(body);
  const kplane::objects::KindInfo* kind = nullptr;
  if (env.ok()) {
    kind = scheme.FindKind(env->type_meta.api_version, env->type_meta.kind);
  }
  if (kind == nullptr) kind = scheme.FindKind("v1", "Pod");
  std::unique_ptr<google::protobuf::Message> msg = kind->New();
  auto r = kplane::objects::DecodeBody(kplane::objects::MediaType::kProtobuf,
                                       body, msg.get());
  if (!r.ok()) return 0;
  std::string json = kplane::objects::EncodeJson(*msg, kind->type_meta());
  std::unique_ptr<google::protobuf::Message> again = kind->New();
  auto r2 = kplane::objects::DecodeJson(json, again.get());
  // Invalid UTF-8 in protobuf string fields goes out as U+FFFD, so this
  // holds for every body.
  if (!r2.ok()) {
    std::fprintf(stderr, "%s\n", r2.status().ToString().c_str());
    kplane::fuzz::Fail("JSON written for a protobuf body does not decode");
  }
  (void)kplane::objects::EncodeBody(kplane::objects::MediaType::kProtobuf, *msg,
                                    kind->type_meta());
  return 0;
}
