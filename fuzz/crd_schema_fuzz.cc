// Fuzzes CRD schemas and custom resources (apiserver/crd_schema.h): anyone
// allowed to create a CRD chooses the schema, anyone allowed to create its
// custom resources chooses the objects validated, pruned and defaulted
// against it.
//
// Input: an openAPIV3Schema as JSON, a line "==", then a custom resource's
// content as JSON (either may fail to parse; a bad object still exercises
// the schema build).
// Parsed with RapidJSON's default number parsing: its full-precision path
// has undefined behaviour on a zero significand ("0e0100"; docs/testing.md,
// "Fuzzing"), which is RapidJSON's, not the schema code's.
// Checked: no crash or sanitizer report; pruning and defaulting are
// idempotent (a second pass finds no unknown field and changes nothing).
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "apiserver/crd_schema.h"
#include "base/json.h"
#include "fuzz/fuzz_input.h"

namespace {

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kplane::apiserver::CrdSchema;
  kplane::fuzz::FuzzInput in(data, size);
  const std::string_view schema_text = in.TakeUntil("\n==\n");
  rapidjson::Document props;
  if (!kplane::json::ParseDom(schema_text, &props).ok()) {
    return 0;
  }
  kplane::apiserver::FieldErrors errs;
  auto schema = CrdSchema::Build(
      props, kplane::apiserver::validation::Path("openAPIV3Schema"), &errs);
  for (const auto& e : errs) (void)e.Error();
  rapidjson::Document obj;
  if (!kplane::json::ParseDom(in.rest(), &obj).ok()) {
    return 0;
  }
  for (const auto& e : schema->Validate(obj)) (void)e.Error();
  schema->PruneAndDefault(&obj, obj.GetAllocator());
  const std::string once = Compact(obj);
  for (const auto& e : schema->Validate(obj)) (void)e.Error();
  if (!schema->PruneAndDefault(&obj, obj.GetAllocator()).empty()) {
    kplane::fuzz::Fail("a second pruning found unknown fields");
  }
  if (Compact(obj) != once) {
    kplane::fuzz::Fail("a second pruning and defaulting changed the object");
  }
  return 0;
}
