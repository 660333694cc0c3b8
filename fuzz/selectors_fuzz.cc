// Fuzzes label and field selectors (objects/machinery/labels.h, fields.h):
// the labelSelector= and fieldSelector= query parameters of every LIST and
// WATCH, and meta/v1 LabelSelector JSON (Deployment and ReplicaSet specs).
//
// Input: byte 0 picks what the rest is: a label selector, a field
// selector, or LabelSelector JSON.
//
// Checked: no crash or sanitizer report; a parsed selector's String()
// parses again; a label selector's String() is canonical, a field
// selector's is after one round (as in Kubernetes).
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
      // Kubernetes sorts the terms' text before parsing and String()
      // writes "==" as "=", so the first String() may sort differently
      // ("a==x,a=d" -> "a=x,a=d"); from then on it is stable (as in Go).
      std::string str = s->String();
      auto once = m::FieldSelector::Parse(str);
      if (!once.ok()) {
        std::fprintf(stderr, "out: %s\n", kplane::fuzz::Escape(str).c_str());
        kplane::fuzz::Fail("a field selector's String() does not parse");
      }
      std::string str2 = once->String();
      auto twice = m::FieldSelector::Parse(str2);
      if (!twice.ok() || twice->String() != str2) {
        std::fprintf(stderr, "in:    %s\nout:   %s\n",
                     kplane::fuzz::Escape(text).c_str(),
                     kplane::fuzz::Escape(str2).c_str());
        kplane::fuzz::Fail("a field selector's String() is not stable");
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
