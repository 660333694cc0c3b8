#include "base/heap_tuning.h"

#include <malloc.h>

#include <cstdlib>
#include <string_view>

namespace kplane {

namespace {

bool EnvironmentChoosesThresholds() {
  if (std::getenv("KPLANE_MALLOC_DEFAULTS") != nullptr ||
      std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) {
    return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables == nullptr) return false;
  std::string_view t(tunables);
  return t.find("glibc.malloc.mmap_threshold") != std::string_view::npos ||
         t.find("glibc.malloc.trim_threshold") != std::string_view::npos;
}

}  // namespace

bool KeepFreedHeapMemory() {
  if (EnvironmentChoosesThresholds()) return false;
  // mallopt answers 1 when it took the value. Setting either one also stops
  // glibc's dynamic adjustment of both, which is the point.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapMmapThreshold)) == 1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapTrimThreshold)) == 1;
}

}  // namespace kplane
