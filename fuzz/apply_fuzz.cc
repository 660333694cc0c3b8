// Fuzzes server-side apply as the apiserver runs it
// (apiserver/patching.h ServerSideApplyObject): the body (YAML or JSON,
// through the one YAML reader) applied by manager "fuzz" to nothing (a
// create) and to the stored object of its kind (fuzz/live_objects.h; a
// Pod or a Deployment, chosen by the body's kind), without and with force,
// then decoded into the typed object.
//
// Limits: production, except the applied-size limit, 256 KiB.
//
// Checked: no crash or sanitizer report; every refusal is a 4xx.
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kplane::fuzz::Live* live = kplane::fuzz::LiveObjects();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  // The Deployment when the body names apps/v1, else the Pod: a cheap
  // guess that lets the fuzzer reach both without parsing twice.
  const kplane::fuzz::Live& target =
      body.find("apps/v1") != std::string_view::npos ? live[1] : live[0];
  kplane::patch::PatchLimits limits;
  limits.max_bytes = 256 << 10;
  for (int round = 0; round < 3; ++round) {
    kplane::apiserver::ApplyParams params;
    params.manager = "fuzz";
    params.time = "2026-12-02T16:00:00Z";
    params.force = round == 2;
    params.ignored = {{"f:status"}};
    std::vector<std::string> warnings;
    auto r = kplane::apiserver::ServerSideApplyObject(
        round == 0 ? nullptr : target.obj.get(), *target.kind, body, params,
        &warnings, limits);
    if (const ApiError* e = std::get_if<ApiError>(&r)) {
      if (e->code < 400 || e->code >= 500) {
        std::fprintf(stderr, "%d %s: %s\n", e->code, e->reason.c_str(),
                     e->message.c_str());
        kplane::fuzz::Fail("a bad apply was not answered with a 4xx");
      }
      // What refuses a create (syntax, kind, types, limits) nearly always
      // refuses the updates too: skip them to keep runs cheap.
      if (round == 0) return 0;
      continue;
    }
    (void)kplane::objects::EncodeJson(
        *std::get<kplane::apiserver::MutableMessage>(r));
  }
  return 0;
}
