// CheckRegisterHistory on hand-made histories: each rule of the checker
// (workload.h) rejects a history that breaks it, and accepts the
// concurrent cases a linearizable store may produce.
#include "tests/e2e/store_faults/workload.h"

#include <gtest/gtest.h>

namespace kplane::e2e {
namespace {

// Times in ms from an arbitrary origin.
TimePoint T(int ms) { return TimePoint() + milliseconds(ms); }

RegisterOp W(int client, std::string v, int64_t rev, int from, int to) {
  return RegisterOp{.kind = RegisterOp::kWrite,
                    .client = client,
                    .value = std::move(v),
                    .revision = rev,
                    .invoked = T(from),
                    .completed = T(to),
                    .ok = true};
}

// A write whose outcome the client never learned.
RegisterOp Unknown(int client, std::string v, int from) {
  return RegisterOp{.kind = RegisterOp::kWrite,
                    .client = client,
                    .value = std::move(v),
                    .invoked = T(from),
                    .completed = TimePoint::max(),
                    .ok = false};
}

RegisterOp R(int client, std::string v, int64_t rev, int from, int to) {
  return RegisterOp{.kind = RegisterOp::kRead,
                    .client = client,
                    .value = std::move(v),
                    .revision = rev,
                    .invoked = T(from),
                    .completed = T(to),
                    .ok = true};
}

const std::vector<StoredWrite> kAB = {{"a", 5}, {"b", 7}};

TEST(RegisterChecker, AcceptsSequentialHistory) {
  EXPECT_TRUE(CheckRegisterHistory(
                  {R(0, "", 0, 0, 1), W(0, "a", 5, 2, 3), R(1, "a", 5, 4, 5),
                   W(1, "b", 7, 6, 7), R(0, "b", 7, 8, 9)},
                  kAB)
                  .ok());
}

TEST(RegisterChecker, AcceptsReadsConcurrentWithAWrite) {
  // b is being written from 6 to 20: reads during it may see a or b, as
  // long as no read sees a after another read saw b.
  EXPECT_TRUE(CheckRegisterHistory(
                  {W(0, "a", 5, 0, 1), W(1, "b", 7, 6, 20), R(2, "a", 5, 7, 8),
                   R(3, "b", 7, 9, 10), R(2, "b", 7, 11, 12)},
                  kAB)
                  .ok());
}

TEST(RegisterChecker, AcceptsAnUnknownWriteThatWasApplied) {
  EXPECT_TRUE(
      CheckRegisterHistory(
          {W(0, "a", 5, 0, 1), Unknown(1, "b", 2), R(0, "b", 7, 30, 31)}, kAB)
          .ok());
}

TEST(RegisterChecker, RejectsALostAcknowledgedWrite) {
  Status s = CheckRegisterHistory({W(0, "a", 5, 0, 1), W(0, "b", 7, 2, 3)},
                                  {{"a", 5}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lost"), std::string::npos) << s;
}

TEST(RegisterChecker, RejectsAWriteStoredAtAnotherRevision) {
  EXPECT_FALSE(CheckRegisterHistory({W(0, "a", 6, 0, 1)}, {{"a", 5}}).ok());
}

TEST(RegisterChecker, RejectsAValueNobodyWrote) {
  EXPECT_FALSE(
      CheckRegisterHistory({W(0, "a", 5, 0, 1)}, {{"a", 5}, {"zz", 6}}).ok());
}

TEST(RegisterChecker, RejectsWritesOrderedAgainstRealTime) {
  // b completed before a was invoked, yet a got the higher revision.
  EXPECT_FALSE(CheckRegisterHistory({W(0, "b", 7, 0, 1), W(1, "a", 5, 2, 3)},
                                    {{"a", 5}, {"b", 7}})
                   .ok());
}

TEST(RegisterChecker, RejectsAStaleRead) {
  Status s = CheckRegisterHistory(
      {W(0, "a", 5, 0, 1), W(0, "b", 7, 2, 3), R(1, "a", 5, 4, 5)}, kAB);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stale"), std::string::npos) << s;
}

TEST(RegisterChecker, RejectsAReadOfTheFuture) {
  EXPECT_FALSE(
      CheckRegisterHistory(
          {W(0, "a", 5, 0, 1), R(1, "b", 7, 2, 3), W(0, "b", 7, 4, 5)}, kAB)
          .ok());
}

TEST(RegisterChecker, RejectsAReadThatGoesBackInTime) {
  // b's write is still in flight; one read saw b, a later one saw a.
  EXPECT_FALSE(CheckRegisterHistory({W(0, "a", 5, 0, 1), W(1, "b", 7, 2, 50),
                                     R(2, "b", 7, 3, 4), R(3, "a", 5, 5, 6)},
                                    kAB)
                   .ok());
}

TEST(RegisterChecker, RejectsAReadOfAValueTheStoreDoesNotHoldThere) {
  EXPECT_FALSE(
      CheckRegisterHistory({W(0, "a", 5, 0, 1), R(1, "a", 6, 2, 3)}, {{"a", 5}})
          .ok());
}

}  // namespace
}  // namespace kplane::e2e
