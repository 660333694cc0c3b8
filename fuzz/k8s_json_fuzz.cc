// Fuzzes the Kubernetes JSON codec (objects/codec.h) as the apiserver uses
// it on a request body: decode into the resource's type, report unknown and
// duplicate fields, encode the object for the answer.
//
// Input: a JSON body, decoded into each of a set of kinds that covers the
// codec's special cases (times, quantities, int-or-string, maps, bytes,
// RawExtension in List and WatchEvent, FieldsV1 in managedFields).
//
// Checked: no crash or sanitizer report; what the codec writes for a
// decoded object decodes again.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "objects/codec.h"
#include "objects/scheme.h"

namespace {

const kplane::objects::KindInfo* Kind(std::string_view api_version,
                                      std::string_view kind) {
  const auto* k =
      kplane::objects::Scheme::Default().FindKind(api_version, kind);
  if (k == nullptr) kplane::fuzz::Fail("kind missing from the scheme");
  return k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kplane::objects::KindInfo* const kKinds[] = {
      Kind("v1", "Pod"),           Kind("apps/v1", "Deployment"),
      Kind("v1", "ConfigMap"),     Kind("v1", "Secret"),
      Kind("v1", "Node"),          Kind("coordination.k8s.io/v1", "Lease"),
      Kind("v1", "List"),          Kind("v1", "WatchEvent"),
      Kind("v1", "DeleteOptions"), Kind("v1", "Status"),
      Kind("v1", "Service"),       Kind("v1", "Event"),
  };
  std::string_view json(reinterpret_cast<const char*>(data), size);
  for (const kplane::objects::KindInfo* kind : kKinds) {
    std::unique_ptr<google::protobuf::Message> msg = kind->New();
    auto r = kplane::objects::DecodeJson(json, msg.get());
    if (!r.ok()) continue;
    (void)r->Warnings();
    (void)r->StrictErrorMessage();
    std::string out = kplane::objects::EncodeJson(*msg, kind->type_meta());
    std::unique_ptr<google::protobuf::Message> again = kind->New();
    auto r2 = kplane::objects::DecodeJson(out, again.get());
    if (!r2.ok()) {
      std::fprintf(stderr, "%s: %s\n", kind->kind.c_str(),
                   r2.status().ToString().c_str());
      kplane::fuzz::Fail("the codec's own output does not decode");
    }
  }
  return 0;
}
