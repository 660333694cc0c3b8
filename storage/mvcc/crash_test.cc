// Crash tests: a child process runs the deterministic workload and is
// killed with SIGKILL at a random point, mid-write or mid-compaction. After
// reopening, every acknowledged write must be there, nothing half-applied
// may be visible (the state equals the workload replayed to the recovered
// revision), revisions continue, and an interrupted compaction completes.
// The kill points are random; each test prints its seed, and
// KPLANE_MVCC_CRASH_SEED=<seed> repeats its choices.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <random>
#include <string>

#include "base/test_seed.h"
#include "storage/mvcc/crash_workload.h"
#include "storage/mvcc/test_util.h"

extern char** environ;

namespace kplane::mvcc {
namespace {

using testing::MakeRange;

// A child process with its stdout on a pipe.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(KPLANE_MVCC_CRASH_CHILD));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, KPLANE_MVCC_CRASH_CHILD, &actions, nullptr,
                          argv.data(), environ),
              0);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    fd_ = fds[0];
  }
  ~Child() {
    Kill();
    close(fd_);
  }

  // The next line of output; nullopt at EOF or after 60 s of silence.
  std::optional<std::string> ReadLine() {
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 60'000) <= 0) return std::nullopt;
      char chunk[4096];
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
};

std::map<std::string, std::string> StateAt(Store* s, int64_t rev) {
  std::map<std::string, std::string> out;
  auto r = s->Range(MakeRange(std::string("\0", 1), std::string("\0", 1), rev));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  for (const auto& kv : r->kvs()) out[kv.key()] = kv.value();
  return out;
}

// Reads acks until `want` of them arrived (want < 0: until the output
// ends); returns the last acknowledged revision. Sets *compacted on
// "compacted".
int64_t ReadAcks(Child* c, int want, int64_t last, bool* compacted) {
  for (int got = 0; want < 0 || got < want;) {
    auto line = c->ReadLine();
    if (!line) {
      if (want >= 0) ADD_FAILURE() << "child stopped talking";
      break;
    }
    if (line->rfind("ack ", 0) == 0) {
      int64_t rev = std::stoll(line->substr(4));
      EXPECT_EQ(rev, last + 1);
      last = rev;
      ++got;
    } else if (*line == "compacted" && compacted != nullptr) {
      *compacted = true;
    }
  }
  return last;
}

// Checks a store reopened after a kill: acknowledged writes present, at
// most the one in-flight write beyond them, state exactly the workload's.
int64_t CheckRecovered(Store* s, int64_t last_ack) {
  const int64_t rev = s->CurrentRevision();
  EXPECT_GE(rev, last_ack) << "an acknowledged write was lost";
  EXPECT_LE(rev, last_ack + 1);
  EXPECT_EQ(s->ConsistentIndex(), static_cast<uint64_t>(crash::OpOf(rev)));
  EXPECT_EQ(StateAt(s, rev), crash::Expected(rev));
  return rev;
}

TEST(MvccCrashTest, KillMidWriteLosesNothingAcknowledged) {
  testing::TempDir dir;
  const TestSeed seed("KPLANE_MVCC_CRASH_SEED");
  SCOPED_TRACE(seed.Replay());
  std::mt19937 rng(seed.value());
  int64_t last = Store::kInitialRevision;  // a new store's
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int acks = 20 + static_cast<int>(rng() % 400);
    {
      Child child({"write", dir.path(), trial % 2 ? "1" : "0"});
      last = ReadAcks(&child, acks, last, nullptr);
      child.Kill();
      // Acks the child wrote before it died but we had not read yet.
      last = ReadAcks(&child, -1, last, nullptr);
    }
    auto store = testing::OpenOrDie(dir.path());
    ASSERT_NE(store, nullptr);
    last = CheckRecovered(store.get(), last);
    // History survived too.
    int64_t past = 1 + static_cast<int64_t>(rng() % last);
    EXPECT_EQ(StateAt(store.get(), past), crash::Expected(past));
    // Revisions continue where they stopped.
    ASSERT_TRUE(crash::Apply(store.get(), last + 1).ok());
    EXPECT_EQ(store->CurrentRevision(), ++last);
  }
}

TEST(MvccCrashTest, KillDuringCompactionResumesAfterRestart) {
  testing::TempDir dir;
  const TestSeed seed("KPLANE_MVCC_CRASH_SEED");
  SCOPED_TRACE(seed.Replay());
  std::mt19937 rng(seed.value());
  int64_t last = Store::kInitialRevision;  // a new store's
  int interrupted = 0;
  for (int trial = 0; trial < 4; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    {
      // More history to compact, written in-process.
      auto store = testing::OpenOrDie(dir.path());
      ASSERT_NE(store, nullptr);
      for (int i = 0; i < 4000; ++i) {
        ASSERT_TRUE(crash::Apply(store.get(), ++last).ok());
      }
    }
    const int64_t target = last - 10;
    bool compacted = false;
    {
      Child child({"compact", dir.path(), std::to_string(target)});
      auto line = child.ReadLine();
      ASSERT_EQ(line.value_or("<eof>"), "scheduled");
      last = ReadAcks(&child, static_cast<int>(rng() % 100), last, &compacted);
      child.Kill();
      last = ReadAcks(&child, -1, last, &compacted);
    }
    if (!compacted) ++interrupted;
    auto store = testing::OpenOrDie(dir.path());
    ASSERT_NE(store, nullptr);
    last = CheckRecovered(store.get(), last);
    EXPECT_EQ(store->CompactRevision(), target);
    ASSERT_TRUE(store->WaitForCompaction(target).ok());
    EXPECT_EQ(store->FinishedCompactRevision(), target);
    // Below the target only the newest version of each key is left (a
    // tombstone only at the target itself), and no events.
    EXPECT_EQ(store->RawEventCount(target - 1), 0);
    for (const auto& [key, value] : crash::Expected(last)) {
      int old = 0;
      for (const auto& [rev, tombstone] : store->RawVersions(key)) {
        if (rev <= target) {
          ++old;
          EXPECT_TRUE(!tombstone || rev == target) << key;
        }
      }
      EXPECT_LE(old, 1) << key;
    }
    EXPECT_EQ(StateAt(store.get(), target), crash::Expected(target));
    EXPECT_EQ(store->Range(MakeRange("p1", "", target - 1)).status().code(),
              StatusCode::kCompacted);
  }
  // The point of the test: most kills land mid-compaction.
  EXPECT_GE(interrupted, 1);
  std::printf("compactions interrupted by the kill: %d of 4\n", interrupted);
}

}  // namespace
}  // namespace kplane::mvcc
