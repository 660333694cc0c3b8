// Fuzzes Unstructured JSON (informer/unstructured.h): the objects a dynamic
// client or informer reads from a server (custom resources, whose content
// any client allowed to create them chooses), and LIST bodies.
//
// Input: byte 0 picks the entry point (even: one object through
// Unstructured::Parse and NewUnstructuredObject; odd: a LIST body through
// ParseUnstructuredList), the rest is the JSON text.
// Checked: no crash or sanitizer report; a parsed object's ToJson parses
// again to the same text, survives a copy, a nested set and remove; an
// object the informer representation admits reads back through FromObject
// with the same name and namespace as its decoded metadata.
// Not checked: texts whose \u escapes decode to a lone surrogate (RapidJSON
// writes the surrogate's bytes, which the validating reader refuses;
// docs/testing.md "Known and left"): for those the second parse may fail.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "informer/unstructured.h"

namespace {

using kplane::informer::Unstructured;

void CheckObject(std::string_view text) {
  auto u = Unstructured::Parse(text);
  if (!u.ok()) return;
  // Every accessor on whatever shapes the members have.
  (void)u->ApiVersion();
  (void)u->Kind();
  (void)u->Name();
  (void)u->Namespace();
  (void)u->ResourceVersion();
  (void)u->Uid();
  (void)u->Labels();
  (void)u->Annotations();
  (void)u->NestedInt64({"spec", "replicas"});
  (void)u->NestedBool({"spec", "suspend"});
  (void)u->NestedStringMap({"data"});

  const std::string json = u->ToJson();
  auto again = Unstructured::Parse(json);
  if (again.ok() && again->ToJson() != json) {
    std::fprintf(stderr, "%s\n", kplane::fuzz::Escape(json).c_str());
    kplane::fuzz::Fail("ToJson does not parse back to the same text");
  }
  Unstructured copy = *u;
  if (copy.ToJson() != json) kplane::fuzz::Fail("a copy differs");
  copy.SetNestedString({"spec", "x", "y"}, "z");
  if (copy.NestedString({"spec", "x", "y"}) != "z") {
    kplane::fuzz::Fail("a nested set does not read back");
  }
  if (!copy.RemoveNested({"spec", "x", "y"})) {
    kplane::fuzz::Fail("a nested set cannot be removed");
  }
  if (u->ToJson() != json) kplane::fuzz::Fail("the copy shares the original");

  auto obj = kplane::informer::NewUnstructuredObject(std::string(text));
  if (!obj.ok()) return;
  auto back = Unstructured::FromObject(**obj);
  if (!back.ok()) kplane::fuzz::Fail("an informer object does not read back");
  // The informer keys objects by the decoded metadata; the JSON must agree
  // whenever it holds the name as a plain string.
  if (back->NestedString({"metadata", "name"}).has_value() &&
      back->Name() != (*obj)->metadata().name()) {
    kplane::fuzz::Fail("decoded metadata.name differs from the JSON's");
  }
}

void CheckList(std::string_view text) {
  auto list = kplane::informer::ParseUnstructuredList(text);
  if (!list.ok()) return;
  for (const Unstructured& item : list->items) {
    if (!item.value().IsObject()) kplane::fuzz::Fail("an item is no object");
    (void)item.ToJson();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const uint8_t which = in.TakeByte();
  if (which % 2 == 0) {
    CheckObject(in.rest());
  } else {
    CheckList(in.rest());
  }
  return 0;
}
