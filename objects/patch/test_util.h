// Helpers shared by the objects/patch tests.
#ifndef KPLANE_OBJECTS_PATCH_TEST_UTIL_H_
#define KPLANE_OBJECTS_PATCH_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

#include "objects/patch/json_value.h"
#include "objects/patch/patch_meta.h"
#include "objects/patch/testdata/patchtest.pb.h"
#include "objects/patch/testdata/patchtest_table.h"

namespace kplane::patch {

inline PatchSchema PodSchema() {
  return PatchSchema(patchtest::Pod::descriptor(), &PatchTestTable());
}
inline PatchSchema DeploymentSchema() {
  return PatchSchema(patchtest::Deployment::descriptor(), &PatchTestTable());
}

// Parses `json` (which must be valid) and returns its canonical form, so
// expectations can be written with any key order and spacing.
inline std::string Canon(std::string_view json) {
  rapidjson::Document d;
  Status st = ParseJson(json, &d);
  EXPECT_TRUE(st.ok()) << "bad test JSON: " << json;
  return CanonicalJson(d);
}

// `v` as compact JSON in its own member order (Canon sorts).
inline std::string CompactJson(const JsonValue& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return std::string(b.GetString(), b.GetSize());
}

}  // namespace kplane::patch

#endif  // KPLANE_OBJECTS_PATCH_TEST_UTIL_H_
