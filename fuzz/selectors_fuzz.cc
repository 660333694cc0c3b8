// Fuzzes label and field selectors (objects/machinery/labels.h, fields.h):
// the labelSelector= and fieldSelector= query parameters of every LIST and
// WATCH, and meta/v1 LabelSelector JSON (Deployment and ReplicaSet specs).
//
// Input: byte 0 picks what the rest is: a label selector, a field
// selector, or LabelSelector JSON.
//
// Checked: no crash or sanitizer report; a parsed selector's String()
// parses again to the same String() (it is canonical), and matching works.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/json.h"
#include "fuzz/fuzz_input.h"
#include "objects/machinery/fields.h"
#include "objects/machinery/labels.h"

namespace m = kplane::machinery;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const uint8_t choice = in.TakeByte();
  std::string_view text = in.rest();
  static const m::Labels kLabels = {{"app", "web"}, {"tier", "fe"}, {"n", "5"}};
  switch (choice % 3) {
    case 0: {
      auto s = m::LabelSelector::Parse(text);
      if (!s.ok()) return 0;
      (void)s->Matches(kLabels);
      (void)s->RequiresExactMatch("app");
      std::string str = s->String();
      auto again = m::LabelSelector::Parse(str);
      if (!again.ok() || again->String() != str) {
        std::fprintf(stderr, "%s\n", str.c_str());
        kplane::fuzz::Fail("a label selector's String() does not round-trip");
      }
      break;
    }
    case 1: {
      auto s = m::FieldSelector::Parse(text);
      if (!s.ok()) return 0;
      (void)s->Matches([](std::string_view f) { return std::string(f); });
      (void)s->RequiresExactMatch("metadata.name");
      (void)s->Validate({"metadata.name", "metadata.namespace"});
      std::string str = s->String();
      auto again = m::FieldSelector::Parse(str);
      if (!again.ok() || again->String() != str) {
        std::fprintf(stderr, "%s\n", str.c_str());
        kplane::fuzz::Fail("a field selector's String() does not round-trip");
      }
      break;
    }
    case 2: {
      rapidjson::Document doc;
      if (!kplane::json::ParseDom(text, &doc).ok()) return 0;
      (void)m::FormatLabelSelector(doc);
      auto s = m::LabelSelector::FromLabelSelectorJson(doc);
      if (s.ok()) (void)s->Matches(kLabels);
      break;
    }
  }
  return 0;
}
