// CallDeadlines (the JSON gateway's Grpc-Timeout) on a fake clock: a call
// is cancelled once its deadline passed, not before, earliest first; and
// grpc's timeout format.
#include "storage/server/call_deadlines.h"

#include <gtest/gtest.h>

#include <future>
#include <vector>

namespace kplane::storage {
namespace {

class RecordingCall : public PendingCall {
 public:
  void Cancel(Status why) override {
    MutexLock l(&mu_);
    if (!why_.ok()) return;  // once, as a real call
    why_ = why;
    cancelled_.set_value(why);
  }
  std::future<Status> cancelled() { return cancelled_.get_future(); }

 private:
  Mutex mu_;
  Status why_ GUARDED_BY(mu_);
  std::promise<Status> cancelled_;
};

TEST(ParseGrpcTimeoutTest, GrpcUnits) {
  EXPECT_EQ(ParseGrpcTimeout("1S"), Duration(seconds(1)));
  EXPECT_EQ(ParseGrpcTimeout("300m"), Duration(milliseconds(300)));
  EXPECT_EQ(ParseGrpcTimeout("2M"), Duration(minutes(2)));
  EXPECT_EQ(ParseGrpcTimeout("1H"), Duration(hours(1)));
  EXPECT_EQ(ParseGrpcTimeout("7u"), Duration(microseconds(7)));
  EXPECT_EQ(ParseGrpcTimeout("99999999n"), Duration(nanoseconds(99999999)));
  // Past a nanosecond Duration: the largest timeout, never a wrapped one.
  EXPECT_EQ(ParseGrpcTimeout("99999999H"), kMaxGrpcTimeout);
  EXPECT_EQ(ParseGrpcTimeout("99999999M"), kMaxGrpcTimeout);
  EXPECT_EQ(ParseGrpcTimeout("876000H"), kMaxGrpcTimeout);
  EXPECT_EQ(ParseGrpcTimeout("875999H"), Duration(hours(875999)));
  EXPECT_EQ(ParseGrpcTimeout("99999999S"), Duration(seconds(99999999)));
  for (const char* bad :
       {"", "S", "1", "1s", "-1S", "1.5S", "123456789S", "soon", " 1S"}) {
    EXPECT_FALSE(ParseGrpcTimeout(bad).has_value()) << bad;
  }
}

TEST(CallDeadlinesTest, CancelsEachCallOnceItsDeadlinePassed) {
  FakeClock clock;
  CallDeadlines deadlines(&clock);
  auto late = std::make_shared<RecordingCall>();
  auto early = std::make_shared<RecordingCall>();
  std::future<Status> late_done = late->cancelled();
  std::future<Status> early_done = early->cancelled();
  deadlines.Add(clock.Now() + seconds(10), late);
  deadlines.Add(clock.Now() + seconds(5), early);
  clock.WaitForWaiters(1);  // the timer sleeps until the earliest deadline

  clock.Advance(seconds(4));
  clock.WaitForWaiters(1);  // woke, found nothing due, sleeps again
  EXPECT_EQ(early_done.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);

  clock.Advance(seconds(1));
  Status why = early_done.get();
  EXPECT_TRUE(why.Is(StatusCode::kDeadlineExceeded));
  EXPECT_EQ(why.message(), "context deadline exceeded");
  clock.WaitForWaiters(1);
  EXPECT_EQ(late_done.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);

  clock.Advance(seconds(5));
  EXPECT_TRUE(late_done.get().Is(StatusCode::kDeadlineExceeded));
}

TEST(CallDeadlinesTest, AnEndedCallIsNotKeptAlive) {
  FakeClock clock;
  CallDeadlines deadlines(&clock);
  auto call = std::make_shared<RecordingCall>();
  std::weak_ptr<RecordingCall> weak = call;
  deadlines.Add(clock.Now() + seconds(1), call);
  call.reset();
  EXPECT_TRUE(weak.expired());
  clock.WaitForWaiters(1);
  clock.Advance(seconds(2));  // nothing to cancel; the destructor joins
}

}  // namespace
}  // namespace kplane::storage
