// Fuzzes PATCH as the apiserver runs it (apiserver/patching.h ApplyPatch,
// over objects/patch): the body as a JSON patch, a JSON merge patch and a
// strategic merge patch, each applied to a stored Pod and Deployment
// (fuzz/live_objects.h), then decoded into the typed object.
//
// Limits: the production ones (10,000 operations, depth 10,000), except
// the patched-size limit, 256 KiB instead of 3 MiB, so growth hits it
// sooner and each run stays cheap.
//
// Checked: no crash or sanitizer report; every refusal is a 4xx, never a
// 500.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "apiserver/patching.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/live_objects.h"
#include "objects/codec.h"

using kplane::apiserver::ApiError;
using kplane::apiserver::PatchType;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kplane::fuzz::Live* live = kplane::fuzz::LiveObjects();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  kplane::patch::PatchLimits limits;
  limits.max_bytes = 256 << 10;
  for (int i = 0; i < 2; ++i) {
    for (PatchType type : {PatchType::kJsonPatch, PatchType::kMergePatch,
                           PatchType::kStrategicMergePatch}) {
      std::vector<std::string> warnings;
      auto r = kplane::apiserver::ApplyPatch(
          *live[i].obj, *live[i].kind, type, body,
          kplane::apiserver::FieldValidation::kWarn, &warnings, limits);
      if (const ApiError* e = std::get_if<ApiError>(&r)) {
        if (e->code < 400 || e->code >= 500) {
          std::fprintf(stderr, "%d %s: %s\n", e->code, e->reason.c_str(),
                       e->message.c_str());
          kplane::fuzz::Fail("a bad patch was not answered with a 4xx");
        }
        continue;
      }
      (void)kplane::objects::EncodeJson(
          *std::get<kplane::apiserver::MutableMessage>(r));
    }
  }
  return 0;
}
