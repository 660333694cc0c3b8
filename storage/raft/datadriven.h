// A tiny datadriven test runner (the format of cockroachdb/datadriven, our
// own code). A test file is a sequence of blocks:
//
//   # comments and blank lines between blocks are kept
//   command arg1 key=value key=(v1,v2)
//   optional input lines
//   ----
//   expected output
//   <blank line ends the block>
//
// Output that itself contains blank lines is fenced by a doubled separator:
//
//   command
//   ----
//   ----
//   output with
//
//   a blank line
//   ----
//   ----
//
// Running with KPLANE_REWRITE=1 rewrites the file with the actual output
// (review the diff before committing it).
//
// Thread-safety: none. Errors: gtest failures (mismatches) and ADD_FAILURE
// for unreadable or malformed files.
#ifndef KPLANE_STORAGE_RAFT_DATADRIVEN_H_
#define KPLANE_STORAGE_RAFT_DATADRIVEN_H_

#include <functional>
#include <string>
#include <vector>

namespace kplane::datadriven {

struct Arg {
  std::string key;
  std::vector<std::string> vals;  // empty for a bare word
};

struct TestData {
  std::string pos;  // "file:line" for messages
  std::string cmd;
  std::vector<Arg> args;
  std::string input;  // lines between the command and "----"
  std::string expected;

  bool HasArg(const std::string& key) const;
  // The first value of key=value, or `fallback`.
  std::string ArgValue(const std::string& key,
                       const std::string& fallback = "") const;
  uint64_t ArgUint(const std::string& key, uint64_t fallback = 0) const;
};

// Runs every block of `path` through `fn` and compares (or rewrites).
void RunTest(const std::string& path,
             const std::function<std::string(const TestData&)>& fn);

}  // namespace kplane::datadriven

#endif  // KPLANE_STORAGE_RAFT_DATADRIVEN_H_
