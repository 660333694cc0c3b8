#include "informer/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <set>
#include <thread>

#include "informer/test_util.h"

namespace kplane::informer {
namespace {

using testing::Recorder;

// One record shared by every candidate, with the API server's optimistic
// locking: an update must carry the version its writer last read.
class FakeRecordStore {
 public:
  Mutex mu;
  std::optional<LeaderElectionRecord> record;
  int64_t version = 0;
  int fail_updates = 0;  // the next N updates fail (API server trouble)
  // Calls block (an API server that stopped answering) until `hang` is
  // cleared or their timeout passes on `clock`.
  bool hang = false;
  std::condition_variable hang_cv;
  Clock* clock = nullptr;
};

class FakeLock : public ResourceLock {
 public:
  FakeLock(FakeRecordStore* store, std::string identity)
      : store_(store), identity_(std::move(identity)) {}

  StatusOr<LeaderElectionRecord> Get(Duration timeout) override {
    MutexLock l(&store_->mu);
    RETURN_IF_ERROR(WaitWhileHung(l, timeout));
    if (!store_->record.has_value()) return NotFoundError("no lease");
    read_version_ = store_->version;
    return *store_->record;
  }
  Status Create(const LeaderElectionRecord& r, Duration timeout) override {
    MutexLock l(&store_->mu);
    RETURN_IF_ERROR(WaitWhileHung(l, timeout));
    if (store_->record.has_value()) return AlreadyExistsError("exists");
    store_->record = r;
    read_version_ = ++store_->version;
    return Status::Ok();
  }
  Status Update(const LeaderElectionRecord& r, Duration timeout) override {
    MutexLock l(&store_->mu);
    RETURN_IF_ERROR(WaitWhileHung(l, timeout));
    if (store_->fail_updates > 0) {
      --store_->fail_updates;
      return UnavailableError("apiserver down");
    }
    if (read_version_ != store_->version) return ConflictError("modified");
    store_->record = r;
    read_version_ = ++store_->version;
    return Status::Ok();
  }
  const std::string& Identity() const override { return identity_; }
  std::string Describe() const override { return "fake/lease"; }

 private:
  Status WaitWhileHung(MutexLock& l, Duration timeout) REQUIRES(store_->mu) {
    if (!store_->hang) return Status::Ok();
    store_->clock->WaitUntil(
        l.native(), store_->hang_cv,
        timeout == kNoLockTimeout ? TimePoint::max()
                                  : store_->clock->Now() + timeout,
        [&]() REQUIRES(store_->mu) { return !store_->hang; });
    if (store_->hang) return DeadlineExceededError("no answer by the deadline");
    return Status::Ok();
  }

  FakeRecordStore* store_;
  std::string identity_;
  int64_t read_version_ = -1;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  struct Candidate {
    std::unique_ptr<FakeLock> lock;
    std::unique_ptr<LeaderElector> elector;
    Recorder events;
    std::thread thread;
  };

  LeaderElectionTest() { store_.clock = &clock_; }
  ~LeaderElectionTest() override {
    SetHang(false);
    for (auto& c : candidates_) StopCandidate(c.get());
  }

  Candidate* MakeCandidate(const std::string& id,
                           bool release_on_cancel = false) {
    auto c = std::make_unique<Candidate>();
    c->lock = std::make_unique<FakeLock>(&store_, id);
    Recorder* events = &c->events;
    LeaderElectionConfig cfg;
    cfg.lock = c->lock.get();
    cfg.clock = &clock_;
    cfg.seed = candidates_.size() + 1;
    cfg.release_on_cancel = release_on_cancel;
    cfg.on_started_leading = [events, this](const Leadership& l) {
      events->Record("started@" + std::to_string(SecondsNow()));
      l.WaitUntilLost();
      events->Record("lost");
    };
    cfg.on_stopped_leading = [events] { events->Record("stopped"); };
    cfg.on_new_leader = [events](const std::string& who) {
      events->Record("leader " + who);
    };
    auto e = LeaderElector::New(cfg);
    EXPECT_TRUE(e.ok()) << e.status();
    c->elector = std::move(*e);
    candidates_.push_back(std::move(c));
    return candidates_.back().get();
  }

  // Runs the candidate on a thread we count, so quiescence knows how many
  // threads should be waiting on the clock.
  void RunCandidate(Candidate* c) {
    ++live_;
    c->thread = std::thread([this, c] {
      c->elector->Run();
      --live_;
      clock_.Poke();
    });
  }

  void StopCandidate(Candidate* c) {
    c->elector->Stop();
    if (c->thread.joinable()) c->thread.join();
  }

  int64_t SecondsNow() const {
    return std::chrono::duration_cast<seconds>(clock_.Now() - start_).count();
  }

  LeaderElectionRecord Record() {
    MutexLock l(&store_.mu);
    return *store_.record;
  }

  void SetFailUpdates(int n) {
    MutexLock l(&store_.mu);
    store_.fail_updates = n;
  }

  void SetHang(bool hang) {
    {
      MutexLock l(&store_.mu);
      store_.hang = hang;
    }
    store_.hang_cv.notify_all();
  }

  // Moves time on in 100 ms steps, each once every candidate is waiting,
  // until `done` holds; false after `limit` of fake time.
  bool AdvanceUntil(const std::function<bool()>& done,
                    Duration limit = minutes(10)) {
    for (Duration t(0); t <= limit; t += milliseconds(100)) {
      clock_.WaitQuiescent([&] { return live_.load(); });
      if (done()) return true;
      clock_.Advance(milliseconds(100));
    }
    return false;
  }

  testing::TestClock clock_;
  const TimePoint start_ = clock_.Now();
  FakeRecordStore store_;
  std::atomic<int> live_{0};
  std::vector<std::unique_ptr<Candidate>> candidates_;
};

bool Has(const Recorder& r, const std::string& event) {
  return r.WaitFor([&](const std::vector<std::string>& v) {
    return std::find(v.begin(), v.end(), event) != v.end();
  });
}

TEST_F(LeaderElectionTest, ConfigIsValidated) {
  FakeLock lock(&store_, "a");
  LeaderElectionConfig cfg{.lock = &lock,
                           .on_started_leading = [](const Leadership&) {},
                           .on_stopped_leading = [] {}};
  EXPECT_TRUE(LeaderElector::New(cfg).ok());
  LeaderElectionConfig bad = cfg;
  bad.renew_deadline = seconds(15);  // not below the lease duration
  EXPECT_EQ(LeaderElector::New(bad).status().code(),
            StatusCode::kInvalidArgument);
  bad = cfg;
  bad.retry_period = seconds(9);  // 9 * 1.2 > renew deadline
  EXPECT_FALSE(LeaderElector::New(bad).ok());
  bad = cfg;
  bad.on_stopped_leading = nullptr;
  EXPECT_FALSE(LeaderElector::New(bad).ok());
}

TEST_F(LeaderElectionTest, FirstCandidateCreatesTheLeaseAndLeads) {
  Candidate* a = MakeCandidate("a");
  RunCandidate(a);
  ASSERT_TRUE(Has(a->events, "started@0"));
  EXPECT_TRUE(a->elector->IsLeader());
  EXPECT_EQ(a->elector->GetLeader(), "a");
  EXPECT_EQ(a->events.Items()[0], "leader a");
  LeaderElectionRecord r = Record();
  EXPECT_EQ(r.holder_identity, "a");
  EXPECT_EQ(r.lease_duration, seconds(15));
  EXPECT_EQ(r.leader_transitions, 0);

  // Renewals every retry period move renewTime and keep acquireTime.
  const WallTime acquired = r.acquire_time;
  ASSERT_TRUE(AdvanceUntil(
      [&] { return Record().renew_time >= acquired + seconds(6); }));
  EXPECT_EQ(Record().renew_time, acquired + seconds(6));  // 2 s apart
  EXPECT_EQ(Record().acquire_time, acquired);
  EXPECT_TRUE(a->elector->IsLeader());
}

// The leader cannot write any more (an API server problem on its side).
// It steps down once it has failed to renew for the renew deadline; the
// other candidate takes over only after the record has stood unchanged
// for a whole lease duration as *it* observed it, and counts a transition.
TEST_F(LeaderElectionTest, FollowerTakesOverAfterTheLeaseExpires) {
  Candidate* a = MakeCandidate("a");
  Candidate* b = MakeCandidate("b");
  RunCandidate(a);
  ASSERT_TRUE(Has(a->events, "started@0"));
  RunCandidate(b);
  ASSERT_TRUE(Has(b->events, "leader a"));
  ASSERT_TRUE(AdvanceUntil([&] {
    return Record().renew_time >= Record().acquire_time + seconds(4);
  }));
  EXPECT_FALSE(b->elector->IsLeader());

  const WallTime last_renewal = Record().renew_time;
  const int64_t failing_since = SecondsNow();
  SetFailUpdates(1 << 30);  // nobody can write
  ASSERT_TRUE(AdvanceUntil([&] { return !a->elector->IsLeader(); }));
  // Lost within renew_deadline (10 s) plus one retry period.
  EXPECT_LE(SecondsNow() - failing_since, 12);
  EXPECT_GE(SecondsNow() - failing_since, 8);
  ASSERT_TRUE(Has(a->events, "stopped"));
  EXPECT_EQ(a->events.Items().back(), "stopped");
  EXPECT_FALSE(b->elector->IsLeader());

  SetFailUpdates(0);
  ASSERT_TRUE(AdvanceUntil([&] { return b->elector->IsLeader(); }));
  LeaderElectionRecord r = Record();
  EXPECT_EQ(r.holder_identity, "b");
  EXPECT_EQ(r.leader_transitions, 1);
  // b saw a's last renewal no earlier than it was written.
  EXPECT_GE(r.acquire_time, last_renewal + seconds(15));
  ASSERT_TRUE(Has(b->events, "leader b"));
}

// The API server stops answering the leader's lock calls (they neither
// succeed nor fail: a stopped server, a pool held by others). The calls end
// at the renew deadline, so the leader steps down renew_deadline +
// retry_period after its last renewal at the latest, before a lease
// duration has passed and another candidate may take over.
TEST_F(LeaderElectionTest, ALeaderWhoseLockCallsHangStepsDownInTime) {
  Candidate* a = MakeCandidate("a");
  RunCandidate(a);
  ASSERT_TRUE(Has(a->events, "started@0"));
  ASSERT_TRUE(AdvanceUntil([&] {
    return Record().renew_time >= Record().acquire_time + seconds(4);
  }));
  const int64_t last_renewal = SecondsNow();
  SetHang(true);
  ASSERT_TRUE(
      AdvanceUntil([&] { return !a->elector->IsLeader(); }, seconds(60)))
      << "still leading while its renewal hangs";
  EXPECT_LE(SecondsNow() - last_renewal, 12);  // 10 s + one 2 s retry period
  EXPECT_LT(SecondsNow() - last_renewal, 15);  // the lease duration
  EXPECT_TRUE(Has(a->events, "stopped"));
}

TEST_F(LeaderElectionTest, FollowerWaitsWhileTheLeaderRenews) {
  Candidate* a = MakeCandidate("a");
  Candidate* b = MakeCandidate("b");
  RunCandidate(a);
  ASSERT_TRUE(Has(a->events, "started@0"));
  RunCandidate(b);
  // Five lease durations: a keeps renewing, b never gets in.
  EXPECT_FALSE(
      AdvanceUntil([&] { return b->elector->IsLeader(); }, seconds(75)));
  EXPECT_TRUE(a->elector->IsLeader());
  EXPECT_EQ(Record().holder_identity, "a");
  EXPECT_EQ(Record().leader_transitions, 0);
}

TEST_F(LeaderElectionTest, ReleaseOnCancelLetsTheNextOneInAtOnce) {
  Candidate* a = MakeCandidate("a", /*release_on_cancel=*/true);
  RunCandidate(a);
  ASSERT_TRUE(Has(a->events, "started@0"));
  StopCandidate(a);
  EXPECT_EQ(a->events.Items().back(), "stopped");
  EXPECT_EQ(a->events.Items()[a->events.Items().size() - 2], "lost");
  LeaderElectionRecord released = Record();
  EXPECT_EQ(released.holder_identity, "");
  EXPECT_EQ(released.lease_duration, seconds(1));

  Candidate* b = MakeCandidate("b");
  RunCandidate(b);
  ASSERT_TRUE(Has(b->events, "started@0"));  // no lease to wait out
  EXPECT_EQ(Record().holder_identity, "b");
  EXPECT_EQ(Record().leader_transitions, 1);
}

TEST_F(LeaderElectionTest, ExactlyOneOfManyLeads) {
  std::vector<Candidate*> cs;
  for (int i = 0; i < 5; ++i)
    cs.push_back(MakeCandidate("c" + std::to_string(i)));
  for (Candidate* c : cs) RunCandidate(c);
  auto leaders = [&] {
    int n = 0;
    for (Candidate* c : cs) n += c->elector->IsLeader() ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(AdvanceUntil([&] { return leaders() == 1; }));
  const std::string leader = Record().holder_identity;
  // A minute later: still exactly one, the same one.
  EXPECT_FALSE(AdvanceUntil([&] { return leaders() != 1; }, minutes(1)));
  EXPECT_EQ(Record().holder_identity, leader);
  EXPECT_EQ(Record().leader_transitions, 0);
}

}  // namespace
}  // namespace kplane::informer
