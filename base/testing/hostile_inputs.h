// Hostile inputs for tests (issue 15): the checked-in files under
// testdata/hostile/ (the crashers of the table, replayed by unit,
// e2e and fuzz tests alike) and generated deeply nested JSON. One reader for
// every test, so a test names an input by its place in testdata/hostile/.
//
// Test support (target kplane_base_testing); production code never links it.
// Thread-safety: the functions are pure and may be called from any thread.
// Errors: a missing or unreadable file is a broken checkout, not a test
// result, so HostileInput aborts the test process with the path it tried.
#ifndef KPLANE_BASE_TESTING_HOSTILE_INPUTS_H_
#define KPLANE_BASE_TESTING_HOSTILE_INPUTS_H_

#include <string>

namespace kplane::testing {

// The absolute path of testdata/hostile/<relative_path> in the source tree.
std::string HostileInputPath(const std::string& relative_path);

// The bytes of testdata/hostile/<relative_path>, e.g.
// "yaml/billion_laughs.yaml".
std::string HostileInput(const std::string& relative_path);

// "[[[...1...]]]" with `depth` arrays: the shape that overflowed recursive
// parsers.
std::string NestedJsonArrays(int depth);

// {"a":{"a":...1...}}: objects, where the patch algorithms recurse deepest.
std::string NestedJsonObjects(int depth);

}  // namespace kplane::testing

#endif  // KPLANE_BASE_TESTING_HOSTILE_INPUTS_H_
