// Seeds for randomized tests (crash, fault-injection and simulation tests),
// so that a failing run can be run again with the same choices, as etcd's
// and raft's seeded tests allow: the seed comes from an environment
// variable when it is set, otherwise from the test's default (a fixed seed,
// or a fresh random one); it is printed when the test starts (a crash
// still shows it) and Replay() names it for SCOPED_TRACE, so every failure
// message says how to repeat the run.
//
//   const TestSeed seed("KPLANE_MVCC_CRASH_SEED");  // random by default
//   SCOPED_TRACE(seed.Replay());  // "replay: KPLANE_MVCC_CRASH_SEED=42"
//   std::mt19937 rng(seed.value());
//
// Header-only and for tests: no production target includes it.
// Thread-safety: reads the environment in the constructor; construct on
// the test's thread. Errors: a variable that is not a decimal number is a
// mistake in the command line; the constructor says so and aborts.
#ifndef KPLANE_BASE_TEST_SEED_H_
#define KPLANE_BASE_TEST_SEED_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "base/strings.h"

namespace kplane {

class TestSeed {
 public:
  // `fixed`: the seed when `env_var` is unset; nullopt: a random one.
  explicit TestSeed(const char* env_var,
                    std::optional<uint64_t> fixed = std::nullopt)
      : env_var_(env_var) {
    if (const char* v = std::getenv(env_var); v != nullptr && *v != '\0') {
      std::optional<uint64_t> parsed = ParseUint64(v);
      if (!parsed) {
        std::fprintf(stderr, "%s=%s is not a seed (a decimal number)\n",
                     env_var, v);
        std::abort();
      }
      value_ = *parsed;
    } else if (fixed) {
      value_ = *fixed;
    } else {
      value_ = std::random_device{}();  // 32 bits, what std::mt19937 takes
    }
    std::printf("seed: %s\n", Assignment().c_str());
    std::fflush(stdout);
  }

  uint64_t value() const { return value_; }
  // "KPLANE_X_SEED=42"
  std::string Assignment() const {
    return env_var_ + "=" + std::to_string(value_);
  }
  // For SCOPED_TRACE: "replay: KPLANE_X_SEED=42".
  std::string Replay() const { return "replay: " + Assignment(); }

 private:
  std::string env_var_;
  uint64_t value_ = 0;
};

}  // namespace kplane

#endif  // KPLANE_BASE_TEST_SEED_H_
