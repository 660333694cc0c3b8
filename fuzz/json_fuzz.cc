// Fuzzes base/json.h, the one JSON reader behind every JSON input in kplane
// (API bodies, patches, the store's JSON API, continue tokens, clients).
//
// Input: the JSON text, parsed with the production depth limit (10,000) and
// a small one (reached cheaply), with and without UTF-8 validation.
//
// Checked: no crash or sanitizer report at any depth; a parsed DOM is never
// deeper than the limit (Measure); writing it out (Accept, without
// recursion) gives JSON that parses again.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/json.h"
#include "fuzz/fuzz_input.h"

namespace {

template <unsigned kFlags>
void Check(std::string_view text, int max_depth) {
  rapidjson::Document doc;
  kplane::json::Outcome r =
      kplane::json::ParseDom<kFlags>(text, &doc, max_depth);
  (void)r.Message();
  if (!r.ok()) {
    if (!doc.IsNull()) kplane::fuzz::Fail("a failed parse left a value");
    return;
  }
  kplane::json::Extent e = kplane::json::Measure(doc);
  if (e.depth > max_depth) kplane::fuzz::Fail("DOM deeper than the limit");
  (void)kplane::json::Measure(doc, 64);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  // Accept fails only when the writer refuses a value: NaN or infinity
  // (kParseNanAndInfFlag) or invalid UTF-8 it was not asked to check.
  if (!kplane::json::Accept(doc, w)) return;
  rapidjson::Document again;
  kplane::json::Outcome r2 = kplane::json::ParseDom<kFlags>(
      std::string_view(buf.GetString(), buf.GetSize()), &again, max_depth);
  if (!r2.ok()) kplane::fuzz::Fail("written JSON does not parse again");
  // (Not compared with the DOM: doubles read back exactly only with
  // kParseFullPrecisionFlag, and RapidJSON 1.1.0's full-precision path has
  // undefined behaviour on a zero significand, "-0e-308": see
  // docs/testing.md, "Fuzzing".)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The production limit, then a small one that inputs reach cheaply.
  for (int max_depth : {kplane::json::kMaxDepth, 5}) {
    Check<rapidjson::kParseDefaultFlags>(text, max_depth);
    Check<rapidjson::kParseValidateEncodingFlag>(text, max_depth);
    Check<rapidjson::kParseStopWhenDoneFlag>(text, max_depth);
  }
  return 0;
}
