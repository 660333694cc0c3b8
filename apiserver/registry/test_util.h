// Helpers for the apiserver/registry tests: decoding manifests into typed
// objects, finding a resource's strategy, and printing field errors.
#ifndef KPLANE_APISERVER_REGISTRY_TEST_UTIL_H_
#define KPLANE_APISERVER_REGISTRY_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "objects/codec.h"
#include "objects/scheme.h"
#include "objects/time.h"
#include "apiserver/registry/strategy.h"

namespace kplane::apiserver::testing {

template <typename T>
T Decode(std::string_view json) {
  T obj;
  auto r = objects::DecodeJson(json, &obj);
  EXPECT_TRUE(r.ok()) << r.status() << "\n" << json;
  if (r.ok()) {
    EXPECT_TRUE(r->strict_ok()) << r->StrictErrorMessage();
  }
  return obj;
}

inline const Strategy& StrategyOf(std::string_view group,
                                  std::string_view resource) {
  const objects::ResourceInfo* r =
      objects::Scheme::Default().FindResource(group, "v1", resource);
  EXPECT_NE(r, nullptr) << group << "/" << resource;
  return StrategyFor(*r);
}

// The Error() texts, in order.
inline std::vector<std::string> Texts(const FieldErrors& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.Error());
  return out;
}

// A wall time `seconds` after the epoch.
inline WallTime At(int64_t seconds) {
  return WallTime(std::chrono::seconds(seconds));
}

// 2026-11-29T08:37:42Z, the creation time used in the fixtures.
inline constexpr int64_t kCreated = 1795941462;

}  // namespace kplane::apiserver::testing

#endif  // KPLANE_APISERVER_REGISTRY_TEST_UTIL_H_
