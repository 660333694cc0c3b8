#include "apiserver/cacher/event_window.h"

#include <gtest/gtest.h>

namespace kplane::apiserver::internal {
namespace {

CacheEventPtr Ev(int64_t rev, TimePoint recorded = TimePoint{}) {
  auto e = std::make_shared<CacheEvent>();
  e->revision = rev;
  e->recorded = recorded;
  return e;
}

std::vector<int64_t> Revs(const std::vector<CacheEventPtr>& v) {
  std::vector<int64_t> out;
  for (const auto& e : v) out.push_back(e->revision);
  return out;
}

// The worked example of event_window.h.
TEST(EventWindowTest, ResumableFromTracksDroppedRevisions) {
  EventWindow w(3);
  w.Reset(10);
  EXPECT_EQ(w.resumable_from(), 10);
  EXPECT_TRUE(w.Since(10).empty());
  w.Push(Ev(11));
  w.Push(Ev(12));
  w.Push(Ev(12));
  EXPECT_EQ(w.resumable_from(), 10);
  EXPECT_EQ(Revs(w.Since(10)), (std::vector<int64_t>{11, 12, 12}));
  w.Push(Ev(13));
  EXPECT_EQ(w.resumable_from(), 11);
  EXPECT_EQ(Revs(w.Since(11)), (std::vector<int64_t>{12, 12, 13}));
  w.Push(Ev(14));
  EXPECT_EQ(w.resumable_from(), 12);  // one event of 12 is gone
  EXPECT_EQ(Revs(w.Since(12)), (std::vector<int64_t>{13, 14}));
  EXPECT_TRUE(w.Since(14).empty());
  EXPECT_TRUE(w.Since(20).empty());
  EXPECT_EQ(w.size(), 3u);
}

TEST(EventWindowTest, ResetEmptiesTheWindow) {
  EventWindow w(4);
  w.Reset(1);
  for (int64_t r = 2; r < 10; ++r) w.Push(Ev(r));
  EXPECT_EQ(w.resumable_from(), 5);
  w.Reset(20);
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ(w.resumable_from(), 20);
  w.Push(Ev(21));
  EXPECT_EQ(Revs(w.Since(20)), (std::vector<int64_t>{21}));
}

// The age bound: events older than max_age go, but never below min_events,
// and resuming below what went is refused as after a capacity drop.
TEST(EventWindowTest, ExpireDropsEventsPastTheirAgeDownToTheFloor) {
  const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
  EventWindow w(100, /*min_events=*/2, /*max_age=*/seconds(75));
  w.Reset(10);
  for (int64_t r = 11; r <= 14; ++r) w.Push(Ev(r, t0));
  w.Push(Ev(15, t0 + seconds(60)));
  // Exactly max_age old is still fresh.
  EXPECT_EQ(w.Expire(t0 + seconds(75)), 0u);
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.resumable_from(), 10);
  // 76 s: the four events of t0 are stale; three go, the floor keeps 14.
  EXPECT_EQ(w.Expire(t0 + seconds(76)), 3u);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.resumable_from(), 13);
  EXPECT_EQ(Revs(w.Since(13)), (std::vector<int64_t>{14, 15}));
  // Much later: still the floor.
  EXPECT_EQ(w.Expire(t0 + std::chrono::hours(5)), 0u);
  EXPECT_EQ(Revs(w.Since(13)), (std::vector<int64_t>{14, 15}));
  // Pushing after expiring wraps the ring as before.
  for (int64_t r = 16; r <= 20; ++r) w.Push(Ev(r, t0 + seconds(200)));
  EXPECT_EQ(Revs(w.Since(13)),
            (std::vector<int64_t>{14, 15, 16, 17, 18, 19, 20}));
}

TEST(EventWindowTest, NoAgeBoundKeepsEventsUntilCapacity) {
  EventWindow w(3);  // max_age 0: the window before the age bound
  w.Reset(1);
  w.Push(Ev(2));
  w.Push(Ev(3));
  EXPECT_EQ(w.Expire(TimePoint{} + std::chrono::hours(100)), 0u);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.resumable_from(), 1);
}

}  // namespace
}  // namespace kplane::apiserver::internal
