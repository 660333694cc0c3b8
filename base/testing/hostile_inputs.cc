#include "base/testing/hostile_inputs.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/file_system.h"

namespace kplane::testing {

std::string HostileInputPath(const std::string& relative_path) {
  return std::string(KPLANE_HOSTILE_TESTDATA) + "/" + relative_path;
}

std::string HostileInput(const std::string& relative_path) {
  const std::string path = HostileInputPath(relative_path);
  StatusOr<std::string> bytes = ReadFile(FileSystem::Default(), path);
  if (!bytes.ok()) {
    fprintf(stderr, "hostile input %s: %s\n", path.c_str(),
            bytes.status().ToString().c_str());
    abort();
  }
  return *std::move(bytes);
}

std::string NestedJsonArrays(int depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

std::string NestedJsonObjects(int depth) {
  std::string s;
  s.reserve(static_cast<size_t>(depth) * 6 + 1);
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  return s + std::string(depth, '}');
}

}  // namespace kplane::testing
