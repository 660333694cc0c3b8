#include "apiserver/cacher/event_window.h"

#include <gtest/gtest.h>

namespace kplane::apiserver::internal {
namespace {

CacheEventPtr Ev(int64_t rev) {
  auto e = std::make_shared<CacheEvent>();
  e->revision = rev;
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

}  // namespace
}  // namespace kplane::apiserver::internal
