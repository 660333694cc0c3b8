#include "controllers/expectations.h"

#include <gtest/gtest.h>

namespace kplane::controllers {
namespace {

constexpr char kKey[] = "default/web";

TEST(ControllerExpectationsTest, CreationsAreSatisfiedOnceAllAreSeen) {
  FakeClock clock;
  ControllerExpectations e(&clock);
  EXPECT_TRUE(e.Satisfied(kKey));
  e.ExpectCreations(kKey, 2);
  e.CreationObserved(kKey);
  EXPECT_FALSE(e.Satisfied(kKey));
  e.CreationFailed(kKey);
  EXPECT_TRUE(e.Satisfied(kKey));
}

// kube's SetExpectations replaces the counts: a creation lost past the
// expiry must not be owed by the next round.
TEST(ControllerExpectationsTest, NewCreationsReplaceExpiredOnes) {
  FakeClock clock;
  ControllerExpectations e(&clock, minutes(5));
  e.ExpectCreations(kKey, 2);
  e.CreationObserved(kKey);  // the other one is never seen
  EXPECT_FALSE(e.Satisfied(kKey));
  clock.Advance(minutes(5));
  EXPECT_TRUE(e.Satisfied(kKey));
  e.ExpectCreations(kKey, 1);
  e.CreationObserved(kKey);
  EXPECT_TRUE(e.Satisfied(kKey));
}

TEST(ControllerExpectationsTest, NewDeletionsReplaceExpiredOnes) {
  FakeClock clock;
  ControllerExpectations e(&clock, minutes(5));
  e.ExpectDeletions(kKey, {"default/web-a"});  // never seen go
  clock.Advance(minutes(5));
  EXPECT_TRUE(e.Satisfied(kKey));
  e.ExpectDeletions(kKey, {"default/web-b"});
  e.DeletionObserved(kKey, "default/web-b");
  EXPECT_TRUE(e.Satisfied(kKey));
  // Creations replace the deletions too.
  e.ExpectDeletions(kKey, {"default/web-c"});
  clock.Advance(minutes(5));
  e.ExpectCreations(kKey, 1);
  e.CreationObserved(kKey);
  EXPECT_TRUE(e.Satisfied(kKey));
}

// The DaemonSet creates and deletes in one round.
TEST(ControllerExpectationsTest, SetExpectationsWaitsForBoth) {
  FakeClock clock;
  ControllerExpectations e(&clock);
  e.SetExpectations(kKey, 1, {"default/web-a"});
  e.CreationObserved(kKey);
  EXPECT_FALSE(e.Satisfied(kKey));
  e.DeletionObserved(kKey, "default/web-a");
  EXPECT_TRUE(e.Satisfied(kKey));
}

}  // namespace
}  // namespace kplane::controllers
