#include "base/heap_tuning.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace kplane {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizedMalloc = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kSanitizedMalloc = true;
#else
constexpr bool kSanitizedMalloc = false;
#endif
#else
constexpr bool kSanitizedMalloc = false;
#endif

long MinorFaultsOfThisThread() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// A request's worth of small blocks (4 MiB in 256-byte pieces), all freed
// afterwards in the order they came: the shape of a large answer built row
// by row. Returns the minor faults `rounds` such bursts took after a first,
// warming one.
long FaultsOfBursts(int rounds) {
  constexpr int kBlocks = 16384;
  std::vector<void*> blocks(kBlocks);
  auto burst = [&] {
    for (void*& b : blocks) {
      b = std::malloc(256);
      std::memset(b, 1, 256);
    }
    for (void* b : blocks) std::free(b);
  };
  burst();
  long before = MinorFaultsOfThisThread();
  for (int i = 0; i < rounds; ++i) burst();
  return MinorFaultsOfThisThread() - before;
}

TEST(HeapTuningTest, ABurstOfSmallBlocksIsNotFaultedInAgain) {
  if (kSanitizedMalloc) {
    GTEST_SKIP() << "a sanitizer's malloc ignores mallopt";
  }
  for (const char* var :
       {"GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_TOP_PAD_", "KPLANE_MALLOC_DEFAULTS"}) {
    if (std::getenv(var) != nullptr) {
      GTEST_SKIP() << var << " is set: the environment tunes malloc";
    }
  }
  constexpr int kRounds = 8;
  // glibc's starting point (128 KiB) set back by hand, since this process
  // may already have moved it: each burst's 4 MiB are handed back to the
  // kernel and faulted in again, ~1,000 pages a burst. This half shows the
  // measure sees the trap.
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 128 * 1024), 1);
  EXPECT_GT(FaultsOfBursts(kRounds), kRounds * 500);

  ASSERT_TRUE(KeepFreedHeapMemory());
  // The heap keeps its top: later bursts reuse pages already there.
  EXPECT_LT(FaultsOfBursts(kRounds), 64);
}

// Sets an environment variable for one scope, then puts back what was
// there (or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HeapTuningTest, AnOperatorsEnvironmentWins) {
  {
    ScopedEnv e("MALLOC_TRIM_THRESHOLD_", "1048576");
    EXPECT_FALSE(KeepFreedHeapMemory());
  }
  {
    ScopedEnv e("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536");
    EXPECT_FALSE(KeepFreedHeapMemory());
  }
  {
    ScopedEnv e("KPLANE_MALLOC_DEFAULTS", "1");
    EXPECT_FALSE(KeepFreedHeapMemory());
  }
}

}  // namespace
}  // namespace kplane
